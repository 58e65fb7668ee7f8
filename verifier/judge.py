"""Judge one candidate against one problem: static checks, sandboxed build and run, comparison,
legality, timing -> a `Verdict`.

The judge holds the reference's outputs and its own clock; the sandboxes hold untrusted code only
(verifier/sandbox.py): the candidate with the inputs of the current trial, its compilers, and the
reference program itself. What a sandbox reports is checked before it is believed: its messages are
decoded weights-only and validated, its build requests are checked against the same rules as its
source, its outputs are compared here, and its timing is held against the judge's clock.
"""

from __future__ import annotations

import ast
import hashlib
import hmac
import itertools
import logging
import math
import os
import random
import re
import shutil
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from schemas.config import VerifierConfig
from schemas.records import Candidate, Problem, Verdict, VerdictCategory
from verifier.activity import doing, waiting_for
from verifier.device_lock import MachineDeviceLock, cuda_device_key, machine_lock
from verifier.fastbuild import BuildError, BuildRequest, FastInlineBuilder, LocalRunner, compiler_errors
from verifier.legality import (check_artifact_symbols, check_build_request, check_machine_code, check_source,
                               forbidden_ops)
from verifier.reference import ReferenceError, compare_outputs, dumps, layout_mismatch, trial_seed
from verifier.isolation import Cgroups, host_memory_mb, remove_dead_judges_directories
from verifier.sandboxes import (Sandbox, SandboxFactory, SandboxOverEstimate, SandboxStarved, SandboxStartError,
                                cpu_accounting, quote)
from verifier.signed_store import home_secret
from verifier.stash import (STASH_MEMORY_BYTES, JudgeDiskFull, MemoryAllowance, TensorStash, digest,
                            private_directory)
from verifier.tensor_io import (SharedStaging, TamperedData, bytes_spanned, check_descriptions, describe, map_sealed,
                               nbytes_of, read_tensors, write_sealed)
from verifier.timing import believed_seconds, copy_bandwidth, physical_floor_seconds

log = logging.getLogger("kerneldojo.verifier")
INIT_SEED = 42
SPEEDUP_SANITY_BOUND = 1000.0  # a claimed speedup above this is re-measured before it is believed
COMPILED_BASELINE_ATTEMPTS = 2  # a torch.compile baseline that fails is tried once more in a fresh sandbox
MIN_TIMING_WINDOW_S = 0.02  # timed calls together last at least this long, so the judge's clock resolves them
MAX_TIMING_RUNS = 100
TIMING_SET_BYTES = 1 << 30  # the timed calls' own inputs together (one set per call: fewer calls if they are large)
TIMING_OUTPUT_BYTES = 1 << 30  # the timed calls' outputs a sandbox keeps until the judge picks those it checks
# a timing set comes from the same get_inputs as the trials: one far larger than the largest trial's inputs is the
# reference's fault (refused: its problem is left out), never bytes the judge writes to its disk
TIMING_SET_SLACK = 2
TIMING_SET_MARGIN_BYTES = 1 << 20
CHECKED_TIMED_CALLS = 4  # timed calls whose outputs the judge compares, drawn after the timing, unknowable ahead
EXPECTED_ON_DEVICE_BYTES = 1 << 28  # an expected output larger than this is kept on the host and compared a slice
# at a time on the device (compare_outputs): whole on the device, each judging thread held its outputs there
TIMING_SEED_OFFSET = 10_000  # timing inputs' seeds never coincide with a correctness trial's
SLOW_REFERENCE_S = 10.0  # a reference check this slow logs where its time went (KernelBench at full size: ~100 s)
HANG_FACTOR = 50.0  # a candidate's call may take this many times the reference's before it counts as hung
HANG_FLOOR_S = 2.0  # ... and always this long (first calls load modules; a loaded machine is slower)
HANG_DATA_FACTOR = 4.0  # ... plus this many times the rest of the reference's trial (making, moving and writing
# tensors), which a candidate's trial repeats at the same sizes: a factor on the forward alone
HAND_OVER_TIMEOUT_S = 30.0  # a sandbox sends its sealed memory file right after the message that announces it
LOAD_FIRST_MEMORY_MB = 4096  # a candidate's first look (verifier.build_first): its module, its builds, its ModelNew
HOST_READS_PER_FORWARD = 16  # tensor values a forward may read on the host (a scalar parameter's .item()); beyond,
# it computes in Python: element by element, read with float(x[i, j]), written with out[i, j] = v (fill_: glue)
FLOOR_SLACK = 0.5  # below half the copy-bandwidth bound is impossible (a read-mostly kernel may beat a copy)

__all__ = ["Judge", "Devices", "SandboxStartError", "map_native_line", "INIT_SEED"]


