"""What every stage task shares: the run's home, the warehouse, MLflow, the verifier pool,
progress bars, and `stage_run`, which turns a stage body into a recorded stage run."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import socket
import threading
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefect.exceptions import TerminationSignal
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from schemas.config import PipelineConfig, accepted_parents, config_hash
from schemas.records import Candidate, Problem, StageStatus, Verdict
from tasks.prefect_ui import announce_stage_run, mlflow_run_link, prefect_flow_run, publish_summary
from verifier.analysis import ReferenceAnalyser
from verifier.pool import HARNESS_VERSION, ReferenceBroken, VerifierPool, make_pool
from verifier.reward import correctness_first_reward
from warehouse.home import Home
from warehouse.process import Killed
from warehouse.reconcile import reconcile
from warehouse.store import Warehouse, WarehouseError
from warehouse.tracking import RunLogger, Tracker, run_tags

console = Console(stderr=True)
SAMPLES_PER_CATEGORY = 3  # generated kernels per verdict category kept as an MLflow artifact
log = logging.getLogger("kerneldojo")
HEARTBEAT_S = 60.0  # a verifier call this long says, once a period, how far it is and what its judgements do


@contextmanager
def heartbeat(pool: VerifierPool, description: str, total: int, every_s: float | None = None) \
        -> Iterator[Any]:
    """While the block waits on `pool`: every `every_s` (HEARTBEAT_S) one INFO line — how many of `total` are
    done (call the yielded function once for each) and what the judgements in flight do or wait for
    (`VerifierPool.activity`). A KernelBench evaluation at full size can judge nothing for minutes; the line says
    whether it works or waits, and on what, in the console and in the flow run's log in Prefect."""
    done = [0]
    stop = threading.Event()
    started = time.perf_counter()

    def beat() -> None:
        while not stop.wait(HEARTBEAT_S if every_s is None else every_s):
            try:
                activity = pool.activity()
            except Exception as exc:  # a report, never a reason for the stage to fail
                activity = f"what the judgements do is unknown ({type(exc).__name__}: {exc})"
            log.info("%s: %d of %d done in %.0f s; %s", description, done[0], total, time.perf_counter() - started,
                     activity)

    thread = threading.Thread(target=beat, name="verifier-heartbeat", daemon=True)
    thread.start()

    def advance(n: int = 1) -> None:
        done[0] += n

    try:
        yield advance
    finally:
        stop.set()
        thread.join()


def reason_in_brief(why: str, limit: int = 300) -> str:
    """A failure in a line: its first line (which problem, which trial) and its last (the exception), not the
    top of a traceback cut off before it says what went wrong."""
    lines = [line.strip() for line in why.strip().splitlines() if line.strip()]
    if len(lines) <= 1:
        return why.strip()[:limit]
    head, last = lines[0], lines[-1]
    return f"{head[:limit // 3]} … {last[-(limit - min(len(head), limit // 3)):]}"


# the particulars of a fast-path fallback reason (quoted names, line numbers), so that alike reasons count together
_REASON_DETAIL = re.compile(r'"[^"]*"|‘[^’]*’|\(\d+\)|:\d+')


