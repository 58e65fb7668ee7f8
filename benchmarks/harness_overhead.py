"""Where does a small call's time go in the harness's timing? On the H200 (2026-12-03) eager `x * 1.5 + 0.25` on
4096x1024 floats (two elementwise kernels on 16 MB: tens of microseconds of DRAM traffic) was timed at 0.31-0.47
ms a call by the judge, and a hand kernel for it at 0.34-0.60 ms (0.09x-0.91x eager between runs on one box): on
such problems a speedup measures the harness, not the kernel.

This times the same call by CUDA events in one process, the harness's way step by step, and prints each
pattern's median per call and its ratio to the first (calls back to back):

    back to back          the calls alone, events around each
    synchronized          torch.cuda.synchronize() before each (the GPU idle when the call is issued)
    flushed               time_calls' own pattern: the L2 flush, then synchronize, before each
    rotating inputs       time_calls with ROTATING_BUFFERS input buffers refilled by a copy before each
    after 1 s idle        flushed, the GPU left idle for a second first (its clocks may have dropped)
    after 0.2 s busy      flushed, the GPU kept busy by matmuls for 0.2 s first (as a neighbour's work leaves it)
    judged                the judge's eager baseline of the problem (sandbox, staging, its clock)

    python -m benchmarks.harness_overhead [--shape 4096 1024] [--runs 50]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time


def per_call(fn, runs: int, before=None, warm: int = 5) -> float:
    import torch

    times = []
    for i in range(runs + warm):
        if before is not None:
            before(i)
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        fn(i)
        end.record()
        end.synchronize()
        if i >= warm:  # the first calls warm up
            times.append(begin.elapsed_time(end) / 1000.0)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", type=int, nargs="+", default=[4096, 1024])
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args(argv)

    import torch

    from verifier.timing import L2_FLUSH_BYTES, time_calls

    x = torch.randn(*args.shape, device="cuda")
    buffers = [x.clone() for _ in range(3)]
    staging = torch.randn(*args.shape).pin_memory()
    flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")

    def call(i):
        return buffers[i % 3] * 1.5 + 0.25

    def flushed(_):
        flush.zero_()
        torch.cuda.synchronize()

    def after(prelude) -> float:
        """The flushed pattern's median over few calls, right after `prelude` (what the GPU did before)."""
        samples = []
        for _ in range(5):
            prelude()
            samples.append(per_call(call, 5, flushed, warm=0))
        return statistics.median(samples)

    square = torch.randn(4096, 4096, device="cuda")

    def busy(seconds: float) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            square @ square
            torch.cuda.synchronize()

    rows = {
        "back to back": per_call(call, args.runs),
        "synchronized": per_call(call, args.runs, lambda _: torch.cuda.synchronize()),
        "flushed": per_call(call, args.runs, flushed),
        "rotating inputs": time_calls(call, "cuda", 5, args.runs,
                                      prepare=lambda i: buffers[i % 3].copy_(staging, non_blocking=True)).seconds,
        "after 1 s idle": after(lambda: time.sleep(1.0)),
        "after 0.2 s busy": after(lambda: busy(0.2)),
    }
    try:
        rows["judged"] = judged_eager(args.shape)
    except Exception as exc:  # the rest still says where the time goes
        print(f"judged: {type(exc).__name__}: {exc}"[:300])
    base = rows["back to back"]
    print(f"{'pattern':16} {'ms a call':>10} {'x back to back':>15}")
    for name, seconds in rows.items():
        print(f"{name:16} {seconds * 1e3:10.4f} {seconds / base:15.2f}")


def judged_eager(shape: list[int]) -> float:
    from schemas import load_config
    from schemas.records import Problem
    from verifier.examples import REFERENCE
    from verifier.judge import Judge

    source = REFERENCE.format(name="scale_shift", expr="x * 1.5 + 0.25", shape=", ".join(map(str, shape)))
    problem = Problem(id=Problem.make_id(source), source="builtin", reference=source, name="scale_shift")
    cfg = load_config(None, ["verifier.backend=cuda", "verifier.use_cache=false", "verifier.spare_sandboxes=0",
                             "verifier.compare_torch_compile=false"]).verifier
    with tempfile.TemporaryDirectory() as cache, Judge(cfg, cache) as judge:
        return judge.baseline(problem, 0).seconds


if __name__ == "__main__":
    main()
