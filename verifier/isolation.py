"""The judge's half of the sandbox walls: per-sandbox directories, uids and cgroups, and the plan each
sandbox confines itself with (verifier/jail.py).

Every sandbox gets, under `<cache>/scratch/<judge>-<n>/`:
- `work/`: its scratch directory, owned by its uid (its build outputs);
- `in/`: the judge's inputs for it (trial tensors, sources to build), read-only in its view;
- `lib/`: the judge-verified shared objects it may load, read-only (and the only executable files
  it can reach besides the toolchain);
and in tmpfs (`/dev/shm`) `kd-io-<judge>-<n>-{in,out}` for tensors and its log (inputs judge-owned and
read-only, outputs its own: tmpfs pages count against its memory limit). `<judge>` is this process's pid and start time, so a later judge recognises the
leftovers of a killed one and removes them.

The judge reads what a sandbox wrote only through `open_sandbox_file` (no symlinks, regular files
only, bounded): a sandbox owns its directories and could put anything there.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import signal
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from verifier.activity import doing
from verifier.jail import (BASIC_DEVICES, DATA_PLANE_INODES, NVIDIA_SHARED_DEVICES, SCRATCH_INODES, JailError, JailPlan,
                          file_size_limit, private_tmpfs, python_paths, unmount)

SANDBOX_UID_BASE = 0x70000000  # 1,879,048,192: far above any real account, below the overflow id
_SHM = Path("/dev/shm")


class UntrustedFile(ValueError):
    """A file in a sandbox's directory that is not a plain file (a symlink, a FIFO, a device...)."""


def open_sandbox_file(path: str | Path, mode: str = "rb"):
    """Open a file a sandbox could have replaced: never follow a symlink, never block on a FIFO,
    only regular files. Raises UntrustedFile otherwise (FileNotFoundError when it is absent)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == 40:  # ELOOP: a symlink
            raise UntrustedFile(f"{Path(path).name} is a symlink") from exc
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UntrustedFile(f"{Path(path).name} is not a regular file")
    os.set_blocking(fd, True)
    return os.fdopen(fd, mode)


def read_sandbox_text(path: str | Path, limit: int) -> str:
    """The last `limit` characters of a text file a sandbox wrote, or "" when there is none to trust."""
    try:
        with open_sandbox_file(path) as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(max(0, size - 4 * limit))
            return f.read().decode(errors="replace")[-limit:]
    except (OSError, UntrustedFile):
        return ""


def process_start_time(pid: int) -> str | None:
    """Start time of a live process (clock ticks since boot), so a reused pid is not mistaken for it."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


_SCRATCH_NAME = re.compile(r"(?P<judge>\d+-\d+)-\d+")
_IO_NAME = re.compile(r"kd-io-(?P<judge>\d+-\d+)-\d+-(?:in|out)")


def _alive(tag: str) -> bool:
    pid, _, start = tag.partition("-")
    return pid.isdigit() and process_start_time(int(pid)) == start


_JUDGE_NAME = re.compile(r"\d+-\d+")


def remove_dead_judges_directories(root: Path) -> int:
    """Remove the entries of `root` named after a judge (`<pid>-<start>`) that is gone; how many."""
    removed = 0
    for entry in Path(root).iterdir() if Path(root).is_dir() else ():
        if _JUDGE_NAME.fullmatch(entry.name) and not _alive(entry.name):
            shutil.rmtree(entry, ignore_errors=True)
            removed += 1
    return removed


LIMIT_CHARGE_SLACK = 4 << 20  # the most one charge adds (a 2 MB huge page), twice: a peak this close is at the limit


