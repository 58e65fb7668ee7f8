"""The verification pool: many (problem, candidate) pairs in, a stream of verdicts out.

`LocalVerifierPool` is the embedded default: N concurrent sandboxes (one per core
for `cpu`, one per GPU for `cuda`), a verdict cache keyed by content hash, and the
build cache shared through the cache directory.
"""

from __future__ import annotations

import json
import lzma
import os
import re
from collections.abc import Callable, Iterable, Iterator
from abc import ABC, abstractmethod
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

import torch

from schemas.config import VerifierConfig
from schemas.records import Candidate, Problem, Verdict, content_hash
from verifier.activity import describe, in_flight
from verifier.isolation import memory_now_mb
from verifier.judge import Devices, Judge, measured_trial_bytes
from verifier.reference import ReferenceError
from verifier.signed_store import SignedStore, VerdictImportError, home_secret

# The harness that judges now (MLflow's `kerneldojo.harness` tag, every stage's summary, each verdict it stores).
# Bump it when a change to the harness can change a verdict; and VERDICT_KEY_VERSION with it (old cached verdicts are
# then ignored) unless the change is only to how torch's own builds are judged (the fallback path: its glue,
# verifier.legality.check_module_objects): a cached verdict whose builds all stayed on the fast path
# (Verdict.build_fallbacks empty) went through none of that, and still answers; one that took the fallback answers
# only under the harness that stored it (VerdictCache.get).
HARNESS_VERSION = "14"  # 5: reductions in any order, slow kernels untimed, timed near-misses partial; 6: no
# candidate threads, failures a neighbour can cause judged again alone; 7: references' inputs drawn on the device
# and handed to the judge as drawn (before a forward that changes them in place); 8: input seeds keyed by the home's
# secret, NaN/Inf matched only by the same, the dispatcher observed in trials, interpreter imports and host compute
# refused (a pass cached before, by a candidate that drew its inputs ahead, must not answer); 9: the op watch in
# warm-up and timed calls, compiled imports of ATen's direct kernels and the observers' switches refused, pybind11
# modules' glue the judge's own (apart from the candidate's code, which may not reach the interpreter); 10: outputs
# of exactly a tensor or a tuple/list of them, read through the harness's own aliases, the extension calls counted
# out of the candidate's reach, imports an allowlist, torch's unpicklers and `match` refused, library math by any
# case of its symbols (a pass cached before, by a candidate that computed as its output was read, must not answer);
# 11: torch's own builds judged by what the candidate's files reach (one from another, from the judge's glue, from
# finalizers), not by what the judge's glue imports; nvcc's operand types read for the shim's gaps; 12: objects read
# past 65,280 sections, ifunc resolvers, versioned names, another file's or the glue's code the candidate's calls,
# libtorch_python's exports as the interpreter, the loader and processes by other names, mmap refused; a built
# object's machine code read (system call instructions, jumps into an instruction, data in code, W+X, exec stack)
# 13: a torch build's definitions under names the toolchain's startup files call (__gmon_start__, ...), its
# personality routines and what its LSDAs name judged (fallback builds only: fast-path verdicts of 12 still answer)
# 14: the op watch's names copied when first seen (a freed RecordFunction name was read as an op, "aten::": a false
# torch-compute verdict). Only those can change: a freed name was never a dispatcher op's (an op's name lives as long
# as the op), and what a scope of its own computes with ATen goes through ops the watch names as before; so only
# torch-compute verdicts are judged again (_RULE_JUDGED_AGAIN_BEFORE)
VERDICT_KEY_VERSION = "12"  # HARNESS_VERSION's last bump that could change any verdict: what a verdict's key carries
# an illegal verdict under one of these rules answers only when stored by this harness or a later one: a bump that can
# change only such verdicts (a false one made true) leaves VERDICT_KEY_VERSION behind too
_RULE_JUDGED_AGAIN_BEFORE = {"torch-compute": 14}


