"""The pipeline's own faults: killed stages, a Prefect server outliving the CLI, and errors that were
tracebacks. The CLI runs for real in a subprocess, its state in a fresh KERNELDOJO_HOME."""

import faulthandler
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import psutil
import pytest
from mlflow.tracking import MlflowClient

from schemas.records import StageStatus
from warehouse.process import (STACKS_SIGNAL, TERMINATING_SIGNALS, Killed, ProcessIdentity, raise_killed_on_signals,
                               restore_signal_handlers)
from warehouse.store import Warehouse, WarehouseError
from warehouse.tracking import default_tracking_uri

ROOT = Path(__file__).resolve().parents[1]
# 2,000 NNSmith problems take minutes: the stage is surely still running when the signal comes
SLOW_SYNTHESIS = ["--set", "synthesize.num_problems=2000"]


def _env(home: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "KERNELDOJO_HOME": str(home), "KERNELDOJO_PROGRESS": "0", **extra}


def _cli(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flows.cli", *args], cwd=ROOT, env=_env(home, **env),
                          capture_output=True, text=True, timeout=300)


def _as_from_a_terminal() -> None:
    """The CLI as a terminal starts it, with the terminating signals at their defaults: a test run that is
    itself a background job of a shell without job control (`make test &`) has SIGINT ignored, its children
    inherit that, and the CLI rightly keeps ignoring a signal it was started ignoring (as under nohup)."""
    for signum in TERMINATING_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)


def _start_cli(home: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "flows.cli", *args], cwd=ROOT, env=_env(home),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_as_from_a_terminal)


def _running_stage(proc: subprocess.Popen, home: Path, timeout_s: float = 180):
    """The stage run `proc` is running, once its row and MLflow run exist."""
    path, deadline = home / "warehouse.duckdb", time.monotonic() + timeout_s
    wh = None
    while True:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the CLI ended or stalled before its stage ran: {proc.communicate()}")
        if wh is None and path.exists():
            wh = Warehouse(path)
        running = [r for r in wh.stage_runs() if r.status == StageStatus.running and r.mlflow_run_id] if wh else []
        if running:
            return wh, running[0]
        time.sleep(0.5)


def _prefect_servers(proc: subprocess.Popen) -> list[psutil.Process]:
    servers = [c for c in psutil.Process(proc.pid).children(recursive=True)
               if any("prefect_server.py" in part for part in c.cmdline())]
    assert servers, "the CLI started no Prefect server of its own"
    return servers


def _wait_gone(processes: list[psutil.Process], timeout_s: float = 15) -> list[psutil.Process]:
    """Those of `processes` still alive after `timeout_s`."""
    _, alive = psutil.wait_procs(processes, timeout=timeout_s)
    return [p for p in alive if p.status() != psutil.STATUS_ZOMBIE]