class _Phases:
    """Wall-clock seconds spent in each phase of one judgement (reported in Verdict.phases), and the CPU seconds
    it cost, by whom (Verdict.cpu_seconds)."""

    def __init__(self):
        self._last = time.perf_counter()
        self.seconds: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.build_fallbacks: list[str] = []  # why builds left the fast path (Verdict.build_fallbacks)

    def add_cpu(self, who: str, seconds: float) -> None:
        self.cpu[who] = round(self.cpu.get(who, 0.0) + seconds, 4)

    def mark(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = round(self.seconds.get(name, 0.0) + now - self._last, 4)
        self._last = now


class _SharedExclusive:
    """Many holders share it, or one holds it alone; a waiting exclusive holder goes first. With `machine`, the
    same holds across every process on the machine that uses the device (device_lock.MachineDeviceLock)."""

    def __init__(self, machine: MachineDeviceLock | None = None):
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._waiting = 0
        self._machine = machine

    @property
    def machine(self) -> MachineDeviceLock | None:
        return self._machine

    @contextmanager
    def shared(self) -> Iterator[None]:
        with doing("waiting for the device (a timing holds it or waits for it)"), self._cond:
            self._cond.wait_for(lambda: not self._exclusive and not self._waiting)
            self._shared += 1
        try:
            if self._machine is not None:
                with doing("waiting for the device (another process times on it)"):
                    self._machine.shared_acquire()
            try:
                yield
            finally:
                if self._machine is not None:
                    self._machine.shared_release()  # before the count drops: an exclusive holder here finds
                    # this process holding nothing on the machine's lock
        finally:
            with self._cond:
                self._shared -= 1
                self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with doing("waiting for the device alone (the trials in flight on it to end)"), self._cond:
            self._waiting += 1
            self._cond.wait_for(lambda: not self._exclusive and self._shared == 0)
            self._waiting -= 1
            self._exclusive = True
        try:
            with waiting_for("the device alone (another process's trials on it to end)",
                             self._machine.exclusive() if self._machine is not None else nullcontext()):
                yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()


class Devices:
    """Where a pool's sandboxes run. Builds need no device and correctness trials of many candidates
    share a GPU; timing takes its GPU alone, waiting for the trials in flight there to finish. `machine_keys`
    (device index -> the device's key on this machine, device_lock.cuda_device_key) makes that hold for every
    process on the machine: another judge's trials and timings, and a policy's generation and training."""

    def __init__(self, indices: list[int], exclusive_timing: bool, machine_keys: dict[int, str] | None = None,
                 locks_dir: Path | None = None):
        self.indices = indices
        self._next = itertools.count()
        machine = {i: machine_lock(key, locks_dir) for i, key in (machine_keys or {}).items()}
        self._locks = {i: _SharedExclusive(machine.get(i)) for i in set(indices)} if exclusive_timing else {}

    @classmethod
    def gpus(cls, indices: list[int]) -> Devices:
        """A GPU pool's devices: timing alone on each GPU, across every process on the machine."""
        return cls(indices, exclusive_timing=True, machine_keys={i: cuda_device_key(i) for i in set(indices)})

    def assign(self) -> int:
        return self.indices[next(self._next) % len(self.indices)]

    @contextmanager
    def trials(self, index: int) -> Iterator[None]:
        with self._locks[index].shared() if index in self._locks else nullcontext():
            yield

    @contextmanager
    def timing(self, index: int) -> Iterator[None]:
        with self._locks[index].exclusive() if index in self._locks else nullcontext():
            yield

    def exclusive(self, index: int) -> bool:
        """Whether timing takes this device alone (a GPU pool); a CPU pool times beside its trials."""
        return index in self._locks

    def lock_holders(self) -> list[str]:
        """Who holds each device's machine-wide lock now (MachineDeviceLock.holders), for a heartbeat line."""
        return [f"device {i}: {who}" for i, lock in sorted(self._locks.items()) if lock.machine is not None
                for who in lock.machine.holders()]


ESTIMATE_FACTOR = 2  # a candidate's sandbox may take this many times what its problem's reference's took ...
ESTIMATE_FLOOR_MB = 3072  # ... and this much more: its own CUDA context, its build's loading, its temporaries
REFERENCE_BASE_BYTES = 1 << 30  # a reference sandbox's own: Python, torch, a CUDA context's host side
JUDGE_KEPT_SHARE = 0.5  # of the host memory the sandboxes' budget leaves: what the judge keeps in memory between
# verdicts; the other half is its own (Python, torch, messages) and the trials in flight
JUDGE_KEPT_FLOOR_MB = 256


def judge_kept_memory_mb(host_mb: int, sandbox_budget_mb: int) -> int:
    """Host memory (MB) the judge keeps problems' tensors in between verdicts (the rest goes to its disk)."""
    return max(JUDGE_KEPT_FLOOR_MB, int((host_mb - sandbox_budget_mb) * JUDGE_KEPT_SHARE))


def memory_estimate_mb(reference_peak_bytes: int, limit_mb: int) -> int:
    """The memory a judgement of a problem takes, from its reference sandbox's peak (verifier.memory_admission:
    reference): ESTIMATE_FACTOR times it plus ESTIMATE_FLOOR_MB, at most the sandbox's own limit."""
    return min(limit_mb, ESTIMATE_FACTOR * (reference_peak_bytes >> 20) + ESTIMATE_FLOOR_MB)


def _measured_bytes(problem: Problem, key: str) -> int | None:
    """The largest size its analysis recorded under `key` (`measures`, and its cuda measures); None if none."""
    found = [m[key] for m in (problem.measures, problem.measures.get("cuda"))
             if isinstance(m, dict) and isinstance(m.get(key), int) and m[key] >= 0]
    return max(found, default=None)


def measured_trial_bytes(problem: Problem) -> int:
    """A trial's inputs, outputs and weights as its analysis measured them (0 where nothing was): what orders a
    batch's judgements, smallest first (VerifierPool.verify_many)."""
    return sum(_measured_bytes(problem, key) or 0 for key in ("input_bytes", "output_bytes", "weight_bytes"))


def measured_reference_peak(problem: Problem) -> int | None:
    """What the problem's reference sandbox will take, before it has run, from the sizes its analysis measured
    (`measures`: inputs, weights, outputs; the largest of its recorded sizes): a trial's tensors on the host and
    in the file the judge reads, its weights, and the sandbox's own. None when nothing was measured."""
    if _measured_bytes(problem, "input_bytes") is None:
        return None
    size = lambda key: _measured_bytes(problem, key) or 0
    return 2 * (size("input_bytes") + size("output_bytes")) + size("weight_bytes") + REFERENCE_BASE_BYTES



GPU_PROCESS_MB = 1024  # a CUDA context with torch's allocator slack, per process: the candidate's or reference's
# sandbox and the judge's own comparisons
GPU_SIZE_FACTOR = 3  # a timed call's two alternating input sets and its outputs, the judge's comparison (of slices),
# the candidate's temporaries: 19_ReLU's eager timing held 24.6 GB for a 12.9 GB trial and asked for 6 GB more


def gpu_memory_estimate_mb(problem: Problem) -> int:
    """GPU memory (MB) one judgement of `problem` takes (verifier.gpu_memory_admission), from its measured sizes
    (a trial's inputs and outputs, its weights): two processes' contexts and GPU_SIZE_FACTOR times a trial, ~41 GB
    for a KernelBench level-1 problem at full size, 2 GB for one that was not measured (a synthesized one)."""
    inputs, outputs = (_measured_bytes(problem, "input_bytes") or 0), (_measured_bytes(problem, "output_bytes") or 0)
    weights = _measured_bytes(problem, "weight_bytes") or 0
    return 2 * GPU_PROCESS_MB + ((GPU_SIZE_FACTOR * (inputs + outputs) + weights) >> 20)


def construction_gpu_mb(problem: Problem) -> int:
    """GPU memory (MB) a candidate's first look takes (verifier.build_first): a CUDA context for it and one for
    the reference sandbox that names its init inputs, and its weights, which ModelNew moves to the device."""
    return 2 * GPU_PROCESS_MB + ((_measured_bytes(problem, "weight_bytes") or 0) >> 20)


def for_comparison(tensor: torch.Tensor, device: str) -> torch.Tensor:
    """An expected output where the judge keeps it to compare against: on the comparison device while small
    (the fastest), on the host otherwise (each comparison moves a slice at a time)."""
    return tensor.to(device) if tensor.nbytes <= EXPECTED_ON_DEVICE_BYTES else tensor


def gpu_memory_capacity_mb(free_mb: int, kept_gb: float) -> int:
    """GPU memory judgements may be promised, of `free_mb` free on the device: 90 % of it (what a policy beside
    the judge holds already is not free), less what the judge keeps there between verdicts (its references'
    expected outputs, within kept_gb), never below half of what is free."""
    return max(free_mb // 2, int(free_mb * 0.9) - int(kept_gb * 1024))


def judge_copies_mb(problem: Problem) -> int:
    """Host memory (MB) the judge itself holds for one judgement of `problem`, beside its sandboxes' share, from
    its measured sizes (0 unmeasured): a trial loaded (read back from its disk or made again) and the memory file
    of its inputs written for the candidate — the candidate's outputs come in the sandbox's own memory file,
    charged to it. MBs at small sizes, ~19 GB for a KernelBench level-1 problem at full size (6.4 GB in and out),
    where three judgements at their sandboxes' 32 GB and the judge's copies came to 173 GB on a 128 GB box."""
    inputs, outputs = (_measured_bytes(problem, "input_bytes") or 0), (_measured_bytes(problem, "output_bytes") or 0)
    return (2 * inputs + outputs) >> 20


def _cuda_arch(device_index: int) -> str:
    major, minor = torch.cuda.get_device_capability(device_index)
    return f"{major}{minor}"


@dataclass
class _Outcome:
    category: VerdictCategory
    detail: str
    compiled: bool = False
    legal: bool = True
    q: float = 0.0
    rule: str | None = None
    speedup: float | None = None
    speedup_compile: float | None = None
    compile_seconds: float = 0.0
    timing: dict[str, float] = field(default_factory=dict)
    roofline: float | None = None
    peak_memory: int | None = None


@dataclass
class _Trial:
    index: int
    seed: int
    entry: int | None  # in the reference's stash: [*inputs (host), *expected (on the judge's device)]; None: made again
    n_inputs: int
    expected_digest: str  # of the expected outputs: tells trials apart without loading them
    sample: list[torch.Tensor] | None = None  # entry None: evenly spread values of each expected output (host)


@dataclass
class _Reference:
    init_inputs: list[Any]
    trials: list[_Trial]
    stash: TensorStash  # one entry per trial, in memory while small, on the judge's disk otherwise
    device: str  # where expected outputs are compared
    seconds: float = 0.0  # the slowest reference trial after the first (the first where it is the only one) by
    # the judge's clock (inputs, forward, outputs): the first pays a cold start (its CUDA context, lazy module loads)
    forward_seconds: float | None = None  # the slowest forward alone (same trials), by the reference sandbox's clock
    sets: TensorStash | None = None  # the timed calls' inputs (entry i: timed call i's), each a file of the judge's
    input_bytes: int = 0  # of one call (the largest trial's)
    output_bytes: int = 0
    remake: Callable[[_Trial], list[Any]] | None = None  # a trial not kept: [*inputs, *expected], made again
    cold_start_seconds: float = 0.0  # how much longer the first trial took than `seconds`: a candidate's first
    # trial gets it once on top of its limit (it starts as cold), never multiplied by the hang factors
    output_scales: list[float | None] | None = None  # per output, the largest reassociation scale of the trials
    # (None where any trial had none): what widens the comparison for honest reductions (compare_outputs)
    cost_seconds: dict[str, float] = field(default_factory=dict)  # where the check's time went, per phase

    @property
    def nbytes(self) -> int:
        return self.stash.nbytes + (self.sets.nbytes if self.sets is not None else 0)

    @property
    def most_runs(self) -> int:
        """No set serves two timed calls (a result remembered by its inputs' values would be right, and free,
        the second time), and a sandbox keeps every timed call's outputs until the judge names those it
        checks: both bound the number of timed calls."""
        return max(2, min(MAX_TIMING_RUNS, TIMING_SET_BYTES // max(1, self.input_bytes),
                          TIMING_OUTPUT_BYTES // max(1, self.output_bytes)))

    def _values(self, trial: _Trial) -> list[Any]:
        return self.stash.get(trial.entry) if trial.entry is not None else self.remake(trial)

    def load(self, trial: _Trial) -> tuple[list[Any], list[torch.Tensor]]:
        """One trial's inputs (host) and expected outputs (on the comparison device)."""
        values = self._values(trial)
        return values[:trial.n_inputs], [for_comparison(t, self.device) for t in values[trial.n_inputs:]]

    def inputs(self, trial: _Trial) -> list[Any]:
        return self._values(trial)[:trial.n_inputs]

    def close(self) -> None:
        self.stash.close()
        if self.sets is not None:
            self.sets.close()


@dataclass
class _Baseline:
    seconds: float  # median per call
    overhead: float  # the timing harness's own cost per call (judge's clock minus the reported total)
    window: float  # the judge's clock around all timed calls
    runs: int  # timed calls (candidates get as many), at most one per input set: no set is seen twice
    sets: TensorStash  # the reference's timing sets (it owns them): timed call i gets entry i
    expected: TensorStash  # the checked calls' expected outputs
    checked: dict[int, int] = field(default_factory=dict)  # timed call -> `expected` entry
    input_bytes: int = 0  # of one call
    output_bytes: int = 0
    prepared: float = float("nan")  # per call, by the sandbox's own clock (diagnosis only: never believed)
    kept: float = float("nan")
    compile_seconds: float = 0.0  # under torch.compile: inductor's compile, off the device (the sandbox's clock)

    @property
    def nbytes(self) -> int:  # its sets belong to the reference (counted there)
        return self.expected.nbytes

    def close(self) -> None:
        self.expected.close()


@dataclass
class _Window:
    claimed: float  # the sandbox's median per call
    total: float  # the sandbox's sum over the timed calls
    window: float  # the judge's clock from `go` to `done`
    path: Path | None = None  # where the sandbox wrote the checked timed calls' outputs
    metas: list[list[Any]] = field(default_factory=list)  # per checked call
    output_bytes: int = 0
    prepared: float = float("nan")  # the sandbox's own clock (diagnosis only): putting inputs in place, all calls
    kept: float = float("nan")  # and keeping their outputs
    ops: dict[str, int] = field(default_factory=dict)  # what the dispatcher ran in the warm-up and timed calls

    def output(self, k: int) -> list[torch.Tensor]:
        """The k-th checked call's outputs, read only now (one call's at a time)."""
        return read_tensors(self.path, self.metas[k], self.output_bytes + 4096)


@dataclass
class _Loading:
    """What the judge saw while a candidate's module loaded: its builds and their failures."""

    build_seconds: float = 0.0
    build_log: str | None = None  # the last failed build's compiler output (the judge's own record)
    runner: Any = None
    fallbacks: list[str] = field(default_factory=list)


class Judge:
    """Verifies candidates one at a time; thread-safe, so a pool can share one."""

    def __init__(self, config: VerifierConfig, cache_dir: str | Path, base_seed: int = 0):
        self.config = config
        self.cache_dir = Path(cache_dir)
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self.base_seed = base_seed
        # trial and timing inputs' seeds are keyed by the home's secret: no candidate draws them ahead (trial_seed)
        self.seed_key = hmac.new(home_secret(self.cache_dir), b"kerneldojo input seeds", hashlib.sha256).digest()
        self.device = config.backend
        if self.device == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("verifier.backend is cuda but no CUDA device is visible; use backend: cpu")
        self.sandboxes = SandboxFactory(config, self.cache_dir, self.device)
        self._builders: dict[str | None, FastInlineBuilder] = {}
        self._references: dict[tuple[str, int], _Reference] = {}
        self._problem_init_inputs: dict[str, list[Any]] = {}  # a first look's (verifier.build_first)
        self._ran: set[str] = set()  # problems whose reference ran here at least once (kept or dropped since)
        # problem -> the memory (MB) a judgement of it takes (verifier.memory_admission: reference), from what its
        # reference's sandbox used; and how many candidates outgrew it (judged again with their whole limit)
        self._estimates: dict[str, int] = {}
        self.estimates_outgrown = 0
        # seconds per phase summed over every reference this judge ran (checks, and runs again after eviction)
        self._reference_cost: Counter = Counter()
        self._baselines: dict[tuple[str, int, bool], _Baseline | None] = {}
        self._bandwidth: dict[int, tuple[float, int]] = {}
        self._in_use: OrderedDict[str, int] = OrderedDict()  # problem id -> verdicts that need it, least recent first
        self._locks: dict[tuple, threading.Lock] = {}
        self._lock = threading.Lock()
        # large references' trials and timing inputs, on this judge's disk (no sandbox sees the cache directory)
        self._stash_root = private_directory(self.cache_dir / "stash", self.sandboxes.isolation.tag)
        remove_dead_judges_directories(self.cache_dir / "stash")
        self._stash_ids = itertools.count()
        # what every problem's stash keeps in memory together (each also within its own STASH_MEMORY_BYTES)
        self.kept_memory = MemoryAllowance(judge_kept_memory_mb(
            host_memory_mb(), self.sandboxes.memory_budget.capacity_mb) << 20)

    def _stash(self, memory_bytes: int = STASH_MEMORY_BYTES) -> TensorStash:
        return TensorStash(self._stash_root / str(next(self._stash_ids)), memory_bytes, self.kept_memory)

    @property
    def isolation(self) -> str:
        return self.sandboxes.isolation.describe()

    def spare_pids(self, device_index: int = 0) -> list[int]:
        """Process ids of the live sandboxes waiting for a candidate on this device."""
        return self.sandboxes.spare_pids(device_index)

    def __enter__(self) -> Judge:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def abort(self) -> None:
        """Kill every sandbox of this judge now: the judgements in flight end at once (with verdicts nobody
        should keep). For a caller that is giving up — an interrupted stage — before close()."""
        self.sandboxes.abort()

    def close(self) -> None:
        """Stop the spare sandboxes (each judgement's own sandboxes are always stopped when it ends) and drop
        what the judge kept of its problems."""
        self.sandboxes.close()
        for reference in self._references.values():
            reference.close()
        for baseline in self._baselines.values():
            if baseline is not None:
                baseline.close()
        self._references.clear()
        self._problem_init_inputs.clear()
        self._baselines.clear()
        shutil.rmtree(self._stash_root, ignore_errors=True)

    def device_name(self, device_index: int) -> str:
        return torch.cuda.get_device_name(device_index) if self.device == "cuda" else "cpu"

    @contextmanager
    def _keeping(self, problem_id: str) -> Iterator[None]:
        """While a verdict needs a problem, it is kept; once none does, the least recently judged problems
        beyond verifier.kept_problems are dropped (their trials, timing sets and baselines, on every device)."""
        with self._lock:
            self._in_use[problem_id] = self._in_use.get(problem_id, 0) + 1
            self._in_use.move_to_end(problem_id)
        try:
            yield
        finally:
            with self._lock:
                self._in_use[problem_id] -= 1
                idle = [pid for pid, users in self._in_use.items() if users == 0]  # oldest first
                dropped = idle[:max(0, len(self._in_use) - self.config.kept_problems)]
                dropped += self._beyond_kept_bytes(idle[len(dropped):-1])  # the latest is kept, however large
                kept = self._forget(dropped)
            for entry in kept:  # outside the lock: removing files takes time
                entry.close()

    def _forget(self, problem_ids: list[str]) -> list[Any]:
        """Take what the judge keeps of these problems out of its books (under _lock): their entries, to close."""
        kept = []
        for pid in problem_ids:
            del self._in_use[pid]
            kept += [self._references.pop(k) for k in list(self._references) if k[0] == pid]
            kept += [self._baselines.pop(k) for k in list(self._baselines) if k[0] == pid]
        return [entry for entry in kept if entry is not None]

    def _on_judges_disk(self, write: Callable[[], Any]) -> Any:
        """`write()`: a write to the judge's own disk that the judgement cannot do without. A full disk first gives
        up what the problems not being judged keep there (their trials, timing sets and baselines: made again if
        wanted), then writes once more; still full, it is the machine's limit (JudgeDiskFull)."""
        try:
            return write()
        except OSError as exc:
            if not self._drop_idle_problems():
                raise _disk_full(exc) from exc
            log.warning("the judge's disk is full (%s): what idle problems kept there was dropped, writing again", exc)
        try:
            return write()
        except OSError as exc:
            raise _disk_full(exc) from exc

    def _drop_idle_problems(self) -> bool:
        """Drop what every problem not being judged now keeps; whether there was any."""
        with self._lock:
            kept = self._forget([pid for pid, users in self._in_use.items() if users == 0])
        for entry in kept:
            entry.close()
        return bool(kept)

    def _beyond_kept_bytes(self, idle: list[str]) -> list[str]:
        """The oldest of `idle` whose dropping brings what the judge keeps within verifier.kept_gb (under _lock)."""
        sizes: dict[str, int] = {}
        for key, entry in [*self._references.items(), *self._baselines.items()]:
            if entry is not None:
                sizes[key[0]] = sizes.get(key[0], 0) + entry.nbytes
        excess = sum(sizes.values()) - int(self.config.kept_gb * 1e9)
        dropped = []
        for pid in idle:
            if excess <= 0:
                break
            dropped.append(pid)
            excess -= sizes.get(pid, 0)
        return dropped

    def reference_cost(self) -> dict[str, float]:
        """Seconds per phase summed over every reference this judge ran ("references": how many, "total": their
        seconds; "remade trials" and "remade seconds": trials too large to keep, made again for a candidate;
        "estimates outgrown": candidates judged again with their whole memory limit, verifier.memory_admission)."""
        with self._lock:
            outgrown = {"estimates outgrown": self.estimates_outgrown} if self.estimates_outgrown else {}
            return {**self._reference_cost, **outgrown}

    def check_reference(self, problem: Problem, device_index: int = 0, devices: Devices | None = None,
                        keep: bool = True) -> None:
        """Run the problem's reference (raises ReferenceError if it cannot run here); its trials are then kept
        like a verdict's, within verifier.kept_problems and kept_gb, for the verdicts that follow. With
        `devices`, its trials use the device as a verdict's reference's do (never beside a timing there).
        `keep=False` (no verdict follows: an evaluation checks after judging) keeps nothing: the trials run on
        the judge's seeds and describe their outputs, whose bytes never leave the sandbox."""
        with doing(f"{problem.name or problem.id} (its reference's check)"):
            if keep:
                self._starved_retried(lambda: self.reference(problem, device_index, devices), problem,
                                      device_index=device_index)
                return
            with _reference_replies(problem), doing("running the reference's trials (kept nowhere)"):
                # the judge holds no copy of these trials: its admission promises the sandbox's share alone
                self._starved_retried(lambda: self._run_reference_unkept(problem, device_index, devices), problem,
                                      judge_mb=0, device_index=device_index)
            with self._lock:
                self._ran.add(problem.id)

    def judgement_memory_mb(self, problem: Problem) -> int | None:
        """The share of sandbox memory a judgement of `problem` takes (verifier.memory_admission: reference): from
        what its reference's sandbox took here, else from its measured sizes; None: memory_limit_mb."""
        if self.config.memory_admission != "reference" or not self.sandboxes.isolation.cgroups:
            return None
        with self._lock:
            if problem.id in self._estimates:
                return self._estimates[problem.id]
        guess = measured_reference_peak(problem)
        return None if guess is None else memory_estimate_mb(guess, self.config.memory_limit_mb)

    def judgement_gpu_mb(self, problem: Problem, device_index: int = 0) -> int:
        """The share of device `device_index`'s memory a judgement of `problem` takes (gpu_memory_estimate_mb), on
        cuda with verifier.gpu_memory_admission; 0 elsewhere. The device's capacity is taken the first time
        (gpu_memory_capacity_mb), or gpu_memory_mb."""
        if self.device != "cuda" or not self.config.gpu_memory_admission:
            return 0
        budget = self.sandboxes.memory_budget
        if device_index not in budget.gpu_capacity_mb:
            free_mb = torch.cuda.mem_get_info(device_index)[0] >> 20
            budget.track_gpu(device_index, self.config.gpu_memory_mb or
                             gpu_memory_capacity_mb(free_mb, self.config.kept_gb))
        return gpu_memory_estimate_mb(problem)

    def _starved_retried(self, judge: Callable[[], Any], problem: Problem, judge_mb: int | None = None,
                         device_index: int = 0) -> tuple[Any, bool]:
        """`judge()` within this thread's memory share, and whether another judgement ran beside it; made again,
        alone on the machine's sandbox memory, when the machine's memory killed one of its sandboxes
        (SandboxStarved: nothing to charge the code with). Alone, no neighbour can starve it: only its own
        sandboxes (its process, its build, at most its reference again) share the budget, which holds three
        limits by default on a GPU box (3.4 x 32 GB on the H200), so a candidate cannot starve itself to fail the
        stage there; starved even then, something beside the sandboxes took the memory promised to them: raised,
        an infrastructure error. `judge_mb`: the judge's own copies beside the sandboxes' (judge_copies_mb)."""
        share = self.judgement_memory_mb(problem)  # None: memory_limit_mb
        judge_mb = judge_copies_mb(problem) if judge_mb is None else judge_mb
        gpu_mb = self.judgement_gpu_mb(problem, device_index)
        alone = False
        while True:
            try:
                # kept outside the share: dropping what the judge kept (GBs of files) needs no sandbox memory
                with self._keeping(problem.id), self.sandboxes.reserve(
                        alone=alone, memory_mb=share, judge_mb=judge_mb, gpu_mb=gpu_mb,
                        device_index=device_index) as reservation:
                    result = judge()
                    return result, reservation.accompanied
            except SandboxOverEstimate:  # the estimate was too small for this candidate: its whole limit now
                with self._lock:
                    self.estimates_outgrown += 1
                share = None
            except SandboxStarved as exc:
                if alone:
                    raise SandboxStarved(
                        f"problem {problem.name or problem.id}: {exc}, even judged alone; this machine lacks the "
                        "memory its sandboxes were promised (something beside them took it): lower "
                        "verifier.memory_limit_mb or verifier.sandbox_memory_mb") from None
                alone, share = True, None

    def _judged_alone(self, problem: Problem, candidate: Candidate, devices: Devices, device_index: int,
                      phases: _Phases, beside: ReferenceError) -> _Outcome:
        """The reference failed while this candidate was judged (`beside`): a trial made again that differs, a
        reference run or its timing that failed. The candidate may have caused it (GPU memory held, the device
        disturbed), or a neighbour, or the reference is broken; only the last is the problem's fault, and a
        candidate must not be able to make its problem vanish from a stage (no verdict: no penalty, a smaller
        denominator). So, alone on the machine's sandbox memory: the reference runs afresh, every trial it does
        not keep made once more and compared, its baselines timed — any of them failing, the reference is broken
        (ReferenceError, raised). Then the candidate is judged again, alone: the reference failing again beside it
        is the candidate's doing, a runtime error of its own."""
        with self._keeping(problem.id), self.sandboxes.reserve(alone=True), \
                doing("judged again alone: the reference failed beside it"):
            fresh = self._run_reference(problem, device_index, devices)  # not kept: candidates' stays as it is
            try:
                for trial in fresh.trials:
                    if trial.entry is None:
                        fresh.remake(trial)
            finally:
                fresh.close()
            if self.config.timed:
                self.baseline(problem, device_index, devices=devices)
                if self.device == "cuda" and self.config.compare_torch_compile:
                    self.baseline(problem, device_index, compiled=True, devices=devices)
            try:
                return self._dynamic_alone(problem, candidate, devices, device_index, phases)
            except ReferenceError as again:
                return _Outcome(VerdictCategory.runtime_error,
                                f"the reference failed beside this candidate and runs alone: {again}")

    def _dynamic_alone(self, problem: Problem, candidate: Candidate, devices: Devices, device_index: int,
                       phases: _Phases) -> _Outcome:
        """`_dynamic` for a candidate alone on the machine (the caller holds the whole budget): the judge's own
        GPU memory running out now is the candidate's doing — its process holds what the judge needs to compare
        its outputs."""
        try:
            return self._dynamic(problem, candidate, devices, device_index, phases)
        except torch.OutOfMemoryError as exc:
            return _Outcome(VerdictCategory.runtime_error, "the judge ran out of GPU memory comparing this "
                            f"candidate's outputs, the candidate alone on the GPU (it holds the memory): {exc}"[:400])

    def _again_alone(self, problem: Problem, candidate: Candidate, devices: Devices, device_index: int,
                     phases: _Phases, beside: _Outcome) -> _Outcome:
        """The candidate failed as a neighbour can make a candidate fail (`beside`: a runtime error — its GPU
        memory taken by another sandbox, whose cudaMalloc nothing limits; a timeout — its GPU or CPU time shared)
        while other judgements ran, or the judge's own GPU memory ran out while judging it (a neighbour, or this
        candidate, holds it). A candidate must not be able to fail its neighbours (in an RL group, each sibling
        it fails raises its own advantage) nor the judge (an exception would end the stage). So it is judged
        again alone on the machine, and what it gets then is its own."""
        # what it failed with beside the others is not kept in its verdict: the log says it, the detail's end (a
        # traceback's error) — sessions 21-22: the template's full-size reductions failed this way on every box,
        # their first failure never read
        log.info("problem %s: candidate %s failed beside other judgements (%s: ...%s), judged again alone",
                 problem.name or problem.id, candidate.id, beside.category.value,
                 " ".join((beside.detail or "").split())[-300:])
        try:
            with self._keeping(problem.id), self.sandboxes.reserve(alone=True):
                phases.mark("wait_alone")  # the verdict's phases say it was judged again, and what that waited
                return self._dynamic_alone(problem, candidate, devices, device_index, phases)
        except ReferenceError as again:
            return self._judged_alone(problem, candidate, devices, device_index, phases, again)

    def _once(self, key: tuple) -> threading.Lock:
        with self._lock:
            return self._locks.setdefault(key, threading.Lock())

    def builder(self, device_index: int = 0) -> FastInlineBuilder:
        arch = _cuda_arch(device_index) if self.device == "cuda" else None
        with self._lock:
            if arch not in self._builders:
                self._builders[arch] = FastInlineBuilder(self.cache_dir, timeout_s=self.config.compile_timeout_s,
                                                         cuda_arch=arch, fast=self.config.fast_build)
            return self._builders[arch]

    # -- public ---------------------------------------------------------------------------
    def verify(self, problem: Problem, candidate: Candidate, devices: Devices | None = None, *,
               static_rules: bool = True) -> Verdict:
        """Judge one candidate on a device `devices` assigns (GPU 0 / the CPU when None).
        `static_rules=False` leaves the static rules out, so red-team tests reach the OS walls and run-time
        checks alone."""
        start = time.perf_counter()
        devices = devices or Devices([0], exclusive_timing=False)
        device_index = devices.assign()
        phases = _Phases()
        judge_cpu = time.thread_time()
        outcome = self._static(candidate.source) if static_rules else None
        if outcome is None:
            with cpu_accounting(phases.add_cpu), doing(f"{problem.name or problem.id} ({candidate.id})"):
                outcome = self._failed_to_load(problem, candidate, devices, device_index, phases) \
                    or self._judged_in_full(problem, candidate, devices, device_index, phases)
        phases.add_cpu("judge", time.thread_time() - judge_cpu)
        return Verdict(
            candidate_id=candidate.id,
            problem_id=problem.id,
            compiled=outcome.compiled,
            correct=outcome.category == VerdictCategory.passed,
            legal=outcome.legal,
            pass_fraction=outcome.q,
            category=outcome.category,
            detail=_bound(outcome.detail, self.config.max_detail_chars),
            speedup_vs_eager=outcome.speedup,
            speedup_vs_compile=outcome.speedup_compile,
            compile_seconds=outcome.compile_seconds,
            run_seconds=max(0.0, time.perf_counter() - start - outcome.compile_seconds),
            device=self.device_name(device_index),
            rule=outcome.rule,
            phases=phases.seconds,
            cpu_seconds=phases.cpu,
            build_fallbacks=phases.build_fallbacks,
            timing=outcome.timing,
            roofline_fraction=outcome.roofline,
            peak_memory_bytes=outcome.peak_memory,
        )

    def _judged_in_full(self, problem: Problem, candidate: Candidate, devices: Devices, device_index: int,
                        phases: _Phases) -> _Outcome:
        try:
            outcome, accompanied = self._starved_retried(
                lambda: self._dynamic(problem, candidate, devices, device_index, phases), problem,
                device_index=device_index)
            if accompanied and _a_neighbour_can_cause(outcome):
                outcome = self._again_alone(problem, candidate, devices, device_index, phases, outcome)
        except ReferenceError as beside:
            outcome = self._judged_alone(problem, candidate, devices, device_index, phases, beside)
        except torch.OutOfMemoryError as exc:  # the judge's comparison: its GPU memory taken by a sandbox
            outcome = self._again_alone(problem, candidate, devices, device_index, phases, _Outcome(
                VerdictCategory.runtime_error, f"the judge ran out of GPU memory: {exc}"))
        return outcome

    # -- a first look at the candidate alone: does it even load? ---------------------------
    def _reference_at_hand(self, problem_id: str, device_index: int) -> bool:
        """Whether the problem's reference is kept whole on this device: judging a candidate then runs nothing
        of the reference again, and a first look at the candidate alone would only cost its sandbox."""
        reference = self._references.get((problem_id, device_index))
        return reference is not None and all(trial.entry is not None for trial in reference.trials)

    def _failed_to_load(self, problem: Problem, candidate: Candidate, devices: Devices, device_index: int,
                        phases: _Phases) -> _Outcome | None:
        """verifier.build_first: the candidate built, its module run and its ModelNew constructed (from its
        problem's init inputs) in a small sandbox of its own, before its problem's reference runs a trial (at
        full size a reference's trials take 10-60 s and tens of GB, and a judgement waits for memory admitting
        them; a weak policy's candidates mostly fail before their first trial). Its outcome when it failed there
        in a way that is its code's alone — a compile error, an illegal build, its own error while loading or
        constructing — the same verdict the whole judgement would give, which does the same before any trial;
        None otherwise: it is ready (judged in full next, its builds cached), or it failed as a neighbour or the
        small sandbox could make it fail (a timeout, out of memory, killed at the sandbox's cap), or its
        reference would not even load: the whole judgement decides, with its own remedies. A failure a neighbour
        could cause (a load that hangs past its limit, a neighbour-like runtime error) is its own where no other
        judgement ran beside the look, as in the whole judgement: a module that hangs at load paid its limit
        twice, the second time after its reference's trials (10-60 s at full size)."""
        if not self.config.build_first or self._reference_at_hand(problem.id, device_index):
            return None
        gpu_mb = min(self.judgement_gpu_mb(problem, device_index), construction_gpu_mb(problem))
        outcome = None
        with self.sandboxes.reserve(memory_mb=min(LOAD_FIRST_MEMORY_MB, self.config.memory_limit_mb),
                                    gpu_mb=gpu_mb, device_index=device_index) as reservation, \
                doing("loading the candidate first"):
            init_inputs = self._init_inputs(problem, devices, device_index)
            if init_inputs is not None:
                box = self.sandboxes.take_run_sandbox(device_index)
                loading = _Loading()  # its fallbacks join the verdict's only if this look is the verdict
                try:
                    box.start(self._run_job(candidate, device_index, init_inputs, load_only=True))
                    try:
                        outcome = self._load(box, candidate.source, device_index, loading)
                    except (SandboxStarved, *SANDBOX_READ_ERRORS):  # the whole judgement decides, with its remedies
                        outcome = None
                    if isinstance(outcome, _Outcome) and box.capped_mb is not None \
                            and Cgroups.reached_limit(box.home.cgroups):
                        outcome = None  # the small sandbox's doing, perhaps
                finally:
                    box.close()
                    if loading.runner is not None:
                        loading.runner.close()
        if isinstance(outcome, _Outcome) and outcome.category in (
                VerdictCategory.compile_error, VerdictCategory.illegal, VerdictCategory.runtime_error,
                VerdictCategory.timeout) and not (reservation.accompanied and _a_neighbour_can_cause(outcome)):
            phases.mark("build")
            phases.build_fallbacks.extend(loading.fallbacks)
            return outcome
        phases.mark("load_first")  # what the first look cost the candidate that loaded
        return None

    def _init_inputs(self, problem: Problem, devices: Devices, device_index: int) -> list[Any] | None:
        """The arguments ModelNew is constructed with: those of the reference this judge ran, else its problem's
        `get_init_inputs()` from a reference sandbox that loads the reference and runs nothing else (remembered
        per problem: small; its start holds the device as a reference's does, never beside a timing there);
        None when the reference does not load."""
        reference = self._references.get((problem.id, device_index))
        if reference is not None:
            return reference.init_inputs
        # a group's candidates arrive together: one asks, the others wait for its answer
        with waiting_for("its problem's init inputs (another judgement asks for them)",
                         self._once(("init_inputs", problem.id))):
            with self._lock:
                if problem.id in self._problem_init_inputs:
                    return self._problem_init_inputs[problem.id]
            try:
                with _reference_replies(problem), doing("the reference's init inputs"), \
                        _device_trials(devices, device_index)():
                    box, init_inputs = self._reference_box(problem, device_index)
                    box.close()
            except (ReferenceError, SandboxStarved):
                return None
            with self._lock:
                self._problem_init_inputs[problem.id] = init_inputs
            return init_inputs

    # -- static checks: milliseconds, no process --------------------------------------------
    def _static(self, source: str) -> _Outcome | None:
        try:
            with warnings.catch_warnings():  # a model's junk should not spam the log
                warnings.simplefilter("ignore", SyntaxWarning)
                tree = ast.parse(source)
        except SyntaxError as exc:
            return _Outcome(VerdictCategory.compile_error,
                            f"Python SyntaxError at line {exc.lineno}: {exc.msg}\n{(exc.text or '').rstrip()}")
        violations = check_source(tree)
        if violations:
            v = violations[0]
            return _Outcome(VerdictCategory.illegal, f"illegal ({v.rule}): {v.message}", compiled=False,
                            legal=False, rule=v.rule)
        if not any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body):
            return _Outcome(VerdictCategory.compile_error, "the candidate defines no top-level class ModelNew")
        return None

    # -- the reference: run once per problem and device, in its own sandbox ------------------
    def reference(self, problem: Problem, device_index: int = 0, devices: Devices | None = None) -> _Reference:
        """The problem's reference on this device: run once (`_run_reference`), then kept for the verdicts that
        follow while it fits (verifier.kept_problems, kept_gb). The caller must not hold the device's trials."""
        key = (problem.id, device_index)
        with waiting_for("this problem's reference (another judgement runs it)", self._once(("reference", *key))):
            if key not in self._references:
                with _reference_replies(problem), doing("running the reference's trials"):
                    self._references[key] = self._run_reference(problem, device_index, devices)
                with self._lock:
                    self._ran.add(problem.id)
            return self._references[key]

    def reference_ran(self, problem_id: str) -> bool:
        """Whether this problem's reference ran here (for a check or a verdict), its trials kept or dropped since."""
        with self._lock:
            return problem_id in self._ran

    def _reference_box(self, problem: Problem, device_index: int, processes: bool = False) -> tuple[Sandbox, list]:
        box = self.sandboxes.start("reference", device_index, processes=processes)
        try:
            box.start({"source": problem.reference, "device": self._device_str(device_index), "init_seed": INIT_SEED,
                       "num_threads": 1})
            msg = box.receive(self.config.run_timeout_s)
            if msg is None or msg[0] != "init_inputs" or len(msg) != 2 or not isinstance(msg[1], list):
                raise ReferenceError(f"problem {problem.name or problem.id}: the reference failed to load: "
                                     f"{_reference_failure(msg, box)}")
            return box, msg[1]
        except BaseException:
            box.close()
            raise

    def _device_str(self, device_index: int) -> str:
        return "cuda" if self.device == "cuda" else "cpu"  # a cuda sandbox sees only its own GPU

    def _reference_trial(self, box: Sandbox, problem: Problem, index: int, cost: Counter | None = None,
                         on_device: Callable[[], AbstractContextManager] = nullcontext, layout_only: bool = False) \
            -> tuple[list[Any], list[torch.Tensor], float | None, list[float | None]]:
        """One reference trial: its inputs, its expected outputs, its forward's seconds by the sandbox's clock
        (None when the sandbox sent no believable number) and its outputs' reassociation scales (None each where
        the sandbox sent none believable). `cost`: seconds added per phase, the sandbox's by its own clock (a
        diagnosis of a slow reference, never believed for a limit), and the judge's read of the trial's file.
        `on_device()` is held while the sandbox works (inputs drawn, the forward, outputs written), not while
        the judge reads and keeps what it wrote. `layout_only`: the sandbox writes nothing and the judge checks
        the trial's descriptions alone (inputs and outputs come back empty)."""
        seed = trial_seed(problem.id, index, self.base_seed, self.seed_key)
        with on_device():
            box.send(("trial", index, seed, "layout") if layout_only else ("trial", index, seed))
            msg = box.receive(self.config.run_timeout_s)
        read_from = time.perf_counter()
        if msg is None or msg[0] != "trial_out" or len(msg) != 3 or type(msg[1]) is not int or msg[1] != index \
                or not isinstance(msg[2], dict):
            raise ReferenceError(f"problem {problem.name or problem.id}: the reference failed in trial {index}: "
                                 f"{_reference_failure(msg, box)}")
        metas = msg[2]
        try:
            if layout_only:
                values = []
                check_descriptions([*metas["inputs"], *metas["expected"]], self.config.memory_limit_mb << 20)
            else:  # views of the sealed memory file the sandbox hands over after its report: no copy
                values = _handed_over(box, [*metas["inputs"], *metas["expected"]], self.config.memory_limit_mb << 20)
        except (TamperedData, KeyError, TypeError, OSError) as exc:
            raise ReferenceError(f"problem {problem.name or problem.id}: unreadable reference output ({exc})") from exc
        n = len(metas["inputs"]) if values else 0
        seconds = metas.get("forward_seconds")
        believable = isinstance(seconds, float) and math.isfinite(seconds) and seconds >= 0
        if cost is not None:
            cost["judge read"] += time.perf_counter() - read_from
            phases = metas.get("phases")
            told = {**(phases if isinstance(phases, dict) else {}), "forward": seconds if believable else None}
            for phase in ("model", "inputs", "forward", "scales", "write"):
                value = told.get(phase)
                if type(value) is float and math.isfinite(value) and 0 <= value < 1e6:
                    cost[f"sandbox {phase}"] += value
        scales = metas.get("scales")
        if not (isinstance(scales, list) and len(scales) == len(values) - n
                and all(x is None or (type(x) is float and math.isfinite(x) and x >= 0) for x in scales)):
            scales = [None] * (len(values) - n)
        return values[:n], values[n:], seconds if believable else None, scales

    def _run_reference(self, problem: Problem, device_index: int, devices: Devices | None = None) -> _Reference:
        """The reference's trials, one at a time: each trial's tensors go to the stash (kept in memory while
        small, on disk otherwise) before the next is made. With `devices`, its sandbox's start and each of its
        trials hold the device as a candidate's trials do (never beside a timing there) — each on its own: a
        full-size reference's minutes are mostly the judge reading and keeping what a trial wrote, and a timing
        that waited for the whole reference held back every trial on the device behind it."""
        device = f"cuda:{device_index}" if self.device == "cuda" else "cpu"
        on_device = _device_trials(devices, device_index)
        started = time.perf_counter()
        with on_device():
            box, init_inputs = self._reference_box(problem, device_index)
        cost = Counter({"start": time.perf_counter() - started})
        elapsed: list[float] = []
        forwards: list[float | None] = []
        stash = self._stash()
        stored_bytes = int(self.config.stored_trials_gb * 1e9)
        input_bytes = output_bytes = 0
        try:
            trials = []
            for index in range(self.config.trials):
                start = time.perf_counter()
                inputs, expected, forward, trial_scales = self._reference_trial(box, problem, index, cost, on_device)
                forwards.append(forward)
                scales = trial_scales if index == 0 else [
                    None if a is None or b is None else max(a, b) for a, b in zip(scales, trial_scales)]
                elapsed.append(time.perf_counter() - start)
                trial_input_bytes = max(1, nbytes_of([x for x in inputs if isinstance(x, torch.Tensor)]))
                trial_output_bytes = nbytes_of(expected)
                input_bytes, output_bytes = max(input_bytes, trial_input_bytes), max(output_bytes, trial_output_bytes)
                kept_from = time.perf_counter()
                expected_digest = digest(expected)
                entry, sample = None, None  # beyond stored_trials_gb: made again when needed, checked by a sample
                if stash.nbytes + trial_input_bytes + trial_output_bytes <= stored_bytes:
                    try:
                        # views of the sandbox's memory file: copied where kept in memory (stash.append)
                        entry = stash.append([*inputs, *(for_comparison(t, device) for t in expected)], owned=False,
                                             min_free_bytes=int(self.config.min_free_disk_gb * 1e9))
                    except OSError as exc:  # the judge's disk is (nearly) full: the machine's limit, not the problem's
                        log.warning("problem %s: trial %d not kept, made again for each candidate (%s)",
                                    problem.name or problem.id, index, exc)
                if entry is None:
                    sample = [_spread_sample(t) for t in expected]
                seed = trial_seed(problem.id, index, self.base_seed, self.seed_key)
                trials.append(_Trial(index, seed, entry, len(inputs),
                                     expected_digest, sample))
                del inputs, expected
                cost["judge keep"] += time.perf_counter() - kept_from
            # a candidate's limits scale with the warm trials (the first's start-up is not computation: 50x a
            # contended CUDA context gave a 1 ms problem 20 s to hang in); the first's excess is a cold start's
            warm, warm_forwards = (elapsed[1:], forwards[1:]) if len(elapsed) > 1 else (elapsed, forwards)
            slowest = max(warm)
            forward = None if None in warm_forwards else max(warm_forwards)
            # the timing sets: made by the eager baseline, as many as it times, each a file that sandboxes read
            reference = _Reference(init_inputs, trials, stash, device, slowest, forward, self._stash(memory_bytes=0),
                                   input_bytes, output_bytes,
                                   remake=lambda trial: self._remade_trial(problem, device_index, trial, devices),
                                   cold_start_seconds=max(0.0, elapsed[0] - slowest), output_scales=scales)
        except BaseException:
            stash.close()
            raise
        finally:
            # what the reference's sandbox took (its cgroup's count: nothing the sandbox says), for the estimate
            peak = box.peak_memory_bytes() if self.config.memory_admission == "reference" and box.home.cgroups \
                else None
            box.close()
        if peak is not None:  # measured beats the guess from sizes; the largest of its runs here
            with self._lock:
                self._estimates[problem.id] = max(self._estimates.get(problem.id, 0),
                                                  memory_estimate_mb(peak, self.config.memory_limit_mb))
        reference.cost_seconds = self._counted_reference_cost(
            problem, cost, started, f"{len(trials)} trials of {(input_bytes + output_bytes) / 1e9:.2f} GB")
        return reference

    def _run_reference_unkept(self, problem: Problem, device_index: int, devices: Devices | None = None) -> None:
        """The reference's trials where nothing is kept (`check_reference(keep=False)`): each runs on the judge's
        seeds, as a verdict's would, and describes its inputs and outputs, which the judge checks; no byte is
        written or read. At full size that is most of a reference's minutes (a 13 GB level-1 reference on the
        H200: 94 s, of which 60 s were its trials' bytes written, read and kept). Its memory is not an estimate
        for later judgements (no trial files in its sandbox)."""
        on_device = _device_trials(devices, device_index)
        started = time.perf_counter()
        with on_device():
            box, _ = self._reference_box(problem, device_index)
        cost = Counter({"start": time.perf_counter() - started})
        try:
            for index in range(self.config.trials):
                self._reference_trial(box, problem, index, cost, on_device, layout_only=True)
        finally:
            box.close()
        self._counted_reference_cost(problem, cost, started, f"{self.config.trials} trials (kept nowhere)")

    def _counted_reference_cost(self, problem: Problem, cost: Counter, started: float, what: str) \
            -> dict[str, float]:
        """A reference run's seconds per phase and in all, added to the judge's account (reference_cost) and
        logged at INFO when the run was slow."""
        total = time.perf_counter() - started
        with self._lock:
            self._reference_cost.update({**cost, "total": total, "references": 1})
        log.log(logging.INFO if total >= SLOW_REFERENCE_S else logging.DEBUG, "reference %s: %s in %.1f s (%s)",
                problem.name or problem.id, what, total,
                ", ".join(f"{phase} {seconds:.1f}" for phase, seconds in cost.most_common()))
        return {**cost, "total": total}

    def _remade_trial(self, problem: Problem, device_index: int, trial: _Trial, devices: Devices | None = None) \
            -> list[Any]:
        """A trial the judge did not keep, made again by a fresh reference sandbox: [*inputs, *expected] (host).
        Its outputs must match what the trial gave the first time (a sample of them, within the tolerance: GPU
        references may sum in a different order each run), or the reference cannot be judged against. With
        `devices`, the sandbox's start and its trial hold the device (the caller must not)."""
        started = time.perf_counter()
        on_device = _device_trials(devices, device_index)
        with on_device():
            box, _ = self._reference_box(problem, device_index)
        try:
            inputs, expected, _, scales = self._reference_trial(box, problem, trial.index, on_device=on_device)
        finally:
            box.close()
        with self._lock:  # a trial too large to keep costs a reference run per candidate: counted apart
            self._reference_cost.update({"remade trials": 1, "remade seconds": time.perf_counter() - started})
        mismatch = compare_outputs(trial.sample or [], [_spread_sample(t) for t in expected], self.config.tolerance,
                                   scales)
        if mismatch is not None:
            raise ReferenceError(f"problem {problem.name or problem.id}: the reference's outputs for trial "
                                 f"{trial.index} differ from the first time it ran on the same seed (it is not "
                                 f"deterministic): {mismatch.message}")
        # copies: the views of its sandbox's memory file would stay charged to that (closed) sandbox's group
        return [x.clone() if isinstance(x, torch.Tensor) else x for x in [*inputs, *expected]]

    def _reference_box_at(self, problem: Problem, device_index: int, trial: int, processes: bool = False) -> Sandbox:
        """A fresh reference sandbox that has run `trial` (its inputs in place for a timing's warm-up)."""
        box, _ = self._reference_box(problem, device_index, processes=processes)
        try:
            self._reference_trial(box, problem, trial)
        except BaseException:
            box.close()
            raise
        return box

    def _trial_limit(self, reference_seconds: float, forward_seconds: float | None = None) -> float:
        """How long a candidate's trial may run: HANG_FLOOR_S, plus HANG_FACTOR times the reference's forward,
        plus HANG_DATA_FACTOR times the rest of its trial (tensors made, moved and written, which take the
        same time for any kernel); at most verifier.run_timeout_s. Without the forward's own time the whole
        trial counts as forward, and a forward the sandbox says took longer than its whole trial by the judge's
        clock is not believed beyond that. The reference's figures are its warm trials' (a candidate's first trial
        also gets the reference's cold start once, in `_trials`). A hung kernel is killed in seconds, not after
        the whole run timeout, and so holds the device (and the timing of others) no longer than that. The cost:
        a candidate more than HANG_FACTOR times slower than the reference on a forward that takes long enough to
        matter is a timeout."""
        forward = reference_seconds if forward_seconds is None else min(forward_seconds, reference_seconds)
        data = reference_seconds - forward
        return min(self.config.run_timeout_s, HANG_FLOOR_S + HANG_FACTOR * forward + HANG_DATA_FACTOR * data)

    def baseline(self, problem: Problem, device_index: int, compiled: bool = False,
                 devices: Devices | None = None) -> _Baseline | None:
        """The reference timed the way candidates are (the same input set for each timed call, the same
        harness, the judge's clock around it), eager or under torch.compile (None when torch.compile cannot
        take it); with `devices`, its timed calls take the device alone (the caller must not hold it). The
        eager baseline also fixes the number of timed calls and the outputs the judge checks."""
        key = (problem.id, device_index, compiled)
        with waiting_for("this problem's baseline (another judgement times it)", self._once(("baseline", *key))):
            if key not in self._baselines and not compiled:
                with _reference_replies(problem), doing("timing the reference (eager)"):
                    self._baselines[key] = self._time_reference(problem, device_index, None, devices)
            elif key not in self._baselines:
                eager = self.baseline(problem, device_index, devices=devices)
                # torch.compile in a sandbox fails now and then where a second attempt runs (the H200: a
                # reference process that exited 255 without a report, a first copy that failed)
                for attempt in range(COMPILED_BASELINE_ATTEMPTS):
                    try:
                        with _reference_replies(problem), doing("compiling and timing the reference (torch.compile)"):
                            self._baselines[key] = self._time_reference(problem, device_index, eager, devices)
                        break
                    except ReferenceError as exc:
                        self._baselines[key] = None
                        log.log(logging.WARNING if attempt == COMPILED_BASELINE_ATTEMPTS - 1 else logging.INFO,
                                "no torch.compile baseline for %s (attempt %d of %d): %s", problem.name or problem.id,
                                attempt + 1, COMPILED_BASELINE_ATTEMPTS, exc)
            return self._baselines[key]

    def _timing_seeds(self, problem: Problem, count: int) -> list[int]:
        return [trial_seed(problem.id, TIMING_SEED_OFFSET + j, self.base_seed, self.seed_key) for j in range(count)]

    def _reference_sets(self, box: Sandbox, problem: Problem, count: int, sets: TensorStash,
                        trial_input_bytes: int) -> None:
        """Input sets len(sets)..count-1 (timed call i gets set i), made by the reference's get_inputs under
        the judge's seeds, one at a time, each written to a file of the judge's. Each is bounded by the trials'
        own inputs (TIMING_SET_SLACK of the largest): a reference whose timing inputs outgrow its trials' (a
        get_inputs that tells the two apart) loses its problem instead of filling the judge's disk."""
        most_bytes = min(self.config.memory_limit_mb << 20,
                         TIMING_SET_SLACK * trial_input_bytes + TIMING_SET_MARGIN_BYTES)
        for seed in self._timing_seeds(problem, count)[len(sets):]:
            box.send(("timing_set", seed))
            msg = box.receive(self.config.run_timeout_s)
            if msg is None or msg[0] != "set" or len(msg) != 2 or not isinstance(msg[1], list):
                raise ReferenceError(f"problem {problem.name or problem.id}: making the timing inputs failed: "
                                     f"{_reference_failure(msg, box)}")
            try:
                values = _handed_over(box, msg[1], most_bytes)
            except (TamperedData, OSError) as exc:
                raise ReferenceError(f"problem {problem.name or problem.id}: unreadable timing inputs ({exc}; "
                                     f"a timing set may hold at most {most_bytes} bytes: {TIMING_SET_SLACK}x its "
                                     f"largest trial's inputs)") from exc
            self._on_judges_disk(lambda: sets.append(values))

    def _time_reference(self, problem: Problem, device_index: int, eager: _Baseline | None,
                        devices: Devices | None) -> _Baseline:
        """Time the reference in its sandbox (warm-up on the last trial's inputs, timed calls on the reference's
        timing sets); `eager` given: under torch.compile, on the eager baseline's run count."""
        cfg = self.config
        compiled = eager is not None
        on_device = devices.trials if devices is not None else lambda _: nullcontext()
        reference = self.reference(problem, device_index, devices)
        sets = reference.sets
        last = len(reference.trials) - 1  # the trial whose inputs the warm-up uses (a candidate's too)
        # started (and, under torch.compile, compiled) before the device is taken alone
        with on_device(device_index):
            box = self._reference_box_at(problem, device_index, last, processes=compiled)
        expected = eager.expected if compiled else self._stash()
        compile_seconds = 0.0
        try:
            if compiled:  # inductor compiles here, beside the judgements in flight, not with the device alone
                box.send(("compile", last))
                msg = box.receive(cfg.compile_timeout_s + cfg.run_timeout_s)  # the compile, then one call
                if msg is None or msg[0] != "compiled" or len(msg) != 2 or not isinstance(msg[1], float):
                    raise ReferenceError(f"problem {problem.name or problem.id}: torch.compile of the reference "
                                         f"failed: {_reference_failure(msg, box)}")
                compile_seconds = msg[1]
            runs = eager.runs if compiled else min(cfg.timing_runs, reference.most_runs)
            for attempt in range(2):
                if not compiled:  # made here (drawn on the device), before the device is taken alone
                    with on_device(device_index):
                        self._reference_sets(box, problem, runs, sets, reference.input_bytes)
                checked = [] if compiled else random.SystemRandom().sample(range(runs), min(runs, CHECKED_TIMED_CALLS))
                with self._timed_alone(devices, device_index, box):
                    box.send(("time", last, cfg.timing_warmup, runs, compiled))
                    result = self._timed(box, self._timing_budget(runs) * (20 if compiled else 1), sets, runs,
                                         checked, reference.output_bytes)
                if not isinstance(result, _Window):
                    raise ReferenceError(f"problem {problem.name or problem.id}: timing the reference failed: "
                                         f"{_reference_failure(result, box)}")
                # short calls: time enough of them for the judge's clock to resolve the window. What it
                # resolves is a call together with the harness's own work for it (handing over its inputs):
                # where that work outweighs the call, more calls would not separate the two any better.
                harness = max(0.0, result.window - result.total) / runs
                wanted = min(reference.most_runs, math.ceil(MIN_TIMING_WINDOW_S / max(result.claimed + harness, 1e-9)))
                if compiled or wanted <= runs or attempt == 1:
                    break
                runs = wanted
            device = f"cuda:{device_index}" if self.device == "cuda" else "cpu"
            checked_entries = {}
            for k, i in enumerate(checked):  # none under torch.compile
                try:
                    outputs = [for_comparison(t, device) for t in result.output(k)]
                except (TamperedData, OSError) as exc:
                    raise ReferenceError(f"problem {problem.name or problem.id}: unreadable timed outputs ({exc})") \
                        from exc
                checked_entries[i] = self._on_judges_disk(lambda: expected.append(outputs))
            return _Baseline(result.claimed, harness, result.window, runs,
                             sets=sets, expected=expected, checked=checked_entries,
                             input_bytes=reference.input_bytes, output_bytes=reference.output_bytes,
                             prepared=result.prepared / runs, kept=result.kept / runs,
                             compile_seconds=compile_seconds)
        except ReferenceError as exc:
            if not compiled:
                expected.close()
                raise
            # torch.compile's baseline fails at random on busy boxes (its first copy to the GPU:
            # cudaErrorOperatingSystem, which a pinned host allocation that fails gives): what the sandbox and
            # the machine held then says whether memory is why
            raise ReferenceError(f"{exc} [at the failure: {box.resources()}{_device_free(device_index)}]") from exc
        except BaseException:
            if not compiled:
                expected.close()
            raise
        finally:
            box.close()

    @contextmanager
    def _timed_alone(self, devices: Devices | None, device_index: int, timed: Sandbox) -> Iterator[None]:
        """The device alone for `timed`'s timed calls, where the pool times exclusively: the trials in flight
        there finished and none starts (Devices.timing), and every other candidate's sandbox there stopped
        (SandboxFactory.others_paused)."""
        if devices is None or not devices.exclusive(device_index):  # a CPU pool times beside its trials
            yield
            return
        with devices.timing(device_index), self.sandboxes.others_paused(device_index, timed):
            yield

    def _timing_budget(self, runs: int | None = None) -> float:
        return self.config.run_timeout_s * ((runs or self.config.timing_runs) + self.config.timing_warmup)

    def _candidate_timing_budget(self, eager: _Baseline) -> float:
        """How long a candidate's whole timing (warm-up and timed calls) may take: HANG_FACTOR times the
        reference's, plus the floor twice (a kernel that hangs only once the trials are over is killed as soon
        as one that hangs at once)."""
        return min(self._timing_budget(eager.runs),
                   self._trial_limit(eager.window + eager.seconds * self.config.timing_warmup) + HANG_FLOOR_S)

    def _too_slow_to_time(self, reference: _Reference, eager: _Baseline, trial_seconds: float,
                          compile_seconds: float) -> _Outcome | None:
        """A candidate whose trials passed but whose calls, at the pace of its trials, cannot all fit in the
        timing's budget: a correct kernel, slower than eager by far, passed without being timed. Timing it
        would only end in a timeout (a correct kernel punished as a hung one) after holding the device alone
        for the whole budget. Its speedup is bounded from its trials by the judge's clock: a whole trial
        (inputs, forward, outputs) took at least as long as its forward, so the speedup reported is at most
        the true one. None when it can be timed. Being slow gains a cheater nothing: the budget allows
        HANG_FACTOR times the eager calls, so a speedup given here is below 1/HANG_FACTOR, and the timing's
        checks it skips (outputs of timed calls, the physical floor) guard speedups, not correctness."""
        calls = self.config.timing_warmup + eager.runs
        budget = self._candidate_timing_budget(eager)
        # the rest of a trial (inputs made, moved and written) takes the candidate as long as the reference
        forward_at_least = max(0.0, trial_seconds - reference.seconds)
        if not math.isfinite(trial_seconds) or forward_at_least * calls <= budget:
            return None
        speedup = eager.seconds / max(trial_seconds, 1e-9)
        return _Outcome(VerdictCategory.passed, f"all {len(reference.trials)} trials correct; not timed: a trial "
                        f"took {trial_seconds:.3g} s (the reference's {reference.seconds:.3g} s), so its {calls} timed "
                        f"calls cannot fit the timing's {budget:.3g} s; speedup vs eager at least {speedup:.2g}x "
                        "(from its trials)", q=1.0, speedup=speedup, compiled=True, compile_seconds=compile_seconds,
                        timing={"trial_s": trial_seconds, "reference_trial_s": reference.seconds,
                                "eager_s": eager.seconds, "timing_budget_s": budget, "not_timed": 1.0})

    def _timed(self, box: Sandbox, budget: float, sets: TensorStash, runs: int, checked: list[int],
               output_bytes: int):
        """One timing handshake: warm-up, the judge's `go` with a shared staging buffer, the timed calls —
        each asking, in turn, for its inputs just before it runs: the judge writes set i into the staging
        (off its clock), then starts its clock for call i, which the next request (or `done`) stops, so none
        exists in the sandbox ahead of time and the judge's clock sees the call, the copy of its inputs to
        the device and the messages, not the judge's own file reads —, the report, then where the outputs of
        the `checked` timed calls are. A `_Window`, or the message that came instead (None on timeout)."""
        msg = box.receive(budget)
        if msg != ("warm",):
            return msg
        start = time.perf_counter()
        deadline = start + budget
        staging = SharedStaging(max(bytes_spanned(sets.metas(i)) for i in range(runs)) if runs else 1)
        try:
            try:
                box.send(("go", staging.nbytes))
                box.send_descriptor(staging.fd)
            except (OSError, ValueError):  # the sandbox is gone: say how
                return box.receive(1.0) or ("died", None)
            window, call, clock = 0.0, 0, None
            while True:
                msg = box.receive(max(0.0, deadline - time.perf_counter()))
                if clock is not None:  # call - 1's inputs were handed over at `clock`: its time ends here
                    window += time.perf_counter() - clock
                    clock = None
                if msg == ("done",):
                    if call != runs:  # every call's time is in the window: none may be left out of it
                        return ("protocol_error", f"said done after {call} of {runs} timed calls")
                    break
                if msg is None or msg[0] != "next" or len(msg) != 2:
                    return msg
                if type(msg[1]) is not int or msg[1] != call or call >= runs:
                    return ("protocol_error", f"asked for the inputs of timed call {quote(msg[1], 20)} when call "
                            f"{call} of {runs} was next")
                fd, metas = sets.open_entry(call)
                try:
                    staging.fill(fd, metas)
                finally:
                    os.close(fd)
                clock = time.perf_counter()
                try:
                    box.send(("set", call, metas))
                except (OSError, ValueError):
                    return box.receive(1.0) or ("died", None)
                call += 1
        finally:
            staging.close()
        msg = box.receive(budget)
        if msg is None or msg[0] != "timed" or len(msg) != 2 or not isinstance(msg[1], dict):
            return msg
        seconds, total, ops = msg[1].get("seconds"), msg[1].get("total"), msg[1].get("ops")
        if not isinstance(seconds, float) or not isinstance(total, float) or seconds < 0 or total < 0 \
                or not isinstance(ops, dict) or not all(isinstance(k, str) and type(v) is int for k, v in ops.items()):
            return ("garbled", "timing report")
        # the sandbox's account of its own work around the calls: shown to whoever diagnoses a window, never
        # believed (anything but a float becomes nan)
        prepared, kept = (v if isinstance(v := msg[1].get(k), float) else float("nan") for k in ("prepared", "kept"))
        box.send(("outputs", checked))
        msg = box.receive(budget)
        if msg is None or msg[0] != "timed_outputs" or len(msg) != 3 or not isinstance(msg[2], list) \
                or len(msg[2]) != len(checked) or not all(type(c) is int and c >= 0 for c in msg[2]) \
                or not isinstance(msg[1], list) or sum(msg[2]) != len(msg[1]):
            return msg
        metas, start = [], 0
        for n in msg[2]:
            metas.append(msg[1][start:start + n])
            start += n
        return _Window(seconds, total, window, box.home.io_out / "timed.bin", metas, output_bytes, prepared, kept, ops)

    # -- sandboxed build and run ----------------------------------------------------------
    def _dynamic(self, problem: Problem, candidate: Candidate, devices: Devices, device_index: int,
                 phases: _Phases) -> _Outcome:
        # the reference's trials use the device as a candidate's do (inputs drawn, the forward, outputs moved):
        # never beside another's timing, where a second context on the GPU slows the timed kernels (1.76x for a
        # kernel longer than the GPU's time slice, by chance for a shorter one: benchmarks/spinner_probe.py)
        reference = self.reference(problem, device_index, devices)
        phases.mark("reference")
        box = self.sandboxes.take_run_sandbox(device_index)
        loading = _Loading(fallbacks=phases.build_fallbacks)  # the same list: the verdict reports it
        try:
            box.start(self._run_job(candidate, device_index, reference.init_inputs))
            phases.mark("start")
            try:
                outcome = self._drive(box, problem, candidate.source, reference, devices, device_index, phases,
                                      loading)
            except SANDBOX_READ_ERRORS as exc:  # a reply whose shape no check above foresaw: the candidate's doing
                log.exception("problem %s: candidate %s: the judge could not read its sandbox's replies; charged to "
                              "the candidate as harness-tampering", problem.name or problem.id, candidate.id)
                outcome = _tampered(f"a reply the judge could not read: {type(exc).__name__}", loading.build_seconds)
            outcome.peak_memory = box.peak_memory_bytes()
            if box.capped_mb is not None and outcome.category != VerdictCategory.passed \
                    and Cgroups.reached_limit(box.home.cgroups):
                # failed at its problem's estimate (killed there, or an allocation or a write refused): the
                # estimate's doing, not the code's
                raise SandboxOverEstimate(f"a sandbox failed ({outcome.category.value}) at {box.capped_mb} MB, its "
                                          "problem's memory estimate (verifier.memory_admission), below its own limit")
            return outcome
        finally:
            box.close()
            if loading.runner is not None:
                loading.runner.close()
            phases.mark("teardown")
            if paused := box.paused_seconds():  # stopped while others were timed on its device (within its phases)
                phases.seconds["paused"] = round(phases.seconds.get("paused", 0.0) + paused, 4)

    def _run_job(self, candidate: Candidate, device_index: int, init_inputs: list[Any], **extra: Any) -> dict[str, Any]:
        """What a run sandbox is started with: the candidate, its device, ModelNew's arguments, and the op watch
        (verifier/op_watch.py) it loads before the candidate's code."""
        return {"source": candidate.source, "device": self._device_str(device_index),
                "init_inputs": dumps(init_inputs), "init_seed": INIT_SEED, "num_threads": 1,
                # no seccomp to stack one more rule on without the jail (trusted code only)
                "threads": self.config.candidate_threads or self.config.isolation == "none",
                "op_watch": str(self.builder(device_index).op_watch_library()), **extra}

    def _drive(self, box: Sandbox, problem: Problem, source: str, reference: _Reference, devices: Devices,
               device_index: int, phases: _Phases, loading: _Loading) -> _Outcome:
        with doing("building and loading the candidate"):
            outcome = self._load(box, source, device_index, loading)
        phases.mark("build")
        if isinstance(outcome, _Outcome):
            return outcome
        compile_seconds = outcome
        with doing("the candidate's trials"):
            limit = self._trial_limit(reference.seconds, reference.forward_seconds)
            outcome = self._trials(box, reference, compile_seconds, limit, _device_trials(devices, device_index))
        phases.mark("trials")
        if isinstance(outcome, _Outcome):
            return outcome
        trial_seconds = outcome
        if not self.config.timed:
            return _Outcome(VerdictCategory.passed, f"all {len(reference.trials)} trials correct (not timed: "
                            "correctness only)", q=1.0, compiled=True, compile_seconds=compile_seconds)
        # the baselines (their timed calls alone on the device) and the warm-up's inputs (the last trial's, as
        # the reference's) before this candidate takes the device alone
        eager = self.baseline(problem, device_index, devices=devices)
        compiled = self.baseline(problem, device_index, compiled=True, devices=devices) \
            if self.device == "cuda" and self.config.compare_torch_compile else None
        phases.mark("baselines")
        too_slow = self._too_slow_to_time(reference, eager, trial_seconds, compile_seconds)
        if too_slow is not None:
            return too_slow
        warm = write_sealed(reference.inputs(reference.trials[-1]))
        try:
            with self._timed_alone(devices, device_index, box), doing("timing the candidate"):
                phases.mark("wait_for_device")
                outcome = self._time_candidate(box, reference, eager, compiled, warm, device_index, compile_seconds)
        finally:
            os.close(warm[0])
        phases.mark("timing")
        return outcome

    def _load(self, box: Sandbox, source: str, device_index: int, loading: _Loading) -> _Outcome | float:
        """Serve the candidate's builds until its ModelNew is constructed. Build time counts against
        compile_timeout_s; everything else it does meanwhile (its module's code, ModelNew's __init__)
        against run_timeout_s. Returns the compile seconds, or the outcome if it failed."""
        cfg = self.config
        deadline = box.clock() + cfg.run_timeout_s  # its own time: stopped while another is timed, it is not loading
        while True:
            msg = box.receive(max(0.0, deadline - box.clock()))
            if msg is None:
                return _Outcome(VerdictCategory.timeout, f"loading the module and constructing ModelNew took longer "
                                f"than {cfg.run_timeout_s:g} s (builds not counted)",
                                compile_seconds=loading.build_seconds)
            if msg[0] == "build":
                started = time.monotonic()
                illegal = self._serve_build(box, msg, source, device_index, loading)
                spent = time.monotonic() - started
                loading.build_seconds += spent
                deadline += spent
                if illegal is not None:
                    return illegal
                if loading.build_seconds > cfg.compile_timeout_s:
                    return _Outcome(VerdictCategory.timeout, f"building the candidate took longer than "
                                    f"{cfg.compile_timeout_s:g} s", compile_seconds=loading.build_seconds)
                continue
            if msg == ("loaded",):
                continue
            if msg[0] == "died":
                return _Outcome(VerdictCategory.runtime_error, box.death_detail(msg[1], "while loading"),
                                compile_seconds=loading.build_seconds)
            if msg[0] == "garbled" or not _well_formed_load_reply(msg):
                return _tampered(str(msg[1]) if msg[0] == "garbled" else quote(msg), loading.build_seconds)
            info = msg[1]
            if msg[0] == "ready":
                return loading.build_seconds
            if info["kind"] == "compile" and loading.build_log is not None:
                errors = [map_native_line(e, source) for e in compiler_errors(loading.build_log)]
                text = "\n".join(errors) if errors else loading.build_log[-1500:]
                return _Outcome(VerdictCategory.compile_error, f"compilation failed:\n{text}",
                                compile_seconds=loading.build_seconds)
            if info["kind"] == "harness":  # the harness reports its own failure instead of its hello, never after
                return _tampered("a harness failure reported after the harness was up", loading.build_seconds)
            if info["kind"] == "init":
                return _Outcome(VerdictCategory.runtime_error, f"error while constructing ModelNew:\n{info['message']}",
                                compiled=True, compile_seconds=loading.build_seconds)
            return _Outcome(VerdictCategory.compile_error, f"error while loading the module:\n{info['message']}",
                            compile_seconds=loading.build_seconds)

    def _serve_build(self, box: Sandbox, msg: tuple, source: str, device_index: int,
                     loading: _Loading) -> _Outcome | None:
        """Build one load_inline call of the candidate, after the same checks its source passed; hand its
        sandbox a copy of the shared object. An outcome only when the request itself is illegal."""
        if len(msg) != 3 or not isinstance(msg[1], list) or not isinstance(msg[2], dict):
            return _tampered(f"malformed build request {quote(msg, 80)}", loading.build_seconds)
        try:
            request = BuildRequest.from_call(msg[1], msg[2])
        except Exception as exc:  # noqa: BLE001 - arguments no load_inline takes (a tensor for a flag...): its error
            box.send(("call_error", f"{type(exc).__name__}: {exc}"[:500]))
            return None
        if request.cuda and self.device != "cuda":  # nothing here could run it (and no GPU to build for)
            loading.build_log = "the cpu backend builds C++ only: cuda_sources need verifier.backend: cuda"
            box.send(("build_error", loading.build_log))
            return None
        violations = check_build_request(request)
        if violations:
            v = violations[0]
            return _Outcome(VerdictCategory.illegal, f"illegal ({v.rule}): {v.message}", legal=False, rule=v.rule,
                            compile_seconds=loading.build_seconds)
        if loading.runner is None:
            loading.runner = LocalRunner() if self.config.isolation == "none" else \
                self.sandboxes.build_runner(device_index, _cuda_arch(device_index) if self.device == "cuda" else None)
        try:
            artifact = self.builder(device_index).build(request, loading.runner)
        except BuildError as exc:
            if exc.fallback:
                loading.fallbacks.append(exc.fallback)
            if exc.rule:  # built, and what it built broke a rule (verifier.legality.check_module_objects)
                return _Outcome(VerdictCategory.illegal, str(exc), legal=False, rule=exc.rule,
                                compile_seconds=loading.build_seconds)
            loading.build_log = exc.log or str(exc)
            box.send(("build_error", str(exc)[:500]))
            return None
        if artifact.fallback:
            loading.fallbacks.append(artifact.fallback)
        shared_object = self.builder(device_index).artifact_bytes(artifact)
        # what it imports, whatever its text spelled: native code that runs Python in the sandbox's interpreter
        # rewrites the harness that reports on it (its dispatch recorder, its counts)
        # (torch's own build: what the candidate's objects reach was judged when built, the judge's glue apart)
        # and what its machine code holds, however its source spelt its inline assembly (a macro, a -D flag)
        violations = check_artifact_symbols(shared_object, python_module=artifact.kind == "module",
                                            native=not artifact.fallback) or check_machine_code(shared_object)
        if violations:
            v = violations[0]
            return _Outcome(VerdictCategory.illegal, f"illegal ({v.rule}): {v.message}", legal=False, rule=v.rule,
                            compile_seconds=loading.build_seconds)
        path = box.home.lib / f"{artifact.key}.so"
        if not path.exists():
            path.write_bytes(shared_object)
        box.send(("built", artifact.describe(), str(path)))
        return None

    def _trials(self, box: Sandbox, reference: _Reference, compile_seconds: float, limit: float,
                on_device: Callable[[], AbstractContextManager] = nullcontext) -> _Outcome | float:
        """Run the correctness trials (each within `limit` seconds), holding one trial's tensors at a time; an
        outcome if the candidate failed, else the fastest warm trial's seconds by the judge's clock (inputs,
        forward, outputs; inf with one trial: a first trial's time is mostly start-up, and tells nothing).
        `on_device()` is held while the sandbox runs a trial, not while the judge writes its inputs or reads
        and compares its outputs: between trials a timing may take the device (this sandbox is then stopped,
        SandboxFactory.others_paused)."""
        cfg = self.config
        passed = 0
        elapsed: list[float] = []
        first_failure = ""
        earlier: list[tuple[str, str]] = []  # (expected, candidate output) digests of the trials so far
        compiled = dict(compiled=True, compile_seconds=compile_seconds)
        trials = reference.trials
        for index, trial in enumerate(trials):
            host_inputs, expected = reference.load(trial)
            started = time.perf_counter()
            # its inputs: a sealed memory file the sandbox maps (no read; it cannot change the judge's bytes)
            handed, metas = write_sealed(host_inputs)
            n_tensors = sum(isinstance(x, torch.Tensor) for x in host_inputs)
            del host_inputs  # the sandbox reports whether it changed them: the judge keeps no copy meanwhile
            cold = reference.cold_start_seconds if index == 0 else 0.0
            allowed = min(cfg.run_timeout_s, limit + cold)
            try:
                with on_device():
                    box.send(("trial", index, metas))
                    box.send_descriptor(handed)
                    msg = box.receive(allowed)
            finally:
                os.close(handed)
            if msg is None:
                return _Outcome(VerdictCategory.timeout, f"trial {index}: forward did not finish within "
                                f"{allowed:.3g} s ({HANG_FLOOR_S:g} s + {HANG_FACTOR:g}x the reference's forward + "
                                f"{HANG_DATA_FACTOR:g}x the rest of its trial"
                                + (f" + its first trial's start-up, {cold:.2g} s" if cold >= 0.005 else "") + ")",
                                **compiled)
            if msg[0] == "died":
                return _Outcome(VerdictCategory.runtime_error, box.death_detail(msg[1], f"in trial {index}"),
                                **compiled)
            if msg[0] == "trial_error":
                if len(msg) != 3 or type(msg[1]) is not int or msg[1] != index or not isinstance(msg[2], str):
                    return _tampered(f"malformed trial error {quote(msg)}", compile_seconds)
                return _Outcome(VerdictCategory.runtime_error, f"trial {index}: forward raised:\n{msg[2]}", **compiled)
            try:
                result = _trial_result(msg, index, n_tensors)
                # its outputs: a sealed memory file, mapped, not read back
                handed = box.receive_descriptor(HAND_OVER_TIMEOUT_S)
                if handed is None:
                    return _tampered(f"trial {index}'s report came without the sealed memory file of its outputs",
                                     compile_seconds)
                try:
                    illegal = self._legality(result)
                    if illegal:
                        rule, detail = illegal
                        return _Outcome(VerdictCategory.illegal, f"illegal ({rule}): {detail}", legal=False, rule=rule,
                                        **compiled)
                    mismatch = layout_mismatch(expected, describe(result["outputs"]))
                    # outputs of the wrong layout are a wrong output, never mapped (their size is not bounded)
                    host_outputs = map_sealed(handed, [(result["outputs"], nbytes_of(expected))]) \
                        if mismatch is None else []
                finally:
                    os.close(handed)
                if result["inputs_mutated"]:  # the sandbox's own account (content_checksum before and after)
                    return _Outcome(VerdictCategory.illegal, "illegal (input-mutation): forward modified its input "
                                    "tensors in place", legal=False, rule="input-mutation", **compiled)
                if mismatch is None:
                    [host_outputs] = host_outputs
                    # NaN equals nothing (torch.equal): an output with NaNs replays nothing, it is just wrong
                    output_digest = None if any(t.is_floating_point() and t.isnan().any() for t in host_outputs) \
                        else digest(host_outputs)
                    if output_digest and _replays_earlier_output(trial.expected_digest, output_digest, earlier):
                        return _Outcome(VerdictCategory.illegal, f"illegal (output-caching): trial {index} returned "
                                        "the same output as an earlier trial for different inputs", legal=False,
                                        rule="output-caching", **compiled)
                    earlier.append((trial.expected_digest, output_digest))
                    mismatch = compare_outputs(expected, host_outputs, cfg.tolerance, reference.output_scales,
                                               device=reference.device)
                    del host_outputs
                del expected
            except (TamperedData, OSError) as exc:
                return _tampered(str(exc), compile_seconds)
            elapsed.append(time.perf_counter() - started)
            if mismatch is None:
                passed += 1
            elif not first_failure:
                first_failure = f"trial {index}: {mismatch.message}"  # never its seed: the judge's secret
        q = passed / len(trials)
        if passed < len(trials):
            category = VerdictCategory.partial if passed else VerdictCategory.wrong_output
            return _Outcome(category, f"{passed}/{len(trials)} trials correct. First failure: {first_failure}",
                            q=q, **compiled)
        return min(elapsed[1:], default=math.inf)

    def _legality(self, result: dict[str, Any]) -> tuple[str, str] | None:
        illegal = _ops_legality(result["ops"])
        if illegal is not None:
            return illegal
        if result["own_calls"] is None:
            return "no-own-kernel", "the candidate compiled no extension of its own (load_inline)"
        if result["own_calls"] == 0:
            return "no-own-kernel", "ModelNew.forward never called a function of its compiled extension"
        return None

    def _time_candidate(self, box: Sandbox, reference: _Reference, eager: _Baseline, compiled: _Baseline | None,
                        warm: tuple[int, list[Any]], device_index: int, compile_seconds: float) -> _Outcome:
        """Candidate and baselines timed the same way, on the same per-call inputs, each under the judge's
        own clock; an implausible or physically impossible time is measured once more. The pass, or why not."""
        cfg = self.config
        compiled_ok = dict(compiled=True, compile_seconds=compile_seconds)
        floor, bandwidth = self._physical_floor(device_index, eager)
        believed: list[float] = []
        for _ in range(2):
            box.send(("time", warm[1], cfg.timing_warmup, eager.runs))
            box.send_descriptor(warm[0])  # the warm-up's inputs: a sealed memory file of the judge's
            budget = self._candidate_timing_budget(eager)
            result = self._timed(box, budget, eager.sets, eager.runs, sorted(eager.checked), eager.output_bytes)
            if not isinstance(result, _Window):
                if result is None:
                    return _Outcome(VerdictCategory.timeout, "timing did not finish", **compiled_ok)
                if result[0] == "died":
                    return _Outcome(VerdictCategory.runtime_error, box.death_detail(result[1], "while being timed"),
                                    **compiled_ok)
                return _tampered(quote(result), compile_seconds)
            illegal = _ops_legality(result.ops, cfg.timing_warmup + eager.runs, timed=True)
            if illegal is not None:
                rule, message = illegal
                return _Outcome(VerdictCategory.illegal, f"illegal ({rule}): {message}", legal=False, rule=rule,
                                **compiled_ok)
            for k, index in enumerate(sorted(eager.checked)):  # one call's outputs at a time
                expected = eager.expected.get(eager.checked[index])
                try:
                    outputs = result.output(k)
                except (TamperedData, OSError) as exc:
                    return _tampered(f"timed outputs: {exc}", compile_seconds)
                mismatch = layout_mismatch(expected, [(tuple(t.shape), t.dtype) for t in outputs])
                near_miss = False
                if mismatch is None:
                    mismatch = compare_outputs(expected, outputs, cfg.tolerance, reference.output_scales,
                                               device=reference.device)
                    # within KernelBench's tolerance: a result that varies from call to call (a reduction whose
                    # order changes: float atomics), not a remembered or skipped one, which is off by its values
                    near_miss = mismatch is not None and compare_outputs(expected, outputs, "kernelbench",
                                                                         device=reference.device) is None
                del outputs, expected
                if near_miss:
                    trials = len(reference.trials)
                    return _Outcome(VerdictCategory.partial, f"{trials}/{trials} trials correct, but timed call "
                                    f"{index} of {eager.runs} was not ({mismatch.message}): its results vary from "
                                    "call to call, as a reduction whose order changes between calls (float "
                                    "atomics) can; sum in a fixed order or accumulate in higher precision",
                                    q=trials / (trials + 1), **compiled_ok)
                if mismatch is not None:
                    return _Outcome(VerdictCategory.illegal, f"illegal (timing-output): timed call {index} of "
                                    f"{eager.runs} returned a wrong output ({mismatch.message}); a kernel must compute "
                                    "every call, not only the correctness trials", legal=False, rule="timing-output",
                                    **compiled_ok)
            last_window = result
            check = believed_seconds(result.claimed, result.window, eager.runs, eager.overhead,
                                     rel_noise=cfg.timing_noise)
            believed.append(check.seconds)
            if believed[-1] >= floor * FLOOR_SLACK and eager.seconds / max(believed[-1], 1e-9) <= SPEEDUP_SANITY_BOUND:
                break
        seconds = max(believed)  # when re-measured, believe the slower
        if seconds < floor * FLOOR_SLACK:
            return _Outcome(VerdictCategory.illegal, f"illegal (impossible-speed): {seconds * 1e6:.1f} us per call, "
                            f"twice measured, is less than half the {floor * 1e6:.1f} us its memory traffic needs "
                            f"({eager.input_bytes + eager.output_bytes} bytes at {bandwidth / 1e9:.0f} GB/s)",
                            legal=False, rule="impossible-speed", **compiled_ok)
        speedup = eager.seconds / max(seconds, 1e-9)
        speedup_compile = (compiled.seconds / max(seconds, 1e-9)) if compiled else None
        roofline = (eager.input_bytes + eager.output_bytes) / bandwidth / max(seconds, 1e-12)
        timing = {"claimed_s": check.claimed, "outside_s": check.outside, "believed_s": seconds,
                  "eager_s": eager.seconds, "eager_window_s": eager.window, "harness_overhead_s": eager.overhead,
                  "runs": float(eager.runs), "overruled": float(check.overruled), "floor_s": floor,
                  "bandwidth_bytes_per_s": bandwidth}
        # where the windows went, by the sandboxes' own clocks (per call; a diagnosis, never believed)
        around = {"sandbox_prepare_s": last_window.prepared / eager.runs, "sandbox_keep_s": last_window.kept / eager.runs,
                  "eager_prepare_s": eager.prepared, "eager_keep_s": eager.kept}
        timing.update({k: v for k, v in around.items() if math.isfinite(v) and v >= 0})
        detail = f"all {len(reference.trials)} trials correct; speedup vs eager {speedup:.2f}x"
        if speedup_compile:
            detail += f", vs torch.compile {speedup_compile:.2f}x"
        return _Outcome(VerdictCategory.passed, detail, q=1.0, speedup=speedup, speedup_compile=speedup_compile,
                        timing=timing, roofline=roofline, **compiled_ok)

    def _physical_floor(self, device_index: int, eager: _Baseline) -> tuple[float, float]:
        """(least seconds a call's memory traffic needs, the device's copy bandwidth in bytes/s). Measured
        once per device, under the exclusive timing lock on cuda (the caller holds it)."""
        with self._once(("bandwidth", device_index)):
            if device_index not in self._bandwidth:
                device = f"cuda:{device_index}" if self.device == "cuda" else "cpu"
                self._bandwidth[device_index] = (copy_bandwidth(device), _cache_bytes(self.device, device_index))
        bandwidth, cache = self._bandwidth[device_index]
        return physical_floor_seconds(eager.input_bytes, eager.output_bytes, bandwidth, cache), bandwidth


def _cache_bytes(device: str, device_index: int) -> int:
    """What the last-level cache can hold: the L2 on a GPU (flushed before each timed call, but it absorbs
    writes), the largest CPU cache otherwise (inputs refilled just before a call may still sit there)."""
    if device == "cuda":
        return int(torch.cuda.get_device_properties(device_index).L2_cache_size)
    sizes = []
    for path in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = path.read_text().strip().upper()
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        try:
            sizes.append(int(text.rstrip("KMG")) * scale)
        except ValueError:
            pass
    return max(sizes, default=64 << 20)


def _device_trials(devices: Devices | None, device_index: int) -> Callable[[], AbstractContextManager]:
    """What a sandbox's work on the device holds (Devices.trials), as a context factory: nothing without devices.
    Held per trial, never across the judge's own reading and writing between trials, and never twice in one
    thread (a timing waiting between the two holds would wait forever)."""
    return (lambda: devices.trials(device_index)) if devices is not None else nullcontext


def _device_free(device_index: int) -> str:
    """The GPU's free memory, as the driver counts it (every process's allocations), for a failure's note."""
    if not torch.cuda.is_available():
        return ""
    try:
        free, total = torch.cuda.mem_get_info(device_index)
    except RuntimeError as exc:
        return f"; the GPU's free memory unreadable ({exc})"
    return f"; GPU free {free >> 20} of {total >> 20} MB"


def _reference_failure(msg, box: Sandbox) -> str:
    if msg is None:
        return "it did not answer in time"
    if msg[0] == "died":
        return box.death_detail(msg[1], "").replace("the candidate process", "the reference process")
    if msg[0] == "reference_error" and len(msg) == 2:
        return msg[1][-1500:] if isinstance(msg[1], str) else quote(msg[1])
    return f"unexpected reply {quote(msg)}"


def _handed_over(box: Sandbox, metas: list[Any], max_bytes: int) -> list[Any]:
    """The values `metas` describe, from the sealed memory file `box` hands over right after the report that
    describes them (`map_sealed`: views, no copy; at most `max_bytes`). TamperedData when none comes."""
    handed = box.receive_descriptor(HAND_OVER_TIMEOUT_S)
    if handed is None:
        raise TamperedData("a report came without the sealed memory file of its tensors")
    try:
        [values] = map_sealed(handed, [(metas, max_bytes)])
    finally:
        os.close(handed)
    return values


SAMPLE_ELEMENTS = 1 << 20  # of each expected output of a trial not kept: what its remaking is checked against


def _spread_sample(t: torch.Tensor) -> torch.Tensor:
    """Up to SAMPLE_ELEMENTS evenly spread elements of `t` (a copy, on the host)."""
    flat = t.detach().reshape(-1)
    step = max(1, -(-flat.numel() // SAMPLE_ELEMENTS))
    return flat[::step].cpu().clone()


def _replays_earlier_output(expected_digest: str, output_digest: str, earlier: list[tuple[str, str]]) -> bool:
    """Same candidate output (bit for bit) as an earlier trial although the reference's outputs differ."""
    return any(old_output == output_digest and old_expected != expected_digest for old_expected, old_output in earlier)


_NATIVE_ERROR = re.compile(r"^(?P<file>candidate\.(?:cpp|cu)):(?P<line>\d+): (?P<rest>.*)$")


def map_native_line(error: str, source: str) -> str:
    """`candidate.cu:12: error: ...` -> `candidate.py:40 (candidate.cu:12): error: ...` when the C++/CUDA
    text is one string literal of the candidate's Python, so the model sees its own line numbers."""
    m = _NATIVE_ERROR.match(error)
    if not m:
        return error
    cuda = m.group("file").endswith(".cu")
    literals = []
    try:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
                if ("__global__" in text) == cuda and ("#include" in text or "torch::" in text or "__global__" in text):
                    literals.append(node)
    except SyntaxError:
        return error
    if len(literals) != 1:
        return error
    py_line = literals[0].lineno + int(m.group("line")) - 1
    return f"candidate.py:{py_line} ({m.group('file')}:{m.group('line')}): {m.group('rest')}"


def _trial_result(msg: tuple, index: int, n_tensors: int) -> dict[str, Any]:
    """The sandbox's report of one trial, its shape checked (the candidate shares the sandbox's process):
    `inputs_mutated` names, in order, which of its `n_tensors` input tensors the forward changed."""
    fields = {"outputs": list, "inputs_mutated": list, "ops": dict, "own_calls": (int, type(None)), "seconds": float}
    if len(msg) != 3 or msg[0] != "trial_out" or type(msg[1]) is not int or msg[1] != index \
            or not isinstance(msg[2], dict) or set(msg[2]) != set(fields) \
            or not all(isinstance(msg[2][k], t) for k, t in fields.items()) \
            or not all(isinstance(k, str) and type(v) is int for k, v in msg[2]["ops"].items()) \
            or not all(isinstance(m, dict) and "value" not in m for m in msg[2]["outputs"]) \
            or not all(type(k) is int for k in msg[2]["inputs_mutated"]) \
            or msg[2]["inputs_mutated"] != sorted(set(msg[2]["inputs_mutated"])) \
            or not all(0 <= k < n_tensors for k in msg[2]["inputs_mutated"]):
        raise TamperedData(f"unexpected reply to trial {index}: {quote(msg)}")
    return msg[2]


def _well_formed_load_reply(msg: tuple) -> bool:
    """("ready", {...}) or ("load_error", {...}) with the fields the judge reads, of the right types."""
    if len(msg) != 2 or not isinstance(msg[1], dict):
        return False
    info = msg[1]
    if msg[0] == "ready":
        return isinstance(info.get("compile_seconds"), float)
    if msg[0] == "load_error":
        return isinstance(info.get("kind"), str) and isinstance(info.get("message"), str) \
            and isinstance(info.get("log"), str) and isinstance(info.get("seconds", 0.0), float)
    return False


# Runtime errors whose cause is the candidate's code whatever runs beside it: Python's own mistakes and shape
# checks (what a neighbour takes is memory and time; an allocation that fails says so) — 74 % of the miniature's
# runtime errors on the H200 (124 of 168), each of which was judged again alone, after every judgement in flight.
_ITS_OWN_ERROR = re.compile(
    r"\b(TypeError|NameError|UnboundLocalError|AttributeError|SyntaxError|IndentationError|ImportError|"
    r"ModuleNotFoundError|KeyError|IndexError|ZeroDivisionError|NotImplementedError|RecursionError): "
    r"|The expanded size of the tensor \(\d+\) must match the existing size"
    r"|expected at most \d+ argument\(s\) but received \d+|killed by SIGFPE")


def _a_neighbour_can_cause(outcome: _Outcome) -> bool:
    """Whether another sandbox on the machine could have caused this failure (made again alone, `_again_alone`):
    a runtime error or a timeout (the GPU's memory held — a process's cudaMalloc has no limit — its time or the
    CPUs' shared), or a module that could not load for want of memory (its CUDA context or a tensor at import).
    Not a wrong output (no neighbour changes what a kernel computes), nor a runtime error whose last words are
    the code's own mistake (`_ITS_OWN_ERROR`): its text is the failing candidate's, and hiding behind it would
    only spare that candidate a second chance."""
    if outcome.category == VerdictCategory.runtime_error:
        last_words = outcome.detail.strip().splitlines()[-1:] or [""]
        return not _ITS_OWN_ERROR.search(last_words[0])
    return outcome.category == VerdictCategory.timeout or (
        outcome.category == VerdictCategory.compile_error and "out of memory" in outcome.detail.lower())


# What reading a malformed reply raises (an index past its end, a field of the wrong type, a repr too deep): a
# candidate shares its sandbox's process and can write any bytes into the channel, so once the checks of each
# reply's shape are passed, what still fails there is its doing and its verdict (harness-tampering), never an
# exception that would end the stage. Not ReferenceError, SandboxStarved or out-of-memory: those mean other things.
SANDBOX_READ_ERRORS = (IndexError, TypeError, AttributeError, KeyError, RecursionError)


def _disk_full(exc: OSError) -> JudgeDiskFull:
    """A write to the judge's own disk that the judgement cannot do without failed: the machine's limit (which
    ends the stage with one clear line), never the reference's failure — a full disk once sent problems to be
    judged again alone and could have left them out as broken."""
    return JudgeDiskFull(f"the judge's disk is full ({exc}): free some of it, or keep fewer reference trials "
                         "there (lower verifier.stored_trials_gb, raise verifier.min_free_disk_gb)")


@contextmanager
def _reference_replies(problem: Problem) -> Iterator[None]:
    """A reference sandbox's reply the judge could not read is the reference's failure (its problem is left out,
    one line in the report), never an exception that ends the stage: references are untrusted code too."""
    try:
        yield
    except SANDBOX_READ_ERRORS as exc:
        log.exception("problem %s: the judge could not read its reference sandbox's replies", problem.name or problem.id)
        raise ReferenceError(f"problem {problem.name or problem.id}: the judge could not read its reference "
                             f"sandbox's replies ({type(exc).__name__})") from exc


def _ops_legality(ops: dict[str, int], calls: int = 1, timed: bool = False) -> tuple[str, str] | None:
    """(rule, message) when what the dispatcher ran over `calls` forwards is more than the glue allows: a trial's,
    or the warm-up's and timed calls' together (`timed`: a kernel that tells them from the trials — a count of its
    calls, the trials' poisoned allocations — and does ATen's work only there)."""
    where = " in its warm-up and timed calls" if timed else ""
    bad = forbidden_ops(ops)
    if bad:
        return "torch-compute", (f"ModelNew.forward called torch op(s) {', '.join(bad[:5])}{where}; the computation "
                                 "must be done by your own kernel" + (" in every call, not only in the correctness "
                                 "trials" if timed else " (allowed glue: allocation, views, .contiguous())"))
    reads = ops.get("aten::_local_scalar_dense", 0) / max(calls, 1)
    if reads > HOST_READS_PER_FORWARD:
        return "host-compute", (f"ModelNew.forward read {reads:.0f} tensor values{' a call' if timed else ''} on the "
                                f"host{where} (.item(), float(t), bool(t)): the computation must be done by your own "
                                "kernel, not by Python")
    return None


def _tampered(why: str, compile_seconds: float) -> _Outcome:
    return _Outcome(VerdictCategory.illegal, f"illegal (harness-tampering): the sandbox's channel to the judge "
                    f"carried data the harness never sends ({why})", compiled=True, legal=False,
                    rule="harness-tampering", compile_seconds=compile_seconds)


def _bound(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    return text[:head] + "\n... [truncated] ...\n" + text[-(limit - head - 24):]
