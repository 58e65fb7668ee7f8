"""How fast can a GPU machine make CUDA contexts? Every sandbox is a fresh process with its own context
(a candidate never shares a process with another), so the verifier's verdicts per second on one GPU cannot
exceed the machine's contexts per second. This forks N processes at once from a server that has imported torch
(as the sandboxes' forkserver does), each makes its context (`torch.empty(1, device="cuda")`) and runs one small
kernel, and prints per N: the median and slowest context, the CPU seconds a context costs (user + system, from
the kernel's accounting of the child), contexts per second over the batch, and whole lives per second (made, used
and destroyed: the batch until its last process has exited, as a sandbox's context lives). N = 1 is the
baseline: the ratio column says how much of N-fold concurrency the machine gives back.

    python -m benchmarks.cuda_context_rate                   # N in 1 2 4 8 16, three batches each
    python -m benchmarks.cuda_context_rate --n 1 14 --rounds 5
    python -m benchmarks.cuda_context_rate --busy            # each N again beside a kernel that never ends

`--busy` asks what a hung candidate costs the others: one more process keeps a spinning kernel on the GPU
(`torch.cuda._sleep`, relaunched as each ends, as a kernel stuck in a loop until its sandbox's time limit), and
every N is measured beside it too.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import statistics
import sys
import time


def _make_context(barrier, results) -> None:
    import torch

    barrier.wait()
    started = time.perf_counter()
    torch.empty(1, device="cuda")
    made = time.perf_counter()
    (torch.ones(1024, device="cuda") * 2).sum().item()
    done = time.perf_counter()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    results.put((started, made - started, done - started, usage.ru_utime + usage.ru_stime))


def _spin(ready, stop) -> None:
    import torch

    torch.cuda._sleep(1000)
    torch.cuda.synchronize()
    ready.set()
    while not stop.is_set():
        torch.cuda._sleep(2_000_000_000)  # ~1 s at H200 clocks, queued back to back
        torch.cuda.synchronize()


def batch(ctx, n: int) -> dict[str, float]:
    barrier, results = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_make_context, args=(barrier, results)) for _ in range(n)]
    for p in procs:
        p.start()
    rows = [results.get(timeout=300) for _ in procs]
    for p in procs:
        p.join()
    exited = time.perf_counter()  # CLOCK_MONOTONIC: the children's clock too
    first = min(r[0] for r in rows)
    span = max(r[0] + r[2] for r in rows) - first
    return {"median_s": statistics.median(r[1] for r in rows), "slowest_s": max(r[1] for r in rows),
            "cpu_s": statistics.median(r[3] for r in rows), "per_second": n / span,
            "lives_per_second": n / (exited - first)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, nargs="+", default=[1, 2, 4, 8, 16], help="processes at once")
    parser.add_argument("--rounds", type=int, default=3, help="batches per N (the median batch is shown)")
    parser.add_argument("--busy", action="store_true", help="also measure each N beside a never-ending kernel")
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        sys.exit("no CUDA device is visible: this measures CUDA contexts")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["torch"])
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    print(f"{'N':>3} {'context median s':>17} {'slowest s':>10} {'CPU s each':>11} {'contexts/s':>11} {'vs N=1':>7} "
          f"{'lives/s':>8}")
    base = None
    for busy in (False, True) if args.busy else (False,):
        spinner, stop = None, ctx.Event()
        if busy:
            ready = ctx.Event()
            spinner = ctx.Process(target=_spin, args=(ready, stop))
            spinner.start()
            ready.wait(timeout=120)
            print("beside a kernel that never ends:")
        for n in args.n:
            runs = sorted((batch(ctx, n) for _ in range(args.rounds)), key=lambda r: r["per_second"])
            row = runs[len(runs) // 2]
            base = base or row["per_second"]
            print(f"{n:>3} {row['median_s']:>17.3f} {row['slowest_s']:>10.3f} {row['cpu_s']:>11.2f} "
                  f"{row['per_second']:>11.1f} {row['per_second'] / base:>6.2f}x {row['lives_per_second']:>8.1f}",
                  flush=True)
        if spinner is not None:
            stop.set()
            spinner.join(timeout=10)
            if spinner.is_alive():
                spinner.kill()


if __name__ == "__main__":
    main()
