"""Verification throughput: kerneldojo's fast build path against plain KernelBench-style `load_inline`.

Both judge the same N distinct candidates with the same judge, sandbox and worker count; only
the build differs (`verifier.fast_build`). Verdict caches are off; each path gets a fresh build
cache, so the fast path's one-off precompiled-header build is inside its measured time (the
`fast (warm)` row repeats it with that header already built, as on any machine after its first
batch). Prints wall time, throughput, median per-candidate latency, the ratio against the
baseline measured in the same run, and whether every verdict category agrees.

    python benchmarks/verify_throughput.py --backend cpu --n 8
    python benchmarks/verify_throughput.py --backend cuda --n 32
    python benchmarks/verify_throughput.py --backend cpu --n 8 --isolation-cost   # namespaces vs none

`--hang K` measures what hanging kernels cost everyone else: the same N candidates judged warm alone, then
with K candidates whose kernel never ends added to the batch; it prints the batch's wall time and the median
verdict latency of the N shared candidates in both, and their ratio (target: within 1.2x).

    python benchmarks/verify_throughput.py --backend cuda --n 48 --hang 2

`--gpu-scaling` judges the same candidates on one GPU and on every visible GPU (`verifier.workers`), fast path,
warm headers, each row building its candidates again: the throughput ratio is the pool's scaling (target on
two GPUs: at least 1.8x).

    python benchmarks/verify_throughput.py --backend cuda --n 64 --gpu-scaling

`--isolation-cost` prices the sandbox's walls: the same candidates judged with `verifier.isolation: none`
(a plain process) and `namespaces` (verifier/jail.py), fast path, warm caches, plus the time to start one
sandbox and have it confined and answering, measured directly over 20 starts.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from schemas.config import VerifierConfig
from verifier.examples import example_set, hanging_candidates
from verifier.pool import LocalVerifierPool


def run(pairs, backend: str, fast: bool, cache: Path, workers: int, compile_workers: int, spares: int,
        isolation: str = "namespaces", run_timeout_s: float = 60) -> dict:
    config = VerifierConfig(backend=backend, fast_build=fast, use_cache=False, workers=workers,
                            compile_workers=compile_workers, compile_timeout_s=600, run_timeout_s=run_timeout_s,
                            compare_torch_compile=False, trials=5, spare_sandboxes=spares, isolation=isolation)
    start = time.perf_counter()
    with LocalVerifierPool(config, cache) as pool:
        verdicts = {v.candidate_id: v for v in pool.verify_many(pairs)}
    wall = time.perf_counter() - start
    latencies = [v.compile_seconds + v.run_seconds for v in verdicts.values()]
    return {"wall": wall, "verdicts": verdicts, "median_latency": statistics.median(latencies),
            "median_build": statistics.median(v.compile_seconds for v in verdicts.values()),
            "median_run": statistics.median(v.run_seconds for v in verdicts.values()),
            "median_start": statistics.median(v.phases.get("start", 0.0) for v in verdicts.values()),
            "categories": {cid: v.category.value for cid, v in verdicts.items()}}


def sandbox_start_seconds(backend: str, isolation: str, cache: Path, n: int = 20) -> float:
    """Median seconds from asking for a sandbox to its hello (fork from the warm forkserver, confinement),
    one at a time, with no candidate: what isolation adds to every verdict before any candidate code runs."""
    from verifier.sandboxes import SandboxFactory

    config = VerifierConfig(backend=backend, isolation=isolation, spare_sandboxes=0)
    factory = SandboxFactory(config, cache, backend)
    samples = []
    for _ in range(n + 1):  # the first also starts the forkserver: not counted
        start = time.perf_counter()
        box = factory.start("build")
        box.start({})
        samples.append(time.perf_counter() - start)
        box.close()
    return statistics.median(samples[1:])


def isolation_cost(pairs, args, root: Path) -> None:
    cache = root / "iso"
    run(pairs, args.backend, True, cache, args.workers, args.compile_workers, args.spares)  # headers, bridge
    print(f"{'isolation':<28}{'wall s':>9}{'cand/min':>10}{'median latency s':>18}{'median start s':>16}"
          f"{'x none':>8}{'same verdicts':>15}", flush=True)
    base = None
    for isolation in ("none", "namespaces"):
        shutil.rmtree(cache / "builds", ignore_errors=True)  # every row builds its candidates
        r = run(pairs, args.backend, True, cache, args.workers, args.compile_workers, args.spares, isolation)
        base = base or r
        same = "yes" if r["categories"] == base["categories"] else "NO"
        print(f"{isolation:<28}{r['wall']:>9.1f}{60 * len(pairs) / r['wall']:>10.1f}{r['median_latency']:>18.2f}"
              f"{r['median_start']:>16.3f}{base['wall'] / r['wall']:>8.2f}{same:>15}", flush=True)
    starts = {iso: sandbox_start_seconds(args.backend, iso, cache) for iso in ("none", "namespaces")}
    print(f"sandbox start to hello, median of 20: none {starts['none'] * 1e3:.1f} ms, namespaces "
          f"{starts['namespaces'] * 1e3:.1f} ms, isolation adds {(starts['namespaces'] - starts['none']) * 1e3:.1f} ms "
          f"per sandbox (a verdict uses one, plus one build sandbox when it compiles)")


def gpu_scaling(pairs, args, root: Path) -> None:
    import torch

    gpus = torch.cuda.device_count()
    if args.backend != "cuda" or gpus < 2:
        raise SystemExit(f"--gpu-scaling needs --backend cuda and at least 2 visible GPUs (found {gpus})")
    cache = root / "scaling"
    run(pairs, args.backend, True, cache, gpus, args.compile_workers, args.spares)  # headers, bridge
    print(f"{'GPUs':<10}{'wall s':>9}{'cand/min':>10}{'median latency s':>18}{'x 1 GPU':>9}{'same verdicts':>15}",
          flush=True)
    one = None
    for workers in (1, gpus):
        shutil.rmtree(cache / "builds", ignore_errors=True)  # every row builds its candidates
        r = run(pairs, args.backend, True, cache, workers, args.compile_workers, args.spares)
        one = one or r
        same = "yes" if r["categories"] == one["categories"] else "NO"
        print(f"{workers:<10}{r['wall']:>9.1f}{60 * len(pairs) / r['wall']:>10.1f}{r['median_latency']:>18.2f}"
              f"{one['wall'] / r['wall']:>9.2f}{same:>15}", flush=True)


def hang_cost(pairs, args, root: Path) -> None:
    """The same candidates alone and beside hanging ones; run_timeout_s as in the default config (20 s): the
    adaptive limit, not the ceiling, must be what stops a hang."""
    cache = root / "hang"
    hanging = hanging_candidates(args.hang, args.backend)
    run(pairs + hanging, args.backend, True, cache, args.workers, args.compile_workers, args.spares,
        run_timeout_s=VerifierConfig().run_timeout_s)  # warm: headers, bridge, every candidate's build
    print(f"{'batch':<34}{'wall s':>9}{'median latency s':>18}{'p90 latency s':>15}{'hang verdict s':>16}"
          f"{'x alone':>9}{'same verdicts':>15}", flush=True)
    alone = None
    for label, batch in ((f"{len(pairs)} candidates", pairs),
                         (f"{len(pairs)} + {len(hanging)} hanging", pairs + hanging)):
        r = run(batch, args.backend, True, cache, args.workers, args.compile_workers, args.spares,
                run_timeout_s=VerifierConfig().run_timeout_s)
        shared = [r["verdicts"][c.id] for _, c in pairs]
        latencies = sorted(v.compile_seconds + v.run_seconds for v in shared)
        median, p90 = statistics.median(latencies), latencies[int(0.9 * (len(latencies) - 1))]
        hung = [r["verdicts"][c.id] for _, c in hanging if c.id in r["verdicts"]] if batch is not pairs else []
        hang_s = max((v.compile_seconds + v.run_seconds for v in hung), default=0.0)
        alone = alone or (median, {c.id: r["categories"][c.id] for _, c in pairs})
        same = "yes" if {c.id: r["categories"][c.id] for _, c in pairs} == alone[1] else "NO"
        print(f"{label:<34}{r['wall']:>9.1f}{median:>18.2f}{p90:>15.2f}{(f'{hang_s:.2f}' if hung else '-'):>16}"
              f"{median / alone[0]:>9.2f}{same:>15}", flush=True)
        phases = sorted({k for v in shared for k in v.phases})
        print("  median phase s: " + ", ".join(
            f"{k} {statistics.median(v.phases.get(k, 0.0) for v in shared):.2f}" for k in phases), flush=True)
        if hung:
            print("hanging candidates' verdicts: " + ", ".join(f"{v.category.value} ({v.detail[:300]})" for v in hung))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--n", type=int, default=8, help="number of distinct candidates")
    parser.add_argument("--workers", type=int, default=0, help="sandboxes at once (0: per core / per GPU)")
    parser.add_argument("--compile-workers", type=int, default=0,
                        help="cuda: candidates in flight (0: the pool's default, half the cores)")
    parser.add_argument("--spares", type=int, default=VerifierConfig().spare_sandboxes,
                        help="sandboxes started ahead (verifier.spare_sandboxes)")
    parser.add_argument("--skip-baseline", action="store_true", help="only the fast path (no ratio)")
    parser.add_argument("--isolation-cost", action="store_true", help="namespaces against no isolation instead")
    parser.add_argument("--gpu-scaling", action="store_true", help="instead: one GPU against every visible GPU")
    parser.add_argument("--hang", type=int, default=0, help="instead: the batch alone and with this many hanging "
                        "candidates added")
    args = parser.parse_args()

    pairs = example_set(args.n, args.backend)
    root = Path(tempfile.mkdtemp(prefix="kd-bench-"))
    print(f"verify_throughput: backend={args.backend} candidates={len(pairs)} in_flight={args.compile_workers or 'default'}"
          f" spares={args.spares}", flush=True)
    if args.isolation_cost or args.hang or args.gpu_scaling:
        try:
            (hang_cost if args.hang else gpu_scaling if args.gpu_scaling else isolation_cost)(pairs, args, root)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        return
    print(f"{'path':<24}{'wall s':>9}{'cand/min':>10}{'median latency s':>18}{'build s':>9}{'run s':>8}"
          f"{'x baseline':>12}{'same verdicts':>15}", flush=True)
    baseline = None
    fast_categories: dict[str, str] = {}
    fast_phases: list[dict[str, float]] = []
    try:
        runs = [("fast (cold)", True), ("fast (warm)", True)]
        if not args.skip_baseline:
            runs.insert(0, ("load_inline (baseline)", False))
        for name, fast in runs:
            cache = root / ("fast" if fast else "baseline")
            if name == "fast (warm)":
                shutil.rmtree(cache / "builds", ignore_errors=True)  # keep the precompiled headers, drop the .so's
            r = run(pairs, args.backend, fast, cache, args.workers, args.compile_workers, args.spares)
            if not fast:
                baseline = r
            else:
                fast_categories = r["categories"]
                fast_phases = [v.phases for v in r["verdicts"].values() if v.category.value == "pass"]
            ratio = f"{baseline['wall'] / r['wall']:.1f}x" if baseline else "-"
            same = "-" if not baseline else ("yes" if r["categories"] == baseline["categories"] else "NO")
            print(f"{name:<24}{r['wall']:>9.1f}{60 * len(pairs) / r['wall']:>10.1f}{r['median_latency']:>18.2f}"
                  f"{r['median_build']:>9.2f}{r['median_run']:>8.2f}{ratio:>12}{same:>15}", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if fast_phases:
        print("median seconds per phase (fast, warm): " + ", ".join(
            f"{k} {statistics.median(p.get(k, 0.0) for p in fast_phases):.2f}" for k in fast_phases[0]))
    counts: dict[str, int] = {}
    for category in fast_categories.values():
        counts[category] = counts.get(category, 0) + 1
    print(f"verdicts: {counts}")


if __name__ == "__main__":
    main()
