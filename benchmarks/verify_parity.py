"""Verdict parity: the fast build path (kd_shim, no torch headers) against torch's own `load_inline`, on the
parity corpus (benchmarks/parity_corpus: KernelBench problems with model-style CUDA candidates).

The fast path may change how fast a verdict comes, never which verdict (DESIGN.md §4). This judges every pair
twice with the same judge settings, verdict cache off and a build cache of its own per path: once with
`verifier.fast_build: true`, once with `false` (torch's `load_inline`, the baseline). It prints per path the wall
time, candidates per minute, the median verdict latency, the share of candidates that stayed on the fast path,
the verdict differences (each listed) and the ratio against the baseline.

    python benchmarks/verify_parity.py --backend cuda                   # GPU box: full verdicts
    python benchmarks/verify_parity.py --backend cuda --build-only      # no GPU needed: build outcomes only
    python benchmarks/verify_parity.py --build-only --limit 12 --torch-python /path/to/cuda-torch/bin/python

How the fast-path share is told: a build that the fast path could not take falls back to torch's `load_inline`
inside the builder, and the `Artifact` it returns names why (`Artifact.fallback`). The verdict does not carry
that, so in judge mode this script records `Artifact.fallback` from the judge's own `FastInlineBuilder` for every
build request (matched to its candidate by the request's sources) and checks the count against the builder's
`stats.fallbacks`; in `--build-only` mode it calls the builder itself. A candidate "stayed on the fast path" when
its builds returned no fallback, whatever they ended in (built, or the candidate's own compile error).

`--build-only` compiles every candidate on both paths with the builder directly (`FastInlineBuilder(...,
fast=True/False).build(BuildRequest.from_call(...), LocalRunner())`, no sandbox, no GPU): the candidate's
`load_inline` arguments are taken by running its module with a stand-in `load_inline` that records them. It
reports build-outcome differences (built vs compile error) and the fast-path share. torch's `load_inline` can only
compile CUDA sources with a torch built with CUDA: where this interpreter's torch has none (`torch.version.cuda` is
None), pass `--torch-python`, an interpreter whose torch has CUDA, and the baseline builds run there (its torch
headers are then that torch's). Candidates refused by the static rules (the red-team entry using cuBLAS) are
reported as illegal on both paths and never built. `--limit N` takes N pairs spread evenly over the corpus.

`--build-only --shim-only` builds on the fast path alone and records, without building, where it would fall back:
the shim's coverage of the whole corpus in minutes, with no CUDA torch.

`--backend cpu` judges on the CPU backend, where CUDA kernels cannot run, so its verdicts could only compare
building, loading and the host code's checks; on a machine with no GPU the judge cannot build CUDA candidates at
all (the fast path asks torch.cuda for the architecture), and the script says so and stops.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch.utils import cpp_extension

if __package__ in (None, ""):  # run as a file: the repository root, so this checkout's packages are the ones used
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.parity_corpus import CorpusEntry, load_corpus, name_of
from verifier.fastbuild import BuildError, BuildRequest, FastInlineBuilder, LocalRunner, _cuda_home, compiler_errors
from verifier.legality import check_build_request, check_source


# -- the candidate's load_inline calls, as data ------------------------------------------------------------------
class _RecordedModule:
    """What the stand-in load_inline returns: any attribute is a function that does nothing."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


_RECORDING = threading.Lock()


@contextmanager
def _recording_load_inline(calls: list):
    original = cpp_extension.load_inline

    def record(*args, **kwargs):
        calls.append((list(args), dict(kwargs)))
        return _RecordedModule()

    with _RECORDING:  # one candidate at a time: the stand-in is module state
        cpp_extension.load_inline = record
        try:
            yield
        finally:
            cpp_extension.load_inline = original


def load_inline_calls(source: str) -> list[tuple[list, dict]]:
    """The (args, kwargs) of every load_inline call the candidate's module makes when it runs. Our own corpus is
    trusted code, so it runs here, with a stand-in load_inline that builds nothing."""
    calls: list[tuple[list, dict]] = []
    with _recording_load_inline(calls):
        exec(compile(source, "candidate.py", "exec"), {"__name__": "candidate"})
    return calls


