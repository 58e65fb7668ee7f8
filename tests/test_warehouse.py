import subprocess
import sys
import textwrap
import time

import pytest

from schemas.records import Problem, StageStatus
from warehouse.store import Warehouse, WarehouseError


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