@dataclass
class StageContext:
    """Handed to a stage body: its run id, config, storage, tracker and verifier."""

    stage: str
    run_id: str
    config: PipelineConfig
    home: Home
    warehouse: Warehouse
    mlflow: RunLogger
    summary: dict[str, Any] = field(default_factory=dict)
    samples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # verdict category -> examples
    untimed: bool = False  # asked by the stage body: the pool judges correctness only (set before its first use)
    _pool: VerifierPool | None = None
    _analyser: ReferenceAnalyser | None = None
    _verify_seconds: dict[str, float] = field(default_factory=dict)  # unrounded, per call description

    @property
    def artifacts(self) -> Path:
        return self.home.artifacts(self.run_id)

    @property
    def verifier_cache(self) -> Path:
        return Path(self.config.verifier.cache_dir or self.home.cache / "verifier")

    @property
    def timed(self) -> bool:
        """Whether this stage's pool times passing kernels (verifier.timed, untimed_stages, the stage's ask)."""
        verifier = self.config.verifier
        return verifier.timed and self.stage not in verifier.untimed_stages and not self.untimed

    @property
    def pool(self) -> VerifierPool:
        if self._pool is None:
            verifier = self.config.verifier
            if not self.timed:
                verifier = verifier.model_copy(update={"timed": False})
            self._pool = make_pool(verifier, self.verifier_cache, self.config.seed)
        return self._pool

    @property
    def analyser(self) -> ReferenceAnalyser:
        """Sandboxes for analysing imported (untrusted) references (verifier/analysis.py)."""
        if self._analyser is None:
            self._analyser = ReferenceAnalyser(self.config.verifier, self.verifier_cache)
        return self._analyser

    def references_broken(self, problems: list[Problem], keep: bool = True) -> dict[str, str]:
        """Problem id -> why its reference cannot run here, for each such problem: each is logged and kept in the
        summary (`left_out`), and the caller leaves it out. A broken reference is the problem's fault, never the
        policy's: it is not judged against, and it does not end the stage."""
        before, started = self.pool.reference_cost(), time.perf_counter()
        with progress_bar("references (sandboxed)", len(problems)) as advance, \
                heartbeat(self.pool, "references (sandboxed)", len(problems)) as beat:
            broken = self.pool.check_references(problems, on_checked=lambda _: (advance(1), beat(1)), keep=keep)
        self._note_reference_cost(len(problems), before, time.perf_counter() - started)
        for problem in problems:
            if problem.id in broken:
                self._left_out(problem.name or problem.id, broken[problem.id])
        return broken

    def _note_reference_runs(self) -> None:
        """All of this run's reference runs so far, checks' and verdicts' (`reference_runs` in its summary)."""
        if runs := self.pool.reference_cost():
            self.summary["reference_runs"] = {k: round(v, 2) for k, v in runs.items()}

    def _note_reference_cost(self, checked: int, before: dict[str, float], seconds: float) -> None:
        """Where the references' check went (KernelBench at full size: minutes a reference), summed over this
        run's checks, in its summary (`reference_check`); a long check says it. Each phase is summed over the
        references run at once, so the phases can add up to more than the wall seconds."""
        after = self.pool.reference_cost()
        ran = {k: v - before.get(k, 0.0) for k, v in after.items() if v - before.get(k, 0.0) > 0}
        entry = self.summary.setdefault("reference_check", {"checked": 0, "ran": 0, "seconds": 0.0,
                                                            "phase_seconds": {}})
        ran_now = int(ran.pop("references", 0))
        self._note_reference_runs()
        entry["checked"] += checked
        entry["ran"] += ran_now
        entry["seconds"] = round(entry["seconds"] + seconds, 2)
        for phase, spent in ran.items():
            entry["phase_seconds"][phase] = round(entry["phase_seconds"].get(phase, 0.0) + spent, 2)
        if seconds >= 60 and ran_now:
            total = ran.pop("total", 0.0)
            busiest = ", ".join(f"{phase} {spent / ran_now:.1f}"
                                for phase, spent in sorted(ran.items(), key=lambda kv: -kv[1])[:6])
            console.print(f"references: {checked} checked in {seconds:.0f} s, {ran_now} run "
                          f"({total / ran_now:.1f} s each; mean s: {busiest})")

    def runnable(self, problems: list[Problem], what: str) -> list[Problem]:
        """`problems` without those whose reference cannot run here (`references_broken`); none left is one error."""
        broken = self.references_broken(problems)
        kept = [p for p in problems if p.id not in broken]
        if not kept:
            raise RuntimeError(f"{what}: none of its {len(broken)} problems has a reference that runs here; first: "
                               f"{reason_in_brief(next(iter(broken.values()), ''))}")
        return kept

    def verify(self, pairs: list[tuple[Problem, Candidate]], description: str = "verify") -> list[Verdict | None]:
        """Verify in the pool (duplicates judged once), record candidates and verdicts, return in order: None for
        every pair whose problem's reference broke while it was judged (the problem's fault, not the candidate's: it
        is logged and kept in the summary's `left_out` like a reference that fails its check, and the caller
        leaves the problem out)."""
        unique = {c.id: (p, c) for p, c in pairs}
        names = {p.id: p.name or p.id for p, _ in pairs}
        verdicts: dict[str, Verdict] = {}
        started = time.perf_counter()
        with progress_bar(description, len(unique)) as bar, heartbeat(self.pool, description, len(unique)) as beat:
            def advance(_=None) -> None:
                bar(1)
                beat(1)

            def broken(b: ReferenceBroken) -> None:
                advance()
                self._left_out(names[b.problem_id], b.why)

            for v in self.pool.verify_many(unique.values(), on_verdict=advance, on_broken=broken):
                verdicts[v.candidate_id] = v
        # a problem whose reference broke has no verdict at all: those judged before it broke, or without it
        # (a candidate that failed to build: verifier.build_first), go too, so no caller sees half a group
        verdicts = {cid: v for cid, v in verdicts.items() if v.problem_id not in self.pool.broken}
        self._note_throughput(description, list(verdicts.values()), time.perf_counter() - started)
        self._note_reference_runs()
        self.warehouse.add_candidates(self.run_id, [c for _, c in unique.values()])
        r = self.config.reward
        self.warehouse.add_verdicts(self.run_id, [(v, correctness_first_reward(v, r.lam, r.nu_max))
                                                  for v in verdicts.values()])
        for problem, cand in unique.values():
            if cand.id not in verdicts:
                continue
            kept = self.samples.setdefault(verdicts[cand.id].category.value, [])
            if len(kept) < SAMPLES_PER_CATEGORY:
                kept.append({"problem": problem.name or problem.id, "candidate_id": cand.id,
                             "verdict": verdicts[cand.id].model_dump(mode="json"), "source": cand.source})
        return [verdicts.get(c.id) for _, c in pairs]

    def _left_out(self, name: str, why: str) -> None:
        """A problem left out of the stage because its reference cannot be judged against: logged once, kept in
        the summary (`left_out`)."""
        left_out = self.summary.setdefault("left_out", {})
        if name not in left_out:
            log.warning("left out %s: %s", name, reason_in_brief(why))
            left_out[name] = reason_in_brief(why, 200)

    def _note_throughput(self, description: str, verdicts: list[Verdict], seconds: float) -> None:
        """Where verification time goes, summed over this run's calls with this description (an RL stage makes
        one a step): verdicts a second; over the verdicts judged here (not from the cache), the seconds they
        spent in each judge phase (build, reference, start, trials, timing, ...) and the CPU seconds they cost
        by whom (judge, run, build, reference sandboxes) — sums, and a verdict's mean — in the run's summary
        and MLflow; a long call says it."""
        if not verdicts:
            return
        key = re.sub(r"\s*\(.*?\)|\s*\d+", "", description).replace(" ", "_")  # "verify step 3": "verify_step"
        entry = self.summary.setdefault("verifier", {}).setdefault(
            key, {"calls": 0, "verdicts": 0, "judged": 0, "seconds": 0.0, "phase_seconds": {}, "cpu_seconds": {}})
        judged = [v for v in verdicts if not v.cached]  # a cached verdict's phases were spent by an earlier run
        entry["calls"] += 1
        entry["verdicts"] += len(verdicts)
        entry["judged"] += len(judged)
        self._verify_seconds[key] = self._verify_seconds.get(key, 0.0) + seconds
        entry["seconds"] = round(self._verify_seconds[key], 2)
        for field, sums in (("phases", entry["phase_seconds"]), ("cpu_seconds", entry["cpu_seconds"])):
            for v in judged:
                for name, spent in getattr(v, field).items():
                    sums[name] = round(sums.get(name, 0.0) + spent, 2)
        # builds the fast path could not take went through torch's load_inline: tens of seconds each
        slow = [v for v in judged if v.build_fallbacks]
        entry["torch_builds"] = entry.get("torch_builds", 0) + len(slow)
        reasons = entry.setdefault("torch_build_reasons", {})
        for v in slow:
            reason = _REASON_DETAIL.sub("…", v.build_fallbacks[0])[:120]
            reasons[reason] = reasons.get(reason, 0) + 1
        entry["torch_build_reasons"] = dict(sorted(reasons.items(), key=lambda kv: -kv[1]))  # commonest first
        if self._verify_seconds[key] >= 0.01:  # not a rate of verdicts that all came at once (from the cache)
            entry["per_second"] = round(entry["verdicts"] / self._verify_seconds[key], 2)
        per_verdict = max(entry["judged"], 1)
        means = {phase: spent / per_verdict for phase, spent in entry["phase_seconds"].items()}
        cpu_means = {who: spent / per_verdict for who, spent in entry["cpu_seconds"].items()}
        entry["phase_mean_seconds"] = {phase: round(m, 3) for phase, m in means.items()}  # phase_seconds: the sums
        entry["cpu_mean_seconds"] = {who: round(m, 3) for who, m in cpu_means.items()}
        self.mlflow.log_metrics({**({f"verifier/{key}/per_second": entry["per_second"]} if "per_second" in entry
                                    else {}),
                                 f"verifier/{key}/torch_build_share": entry["torch_builds"] / per_verdict,
                                 **{f"verifier/{key}/mean_{phase}_s": m for phase, m in means.items()},
                                 **{f"verifier/{key}/mean_cpu_{who}_s": m for who, m in cpu_means.items()}},
                                step=entry["calls"])
        if seconds >= 60:
            busiest = ", ".join(f"{phase} {m:.2f}" for phase, m in sorted(means.items(), key=lambda x: -x[1])[:5])
            cpu = ", ".join(f"{who} {m:.2f}" for who, m in sorted(cpu_means.items(), key=lambda x: -x[1]))
            console.print(f"{description}: {len(verdicts)} verdicts in {seconds:.0f} s "
                          f"({len(verdicts) / seconds:.2f}/s, {len(verdicts) - len(judged)} cached); mean s a "
                          f"verdict judged here: {busiest}; CPU s: {cpu or 'not measured'}"
                          + (f"; {len(slow)} built through torch's load_inline (the fast path could not: "
                             f"{next(iter(entry['torch_build_reasons']))})" if slow else ""))

    def log_problems(self, problems: list[Problem], run_id: str, context: str) -> None:
        """The problems a run made or used, as an MLflow dataset named after the stage run that holds them."""
        self.mlflow.log_dataset([{"id": p.id, "name": p.name, "source": p.source, "split": p.split.value,
                                  "difficulty": p.difficulty, "pattern": p.pattern or "",
                                  "op_families": ",".join(p.op_families), "scale": p.scale,
                                  "nodes": p.measures.get("nodes")} for p in problems],
                                f"problems:{run_id}", self._dataset_source(run_id), context)

    def log_examples(self, rows: list[dict[str, Any]], run_id: str, context: str) -> None:
        """SFT examples a run made or trained on, as an MLflow dataset named after the stage run that holds them."""
        self.mlflow.log_dataset([{"id": r["id"], "problem_id": r.get("problem_id"), "task": r["task"],
                                  "completion_chars": len(r["completion"])} for r in rows],
                                f"sft_examples:{run_id}", self._dataset_source(run_id), context)

    def _dataset_source(self, run_id: str) -> str:
        return f"{self.warehouse.path}?stage_run={run_id}"  # the rows themselves: the warehouse, that run

    def save_policy(self, model, tokenizer, step: int) -> Path:
        """The stage's final checkpoint: on disk under artifacts/, in the warehouse, and in MLflow."""
        from training.model import save_policy

        path = save_policy(model, tokenizer, self.artifacts / "policy")
        self.warehouse.add_checkpoint(self.run_id, "final", path, step)
        self.mlflow.log_policy(model, tokenizer)
        return path

    def stop_judging(self) -> None:
        """Cut the verifier's judgements in flight short, waiting for none (the stage failed or was interrupted):
        what comes before recording the failure, which must fit in the seconds a terminating signal leaves."""
        if self._pool is not None:
            self._pool.stop()

    def close(self, aborted: bool = False) -> None:
        """Release the verifier; `aborted` (the stage failed or was interrupted): cut its judgements short."""
        if self._pool is not None and aborted:
            self._pool.abort()
        elif self._pool is not None:
            self._pool.close()
        if self._analyser is not None:
            self._analyser.close()


