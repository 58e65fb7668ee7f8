"""Why does a candidate's GPU-filling thread slow eager's timing on one box and not on another? (The control of
`test_cuda_a_thread_that_keeps_the_gpu_busy_beside_the_baseline_gains_nothing`: on `ffe3bea` its spinner, busy
from the candidate's 2nd call to its 3rd, slowed eager by more than 1.5x; rewritten to spin whenever it had not
been called for 50 ms, it slowed eager by 1.1x, on 2026-12-04, twice.)

Two measurements, each against an honest baseline measured in the same run:
1. bare: torch's N^2 fp32 matmul (N = --size) timed by CUDA events in this process, alone and while another process runs
   the spinner's kernel back to back — what GPU time-slicing between two contexts does to eager's events.
2. judged: eager's time in the judge's verdict (verifier.candidate_threads=true, timing not exclusive) beside
   each spinner variant: `between` (the old: from call 2 to call 3), `idle50` (the new: whenever not called for
   50 ms), `always` (from call 1 on, never stopping), and `none` (the honest kernel).

    python -m benchmarks.spinner_probe --size 4096      # on the GPU box

Measured on an H200 (2026-12-04, docs/gpu-results.md): at 4096 (eager 3.1 ms a call, within one time slice of the
GPU's scheduler between two processes' contexts) the spinners slowed eager's events by chance — `idle50` 1.93x,
`between` and `always` 1.0x in one run, `idle50` 1.10x in another; bare, 1.30x. At 8192 (eager 22 ms, longer than
a slice) every variant slowed it 1.76x, bare 1.78x: the test's reference is 8192 since.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import tempfile
import time
from pathlib import Path

SPIN_LOOP = {
    "none": "static void spin() {}",
    "between": "static void spin() { while (calls.load() <= 2) { spin_kernel<<<264, 1024>>>(10000000LL); "
               "cudaDeviceSynchronize(); } }",
    "idle50": None,  # the test's own
    "always": "static void spin() { for (;;) { spin_kernel<<<264, 1024>>>(10000000LL); cudaDeviceSynchronize(); } }",
}


def spinner_source(variant: str) -> str:
    from tests.test_verifier_gpu import SPINNING_MATMUL

    source = SPINNING_MATMUL.replace("SPIN &&", "false &&" if variant == "none" else "true &&")
    if SPIN_LOOP[variant] is not None:
        start = source.index("static void spin() {")
        end = source.index("__global__ void matmul_kernel")
        source = source[:start] + SPIN_LOOP[variant] + "\n\n" + source[end:]
    return source


def _spin_forever(ready, stop) -> None:
    import torch

    x = torch.empty(1, device="cuda")
    from torch.utils.cpp_extension import load_inline

    ext = load_inline(name="probe_spin", cpp_sources="void spin(long long cycles);", cuda_sources="""
__global__ void spin_kernel(long long cycles) { long long s = clock64(); while (clock64() - s < cycles) { } }
void spin(long long cycles) { spin_kernel<<<264, 1024>>>(cycles); cudaDeviceSynchronize(); }
""", functions=["spin"], verbose=False)
    del x
    ready.set()
    while not stop.is_set():
        ext.spin(10_000_000)


def bare_matmul_ms(size: int, runs: int = 30) -> float:
    import torch

    a = torch.randn(size, size, device="cuda")
    for _ in range(3):
        a @ a
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        a @ a
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def bare(size: int) -> dict[str, float]:
    alone = bare_matmul_ms(size)
    ctx = multiprocessing.get_context("spawn")
    ready, stop = ctx.Event(), ctx.Event()
    spinner = ctx.Process(target=_spin_forever, args=(ready, stop))
    spinner.start()
    ready.wait(300)
    time.sleep(0.5)
    beside = bare_matmul_ms(size)
    stop.set()
    spinner.join(30)
    again = bare_matmul_ms(size)
    return {"alone_ms": alone, "beside_spinner_ms": beside, "alone_again_ms": again, "ratio": beside / max(alone, again)}


def judged(variant: str, cache: Path, size: int) -> dict[str, float]:
    from schemas import load_config
    from schemas.records import Candidate, Problem
    from tests.test_verifier_gpu import MATMUL_REFERENCE
    from verifier.judge import Devices, Judge

    reference = MATMUL_REFERENCE.replace("8192, 8192", f"{size}, {size}")
    problem = Problem(id=Problem.make_id(reference), source="builtin", reference=reference,
                      name=f"matmul_{size}", op_families=["matmul"])
    source = spinner_source(variant)
    candidate = Candidate(id=Candidate.make_id(problem.id, source, "cuda"), problem_id=problem.id, source=source,
                          backend="cuda")
    cfg = load_config(None, ["verifier.backend=cuda", "verifier.run_timeout_s=30", "verifier.use_cache=false",
                             "verifier.trials=2", "verifier.spare_sandboxes=0", "verifier.compare_torch_compile=false",
                             "verifier.candidate_threads=true"]).verifier
    with Judge(cfg, cache) as judge:
        started = time.perf_counter()
        verdict = judge.verify(problem, candidate, Devices([0], exclusive_timing=False), static_rules=False)
    row = {"category": verdict.category.value, "seconds": round(time.perf_counter() - started, 2)}
    row.update({k: round(v, 6) for k, v in verdict.timing.items() if k in ("eager_s", "claimed_s", "outside_s")})
    row.update({f"phase_{k}": round(v, 3) for k, v in verdict.phases.items()})
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", nargs="+", default=["none", "between", "idle50", "always", "none"])
    parser.add_argument("--skip-bare", action="store_true")
    parser.add_argument("--size", type=int, default=8192, help="the matmul's side (the test's: 8192)")
    args = parser.parse_args()
    if not args.skip_bare:
        print("bare:", bare(args.size), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for variant in args.variants:
            print(variant, judged(variant, Path(tmp), args.size), flush=True)


if __name__ == "__main__":
    main()