def request_key(request: BuildRequest) -> tuple:
    return request.cpp, request.cuda, request.functions


# -- build-only ---------------------------------------------------------------------------------------------------
@dataclass
class BuildOutcome:
    outcome: str  # built | compile_error | illegal | no_build_request | error
    seconds: float = 0.0
    fallback: str | None = None  # fast path only: why torch's load_inline built it
    detail: str = ""


_SLOW_BUILD_SNIPPET = r"""
import glob, json, os, sys, sysconfig
from torch.utils import cpp_extension
# cuBLAS/cuSPARSE/cuSOLVER headers (ATen/cuda/CUDAContext.h includes them) come with torch's pip CUDA wheels when the
# toolkit is nvcc alone; as -isystem paths after the toolkit's own.
extra = glob.glob(os.path.join(sysconfig.get_paths()["purelib"], "nvidia", "cu*", "include"))
os.environ["CPLUS_INCLUDE_PATH"] = os.pathsep.join(filter(None, [os.environ.get("CPLUS_INCLUDE_PATH"), *extra]))
cpp_extension._import_module_from_library = lambda *a, **k: None  # build the shared object, never load it
job = json.load(sys.stdin)
try:
    cpp_extension.load_inline(**job["kwargs"], build_directory=job["directory"], verbose=False)
    print(json.dumps({"ok": True}))
except Exception as exc:
    print(json.dumps({"ok": False, "log": str(exc)[-20000:]}))
"""


class TorchPythonRunner(LocalRunner):
    """A LocalRunner whose torch `load_inline` builds run in another interpreter (one whose torch has CUDA); the
    builder's decisions and store stay here."""

    def __init__(self, torch_python: str, cuda_arch: str):
        super().__init__()
        self.torch_python = torch_python
        self.env = {**os.environ, "TORCH_CUDA_ARCH_LIST": f"{cuda_arch[:-1]}.{cuda_arch[-1]}"}
        if _cuda_home():
            self.env.setdefault("CUDA_HOME", str(_cuda_home()))

    def torch_build(self, kwargs: dict, timeout_s: float) -> Path:
        directory = self.outbox / "torch_ext"
        directory.mkdir(parents=True, exist_ok=True)
        job = json.dumps({"kwargs": kwargs, "directory": str(directory)})
        proc = subprocess.run([self.torch_python, "-c", _SLOW_BUILD_SNIPPET], input=job, capture_output=True,
                              text=True, env=self.env, timeout=timeout_s)
        replies = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        if proc.returncode != 0 or not replies:
            raise RuntimeError(f"--torch-python {self.torch_python} failed: {proc.stderr[-2000:]}")
        reply = json.loads(replies[-1])
        if not reply["ok"]:
            raise BuildError("the candidate's source failed to compile (torch load_inline)", reply["log"])
        return directory / f"{kwargs['name']}.so"


class _NoFallbackBuild(BuildError):
    """--shim-only: the fast path would fall back to torch's load_inline here; not built."""


class ShimOnlyRunner(LocalRunner):
    def torch_build(self, kwargs: dict, timeout_s: float) -> Path:
        raise _NoFallbackBuild("would fall back to torch's load_inline (not built: --shim-only)", "")


def _first_error(log: str) -> str:
    errors = compiler_errors(log, limit=1)
    if errors:
        return errors[0]
    lines = [line for line in log.strip().splitlines() if "error" in line.lower()]
    return (lines[0] if lines else log.strip().splitlines()[-1] if log.strip() else "")[:240]


