"""The judge's side of sandbox processes: start them (some ahead of time), talk to them, end them.

A `Sandbox` is one process forked from the forkserver (verifier/sandbox.py runs in it) with its home,
uid and cgroups (verifier/isolation.py). Everything it sends is decoded weights-only and checked by
the reader; everything it wrote is read through `open_sandbox_file`. `close()` kills its whole tree
(keeper, jail, and whatever is left in its cgroups) and removes its directories.
"""

from __future__ import annotations

import array
import multiprocessing
import multiprocessing.spawn as mp_spawn
from multiprocessing.reduction import send_handle
import os
import re
import reprlib
import signal
import socket
import threading
import time
import weakref
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import torch

from schemas.config import VerifierConfig
from verifier.isolation import (Cgroups, Isolation, MemoryBudget, MemoryReservation, ReservationCancelled, SandboxHome,
                                memory_now_mb, read_sandbox_text, sandbox_memory_mb)
from verifier.jail import ISOLATION_FAILED_EXIT
from verifier.reference import loads
from verifier.tensor_io import HANDED_OVER

MAX_MESSAGE_BYTES = 64 << 20  # control messages are small; tensors travel through verifier/tensor_io.py
START_TIMEOUT_S = 120.0
RUN_TASKS = 256  # processes + threads of a run or reference sandbox (CUDA and torch start a few threads)
BUILD_TASKS = 512
# the kinds `Sandbox.receive` makes itself: a sandbox that sends one is forging the judge's own word (a "died"
# with a code of its choosing, a "garbled" without a reason)
JUDGE_KINDS = frozenset({"died", "garbled"})


def quote(value: Any, limit: int = 120) -> str:
    """A short, safe rendering of something a sandbox sent, for a verdict or an error: never raises (a message
    nested thousands deep has a repr past Python's recursion limit; a tensor's may fail)."""
    quoter = reprlib.Repr()
    quoter.maxlevel, quoter.maxstring, quoter.maxother = 4, limit, limit
    try:
        return quoter.repr(value)[:limit]
    except Exception:  # noqa: BLE001 - whatever it is, the judge goes on
        return f"<unprintable {type(value).__name__}>"


class SandboxStartError(RuntimeError):
    """The sandbox never came up: an infrastructure fault, never the candidate's."""


class IsolationUnavailable(SandboxStartError):
    """This machine cannot build the sandbox's walls (no namespaces, no root)."""


class SandboxStarved(SandboxStartError):
    """The OOM killer killed a sandbox that stayed within its own memory limit: the machine (or the sandboxes'
    share of it) ran out. No verdict on the code inside: the judgement is made again."""


class SandboxOverEstimate(SandboxStarved):
    """A run sandbox capped at its problem's memory estimate (verifier.memory_admission: reference), below its
    own limit, was killed at that cap: no verdict on the code, which is judged again with its whole limit."""


_START_LOCK = threading.Lock()


@contextmanager
def _without_main_module():
    """Start processes without multiprocessing's re-import of the program's `__main__` in the child (it does
    that for spawn and forkserver children). A sandbox must run none of the user's code, and a script that
    imports modules touching CUDA at top level would leave the forked sandbox unable to use the GPU."""
    with _START_LOCK:  # read the original under the lock: read outside it, a waiting thread would capture the
        original = mp_spawn.get_preparation_data  # holder's wrapper and put it back, one layer more each race

        def preparation_data(name):
            data = original(name)
            data.pop("init_main_from_path", None)
            data.pop("init_main_from_name", None)
            return data

        mp_spawn.get_preparation_data = preparation_data
        try:
            yield
        finally:
            mp_spawn.get_preparation_data = original


def _forkserver_context():
    ctx = multiprocessing.get_context("forkserver")
    # The server imports torch and the sandbox (warmed up) once; every sandbox forks from it in
    # milliseconds. Nothing preloaded may probe CUDA, or forked sandboxes cannot use the GPU.
    ctx.set_forkserver_preload(["torch", "verifier.sandbox", "pyseccomp"])
    return ctx


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (OSError, ValueError):
        return []


def _tree_cpu_seconds(pid: int) -> float | None:
    """CPU seconds of a live process and its descendants, as /proc counts them (user + system, reaped children
    included); None if the process is gone."""
    total, found, stack = 0.0, False, [pid]
    while stack:
        current = stack.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        found = True
        total += sum(int(x) for x in fields[11:15]) / _CLOCK_TICKS  # utime stime cutime cstime
        stack.extend(_children(current))
    return total if found else None


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_cpu_sink = threading.local()


@contextmanager
def cpu_accounting(add):
    """Sandboxes that this thread closes meanwhile report the CPU seconds they used: `add(role, seconds)`.
    One verdict's accounting (the judge's thread runs a verdict from its first sandbox to its last)."""
    previous = getattr(_cpu_sink, "add", None)
    _cpu_sink.add = add
    try:
        yield
    finally:
        _cpu_sink.add = previous


