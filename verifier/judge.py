"""Judge one candidate against one problem: static checks, sandboxed build and run,
comparison, legality, timing -> a `Verdict`.

The judge holds the reference and its outputs; the sandbox process (verifier/sandbox.py)
holds only the candidate and the inputs of the current trial.
"""

from __future__ import annotations

import ast
import multiprocessing
import itertools
import os
import re
import shutil
import signal
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from schemas.config import VerifierConfig
from schemas.records import Candidate, Problem, Verdict, VerdictCategory
from verifier.fastbuild import compiler_errors
from verifier.legality import check_source, forbidden_ops
from verifier.reference import ReferenceRunner, compare_outputs, dumps, layout_mismatch, loads
from verifier.tensor_io import TamperedData, describe, io_root, nbytes_of, read_tensors, same_bytes, write_tensors

INIT_SEED = 42
SPEEDUP_SANITY_BOUND = 1000.0  # a claimed speedup above this is re-measured before it is believed


def _forkserver_context():
    ctx = multiprocessing.get_context("forkserver")
    # The server imports torch and the sandbox (warmed up) once; every sandbox forks from it in
    # milliseconds. Nothing preloaded may probe CUDA, or forked sandboxes cannot use the GPU.
    ctx.set_forkserver_preload(["torch", "verifier.sandbox"])
    return ctx