def build_one(entry: CorpusEntry, build) -> BuildOutcome:
    """`build(request) -> fallback reason or None` over every load_inline call of the candidate; the first
    failure is the outcome."""
    if check_source(ast.parse(entry.candidate.source)):
        return BuildOutcome("illegal", detail=check_source(ast.parse(entry.candidate.source))[0].message)
    try:
        calls = load_inline_calls(entry.candidate.source)
    except Exception as exc:  # noqa: BLE001 - a candidate whose module fails before building
        return BuildOutcome("error", detail=f"running the module failed: {exc!r}"[:240])
    if not calls:
        return BuildOutcome("no_build_request")
    start = time.perf_counter()
    fallbacks = []
    try:
        for args, kwargs in calls:
            try:
                request = BuildRequest.from_call(args, kwargs)
            except (TypeError, ValueError) as exc:
                return BuildOutcome("error", detail=f"load_inline arguments: {exc}"[:240])
            violations = check_build_request(request)
            if violations:
                return BuildOutcome("illegal", detail=violations[0].message)
            reason = build(request)
            if reason:
                fallbacks.append(reason)
    except BuildError as exc:  # after a fallback, torch's load_inline failed too: still a fallback
        fallbacks += [exc.fallback] if getattr(exc, "fallback", None) else []
        if isinstance(exc, _NoFallbackBuild):
            return BuildOutcome("fell_back", time.perf_counter() - start, "; ".join(fallbacks) or None, str(exc))
        return BuildOutcome("compile_error", time.perf_counter() - start, "; ".join(fallbacks) or None,
                            _first_error(exc.log or str(exc)))
    return BuildOutcome("built", time.perf_counter() - start, "; ".join(fallbacks) or None)


def run_build_only(entries: list[CorpusEntry], args, root: Path) -> None:
    slow_python = args.torch_python
    if slow_python is None and not torch.version.cuda and not args.shim_only:
        sys.exit("verify_parity --build-only: this torch is built without CUDA (torch.version.cuda is None), so its "
                 "load_inline cannot compile cuda_sources at all. Pass --torch-python with an interpreter whose torch "
                 "has CUDA (no GPU needed).")
    if _cuda_home() is None:
        sys.exit("verify_parity --build-only: no CUDA toolkit (nvcc) found")
    # The baseline is the builder with the fast path off: every request goes to torch's load_inline, as in the
    # judge. The fast path's own fallbacks go there too, so both paths' torch builds run in the same torch.
    fast_builder = FastInlineBuilder(root / "fast", cuda_arch=args.cuda_arch, fast=True)
    slow_builder = FastInlineBuilder(root / "slow", cuda_arch=args.cuda_arch, fast=False)
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", f"{args.cuda_arch[:-1]}.{args.cuda_arch[-1]}")
    runner = ShimOnlyRunner if args.shim_only else \
        (lambda: TorchPythonRunner(slow_python, args.cuda_arch)) if slow_python else LocalRunner

    def with_runner(builder):
        def build(request):
            r = runner()
            torch_build, fell_back = r.torch_build, []

            def noting(kwargs, timeout_s):  # the builder names its reason just before it calls this
                fell_back.append(builder.stats.fallback_reasons[-1] if builder.stats.fallback_reasons else "?")
                return torch_build(kwargs, timeout_s)

            r.torch_build = noting
            try:
                return builder.build(request, r).fallback
            except BuildError as exc:
                exc.fallback = fell_back[0] if fell_back and builder.fast else None
                raise
            finally:
                r.close()
        return build

    fast_build, slow_build = with_runner(fast_builder), with_runner(slow_builder)

    if not args.quiet:
        print("building libkd_bridge (once per cache, not counted) ...", flush=True)
    fast_builder.bridge_dir("cuda")
    results: dict[str, dict[str, BuildOutcome]] = {}
    walls = {}
    paths = [("fast (kd_shim)", fast_build)] if args.shim_only else \
        [("load_inline (baseline)", slow_build), ("fast (kd_shim)", fast_build)]
    for path, build in paths:
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            outcomes = list(pool.map(lambda e: build_one(e, build), entries))
        walls[path] = time.perf_counter() - start
        for entry, outcome in zip(entries, outcomes):
            results.setdefault(name_of(entry.candidate), {})[path] = outcome
            if args.verbose:
                print(f"  {path:<24}{name_of(entry.candidate):<60}{outcome.outcome:<16}{outcome.seconds:7.1f}s"
                      f"{'  fell back: ' + outcome.fallback[:80] if outcome.fallback else ''}", flush=True)
    if args.shim_only:
        report_shim(entries, results, walls["fast (kd_shim)"], args)
    else:
        report_builds(entries, results, walls, args)