class Cgroups:
    """Memory and process limits for a sandbox's whole process tree: cgroup v2, or v1's memory and pids
    hierarchies. `detect()` is None where neither can be used (then rlimits are the only limits)."""

    def __init__(self, version: int, parents: dict[str, Path], controllers: set[str] = frozenset({"memory", "pids"})):
        self.version = version
        self.parents = parents  # controller ("memory", "pids", or "" for v2) -> our kerneldojo directory
        self.controllers = set(controllers)

    def __repr__(self) -> str:
        return f"cgroup v{self.version} ({'+'.join(sorted(self.controllers))})"

    @classmethod
    def detect(cls) -> "Cgroups | None":
        """Once per process (on cgroup v2 it may move this process into a leaf of its group)."""
        global _DETECTED
        if _DETECTED is _UNKNOWN:
            _DETECTED = cls._detect()
        return _DETECTED

    @classmethod
    def _detect(cls) -> "Cgroups | None":
        mounts = _cgroup_mounts()
        own = _own_cgroups()
        for attempt in (cls._v2, cls._v1):
            try:
                found = attempt(mounts, own)
            except OSError:
                found = None
            if found:
                return found
        return None

    @classmethod
    def _v2(cls, mounts, own) -> "Cgroups | None":
        root = mounts.get("cgroup2")
        if root is None or "" not in own:
            return None
        base = root / own[""].lstrip("/")
        wanted = {"memory", "pids"} & set((base / "cgroup.controllers").read_text().split())
        if "memory" not in wanted:  # without pids, RLIMIT_NPROC of the sandbox's own uid bounds its processes
            return None
        try:
            _enable_controllers(base, wanted)
        except OSError:
            # cgroup v2 lets a group hand controllers to children only while it holds no process itself:
            # move this group's processes into a leaf of their own first (as systemd does with init.scope)
            leaf = base / "kd-judge"
            leaf.mkdir(exist_ok=True)
            for pid in _cgroup_pids(base):
                try:
                    (leaf / "cgroup.procs").write_text(str(pid))
                except OSError:  # gone meanwhile, or a kernel thread
                    pass
            _enable_controllers(base, wanted)
        parent = base / "kerneldojo"
        parent.mkdir(exist_ok=True)
        _enable_controllers(parent, wanted)
        return cls(2, {"": parent}, wanted)

    @classmethod
    def _v1(cls, mounts, own) -> "Cgroups | None":
        parents = {}
        for controller in ("memory", "pids"):
            root = mounts.get(controller)
            if root is None or controller not in own:
                return None
            parent = root / own[controller].lstrip("/") / "kerneldojo"
            parent.mkdir(exist_ok=True)
            parents[controller] = parent
        return cls(1, parents)

    def create(self, name: str, memory_bytes: int, max_tasks: int) -> tuple[str, ...]:
        leaves = []
        for controller, parent in self.parents.items():
            leaf = parent / name
            leaf.mkdir(exist_ok=True)
            leaves.append(leaf)
            if self.version == 2:
                (leaf / "memory.max").write_text(str(memory_bytes))
                if (leaf / "memory.swap.max").exists():
                    (leaf / "memory.swap.max").write_text("0")
                if "pids" in self.controllers:
                    (leaf / "pids.max").write_text(str(max_tasks))
            elif controller == "memory":
                (leaf / "memory.limit_in_bytes").write_text(str(memory_bytes))
                if (leaf / "memory.memsw.limit_in_bytes").exists():
                    (leaf / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
            else:
                (leaf / "pids.max").write_text(str(max_tasks))
        return tuple(str(p) for p in leaves)

    @staticmethod
    def destroy(leaves: tuple[str, ...]) -> None:
        """Kill whatever is left in the groups, then remove them."""
        Cgroups.kill(leaves)
        for leaf in map(Path, leaves):
            try:
                leaf.rmdir()
            except OSError:
                pass

    @staticmethod
    def processes(leaves: tuple[str, ...]) -> set[int]:
        """The process ids in the groups now."""
        return {pid for leaf in leaves for pid in _cgroup_pids(Path(leaf))}

    @staticmethod
    def kill(leaves: tuple[str, ...], wait: bool = True) -> None:
        """SIGKILL every process in the groups until none is left (or 5 s have passed); `wait=False`: once, without
        waiting for them to go (a process with a large CUDA context takes seconds to end)."""
        for leaf in map(Path, leaves):
            if not leaf.exists():
                continue
            deadline = time.monotonic() + 5
            while True:
                pids = _cgroup_pids(leaf)
                if not pids:
                    break
                if (leaf / "cgroup.kill").exists():
                    try:
                        (leaf / "cgroup.kill").write_text("1")
                    except OSError:
                        pass
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                if not wait or time.monotonic() > deadline:
                    break
                time.sleep(0.01)

    def cap_total(self, memory_bytes: int) -> bool:
        """Cap the memory of all our sandboxes together (their parent group's limit), so that however their
        own limits add up, the kernel reclaims or kills inside the sandboxes, never in the judge or elsewhere
        on the machine. False where the parent's limit cannot be written."""
        for controller, parent in self.parents.items():
            name = "memory.max" if self.version == 2 else "memory.limit_in_bytes" if controller == "memory" else None
            if name is None:
                continue
            try:
                (parent / name).write_text(str(memory_bytes))
            except OSError:
                return False
        return True

    @staticmethod
    def starved(leaves: tuple[str, ...]) -> bool:
        """Whether the OOM killer killed a process of this sandbox while the sandbox stayed within its own limit:
        the machine, or the sandboxes' share of it (`cap_total`), ran out; no fault of the code inside. (The kernel
        counts an OOM kill in the victim's group whoever ran out.)"""
        for leaf in map(Path, leaves):
            try:
                if (leaf / "memory.events").exists():  # v2
                    events = dict(line.split() for line in (leaf / "memory.events").read_text().splitlines())
                    killed, own = int(events.get("oom_kill", 0)) > 0, int(events.get("oom", 0)) > 0
                elif (leaf / "memory.oom_control").exists():  # v1
                    control = dict(line.split() for line in (leaf / "memory.oom_control").read_text().splitlines())
                    killed, own = int(control.get("oom_kill", 0)) > 0, False
                else:
                    continue
                return killed and not (own or Cgroups._peak_reached_limit(leaf))
            except (OSError, ValueError):
                return False
        return False

    @staticmethod
    def lower_memory_limit(leaves: tuple[str, ...], memory_bytes: int) -> bool:
        """Lower the groups' memory limit (and memory+swap's, after it: v1 keeps memory <= memory+swap) to
        `memory_bytes`. False where a limit could not be written."""
        written = False
        for leaf in map(Path, leaves):
            for name in ("memory.max", "memory.limit_in_bytes", "memory.memsw.limit_in_bytes"):
                if (leaf / name).exists():
                    try:
                        (leaf / name).write_text(str(memory_bytes))
                    except OSError:
                        return False
                    written = True
        return written

    @staticmethod
    def reached_limit(leaves: tuple[str, ...]) -> bool:
        """Whether any of the groups' peak came within a charge of its own memory limit."""
        return any(Cgroups._peak_reached_limit(Path(leaf)) for leaf in leaves)

    @staticmethod
    def _peak_reached_limit(leaf: Path) -> bool:
        """Whether the group's peak came within a charge of its own limit (memory, or memory+swap, which `create`
        limits too). Not the failure counters: on cgroup v1 with swap accounting the kernel charges memory+swap
        first and, since 6.x, counts neither failcnt (2026-12-03, kernel 6.18: a sandbox killed at its own limit
        showed failcnt 0 and memsw.failcnt 0, and looked starved — any candidate could fail a stage so)."""
        pairs = (("memory.peak", "memory.max"), ("memory.max_usage_in_bytes", "memory.limit_in_bytes"),
                 ("memory.memsw.max_usage_in_bytes", "memory.memsw.limit_in_bytes"))
        for peak_name, limit_name in pairs:
            if (leaf / peak_name).exists() and (leaf / limit_name).exists():
                limit = (leaf / limit_name).read_text().strip()
                if limit.isdigit() and int((leaf / peak_name).read_text()) >= int(limit) - LIMIT_CHARGE_SLACK:
                    return True
        return False

    def leftovers(self) -> list[Path]:
        return [leaf for parent in self.parents.values() if parent.exists() for leaf in parent.iterdir()
                if leaf.is_dir()]


_COUNTER = itertools.count()
_COUNTER_LOCK = threading.Lock()
_UNKNOWN = object()
_DETECTED = _UNKNOWN


def _enable_controllers(directory: Path, wanted: set[str]) -> None:
    enabled = set((directory / "cgroup.subtree_control").read_text().split())
    if not wanted <= enabled:
        (directory / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in sorted(wanted)))