_live_progress: Progress | None = None


@contextmanager
def progress_bar(description: str, total: int | None) -> Iterator:
    """A rich progress bar; yields `advance(n)`. Nested bars share one live display."""
    global _live_progress
    owner = _live_progress is None
    if owner:
        columns = [TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
        _live_progress = Progress(*columns, console=console,
                                  disable=os.environ.get("KERNELDOJO_PROGRESS") == "0")
        _live_progress.start()
    progress = _live_progress
    task_id = progress.add_task(description, total=total)
    try:
        yield lambda n=1: progress.advance(task_id, n)
    finally:
        if owner:
            progress.stop()
            _live_progress = None
        else:
            progress.remove_task(task_id)


# The attribute naming the stage run an exception failed: the CLI reports it in its one-line error.
FAILED_STAGE_RUN = "kerneldojo_failed_stage_run"


def failed_stage_run(exc: BaseException) -> tuple[str, str] | None:
    """(stage, stage run id) of the run that `exc`, or an exception it was raised during, marked failed."""
    seen: BaseException | None = exc
    while seen is not None:
        if hasattr(seen, FAILED_STAGE_RUN):
            return getattr(seen, FAILED_STAGE_RUN)
        seen = seen.__cause__ or seen.__context__
    return None


def failure_text(exc: BaseException) -> str:
    """What a failed run records as its error: the exception, or the signal that ended the process."""
    if isinstance(exc, (Killed, TerminationSignal)):  # the CLI's handler, and Prefect's SIGTERM bridge in flows
        return f"killed by {signal.Signals(exc.signal).name}"
    if isinstance(exc, KeyboardInterrupt):
        return "killed by SIGINT"
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()


def lm_metrics(metrics: dict[str, float]) -> dict[str, float]:
    """The HF Trainer's logs under one prefix (`lm/loss`, `lm/grad_norm`, ...; `train_loss` -> `lm/mean_loss`):
    the language-model loss never shares a name with RL's PPO loss (`ppo/loss`)."""
    renamed = {"train_loss": "mean_loss", "train_runtime": "runtime_seconds"}
    return {f"lm/{renamed.get(k, k.removeprefix('train_'))}": v for k, v in metrics.items()}


@contextmanager
def stage_run(stage: str, config: PipelineConfig, parent_ids: list[str], pipeline_mlflow_run_id: str | None = None,
              pipeline_run_id: str | None = None, resume_run_id: str | None = None,
              nest_under_parent: bool = False) -> Iterator[StageContext]:
    """Record a stage run around its body: warehouse row + nested MLflow run; failed on any exception,
    a terminating signal included.

    Outputs a later stage reads are only taken from runs that end `succeeded`. With `resume_run_id`, an
    interrupted run is reopened instead, under the config it recorded. Runs left `running` by a process
    that died unannounced (SIGKILL) are marked failed first. `nest_under_parent`: the MLflow run is nested
    under its (first) parent's MLflow run rather than the pipeline's (an evaluation under what it evaluates).
    """
    home = Home.of(config)
    warehouse = Warehouse(home.warehouse_path)
    reconcile(warehouse, home.root)
    tracker = Tracker(home.root)
    if resume_run_id:
        run = warehouse.stage_run(resume_run_id)
        if run.stage != stage:
            raise WarehouseError(f"stage run {run.id} is a {run.stage!r} run, not {stage!r}")
        if run.status == StageStatus.succeeded:
            raise WarehouseError(f"stage run {run.id} already succeeded; nothing to resume")
        owner = warehouse.owner(run.id)
        if run.status == StageStatus.running and owner and owner.host == socket.gethostname():
            # reconcile() above failed it if its process were gone: that process still works on it
            raise WarehouseError(f"stage run {run.id} is still running in process {owner.pid}; stop it first")
        # the recorded config, but the ranks of this invocation: how many processes train does not change the math
        recorded = {key: value for key, value in run.config.items() if key != "distributed"}
        config = PipelineConfig.model_validate({**config.model_dump(), **recorded})
        warehouse.reopen_stage_run(run.id)
    else:
        for parent in parent_ids:  # never build on a failed or running parent, nor on the wrong stage
            warehouse.succeeded_run(parent, stage=accepted_parents(stage))
        resolved = config.stage_config(stage)
        run = warehouse.begin_stage_run(stage, resolved, config_hash(resolved), parent_ids, pipeline_run_id)
    # The row is `running` under this process from here on: every way out below ends it.
    logger: RunLogger | None = None
    ctx: StageContext | None = None
    try:
        if resume_run_id:
            logger = (tracker.resume_run(run.mlflow_run_id) if run.mlflow_run_id
                      else tracker.start_run(run.id, tags=run_tags(prefect_flow_run())))
        else:
            mlflow_parent = pipeline_mlflow_run_id
            if nest_under_parent and parent_ids:
                mlflow_parent = warehouse.stage_run(parent_ids[0]).mlflow_run_id or mlflow_parent
            # named by the run id alone: it starts with the stage, and MLflow's table cuts long names short
            logger = tracker.start_run(run.id, params=resolved, parent_run_id=mlflow_parent,
                                       tags={"kerneldojo.stage": stage, "kerneldojo.stage_run_id": run.id,
                                             "kerneldojo.parents": ",".join(parent_ids),
                                             # verdicts of different harnesses are not one measurement
                                             "kerneldojo.harness": HARNESS_VERSION,
                                             **run_tags(prefect_flow_run())})
            warehouse.set_mlflow_run(run.id, logger.run_id)
        ctx = StageContext(stage, run.id, config, home, warehouse, logger)
        announce_stage_run(stage, run.id, run.parent_ids, logger.run_id)
        started = time.perf_counter()
        console.rule(f"[bold cyan]{stage}[/] {run.id}")
        yield ctx
        ctx.close()
        if ctx.samples:
            logger.log_json(ctx.samples, "sample_kernels.json")
        ctx.summary["wall_seconds"] = round(time.perf_counter() - started, 2)
        ctx.summary.setdefault("harness", HARNESS_VERSION)
        logger.log_metrics({"stage/wall_seconds": ctx.summary["wall_seconds"]})
        logger.log_json(ctx.summary, "summary.json")
        warehouse.finish_stage_run(run.id, StageStatus.succeeded, summary=ctx.summary)
        publish_summary(stage, run.id, run.parent_ids, "succeeded", ctx.summary,
                        mlflow_run_link(tracker.experiment_id, logger.run_id))
    except BaseException as exc:
        error = failure_text(exc)
        if ctx is not None:
            with suppress(Exception):  # the body's error is the one to report
                ctx.stop_judging()
        # recorded before the verifier's closing waits for its threads (files of GBs to remove): a stage cut by
        # `timeout -k` must say it failed within the seconds its SIGTERM leaves
        try:
            warehouse.finish_stage_run(run.id, StageStatus.failed, error=error[:4000],
                                       summary=ctx.summary if ctx is not None else None)
            if logger is not None:
                logger.set_tags({"kerneldojo.error": error[:5000]})
                logger.finish(ok=False)
        finally:
            if ctx is not None:
                with suppress(Exception):
                    ctx.close(aborted=True)
        if not isinstance(exc, (KeyboardInterrupt, Killed, TerminationSignal)):  # a killed run reports nothing more
            publish_summary(stage, run.id, run.parent_ids, "failed", ctx.summary if ctx is not None else {},
                            mlflow_run_link(tracker.experiment_id, logger.run_id) if logger else None, error)
        with suppress(AttributeError):  # an exception class with __slots__ takes no attribute
            setattr(exc, FAILED_STAGE_RUN, (stage, run.id))
        raise
    logger.finish(ok=True)
    console.print(f"[green]{stage} {run.id} succeeded[/] in {ctx.summary['wall_seconds']:.1f} s "
                  f"{json.dumps({k: v for k, v in ctx.summary.items() if k != 'wall_seconds'}, default=str)[:300]}")