def report_shim(entries, results, wall, args) -> None:
    """The fast path alone, fallbacks not built: the shim's coverage, and the compile errors it reports itself."""
    outs = {name_of(e.candidate): results[name_of(e.candidate)]["fast (kd_shim)"] for e in entries}
    requested = {n: o for n, o in outs.items() if o.outcome in ("built", "compile_error", "fell_back")}
    stayed = sum(o.fallback is None for o in requested.values())
    seconds = [o.seconds for o in requested.values() if o.fallback is None]
    print(f"\nverify_parity --build-only --shim-only: {len(entries)} candidates, cuda arch sm_{args.cuda_arch}, "
          f"{wall:.1f} s ({60 * len(entries) / wall:.1f} cand/min), median build {statistics.median(seconds):.2f} s")
    print(f"stayed on the fast path: {stayed}/{len(requested)} ({100 * stayed / max(1, len(requested)):.0f}%); "
          f"built {sum(o.outcome == 'built' for o in outs.values())}, "
          f"compile error {sum(o.outcome == 'compile_error' for o in outs.values())}, "
          f"would fall back {sum(o.outcome == 'fell_back' for o in outs.values())}, "
          f"illegal {sum(o.outcome == 'illegal' for o in outs.values())}")
    expected = {name_of(e.candidate): e.expected for e in entries}
    errors = [n for n, o in outs.items() if o.outcome == "compile_error"]
    print(f"\ncompile errors the fast path reports itself ({len(errors)}; where EXPECTED is not compile_error, "
          f"torch's load_inline may build it: a verdict difference to confirm without --shim-only):")
    for n in errors:
        print(f"  {n} (expected {expected[n]}): {outs[n].detail}")
    fell = [n for n, o in requested.items() if o.fallback]
    print(f"\nwould fall back to torch's load_inline ({len(fell)}):")
    for n in fell:
        print(f"  {n}: {outs[n].fallback[:200]}")


def report_builds(entries, results, walls, args) -> None:
    slow_name, fast_name = "load_inline (baseline)", "fast (kd_shim)"
    names = [name_of(e.candidate) for e in entries]
    print(f"\nverify_parity --build-only: {len(entries)} candidates, cuda arch sm_{args.cuda_arch}, "
          f"baseline torch {'from ' + args.torch_python if args.torch_python else torch.__version__}, jobs {args.jobs}")
    print(f"{'path':<24}{'wall s':>9}{'cand/min':>10}{'median build s':>16}{'built':>7}{'compile err':>13}"
          f"{'illegal':>9}{'fast-path share':>17}{'x baseline':>12}")
    requested = [n for n in names if results[n][fast_name].outcome not in ("illegal", "no_build_request", "error")]
    for path in (slow_name, fast_name):
        outs = [results[n][path] for n in names]
        built = [o.seconds for o in outs if o.outcome in ("built", "compile_error")]
        count = lambda kind: sum(o.outcome == kind for o in outs)
        if path == fast_name:
            stayed = sum(results[n][fast_name].fallback is None for n in requested)
            share = f"{stayed}/{len(requested)} ({100 * stayed / max(1, len(requested)):.0f}%)"
        else:
            share = "-"
        print(f"{path:<24}{walls[path]:>9.1f}{60 * len(entries) / walls[path]:>10.1f}"
              f"{statistics.median(built) if built else 0:>16.2f}{count('built'):>7}{count('compile_error'):>13}"
              f"{count('illegal'):>9}{share:>17}{walls[slow_name] / walls[path]:>11.1f}x")
    differ = [n for n in names if results[n][fast_name].outcome != results[n][slow_name].outcome]
    print(f"\nbuild-outcome differences: {len(differ)}")
    for n in differ:
        f, s = results[n][fast_name], results[n][slow_name]
        print(f"  {n}: fast {f.outcome}, load_inline {s.outcome}\n"
              f"      fast: {f.detail or '-'}\n      load_inline: {s.detail or '-'}")
    fell_back = [n for n in requested if results[n][fast_name].fallback]
    print(f"\nfell back to torch's load_inline on the fast path: {len(fell_back)}")
    for n in fell_back:
        print(f"  {n}: {results[n][fast_name].fallback[:200]}")
    off = []
    for entry in entries:
        n, got = name_of(entry.candidate), results[name_of(entry.candidate)][slow_name].outcome
        # a verdict past compiling (pass, wrong output, a run-time error or check) needs a build first
        wanted = {"compile_error": "compile_error", "illegal": got if got == "illegal" else "built"}.get(entry.expected,
                                                                                                       "built")
        if got != wanted:
            off.append((n, wanted, results[n][slow_name]))
    if off:
        print(f"\ncorpus labels the baseline's build disagrees with (EXPECTED implies {{compile_error, built}}): {len(off)}")
        for n, wanted, outcome in off:
            print(f"  {n}: expected {wanted}, load_inline {outcome.outcome}: {outcome.detail[:160]}")