def _cgroup_pids(leaf: Path) -> list[int]:
    try:
        return [int(x) for x in (leaf / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def _cgroup_mounts() -> dict[str, Path]:
    found: dict[str, Path] = {}
    with open("/proc/self/mounts") as f:
        for line in f:
            _, where, kind, options, *_ = line.split()
            if kind == "cgroup2":
                found.setdefault("cgroup2", Path(where))
            elif kind == "cgroup":
                for controller in ("memory", "pids"):
                    if controller in options.split(","):
                        found.setdefault(controller, Path(where))
    return found


def _own_cgroups() -> dict[str, str]:
    own = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for c in controllers.split(",") if controllers else [""]:
                own[c] = path
    return own


def host_memory_mb() -> int:
    """The memory this process's sandboxes can have at most: the machine's, or its own cgroup's limit if lower."""
    with open("/proc/meminfo") as f:
        total = next(int(line.split()[1]) >> 10 for line in f if line.startswith("MemTotal:"))
    mounts, own = _cgroup_mounts(), _own_cgroups()
    limits = []
    if "cgroup2" in mounts and "" in own:
        limits.append(mounts["cgroup2"] / own[""].lstrip("/") / "memory.max")
    if "memory" in mounts and "memory" in own:
        limits.append(mounts["memory"] / own["memory"].lstrip("/") / "memory.limit_in_bytes")
    for path in limits:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text) >> 20)
    return total


