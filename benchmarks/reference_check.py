"""What a reference's check costs when nothing follows it: its trials' bytes written, read and kept (a check
before verdicts, `keep=True`) against their layout alone (an evaluation's check after its verdicts,
`keep=False`). At full size a KernelBench level-1 reference was 94 s on the H200, 60 s of them its trials' bytes
(2026-12-03); an evaluation of the template floor checks ~160 of its 200 references so.

    python -m benchmarks.reference_check [--kernelbench DIR] [--problem level/NAME.py ...] [--scale-to-mb MB]

Each problem (scaled down to `--scale-to-mb` MB, as `evaluate.scale_to_mb`, where given; the sizes are found by
running the reference under fake tensors in this process: a checkout you trust) is checked by a fresh pool both
ways, in the same run, on this machine's backend, after one untimed check that starts the sandboxes' fork
server; prints seconds each way and kept/unkept.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from operators.imports import scale_sizes_down, with_size_constants
from schemas import load_config
from schemas.records import Problem
from verifier.pool import LocalVerifierPool

DEFAULT_PROBLEMS = ["level1/21_Sigmoid.py", "level1/23_Softmax.py", "level1/6_Matmul_with_large_K_dimension_.py",
                    "level2/1_Conv2D_ReLU_BiasAdd.py"]


def _problem(path: Path, scale_to_mb: int | None) -> Problem:
    source = path.read_text()
    if scale_to_mb:
        from operators.graph import analyse_source

        def measure(text: str) -> int:
            analysis = analyse_source(text)
            return analysis["input_bytes"] + analysis["output_bytes"] + analysis["weight_bytes"]

        source = with_size_constants(source, scale_sizes_down(source, scale_to_mb << 20, measure)["sizes"])
    return Problem(id=Problem.make_id(source), source="kernelbench", reference=source, name=path.stem)


def _checked_seconds(problem: Problem, keep: bool, overrides: list[str]) -> float:
    """A fresh pool (no cache: the check runs) checking `problem`, kept or not: its seconds."""
    cfg = load_config(None, ["verifier.use_cache=false", "verifier.spare_sandboxes=0", *overrides]).verifier
    with tempfile.TemporaryDirectory(prefix="kd-check-") as cache, LocalVerifierPool(cfg, cache) as pool:
        start = time.perf_counter()
        broken = pool.check_references([problem], keep=keep)
        seconds = time.perf_counter() - start
    if broken:
        raise SystemExit(f"{problem.name}: its reference does not run here: {broken[problem.id][:300]}")
    return seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernelbench", default=".kerneldojo/kernelbench", help="a KernelBench checkout (levels)")
    parser.add_argument("--problem", action="append", default=[], help="level/file.py (repeatable)")
    parser.add_argument("--scale-to-mb", type=int, default=None, help="scale each problem down to this many MB")
    parser.add_argument("--set", action="append", default=[], dest="overrides", help="a verifier.* override")
    args = parser.parse_args(argv)
    problems = [_problem(Path(args.kernelbench) / name, args.scale_to_mb) for name in args.problem or DEFAULT_PROBLEMS]
    _checked_seconds(problems[0], False, args.overrides)  # the sandboxes' fork server starts: in neither column
    print(f"{'problem':40} {'kept s':>8} {'unkept s':>9} {'kept/unkept':>12}")
    for problem in problems:
        kept = _checked_seconds(problem, True, args.overrides)
        unkept = _checked_seconds(problem, False, args.overrides)
        print(f"{problem.name:40} {kept:8.3f} {unkept:9.3f} {kept / unkept:11.2f}x", flush=True)


if __name__ == "__main__":
    main()