def _oldest_harness_that_answers(verdict: Verdict) -> int:
    """The oldest harness whose stored verdict may still answer: the current one for a verdict of torch's own build
    (judged by rules since changed: HARNESS_VERSION's note); the bump that mended its rule for a verdict under such a
    rule (_RULE_JUDGED_AGAIN_BEFORE); for any other, every harness its key's version (VERDICT_KEY_VERSION) reaches,
    unstamped ones (stored before verdicts were stamped) included."""
    if verdict.build_fallbacks:
        return int(HARNESS_VERSION)
    return _RULE_JUDGED_AGAIN_BEFORE.get(verdict.rule or "", 0)


def _cores() -> int:
    return max(1, len(os.sched_getaffinity(0)))


def default_workers(config: VerifierConfig) -> int:
    """Sandboxes that run at once: one per GPU (cuda) or per core (cpu)."""
    if config.backend == "cuda":
        visible = torch.cuda.device_count()
        if config.workers > visible:  # GPU i >= visible would be no GPU inside its sandboxes: say so here, once
            raise ValueError(f"verifier.workers={config.workers} names GPUs for the cuda backend, and {visible} "
                             f"{'is' if visible == 1 else 'are'} visible; candidates in flight are "
                             "verifier.compile_workers")
        return config.workers or max(1, visible)
    return config.workers or _cores()


class VerdictCache:
    """One authenticated entry per verdict, and per reference known to run (verifier/signed_store.py), written
    only by the judge's side; a forged or edited entry is refused and judged (or run) again."""

    def __init__(self, root: Path, secret: bytes):
        self.store = SignedStore(root, secret)

    @classmethod
    def of_home(cls, cache_dir: str | Path) -> VerdictCache:
        """The verdict store of a home's verifier cache directory, under that home's secret."""
        return cls(Path(cache_dir) / "verdicts", home_secret(cache_dir))

    def key(self, problem: Problem, candidate: Candidate, config: VerifierConfig, base_seed: int,
            device: str | None = None) -> str:
        # `timed`: an untimed pass (correctness only, no speedup) must not answer for a timed judgement; `device`
        # (the model a timed verdict is measured on): a speedup on an H200 is not one on an H100
        relevant = config.model_dump(include={"backend", "trials", "tolerance", "fast_build", "isolation",
                                              "timing_noise", "timed", "candidate_threads"})
        return content_hash(VERDICT_KEY_VERSION, problem.reference, candidate.source,
                            json.dumps(relevant, sort_keys=True), str(base_seed), *([device] if device else []),
                            length=24)

    def _reference_key(self, problem: Problem, config: VerifierConfig) -> str:
        # what decides whether a reference runs here: where, how many trials, within what memory and time
        relevant = config.model_dump(include={"backend", "trials", "isolation", "memory_limit_mb", "run_timeout_s",
                                              "stored_trials_gb"})
        return "reference-" + content_hash(VERDICT_KEY_VERSION, problem.reference, json.dumps(relevant, sort_keys=True),
                                            length=24)

    def reference_ran(self, problem: Problem, config: VerifierConfig) -> bool:
        return self.store.get(f"{self._reference_key(problem, config)}.json") == b"ran"

    def remember_reference_ran(self, problem: Problem, config: VerifierConfig) -> None:
        self.store.put(f"{self._reference_key(problem, config)}.json", b"ran")

    def forget_reference_ran(self, problem: Problem, config: VerifierConfig) -> None:
        self.store.path(f"{self._reference_key(problem, config)}.json").unlink(missing_ok=True)

    def get(self, key: str) -> Verdict | None:
        payload = self.store.get(f"{key}.json")
        if payload is None:
            return None
        try:
            verdict = Verdict.model_validate_json(payload)
        except ValueError:
            return None
        if int(verdict.harness or 0) < _oldest_harness_that_answers(verdict):
            return None
        return verdict

    def put(self, key: str, verdict: Verdict) -> None:
        stamped = verdict.model_copy(update={"harness": HARNESS_VERSION})
        self.store.put(f"{key}.json", stamped.model_dump_json().encode())