def _servers_started_by(cli_pid: int) -> list[psutil.Process]:
    """Prefect servers in the whole process table that a CLI with this pid started (its pid is their
    last argument), orphans included."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if any("prefect_server.py" in part for part in cmdline) and cmdline[-1] == str(cli_pid):
            found.append(process)
    return found


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def _exit_after_signal(proc: subprocess.Popen, timeout_s: float = 120) -> str:
    """`proc`'s stderr once it exits; if it has not within `timeout_s`, the test fails with every thread's stack
    (STACKS_SIGNAL, which the CLI and stage scripts register) so that a hang at exit says where it hangs."""
    try:
        return proc.communicate(timeout=timeout_s)[1]
    except subprocess.TimeoutExpired:
        # which signals it blocks, ignores or has pending (a mask or disposition inherited from this process
        # would hold the signal back), then every thread's stack; the first dump is the handler's own, 6 s in
        try:
            status = Path(f"/proc/{proc.pid}/status").read_text().splitlines()
        except OSError:  # it ended just now
            status = []
        signals = " ".join(line for line in status if line.startswith(("SigPnd", "ShdPnd", "SigBlk", "SigIgn")))
        ours = (f"this process: SIGINT handler {signal.getsignal(signal.SIGINT)}, "
                f"blocked {signal.pthread_sigmask(signal.SIG_BLOCK, [])}")
        proc.send_signal(STACKS_SIGNAL)
        time.sleep(3)
        proc.kill()
        stderr = proc.communicate()[1]
        pytest.fail(f"no exit {timeout_s:.0f} s after the signal; {signals}; {ours}; its stderr:\n{stderr[:3000]}\n"
                    f"[...]\n{stderr[-5000:]}")


# -- signals -------------------------------------------------------------------------------------------------
def test_sigterm_marks_the_running_stage_failed_and_stops_the_prefect_server(tmp_path):
    proc = _start_cli(tmp_path, "stage", "synthesize", *SLOW_SYNTHESIS)
    try:
        wh, run = _running_stage(proc, tmp_path)
        servers = _prefect_servers(proc)
        assert {p.pid for p in _servers_started_by(proc.pid)} == {p.pid for p in servers}
        proc.send_signal(signal.SIGTERM)
        stderr = _exit_after_signal(proc)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, stderr[-4000:]
    assert _error_lines(stderr) == [f"error: killed by SIGTERM; stage run {run.id} marked failed"]
    assert "Traceback" not in stderr
    failed = wh.stage_run(run.id)
    assert failed.status == StageStatus.failed and failed.error == "killed by SIGTERM" and failed.finished
    mlflow_run = MlflowClient(default_tracking_uri(tmp_path)).get_run(run.mlflow_run_id)
    assert mlflow_run.info.status == "FAILED" and mlflow_run.data.tags["kerneldojo.error"] == "killed by SIGTERM"
    assert _wait_gone(servers) == [] and _servers_started_by(proc.pid) == []


def test_sigint_during_the_pipeline_fails_the_stage_and_the_pipeline_run(tmp_path):
    proc = _start_cli(tmp_path, "run", *SLOW_SYNTHESIS)
    try:
        wh, run = _running_stage(proc, tmp_path)
        servers = _prefect_servers(proc)
        proc.send_signal(signal.SIGINT)
        stderr = _exit_after_signal(proc)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGINT, stderr[-4000:]
    assert _error_lines(stderr) == [f"error: killed by SIGINT; stage run {run.id} marked failed"]
    assert wh.stage_run(run.id).error == "killed by SIGINT"
    client = MlflowClient(default_tracking_uri(tmp_path))
    stage = client.get_run(run.mlflow_run_id)
    pipeline = client.get_run(stage.data.tags["mlflow.parentRunId"])
    assert stage.info.status == "FAILED" and pipeline.info.status == "FAILED"
    assert _wait_gone(servers) == [] and _servers_started_by(proc.pid) == []


def test_a_script_driving_stages_ends_in_order_when_its_whole_process_group_is_signalled(tmp_path):
    """`benchmarks.stage_chain` under `timeout` (SIGTERM to the whole process group). Before, the group's
    signal also stopped Prefect's own temporary server, and the script, its stage already marked failed,
    hung at exit retrying events to that server until SIGKILL (here: 90 s)."""
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.stage_chain", "--state", str(tmp_path / "chain.json"),
                             "--set", f"home={tmp_path}", *SLOW_SYNTHESIS, "--", "synthesize"],
                            cwd=ROOT, env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        wh, run = _running_stage(proc, tmp_path)
        servers = _prefect_servers(proc)
        assert servers, "the script runs its stages against a Prefect server of its own"
        os.killpg(proc.pid, signal.SIGTERM)
        signalled = time.monotonic()
        stderr = _exit_after_signal(proc)
        took = time.monotonic() - signalled
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, stderr[-4000:]
    assert took < 20, f"{took:.0f} s from the signal to the exit"
    assert _error_lines(stderr) == [f"error: killed by SIGTERM; stage run {run.id} marked failed"]
    assert wh.stage_run(run.id).error == "killed by SIGTERM"
    assert MlflowClient(default_tracking_uri(tmp_path)).get_run(run.mlflow_run_id).info.status == "FAILED"
    assert _wait_gone(servers) == [] and _servers_started_by(proc.pid) == []


def test_sigkill_leaves_the_run_to_the_next_command_and_no_server_behind(tmp_path):
    proc = _start_cli(tmp_path, "run", *SLOW_SYNTHESIS)
    try:
        wh, run = _running_stage(proc, tmp_path)
        servers = _prefect_servers(proc)
        proc.kill()  # the CLI alone: its server must notice by itself
        proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert _wait_gone(servers) == [] and _servers_started_by(proc.pid) == []
    assert wh.stage_run(run.id).status == StageStatus.running  # nobody was left to say otherwise

    listing = _cli(tmp_path, "runs")
    assert listing.returncode == 0
    assert f"marked {run.id} failed: process {proc.pid} vanished (killed?)" in listing.stderr
    failed = wh.stage_run(run.id)
    assert failed.status == StageStatus.failed and failed.error == f"process {proc.pid} vanished (killed?)"
    client = MlflowClient(default_tracking_uri(tmp_path))
    stage = client.get_run(run.mlflow_run_id)
    assert stage.info.status == "FAILED"
    assert client.get_run(stage.data.tags["mlflow.parentRunId"]).info.status == "FAILED"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_a_warehouse_query_ends_the_work_as_that_signal(tmp_path, signum):
    """DuckDB checks for signals while a query runs (a SIGINT at once, others as it ends) and answers one whose
    handler raised `Killed` with its own `RuntimeError: Query interrupted`: a stage would have failed with that
    error and the CLI exited 1 (CI saw a SIGINT during the pipeline end it so). The warehouse gives it back."""
    import threading

    wh = Warehouse(tmp_path / "warehouse.duckdb")
    # a test run that is a background job (`make test &`) has SIGINT ignored, which the handlers keep ignored
    disposition = signal.signal(signum, signal.SIG_DFL)
    previous = raise_killed_on_signals()
    try:
        querying = threading.Event()

        def signal_the_query() -> None:  # once the query has surely begun, however slowly this machine opened it
            querying.wait(30)
            time.sleep(0.3)
            os.kill(os.getpid(), signum)

        threading.Thread(target=signal_the_query, daemon=True).start()
        with pytest.raises(Killed, match=f"killed by {signal.Signals(signum).name}") as raised:
            # ~3 s of work: a SIGINT interrupts it at once, another signal is noticed (and swallowed) as it ends
            with wh.connect() as con:
                querying.set()
                con.execute("SELECT count(*) FROM range(1000000000) t(a) WHERE a % 7 = 3").fetchall()
        assert "interrupted" in str(raised.value.__cause__), "the signal came outside the query: nothing tested"
        with wh.connect() as con:  # and an error of DuckDB's own, with no signal since, stays itself
            with pytest.raises(duckdb.Error, match="no_such_table"):
                con.execute("SELECT * FROM no_such_table")
    finally:
        faulthandler.cancel_dump_traceback_later()
        restore_signal_handlers(previous)
        signal.signal(signum, disposition)


def test_a_kill_lost_inside_a_finalizer_is_delivered_again():
    """Python drops an exception raised in `__del__`; a signal arriving there must still end the work."""

    class SignalsWhileFinalized:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(10_000):  # the handler runs in here, and its Killed is dropped with the finalizer
                pass

    previous = raise_killed_on_signals()
    try:
        with pytest.raises(Killed, match="killed by SIGTERM"):
            SignalsWhileFinalized()  # finalized at once
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                pass
    finally:
        restore_signal_handlers(previous)


def _stderr_of_a_process_alive_after(script: Path, signum: int, seconds: float) -> str:
    """Run `script` (it prints "ready" once its handlers are in place), send it `signum`, check it is still alive
    `seconds` later, kill it: its stderr."""
    proc = subprocess.Popen([sys.executable, str(script)], cwd=Path(__file__).resolve().parents[1],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        proc.send_signal(signum)
        time.sleep(seconds)
        assert proc.poll() is None
    finally:
        proc.kill()
        _, stderr = proc.communicate(timeout=30)
    return stderr


def test_a_process_that_outlives_its_terminating_signal_says_where_it_waits(tmp_path):
    """On the GPU box the evaluation outlived `timeout -k 10`'s 10 s after SIGTERM and was SIGKILLed without a
    word. A process whose signal became `Killed` and which has not ended STACKS_AFTER_SIGNAL_S later writes every
    thread's stack to stderr: here a thread nobody told to stop holds the interpreter's exit."""
    from warehouse.process import STACKS_AFTER_SIGNAL_S

    script = tmp_path / "lingers.py"
    script.write_text(
        "import sys, threading, time\n"
        "from warehouse.process import Killed, raise_killed_on_signals\n"
        "def waits_for_a_stop_nobody_sends():\n"
        "    threading.Event().wait(120)\n"
        "threading.Thread(target=waits_for_a_stop_nobody_sends).start()\n"
        "raise_killed_on_signals()\n"
        "print('ready', flush=True)\n"
        "try:\n"
        "    time.sleep(120)\n"
        "except Killed:\n"
        "    sys.exit(143)  # in order; the thread still holds the exit\n")
    stderr = _stderr_of_a_process_alive_after(script, signal.SIGTERM, STACKS_AFTER_SIGNAL_S + 3)  # as on the box
    assert "Timeout" in stderr and "waits_for_a_stop_nobody_sends" in stderr, stderr[-2000:]


def test_sigusr1_writes_every_threads_stack_even_with_the_main_thread_stuck_in_c(tmp_path):
    """The box's evaluation outlived SIGTERM by 10 s with no stack written (Prefect's SIGTERM bridge ran in place
    of the handler that arms the delayed dump, or the main thread never came back from C): `kill -USR1` writes
    every thread's stack from C at once, whatever the main thread does, and the process goes on."""
    script = tmp_path / "stuck.py"
    script.write_text(
        "import threading, time\n"
        "from warehouse.process import raise_killed_on_signals\n"
        "def a_worker_waiting_on_a_judgement():\n"
        "    threading.Event().wait(120)\n"
        "threading.Thread(target=a_worker_waiting_on_a_judgement, daemon=True).start()\n"
        "raise_killed_on_signals()\n"
        "print('ready', flush=True)\n"
        "lock = threading.Lock(); lock.acquire()\n"
        "lock.acquire(timeout=60)  # the main thread in C (a lock's wait)\n"
        "print('still here', flush=True)\n")
    stderr = _stderr_of_a_process_alive_after(script, signal.SIGUSR1, 2)  # the stacks written, it goes on
    assert "in a_worker_waiting_on_a_judgement" in stderr, stderr[-2000:]  # the worker's stack
    assert "stuck.py\", line 9 in <module>" in stderr, stderr[-2000:]  # and the main thread's, in its wait


