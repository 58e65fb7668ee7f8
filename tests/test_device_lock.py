"""A device's timing is alone across processes: another judge's trials (or a policy's generation) on the same GPU
wait for it, and it waits for them — the judges are real processes sharing real lock files."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from verifier.device_lock import machine_lock
from verifier.judge import Devices

REPO = Path(__file__).resolve().parents[1]

# another process of the machine: its own Devices (or a policy's hold) on the same GPU key, which writes when its
# holds start and end (seconds of the shared monotonic clock) to `log`
OTHER = textwrap.dedent("""
    import sys, threading, time
    from pathlib import Path
    from verifier.judge import Devices
    from verifier.device_lock import machine_lock
    mode, locks, log, hold, count = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
    if mode == "gpu-policy":
        mode, devices = "policy", None
    elif mode.startswith("gpu-"):  # the GPU's own key, as a pool on it makes it ($KERNELDOJO_DEVICE_LOCKS: locks)
        mode, devices = mode.removeprefix("gpu-"), Devices.gpus([0])
    else:
        devices = Devices([0], exclusive_timing=True, machine_keys={0: "gpu-test"}, locks_dir=locks)
    lines, guard = [], threading.Lock()

    def note(*words):
        with guard:
            lines.append(" ".join(str(w) for w in words))
            log.write_text("\\n".join(lines) + "\\n")

    def held(i=0):
        note("start", i, time.monotonic())
        time.sleep(hold)
        note("end", i, time.monotonic())

    def trial(i):
        with devices.trials(0):
            held(i)

    if mode == "timing":
        with devices.timing(0):
            held()
    elif mode == "dies-timing":
        import os
        with devices.timing(0):
            note("start", 0, time.monotonic())
            os._exit(0)  # no release: the kernel drops its locks
    elif mode == "policy" and devices is None:  # a policy's GPU work (verifier.device_lock.policy_on_device)
        from verifier.device_lock import policy_on_device
        with policy_on_device("cuda:0"):
            held()
    elif mode == "forks-holding":  # a fork during a shared hold (a DataLoader's worker), alive after the release
        import os
        lock = machine_lock("gpu-test", locks)
        lock.shared_acquire()
        child = os.fork()
        if child == 0:
            time.sleep(hold)
            os._exit(0)
        note("child", child, 0)
        lock.shared_release()
        note("end", 0, time.monotonic())
        os.waitpid(child, 0)
    elif mode == "policy":
        lock = machine_lock("gpu-test", locks)
        lock.shared_acquire()
        held()
        lock.shared_release()
    else:  # "trials": `count` holds, each starting half a hold after the last, so the device is never free
        threads = []
        for i in range(count):
            threads.append(threading.Thread(target=trial, args=(i,)))
            threads[-1].start()
            time.sleep(hold / 2)
        for t in threads:
            t.join()
