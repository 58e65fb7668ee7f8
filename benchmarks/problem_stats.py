"""Synthesized problems next to KernelBench levels 1-3: sizes, work, structure, and what torch.compile gains.

For N synthesized problems (the `synthesize` stage's code and config) and for KernelBench, side by side:
quantiles of the largest tensor (elements), total bytes (inputs + weights + outputs) and FLOPs; node counts;
op-family presence (for the balanced mix: drawn vs really present); the compute- vs memory-bound share
(FLOPs per byte against an H200's fp32 ridge point, operators/measures.py); difficulty levels; and, with
`--backend cuda` on a GPU, the share of references that torch.compile runs >= 10% faster than eager.

Synthesized graphs are compared at their GPU size (KernelBench's sizes are GPU sizes); with
`--backend cpu` the CPU-size column (the same graphs scaled down) is printed as well.

    python -m benchmarks.problem_stats --backend cpu --n 50           # CPU machine: a couple of minutes
    python -m benchmarks.problem_stats --backend cuda                 # GPU box: 1000 problems + timing
    python -m benchmarks.problem_stats --backend cuda --no-timing     # sizes only, any machine
    python -m benchmarks.problem_stats --set synthesize.balanced=true --set 'synthesize.ops=[]' \\
        --set synthesize.fused_fraction=0.3 --set synthesize.max_nodes=10   # the broad mix
    python -m benchmarks.problem_stats --backend cuda --kernelbench ../shared/kernelbench   # time KernelBench too
    python -m benchmarks.problem_stats --kernelbench ../shared/kernelbench --write-kernelbench-reference
    # timing on a GPU machine that lacks the project's dependencies (only torch is needed there):
    python -m benchmarks.problem_stats --backend cuda --no-timing --kernelbench ../shared/kernelbench \\
        --save-problems stats.json                                                             # here
    python3 benchmarks/problem_stats.py --time-only stats.json                                 # there

KernelBench's numbers come from `operators/kernelbench_sizes.json` (measured from KernelBench levels 1-3
under fake tensors by `--write-kernelbench-reference`) unless `--measure-kernelbench` measures a checkout now;
timing KernelBench needs its sources (`--kernelbench DIR`).
Measuring imports and runs those files in worker processes of this machine (under fake tensors: nothing
of their gigabytes is allocated): use it on a checkout you trust. Timing runs references for real.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: the repository's packages, not an installed copy
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

REFERENCE = Path(__file__).resolve().parents[1] / "operators" / "kernelbench_sizes.json"
SPEEDUP = 1.1  # "torch.compile beats eager by >= 10%"


# -- measuring ------------------------------------------------------------------------------------
def _measure_source(args: tuple[str, str]) -> dict[str, Any]:
    """One KernelBench file's measures under fake tensors (runs in a worker process)."""
    name, source = args
    import warnings

    warnings.simplefilter("ignore")
    try:
        from operators.graph import export_reference
        from operators.measures import difficulty, measure_graph
        from verifier.reference import load_reference_module

        measures = measure_graph(export_reference(load_reference_module(source, name.replace("/", "_"))))
        return {"name": name, **measures.as_record(), "difficulty": difficulty(measures)}
    except Exception as exc:
        return {"name": name, "error": f"{type(exc).__name__}: {exc}"[:200]}


def measure_kernelbench(root: str, levels: list[int], workers: int) -> list[dict[str, Any]]:
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    from operators.imports import load_kernelbench

    problems, _ = load_kernelbench(root, levels)
    jobs = [(p.name, p.reference) for p in problems]
    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
        rows = list(pool.map(_measure_source, jobs))
    for row, problem in zip(rows, problems):
        row["level"] = problem.difficulty  # KernelBench's own level, from its folder
        row["reference"] = problem.reference
    return rows


def write_reference(rows: list[dict[str, Any]], levels: list[int]) -> None:
    """KernelBench's measures, one problem a line (small diffs when they are measured again)."""
    lines = ",\n".join(json.dumps(r, sort_keys=True) for r in rows)
    REFERENCE.write_text(f'{{"levels": {json.dumps(levels)}, "problems": [\n{lines}\n]}}\n')


