"""The Ray pool on a real multi-process Ray cluster (a head node and a worker node started by `ray start`, as on a
cluster), with a judging worker killed mid-candidate: no verdict is lost."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
import pytest

from schemas import load_config
from tests.kernels import RED_TEAM, candidate, problem
from verifier.pool import make_pool

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow

RAY = str(Path(sys.executable).with_name("ray"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ours(temp_dir: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        try:
            if any(temp_dir in part for part in process.info["cmdline"] or []):
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return found


@pytest.fixture
def ray_cluster(monkeypatch):
    """Head + worker node, each its own processes (GCS, raylet, workers), under a session dir of the test's own so
    that tearing it down touches no other Ray on the machine. Token authentication, as Ray's own local clusters
    use: the token of `~/.ray/auth_token` (made if missing), read by both nodes and this driver."""
    temp_dir = tempfile.mkdtemp(prefix="kdray-", dir="/tmp")  # Ray's socket paths must stay short
    port = _free_port()
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    env = dict(os.environ)
    subprocess.run([RAY, "get-auth-token", "--generate"], env=env, check=True, capture_output=True, timeout=60)
    common = ["--num-cpus=1", "--disable-usage-stats"]
    try:  # (a failed start leaves processes too: the teardown below finds them by the session dir)
        subprocess.run([RAY, "start", "--head", f"--port={port}", f"--temp-dir={temp_dir}", "--include-dashboard=false",
                        *common],
                       env=env, check=True, capture_output=True, timeout=180)
        subprocess.run([RAY, "start", f"--address=127.0.0.1:{port}", *common], env=env, check=True,
                       capture_output=True, timeout=180)
    except subprocess.CalledProcessError as exc:
        pytest.fail(f"{' '.join(exc.cmd[1:3])} failed: {(exc.stderr or b'').decode()[-1500:]}")
    try:
        yield f"127.0.0.1:{port}"
    finally:
        if ray.is_initialized():
            ray.shutdown()
        for process in _ours(temp_dir):
            process.kill()
        shutil.rmtree(temp_dir, ignore_errors=True)


def _judging_actor() -> psutil.Process | None:
    """A judge actor's worker process while it runs `verify` (Ray titles it `ray::_JudgeActor.verify`)."""
    for process in psutil.process_iter(["cmdline"]):
        try:
            if (process.info["cmdline"] or [""])[0].startswith("ray::_JudgeActor.verify"):
                return process
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return None


def test_a_worker_killed_mid_candidate_loses_no_verdict(ray_cluster, verifier_cache):
    cfg = load_config(None, ["verifier.pool=ray", f"verifier.ray_address={ray_cluster}", "verifier.workers=2",
                             "verifier.run_timeout_s=5", "verifier.use_cache=false",
                             f"verifier.cache_dir={verifier_cache}"]).verifier
    names = ["correct", "wrong_output", "segfault", "cpp_compile_error", "torch_compute", "infinite_loop"]
    pairs = [(problem(), candidate(name)) for name in names]
    with make_pool(cfg, verifier_cache, base_seed=11) as pool:
        nodes = {node["NodeID"] for node in ray.nodes() if node["Alive"]}
        assert len(nodes) == 2  # a head and a worker node, not an in-process Ray
        killed: list[int] = []

        def kill_one_judging_worker() -> None:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                victim = _judging_actor()
                if victim is not None:
                    killed.append(victim.pid)
                    os.kill(victim.pid, signal.SIGKILL)
                    return
                time.sleep(0.05)

        killer = threading.Thread(target=kill_one_judging_worker)
        killer.start()
        verdicts = {v.candidate_id: v for v in pool.verify_many(pairs)}
        killer.join()
    assert killed, "no judging worker was seen to kill"
    assert set(verdicts) == {cand.id for _, cand in pairs}  # every candidate has its verdict, once
    for name, (_, cand) in zip(names, pairs):
        assert verdicts[cand.id].category == RED_TEAM[name][1], name