""")


def _other(mode: str, locks: Path, log: Path, hold: float, count: int = 1, env: dict | None = None) \
        -> subprocess.Popen:
    # the GPU box's packages are on its PYTHONPATH, not in site-packages: keep it after the repo
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return subprocess.Popen([sys.executable, "-c", OTHER, mode, str(locks), str(log), str(hold), str(count)],
                            cwd=REPO, env={"PYTHONPATH": path, "PATH": "/usr/bin:/bin", **(env or {})})


def _events(log: Path) -> list[tuple[str, int, float]]:
    if not log.exists():
        return []
    return [(w[0], int(w[1]), float(w[2])) for w in (line.split() for line in log.read_text().splitlines() if line)]


def _wait_for_start(log: Path, proc: subprocess.Popen, timeout: float = 60.0) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        started = [t for kind, _, t in _events(log) if kind == "start"]
        if started:
            return started[0]
        assert proc.poll() is None, "the other process ended before it held the device"
        time.sleep(0.02)
    raise AssertionError("the other process never held the device")


def _devices(locks: Path) -> Devices:
    return Devices([0], exclusive_timing=True, machine_keys={0: "gpu-test"}, locks_dir=locks)


def test_a_timing_waits_for_another_processes_trials_on_its_gpu(tmp_path):
    log = tmp_path / "other.log"
    other = _other("trials", tmp_path / "locks", log, hold=2.0)
    try:
        _wait_for_start(log, other)
        with _devices(tmp_path / "locks").timing(0):
            timed_from = time.monotonic()
        other.wait(60)
    finally:
        other.kill()
    ((_, _, ended),) = [e for e in _events(log) if e[0] == "end"]
    assert timed_from >= ended, f"timed {ended - timed_from:.2f} s before the other process's trial ended"


def test_another_processes_trials_and_a_policys_work_wait_for_a_timing(tmp_path):
    devices = _devices(tmp_path / "locks")
    for mode in ("trials", "policy"):
        log = tmp_path / f"{mode}.log"
        with devices.timing(0):
            other = _other(mode, tmp_path / "locks", log, hold=0.1)
            try:
                time.sleep(4.0)  # the other process starts (imports torch) and asks for the device meanwhile
                assert other.poll() is None and _events(log) == [], f"{mode}: it ran while the device was timed"
                released = time.monotonic()
            except BaseException:
                other.kill()
                raise
        try:
            started = _wait_for_start(log, other)
            assert other.wait(60) == 0
        finally:
            other.kill()
        assert started >= released, mode


def test_a_waiting_timing_goes_before_another_processes_new_trials(tmp_path):
    """Another process whose overlapping trials would keep the GPU shared for 10 s: the timing asked for gets in
    after the trials already running, and the next ones wait for it — as within one process."""
    log = tmp_path / "other.log"
    other = _other("trials", tmp_path / "locks", log, hold=1.0, count=20)
    try:
        _wait_for_start(log, other)
        asked = time.monotonic()
        with _devices(tmp_path / "locks").timing(0):
            timed_from = time.monotonic()
            time.sleep(1.0)
            timed_to = time.monotonic()
        other.wait(120)
    finally:
        other.kill()
    assert timed_from - asked < 3.0, f"the timing waited {timed_from - asked:.1f} s behind new trials"
    starts = {i: t for kind, i, t in _events(log) if kind == "start"}
    ends = {i: t for kind, i, t in _events(log) if kind == "end"}
    assert len(starts) == len(ends) == 20
    for i in starts:  # no trial of the other process overlaps the timing
        assert ends[i] <= timed_from or starts[i] >= timed_to, (i, starts[i], ends[i], timed_from, timed_to)


def test_a_process_that_dies_while_timing_frees_the_gpu(tmp_path):
    log = tmp_path / "other.log"
    other = _other("dies-timing", tmp_path / "locks", log, hold=0.0)
    try:
        _wait_for_start(log, other)
        other.wait(60)
    finally:
        other.kill()
    done = threading.Event()

    def trial():
        with _devices(tmp_path / "locks").trials(0):
            done.set()

    threading.Thread(target=trial, daemon=True).start()
    assert done.wait(10), "a dead process's timing still holds the GPU"


def test_one_process_counts_its_judges_and_policys_shared_holds_on_one_lock(tmp_path):
    """The policy's hold and the judge's of one process are one lock: the process's own timing waits for its
    policy's generation (which may share the GPU with trials, never with a timed kernel)."""
    assert machine_lock("gpu-test", tmp_path) is machine_lock("gpu-test", tmp_path)
    devices = _devices(tmp_path)
    policy = machine_lock("gpu-test", tmp_path)
    policy.shared_acquire()
    timed = threading.Event()

    def timing():
        with devices.timing(0):
            timed.set()

    threading.Thread(target=timing, daemon=True).start()
    assert not timed.wait(1.0), "timed beside the policy's generation"
    policy.shared_release()
    assert timed.wait(10)