def memory_now_mb() -> tuple[int, int]:
    """(this process's resident memory, the machine's available memory) in MB, from /proc: for a heartbeat."""
    with open("/proc/self/status") as f:
        resident = next((int(line.split()[1]) >> 10 for line in f if line.startswith("VmRSS:")), 0)
    with open("/proc/meminfo") as f:
        available = next((int(line.split()[1]) >> 10 for line in f if line.startswith("MemAvailable:")), 0)
    return resident, available


SANDBOX_MEMORY_SHARE = 0.85  # of host_memory_mb by default: the rest is the judge's (kept trials, messages) and the OS's


def sandbox_memory_mb(configured: int, memory_limit_mb: int) -> int:
    """What all sandboxes together may use (MB): verifier.sandbox_memory_mb, else a share of the host; never
    less than one sandbox's own limit (a sandbox alone must get its whole limit: otherwise code inside could
    starve itself at will and pass it off as the machine's fault)."""
    total = configured or int(host_memory_mb() * SANDBOX_MEMORY_SHARE)
    return max(total, memory_limit_mb)


STARVING_S = 30.0  # a share that has waited this long for room goes before every share asked for after it
ALONE_PATIENCE_S = 300.0  # a judgement waiting to run alone lets later ones start for this long (the rest of its
# batch runs meanwhile, and the machine empties when the batch does); after it, none starts before it


class ReservationCancelled(RuntimeError):
    """A MemoryBudget wait given up (its `cancelled` became true): nothing was reserved."""