def synthesize(n: int, backend: str, overrides: list[str], seed: int) -> tuple[list[dict[str, Any]], Any]:
    from operators.synthesis import synthesize_problems
    from schemas.config import load_config

    config = load_config(None, [f"synthesize.num_problems={n}", "synthesize.test_fraction=0", *overrides])
    with tempfile.TemporaryDirectory(prefix="problem-stats-") as cache:
        problems, report = synthesize_problems(config.synthesize, seed, Path(cache), backend=backend)
    rows = []
    for p in problems:
        full = p.measures.get("cuda", p.measures)
        rows.append({"name": p.name, "reference": p.reference, "scale": p.scale, "drawn_family": p.drawn_family,
                     "kind": p.measures.get("kind"), "cpu": p.measures if p.scale > 1 else None,
                     **full, "difficulty": p.difficulty})
    return rows, report


# -- timing (needs only torch) ----------------------------------------------------------------------
_GPU_LOCK: str | None = None  # a timing worker's lock file: one worker times on a GPU at a time


@contextmanager
def _timing_exclusive():
    """Hold this worker's GPU alone while it times (workers compile and make inputs side by side)."""
    if _GPU_LOCK is None:
        yield
        return
    import fcntl

    with open(_GPU_LOCK, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _init_timing_worker(counter, gpus: int, lock_dir: str) -> None:
    """Spread timing workers over the visible GPUs, one lock file per GPU."""
    global _GPU_LOCK
    import torch

    with counter.get_lock():
        index = counter.value
        counter.value += 1
    torch.cuda.set_device(index % gpus)
    _GPU_LOCK = os.path.join(lock_dir, f"gpu{index % gpus}.lock")


def _cuda_ms(fn, runs: int, warmup: int) -> float:
    import torch

    with _timing_exclusive():
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(runs):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
    return statistics.median(times)


def compile_speedup(source: str, name: str, runs: int = 10, warmup: int = 3) -> dict[str, Any]:
    """Eager and torch.compile times of one reference on the GPU (median of `runs` after `warmup`)."""
    import torch

    try:
        return _compile_speedup(source, name, runs, warmup)
    except Exception as exc:
        return {"name": name, "error": f"{type(exc).__name__}: {exc}"[:200]}
    finally:  # the reference's tensors died with the call's frame: give their memory back
        torch._dynamo.reset()
        torch.cuda.empty_cache()


def _compile_speedup(source: str, name: str, runs: int, warmup: int) -> dict[str, Any]:
    import types

    import torch

    module = types.ModuleType(f"ref_{abs(hash(name))}")
    exec(compile(source, name, "exec"), module.__dict__)
    torch.manual_seed(0)
    with torch.device("cuda"):  # inputs made on the GPU: KernelBench's reach gigabytes
        model = module.Model(*module.get_init_inputs()).eval()
        inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in module.get_inputs()]
    with torch.no_grad():
        eager = _cuda_ms(lambda: model(*inputs), runs, warmup)
        compiled_model = torch.compile(model)
        started = time.perf_counter()
        compiled_model(*inputs)
        torch.cuda.synchronize()
        compile_s = time.perf_counter() - started
        compiled = _cuda_ms(lambda: compiled_model(*inputs), runs, warmup)
    return {"name": name, "eager_ms": eager, "compiled_ms": compiled, "speedup": eager / compiled,
            "compile_s": compile_s}


def require_gpu() -> None:
    try:
        import torch
    except ImportError:
        sys.exit("timing needs torch")
    if not torch.cuda.is_available():
        sys.exit("the timing part needs a CUDA GPU and torch.cuda.is_available() is False here: run with "
                 "--no-timing for sizes only, or --save-problems FILE here and --time-only FILE on a GPU box")


