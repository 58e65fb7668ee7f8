"""One GPU's shared/exclusive lock for every process on the machine that judges or runs a policy on it.

A judge's own threads take turns on a device through `judge._SharedExclusive` (trials share it, a timing holds it
alone). That is one process's view: a second judge on the same GPU (an evaluation run beside a training stage, two
stages started from the Prefect UI, the Ray pool's actors) ran its trials, and a policy its generation, while the
first timed a kernel alone — and a second CUDA context on the GPU slows a timed kernel longer than a time slice
1.76x (benchmarks/spinner_probe.py): noise in every speedup, hence in every timed reward. This lock extends the
same rule across processes with flock(2) on two files named after the GPU's UUID (CUDA_VISIBLE_DEVICES renumbers
GPUs per process; the UUID is the GPU):

- `<key>.lock`: held shared by a process while any of its threads holds the device shared, exclusively by the
  process that times on it;
- `<key>.turn`: an exclusive holder takes it first, and every new shared hold passes through it (held shared for an
  instant), so a waiting timing goes before new trials of any process, as it does within one.

flock belongs to an open file, not to a thread, so each hold opens its own; the kernel drops it if the process
dies. Sandboxes never see these files (they live outside every sandbox's mounts, and candidates cannot name
them: the judge, not the candidate, takes the lock).
"""

from __future__ import annotations

import fcntl
import os
import re
import tempfile
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCKS_ENV = "KERNELDOJO_DEVICE_LOCKS"


def device_locks_dir() -> Path:
    """Where the machine's device locks live: $KERNELDOJO_DEVICE_LOCKS, else a folder of the system's temp dir
    (one per user: every process of a user's runs meets there)."""
    configured = os.environ.get(LOCKS_ENV)
    return Path(configured) if configured else Path(tempfile.gettempdir()) / f"kerneldojo-device-locks-{os.getuid()}"


def cuda_device_key(device_index: int) -> str:
    """The GPU's UUID as this process sees device `device_index` (the same GPU has the same key in every
    process, whatever its CUDA_VISIBLE_DEVICES)."""
    import torch

    props = torch.cuda.get_device_properties(device_index)
    if getattr(props, "uuid", None) is not None:
        return f"gpu-{props.uuid}"
    if getattr(props, "pci_bus_id", None) is not None:  # the GPU's slot: as unique on one machine
        return f"gpu-pci-{getattr(props, 'pci_domain_id', 0)}-{props.pci_bus_id}-{getattr(props, 'pci_device_id', 0)}"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")  # the last resort: the machine's numbering
    return f"gpu-{visible[device_index] if device_index < len(visible) and visible[device_index] else device_index}"