class MemoryBudget:
    """Admission for sandboxes by memory: a judgement (a thread) holds one sandbox's limit of the budget while
    it has sandboxes, and waits for its turn while the limits of those running fill it. Limits are promises:
    14 KernelBench judgements at 32 GB each on a 128 GB machine once had the kernel's OOM killer end the
    judge itself. Re-entrant per thread: its build and reference sandboxes run inside its own judgement's
    share (the parent cgroup's cap, `Cgroups.cap_total`, catches what that leaves over, and a judgement whose
    sandbox that killed runs again alone). One per process and capacity (`shared`): every judge of a process
    draws on the same machine. Fair to large shares: once one has waited STARVING_S, those asked for after it
    wait behind it (otherwise small shares that keep fitting beside the running ones never leave it room: a
    16 GB reference check waited 7 minutes behind 5 GB ones on a 20 GB budget). On a GPU, a judgement's share of
    its device's memory is a second promise of the same hold (track_gpu): a sandbox's cudaMalloc has no cgroup."""

    _shared: dict[int, "MemoryBudget"] = {}
    _shared_lock = threading.Lock()

    def __init__(self, capacity_mb: int):
        self.capacity_mb = capacity_mb
        self.used_mb = 0
        self.peak_mb = 0
        self._held: dict[int, _Hold] = {}  # thread id -> its judgement's hold
        self._alone_since: dict[int, float] = {}  # ticket -> when a judgement began to wait to run alone
        self._waiting: dict[int, float] = {}  # ticket (in order of asking) -> when its share began to wait
        self._tickets = itertools.count()
        self._changed = threading.Condition()
        # GPU memory, per device, where tracked (track_gpu): what nothing else bounds — a sandbox's cudaMalloc
        # has no cgroup, and sandboxes a timing has stopped keep theirs
        self.gpu_capacity_mb: dict[int, int] = {}
        self.gpu_used_mb: dict[int, int] = {}
        self.gpu_peak_mb: dict[int, int] = {}

    @classmethod
    def shared(cls, capacity_mb: int) -> "MemoryBudget":
        with cls._shared_lock:
            return cls._shared.setdefault(capacity_mb, cls(capacity_mb))

    def track_gpu(self, device_index: int, capacity_mb: int) -> None:
        """Admit judgements on device `device_index` by GPU memory too, `capacity_mb` of it (the first caller's)."""
        with self._changed:
            self.gpu_capacity_mb.setdefault(device_index, max(1, capacity_mb))
            self.gpu_used_mb.setdefault(device_index, 0)

    def reserve(self, memory_mb: int, alone: bool = False, judge_mb: int = 0, gpu_mb: int = 0,
                device_index: int = 0, cancelled: Callable[[], bool] = lambda: False) -> "MemoryReservation":
        """Block until `memory_mb` (at most the whole budget) fits, unless this thread holds a share already.
        `judge_mb`: what the judge itself holds for the judgement meanwhile (a full-size trial loaded, the inputs
        it hands the candidate, the outputs it reads back: 2 x 12.8 GB for a KernelBench level-1 problem), taken
        beside the sandboxes' share and never a sandbox's limit. `alone`: the whole budget, once every judgement
        running has ended; later ones may start while it waits, for ALONE_PATIENCE_S, then none does.
        `gpu_mb`: its share of device `device_index`'s memory, where that device is tracked (track_gpu): it
        waits until both fit; alone, it has the device to itself too. `cancelled`: checked whenever the budget
        changes or wake() is called; once true, the wait ends with ReservationCancelled (a judge being aborted:
        its judgements must not wait for memory that its own closing frees only slowly)."""
        thread = threading.get_ident()
        with self._changed:
            held = self._held.get(thread)
            if held is None:
                sandbox_mb = self.capacity_mb if alone else min(memory_mb, self.capacity_mb)
                memory_mb = self.capacity_mb if alone else min(memory_mb + max(0, judge_mb), self.capacity_mb)
                gpu_capacity = self.gpu_capacity_mb.get(device_index)
                gpu_mb = 0 if gpu_capacity is None or alone else min(max(0, gpu_mb), gpu_capacity)
                if alone:
                    ticket = next(self._tickets)
                    self._alone_since[ticket] = time.monotonic()
                    try:
                        with doing("waiting for memory (all of it, alone)"):
                            self._changed.wait_for(lambda: cancelled() or not self._held)
                    finally:
                        del self._alone_since[ticket]
                else:
                    ticket = next(self._tickets)
                    self._waiting[ticket] = time.monotonic()
                    what = f"{memory_mb} MB" + (f", {gpu_mb} MB of GPU {device_index}" if gpu_mb else "")
                    try:
                        with doing(f"waiting for memory ({what})"):
                            self._changed.wait_for(lambda: cancelled() or (
                                self.used_mb + memory_mb <= self.capacity_mb
                                and (not gpu_mb or self.gpu_used_mb[device_index] + gpu_mb <= gpu_capacity)
                                and not self._alone_impatient()
                                and not self._starving_before(ticket)))
                    finally:
                        if time.monotonic() - self._waiting.pop(ticket) >= STARVING_S:
                            self._changed.notify_all()  # it was starving: those behind it may go now
                if cancelled():
                    self._changed.notify_all()  # those behind it may go now (the alone and the starving)
                    raise ReservationCancelled("the wait for memory was cancelled (the judge is being aborted)")
                self.used_mb += memory_mb
                self.peak_mb = max(self.peak_mb, self.used_mb)
                if gpu_mb:
                    self.gpu_used_mb[device_index] += gpu_mb
                    self.gpu_peak_mb[device_index] = max(self.gpu_peak_mb.get(device_index, 0),
                                                         self.gpu_used_mb[device_index])
                held = self._held[thread] = _Hold(memory_mb, sandbox_mb, gpu_mb, device_index)
                if len(self._held) > 1:  # judgements that overlap, however briefly, each had company
                    for hold in self._held.values():
                        hold.accompanied = True
            held.sandboxes += 1
        return MemoryReservation(self, thread, held)

    def wake(self) -> None:
        """Have every waiting reservation look at its `cancelled` again."""
        with self._changed:
            self._changed.notify_all()

    def _alone_impatient(self) -> bool:
        """Whether a judgement has waited ALONE_PATIENCE_S to run alone: none starts before it now (under
        _changed). Until then later ones start: holding the whole machine back for it mid-batch (waiting for
        every judgement running to end, none starting) idled it behind the slowest, once per judgement made
        again alone — on a GPU box, behind minutes-long KernelBench references."""
        now = time.monotonic()
        return any(now - since >= ALONE_PATIENCE_S for since in self._alone_since.values())

    def _starving_before(self, ticket: int) -> bool:
        """Whether a share asked for before `ticket` has waited STARVING_S already (under _changed)."""
        now = time.monotonic()
        return any(earlier < ticket and now - since >= STARVING_S for earlier, since in self._waiting.items())

    def _release(self, thread: int) -> None:
        with self._changed:
            held = self._held[thread]
            held.sandboxes -= 1
            if held.sandboxes == 0:
                del self._held[thread]
                self.used_mb -= held.memory_mb
                if held.gpu_mb:
                    self.gpu_used_mb[held.device_index] -= held.gpu_mb
                self._changed.notify_all()


