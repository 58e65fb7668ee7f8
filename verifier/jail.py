"""OS isolation for one sandbox process, applied in place to a freshly forked child.

A sandbox is a fork of a warm interpreter (torch already imported), so exec-based tools (bubblewrap,
nsjail) would cost a fresh `import torch` (~1.5 s of CPU) per candidate. The same walls are built here,
with the same system calls, in the forked child before it sees any candidate code:

- cgroup (v2, or v1's memory and pids hierarchies): a memory and a process limit for the whole tree;
- namespaces: mount, pid, net (no interface but a down loopback), ipc, uts, cgroup, and then a user
  namespace entered as an unprivileged uid/gid owned by no file on the machine;
- a filesystem view built on an empty tmpfs: the toolchain, Python and the build cache read-only at
  their usual paths, the sandbox's scratch and data-plane directories writable, a `/dev` with only the
  null/zero/random nodes (and for cuda the `/dev/nvidia*` nodes of its GPU), a `/proc` of its own pid
  namespace (it sees only itself);
- rlimits, all file descriptors but the judge's channel closed, no_new_privs and a seccomp filter
  (libseccomp): no ptrace, no sockets but Unix ones, no mounts or namespaces, no kernel keyrings, BPF or
  modules, no io_uring, and for run jails no process creation and no signals beyond its own process.

The process that called `enter` stays outside as the keeper: it waits for the jailed process (pid 1 of
the new pid namespace) and exits the way it did. Killing the keeper kills the jail (parent-death signal),
and the death of pid 1 kills every process in the namespace, so nothing a candidate starts outlives it.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import resource
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_THREAD = 0x00010000
AF_UNIX = 1

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_DUMPABLE = 1, 4
_PIVOT_ROOT = {"x86_64": 155, "aarch64": 217}
_CAPSET = {"x86_64": 126, "aarch64": 91}
_STATVFS_LOCKED = {os.ST_NOSUID: MS_NOSUID, os.ST_NODEV: MS_NODEV, os.ST_NOEXEC: MS_NOEXEC}

# Host device nodes every sandbox gets; cuda sandboxes add their GPU's.
BASIC_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
NVIDIA_SHARED_DEVICES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools")

_libc = ctypes.CDLL(None, use_errno=True)


ISOLATION_FAILED_EXIT = 71


class JailError(RuntimeError):
    """Isolation could not be set up: a fault of the machine or the harness, never of the candidate."""


@dataclass(frozen=True)
class JailPlan:
    """Everything the child needs to confine itself; computed by the judge (verifier/isolation.py)."""

    mountpoint: str  # an empty host directory the new root (a tmpfs) is mounted on, privately
    readonly: tuple[str, ...]  # host directories and files bound read-only at the same paths
    symlinks: tuple[tuple[str, str], ...]  # (path, target) recreated inside the view
    writable: tuple[str, ...]  # bound read-write at the same paths (scratch, data plane)
    devices: tuple[str, ...]  # /dev nodes bound into the view
    uid: int
    gid: int
    cgroups: tuple[str, ...] = ()  # cgroup directories to join (already created, limits written)
    processes: bool = False  # may start processes (build jails run compilers)
    memory_bytes: int = 0  # RLIMIT_AS per process when > 0 (cpu only: CUDA reserves huge address ranges)
    max_tasks: int = 512  # RLIMIT_NPROC: processes and threads of the (unique) uid
    open_files: int = 4096
    file_bytes: int = 8 << 30  # RLIMIT_FSIZE: see file_size_limit
    tmp_bytes: int = 1 << 30  # /tmp is a tmpfs of this size (charged to the sandbox's memory)
    hub_cache: str | None = None  # a local Hugging Face hub cache bound read-only (HF_HUB_CACHE inside)
    extra_env: dict[str, str] = field(default_factory=dict)


def file_size_limit(memory_mb: int) -> int:
    """The largest file a sandbox may write: 8 GiB, or as much as its memory holds when that is more (a KernelBench
    level-1 reference trial at full size writes 12.8 GB of inputs and outputs into its tmpfs, charged to its memory)."""
    return max(8 << 30, memory_mb << 20)


def _check(result: int, what: str) -> int:
    if result == -1:
        err = ctypes.get_errno()
        raise JailError(f"{what}: {os.strerror(err)} (errno {err})")
    return result


def _syscall_number(table: dict[str, int]) -> int:
    machine = platform.machine()
    if machine not in table:
        raise JailError(f"no sandbox support for {machine} yet")
    return table[machine]


def unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = lambda s: s.encode() if s is not None else None
    _check(_libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           f"mount {source or fstype} on {target}")


def unmount(target: str) -> None:
    """Detach a mount (lazily: a sandbox process still dying in it does not keep it)."""
    _check(_libc.umount2(target.encode(), ctypes.c_int(MNT_DETACH)), f"umount {target}")


# Writable directories are tmpfs mounts of their own, each with its own inode count: files in the host's /dev/shm
# or on its disk are the machine's (3 million empty files, ~30 s of creat, take every inode of a 24 GB host's /dev/shm:
# no semaphore, no other judge's files), a tmpfs of its own is the sandbox's (its pages charged to its memory; its
# inodes a count it cannot pass).
SCRATCH_INODES = 65536  # work and /tmp: a compiler's and inductor's files, a few thousand at most
DATA_PLANE_INODES = 256  # io_out: the harness writes five files there
SHM_INODES = 1024  # the jail's own /dev/shm (64 MB): POSIX shared memory and semaphores


def private_tmpfs(target: str, size_bytes: int, inodes: int, mode: int, uid: int = 0, flags: int = 0) -> None:
    mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV | flags,
          f"mode={mode:o},size={size_bytes},nr_inodes={inodes},uid={uid},gid={uid}")


def _prctl(option: int, arg: int) -> None:
    _check(_libc.prctl(ctypes.c_int(option), ctypes.c_ulong(arg), ctypes.c_ulong(0), ctypes.c_ulong(0),
                       ctypes.c_ulong(0)), f"prctl({option})")


def _drop_capabilities() -> None:
    """Empty effective, permitted and inheritable sets (the user namespace granted a full set)."""

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    header, data = Header(0x20080522, 0), (Data * 2)()
    _check(_libc.syscall(_syscall_number(_CAPSET), ctypes.byref(header), ctypes.byref(data)), "capset")


def _locked_flags(path: str) -> int:
    """Mount flags a bind of `path` keeps (nosuid/nodev/noexec of the mount it lives on)."""
    flags = os.statvfs(path).f_flag
    return sum(ms for st, ms in _STATVFS_LOCKED.items() if flags & st)


def _make_target(path: str, like: str) -> None:
    if os.path.isdir(like):
        os.makedirs(path, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if not os.path.exists(path):
            with open(path, "w"):
                pass


def _bind(source: str, target: str, readonly: bool, extra: int = MS_NOSUID | MS_NODEV) -> None:
    """Bind `source` at `target`; read-only binds take the mounts below them too (container runtimes bind
    driver libraries into /usr one file at a time)."""
    _make_target(target, source)
    mount(source, target, None, MS_BIND | (MS_REC if readonly else 0))
    flags = MS_REMOUNT | MS_BIND | _locked_flags(source) | extra | (MS_RDONLY if readonly else 0)
    mount(None, target, None, flags)


def _build_view(plan: JailPlan, gpu: bool) -> None:
    """Mount the view on plan.mountpoint (we are pid 1 of a new pid namespace, in a private mount namespace)."""
    root = plan.mountpoint
    mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing we mount propagates back to the host
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m")
    inside = lambda p: root + p
    # /tmp first: host paths under /tmp (a test's cache, say) are bound below it, inside this tmpfs.
    # Nothing writable is executable: a candidate cannot drop a library of its own making and load it.
    # (Jails that may start processes get an executable /tmp: torch.compile's reference loads what Triton
    # and inductor build there. A candidate's run jail never does.)
    os.makedirs(inside("/tmp"))
    private_tmpfs(inside("/tmp"), plan.tmp_bytes, SCRATCH_INODES, 0o1777, flags=0 if plan.processes else MS_NOEXEC)
    # /dev: a tmpfs holding only the allowed nodes (bound, never created: no mknod needed)
    os.makedirs(inside("/dev"), exist_ok=True)
    mount("tmpfs", inside("/dev"), "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k")
    for node in plan.devices:
        if os.path.exists(node):
            _bind(node, inside(node), readonly=False, extra=MS_NOSUID | MS_NOEXEC)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
        os.symlink(target, inside(f"/dev/{name}"))
    os.makedirs(inside("/dev/shm"), exist_ok=True)
    private_tmpfs(inside("/dev/shm"), 64 << 20, SHM_INODES, 0o1777, flags=MS_NOEXEC)
    for path, target in plan.symlinks:
        os.makedirs(os.path.dirname(inside(path)), exist_ok=True)
        os.symlink(target, inside(path))
    for path in sorted(plan.readonly):
        if os.path.exists(path):
            _bind(path, inside(path), readonly=True)
    os.makedirs(inside("/etc"), exist_ok=True)
    with open(inside("/etc/passwd"), "w") as f:  # programs that look up their own uid find one
        f.write(f"root:x:0:0::/:/bin/false\nsandbox:x:{plan.uid}:{plan.gid}::/tmp:/bin/false\n")
    with open(inside("/etc/group"), "w") as f:
        f.write(f"root:x:0:\nsandbox:x:{plan.gid}:\n")
    with open(inside("/etc/hosts"), "w") as f:
        f.write("127.0.0.1 localhost sandbox\n")
    for path in sorted(plan.writable):
        _bind(path, inside(path), readonly=False, extra=MS_NOSUID | MS_NODEV | MS_NOEXEC)
    if gpu:  # the driver reads PCI topology and its own parameters here
        _bind("/sys", inside("/sys"), readonly=True)
    os.makedirs(inside("/proc"), exist_ok=True)
    mount("proc", inside("/proc"), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.chdir(root)
    _check(_libc.syscall(_syscall_number(_PIVOT_ROOT), b".", b"."), "pivot_root")
    _check(_libc.umount2(b".", ctypes.c_int(MNT_DETACH)), "umount old root")
    os.chdir("/")
    mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _join_cgroups(paths: tuple[str, ...]) -> None:
    for path in paths:
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))


def _drop_privileges(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)  # from root to non-zero ids: every capability is cleared
    _prctl(PR_SET_DUMPABLE, 1)  # changing ids made /proc/self root's; the maps below are written there
    # A user namespace of our own, entered unprivileged: mapped to the same ids, it changes no file access.
    unshare(CLONE_NEWUSER)
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"{uid} {uid} 1\n")
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny\n")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"{gid} {gid} 1\n")
    _drop_capabilities()


def _set_rlimits(plan: JailPlan) -> None:
    limits = {resource.RLIMIT_CORE: 0, resource.RLIMIT_FSIZE: plan.file_bytes,
              resource.RLIMIT_NOFILE: plan.open_files, resource.RLIMIT_NPROC: plan.max_tasks}
    if plan.memory_bytes:
        limits[resource.RLIMIT_AS] = plan.memory_bytes
    for which, value in limits.items():
        resource.setrlimit(which, (value, value))


def _close_fds(keep: set[int]) -> None:
    for fd in sorted(int(n) for n in os.listdir("/proc/self/fd")):
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def seccomp_filter(processes: bool):
    """The system-call filter (libseccomp): what no sandbox may do, whatever its code."""
    import pyseccomp as sc

    refuse = sc.ERRNO(errno.EPERM)
    f = sc.SyscallFilter(defaction=sc.ALLOW)
    denied = [
        # other processes' memory and fds
        "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "pidfd_open",
        "pidfd_send_signal",
        # the filesystem view and namespaces
        "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "move_mount", "open_tree", "fsopen",
        "fsmount", "fsconfig", "fspick", "mount_setattr", "mknod", "mknodat", "open_by_handle_at",
        "name_to_handle_at",
        # the kernel
        "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd", "init_module",
        "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff",
        "acct", "quotactl", "iopl", "ioperm", "syslog", "settimeofday", "clock_settime", "adjtimex",
        "clock_adjtime", "sethostname", "setdomainname", "personality", "vhangup", "uselib",
        # io_uring runs operations the filter never sees
        "io_uring_setup", "io_uring_enter", "io_uring_register",
    ]
    for name in denied:
        try:
            f.add_rule(refuse, name)
        except (ValueError, OSError):  # not a system call on this architecture
            pass
    f.add_rule(refuse, "ioctl", sc.Arg(1, sc.EQ, 0x5412))  # TIOCSTI: typing into a terminal
    # The network: no sockets but Unix ones. The CUDA driver opens a Unix socket at start-up (to reach a
    # daemon that is not in the view; without the socket call it fails the whole CUDA init). A Unix socket
    # reaches only paths in the view and the net namespace's own abstract names: nothing.
    f.add_rule(refuse, "socket", sc.Arg(0, sc.NE, AF_UNIX))
    f.add_rule(refuse, "socketpair", sc.Arg(0, sc.NE, AF_UNIX))
    if not processes:
        for name in ("fork", "vfork", "execve", "execveat"):
            try:
                f.add_rule(refuse, name)
            except (ValueError, OSError):
                pass
        f.add_rule(refuse, "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_THREAD, 0))  # threads only
        f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")  # flags live in memory: make libc fall back to clone
        # signals: only to itself (pid 1 of its namespace) or its own process group
        f.add_rule(refuse, "kill", sc.Arg(0, sc.GT, 1))
        f.add_rule(refuse, "tgkill", sc.Arg(0, sc.NE, 1))
        f.add_rule(refuse, "rt_sigqueueinfo", sc.Arg(0, sc.NE, 1))
        f.add_rule(refuse, "rt_tgsigqueueinfo", sc.Arg(0, sc.NE, 1))
        f.add_rule(refuse, "tkill")
    return f


def _keep_status(pid: int) -> None:
    """The keeper: wait for the jailed process and leave the way it left (same exit code or signal)."""
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except ChildProcessError:
            os._exit(70)
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 70)


def enter(plan: JailPlan, keep_fds: set[int], gpu: bool = False, on_failure=None) -> None:
    """Confine this (single-threaded, root) process. Returns only in the jailed process; the caller's
    process becomes its keeper and exits when it does. Raises JailError before anything is confined;
    a failure after that calls `on_failure(message)` and exits with ISOLATION_FAILED_EXIT."""
    if os.geteuid() != 0:
        raise JailError("the sandbox isolates candidates as root (it needs CAP_SYS_ADMIN for namespaces and "
                        "to switch to an unprivileged uid); run the verifier as root, or set "
                        "verifier.isolation: none for trusted code only")
    unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID)
    keeper_alive, keeper_holds = os.pipe()  # EOF on the first once the keeper is gone
    pid = os.fork()
    if pid:
        for fd in (*keep_fds, keeper_alive):  # the judge must see EOF as soon as the jailed process dies
            try:
                os.close(fd)
            except OSError:
                pass
        _keep_status(pid)
    try:
        # the jail joins its cgroups, the keeper stays out: the judge kills the jail's whole tree through
        # them, and the keeper reaps it and leaves the way it did
        _join_cgroups(plan.cgroups)
        unshare(CLONE_NEWCGROUP)  # after joining: its cgroup is the root of what it can see
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        os.close(keeper_holds)
        os.set_blocking(keeper_alive, False)
        try:
            if os.read(keeper_alive, 1) == b"":  # the keeper died before the parent-death signal was set
                os._exit(70)
        except BlockingIOError:
            pass
        os.close(keeper_alive)
        _build_view(plan, gpu)
        _libc.sethostname(b"sandbox", ctypes.c_size_t(7))
        _drop_privileges(plan.uid, plan.gid)
        _set_rlimits(plan)
        _close_fds(keep_fds)
        os.environ.update(plan.extra_env)
        # every cache a library keeps goes to the jail's own /tmp (the host's are not in its view)
        os.environ.update(TMPDIR="/tmp", HOME="/tmp", XDG_CACHE_HOME="/tmp/.cache", TRITON_HOME="/tmp",
                          TRITON_CACHE_DIR="/tmp/.triton/cache", TORCHINDUCTOR_CACHE_DIR="/tmp/torchinductor",
                          # inductor compiles in this process: its default pool (a subprocess of one worker a
                          # core, 16 on the GPU box, each with its threads) ran a compiled baseline's sandbox
                          # into its task limit, and the baseline died at random (exit 255, the pool's resource
                          # tracker gone; cudaErrorOperatingSystem pinning memory beside it)
                          TORCHINDUCTOR_COMPILE_THREADS="1",
                          CUDA_CACHE_PATH="/tmp/.nv/ComputeCache", TORCH_EXTENSIONS_DIR="/tmp/torch_extensions",
                          # no network here: libraries that would fetch (a reference loading a hub model) fail
                          # at once with their offline error instead of retrying for half a minute
                          HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_DATASETS_OFFLINE="1",
                          **({"HF_HUB_CACHE": plan.hub_cache} if plan.hub_cache else {}))
        seccomp_filter(plan.processes).load()  # sets no_new_privs too
    except BaseException as exc:  # half-confined: never run candidate code
        try:
            if on_failure:
                on_failure(f"sandbox isolation failed: {exc}")
        finally:
            os._exit(ISOLATION_FAILED_EXIT)


def python_paths(private: str | None = None) -> list[str]:
    """Directories the interpreter and its packages live in (read-only in the view): its prefixes and every
    directory on sys.path, except one holding `private` (a repository whose home holds the judge's state:
    its packages are bound one by one instead)."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *(p for p in sys.path if p)}
    resolved = {str(Path(p).resolve()) for p in paths if os.path.isdir(p)}
    if private:
        hidden = str(Path(private).resolve())
        resolved = {p for p in resolved if not (hidden + "/").startswith(p.rstrip("/") + "/")}
    return sorted(resolved)