class MachineDeviceLock:
    """The cross-process half of a device's lock (see the module's docstring). Not re-entrant; the in-process
    half (`judge._SharedExclusive`) decides which of this process's threads go, and calls `shared_acquire` /
    `shared_release` for each shared holder and `exclusive` around its one exclusive holder."""

    def __init__(self, key: str, directory: Path | None = None):
        directory = Path(directory) if directory is not None else device_locks_dir()
        name = re.sub(r"[^0-9A-Za-z_.-]", "_", key)  # however torch prints a UUID: one file name
        self.path = directory / f"{name}.lock"
        self.turn_path = directory / f"{name}.turn"
        try:
            directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            for path in (self.path, self.turn_path):
                self._close(self._open(path))
        except OSError as exc:
            raise RuntimeError(f"the GPU's lock files cannot be made in {directory} ({exc.strerror}): every judge "
                               f"and policy on the machine meets there; set ${LOCKS_ENV} to a folder this user "
                               "can write (the same for all of the machine's runs)") from exc
        _instances.add(self)
        self._holders = 0  # this process's threads that hold the device shared
        self._fd: int | None = None  # the open file whose shared flock they hold
        self._transition = threading.Lock()  # one thread at a time takes or drops the process's shared flock

    def _open(self, path: Path) -> int:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        with _open_fds_guard:
            _open_fds.add(fd)
        return fd

    def _close(self, fd: int) -> None:
        with _open_fds_guard:
            if fd not in _open_fds:  # closed already by _after_fork (its number may be another file's now)
                return
            _open_fds.discard(fd)
        os.close(fd)

    def _forgotten_in_a_fork(self) -> None:
        """In a forked child: it holds nothing (its copies of the holds' files are closed, _after_fork)."""
        self._fd, self._holders, self._transition = None, 0, threading.Lock()

    def _pass_turn(self) -> None:
        """Wait while another process's timing waits for or holds the device (it holds the turn exclusively)."""
        fd = self._open(self.turn_path)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
        finally:
            self._close(fd)  # releases it

    def shared_acquire(self) -> None:
        self._pass_turn()
        with self._transition:
            if self._holders == 0:
                fd = self._open(self.path)
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH)
                except BaseException:
                    self._close(fd)
                    raise
                self._fd = fd
            self._holders += 1

    def shared_release(self) -> None:
        with self._transition:
            if self._holders == 0:  # a forked child leaving a hold its parent took (_forgotten_in_a_fork)
                return
            self._holders -= 1
            if self._holders == 0 and self._fd is not None:
                self._close(self._fd)  # drops the flock
                self._fd = None

    def holders(self) -> list[str]:
        """Who holds this device's lock files now, from /proc/locks: "pid N (its command) shared|alone lock|turn"
        for each flock on them (a process gone while a fork of it keeps the open file reads "gone"). What a
        judgement waiting on another process has to say: which process, and whether it still lives."""
        try:
            inodes = {os.stat(self.path).st_ino: "lock", os.stat(self.turn_path).st_ino: "turn"}
            with open("/proc/locks") as table:
                rows = table.read().splitlines()
        except OSError:
            return []
        held = []
        for row in rows:
            fields = row.split()
            if len(fields) < 6 or fields[1] != "FLOCK" or fields[3] not in ("READ", "WRITE"):
                continue
            pid, inode = fields[4], fields[5].rsplit(":", 1)[-1]
            if not (inode.isdigit() and int(inode) in inodes):
                continue
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                command = command.strip()[:80] or "?"
            except OSError:
                command = "gone"
            kind = "shared" if fields[3] == "READ" else "alone"
            held.append(f"pid {pid} ({command}) {kind} {inodes[int(inode)]}")
        return held

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """The device alone on the machine: no new shared hold of any process starts (the turn), and those of other
        processes have ended (the lock). The caller's own process holds none (its in-process half saw to it)."""
        turn = self._open(self.turn_path)
        try:
            fcntl.flock(turn, fcntl.LOCK_EX)
            fd = self._open(self.path)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                self._close(fd)
        finally:
            self._close(turn)


_machine_locks: dict[tuple[str, Path], MachineDeviceLock] = {}
_machine_locks_guard = threading.Lock()
# Every open file of a hold, in this process. A fork copies them (O_CLOEXEC acts at exec only), and a flock lives
# while any copy of its open file does: a child forked during a shared hold — a DataLoader's worker, a
# multiprocessing fork — kept the GPU "held" after its parent let go, and every timing on the machine waited for
# that child to exit. So a forked child closes its copies at once.
_open_fds: set[int] = set()
_open_fds_guard = threading.Lock()
_instances: "weakref.WeakSet[MachineDeviceLock]" = weakref.WeakSet()


def _after_fork() -> None:
    global _open_fds_guard, _machine_locks_guard
    _open_fds_guard, _machine_locks_guard = threading.Lock(), threading.Lock()  # held at the fork by a dead thread
    for fd in list(_open_fds):
        try:
            os.close(fd)
        except OSError:
            pass
    _open_fds.clear()
    for lock in list(_instances):
        lock._forgotten_in_a_fork()


os.register_at_fork(after_in_child=_after_fork)


def machine_lock(key: str, directory: Path | None = None) -> MachineDeviceLock:
    """This process's one MachineDeviceLock of a device (its judge and its policy count their shared holds
    together, on one open file)."""
    directory = Path(directory) if directory is not None else device_locks_dir()
    with _machine_locks_guard:
        if (key, directory) not in _machine_locks:
            _machine_locks[(key, directory)] = MachineDeviceLock(key, directory)
        return _machine_locks[(key, directory)]


@contextmanager
def policy_on_device(device: str) -> Iterator[None]:
    """Around a policy's GPU work (a generation batch, an update): shared with judges' trials, never beside a
    kernel timed alone by any judge on the machine — a policy generating beside a timing slows the timed kernel as
    another judge's trials would. Nothing on the CPU (timing there is never alone)."""
    import torch

    where = torch.device(device)
    if where.type != "cuda":
        yield
        return
    lock = machine_lock(cuda_device_key(where.index if where.index is not None else torch.cuda.current_device()))
    lock.shared_acquire()
    try:
        yield
    finally:
        lock.shared_release()