@dataclass
class _Hold:
    """One judgement's share of a MemoryBudget."""

    memory_mb: int  # taken from the budget: its sandboxes' share and the judge's own copies for it
    sandbox_mb: int  # its sandboxes' share
    gpu_mb: int = 0  # its share of device_index's memory (0: the device is not tracked, or it runs alone)
    device_index: int = 0
    sandboxes: int = 0  # the reservations taken on it (re-entrant), released one by one
    accompanied: bool = False  # another judgement held a share at some moment while this one did


class MemoryReservation:
    """One hold on a MemoryBudget; `release()` once (later calls do nothing), from any thread."""

    def __init__(self, budget: MemoryBudget, thread: int, hold: _Hold):
        self._budget, self._thread, self._hold = budget, thread, hold
        self._released = False
        self._lock = threading.Lock()

    @property
    def accompanied(self) -> bool:
        """Whether another judgement (a sandbox of its own: a candidate, a reference, a build) ran at some moment
        while this one's judgement did — so far, or until it ended: a failure a neighbour can cause (the GPU's
        memory held, its time shared) may not be this judgement's own."""
        return self._hold.accompanied

    @property
    def memory_mb(self) -> int:
        """The judgement's sandboxes' share (MB): what it reserved for them, or the whole budget when alone."""
        return self._hold.sandbox_mb

    def release(self) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
        self._budget._release(self._thread)

    def __enter__(self) -> "MemoryReservation":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