_ENTRY_KEY = re.compile(r"^(reference-)?[0-9a-f]{24}\.json$")


def export_verdicts(cache_dir: str | Path, out: str | Path) -> int:
    """Write every authentic entry of a home's verdict store (verdicts, references known to run) to `out`, unsigned:
    JSON lines, xz-compressed. Its secret stays home; a home that trusts this one takes them in with
    `import_verdicts` (a stage cut short on one machine goes on from its verdicts on another). Returns the count."""
    store = VerdictCache.of_home(cache_dir).store
    count = 0
    with lzma.open(out, "wt") as f:
        for key, payload in store.entries():
            f.write(json.dumps({"key": key, "payload": payload.decode()}) + "\n")
            count += 1
    return count


def import_verdicts(cache_dir: str | Path, source: str | Path) -> int:
    """Sign the entries of an `export_verdicts` file with this home's secret, so this home's pools use them.
    Importing vouches for the exporting home, as copying its secret would, but only for what is a verdict or a
    reference mark under a verdict key; a file with anything else is refused whole, before a single entry is
    written. Returns the count."""
    entries: list[tuple[str, bytes]] = []
    try:
        with lzma.open(source, "rt") as f:
            for number, line in enumerate(f, 1):
                try:
                    row = json.loads(line)
                    key, payload = row["key"], row["payload"]
                    if not (isinstance(key, str) and _ENTRY_KEY.match(key) and isinstance(payload, str)):
                        raise ValueError("not a verdict store entry")
                    if key.startswith("reference-") and payload != "ran" or \
                            not key.startswith("reference-") and not Verdict.model_validate_json(payload):
                        raise ValueError("its payload is not what its key holds")
                except (ValueError, KeyError, TypeError) as exc:
                    raise VerdictImportError(f"{source}: line {number} is not an exported verdict ({exc}); "
                                             "nothing imported") from None
                entries.append((key, payload.encode()))
    except (OSError, lzma.LZMAError, EOFError) as exc:
        raise VerdictImportError(f"{source}: not an exported verdict store ({exc}); nothing imported") from None
    store = VerdictCache.of_home(cache_dir).store
    for key, payload in entries:
        store.put(key, payload)
    return len(entries)


@dataclass(frozen=True)
class ReferenceBroken:
    """A judgement that found its problem's reference failing, alone on the machine too (a trial made again that
    differs from the first time, the eager timing failing): the problem's fault, so no verdict for the
    candidate."""

    problem_id: str
    candidate_id: str
    why: str


def judged(judge: Judge, problem: Problem, candidate: Candidate, devices: Devices | None = None) \
        -> Verdict | ReferenceBroken:
    """`judge.verify`, with a reference that breaks during the judgement answered as `ReferenceBroken`."""
    try:
        return judge.verify(problem, candidate, devices)
    except ReferenceError as exc:
        return ReferenceBroken(problem.id, candidate.id, str(exc))