def test_a_run_whose_process_still_works_on_it_is_not_resumed_twice(tmp_path):
    from schemas.config import load_config
    from tasks.common import stage_run

    config = load_config(None, [f"home={tmp_path}"])
    wh = Warehouse(tmp_path / "warehouse.duckdb")
    holder = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        run = wh.begin_stage_run("leap_rl", {}, "h", [], owner=ProcessIdentity.of(holder.pid))
        with pytest.raises(WarehouseError, match=f"still running in process {holder.pid}"):
            with stage_run("leap_rl", config, [], resume_run_id=run.id):
                pass
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert wh.stage_run(run.id).status == StageStatus.running


# -- one-line errors -----------------------------------------------------------------------------------------
CLI_ERRORS = {
    "set-not-yaml": (["run", "--set", "k=[1"], "error: --set 'k=[1': not valid YAML: "),
    "kernelbench-dir": (["stage", "synthesize", "--set", "synthesize.kernelbench_dir={missing}"],
                        "error: synthesize.kernelbench_dir: no such directory {missing}"),
    "hf-dataset": (["run", "--set", "synthesize.hf_dataset={missing}.parquet"],
                   "error: synthesize.hf_dataset: no such file or directory {missing}.parquet"),
    "decontaminate": (["run", "--set", "synthesize.decontaminate_against={missing}"],
                      "error: synthesize.decontaminate_against: no such directory {missing}"),
    "runs-stage": (["runs", "--stage", "nosuchstage"], "error: unknown stage 'nosuchstage'; stages are synthesize, "),
    "stage-name": (["stage", "nosuchstage"], "error: unknown stage 'nosuchstage'; stages are synthesize, "),
    "corrupted": (["runs"], "error: the warehouse at {home}/warehouse.duckdb is not a DuckDB file (corrupted?): "),
}