@dataclass
class SandboxHome:
    """One sandbox's directories, uid and cgroups (see the module docstring)."""

    name: str
    uid: int
    root: Path
    work: Path
    inbox: Path
    lib: Path
    io_in: Path
    io_out: Path
    cgroups: tuple[str, ...]

    def log_path(self) -> Path:
        return self.io_out / "candidate.log"


def _top_level_symlinks() -> tuple[tuple[str, str], ...]:
    return tuple((p, os.readlink(p)) for p in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
                 if os.path.islink(p))


class Isolation:
    """Sandboxes' homes and plans for one judge. `level`: `namespaces` (the walls of verifier/jail.py) or
    `none` (a process and a process group with rlimits; for trusted code and machines that cannot make
    namespaces)."""

    def __init__(self, level: str, cache_dir: Path, readonly: list[Path]):
        self.level = level
        self.cache_dir = Path(cache_dir)
        start = process_start_time(os.getpid())
        self.tag = f"{os.getpid()}-{start}"
        self.scratch_root = self.cache_dir / "scratch"
        self.scratch_root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.scratch_root, 0o711)
        self.io_root = _SHM if _SHM.is_dir() and os.access(_SHM, os.W_OK) else self.scratch_root
        self._lock = threading.Lock()
        self.mountpoint = self.scratch_root / ".jailroot"  # any empty directory: mounted over privately
        self.mountpoint.mkdir(exist_ok=True)
        self.cgroups = Cgroups.detect() if level == "namespaces" else None
        self.remove_leftovers()
        self._readonly = tuple(sorted({*_system_paths(), *python_paths(private=str(self.cache_dir)),
                                       *(str(p) for p in readonly)}))
        self._symlinks = _top_level_symlinks()

    def describe(self) -> str:
        if self.level != "namespaces":
            return "none (process group + rlimits)"
        return f"namespaces + seccomp + {self.cgroups or 'rlimits (no usable cgroup)'}"

    # -- leftovers of killed judges ---------------------------------------------------------
    def remove_leftovers(self) -> int:
        """Scratch, tmpfs and cgroups of judges that are gone (named `<pid>-<start>-<n>`, nothing else is
        touched). Returns how many were removed."""
        removed = 0
        entries = [(e, _SCRATCH_NAME.fullmatch(e.name)) for e in self.scratch_root.iterdir()]
        entries += [(e, _IO_NAME.fullmatch(e.name)) for e in self.io_root.glob("kd-io-*")]
        if self.cgroups:
            entries += [(e, _SCRATCH_NAME.fullmatch(e.name)) for e in self.cgroups.leftovers()]
        for entry, match in entries:
            if match is None or _alive(match.group("judge")):
                continue
            if entry.parent.name == "kerneldojo" and not str(entry).startswith(str(self.scratch_root)):
                Cgroups.destroy((str(entry),))
            else:
                for path in (entry, entry / "work"):
                    _unmount_if_mounted(path)
                shutil.rmtree(entry, ignore_errors=True)
            removed += 1
        return removed

    # -- one sandbox ------------------------------------------------------------------------
    def allocate(self, memory_mb: int, max_tasks: int) -> SandboxHome:
        with _COUNTER_LOCK:  # one numbering per process: several judges (pools) share /dev/shm
            n = next(_COUNTER)
        name = f"{self.tag}-{n}"
        uid = SANDBOX_UID_BASE + (hash(self.tag) % 4096) * 4096 + n % 4096
        root = self.scratch_root / name
        home = SandboxHome(name=name, uid=uid, root=root, work=root / "work", inbox=root / "in", lib=root / "lib",
                           io_in=self.io_root / f"kd-io-{name}-in", io_out=self.io_root / f"kd-io-{name}-out",
                           cgroups=())
        for path in (home.root, home.inbox, home.lib, home.io_in):
            path.mkdir(mode=0o755)
        for path, inodes in ((home.work, SCRATCH_INODES), (home.io_out, DATA_PLANE_INODES)):
            path.mkdir(mode=0o700)
            if self.level == "namespaces":  # what it writes, it writes in a tmpfs of its own (jail.private_tmpfs)
                try:
                    private_tmpfs(str(path), max(memory_mb, 1) << 20, inodes, 0o700, uid=uid)
                except JailError as exc:
                    self.release(home)
                    raise JailError(f"the sandbox's own tmpfs: {exc} (the judge mounts one for each sandbox's "
                                    "writable directories)") from exc
        if self.cgroups:
            home.cgroups = self.cgroups.create(name, memory_mb << 20, max_tasks)
        return home

    def plan(self, home: SandboxHome, *, processes: bool, memory_mb: int, max_tasks: int, device: str,
             gpu_nodes: tuple[str, ...] = (), readonly: tuple[str, ...] = (),
             hub_cache: str | None = None) -> JailPlan | None:
        if self.level != "namespaces":
            return None
        devices = BASIC_DEVICES + ((*NVIDIA_SHARED_DEVICES, *gpu_nodes) if device == "cuda" else ())
        return JailPlan(
            mountpoint=str(self.mountpoint),
            readonly=self._readonly + (str(home.inbox), str(home.lib), str(home.io_in)) + readonly,
            symlinks=self._symlinks,
            writable=(str(home.work), str(home.io_out)),
            tmp_bytes=min(memory_mb, 2048) << 20,
            devices=devices,
            uid=home.uid,
            gid=home.uid,
            cgroups=home.cgroups,
            processes=processes,
            # CUDA reserves huge virtual ranges, so only cpu sandboxes get an address-space limit
            memory_bytes=(memory_mb << 20) if device == "cpu" else 0,
            max_tasks=max_tasks,
            file_bytes=file_size_limit(memory_mb),
            hub_cache=hub_cache,
        )

    def kill(self, home: SandboxHome, wait: bool = True) -> None:
        """Kill every process in the sandbox's cgroups (its whole tree) and, with `wait`, wait until they are gone."""
        if home.cgroups:
            Cgroups.kill(home.cgroups, wait)

    def release(self, home: SandboxHome) -> None:
        if home.cgroups:
            Cgroups.destroy(home.cgroups)
        for path in (home.work, home.io_out):
            _unmount_if_mounted(path)
        for path in (home.root, home.io_in, home.io_out):
            shutil.rmtree(path, ignore_errors=True)