class _Phases:
    """Wall-clock seconds spent in each phase of one judgement (reported in Verdict.phases)."""

    def __init__(self):
        self._last = time.perf_counter()
        self.seconds: dict[str, float] = {}

    def mark(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = round(self.seconds.get(name, 0.0) + now - self._last, 4)
        self._last = now


class _SharedExclusive:
    """Many holders share it, or one holds it alone; a waiting exclusive holder goes first."""

    def __init__(self):
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._waiting = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            self._cond.wait_for(lambda: not self._exclusive and not self._waiting)
            self._shared += 1
        try:
            yield
        finally:
            with self._cond:
                self._shared -= 1
                self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            self._waiting += 1
            self._cond.wait_for(lambda: not self._exclusive and self._shared == 0)
            self._waiting -= 1
            self._exclusive = True
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()


class Devices:
    """Where a pool's sandboxes run. Builds need no device and correctness trials of many candidates
    share a GPU; timing takes its GPU alone, waiting for the trials in flight there to finish."""

    def __init__(self, indices: list[int], exclusive_timing: bool):
        self.indices = indices
        self._next = itertools.count()
        self._locks = {i: _SharedExclusive() for i in set(indices)} if exclusive_timing else {}

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


def _cuda_arch(device_index: int) -> str:
    major, minor = torch.cuda.get_device_capability(device_index)
    return f"{major}{minor}"


class SandboxStartError(RuntimeError):
    """The sandbox never came up: an infrastructure fault, never the candidate's."""


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


class Judge:
    """Verifies candidates one at a time; thread-safe, so a pool can share one."""

    def __init__(self, config: VerifierConfig, cache_dir: str | Path, base_seed: int = 0):
        self.config = config
        self.cache_dir = Path(cache_dir)
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self.base_seed = base_seed
        self.device = config.backend
        if self.device == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("verifier.backend is cuda but no CUDA device is visible; use backend: cpu")
        self._references: dict[str, ReferenceRunner] = {}
        self._ctx = _forkserver_context()
        self._spares: dict[int, list[tuple[Any, Any]]] = {}
        self._spares_lock = threading.Lock()
        self._closed = False

    def references(self, device_index: int) -> ReferenceRunner:
        key = f"cuda:{device_index}" if self.device == "cuda" else "cpu"
        if key not in self._references:
            self._references[key] = ReferenceRunner(key)
        return self._references[key]

    def device_name(self, device_index: int) -> str:
        return torch.cuda.get_device_name(device_index) if self.device == "cuda" else "cpu"

    # -- public ---------------------------------------------------------------------------
    def verify(self, problem: Problem, candidate: Candidate, devices: Devices | None = None) -> Verdict:
        """Judge one candidate on a device `devices` assigns (GPU 0 / the CPU when None)."""
        start = time.perf_counter()
        devices = devices or Devices([0], exclusive_timing=False)
        device_index = devices.assign()
        phases = _Phases()
        outcome = self._static(candidate.source) or self._dynamic(problem, candidate, devices, device_index, phases)
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
        )

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

    # -- sandboxed build and run ----------------------------------------------------------
    def _dynamic(self, problem: Problem, candidate: Candidate, devices: Devices, device_index: int,
                 phases: _Phases) -> _Outcome:
        cfg = self.config
        scratch = Path(tempfile.mkdtemp(prefix=f"cand-{candidate.id[:8]}-", dir=self._scratch_root()))
        io_dir = Path(tempfile.mkdtemp(prefix=f"kd-io-{candidate.id[:8]}-", dir=io_root(scratch)))
        job = {
            "source": candidate.source,
            "scratch_dir": str(scratch),
            "io_dir": str(io_dir),
            "build_cache_dir": str(self.cache_dir),
            "fast_build": cfg.fast_build,
            "memory_limit_mb": cfg.memory_limit_mb,
            "device": self.device,
            "init_inputs": dumps(self.references(0).init_inputs(problem)),
            "init_seed": INIT_SEED,
            "compile_timeout_s": cfg.compile_timeout_s,
            "cuda_arch": _cuda_arch(device_index) if self.device == "cuda" else None,
        }
        proc, parent_conn = self._take_sandbox(device_index)
        try:
            parent_conn.send(job)
            return self._drive(proc, parent_conn, problem, scratch, io_dir, candidate.source, devices, device_index,
                               phases)
        finally:
            _terminate(proc, parent_conn)
            shutil.rmtree(scratch, ignore_errors=True)
            shutil.rmtree(io_dir, ignore_errors=True)
            phases.mark("teardown")

    # -- sandboxes started ahead ------------------------------------------------------------
    def _start_sandbox(self, device_index: int) -> tuple[Any, Any]:
        from verifier.sandbox import spare_main

        parent_conn, child_conn = self._ctx.Pipe()
        proc = self._ctx.Process(target=spare_main, args=(child_conn, self.device, device_index), daemon=True)
        proc.start()
        child_conn.close()
        return proc, parent_conn

    def _take_sandbox(self, device_index: int) -> tuple[Any, Any]:
        """A spare sandbox for this device if one is waiting (its replacement starts in the background),
        else a fresh one."""
        taken = None
        with self._spares_lock:
            spares = self._spares.setdefault(device_index, [])
            while spares and taken is None:
                proc, conn = spares.pop(0)
                if proc.is_alive():
                    taken = (proc, conn)
                else:
                    conn.close()
        if self.config.spare_sandboxes:
            threading.Thread(target=self._refill, args=(device_index,), daemon=True).start()
        return taken or self._start_sandbox(device_index)

    def _refill(self, device_index: int) -> None:
        with self._spares_lock:
            wanted = self.config.spare_sandboxes - len(self._spares.setdefault(device_index, []))
        for _ in range(max(0, wanted)):
            sandbox = self._start_sandbox(device_index)
            with self._spares_lock:
                if self._closed or len(self._spares[device_index]) >= self.config.spare_sandboxes:
                    _terminate(*sandbox)
                    return
                self._spares[device_index].append(sandbox)

    def spare_pids(self, device_index: int = 0) -> list[int]:
        """Process ids of the live sandboxes waiting for a candidate on this device."""
        with self._spares_lock:
            return [proc.pid for proc, _ in self._spares.get(device_index, []) if proc.is_alive()]

    def close(self) -> None:
        """Stop the spare sandboxes (each judgement's own sandbox is always stopped when it ends)."""
        with self._spares_lock:
            self._closed = True
            spares = [s for group in self._spares.values() for s in group]
            self._spares.clear()
        for proc, conn in spares:
            _terminate(proc, conn)

    def _scratch_root(self) -> Path:
        root = self.cache_dir / "scratch"
        root.mkdir(parents=True, exist_ok=True)
        return root

    def _drive(self, proc, conn, problem: Problem, scratch: Path, io_dir: Path, candidate_source: str,
               devices: Devices, device_index: int, phases: _Phases) -> _Outcome:
        cfg = self.config
        hello = _receive(proc, conn, 120.0)
        phases.mark("start")
        if hello is None or hello[0] != "hello":
            raise SandboxStartError(f"the sandbox process failed to start (got {hello!r}); if you run the verifier "
                                    "from a script, guard its entry point with `if __name__ == '__main__':`")
        msg = _receive(proc, conn, cfg.compile_timeout_s)
        phases.mark("build")
        if msg is None:
            return _Outcome(VerdictCategory.timeout, f"building and loading the candidate took longer than "
                            f"{cfg.compile_timeout_s:g} s", compile_seconds=cfg.compile_timeout_s)
        if msg[0] == "died":
            return _Outcome(VerdictCategory.runtime_error, _death_detail(msg[1], scratch, "while loading"))
        if msg[0] == "garbled" or not _well_formed_load_reply(msg):
            return _tampered(str(msg[1] if msg[0] == "garbled" else msg)[:120], 0.0)
        if msg[0] == "load_error":
            info = msg[1]
            if info["kind"] == "compile":
                errors = [map_native_line(e, candidate_source) for e in compiler_errors(info["log"])]
                text = "\n".join(errors) if errors else info["log"][-1500:]
                return _Outcome(VerdictCategory.compile_error, f"compilation failed:\n{text}",
                                compile_seconds=info.get("seconds", 0.0))
            if info["kind"] == "harness":
                raise RuntimeError(f"sandbox setup failed: {info['message']}")
            if info["kind"] == "init":
                return _Outcome(VerdictCategory.runtime_error, f"error while constructing ModelNew:\n{info['message']}",
                                compiled=True, compile_seconds=info.get("seconds", 0.0))
            return _Outcome(VerdictCategory.compile_error, f"error while loading the module:\n{info['message']}",
                            compile_seconds=info.get("seconds", 0.0))
        compile_seconds = msg[1]["compile_seconds"]
        references = self.references(device_index)
        trials = [references.trial(problem, k, self.base_seed, INIT_SEED) for k in range(cfg.trials)]
        phases.mark("reference")
        with devices.trials(device_index):
            outcome = self._trials(proc, conn, trials, scratch, io_dir, compile_seconds)
        phases.mark("trials")
        if outcome is not None:
            return outcome
        with devices.timing(device_index):
            phases.mark("wait_for_device")
            speedup, speedup_compile = self._speedup(proc, conn, problem, trials[0], references, io_dir)
        phases.mark("timing")
        detail = f"all {len(trials)} trials correct"
        if speedup:
            detail += f"; speedup vs eager {speedup:.2f}x"
        if speedup_compile:
            detail += f", vs torch.compile {speedup_compile:.2f}x"
        return _Outcome(VerdictCategory.passed, detail, compiled=True, q=1.0, speedup=speedup,
                        speedup_compile=speedup_compile, compile_seconds=compile_seconds)

    def _trials(self, proc, conn, trials, scratch: Path, io_dir: Path, compile_seconds: float) -> _Outcome | None:
        """Run the correctness trials; an outcome if the candidate failed, else None."""
        cfg = self.config
        passed = 0
        first_failure = ""
        earlier: list[tuple[Any, list[torch.Tensor]]] = []  # (trial, candidate outputs) seen so far
        compiled = dict(compiled=True, compile_seconds=compile_seconds)
        for index, trial in enumerate(trials):
            conn.send(("trial", index, write_tensors(io_dir / "inputs.bin", trial.host_inputs())))
            msg = _receive(proc, conn, cfg.run_timeout_s)
            if msg is None:
                return _Outcome(VerdictCategory.timeout, f"trial {index}: forward did not finish within "
                                f"{cfg.run_timeout_s:g} s", **compiled)
            if msg[0] == "died":
                return _Outcome(VerdictCategory.runtime_error, _death_detail(msg[1], scratch, f"in trial {index}"),
                                **compiled)
            if msg[0] == "trial_error":
                return _Outcome(VerdictCategory.runtime_error, f"trial {index}: forward raised:\n{msg[2]}", **compiled)
            try:
                result = _trial_result(msg, index)
                illegal = self._legality(result)
                if illegal:
                    rule, detail = illegal
                    return _Outcome(VerdictCategory.illegal, f"illegal ({rule}): {detail}", legal=False, rule=rule,
                                    **compiled)
                host_inputs = [x for x in trial.host_inputs() if isinstance(x, torch.Tensor)]
                after = read_tensors(io_dir / "outputs.bin", result["inputs_after"], nbytes_of(host_inputs))
                if len(after) != len(host_inputs) or not all(map(same_bytes, host_inputs, after)):
                    return _Outcome(VerdictCategory.illegal, "illegal (input-mutation): forward modified its input "
                                    "tensors in place", legal=False, rule="input-mutation", **compiled)
                mismatch = layout_mismatch(trial.expected, describe(result["outputs"]))
                if mismatch is None:
                    outputs = [o.to(e.device) for o, e in zip(
                        read_tensors(io_dir / "outputs.bin", result["outputs"], nbytes_of(trial.expected)),
                        trial.expected)]
                    if _replays_earlier_output(trial, outputs, earlier):
                        return _Outcome(VerdictCategory.illegal, f"illegal (output-caching): trial {index} returned "
                                        "the same output as an earlier trial for different inputs", legal=False,
                                        rule="output-caching", **compiled)
                    earlier.append((trial, outputs))
                    mismatch = compare_outputs(trial.expected, outputs, cfg.tolerance)
            except TamperedData as exc:
                return _tampered(str(exc), compile_seconds)
            if mismatch is None:
                passed += 1
            elif not first_failure:
                first_failure = f"trial {index} (seed {trial.seed}): {mismatch.message}"
        q = passed / len(trials)
        if passed < len(trials):
            category = VerdictCategory.partial if passed else VerdictCategory.wrong_output
            return _Outcome(category, f"{passed}/{len(trials)} trials correct. First failure: {first_failure}",
                            q=q, **compiled)
        return None

    def _legality(self, result: dict[str, Any]) -> tuple[str, str] | None:
        bad = forbidden_ops(result["ops"])
        if bad:
            return "torch-compute", (f"ModelNew.forward called torch op(s) {', '.join(bad[:5])}; the computation "
                                     "must be done by your own kernel (allowed glue: allocation, views, .contiguous())")
        if result["own_calls"] is None:
            return "no-own-kernel", "the candidate compiled no extension of its own (load_inline)"
        if result["own_calls"] == 0:
            return "no-own-kernel", "ModelNew.forward never called a function of its compiled extension"
        return None

    def _speedup(self, proc, conn, problem: Problem, trial, references: ReferenceRunner,
                 io_dir: Path) -> tuple[float | None, float | None]:
        """Candidate and baselines timed the same way; an implausible speedup is measured once more."""
        cfg = self.config
        budget = cfg.run_timeout_s * (cfg.timing_runs + cfg.timing_warmup)
        eager = references.baseline_seconds(problem, trial.inputs, INIT_SEED, cfg.timing_warmup, cfg.timing_runs)
        compiled = None
        if self.device == "cuda" and cfg.compare_torch_compile:
            compiled = references.baseline_seconds(problem, trial.inputs, INIT_SEED, cfg.timing_warmup,
                                                   cfg.timing_runs, compiled=True)
        measured: list[float] = []
        metas = write_tensors(io_dir / "inputs.bin", trial.host_inputs())  # the trials left their own there
        for _ in range(2):
            conn.send(("time", metas, cfg.timing_warmup, cfg.timing_runs))
            msg = _receive(proc, conn, budget)
            if msg is None or msg[0] != "timed" or len(msg) != 2 or not isinstance(msg[1], dict) \
                    or not isinstance(msg[1].get("seconds"), float):
                return None, None
            measured.append(msg[1]["seconds"])
            if eager / max(measured[-1], 1e-9) <= SPEEDUP_SANITY_BOUND:
                break
        seconds = max(measured)  # when re-measured, believe the slower
        return eager / max(seconds, 1e-9), (compiled / max(seconds, 1e-9)) if compiled else None