@pytest.mark.parametrize("case", CLI_ERRORS)
def test_cli_errors_are_one_line_naming_what_is_wrong(tmp_path, case):
    args, expected = CLI_ERRORS[case]
    missing = tmp_path / "missing"
    if case == "corrupted":
        (tmp_path / "warehouse.duckdb").write_bytes(os.urandom(20_000))
    result = _cli(tmp_path, *[a.format(missing=missing) for a in args])
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(expected.format(missing=missing, home=tmp_path)), result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_debug_shows_the_traceback_instead(tmp_path):
    (tmp_path / "warehouse.duckdb").write_bytes(os.urandom(20_000))
    result = _cli(tmp_path, "--debug", "runs")
    assert result.returncode != 0
    assert "Traceback (most recent call last)" in result.stderr and "WarehouseError: the warehouse at" in result.stderr


@pytest.mark.parametrize("overrides, expected", [
    (["synthesize.num_problems=0"], r"RuntimeError: no problems: set synthesize.num_problems or an import"),
    (["synthesize.num_problems=0", "synthesize.hf_dataset=nosuchorg/nosuchdataset"],
     r"synthesize.hf_dataset: cannot load 'nosuchorg/nosuchdataset': Couldn't reach"),
], ids=["stage-raises", "hub-dataset-offline"])
def test_a_failing_stage_is_one_line_and_a_failed_row(tmp_path, overrides, expected):
    args = [a for o in overrides for a in ("--set", o)]
    proc = subprocess.Popen([sys.executable, "-m", "flows.cli", "stage", "synthesize", *args], cwd=ROOT,
                            env=_env(tmp_path, HF_HUB_OFFLINE="1"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode != 0
    [line] = _error_lines(stderr)
    assert line == stderr.strip().splitlines()[-1] and "Traceback" not in stderr
    assert _wait_gone(_servers_started_by(proc.pid), timeout_s=0) == []  # stopped before the CLI exited
    [run] = Warehouse(tmp_path / "warehouse.duckdb").stage_runs("synthesize")
    assert run.status == StageStatus.failed
    assert line.startswith(f"error: synthesize {run.id} failed: ") and line.endswith("; see --debug")
    assert re.search(expected, line)


def test_the_cli_waits_for_a_cold_prefect_server_unless_told_how_long(monkeypatch):
    """A fresh machine's first Prefect server took over Prefect's default 20 s to answer (its database made, its
    modules read cold) and the evaluation failed at once: unset, the CLI waits COLD_START_TIMEOUT_S; set, as
    long as it is told, however short."""
    from prefect.settings import Settings

    from flows.prefect_server import COLD_START_TIMEOUT_S, STARTUP_TIMEOUT_SETTING, startup_timeout_s

    monkeypatch.delenv(STARTUP_TIMEOUT_SETTING, raising=False)
    assert Settings().server.ephemeral.startup_timeout_seconds < COLD_START_TIMEOUT_S  # Prefect's own default
    assert startup_timeout_s(Settings()) == COLD_START_TIMEOUT_S
    monkeypatch.setenv(STARTUP_TIMEOUT_SETTING, "7")
    assert startup_timeout_s(Settings()) == 7


def _spawned_with_sigint_blocked() -> None:
    _as_from_a_terminal()
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])


def test_a_terminating_signal_its_parent_left_blocked_still_ends_the_process(tmp_path):
    """A signal mask crosses exec, a handler does not: a process spawned while its parent held SIGINT blocked
    (a resource tracker's spawn does, for a moment) installed its handler and never saw the signal — it stayed
    pending while the stage ran on. The handlers unblock what they handle."""
    script = tmp_path / "spawned_blocked.py"
    script.write_text(
        "import sys, time\n"
        "from warehouse.process import Killed, raise_killed_on_signals\n"
        "raise_killed_on_signals()\n"
        "print('ready', flush=True)\n"
        "try:\n"
        "    time.sleep(60)\n"
        "except Killed:\n"
        "    sys.exit(130)\n")
    proc = subprocess.Popen([sys.executable, str(script)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=_spawned_with_sigint_blocked)
    try:
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=10)
    finally:
        proc.kill()
    assert proc.returncode == 130