def _unmount_if_mounted(path: Path) -> None:
    if os.path.ismount(path):
        try:
            unmount(str(path))
        except JailError:  # unmounted meanwhile (another judge clearing the same leftovers)
            pass


def _system_paths() -> list[str]:
    """The toolchain and system libraries (read-only): /usr, the dynamic loader's configuration, the
    compiler alternatives, the CUDA toolkit, and library directories named in LD_LIBRARY_PATH."""
    paths = ["/usr", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
             "/etc/localtime"]
    for p in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt/nvidia", "/usr/local/nvidia"):
        if os.path.isdir(p) and not os.path.islink(p):
            paths.append(p)
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            paths.append(os.path.realpath(os.environ[var]))
    for p in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
        if p and os.path.isdir(p):
            paths.append(os.path.realpath(p))
    # compilers named by the environment or found first on PATH (a toolchain under /opt, say): their prefix
    for name in [os.environ.get(v, "") for v in ("CC", "CXX", "CUDAHOSTCXX", "NVCC_CCBIN")] + ["c++", "gcc", "nvcc"]:
        found = shutil.which(name) if name else None
        if found:
            prefix = Path(os.path.realpath(found)).parent.parent
            if str(prefix) not in ("/", "/usr"):
                paths.append(str(prefix))
    return [p for p in paths if os.path.exists(p)]