class VerifierPool(ABC):
    """Streams verdicts for (problem, candidate) pairs: cached ones at once, the rest as judged."""

    def __init__(self, config: VerifierConfig, cache_dir: str | Path, base_seed: int = 0):
        self.config = config
        self.cache_dir = Path(cache_dir)
        self.base_seed = base_seed
        self.cache = VerdictCache.of_home(self.cache_dir)
        self.calls = 0  # verifier calls made, cache hits included
        # problem id -> why its reference broke during a judgement: its later pairs are not judged
        self.broken: dict[str, str] = {}
        self._remembered: set[str] = set()  # problems whose reference run this pool has remembered

    def verify(self, problem: Problem, candidate: Candidate) -> Verdict:
        """One verdict; a reference that cannot be judged against raises ReferenceError."""
        for verdict in self.verify_many([(problem, candidate)]):
            return verdict
        raise ReferenceError(self.broken[problem.id])

    def verify_many(self, pairs: Iterable[tuple[Problem, Candidate]],
                    on_verdict: Callable[[Verdict], None] | None = None,
                    on_broken: Callable[[ReferenceBroken], None] | None = None) -> Iterator[Verdict]:
        """Yield one verdict per pair, in completion order (match them by `candidate_id`) — except for a pair
        whose problem's reference broke, during this call or an earlier one (`self.broken`): no verdict, nothing
        cached, `on_broken` told (a broken reference is the problem's fault, never the candidate's: callers
        leave the problem out). The rest of the batch is judged as usual."""
        keys: dict[str, str] = {}
        problems: dict[str, Problem] = {}
        handles = []
        # smallest first: a full-size problem whose memory share waits blocks every judgement behind it (admission
        # is first come, first served), so the large ones go last and the small ones never wait behind them
        device = self.timing_device()
        for problem, candidate in sorted(pairs, key=lambda pair: measured_trial_bytes(pair[0])):
            self.calls += 1
            if problem.id in self.broken:
                if on_broken:
                    on_broken(ReferenceBroken(problem.id, candidate.id, self.broken[problem.id]))
                continue
            key = self.cache.key(problem, candidate, self.config, self.base_seed, device)
            cached = self.cache.get(key) if self.config.use_cache else None
            if cached is None and device and self.config.use_cache:
                # kept before verdicts were keyed by the device they were timed on: this device's answer only
                kept = self.cache.get(self.cache.key(problem, candidate, self.config, self.base_seed))
                cached = kept if kept is not None and kept.device == device else None
            if cached is not None:
                verdict = cached.model_copy(update={"candidate_id": candidate.id, "cached": True})
                if on_verdict:
                    on_verdict(verdict)
                yield verdict
                continue
            keys[candidate.id] = key
            problems[problem.id] = problem
            handles.append(self._submit(problem, candidate))
        for verdict in self._completed(handles):
            if isinstance(verdict, ReferenceBroken):
                self.broken.setdefault(verdict.problem_id, verdict.why)
                if self.config.use_cache:  # it ran before (checked, or for a verdict) and broke since
                    self.cache.forget_reference_ran(problems[verdict.problem_id], self.config)
                    self._remembered.discard(verdict.problem_id)
                if on_broken:
                    on_broken(verdict)
                continue
            verdict = verdict.model_copy(update={"harness": HARNESS_VERSION})
            if self.config.use_cache:
                self.cache.put(keys[verdict.candidate_id], verdict)
                # its reference ran for this verdict: remembered now, not at the check that follows the judging,
                # which a call's limit may never reach (the next call's check would run it again)
                pid = verdict.problem_id
                if pid not in self._remembered and pid not in self.broken and self._ran_here(pid):
                    self.cache.remember_reference_ran(problems[pid], self.config)
                    self._remembered.add(pid)
            if on_verdict:
                on_verdict(verdict)
            yield verdict

    def activity(self) -> str:
        """One line for a stage's heartbeat while it waits on verdicts: what the judgements in flight do or wait
        for, and, where the pool knows, the memory promised and the sandboxes a timing has stopped."""
        return "judged elsewhere (no view of the judgements in flight)"

    def check_references(self, problems: Iterable[Problem], on_checked: Callable[[str], None] | None = None,
                         keep: bool = True) -> dict[str, str]:
        """Problem id -> why its reference cannot run here (it fails to load, a trial raises, its outputs are
        unreadable), for each such problem. A broken reference is the problem's fault, never a candidate's:
        callers leave those problems out (and report them) instead of judging candidates against them. The
        references that run stay with the judges, so the candidates' verdicts reuse them. A reference that ran
        before under the same settings is remembered (signed, in the cache) and not run again: an evaluation cut
        short and started over (a KernelBench level at full size outlasts a preemptible worker) repeats neither
        its verdicts nor its references' trials — each is remembered as soon as it ran, so a check cut short
        keeps what it did. Failures are always checked again: they may be the machine's. `on_checked(problem id)`
        after each problem (a progress bar's advance). A reference this pool already ran for a verdict counts as
        checked (an evaluation judges first and checks after, so a reference too large to keep runs once, not
        once for its check and again for its candidates). `keep=False` when no verdict follows (an evaluation's
        check after its judging): the trials' bytes stay in their sandboxes and nothing is kept
        (Judge.check_reference)."""
        problems = list(problems)
        by_id = {p.id: p for p in problems}
        known = set()
        for p in problems:
            if self._ran_here(p.id):  # ran for a verdict: remembered like a check's run
                known.add(p.id)
                if self.config.use_cache:
                    self.cache.remember_reference_ran(p, self.config)
            elif self.config.use_cache and self.cache.reference_ran(p, self.config):
                known.add(p.id)
        for pid in known:
            if on_checked:
                on_checked(pid)
        broken = {}
        unknown = sorted((p for p in problems if p.id not in known), key=measured_trial_bytes)  # as verify_many
        for pid, why in self._reference_errors(unknown, keep):
            if why is not None:
                broken[pid] = why
            elif self.config.use_cache:
                self.cache.remember_reference_ran(by_id[pid], self.config)
            if on_checked:
                on_checked(pid)
        return broken

    def reference_cost(self) -> dict[str, float]:
        """Seconds per phase summed over the references this pool ran so far ("references": how many, "total":
        their seconds), where the pool can see them (its judges are in this process); {} otherwise."""
        return {}

    def _ran_here(self, problem_id: str) -> bool:
        """Whether this pool ran the problem's reference already (False where it cannot see its judges)."""
        return False

    def timing_device(self) -> str | None:
        """The device model this pool's timed verdicts are measured on (Verdict.device), which keys them in the
        cache; None where untimed, or where the pool cannot tell (its judges are elsewhere)."""
        return None

    @abstractmethod
    def _reference_errors(self, problems: list[Problem], keep: bool) -> Iterator[tuple[str, str | None]]: ...

    @abstractmethod
    def _submit(self, problem: Problem, candidate: Candidate): ...

    @abstractmethod
    def _completed(self, handles: list) -> Iterator[Verdict | ReferenceBroken]: ...

    def close(self) -> None:
        pass

    def stop(self) -> None:
        """Cut the judgements in flight short now, waiting for none of them (their verdicts never reach the
        cache): the first thing a caller that is giving up does, before it records that it gave up. Pools that
        cannot cut them short do nothing here."""

    def abort(self) -> None:
        """Give up now (the caller was interrupted or failed): stop(), then close."""
        self.stop()
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