# -- full verdicts through the judge ------------------------------------------------------------------------------
@dataclass
class JudgeRun:
    wall: float
    verdicts: dict  # candidate id -> Verdict
    fallbacks: dict = field(default_factory=dict)  # candidate name -> [reasons]
    requested: set = field(default_factory=set)  # candidate names the judge built for
    stats_fallbacks: int = 0


def judge_path(entries: list[CorpusEntry], args, fast: bool, cache: Path) -> JudgeRun:
    from schemas.config import VerifierConfig
    from verifier.pool import LocalVerifierPool

    keys = {}
    for entry in entries:  # which candidate a build request belongs to
        try:
            for call_args, kwargs in load_inline_calls(entry.candidate.source):
                keys.setdefault(request_key(BuildRequest.from_call(call_args, kwargs)), []).append(name_of(entry.candidate))
        except Exception:  # noqa: BLE001 - it fails in the sandbox too; nothing to match
            pass
    config = VerifierConfig(backend=args.backend, fast_build=fast, use_cache=False, compile_timeout_s=600,
                            run_timeout_s=60, trials=args.trials, compare_torch_compile=False,
                            isolation=args.isolation, compile_workers=args.jobs if args.jobs > 1 else 0)
    fallbacks: dict[str, list[str]] = {}
    requested: set[str] = set()
    with LocalVerifierPool(config, cache) as pool:
        builders = [pool.judge.builder(i) for i in sorted(set(pool.devices.indices))]
        for builder in builders:
            builder.build = _recording(builder.build, keys, fallbacks, requested)
        start = time.perf_counter()
        verdicts = {v.candidate_id: v for v in pool.verify_many([(e.problem, e.candidate) for e in entries])}
        wall = time.perf_counter() - start
        stats_fallbacks = sum(b.stats.fallbacks for b in builders)
    return JudgeRun(wall, verdicts, fallbacks, requested, stats_fallbacks)


def _recording(build, keys, fallbacks, requested):
    """The judge's builder.build, recording which candidates asked for a build and why any fell back (a build
    error propagates as before)."""
    lock = threading.Lock()

    def recorded(request, runner):
        names = keys.get(request_key(request), ["?"])
        with lock:
            requested.update(names)
        artifact = build(request, runner)
        if artifact.fallback:
            with lock:
                for name in names:
                    fallbacks.setdefault(name, []).append(artifact.fallback)
        return artifact

    return recorded