MAX_MESSAGE_BYTES = 64 << 20  # control messages are small; tensors travel through verifier/tensor_io.py


def _receive(proc, conn, timeout_s: float):
    """Next message from the sandbox, ("died", exitcode) if it died, ("garbled", why) if it is not one
    the sandbox's own code sends, None on timeout. Decoded weights-only: a candidate that writes its
    own bytes into the pipe cannot make the judge run code."""
    deadline = time.monotonic() + timeout_s
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        if conn.poll(min(remaining, 0.5)):
            try:
                blob = conn.recv_bytes(MAX_MESSAGE_BYTES)
            except (EOFError, OSError):
                proc.join(timeout=5)
                return ("died", proc.exitcode)
            try:
                message = loads(blob)
            except Exception as exc:
                return ("garbled", f"undecodable message ({type(exc).__name__})")
            if not isinstance(message, tuple) or not message or not isinstance(message[0], str):
                return ("garbled", f"malformed message {str(message)[:80]!r}")
            return message
        if not proc.is_alive():
            if conn.poll(0):
                continue
            return ("died", proc.exitcode)


def _death_detail(exitcode: int | None, scratch: Path, when: str) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            how = f"was killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            how = f"was killed by signal {-exitcode}"
    else:
        how = f"exited with code {exitcode} without reporting"
    log = ""
    log_path = scratch / "candidate.log"
    if log_path.exists():
        log = log_path.read_text(errors="replace")[-800:].strip()
    return f"the candidate process {how} {when}" + (f"; its last output:\n{log}" if log else "")