class LocalVerifierPool(VerifierPool):
    """N sandboxes at a time on this machine; each judgement happens in its own sandbox process."""

    def __init__(self, config: VerifierConfig, cache_dir: str | Path, base_seed: int = 0):
        super().__init__(config, cache_dir, base_seed)
        self.workers = default_workers(config)
        self.judge = Judge(config, self.cache_dir, base_seed)
        if config.backend == "cuda":
            # Builds need only CPUs and trials share a GPU well, so many candidates are in flight; timing
            # takes its GPU alone (Devices.timing). Each build runs nvcc and g++ at once: half the cores
            # in flight keeps the CPUs busy without queueing (latency = in flight / throughput).
            self.devices = Devices.gpus(list(range(self.workers)))
            threads = max(self.workers, config.compile_workers or max(1, _cores() // 2))
        else:
            self.devices = Devices([0], exclusive_timing=False)
            threads = self.workers
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="verifier")

    def _submit(self, problem: Problem, candidate: Candidate) -> Future:
        return self._executor.submit(judged, self.judge, problem, candidate, self.devices)

    def reference_cost(self) -> dict[str, float]:
        return self.judge.reference_cost()

    def activity(self) -> str:
        budget = self.judge.sandboxes.memory_budget
        line = describe(in_flight())
        line += f"; memory promised (sandboxes, the judge's copies) {budget.used_mb / 1024:.1f} of " \
                f"{budget.capacity_mb / 1024:.1f} GB"
        for index, capacity in sorted(budget.gpu_capacity_mb.items()):  # verifier.gpu_memory_admission
            line += f"; GPU {index} memory promised {budget.gpu_used_mb.get(index, 0) / 1024:.1f} of " \
                    f"{capacity / 1024:.1f} GB"
        resident, available = memory_now_mb()  # the judge's own memory is what no sandbox limit bounds
        kept = self.judge.kept_memory.used_bytes / 2**30
        line += f"; judge resident {resident / 1024:.1f} GB (kept tensors {kept:.1f} GB), machine available " \
                f"{available / 1024:.1f} GB"
        if stopped := self.judge.sandboxes.stopped():
            line += f"; {stopped} sandboxes stopped while a timing holds their device"
        if holders := self.devices.lock_holders():  # another process's hold keeps a timing here waiting
            line += "; device locks held by " + ", ".join(holders)
        if self.judge.device == "cuda" and torch.cuda.is_initialized():
            # the judge's own (its comparisons, the expected outputs it keeps there): no sandbox limit bounds it
            line += "; the judge's GPU memory " + ", ".join(
                f"{index}: {torch.cuda.memory_allocated(index) / 2**30:.1f} GB allocated, "
                f"{torch.cuda.memory_reserved(index) / 2**30:.1f} reserved, peak "
                f"{torch.cuda.max_memory_allocated(index) / 2**30:.1f}" for index in sorted(set(self.devices.indices)))
        if self.judge.device == "cuda" and (gpu := self.judge.sandboxes.gpu_memory()):
            line += "; " + gpu
        return line

    def _ran_here(self, problem_id: str) -> bool:
        return self.judge.reference_ran(problem_id)

    def timing_device(self) -> str | None:
        if not self.config.timed:
            return None
        return timing_device_name(self.judge.device_name(index) for index in self.devices.indices)

    def _reference_errors(self, problems: list[Problem], keep: bool) -> Iterator[tuple[str, str | None]]:
        # as each ends, not in order: a progress bar held by one slow check would say nothing of the rest
        futures = {self._executor.submit(reference_error, self.judge, p, self.devices, keep): p for p in problems}
        for future in in_completion_order(list(futures)):
            yield futures[future].id, future.result()

    def _completed(self, handles: list[Future]) -> Iterator[Verdict | ReferenceBroken]:
        for future in in_completion_order(handles):
            yield future.result()

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
        self.judge.close()

    def stop(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)  # what has not started never will
        self.judge.abort()  # what has: its sandboxes die and its waits for memory end, so each returns at once


def timing_device_name(models: Iterable[str]) -> str:
    """The name that keys a pool's timed verdicts: its GPUs' model, or every model of a mixed pool joined by "+"
    (a verdict timed on any one of its GPUs is then reused only by a pool of the same mix, never taken for one
    model's timing)."""
    return "+".join(sorted(set(models)))


def in_completion_order(futures: list[Future]) -> Iterator[Future]:
    """Each future as it completes; those found complete together in the order they were submitted (a set's
    order would make the same batch come back differently from run to run)."""
    submitted = {future: k for k, future in enumerate(futures)}
    pending = set(futures)
    while pending:
        done, pending = wait(pending, return_when=FIRST_COMPLETED)
        yield from sorted(done, key=submitted.__getitem__)


def reference_error(judge: Judge, problem: Problem, devices: Devices | None = None, keep: bool = True) -> str | None:
    """Why the judge cannot run this problem's reference, or None when it can (its trials are then kept, with
    `keep`); on `devices` (a GPU pool's), its trials never beside a timing there."""
    try:
        judge.check_reference(problem, devices=devices, keep=keep)
    except ReferenceError as exc:
        return str(exc)
    return None


def make_pool(config: VerifierConfig, cache_dir: str | Path, base_seed: int = 0) -> VerifierPool:
    """The pool `verifier.pool` names: `local` (default) or `ray` (`verifier.ray_address`, or a local Ray)."""
    if config.pool == "ray":
        from verifier.ray_pool import RayVerifierPool

        return RayVerifierPool(config, cache_dir, base_seed, address=config.ray_address)
    return LocalVerifierPool(config, cache_dir, base_seed)