def run_judge(entries: list[CorpusEntry], args, root: Path) -> None:
    if args.backend == "cuda" and not torch.cuda.is_available():
        sys.exit("verify_parity --backend cuda needs a GPU; use --build-only here")
    if args.backend == "cpu" and not torch.cuda.is_available():
        # Measured: the fast path's FastInlineBuilder._build_cuda asks torch for the GPU's architecture, and the
        # exception escapes Judge.verify (the pool stops); torch's load_inline needs a CUDA torch besides.
        sys.exit("verify_parity --backend cpu: the judge cannot build CUDA candidates without a GPU (the fast path "
                 "asks torch.cuda for the device architecture and the error escapes the judge); use --build-only")
    runs = {}
    for path, fast in (("load_inline (baseline)", False), ("fast (kd_shim)", True)):
        runs[path] = judge_path(entries, args, fast, root / ("fast" if fast else "slow"))
        if not args.quiet:
            print(f"  {path}: {runs[path].wall:.1f} s", flush=True)
    slow, fast = runs["load_inline (baseline)"], runs["fast (kd_shim)"]
    by_name = {name_of(e.candidate): e for e in entries}
    print(f"\nverify_parity: backend={args.backend} candidates={len(entries)} trials={args.trials} "
          f"isolation={args.isolation}")
    print(f"{'path':<24}{'wall s':>9}{'cand/min':>10}{'median latency s':>18}{'fast-path share':>17}{'x baseline':>12}"
          f"  verdicts")
    for path, run in runs.items():
        latencies = [v.compile_seconds + v.run_seconds for v in run.verdicts.values()]
        counts: dict[str, int] = {}
        for v in run.verdicts.values():
            counts[v.category.value] = counts.get(v.category.value, 0) + 1
        if run is fast:
            stayed = len(run.requested - set(run.fallbacks))
            share = f"{stayed}/{len(run.requested)} ({100 * stayed / max(1, len(run.requested)):.0f}%)"
        else:
            share = "-"
        print(f"{path:<24}{run.wall:>9.1f}{60 * len(entries) / run.wall:>10.1f}{statistics.median(latencies):>18.2f}"
              f"{share:>17}{slow.wall / run.wall:>11.1f}x  {counts}")
    recorded = sum(len(r) for r in fast.fallbacks.values())
    print(f"fallbacks: {recorded} recorded per candidate, {fast.stats_fallbacks} in the judge's builder stats")
    differ = [n for n, e in by_name.items()
              if fast.verdicts[e.candidate.id].category != slow.verdicts[e.candidate.id].category]
    print(f"\nverdict differences: {len(differ)}")
    for n in differ:
        f, s = fast.verdicts[by_name[n].candidate.id], slow.verdicts[by_name[n].candidate.id]
        print(f"  {n}: fast {f.category.value}, load_inline {s.category.value}\n"
              f"      fast: {_gist(f.detail)}\n      load_inline: {_gist(s.detail)}")
    print(f"\nfell back to torch's load_inline on the fast path: {len(fast.fallbacks)}")
    for n, reasons in sorted(fast.fallbacks.items()):
        print(f"  {n}: {reasons[0][:200]}")
    if args.json:  # per candidate, so runs over parts of the corpus can be combined
        Path(args.json).write_text(json.dumps({path: {
            "wall": run.wall, "requested": sorted(run.requested), "fallbacks": run.fallbacks,
            "verdicts": {n: {"category": run.verdicts[e.candidate.id].category.value,
                             "latency": run.verdicts[e.candidate.id].compile_seconds + run.verdicts[e.candidate.id].run_seconds}
                         for n, e in by_name.items()}} for path, run in runs.items()}, indent=1))
    off = [n for n, e in by_name.items() if slow.verdicts[e.candidate.id].category.value != e.expected]
    if off:
        print(f"\ncorpus labels the baseline disagrees with (EXPECTED vs load_inline's verdict): {len(off)}")
        for n in off:
            v = slow.verdicts[by_name[n].candidate.id]
            print(f"  {n}: expected {by_name[n].expected}, got {v.category.value}: {_gist(v.detail)}")


