"""The DuckDB warehouse: every stage's outputs, keyed by the stage run that wrote them.

- Every row carries `stage_run_id`; primary keys include it, and writes are
  `INSERT OR IGNORE`, so re-running a write (or re-reading a parent) never
  duplicates rows.
- A stage run is `running` until it is marked `succeeded` or `failed`; readers
  that feed a later stage only accept succeeded runs, so a crashed stage's partial
  rows are never consumed.
- A `running` row names the process that owns it (pid, host, start time).
  `fail_vanished_runs` marks failed the rows whose owner is gone (a SIGKILL, an
  OOM kill, a lost machine), so no run stays `running` for ever.
- DuckDB allows one read-write process per file. Connections are opened per
  operation and retried while another process holds the lock, so `kerneldojo runs`
  works while a pipeline is writing.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb

from schemas.records import Candidate, Problem, StageRun, StageStatus, TensorHint, Trajectory, Verdict
from warehouse.process import ProcessIdentity, swallowed_signal

SCHEMA = """
CREATE TABLE IF NOT EXISTS stage_runs (
    id VARCHAR PRIMARY KEY, stage VARCHAR NOT NULL, status VARCHAR NOT NULL, config VARCHAR NOT NULL,
    config_hash VARCHAR NOT NULL, parent_ids VARCHAR NOT NULL, mlflow_run_id VARCHAR, pipeline_run_id VARCHAR,
    started TIMESTAMP NOT NULL, finished TIMESTAMP, error VARCHAR, summary VARCHAR
);
CREATE TABLE IF NOT EXISTS problems (
    stage_run_id VARCHAR NOT NULL, id VARCHAR NOT NULL, source VARCHAR, name VARCHAR, reference VARCHAR NOT NULL,
    op_families VARCHAR, difficulty INTEGER, split VARCHAR, hints VARCHAR, PRIMARY KEY (stage_run_id, id)
);
CREATE TABLE IF NOT EXISTS candidates (
    stage_run_id VARCHAR NOT NULL, id VARCHAR NOT NULL, problem_id VARCHAR NOT NULL, source VARCHAR NOT NULL,
    backend VARCHAR, turn INTEGER, parent_id VARCHAR, origin VARCHAR, PRIMARY KEY (stage_run_id, id)
);
CREATE TABLE IF NOT EXISTS verdicts (
    stage_run_id VARCHAR NOT NULL, candidate_id VARCHAR NOT NULL, problem_id VARCHAR NOT NULL,
    compiled BOOLEAN, correct BOOLEAN, legal BOOLEAN, pass_fraction DOUBLE, category VARCHAR, detail VARCHAR,
    speedup_vs_eager DOUBLE, speedup_vs_compile DOUBLE, compile_seconds DOUBLE, run_seconds DOUBLE,
    device VARCHAR, rule VARCHAR, cached BOOLEAN, reward DOUBLE, PRIMARY KEY (stage_run_id, candidate_id)
);
CREATE TABLE IF NOT EXISTS trajectories (
    stage_run_id VARCHAR NOT NULL, id VARCHAR NOT NULL, group_id VARCHAR NOT NULL, problem_id VARCHAR NOT NULL,
    step INTEGER, rollout_index INTEGER, gated BOOLEAN, rank INTEGER, reward DOUBLE, advantage DOUBLE,
    num_turns INTEGER, passed_turn INTEGER, turns VARCHAR, PRIMARY KEY (stage_run_id, id)
);
CREATE TABLE IF NOT EXISTS sft_examples (
    stage_run_id VARCHAR NOT NULL, id VARCHAR NOT NULL, problem_id VARCHAR, task VARCHAR, messages VARCHAR NOT NULL,
    completion VARCHAR NOT NULL, candidate_id VARCHAR, PRIMARY KEY (stage_run_id, id)
);
CREATE TABLE IF NOT EXISTS checkpoints (
    stage_run_id VARCHAR NOT NULL, name VARCHAR NOT NULL, path VARCHAR NOT NULL, step INTEGER,
    created TIMESTAMP, PRIMARY KEY (stage_run_id, name)
);
CREATE TABLE IF NOT EXISTS teacher_answers (
    teacher VARCHAR NOT NULL, version VARCHAR NOT NULL, backend VARCHAR NOT NULL, problem_id VARCHAR NOT NULL,
    answer VARCHAR NOT NULL, stage_run_id VARCHAR, PRIMARY KEY (teacher, version, backend, problem_id)
);
CREATE TABLE IF NOT EXISTS policy_generations (
    policy VARCHAR NOT NULL, call_key VARCHAR NOT NULL, generations VARCHAR NOT NULL, stage_run_id VARCHAR,
    PRIMARY KEY (policy, call_key)
);
CREATE TABLE IF NOT EXISTS eval_results (
    stage_run_id VARCHAR NOT NULL, problem_id VARCHAR NOT NULL, sample INTEGER NOT NULL, turn INTEGER NOT NULL,
    candidate_id VARCHAR, category VARCHAR, passed BOOLEAN, speedup DOUBLE,
    PRIMARY KEY (stage_run_id, problem_id, sample, turn)
);
"""
# Added after the first release: ALTER keeps warehouse files written before them readable and writable.
MIGRATIONS = """
ALTER TABLE stage_runs ADD COLUMN IF NOT EXISTS owner_pid INTEGER;
ALTER TABLE stage_runs ADD COLUMN IF NOT EXISTS owner_host VARCHAR;
ALTER TABLE stage_runs ADD COLUMN IF NOT EXISTS owner_started DOUBLE;
ALTER TABLE verdicts ADD COLUMN IF NOT EXISTS roofline_fraction DOUBLE;
ALTER TABLE verdicts ADD COLUMN IF NOT EXISTS peak_memory_bytes BIGINT;
ALTER TABLE problems ADD COLUMN IF NOT EXISTS scale DOUBLE;
ALTER TABLE problems ADD COLUMN IF NOT EXISTS cuda_working_set_bytes BIGINT;
ALTER TABLE problems ADD COLUMN IF NOT EXISTS measures VARCHAR;
ALTER TABLE problems ADD COLUMN IF NOT EXISTS drawn_family VARCHAR;
ALTER TABLE problems ADD COLUMN IF NOT EXISTS pattern VARCHAR;
"""
STAGE_RUN_COLUMNS = ("id, stage, status, config, config_hash, parent_ids, mlflow_run_id, pipeline_run_id, "
                     "started, finished, error")


class WarehouseError(RuntimeError):
    pass


class Warehouse:
    """A DuckDB file holding every stage's records; see the module docstring."""

    def __init__(self, path: str | Path, lock_timeout_s: float = 60.0):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.lock_timeout_s = lock_timeout_s
        self._local = threading.Lock()
        with self.connect() as con:
            con.execute(SCHEMA)
            con.execute(MIGRATIONS)

    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        since = time.monotonic()
        deadline = since + self.lock_timeout_s
        try:
            with self._local:
                while True:
                    try:
                        con = duckdb.connect(str(self.path))
                        break
                    except duckdb.IOException as exc:
                        if "not a valid duckdb database file" in str(exc).lower():
                            raise WarehouseError(f"the warehouse at {self.path} is not a DuckDB file (corrupted?): "
                                                 f"{exc}") from exc
                        if "lock" not in str(exc).lower() or time.monotonic() > deadline:
                            raise WarehouseError(f"cannot open {self.path}: {exc}") from exc
                        time.sleep(0.2)
                try:
                    yield con
                finally:
                    con.close()
        except Exception as exc:
            # DuckDB checks for signals while it opens the file or runs a query, and replaces the handler's Killed
            # with its own error: the signal is given back, so a SIGINT or SIGTERM there ends the command as one
            if (killed := swallowed_signal(exc, since)) is not None:
                raise killed from exc
            raise

    # -- stage runs -------------------------------------------------------------------------
    def begin_stage_run(self, stage: str, config: dict[str, Any], config_hash: str, parent_ids: list[str],
                        pipeline_run_id: str | None = None, mlflow_run_id: str | None = None,
                        owner: ProcessIdentity | None = None) -> StageRun:
        """A new `running` row owned by `owner` (default: this process)."""
        owner = owner or ProcessIdentity.current()
        run = StageRun(id=f"{stage}-{uuid.uuid4().hex[:10]}", stage=stage, status=StageStatus.running,
                       config=config, config_hash=config_hash, parent_ids=parent_ids,
                       mlflow_run_id=mlflow_run_id, pipeline_run_id=pipeline_run_id, started=_now())
        with self.connect() as con:
            con.execute("INSERT INTO stage_runs (id, stage, status, config, config_hash, parent_ids, mlflow_run_id, "
                        "pipeline_run_id, started, owner_pid, owner_host, owner_started) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [run.id, run.stage, run.status.value, json.dumps(config, default=str), config_hash,
                         json.dumps(parent_ids), mlflow_run_id, pipeline_run_id, run.started,
                         owner.pid, owner.host, owner.started])
        return run

    def set_mlflow_run(self, run_id: str, mlflow_run_id: str) -> None:
        with self.connect() as con:
            con.execute("UPDATE stage_runs SET mlflow_run_id = ? WHERE id = ?", [mlflow_run_id, run_id])

    def finish_stage_run(self, run_id: str, status: StageStatus, error: str | None = None,
                         summary: dict[str, Any] | None = None) -> None:
        with self.connect() as con:
            con.execute("UPDATE stage_runs SET status = ?, finished = ?, error = ?, summary = ? WHERE id = ?",
                        [status.value, _now(), error, json.dumps(summary or {}, default=str), run_id])

    def reopen_stage_run(self, run_id: str, owner: ProcessIdentity | None = None) -> None:
        """Mark an interrupted run running again (resume), now owned by `owner` (default: this process);
        its rows stay, its end is cleared."""
        owner = owner or ProcessIdentity.current()
        with self.connect() as con:
            con.execute("UPDATE stage_runs SET status = 'running', finished = NULL, error = NULL, owner_pid = ?, "
                        "owner_host = ?, owner_started = ? WHERE id = ?",
                        [owner.pid, owner.host, owner.started, run_id])

    def owner(self, run_id: str) -> ProcessIdentity | None:
        """The process recorded as running `run_id` (None for rows from before owners were recorded)."""
        with self.connect() as con:
            row = con.execute("SELECT owner_pid, owner_host, owner_started FROM stage_runs WHERE id = ?",
                              [run_id]).fetchone()
        return ProcessIdentity(*row) if row and row[0] is not None else None

    def fail_vanished_runs(self) -> list[StageRun]:
        """Mark failed every `running` row whose owner process has ended; returns those runs as failed.

        Rows from before owners were recorded, and rows owned on another host, are left alone: there is
        no telling from here whether their process lives."""
        with self.connect() as con:
            rows = con.execute("SELECT id, owner_pid, owner_host, owner_started FROM stage_runs "
                               "WHERE status = 'running' AND owner_pid IS NOT NULL").fetchall()
        failed = []
        for run_id, pid, host, started in rows:
            owner = ProcessIdentity(pid, host, started)
            if not owner.is_gone():
                continue
            with self.connect() as con:  # only if still running under that owner: a resume may have taken it
                changed = con.execute(
                    "UPDATE stage_runs SET status = 'failed', finished = ?, error = ? WHERE id = ? AND "
                    "status = 'running' AND owner_pid = ? AND owner_host = ? AND owner_started = ? RETURNING id",
                    [_now(), f"process {pid} vanished (killed?)", run_id, pid, host, started]).fetchall()
            if changed:
                failed.append(self.stage_run(run_id))
        return failed

    def stage_run(self, run_id: str) -> StageRun:
        with self.connect() as con:
            row = con.execute(f"SELECT {STAGE_RUN_COLUMNS} FROM stage_runs WHERE id = ?", [run_id]).fetchone()
        if row is None:
            raise WarehouseError(f"no stage run {run_id!r} in {self.path}; `kerneldojo runs` lists them")
        return _stage_run(row)

    def stage_runs(self, stage: str | None = None) -> list[StageRun]:
        query = f"SELECT {STAGE_RUN_COLUMNS} FROM stage_runs"
        params: list[Any] = []
        if stage:
            query += " WHERE stage = ?"
            params.append(stage)
        with self.connect() as con:
            rows = con.execute(query + " ORDER BY started", params).fetchall()
        return [_stage_run(r) for r in rows]

    def summary(self, run_id: str) -> dict[str, Any]:
        with self.connect() as con:
            row = con.execute("SELECT summary FROM stage_runs WHERE id = ?", [run_id]).fetchone()
        return json.loads(row[0]) if row and row[0] else {}

    def succeeded_run(self, run_id: str, stage: str | tuple[str, ...] | None = None) -> StageRun:
        """A run a later stage may read from: it exists, succeeded and (optionally) is of `stage` (one of them)."""
        run = self.stage_run(run_id)
        stages = (stage,) if isinstance(stage, str) else (stage or ())
        if stages and run.stage not in stages:
            raise WarehouseError(f"stage run {run_id} is a {run.stage!r} run, expected a "
                                 f"{' or '.join(repr(s) for s in stages)} run")
        if run.status != StageStatus.succeeded:
            raise WarehouseError(f"stage run {run_id} is {run.status.value}; only succeeded runs feed later stages")
        return run

    def ancestor(self, run_id: str, stage: str) -> StageRun:
        """The nearest succeeded run of `stage` on the lineage of `run_id` (itself included)."""
        frontier = [run_id]
        seen: set[str] = set()
        while frontier:
            current = self.stage_run(frontier.pop(0))
            if current.id in seen:
                continue
            seen.add(current.id)
            if current.stage == stage:
                return self.succeeded_run(current.id)
            frontier.extend(current.parent_ids)
        raise WarehouseError(f"no {stage!r} run on the lineage of {run_id}")

    def latest_run(self, stage: str) -> StageRun | None:
        runs = [r for r in self.stage_runs(stage) if r.status == StageStatus.succeeded]
        return runs[-1] if runs else None

    def lineage(self, run_id: str) -> list[StageRun]:
        """`run_id` and all its ancestors, nearest first."""
        out, frontier, seen = [], [run_id], set()
        while frontier:
            run = self.stage_run(frontier.pop(0))
            if run.id not in seen:
                seen.add(run.id)
                out.append(run)
                frontier.extend(run.parent_ids)
        return out

    # -- writes ------------------------------------------------------------------------------
    def _insert(self, table: str, rows: list[list[Any]]) -> int:
        if not rows:
            return 0
        marks = ", ".join("?" for _ in rows[0])
        with self.connect() as con:
            con.execute("BEGIN")
            con.executemany(f"INSERT OR IGNORE INTO {table} VALUES ({marks})", rows)
            con.execute("COMMIT")
        return len(rows)

    def add_problems(self, run_id: str, problems: Iterable[Problem]) -> int:
        return self._insert("problems", [
            [run_id, p.id, p.source, p.name, p.reference, json.dumps(p.op_families), p.difficulty, p.split.value,
             json.dumps([h.model_dump() for h in p.hints]), p.scale, p.cuda_working_set_bytes,
             json.dumps(p.measures), p.drawn_family, p.pattern] for p in problems])

    def add_candidates(self, run_id: str, candidates: Iterable[Candidate]) -> int:
        return self._insert("candidates", [
            [run_id, c.id, c.problem_id, c.source, c.backend, c.turn, c.parent_id, c.origin] for c in candidates])

    def add_verdicts(self, run_id: str, verdicts: Iterable[tuple[Verdict, float]]) -> int:
        return self._insert("verdicts", [
            [run_id, v.candidate_id, v.problem_id, v.compiled, v.correct, v.legal, v.pass_fraction, v.category.value,
             v.detail, v.speedup_vs_eager, v.speedup_vs_compile, v.compile_seconds, v.run_seconds, v.device, v.rule,
             v.cached, reward, v.roofline_fraction, v.peak_memory_bytes] for v, reward in verdicts])

    def add_trajectories(self, run_id: str, trajectories: Iterable[Trajectory]) -> int:
        rows = []
        for t in trajectories:
            passed_turn = next((i for i, turn in enumerate(t.turns) if turn.verdict.passed), None)
            rows.append([run_id, t.id, t.group_id, t.problem_id, t.step, t.rollout_index, t.gated, t.rank, t.reward,
                         t.advantage, len(t.turns), passed_turn, json.dumps([x.model_dump(mode="json") for x in t.turns])])
        return self._insert("trajectories", rows)

    def add_sft_examples(self, run_id: str, examples: Iterable[dict[str, Any]]) -> int:
        return self._insert("sft_examples", [
            [run_id, e["id"], e.get("problem_id"), e["task"], json.dumps(e["messages"]), e["completion"],
             e.get("candidate_id")] for e in examples])

    def add_checkpoint(self, run_id: str, name: str, path: str | Path, step: int = 0) -> None:
        self._insert("checkpoints", [[run_id, name, self._within_home(path), step, _now()]])

    @property
    def home(self) -> Path:
        return self.path.parent

    def _within_home(self, path: str | Path) -> str:
        """A path inside the home as relative to it, so a home copied or moved elsewhere finds its own files."""
        try:
            return str(Path(path).resolve().relative_to(self.home.resolve()))
        except ValueError:
            return str(path)

    def _located(self, run_id: str, recorded: str) -> Path:
        """Where a recorded checkpoint lies now. Rows written before paths were kept relative name the home where
        they were written: one that is gone is looked for at the same place under this home's artifacts/<run>/."""
        path = Path(recorded)
        if not path.is_absolute():
            return self.home / path
        if not path.exists():
            parts = path.parts
            anchors = [i for i in range(len(parts) - 1) if parts[i] == "artifacts" and parts[i + 1] == run_id]
            if anchors:
                return self.home.joinpath(*parts[anchors[-1]:])
        return path

    def add_eval_results(self, run_id: str, rows: Iterable[dict[str, Any]]) -> int:
        return self._insert("eval_results", [
            [run_id, r["problem_id"], r["sample"], r["turn"], r["candidate_id"], r["category"], r["passed"],
             r.get("speedup")] for r in rows])

    # -- reads -------------------------------------------------------------------------------
    def _rows(self, query: str, params: list[Any]) -> list[dict[str, Any]]:
        with self.connect() as con:
            cur = con.execute(query, params)
            cols = [d[0] for d in cur.description]
            return [dict(zip(cols, row)) for row in cur.fetchall()]

    def problems(self, run_id: str, split: str | None = None) -> list[Problem]:
        query = "SELECT * FROM problems WHERE stage_run_id = ?"
        params: list[Any] = [run_id]
        if split:
            query += " AND split = ?"
            params.append(split)
        rows = self._rows(query + " ORDER BY id", params)
        return [Problem(id=r["id"], source=r["source"], name=r["name"] or "", reference=r["reference"],
                        op_families=json.loads(r["op_families"] or "[]"), difficulty=r["difficulty"],
                        split=r["split"], hints=json.loads(r["hints"] or "[]"), scale=r["scale"] or 1.0,
                        cuda_working_set_bytes=r["cuda_working_set_bytes"], measures=json.loads(r["measures"] or "{}"),
                        drawn_family=r["drawn_family"], pattern=r["pattern"]) for r in rows]

    def known_hints(self, problem_ids: Iterable[str]) -> dict[str, list[TensorHint]]:
        """Shape hints some earlier stage run recorded for these problems (by id: the reference's content hash),
        so that evaluating the same problems again (a KernelBench run cut short, another policy) exports none again."""
        ids = list(problem_ids)
        if not ids:
            return {}
        rows = self._rows("SELECT id, any_value(hints) AS hints FROM problems WHERE id IN (SELECT unnest(?)) "
                          "AND hints IS NOT NULL AND hints != '[]' GROUP BY id", [ids])
        return {r["id"]: [TensorHint(**h) for h in json.loads(r["hints"])] for r in rows}

    def known_teacher_answers(self, teacher: str, version: str, backend: str, problem_ids: Iterable[str]) \
            -> dict[str, str]:
        """Answers a deterministic teacher (the template teacher, at this version of its code) gave these problems
        in an earlier run: a KernelBench evaluation cut short and run again asks for none of its 200 again."""
        ids = list(problem_ids)
        if not ids:
            return {}
        rows = self._rows("SELECT problem_id, answer FROM teacher_answers WHERE teacher = ? AND version = ? AND "
                          "backend = ? AND problem_id IN (SELECT unnest(?))", [teacher, version, backend, ids])
        return {r["problem_id"]: r["answer"] for r in rows}

    def add_teacher_answers(self, run_id: str, teacher: str, version: str, backend: str,
                            answers: dict[str, str]) -> int:
        return self._insert("teacher_answers", [[teacher, version, backend, pid, answer, run_id]
                                                for pid, answer in answers.items()])

    def recorded_generations(self, policy: str, call_key: str) -> list[dict[str, Any]] | None:
        """The samples a policy (`<stage>:<run>`, a fixed checkpoint) gave one generate call before (its contexts,
        settings and seed: training.rollout.generation_call_key), in order; None where it was not made."""
        rows = self._rows("SELECT generations FROM policy_generations WHERE policy = ? AND call_key = ?",
                          [policy, call_key])
        return json.loads(rows[0]["generations"]) if rows else None

    def add_generations(self, run_id: str, policy: str, call_key: str, generations: list[dict[str, Any]]) -> int:
        return self._insert("policy_generations", [[policy, call_key, json.dumps(generations), run_id]])

    def known_sizes(self, problem_ids: Iterable[str]) -> dict[str, dict[str, int]]:
        """The input, output and weight bytes some earlier run's analysis recorded for these problems (`measures`;
        weights only where the analysis measured them)."""
        ids = list(problem_ids)
        if not ids:
            return {}
        rows = self._rows("SELECT id, measures FROM problems WHERE id IN (SELECT unnest(?)) AND measures IS NOT NULL",
                          [ids])
        sizes: dict[str, dict[str, int]] = {}
        for r in rows:
            measures = json.loads(r["measures"])
            if isinstance(measures, dict) and isinstance(measures.get("input_bytes"), int):
                sizes[r["id"]] = {k: measures[k] for k in ("input_bytes", "output_bytes", "weight_bytes")
                                  if isinstance(measures.get(k), int)}
        return sizes

    def candidates(self, run_id: str) -> list[Candidate]:
        rows = self._rows("SELECT * FROM candidates WHERE stage_run_id = ? ORDER BY id", [run_id])
        return [Candidate(id=r["id"], problem_id=r["problem_id"], source=r["source"], backend=r["backend"],
                          turn=r["turn"], parent_id=r["parent_id"], origin=r["origin"] or "") for r in rows]

    def verdict_rows(self, run_id: str) -> list[dict[str, Any]]:
        return self._rows("SELECT * FROM verdicts WHERE stage_run_id = ? ORDER BY candidate_id", [run_id])

    def first_turn_passes(self, run_ids: Iterable[str]) -> dict[str, tuple[int, int]]:
        """Problem id -> (first-turn candidates that passed, first-turn candidates judged) over these runs."""
        run_ids = list(run_ids)
        if not run_ids:
            return {}
        rows = self._rows(
            "SELECT v.problem_id, count(*) AS judged, count(*) FILTER (WHERE v.correct) AS passed FROM verdicts v "
            "JOIN candidates c ON c.stage_run_id = v.stage_run_id AND c.id = v.candidate_id "
            f"WHERE v.stage_run_id IN ({', '.join('?' * len(run_ids))}) AND coalesce(c.turn, 0) = 0 "
            "GROUP BY v.problem_id", run_ids)
        return {r["problem_id"]: (int(r["passed"]), int(r["judged"])) for r in rows}

    def sft_examples(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._rows("SELECT * FROM sft_examples WHERE stage_run_id = ? ORDER BY id", [run_id])
        for r in rows:
            r["messages"] = json.loads(r["messages"])
        return rows

    def trajectory_rows(self, run_id: str) -> list[dict[str, Any]]:
        return self._rows("SELECT * FROM trajectories WHERE stage_run_id = ? ORDER BY step, group_id, rollout_index",
                          [run_id])

    def checkpoint(self, run_id: str, name: str = "final") -> Path:
        rows = self._rows("SELECT path FROM checkpoints WHERE stage_run_id = ? AND name = ?", [run_id, name])
        if not rows:
            raise WarehouseError(f"stage run {run_id} recorded no {name!r} checkpoint")
        return self._located(run_id, rows[0]["path"])

    def latest_checkpoint(self, run_id: str, prefix: str = "") -> Path | None:
        """The highest-step checkpoint of a run whose name starts with `prefix` and that exists on disk."""
        rows = self._rows("SELECT path FROM checkpoints WHERE stage_run_id = ? AND starts_with(name, ?) "
                          "ORDER BY step DESC", [run_id, prefix])
        return next((path for path in (self._located(run_id, r["path"]) for r in rows) if path.exists()), None)

    def delete_trajectories_from(self, run_id: str, step: int) -> int:
        """Drop a resumed run's trajectories of steps >= `step`: they belong to the interrupted attempt."""
        with self.connect() as con:
            n = con.execute("SELECT count(*) FROM trajectories WHERE stage_run_id = ? AND step >= ?",
                            [run_id, step]).fetchone()[0]
            con.execute("DELETE FROM trajectories WHERE stage_run_id = ? AND step >= ?", [run_id, step])
        return n

    def eval_rows(self, run_id: str) -> list[dict[str, Any]]:
        return self._rows("SELECT * FROM eval_results WHERE stage_run_id = ? ORDER BY problem_id, sample, turn",
                          [run_id])

    def count(self, table: str, run_id: str) -> int:
        if table not in {"problems", "candidates", "verdicts", "trajectories", "sft_examples", "checkpoints",
                         "eval_results"}:
            raise WarehouseError(f"unknown table {table!r}")
        with self.connect() as con:
            return con.execute(f"SELECT count(*) FROM {table} WHERE stage_run_id = ?", [run_id]).fetchone()[0]


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _stage_run(row) -> StageRun:
    return StageRun(id=row[0], stage=row[1], status=row[2], config=json.loads(row[3]), config_hash=row[4],
                    parent_ids=json.loads(row[5]), mlflow_run_id=row[6], pipeline_run_id=row[7], started=row[8],
                    finished=row[9], error=row[10])
