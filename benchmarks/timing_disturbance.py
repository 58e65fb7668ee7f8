"""Does starting spare sandboxes disturb the timing of the candidate beside them? On the H200 (2026-12-02) the
template teacher's 16 M-element reductions were correct and their CUDA events said eager's pace (0.36 ms a call),
but the judge's clock around the timed calls said 20.7 ms a call, so the judge believed 20.7 ms (speedup 0.02x).
One suspect: a spare run sandbox creates its CUDA context the moment it starts (off the verdict's clock, by
design), and the first judgement of a pool starts all of them, perhaps while that judgement is being timed.

This judges the same kernel `--repeats` times in a fresh pool per setting of `verifier.spare_sandboxes` (0 = no
sandbox ever starts beside a judgement: the baseline) and prints, per verdict, the sandbox's claim, the judge's
outside figure and what it believed, then the median outside/claimed per setting and the ratio of each setting's
median to the baseline's. A ratio near 1 clears the spares; the first verdict of a pool far above the later ones
points at start-up.

    python -m benchmarks.timing_disturbance --backend cuda            # on the GPU box
    python -m benchmarks.timing_disturbance --spares 0 4 --repeats 4 --size 4096
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path


def judge_repeatedly(backend: str, spares: int, repeats: int, size: int, cache_dir: Path) -> list[dict[str, float]]:
    """Verdicts of the template's kernel for the reductions problem, judged `repeats` times in one fresh pool."""
    from schemas import load_config
    from schemas.records import Candidate, Problem
    from tests.kernels import reductions
    from training.prompts import extract_code
    from training.teacher import TemplateTeacher
    from verifier.pool import LocalVerifierPool

    reference = reductions(size, size)
    problem = Problem(id=Problem.make_id(reference), source="builtin", reference=reference)
    code = extract_code(TemplateTeacher().solve(problem, backend).completion)
    cfg = load_config(None, [f"verifier.backend={backend}", "verifier.use_cache=false",
                             f"verifier.spare_sandboxes={spares}", "verifier.compare_torch_compile=false"]).verifier
    rows = []
    with LocalVerifierPool(cfg, cache_dir) as pool:
        for k in range(repeats):
            source = f"{code}\n# repeat {k}\n"  # a candidate of its own each time: nothing taken from a cache
            candidate = Candidate(id=Candidate.make_id(problem.id, source, backend), problem_id=problem.id,
                                  source=source, backend=backend)
            verdict = pool.verify(problem, candidate)
            timing = verdict.timing
            rows.append({"passed": float(verdict.passed), "claimed_s": timing.get("claimed_s", float("nan")),
                         "outside_s": timing.get("outside_s", float("nan")),
                         "believed_s": timing.get("believed_s", float("nan")),
                         "eager_s": timing.get("eager_s", float("nan")),
                         "overhead_s": timing.get("harness_overhead_s", float("nan")),
                         "prepare_s": timing.get("sandbox_prepare_s", float("nan")),
                         "keep_s": timing.get("sandbox_keep_s", float("nan")),
                         "eager_prepare_s": timing.get("eager_prepare_s", float("nan")),
                         "speedup": verdict.speedup_vs_eager or float("nan")})
    return rows


def main(argv: list[str] | None = None) -> dict[int, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--spares", type=int, nargs="+", default=[0, 4], help="settings of verifier.spare_sandboxes; "
                        "the first is the baseline")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--size", type=int, default=4096, help="rows = columns of the reduced matrix")
    args = parser.parse_args(argv)
    medians: dict[int, float] = {}
    with tempfile.TemporaryDirectory(prefix="kd-timing-") as tmp:
        for spares in args.spares:
            rows = judge_repeatedly(args.backend, spares, args.repeats, args.size, Path(tmp) / f"spares-{spares}")
            print(f"spare_sandboxes={spares}")
            # prepare/keep: the sandboxes' own clocks around each call (inputs put in place, outputs kept), the
            # candidate's and eager's: where a window the calls do not explain went
            print("  verdict  passed  claimed ms  outside ms  believed ms  eager ms  overhead ms  prepare ms  "
                  "eager prepare ms  keep ms  speedup")
            for k, r in enumerate(rows):
                print(f"  {k:7d}  {r['passed']:6.0f}  {r['claimed_s'] * 1e3:10.3f}  {r['outside_s'] * 1e3:10.3f}  "
                      f"{r['believed_s'] * 1e3:11.3f}  {r['eager_s'] * 1e3:8.3f}  {r['overhead_s'] * 1e3:11.3f}  "
                      f"{r['prepare_s'] * 1e3:10.3f}  {r['eager_prepare_s'] * 1e3:16.3f}  {r['keep_s'] * 1e3:7.3f}  "
                      f"{r['speedup']:7.3f}")
            ratios = [r["outside_s"] / r["claimed_s"] for r in rows if r["claimed_s"] > 0]
            medians[spares] = statistics.median(ratios) if ratios else float("nan")
    baseline = medians[args.spares[0]]
    print("\nmedian outside/claimed per setting, and its ratio to the baseline's (spare_sandboxes="
          f"{args.spares[0]}):")
    for spares, median in medians.items():
        # the judge's figure is its clock less the harness's overhead: 0 for calls shorter than the noise
        ratio = f"{median / baseline:.3f}" if baseline > 0 else "n/a (the baseline's outside figure is 0)"
        print(f"  spare_sandboxes={spares}: {median:.3f}  ratio {ratio}")
    return medians


if __name__ == "__main__":
    main()