@pytest.mark.gpu
def test_cuda_a_pools_timing_waits_for_another_processes_trials_on_the_same_gpu(tmp_path, monkeypatch):
    """Two processes that number the GPU differently (one sees it through CUDA_VISIBLE_DEVICES) meet on its
    UUID: the pool's devices (`Devices.gpus`, what LocalVerifierPool and the Ray actors use) time it alone."""
    import re

    import torch

    monkeypatch.setenv("KERNELDOJO_DEVICE_LOCKS", str(tmp_path / "locks"))
    log = tmp_path / "other.log"
    uuid = str(torch.cuda.get_device_properties(0).uuid).removeprefix("GPU-")
    # CUDA's name of the GPU by its UUID where torch shows one (else its index: the same GPU, numbered alike)
    visible = f"GPU-{uuid}" if re.fullmatch(r"[0-9a-fA-F-]{36}", uuid) else "0"
    other = _other("gpu-trials", tmp_path / "locks", log, hold=2.0,
                   env={"KERNELDOJO_DEVICE_LOCKS": str(tmp_path / "locks"), "CUDA_VISIBLE_DEVICES": visible})
    try:
        _wait_for_start(log, other)
        with Devices.gpus([0]).timing(0):
            timed_from = time.monotonic()
        assert other.wait(60) == 0
    finally:
        other.kill()
    ((_, _, ended),) = [e for e in _events(log) if e[0] == "end"]
    assert timed_from >= ended, f"timed {ended - timed_from:.2f} s before the other process's trial ended"


def test_a_lock_folder_that_cannot_be_written_is_one_clear_error(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    with pytest.raises(RuntimeError, match="KERNELDOJO_DEVICE_LOCKS"):
        Devices([0], exclusive_timing=True, machine_keys={0: "gpu-clear"}, locks_dir=blocked / "locks")


@pytest.mark.gpu
def test_cuda_a_policys_generation_in_another_process_waits_for_a_pools_timing(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELDOJO_DEVICE_LOCKS", str(tmp_path / "locks"))
    log = tmp_path / "policy.log"
    with Devices.gpus([0]).timing(0):
        other = _other("gpu-policy", tmp_path / "locks", log, hold=0.1,
                       env={"KERNELDOJO_DEVICE_LOCKS": str(tmp_path / "locks")})
        try:
            time.sleep(8.0)  # it imports torch, makes its CUDA context and asks for the GPU meanwhile
            assert other.poll() is None and _events(log) == [], "the policy ran on the GPU while it was timed"
            released = time.monotonic()
        except BaseException:
            other.kill()
            raise
    try:
        assert _wait_for_start(log, other) >= released
        assert other.wait(60) == 0
    finally:
        other.kill()


def test_a_child_forked_during_a_shared_hold_does_not_keep_the_gpu_held(tmp_path):
    """flock belongs to the open file, and a fork copies the process's open files (O_CLOEXEC acts at exec only):
    a child forked while its parent held the device shared kept the lock after the parent let go, and every
    timing on the machine waited for the child to exit. A forked child closes its copies at once."""
    log = tmp_path / "other.log"
    other = _other("forks-holding", tmp_path / "locks", log, hold=30.0)
    timed = threading.Event()
    try:
        deadline = time.monotonic() + 60
        while not any(kind == "end" for kind, _, _ in _events(log)) and time.monotonic() < deadline:
            assert other.poll() is None, "the other process ended early"
            time.sleep(0.05)
        worker = threading.Thread(target=lambda: (_devices(tmp_path / "locks").timing(0).__enter__(), timed.set()),
                                  daemon=True)
        worker.start()
        assert timed.wait(10), "a timing waited for the forked child of a process that had released the device"
    finally:
        for kind, pid, _ in _events(log):
            if kind == "child":
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, 9)
        other.kill()
        other.wait(10)


def test_the_lock_says_which_process_holds_it(tmp_path):
    """A judgement waiting on another process's hold (the heartbeat's line) names it: its pid, its command, how
    it holds the device."""
    log = tmp_path / "other.log"
    other = _other("trials", tmp_path / "locks", log, hold=20.0)
    try:
        _wait_for_start(log, other)
        holders = _devices(tmp_path / "locks").lock_holders()
        assert any(h.startswith(f"device 0: pid {other.pid} (") and h.endswith(" shared lock") for h in holders), \
            holders
    finally:
        other.kill()
        other.wait(10)
    assert _devices(tmp_path / "locks").lock_holders() == []
