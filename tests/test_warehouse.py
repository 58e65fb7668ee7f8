import os
import subprocess
import sys
import textwrap
import time

import duckdb
import pytest

from schemas.records import Problem, StageStatus
from warehouse.process import ProcessIdentity
from warehouse.reconcile import reconcile
from warehouse.store import Warehouse, WarehouseError
from warehouse.tracking import Tracker


def _problem(i: int) -> Problem:
    ref = f"# problem {i}\n"
    return Problem(id=Problem.make_id(ref), source="test", reference=ref)


def test_stage_run_lifecycle_and_lineage(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb")
    a = wh.begin_stage_run("synthesize", {"x": 1}, "h1", [])
    wh.add_problems(a.id, [_problem(i) for i in range(3)])
    wh.finish_stage_run(a.id, StageStatus.succeeded, summary={"problems": 3})
    b = wh.begin_stage_run("hints", {}, "h2", [a.id])
    wh.finish_stage_run(b.id, StageStatus.succeeded)
    c = wh.begin_stage_run("distill", {}, "h3", [b.id])
    wh.finish_stage_run(c.id, StageStatus.succeeded)
    assert wh.ancestor(c.id, "synthesize").id == a.id
    assert [r.stage for r in wh.lineage(c.id)] == ["distill", "hints", "synthesize"]
    assert wh.summary(a.id) == {"problems": 3}
    run = wh.stage_run(a.id)
    assert run.config == {"x": 1} and run.config_hash == "h1" and run.finished is not None


def test_writes_are_idempotent(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb")
    run = wh.begin_stage_run("synthesize", {}, "h", [])
    problems = [_problem(i) for i in range(4)]
    wh.add_problems(run.id, problems)
    wh.add_problems(run.id, problems)  # a retried write
    assert wh.count("problems", run.id) == 4


def test_hints_recorded_by_any_run_are_found_by_problem_id(tmp_path):
    """An evaluation cut short (or of another policy) on the same KernelBench problems takes their shape hints from
    the runs before it instead of exporting every reference again (a minute of a 10-minute GPU call)."""
    from schemas.records import TensorHint

    wh = Warehouse(tmp_path / "w.duckdb")
    hinted, bare, unseen = _problem(1), _problem(2), _problem(3)
    hint = TensorHint(name="relu", op="aten.relu", shape=[4, 8], dtype="float32", stride=[8, 1], contiguous=True)
    first = wh.begin_stage_run("evaluate", {}, "h", [])
    wh.add_problems(first.id, [hinted.model_copy(update={"hints": [hint]}), bare])
    later = wh.begin_stage_run("evaluate", {}, "h", [])
    wh.add_problems(later.id, [hinted.model_copy(update={"hints": [hint]})])  # recorded twice: found once
    known = wh.known_hints([hinted.id, bare.id, unseen.id])
    assert known == {hinted.id: [hint]}  # no hints recorded is not a hint
    assert wh.known_hints([]) == {}


def test_failed_and_running_runs_do_not_feed_later_stages(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb")
    running = wh.begin_stage_run("sft", {}, "h", [])
    with pytest.raises(WarehouseError, match="running"):
        wh.succeeded_run(running.id)
    wh.finish_stage_run(running.id, StageStatus.failed, error="boom")
    with pytest.raises(WarehouseError, match="failed"):
        wh.succeeded_run(running.id)
    with pytest.raises(WarehouseError, match="no stage run"):
        wh.stage_run("sft-doesnotexist")
    ok = wh.begin_stage_run("synthesize", {}, "h", [])
    wh.finish_stage_run(ok.id, StageStatus.succeeded)
    with pytest.raises(WarehouseError, match="expected a 'sft' run"):
        wh.succeeded_run(ok.id, stage="sft")


def test_second_process_waits_for_the_lock(tmp_path):
    """DuckDB admits one read-write process; the store retries instead of failing at once."""
    path = tmp_path / "w.duckdb"
    wh = Warehouse(path)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import duckdb, sys, time
        con = duckdb.connect({str(path)!r})
        print("locked", flush=True)
        time.sleep(2.0)
        con.close()
    """)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    start = time.monotonic()
    run = wh.begin_stage_run("synthesize", {}, "h", [])  # blocks until the other process lets go
    waited = time.monotonic() - start
    holder.wait(timeout=10)
    assert wh.stage_run(run.id).stage == "synthesize"
    assert waited > 0.5


def _ended_process() -> ProcessIdentity:
    """The identity of a process that has run and exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    identity = ProcessIdentity.of(child.pid)
    child.stdin.close()
    child.wait(timeout=30)
    return identity


def test_runs_whose_owner_process_is_gone_are_failed_and_the_others_kept(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb")
    me = ProcessIdentity.current()
    dead = wh.begin_stage_run("synthesize", {}, "h", [], owner=_ended_process())
    # the same pid as a live process but another start time: the pid was reused, the owner is gone
    reused = wh.begin_stage_run("sft", {}, "h", [], owner=ProcessIdentity(me.pid, me.host, me.started - 3600))
    alive = wh.begin_stage_run("hints", {}, "h", [])
    elsewhere = wh.begin_stage_run("rft", {}, "h", [], owner=ProcessIdentity(1, "another-host", 0.0))
    finished = wh.begin_stage_run("distill", {}, "h", [], owner=_ended_process())
    wh.finish_stage_run(finished.id, StageStatus.succeeded)

    failed = wh.fail_vanished_runs()
    assert {r.id for r in failed} == {dead.id, reused.id}
    assert wh.stage_run(dead.id).error == f"process {_owner_pid(wh, dead.id)} vanished (killed?)"
    assert all(wh.stage_run(r.id).status == StageStatus.failed and wh.stage_run(r.id).finished for r in failed)
    assert wh.stage_run(alive.id).status == StageStatus.running
    assert wh.stage_run(elsewhere.id).status == StageStatus.running  # cannot tell from here: left alone
    assert wh.stage_run(finished.id).status == StageStatus.succeeded
    assert wh.fail_vanished_runs() == []


def _owner_pid(wh: Warehouse, run_id: str) -> int:
    with wh.connect() as con:
        return con.execute("SELECT owner_pid FROM stage_runs WHERE id = ?", [run_id]).fetchone()[0]


def test_a_resumed_run_belongs_to_the_process_that_resumed_it(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb")
    run = wh.begin_stage_run("leap_rl", {}, "h", [], owner=_ended_process())
    wh.reopen_stage_run(run.id)
    assert _owner_pid(wh, run.id) == os.getpid()
    assert wh.fail_vanished_runs() == [] and wh.stage_run(run.id).status == StageStatus.running


# stage_runs as the first release created it: no owner columns
OLD_STAGE_RUNS = """
CREATE TABLE stage_runs (
    id VARCHAR PRIMARY KEY, stage VARCHAR NOT NULL, status VARCHAR NOT NULL, config VARCHAR NOT NULL,
    config_hash VARCHAR NOT NULL, parent_ids VARCHAR NOT NULL, mlflow_run_id VARCHAR, pipeline_run_id VARCHAR,
    started TIMESTAMP NOT NULL, finished TIMESTAMP, error VARCHAR, summary VARCHAR
);
INSERT INTO stage_runs VALUES ('synthesize-old', 'synthesize', 'succeeded', '{}', 'h', '[]', NULL, NULL,
                               '2025-01-01 00:00:00', '2025-01-01 00:01:00', NULL, '{"problems": 3}');
INSERT INTO stage_runs VALUES ('hints-old', 'hints', 'running', '{}', 'h', '["synthesize-old"]', NULL, NULL,
                               '2025-01-01 00:02:00', NULL, NULL, NULL);
"""


def test_a_warehouse_from_before_owner_columns_still_works(tmp_path):
    path = tmp_path / "w.duckdb"
    con = duckdb.connect(str(path))
    con.execute(OLD_STAGE_RUNS)
    con.close()
    wh = Warehouse(path)
    assert wh.succeeded_run("synthesize-old").stage == "synthesize" and wh.summary("synthesize-old") == {"problems": 3}
    new = wh.begin_stage_run("hints", {}, "h", ["synthesize-old"])
    assert _owner_pid(wh, new.id) == os.getpid()
    assert wh.fail_vanished_runs() == []  # an ownerless running row: no telling whether it lives
    assert wh.stage_run("hints-old").status == StageStatus.running


def test_a_corrupted_warehouse_file_is_named_as_such(tmp_path):
    path = tmp_path / "warehouse.duckdb"
    path.write_bytes(os.urandom(20000))
    with pytest.raises(WarehouseError, match=r"the warehouse at .*warehouse\.duckdb is not a DuckDB file \(corrupted\?\)"):
        Warehouse(path)


def test_reconcile_fails_the_mlflow_runs_of_vanished_processes_and_their_pipeline_run(tmp_path):
    wh = Warehouse(tmp_path / "warehouse.duckdb")
    tracker = Tracker(tmp_path)
    pipeline = tracker.start_run("pipeline:p")
    stage = tracker.start_run("synthesize:x", parent_run_id=pipeline.run_id)
    run = wh.begin_stage_run("synthesize", {}, "h", [], mlflow_run_id=stage.run_id, owner=_ended_process())
    alive = tracker.start_run("hints:y", parent_run_id=pipeline.run_id)
    wh.begin_stage_run("hints", {}, "h", [], mlflow_run_id=alive.run_id)

    assert [r.id for r in reconcile(wh, tmp_path)] == [run.id]
    client = tracker.client
    assert client.get_run(stage.run_id).info.status == "FAILED"
    assert client.get_run(stage.run_id).data.tags["kerneldojo.error"].endswith("vanished (killed?)")
    assert client.get_run(pipeline.run_id).info.status == "FAILED"
    assert client.get_run(alive.run_id).info.status == "RUNNING"


def test_a_home_moved_elsewhere_finds_its_checkpoints(tmp_path):
    """A home copied to another machine or folder (a GPU box's records unpacked here) loads its own policies: paths
    inside the home are recorded relative to it, and rows written before that (absolute, naming the old home) are
    found at the same place under the new home's artifacts/<run>/ — before, they named the old home's policy, or
    one that was no longer there."""
    import shutil

    old = tmp_path / "old"
    wh = Warehouse(old / "warehouse.duckdb")
    sft = wh.begin_stage_run("sft", {}, "h", [])
    rl = wh.begin_stage_run("leap_rl", {}, "h", [sft.id])
    (old / "artifacts" / sft.id / "policy").mkdir(parents=True)
    for step in (0, 3):
        (old / "artifacts" / rl.id / "checkpoints" / f"step-{step:05d}").mkdir(parents=True)
    wh.add_checkpoint(sft.id, "final", old / "artifacts" / sft.id / "policy")
    wh.add_checkpoint(rl.id, "step-00000", old / "artifacts" / rl.id / "checkpoints" / "step-00000", 0)
    # as an older version wrote it: the absolute path of the home it was written in
    wh._insert("checkpoints", [[rl.id, "step-00003", str((old / "artifacts" / rl.id / "checkpoints" /
                                                          "step-00003").resolve()), 3, "2026-12-01 00:00:00"]])
    elsewhere = tmp_path / "elsewhere" / "home"
    shutil.move(old, elsewhere)

    moved = Warehouse(elsewhere / "warehouse.duckdb")
    assert moved.checkpoint(sft.id) == elsewhere / "artifacts" / sft.id / "policy"
    assert moved.latest_checkpoint(rl.id, prefix="step-") == elsewhere / "artifacts" / rl.id / "checkpoints" / "step-00003"
    outside = tmp_path / "shared-policy"  # a checkpoint outside the home stays where it was recorded
    moved.add_checkpoint(rl.id, "final", outside)
    assert moved.checkpoint(rl.id) == outside