def nvidia_smi_memory(timeout_s: float = 10.0) -> tuple[list[tuple[int, int]], list[tuple[int, int, int]]]:
    """([(pid, MB)] of the GPUs' compute processes, [(GPU index, MB used, MB total)]) as nvidia-smi reports
    them; ([], []) where it cannot (no nvidia-smi, no GPU, a driver that does not answer in time)."""
    import subprocess

    def query(*args: str) -> list[list[str]]:
        out = subprocess.run(["nvidia-smi", *args, "--format=csv,noheader,nounits"], capture_output=True, text=True,
                             timeout=timeout_s, check=True).stdout
        return [[field.strip() for field in line.split(",")] for line in out.splitlines() if line.strip()]

    try:
        gpus = [(int(i), int(used), int(total)) for i, used, total in query("--query-gpu=index,memory.used,memory.total")]
        apps = [(int(pid), int(mb)) for pid, mb in query("--query-compute-apps=pid,used_memory")
                if pid.isdigit() and mb.isdigit()]
    except (OSError, subprocess.SubprocessError, ValueError):
        return [], []
    return apps, gpus


def cgroup_leaf(pid: int) -> str | None:
    """The last component of the cgroup (v2, else v1's memory hierarchy) process `pid` is in; None if gone."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    paths = {fields[1]: fields[2] for fields in (line.split(":", 2) for line in lines) if len(fields) == 3}
    path = paths.get("") or paths.get("memory")
    return (Path(path).name or None) if path else None  # the root cgroup has no name: no sandbox's


def describe_gpu_memory(apps: list[tuple[int, int]], gpus: list[tuple[int, int, int]],
                        boxes: list[tuple[int, tuple[str, ...], str]], leaf_of: Callable[[int], str | None]) -> str:
    """`GPU memory 134.5 of 139.8 GB used; sandboxes' 120.3 GB: reference 3 (40.1 GB), run stopped 6 (50.0 GB),
    ...; not sandboxes' 14.2 GB` — each GPU process counted for the sandbox (pid, cgroup leaf names, kind) it runs
    in: its own pid, or a process in its cgroup (a compiled reference's workers)."""
    by_pid = {pid: kind for pid, _, kind in boxes}
    by_leaf = {leaf: kind for _, leaves, kind in boxes for leaf in leaves}
    kinds: dict[str, list[int]] = {}
    others: list[int] = []
    for pid, mb in apps:
        kind = by_pid.get(pid) or by_leaf.get(leaf_of(pid) or "")
        (others if kind is None else kinds.setdefault(kind, [])).append(mb)
    used, total = sum(g[1] for g in gpus), sum(g[2] for g in gpus)
    ours = sum(sum(v) for v in kinds.values())
    parts = ", ".join(f"{kind} {len(mbs)} ({sum(mbs) / 1024:.1f} GB)" for kind, mbs in sorted(kinds.items()))
    # what nvidia-smi names but no sandbox owns (the policy, another job; a pid from another namespace), and
    # what it does not name at all (contexts it cannot attribute)
    return (f"GPU memory {used / 1024:.1f} of {total / 1024:.1f} GB used; sandboxes' {ours / 1024:.1f} GB"
            f"{': ' + parts if parts else ''}; not sandboxes' {(used - ours) / 1024:.1f} GB "
            f"({len(others)} other processes {sum(others) / 1024:.1f} GB)")


def _threads_of(leaf: Path) -> int:
    """The threads of a cgroup's processes, from /proc (every one counts against the jail's RLIMIT_NPROC)."""
    total = 0
    try:
        pids = (leaf / "cgroup.procs").read_text().split()
    except OSError:
        return 0
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        found = re.search(r"^Threads:\s+(\d+)", status, re.M)
        total += int(found.group(1)) if found else 0
    return total


class Sandbox:
    """One sandbox process and the judge's end of its channel."""

    def __init__(self, role: str, proc, conn, home: SandboxHome, isolation: Isolation, device_index: int):
        self.role, self.proc, self.conn, self.home = role, proc, conn, home
        self.isolation = isolation
        self.device_index = device_index
        self._closed = False
        self._awaiting = False  # a request is unanswered: the sandbox is busy (or hung), don't wait on it
        self._unsent: str | None = None  # why the judge could no longer write to its channel
        self.reservation: MemoryReservation | None = None  # its judgement's share of the memory budget
        self.capped_mb: int | None = None  # its cgroup's limit lowered to its judgement's share (memory_admission)
        self._paused_since: float | None = None  # stopped (SIGSTOP) while another is timed on its device
        self._paused_total = 0.0
        self._pause_lock = threading.Lock()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.is_alive()

    def peak_memory_bytes(self) -> int | None:
        """The sandbox's host-memory high-water mark, as the kernel counts it (nothing the sandbox says): its
        cgroup's peak (tmpfs pages it wrote included), else the largest resident peak of its processes."""
        for leaf in self.home.cgroups:
            for name in ("memory.peak", "memory.max_usage_in_bytes"):
                try:
                    return int((Path(leaf) / name).read_text().split()[0])
                except (OSError, ValueError, IndexError):
                    continue
        peak = None
        for pid in [self.proc.pid, *_children(self.proc.pid)]:
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak or 0, int(line.split()[1]) * 1024)
        return peak

    def resources(self) -> str:
        """What the sandbox and the machine held, as the kernel counts it, for a failure no code of its explains (a
        compiled baseline's first copy to the GPU failing with cudaErrorOperatingSystem at random on busy boxes):
        its cgroup's memory now, at peak and at its limit, its OOM events and tasks, and the machine's available
        memory."""
        parts = []
        for leaf in map(Path, self.home.cgroups):
            for label, name in (("memory", "memory.current"), ("peak", "memory.peak"), ("limit", "memory.max"),
                                ("memory", "memory.usage_in_bytes"), ("peak", "memory.max_usage_in_bytes"),
                                ("limit", "memory.limit_in_bytes"), ("tasks", "pids.current"),
                                ("task limit", "pids.max")):
                try:
                    text = (leaf / name).read_text().split()[0]
                except (OSError, IndexError):
                    continue
                parts.append(f"{label} {int(text) >> 20} MB" if text.isdigit() and "memory" in name
                             else f"{label} {text}")
            for name, keys in (("memory.events", ("max", "oom", "oom_kill")), ("memory.oom_control", ("oom_kill",))):
                try:  # v2's events, v1's OOM control
                    events = dict(line.split() for line in (leaf / name).read_text().splitlines())
                except (OSError, ValueError):
                    continue
                parts.append("memory events " + ",".join(f"{k}={events.get(k, '0')}" for k in keys))
            threads = _threads_of(leaf)
            if threads:  # RLIMIT_NPROC counts threads too, where the cgroup has no pids controller (the H100 boxes)
                parts.append(f"threads {threads} (RLIMIT_NPROC {BUILD_TASKS if self.role == 'build' else RUN_TASKS})")
        _, available = memory_now_mb()
        parts.append(f"machine available {available} MB")
        return "; ".join(parts)

    def _cgroup_cpu_seconds(self) -> float | None:
        """What its cgroup counts (exited processes included): v2's cpu.stat, v1's cpuacct where it has one."""
        for leaf in map(Path, self.home.cgroups):
            try:
                for line in (leaf / "cpu.stat").read_text().splitlines():
                    if line.startswith("usage_usec "):
                        return int(line.split()[1]) / 1e6
            except (OSError, ValueError, IndexError):
                pass
            try:
                return int((leaf / "cpuacct.usage").read_text()) / 1e9
            except (OSError, ValueError):
                pass
        return None

    def pause(self) -> None:
        """Stop every process of its tree (SIGSTOP, which no code can catch or ignore: to its process group and
        to each process of its cgroups, where one left the group): nothing in it runs — no thread spinning on a
        CPU, no kernel launched — until resume(). Its time stopped does not count against its limits (receive,
        clock)."""
        with self._pause_lock:
            if self._paused_since is not None or self._closed or self.proc.exitcode is not None:
                return
            self._paused_since = time.monotonic()
            self._signal_tree(signal.SIGSTOP)

    def resume(self) -> None:
        with self._pause_lock:
            if self._paused_since is None:
                return
            if not self._closed and self.proc.exitcode is None:
                self._signal_tree(signal.SIGCONT)
            self._paused_total += time.monotonic() - self._paused_since
            self._paused_since = None

    def _signal_tree(self, sig: signal.Signals) -> None:
        """`sig` to its process group and keeper, and to each process of its cgroups (one that left the group)."""
        self._signal_group(sig)
        for pid in Cgroups.processes(self.home.cgroups):
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    @property
    def stopped(self) -> bool:
        """Whether it is stopped now (pause() without resume())."""
        return self._paused_since is not None

    def paused_seconds(self) -> float:
        """How long it has been stopped in all (now included, while it is)."""
        with self._pause_lock:
            since = self._paused_since
            return self._paused_total + (time.monotonic() - since if since is not None else 0.0)

    def clock(self) -> float:
        """time.monotonic() less the time it spent stopped: a deadline on this clock is the sandbox's own time."""
        return time.monotonic() - self.paused_seconds()

    def send(self, message: Any) -> None:
        """Write `message` to its channel. A channel it no longer reads — it exited, or shut its end for reading
        (a candidate's code can: the judge's next write fails with EPIPE) — raises nothing here: the next
        `receive` says so, as the candidate's doing."""
        self._written(lambda: self.conn.send(message))
        self._awaiting = True

    def send_descriptor(self, fd: int) -> None:
        """Hand the sandbox a duplicate of `fd` (SCM_RIGHTS over its channel, after the message that names it)."""
        self._written(lambda: send_handle(self.conn, fd, self.proc.pid))

    def _written(self, write: Callable[[], None]) -> None:
        if self._unsent is None:
            try:
                write()
            except OSError as exc:  # EPIPE, ECONNRESET: its end no longer reads; nothing more is sent
                self._unsent = f"{type(exc).__name__}: {exc.strerror or exc}"

    def receive_descriptor(self, timeout_s: float) -> int | None:
        """The one descriptor the sandbox hands over right after a message that announces it (SCM_RIGHTS on one
        byte, HANDED_OVER), close-on-exec here; None when none comes within `timeout_s` of its own time, the
        channel carries anything else there, or more than one came (the kernel closes those it could not
        deliver; any delivered are closed here)."""
        deadline = self.clock() + timeout_s
        while not self.conn.poll(min(max(0.0, deadline - self.clock()), 0.5)):
            if self.clock() >= deadline or not self.proc.is_alive() and not self.conn.poll(0):
                return None
        with socket.socket(fileno=os.dup(self.conn.fileno())) as sock:
            try:
                data, ancillary, flags, _ = sock.recvmsg(1, socket.CMSG_SPACE(4), socket.MSG_CMSG_CLOEXEC
                                                         | socket.MSG_DONTWAIT)
            except OSError:
                return None
        fds: list[int] = []
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.extend(array.array("i", payload[:len(payload) - len(payload) % 4]))
        if data == HANDED_OVER and len(fds) == 1 and not flags & socket.MSG_CTRUNC:
            return fds[0]
        for fd in fds:
            os.close(fd)
        return None

    def receive(self, timeout_s: float):
        """Next message, ("died", exitcode) if the process died, ("garbled", why) if it is not a message the
        sandbox's own code sends, None on timeout. Decoded weights-only: a candidate that writes its own
        bytes into the channel cannot make the judge run code."""
        if self._unsent is not None:  # it never got the judge's last message: no reply will come
            self.proc.join(timeout=1.0)  # a process that exited closed its channel first: let it end
            if self.proc.exitcode is not None:
                return ("died", self.proc.exitcode)
            return ("garbled", f"the sandbox stopped reading its channel: the judge could not write to it "
                               f"({self._unsent})")
        deadline = self.clock() + timeout_s  # the time it spends stopped (pause) does not count
        while True:
            remaining = deadline - self.clock()
            if remaining <= 0:
                return None
            if self.conn.poll(min(remaining, 0.5)):
                try:
                    blob = self.conn.recv_bytes(MAX_MESSAGE_BYTES)
                except (EOFError, OSError):
                    self.proc.join(timeout=5)
                    return ("died", self.proc.exitcode)
                try:
                    message = loads(blob)
                except Exception as exc:
                    return ("garbled", f"undecodable message ({type(exc).__name__})")
                if not isinstance(message, tuple) or not message or not isinstance(message[0], str):
                    return ("garbled", f"malformed message {quote(message, 80)}")
                if message[0] in JUDGE_KINDS:
                    return ("garbled", f"a message named {message[0]!r}, a word only the judge uses")
                self._awaiting = False
                return message
            if not self.proc.is_alive():
                if self.conn.poll(0):
                    continue
                return ("died", self.proc.exitcode)

    def start(self, job: dict[str, Any]) -> None:
        """Hand the sandbox its job and wait for its hello."""
        job = {"work_dir": str(self.home.work), "io_in": str(self.home.io_in), "io_out": str(self.home.io_out),
               **job}
        try:
            self.send(job)
        except (OSError, ValueError) as exc:
            raise SandboxStartError(f"the sandbox process is gone before its job ({exc})") from exc
        hello = self.receive(START_TIMEOUT_S)
        if hello is not None and hello[0] == "jail_error":
            raise IsolationUnavailable(f"{hello[1] if len(hello) > 1 else 'isolation failed'}; run the verifier "
                                       "as root on a machine with namespaces, or set verifier.isolation: none "
                                       "(trusted code only)")
        if hello is None or hello[0] != "hello":
            if hello and hello[0] == "died" and hello[1] == ISOLATION_FAILED_EXIT:
                raise IsolationUnavailable("the sandbox could not confine itself")
            if hello and hello[0] == "load_error" and len(hello) == 2 and isinstance(hello[1], dict):
                raise SandboxStartError(f"the sandbox's harness failed to set up: {quote(hello[1].get('message'), 1500)}")
            raise SandboxStartError(f"the sandbox process failed to start (got {quote(hello, 300)}); if you run the "
                                    "verifier from a script, guard its entry point with `if __name__ == '__main__':`")

    def death_detail(self, exitcode: int | None, when: str) -> str:
        """Why it died, for the verdict; raises SandboxStarved when the machine's memory, not its own limit,
        killed it (a verdict then would charge the code inside for its neighbours)."""
        if self.home.cgroups and Cgroups.starved(self.home.cgroups):
            raise SandboxStarved(f"a sandbox was killed {when or 'while running'} for want of host memory while "
                                 "within its own limit (verifier.memory_limit_mb)")
        if exitcode is not None and exitcode < 0:
            try:
                how = f"was killed by {signal.Signals(-exitcode).name}"
            except ValueError:
                how = f"was killed by signal {-exitcode}"
        else:
            how = f"exited with code {exitcode} without reporting"
        log = read_sandbox_text(self.home.log_path(), 800).strip()
        return f"the candidate process {how} {when}" + (f"; its last output:\n{log}" if log else "")

    def kill(self) -> None:
        """Kill its whole tree now, from any thread (a judge that is being aborted); whoever is talking to it
        sees it die and closes it (close() is the one that removes its directories)."""
        if self._closed or self.proc.exitcode is not None:  # reaped: its pid may be another process's by now
            return
        if self.home.cgroups:
            self.isolation.kill(self.home)
        self._signal_group(signal.SIGKILL)

    def kill_jail(self) -> None:
        """SIGKILL what runs in its cgroups, without waiting for it to end; its keeper (outside them) lives on to
        reap it. kill() then waits for it: several sandboxes die together rather than one after another."""
        if not self._closed and self.proc.exitcode is None and self.home.cgroups:
            self.isolation.kill(self.home, wait=False)

    def _signal_group(self, sig: signal.Signals) -> None:
        """`sig` to its process group (the keeper's, which setpgrp made) and to the keeper itself (before its
        setpgrp too; not once reaped: its pid may be another process's by now)."""
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            if self.proc.exitcode is None:
                os.kill(self.proc.pid, sig)
        except (OSError, ValueError):
            pass

    def close(self) -> None:
        """Stop it, kill whatever it left (the whole tree) and remove its directories. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self._stop_and_remove()
        finally:  # its judgement's share goes back whatever happened, or the budget would shrink for good
            if self.reservation is not None:
                self.reservation.release()

    def _stop_and_remove(self) -> None:
        live_cpu = _tree_cpu_seconds(self.proc.pid) if self.proc.exitcode is None else None
        try:
            if self.proc.is_alive() and not self._awaiting:
                self.conn.send(("stop",))
                self.proc.join(timeout=2)
        except (OSError, BrokenPipeError, ValueError):
            pass
        if self.proc.is_alive() and self.home.cgroups:
            # the jail first (everything in its cgroups), so the keeper reaps it rather than init
            self.isolation.kill(self.home)
            self.proc.join(timeout=2)
        if self.proc.is_alive() or self.proc.exitcode is None:
            self._signal_group(signal.SIGKILL)
            self.proc.join(timeout=5)
        self.conn.close()
        used = self._cgroup_cpu_seconds()
        self.isolation.release(self.home)
        add = getattr(_cpu_sink, "add", None)
        if add is not None and (used is not None or live_cpu is not None):
            add(self.role, used if used is not None else live_cpu)


class JailedRunner:
    """Runs a build's compiler commands in a build sandbox (started on first use); `FastInlineBuilder`
    writes sources into `inbox` (read-only in the sandbox) and reads results from `outbox`."""

    def __init__(self, factory: "SandboxFactory", device_index: int, env: dict[str, str]):
        self._factory, self._device_index, self._env = factory, device_index, env
        self._sandbox: Sandbox | None = None

    def _box(self) -> Sandbox:
        if self._sandbox is None:
            self._sandbox = self._factory.take("build", self._device_index)
            self._sandbox.start({"env": self._env})
        return self._sandbox

    @property
    def inbox(self) -> Path:
        return self._box().home.inbox

    @property
    def outbox(self) -> Path:
        return self._box().home.work

    def _ask(self, message: tuple, timeout_s: float):
        from verifier.fastbuild import BuildError

        box = self._box()
        box.send(message)
        reply = box.receive(timeout_s + 30)
        if reply is None:
            raise BuildError(f"compilation exceeded {timeout_s:g} s", "")
        if reply[0] == "build_error" and len(reply) == 3 and all(isinstance(x, str) for x in reply[1:]):
            raise BuildError(reply[1], reply[2])
        return reply

    def run(self, commands: list[list[str]], timeout_s: float):
        import subprocess

        from verifier.fastbuild import BuildError

        reply = self._ask(("run", commands, timeout_s), timeout_s)
        results = reply[1] if reply[0] == "ran" and len(reply) == 2 and isinstance(reply[1], list) else None
        if results is None or len(results) != len(commands) or not all(
                isinstance(r, (list, tuple)) and len(r) == 3 and type(r[0]) is int and isinstance(r[1], str)
                and isinstance(r[2], str) for r in results):
            raise BuildError("the build sandbox did not report its compilers' results", str(reply)[:300])
        return [subprocess.CompletedProcess(c, r[0], r[1], r[2]) for c, r in zip(commands, results)]

    def torch_build(self, kwargs: dict, timeout_s: float) -> Path:
        from verifier.fastbuild import BuildError

        directory = self.outbox / "torch_ext"
        reply = self._ask(("torch_build", kwargs, str(directory), timeout_s), timeout_s)
        # the judge decides where the library is, whatever the sandbox says
        if reply[0] != "torch_built":
            raise BuildError("the build sandbox did not report a build", str(reply)[:300])
        return directory / f"{kwargs['name']}.so"

    def close(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None


class SandboxFactory:
    """Starts sandboxes of each role for one judge; keeps `spare_sandboxes` run and build sandboxes ready
    per device (started ahead, so process start and confinement are off a verdict's clock)."""

    def __init__(self, config: VerifierConfig, cache_dir: Path, device: str):
        self.config = config
        self.device = device
        self.cache_dir = Path(cache_dir)
        for sub in ("bridge", "pch"):  # bound read-only into every sandbox, so they must exist first
            (self.cache_dir / sub).mkdir(parents=True, exist_ok=True)
        import operators
        import schemas
        import training
        import verifier

        # the packages sandboxes import from (analyses use operators and training), nothing else of the repository
        packages = [Path(m.__file__).parent for m in (verifier, schemas, operators, training)]
        from verifier.analysis import hub_cache

        hub = hub_cache()  # models a reference may load: read-only, and only from there (no network)
        self.isolation = Isolation(config.isolation, self.cache_dir,
                                   readonly=[*packages, self.cache_dir / "bridge", self.cache_dir / "pch",
                                             *([hub] if hub else [])])
        self.hub_cache = hub
        budget_mb = sandbox_memory_mb(config.sandbox_memory_mb, config.memory_limit_mb)
        self.memory_budget = MemoryBudget.shared(budget_mb)
        if self.isolation.cgroups:
            self.isolation.cgroups.cap_total(budget_mb << 20)
        self._ctx = _forkserver_context()
        self._spares: dict[tuple[str, int], list[Sandbox]] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._aborted = False  # abort(): no sandbox starts any more, and every live one was killed
        self._live: weakref.WeakSet[Sandbox] = weakref.WeakSet()  # every sandbox started and not yet collected
        self._pausing: dict[int, int] = {}  # device -> timings under way there that stop its run sandboxes
        self._refills: set[threading.Thread] = set()  # joined by close(): none may start a sandbox after it
        self._gpu: dict[int, tuple[tuple[str, ...], str]] = {}
        # a factory dropped without close() (a judge nobody closed) still stops its spares when it is collected,
        # or at exit: a spare is a live process of a sandbox uid, and nothing else would ever end it
        self._stop_spares = weakref.finalize(self, _close_spares, self._spares, self._lock)

    def _gpu_view(self, device_index: int) -> tuple[tuple[str, ...], str]:
        """(its /dev/nvidia* node, its CUDA_VISIBLE_DEVICES entry) of the judge's GPU `device_index`."""
        if device_index not in self._gpu:
            self._gpu[device_index] = (gpu_device_nodes(device_index), _visible_gpu(device_index))
        return self._gpu[device_index]

    def stopped(self) -> int:
        """How many of its sandboxes are stopped now while a timing holds their device (others_paused)."""
        with self._lock:
            live = list(self._live)
        return sum(box.stopped for box in live)

    def gpu_memory(self) -> str | None:
        """Where the GPUs' memory is, for a heartbeat: each GPU's use, and how much of it this factory's sandboxes
        hold, by kind (a reference's, a candidate's — how many of those stopped beside a timing —, a spare's, a
        build's) and what is not theirs; None where nvidia-smi cannot say (no GPU). A full-size reference's timing
        ran out of GPU memory on the H200 beside stopped sandboxes (2026-12-05): this says whose it was."""
        apps, gpus = nvidia_smi_memory()
        if not gpus:
            return None
        with self._lock:
            live = list(self._live)
            spares = {id(box) for boxes in self._spares.values() for box in boxes}
        boxes = [(box.pid, tuple(Path(leaf).name for leaf in box.home.cgroups),
                  "spare" if id(box) in spares else box.role + (" stopped" if box.stopped else ""))
                 for box in live]
        return describe_gpu_memory(apps, gpus, boxes, cgroup_leaf)

    def reserve(self, alone: bool = False, memory_mb: int | None = None, judge_mb: int = 0, gpu_mb: int = 0,
                device_index: int = 0) -> MemoryReservation:
        """This thread's share of the memory budget for its judgement (waits for its turn; see MemoryBudget):
        `memory_mb` (its problem's estimate, verifier.memory_admission) or memory_limit_mb, and `judge_mb` beside
        it (the judge's own copies of its tensors), and `gpu_mb` of its device's memory where the judge tracks
        it (verifier.gpu_memory_admission), or all of it (`alone`). Taken around a whole judgement, before any
        lock, and again (re-entrant) by every sandbox it starts. Once abort() has run, a wait for its turn
        ends at once (SandboxStartError): the memory it waits for may be freed only as slowly as a closing judge
        removes its files (12 threads waited out a stage's SIGTERM on the H200 so, session 13)."""
        try:
            return self.memory_budget.reserve(memory_mb or self.config.memory_limit_mb, alone=alone,
                                              judge_mb=judge_mb, gpu_mb=gpu_mb, device_index=device_index,
                                              cancelled=lambda: self._aborted)
        except ReservationCancelled:
            raise SandboxStartError("the judge was aborted: it starts no more sandboxes") from None

    def start(self, role: str, device_index: int = 0, processes: bool | None = None) -> Sandbox:
        reservation = self.reserve()
        try:
            box = self._start(role, device_index, processes)
        except BaseException:
            reservation.release()
            raise
        box.reservation = reservation
        self._cap_to_share(box)
        return box

    def _cap_to_share(self, box: Sandbox) -> None:
        """A candidate's sandbox judged on a share below its own limit (its problem's estimate) gets that share as
        its cgroup's limit: what it was promised is what it may take, so it can starve no neighbour; killed there,
        it is judged again with its whole limit (SandboxOverEstimate). Builds and references keep their limit:
        their memory is not the candidate's."""
        share = box.reservation.memory_mb if box.reservation is not None else None
        if box.role == "run" and share is not None and share < self.config.memory_limit_mb and box.home.cgroups \
                and Cgroups.lower_memory_limit(box.home.cgroups, share << 20):
            box.capped_mb = share

    def _start(self, role: str, device_index: int = 0, processes: bool | None = None) -> Sandbox:
        if self._aborted:
            raise SandboxStartError("the judge was aborted: it starts no more sandboxes")
        cfg = self.config
        tasks = BUILD_TASKS if role == "build" else RUN_TASKS
        home = self.isolation.allocate(cfg.memory_limit_mb, tasks)
        try:
            nodes, visible = self._gpu_view(device_index) if self.device == "cuda" and role != "build" \
                else ((), None)
            plan = self.isolation.plan(home, processes=role == "build" if processes is None else processes,
                                       memory_mb=cfg.memory_limit_mb, max_tasks=tasks,
                                       device=self.device if role != "build" else "cpu", gpu_nodes=nodes,
                                       hub_cache=str(self.hub_cache) if self.hub_cache else None)
            from verifier.sandbox import sandbox_main

            parent_conn, child_conn = self._ctx.Pipe()
            args = (child_conn, role, self.device if role != "build" else "cpu", cfg.memory_limit_mb, plan, visible)
            proc = self._ctx.Process(target=sandbox_main, args=args, daemon=True)
            try:
                with _without_main_module():
                    proc.start()
            except (OSError, EOFError, ConnectionError):  # the forkserver died under us: it restarts on demand
                proc = self._ctx.Process(target=sandbox_main, args=args, daemon=True)
                with _without_main_module():
                    proc.start()
            child_conn.close()
        except BaseException:
            self.isolation.release(home)
            raise
        box = Sandbox(role, proc, parent_conn, home, self.isolation, device_index)
        with self._lock:
            self._live.add(box)
            aborted = self._aborted
            if role == "run" and self._pausing.get(device_index):  # started while its device is being timed
                box.pause()
        if aborted:  # abort() ran while this one was starting: it did not see it
            box.kill()
        return box

    @contextmanager
    def others_paused(self, device_index: int, timed: Sandbox) -> Iterator[None]:
        """While `timed` is timed on its device: every other run sandbox there (candidates' code) stopped, and
        any started meanwhile stopped at once, so that no neighbour's thread spins on the CPUs or launches
        kernels beside the timed calls. A candidate's native thread that kept the device busy while the eager
        baseline was timed (just after its trials, its process alive) made the baseline slower and its own
        speedup larger, and its siblings' timings slower, at will. Their stopped time does not count against
        their limits (Sandbox.clock)."""
        with self._lock:
            self._pausing[device_index] = self._pausing.get(device_index, 0) + 1
            others = self._run_sandboxes(device_index, timed)
            for box in others:
                box.pause()
        try:
            yield
        finally:
            with self._lock:
                self._pausing[device_index] -= 1
                if not self._pausing[device_index]:
                    for box in self._run_sandboxes(device_index, timed):  # those started meanwhile too
                        box.resume()

    def _run_sandboxes(self, device_index: int, but: Sandbox) -> list[Sandbox]:
        return [box for box in self._live if box.role == "run" and box.device_index == device_index and box is not but]

    def take(self, role: str, device_index: int = 0) -> Sandbox:
        """A spare sandbox of this role for this device if one is waiting (its replacement starts in the
        background), else a fresh one."""
        taken = None
        key = (role, device_index)
        with self._lock:
            if self._aborted:  # a judgement still running when abort() came (a failed trial judged again)
                raise SandboxStartError("the judge was aborted: it starts no more sandboxes")
            spares = self._spares.setdefault(key, [])
            while spares and taken is None:
                box = spares.pop(0)
                if box.alive():
                    taken = box
                else:
                    box.close()
            if self.config.spare_sandboxes and not self._closed:  # registered under the lock close() takes
                refill = threading.Thread(target=self._refill, args=key, daemon=True)
                self._refills.add(refill)
                refill.start()
        if taken is None:
            return self.start(role, device_index)
        taken.reservation = self.reserve()  # a spare waits unreserved: an idle process holds little
        self._cap_to_share(taken)
        return taken

    def take_run_sandbox(self, device_index: int) -> Sandbox:
        return self.take("run", device_index)

    def _refill(self, role: str, device_index: int) -> None:
        key = (role, device_index)
        try:
            with self._lock:
                wanted = self.config.spare_sandboxes - len(self._spares.setdefault(key, []))
            for _ in range(max(0, wanted)):
                if self._closed:
                    return
                try:
                    box = self._start(role, device_index)
                except Exception:  # a spare is an optimisation: the next candidate starts its own
                    return
                with self._lock:
                    if self._closed or len(self._spares[key]) >= self.config.spare_sandboxes:
                        box.close()
                        return
                    self._spares[key].append(box)
        finally:
            with self._lock:
                self._refills.discard(threading.current_thread())

    def build_runner(self, device_index: int, cuda_arch: str | None) -> JailedRunner:
        env = {"TORCH_CUDA_ARCH_LIST": f"{cuda_arch[:-1]}.{cuda_arch[-1]}"} if cuda_arch else {}
        return JailedRunner(self, device_index, env)

    def spare_pids(self, device_index: int = 0) -> list[int]:
        with self._lock:
            return [box.pid for box in self._spares.get(("run", device_index), []) if box.alive()]

    def abort(self) -> None:
        """Stop at once (an interrupted or failed stage): no sandbox starts any more, the spares are closed and
        every live sandbox — candidates mid-trial, builds mid-compile — is killed, so each judgement in flight
        ends now instead of at its time limit. Their owners close them; close() follows."""
        with self._lock:
            self._closed = self._aborted = True
            live = list(self._live)  # the spares too
            spares = [box for group in self._spares.values() for box in group]
            self._spares.clear()  # under the lock take() takes: no judgement is handed one from now on
        self.memory_budget.wake()  # judgements waiting for their share give up now (reserve)
        # every one signalled before any is waited for: each with a CUDA context of GBs took seconds to end, one
        # after another, past the 10 s `timeout -k 10` gives a stage to record its end (session 10, the box)
        for box in live:
            box.kill_jail()
        for box in spares:
            box.close()
        for box in live:
            box.kill()

    def close(self) -> None:
        """Close the spares and wait for the refills in flight (each closes the sandbox it was starting), so
        that no sandbox of this factory outlives the call."""
        with self._lock:
            self._closed = True
            refills = list(self._refills)
        self._stop_spares()
        for refill in refills:
            refill.join(timeout=120)


def _close_spares(spares: dict[tuple[str, int], list[Sandbox]], lock: threading.Lock) -> None:
    """Close every spare sandbox of a factory (given its spares and lock, never the factory: its finalizer)."""
    with lock:
        boxes = [box for group in spares.values() for box in group]
        spares.clear()
    for box in boxes:
        box.close()


def _visible_gpu(device_index: int) -> str:
    """The CUDA_VISIBLE_DEVICES entry of the judge's GPU `device_index`: its UUID, which names the same GPU
    inside a sandbox that sees only that GPU's node (where indices count only the GPUs it can open)."""
    try:
        uuid = re.search(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}",
                         str(torch.cuda.get_device_properties(device_index).uuid))
    except Exception:
        uuid = None
    if uuid:
        return f"GPU-{uuid.group(0)}"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return visible.split(",")[device_index].strip() if visible else str(device_index)


def gpu_device_nodes(device_index: int) -> tuple[str, ...]:
    """The /dev/nvidia<minor> node of the judge's GPU `device_index` (the driver lists each GPU's minor
    number under its PCI address); every GPU node when that cannot be told."""
    nodes = tuple(sorted(str(p) for p in Path("/dev").glob("nvidia[0-9]*")))
    try:
        props = torch.cuda.get_device_properties(device_index)
        bus = f"{props.pci_domain_id:04x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0"
        info = Path(f"/proc/driver/nvidia/gpus/{bus}/information").read_text()
        minor = next(line.split(":")[1].strip() for line in info.splitlines() if line.startswith("Device Minor"))
        return (f"/dev/nvidia{minor}",)
    except Exception:
        return nodes
