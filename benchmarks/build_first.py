"""What `verifier.build_first` spares a weak policy's candidates: each is built, loaded and constructed alone first,
and one that fails there (a compile error, an error in ModelNew's __init__: 178 of the miniature's SFT policy's
190 verdicts on KernelBench levels 1-2 on an H100, which had spent 3,325 s waiting for and running references)
is judged without its problem's reference running a trial.

    python -m benchmarks.build_first [--kernelbench DIR] [--problem level/NAME.py ...] [--scale-to-mb MB]
                                     [--candidates N] [--set verifier.KEY=VALUE ...]

Each problem (scaled down to `--scale-to-mb` MB as `evaluate.scale_to_mb`; the sizes are found by running the
reference under fake tensors in this process: a checkout you trust) gets N candidates that fail to compile and N
whose __init__ raises, as a weak policy writes them. Judged by a fresh pool (no cache) with build_first off (the
baseline) and on, in the same run, on this machine's backend, after one untimed judgement that starts the
sandboxes' fork server; prints the seconds each way, the ratio, and whether the verdicts' categories are the same.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmarks.reference_check import DEFAULT_PROBLEMS, _problem
from schemas import load_config
from schemas.records import Candidate, Problem
from verifier.pool import LocalVerifierPool

COMPILE_ERROR = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = r"""
#include <torch/extension.h>
torch::Tensor forward(torch::Tensor x) {{ return undeclared_{k}(x); }}
"""
mod = load_inline(name="broken_{k}", cpp_sources=src, functions=["forward"])


class ModelNew(nn.Module):
    def __init__(self, *args):
        super().__init__()

    def forward(self, *inputs):
        return mod.forward(inputs[0])
'''

INIT_ERROR = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, *args):
        super().__init__()
        self.channels = len(None)  # variant {k}

    def forward(self, *inputs):
        return inputs[0]
'''


def candidates(problem: Problem, per_kind: int) -> list[tuple[Problem, Candidate]]:
    sources = [template.format(k=k) for k in range(per_kind) for template in (COMPILE_ERROR, INIT_ERROR)]
    return [(problem, Candidate(id=Candidate.make_id(problem.id, source, "bench"), problem_id=problem.id,
                                source=source, origin="weak policy")) for source in sources]


def judged(pairs: list[tuple[Problem, Candidate]], build_first: bool, overrides: list[str]) -> tuple[float, Counter]:
    """A fresh pool (no cache) judging `pairs`: its seconds and the verdicts' categories."""
    cfg = load_config(None, ["verifier.use_cache=false", "verifier.timed=false", f"verifier.build_first={build_first}",
                             *overrides]).verifier
    with tempfile.TemporaryDirectory(prefix="kd-build-first-") as cache, LocalVerifierPool(cfg, cache) as pool:
        start = time.perf_counter()
        verdicts = list(pool.verify_many(pairs))
        seconds = time.perf_counter() - start
    if len(verdicts) != len(pairs):
        raise SystemExit(f"{len(pairs) - len(verdicts)} candidates got no verdict: a reference broke ({pool.broken})")
    return seconds, Counter(v.category.value for v in verdicts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernelbench", default=".kerneldojo/kernelbench", help="a KernelBench checkout (levels)")
    parser.add_argument("--problem", action="append", default=[], help="level/file.py (repeatable)")
    parser.add_argument("--scale-to-mb", type=int, default=256, help="scale each problem down to this many MB")
    parser.add_argument("--candidates", type=int, default=2, help="candidates of each failing kind per problem")
    parser.add_argument("--set", action="append", default=[], dest="overrides", help="a verifier.* override")
    args = parser.parse_args(argv)
    overrides = [o if o.startswith("verifier.") else f"verifier.{o}" for o in args.overrides]
    problems = [_problem(Path(args.kernelbench) / name, args.scale_to_mb) for name in args.problem or DEFAULT_PROBLEMS]
    pairs = [pair for problem in problems for pair in candidates(problem, args.candidates)]
    judged(pairs[:1], True, overrides)  # the fork server and the build toolchain, warm for both ways
    rows = [("build_first off (baseline)", *judged(pairs, False, overrides)),
            ("build_first on", *judged(pairs, True, overrides))]
    baseline = rows[0][1]
    print(f"{len(problems)} problems at {args.scale_to_mb} MB, {len(pairs)} failing candidates "
          f"({args.candidates} compile errors and {args.candidates} __init__ errors each)\n")
    print("| way | wall s | x baseline | verdicts |\n| --- | ---: | ---: | --- |")
    for name, seconds, categories in rows:
        print(f"| {name} | {seconds:.1f} | {baseline / seconds:.2f}x | "
              f"{', '.join(f'{k} {n}' for k, n in sorted(categories.items()))} |")
    print(f"\nsame verdict categories: {'yes' if rows[0][2] == rows[1][2] else 'NO'}")


if __name__ == "__main__":
    main()