def _terminate(proc, conn) -> None:
    try:
        if proc.is_alive():
            conn.send(("stop",))
            proc.join(timeout=2)
    except (OSError, BrokenPipeError, ValueError):
        pass
    if proc.is_alive() or proc.exitcode is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.kill()
        proc.join(timeout=5)
    conn.close()


def _replays_earlier_output(trial, outputs: list[torch.Tensor], earlier) -> bool:
    """Same candidate output as an earlier trial although the reference's outputs differ."""
    for old_trial, old_outputs in earlier:
        same_candidate = len(old_outputs) == len(outputs) and all(
            a.shape == b.shape and a.dtype == b.dtype and torch.equal(a, b) for a, b in zip(old_outputs, outputs))
        same_reference = all(torch.equal(a.cpu(), b.cpu()) for a, b in zip(old_trial.expected, trial.expected))
        if same_candidate and not same_reference:
            return True
    return False


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


def _trial_result(msg: tuple, index: int) -> dict[str, Any]:
    """The sandbox's report of one trial, its shape checked (the candidate shares the sandbox's process)."""
    fields = {"outputs": list, "inputs_after": list, "ops": dict, "own_calls": (int, type(None)), "seconds": float}
    if len(msg) != 3 or msg[:2] != ("trial_out", index) or not isinstance(msg[2], dict) or set(msg[2]) != set(fields) \
            or not all(isinstance(msg[2][k], t) for k, t in fields.items()) \
            or not all(isinstance(k, str) and type(v) is int for k, v in msg[2]["ops"].items()):
        raise TamperedData(f"unexpected reply to trial {index}: {str(msg)[:120]}")
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


def _tampered(why: str, compile_seconds: float) -> _Outcome:
    return _Outcome(VerdictCategory.illegal, f"illegal (harness-tampering): the sandbox's channel to the judge "
                    f"carried data the harness never sends ({why})", compiled=True, legal=False,
                    rule="harness-tampering", compile_seconds=compile_seconds)


def _bound(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    return text[:head] + "\n... [truncated] ...\n" + text[-(limit - head - 24):]
