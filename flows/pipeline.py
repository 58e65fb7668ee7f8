"""The whole DAG as one Prefect flow: synthesize -> hints -> distill -> sft -> rft -> warmup_rl -> leap_rl -> evaluate."""

from __future__ import annotations

import time
import uuid

from prefect import flow

from schemas.config import STAGES, load_config
from tasks import run_stage_task
from tasks.common import Home
from tasks.prefect_ui import announce_pipeline_run, mlflow_run_link, prefect_flow_run
from training.distributed import check_split
from warehouse.store import Warehouse
from warehouse.tracking import Tracker, run_tags


@flow(name="kerneldojo-pipeline", log_prints=True)
def pipeline(config_path: str | None = None, overrides: list[str] | None = None,
             from_run: str | None = None) -> dict[str, str]:
    """Run every stage in order; each stage run records its parent, so lineage reaches back to `synthesize`.
    With `evaluate.after`, the policy is also evaluated after those stages (`evaluate@<stage>` in the result).
    Returns {stage: stage_run_id}.

    Args:
        config_path: A pipeline YAML on the worker (empty: the embedded tiny config).
        overrides: Config overrides, KEY=VALUE each (e.g. `sft.epochs=5`, `evaluate.after=[sft,rft]`).
        from_run: Continue the DAG after this succeeded stage run (e.g. a `distill` run: SFT onwards on its data);
            it and its ancestors stand for the stages up to it. Empty: from `synthesize`.
    """
    config = load_config(config_path, overrides)
    for stage in STAGES:  # before any stage runs: a late stage's batches that cannot be split over the ranks
        check_split(config, stage, config.distributed.processes)
    home = Home.of(config)
    done = stages_done(Warehouse(home.warehouse_path), from_run) if from_run else {}
    pipeline_run_id = f"pipeline-{uuid.uuid4().hex[:10]}"
    started = time.perf_counter()
    tracker = Tracker(home.root)
    parent = tracker.start_run(pipeline_run_id, params={**config.model_dump(), "home": str(home.root),
                                                        "from_run": from_run or ""},
                               tags={"kerneldojo.pipeline_run_id": pipeline_run_id, **run_tags(prefect_flow_run())})
    announce_pipeline_run(pipeline_run_id, mlflow_run_link(tracker.experiment_id, parent.run_id))
    runs: dict[str, str] = dict(done)
    previous: str | None = from_run
    try:
        for stage in STAGES:
            if stage in done:
                continue
            kwargs = dict(pipeline_mlflow_run_id=parent.run_id, pipeline_run_id=pipeline_run_id)
            if previous is None:
                previous = run_stage_task(stage, config, **kwargs)
            else:
                previous = run_stage_task(stage, config, previous, **kwargs)
            runs[stage] = previous
            if stage in config.evaluate.after:  # a side branch: the next stage builds on `previous`, not on this
                runs[f"evaluate@{stage}"] = run_stage_task("evaluate", config, previous, **kwargs)
    except BaseException:
        parent.finish(ok=False)
        raise
    parent.log_json(runs, "stage_runs.json")
    warehouse = Warehouse(home.warehouse_path)
    final = warehouse.stage_run(runs["leap_rl"])  # the final policy
    if final.mlflow_run_id:
        version = tracker.register_policy(config.name, final.mlflow_run_id,
                                          {"pipeline_run_id": pipeline_run_id, "stage_run_id": final.id})
        parent.set_tags({"kerneldojo.registered_model": f"{config.name}/{version}"})
    parent.log_metrics({"pipeline/wall_seconds": time.perf_counter() - started,
                        **pipeline_metrics(warehouse, runs)})
    if report := held_out_report(warehouse, runs, config.evaluate.max_turns):
        parent.log_text(report, "held_out.md")
    parent.finish(ok=True)
    return runs


def stages_done(warehouse: Warehouse, from_run: str) -> dict[str, str]:
    """{stage: run} for `from_run`'s stage and every stage before it, read from its lineage: what a pipeline
    continued from `from_run` does not run again."""
    run = warehouse.succeeded_run(from_run, STAGES[:-1])  # not after an evaluation: nothing follows it
    before = STAGES[: STAGES.index(run.stage) + 1]
    return {stage: warehouse.ancestor(from_run, stage).id for stage in before}


def held_out_report(warehouse: Warehouse, runs: dict[str, str], max_turns: int) -> str:
    """Markdown for the parent run (what `kerneldojo run` prints): held-out numbers by the stage evaluated, then
    what each stage changed, paired problem by problem. Empty without evaluations."""
    from warehouse.reports import evaluation_rows, headroom_table, held_out_table, problem_outcomes, stage_change_table

    rows = evaluation_rows(warehouse, runs)
    if not rows:
        return ""
    turn = min(3, max_turns)
    outcomes = {r["stage"]: problem_outcomes(warehouse, r["evaluation"], turn) for r in rows}
    tables = [held_out_table([rows], max_turns)] + ([stage_change_table([outcomes], turn)] if len(rows) > 1 else [])
    if any(o.samples > 1 for stage in outcomes.values() for o in stage.values()):  # what RL could sharpen
        tables.append(headroom_table([outcomes]))
    return "\n\n".join(tables) + "\n"


HELD_OUT_METRICS = ("accuracy/", "fast_", "speedup/", "pass_at_", "avg_at_")  # per-level ones stay on the evaluation


def pipeline_metrics(warehouse: Warehouse, runs: dict[str, str]) -> dict[str, float]:
    """What two pipelines are compared on, on the parent run: each stage's seconds and held-out numbers of
    every evaluation, named by the stage evaluated (`held_out/sft/accuracy/turn_1`)."""
    metrics: dict[str, float] = {}
    for key, run_id in runs.items():
        summary = warehouse.summary(run_id)
        if key == "evaluate" or key.startswith("evaluate@"):
            evaluated = key.split("@")[1] if "@" in key else "leap_rl"
            numbers = summary.get("metrics") or {}
            metrics.update({f"held_out/{evaluated}/{name}": value for name, value in numbers.items()
                            if name.startswith(HELD_OUT_METRICS) or name in ("faster_rate", "turns_per_pass")})
        else:
            metrics[f"stage_seconds/{key}"] = float(summary.get("wall_seconds", 0.0))
    return metrics