def _spread(rows: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    step = (len(rows) - 1) / max(1, limit - 1)
    return rows if len(rows) <= limit else [rows[round(i * step)] for i in range(limit)]


def _compile_speedup_row(row: dict[str, Any]) -> dict[str, Any]:
    return compile_speedup(row["reference"], row["name"])


def time_columns(columns: dict[str, list[dict[str, Any]]], limit: int, budget_s: float,
                 workers: int) -> dict[str, list[dict[str, Any]]]:
    """Time up to `limit` rows of every column, `workers` processes at a time over the visible GPUs.

    Workers build models, make inputs and run torch.compile's code generation side by side (minutes of CPU
    work that one process would do in turn); only the timed calls hold their GPU alone (a lock per GPU), so
    times are taken as in a single process. Rows not started within `budget_s` × columns are left out."""
    if workers <= 1:
        return {label: time_rows(rows, limit, budget_s, label) for label, rows in columns.items()}
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    import torch

    context = multiprocessing.get_context("spawn")
    counter = context.Value("i", 0)
    deadline = time.monotonic() + budget_s * len(columns)
    results: dict[str, list[dict[str, Any]]] = {label: [] for label in columns}
    with tempfile.TemporaryDirectory(prefix="kd_timing_locks_") as lock_dir, ProcessPoolExecutor(
            max_workers=workers, mp_context=context, initializer=_init_timing_worker,
            initargs=(counter, torch.cuda.device_count(), lock_dir)) as pool:
        futures = {pool.submit(_compile_speedup_row, row): (label, row["name"])
                   for label, rows in columns.items() for row in _spread(rows, limit)}
        done = 0
        try:
            for future in as_completed(futures, timeout=max(1.0, deadline - time.monotonic())):
                label, name = futures[future]
                result = future.result()
                results[label].append(result)
                done += 1
                shown = f"{result['speedup']:.2f}x" if "speedup" in result else result["error"][:80]
                print(f"  {done}/{len(futures)} {label} {name}: {shown}", file=sys.stderr, flush=True)
        except TimeoutError:
            left = sum(not f.done() for f in futures)
            print(f"  time budget spent: {left} of {len(futures)} references not timed", file=sys.stderr)
            for future in futures:
                future.cancel()
    return results


def kernelbench_columns(kb: list[dict[str, Any]], levels: list[int]) -> dict[str, list[dict[str, Any]]]:
    """KernelBench's rows to time, a column per level (those whose measuring failed left out)."""
    return {f"KB L{level}": [r for r in kb if r.get("level") == level and "error" not in r] for level in levels}


def time_rows(rows: list[dict[str, Any]], limit: int, budget_s: float, label: str) -> list[dict[str, Any]]:
    """Time up to `limit` of `rows` (spread evenly over the list) within `budget_s` seconds."""
    chosen = _spread(rows, limit)
    results, deadline = [], time.monotonic() + budget_s
    for i, row in enumerate(chosen):
        if time.monotonic() > deadline:
            print(f"  {label}: time budget spent after {i} of {len(chosen)}", file=sys.stderr)
            break
        result = compile_speedup(row["reference"], row["name"])
        results.append(result)
        shown = f"{result['speedup']:.2f}x" if "speedup" in result else result["error"][:80]
        print(f"  {label} {i + 1}/{len(chosen)} {row['name']}: {shown}", file=sys.stderr, flush=True)
    return results


# -- the table --------------------------------------------------------------------------------------
def _q(values: list[float], fmt=lambda v: f"{v:.3g}") -> str:
    if not values:
        return "-"
    values = sorted(values)
    pick = lambda f: values[min(len(values) - 1, int(f * len(values)))]
    return f"{fmt(pick(0.1))} / {fmt(pick(0.5))} / {fmt(pick(0.9))}"


def _bytes(v: float) -> str:
    for unit, size in (("GB", 2 ** 30), ("MB", 2 ** 20), ("KB", 2 ** 10)):
        if v >= size:
            return f"{v / size:.3g}{unit}"
    return f"{v:.0f}B"


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def column(rows: list[dict[str, Any]]) -> dict[str, str]:
    ok = [r for r in rows if "error" not in r]
    levels = Counter(r.get("difficulty") for r in ok)
    out = {
        "problems (measured)": f"{len(ok)}" + (f" (+{len(rows) - len(ok)} failed)" if len(rows) > len(ok) else ""),
        "largest tensor, elements p10/p50/p90": _q([r["largest_elements"] for r in ok]),
        "total bytes p10/p50/p90": _q([r["total_bytes"] for r in ok], _bytes),
        "FLOPs p10/p50/p90": _q([r["flops"] for r in ok]),
        "nodes p10/p50/p90": _q([r["nodes"] for r in ok], lambda v: f"{v:.0f}"),
        "nodes min-max": f"{min((r['nodes'] for r in ok), default=0)}-{max((r['nodes'] for r in ok), default=0)}",
        "compute-bound": _pct(sum(bool(r["compute_bound"]) for r in ok), len(ok)),
        "difficulty 1/2/3": " / ".join(_pct(levels.get(k, 0), len(ok)) for k in (1, 2, 3)),
    }
    return out


def family_column(rows: list[dict[str, Any]], families: list[str]) -> dict[str, str]:
    ok = [r for r in rows if "error" not in r]
    return {f"has {f}": _pct(sum(f in r["families"] for r in ok), len(ok)) for f in families}


def timing_column(results: list[dict[str, Any]] | None) -> dict[str, str]:
    if results is None:
        return {f"torch.compile >= {SPEEDUP:.1f}x eager": "not timed"}
    timed = [r for r in results if "speedup" in r]
    speedups = [r["speedup"] for r in timed]
    return {f"torch.compile >= {SPEEDUP:.1f}x eager": f"{_pct(sum(s >= SPEEDUP for s in speedups), len(timed))} "
                                                       f"of {len(timed)}" + (f" ({len(results) - len(timed)} failed)"
                                                                             if len(results) > len(timed) else ""),
            "compile speedup p10/p50/p90": _q(speedups)}


def print_table(columns: dict[str, dict[str, str]]) -> None:
    keys = list(dict.fromkeys(k for col in columns.values() for k in col))
    width = max(len(k) for k in keys) + 2
    widths = {name: max(len(name), *(len(col.get(k, "")) for k in keys)) + 2 for name, col in columns.items()}
    print("".ljust(width) + "".join(name.rjust(widths[name]) for name in columns))
    for k in keys:
        print(k.ljust(width) + "".join(col.get(k, "").rjust(widths[name]) for name, col in columns.items()))


def report(synth: list[dict[str, Any]], synth_report: Any, kb: list[dict[str, Any]], backend: str,
           timings: dict[str, list[dict[str, Any]]] | None) -> None:
    columns: dict[str, dict[str, str]] = {}
    groups = {"synth (GPU size)": synth}
    if backend == "cpu" and any(r.get("cpu") for r in synth):
        groups["synth (CPU size)"] = [{**r["cpu"], "difficulty": r["difficulty"]} for r in synth if r.get("cpu")]
    for level in (1, 2, 3):
        groups[f"KB L{level}"] = [r for r in kb if r.get("level") == level]
    groups["KB L1-3"] = [r for r in kb if r.get("level") in (1, 2, 3)]
    families = sorted({f for rows in groups.values() for r in rows if "error" not in r for f in r["families"]})
    for name, rows in groups.items():
        columns[name] = {**column(rows), **family_column(rows, families)}
        if timings is not None:
            key = "synth" if name.startswith("synth (GPU") else name
            columns[name].update(timing_column(timings.get(key)) if key in timings else {})
    print_table(columns)
    if synth_report is not None:
        drawn, present = synth_report.drawn or {}, synth_report.present or {}
        absent, attempted = synth_report.absent or {}, synth_report.attempted or {}
        if attempted:
            print("\nbalanced mix, per drawn family: graphs tried, kept, kept that contain it, dropped because it "
                  "vanished in export:")
            for family in sorted(attempted):
                print(f"  {family:20s} tried {attempted[family]:4d}   kept {drawn.get(family, 0):4d}   "
                      f"present {present.get(family, 0):4d}   vanished {absent.get(family, 0):3d}")
        kinds = Counter(r.get("kind") for r in synth)
        print(f"\nsynthesis: {synth_report.kept} kept of {synth_report.attempts} attempts; kinds {dict(kinds)}; "
              f"rejected {synth_report.rejected}; cpu scale {synth_report.scale}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1000, help="synthesized problems (default 1000)")
    parser.add_argument("--backend", choices=["cpu", "cuda"], default="cpu",
                        help="which size the synthesized references get; cuda also times them unless --no-timing")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="config override, e.g. synthesize.balanced=true (repeatable)")
    parser.add_argument("--kernelbench", default=None, help="a KernelBench checkout: its sources are timed "
                        f"(--backend cuda); its measures still come from {REFERENCE.name} unless --measure-kernelbench")
    parser.add_argument("--measure-kernelbench", action="store_true",
                        help="with --kernelbench: measure its files now (minutes, in worker processes)")
    parser.add_argument("--levels", default="1,2,3")
    parser.add_argument("--workers", type=int, default=max(1, len(os.sched_getaffinity(0))))
    parser.add_argument("--write-kernelbench-reference", action="store_true",
                        help=f"with --kernelbench: measure it and store the measures in {REFERENCE} (the "
                        "synthesize stage plots them)")
    parser.add_argument("--no-timing", action="store_true", help="sizes only (no GPU needed)")
    parser.add_argument("--timing-n", type=int, default=50, help="references timed per column (default 50)")
    parser.add_argument("--timing-budget-s", type=float, default=1500.0, help="seconds of timing per column")
    parser.add_argument("--timing-workers", type=int, default=1, help="processes timing at once, spread over "
                        "the visible GPUs (each times with its GPU alone; compiles overlap)")
    parser.add_argument("--save-problems", default=None, help="write the synthesized and KernelBench references "
                        "with their measures to this JSON file")
    parser.add_argument("--time-only", default=None, help="time the references of a --save-problems file "
                        "(needs only torch and a GPU) and print the tables")
    parser.add_argument("--json", default=None, help="also write the numbers to this JSON file")
    args = parser.parse_args(argv)
    levels = [int(x) for x in args.levels.split(",") if x]

    if args.time_only:
        require_gpu()
        saved = json.loads(Path(args.time_only).read_text())
        synth, kb = saved["synth"], saved["kernelbench"]
        columns = {"synth": synth, **kernelbench_columns(kb, levels)}
        timings = time_columns(columns, args.timing_n, args.timing_budget_s, args.timing_workers)
        timings["KB L1-3"] = [t for level in levels for t in timings[f"KB L{level}"]]
        report(synth, None, kb, "cuda", timings)
        _dump(args.json, synth, kb, timings)
        return

    timing = args.backend == "cuda" and not args.no_timing
    if timing:
        require_gpu()  # before minutes of synthesis
    if args.write_kernelbench_reference and not args.kernelbench:
        sys.exit("--write-kernelbench-reference needs --kernelbench DIR")
    started = time.perf_counter()
    if args.kernelbench and (args.measure_kernelbench or args.write_kernelbench_reference):
        kb = measure_kernelbench(args.kernelbench, levels, args.workers)
        print(f"measured {len(kb)} KernelBench problems in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        if args.write_kernelbench_reference:
            write_reference([{k: v for k, v in r.items() if k != "reference"} for r in kb], levels)
            print(f"wrote {REFERENCE}", file=sys.stderr)
    else:
        if not REFERENCE.exists():
            sys.exit(f"{REFERENCE} is missing: pass --kernelbench DIR")
        kb = [r for r in json.loads(REFERENCE.read_text())["problems"] if r.get("level") in levels]
        if args.kernelbench:  # sources to time, matched by name
            from operators.imports import load_kernelbench

            sources = {p.name: p.reference for p in load_kernelbench(args.kernelbench, levels)[0]}
            kb = [{**r, "reference": sources[r["name"]]} if r["name"] in sources else r for r in kb]
    started = time.perf_counter()
    synth, synth_report = synthesize(args.n, args.backend, args.set, args.seed)
    print(f"synthesized {len(synth)} problems in {time.perf_counter() - started:.0f} s "
          f"({(time.perf_counter() - started) / max(1, len(synth)):.2f} s each)", file=sys.stderr)
    if args.save_problems:
        Path(args.save_problems).write_text(json.dumps({"synth": synth, "kernelbench": kb}))
    timings = None
    if timing:
        columns = {"synth": synth}
        if kb and all("reference" in r for r in kb):
            columns.update(kernelbench_columns(kb, levels))
        else:
            print("KernelBench not timed: pass --kernelbench DIR for its sources", file=sys.stderr)
        timings = time_columns(columns, args.timing_n, args.timing_budget_s, args.timing_workers)
        if len(columns) > 1:
            timings["KB L1-3"] = [t for level in levels for t in timings[f"KB L{level}"]]
    report(synth, synth_report, kb, args.backend, timings)
    _dump(args.json, synth, kb, timings)


def _dump(path: str | None, synth, kb, timings) -> None:
    if path:
        strip = lambda rows: [{k: v for k, v in r.items() if k != "reference"} for r in rows]
        Path(path).write_text(json.dumps({"synth": strip(synth), "kernelbench": strip(kb), "timings": timings},
                                         indent=1, default=str))


if __name__ == "__main__":
    main()