def combine(paths: list[str]) -> None:
    """The table over parts of the corpus judged in separate runs (`--json` files): walls add up (each part ran
    alone, or beside another on a second GPU), latencies and verdicts are per candidate."""
    parts = [json.loads(Path(p).read_text()) for p in paths]
    runs: dict[str, dict] = {}
    for part in parts:
        for path, run in part.items():
            merged = runs.setdefault(path, {"wall": 0.0, "requested": set(), "fallbacks": {}, "verdicts": {}})
            merged["wall"] += run["wall"]
            merged["requested"] |= set(run["requested"])
            merged["fallbacks"].update(run["fallbacks"])
            merged["verdicts"].update(run["verdicts"])
    slow, fast = runs["load_inline (baseline)"], runs["fast (kd_shim)"]
    names = sorted(slow["verdicts"].keys() & fast["verdicts"].keys())
    print(f"verify_parity --combine: {len(parts)} parts, {len(names)} candidates judged on both paths")
    print(f"{'path':<24}{'wall s':>9}{'cand/min':>10}{'median latency s':>18}{'fast-path share':>17}{'x baseline':>12}"
          f"  verdicts")
    for path, run in runs.items():
        counts: dict[str, int] = {}
        for name in names:
            category = run["verdicts"][name]["category"]
            counts[category] = counts.get(category, 0) + 1
        latency = statistics.median(run["verdicts"][n]["latency"] for n in names)
        if run is fast:
            stayed = len(run["requested"] - set(run["fallbacks"]))
            share = f"{stayed}/{len(run['requested'])} ({100 * stayed / max(1, len(run['requested'])):.0f}%)"
        else:
            share = "-"
        print(f"{path:<24}{run['wall']:>9.1f}{60 * len(names) / run['wall']:>10.1f}{latency:>18.2f}{share:>17}"
              f"{slow['wall'] / run['wall']:>11.1f}x  {dict(sorted(counts.items()))}")
    differ = [n for n in names if fast["verdicts"][n]["category"] != slow["verdicts"][n]["category"]]
    print(f"\nverdict differences: {len(differ)}")
    for n in differ:
        print(f"  {n}: fast {fast['verdicts'][n]['category']}, load_inline {slow['verdicts'][n]['category']}")
    print(f"fell back to torch's load_inline on the fast path: {len(fast['fallbacks'])}")
    for n, reasons in sorted(fast["fallbacks"].items()):
        print(f"  {n}: {reasons[0][:200]}")


def _gist(detail: str) -> str:
    """The line of a verdict's detail that says what happened (a compile error's first error, not its heading)."""
    lines = [line.strip() for line in detail.strip().splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower() and not line.endswith(":")]
    return (errors or lines or [""])[0][:200]


def spread(entries: list, limit: int | None) -> list:
    """`limit` entries spaced evenly over the list (all when None), so a short run samples every family."""
    if not limit or limit >= len(entries):
        return entries
    step = len(entries) / limit
    return [entries[int(i * step)] for i in range(limit)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=["cpu", "cuda"], default="cuda")
    parser.add_argument("--limit", type=int, default=None, help="judge N pairs spread evenly over the corpus")
    parser.add_argument("--only", nargs="*", default=None, help="pairs whose name contains one of these strings")
    parser.add_argument("--build-only", action="store_true", help="compile on both paths, no judge and no GPU")
    parser.add_argument("--cuda-arch", default=None, help="build-only: compute capability, e.g. 90 (default: the "
                        "GPU's, else 90)")
    parser.add_argument("--shim-only", action="store_true", help="build-only: the fast path alone, fallbacks "
                        "recorded but not built (no CUDA torch needed): the shim's coverage in minutes")
    parser.add_argument("--torch-python", default=None, help="build-only: interpreter whose torch has CUDA, for "
                        "the load_inline baseline")
    parser.add_argument("--jobs", type=int, default=1, help="builds (build-only) or candidates (cuda) in flight")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--isolation", choices=["namespaces", "none"], default="namespaces")
    parser.add_argument("--verbose", action="store_true", help="a line per candidate and path as it finishes")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--combine", nargs="+", default=None, metavar="JSON", help="print the table over the "
                        "--json files of runs over parts of the corpus, and judge nothing")
    parser.add_argument("--json", default=None, help="judge mode: also write every candidate's verdict and latency "
                        "per path to this file")
    args = parser.parse_args()
    if args.combine:
        combine(args.combine)
        return
    args.build_only = args.build_only or args.shim_only
    if args.cuda_arch is None:
        args.cuda_arch = (f"{''.join(map(str, torch.cuda.get_device_capability()))}" if torch.cuda.is_available()
                          else "90")

    entries = load_corpus()
    if args.only:
        entries = [e for e in entries if any(s in name_of(e.candidate) for s in args.only)]
    entries = spread(entries, args.limit)
    root = Path(tempfile.mkdtemp(prefix="kd-parity-"))
    try:
        if args.build_only:
            run_build_only(entries, args, root)
        else:
            run_judge(entries, args, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
