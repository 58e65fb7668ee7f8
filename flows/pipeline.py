"""The whole DAG as one Prefect flow: synthesize -> hints -> distill -> sft -> rft -> warmup_rl -> leap_rl -> evaluate."""

from __future__ import annotations

import uuid

from prefect import flow

from schemas.config import STAGES, load_config
from tasks import STAGE_TASKS
from tasks.common import Home
from warehouse.tracking import Tracker


@flow(name="kerneldojo-pipeline", log_prints=True)
def pipeline(config_path: str | None = None, overrides: list[str] | None = None) -> dict[str, str]:
    """Run every stage in order; each stage run records its parent, so lineage reaches back to `synthesize`.

    With `evaluate.after`, the policy is also evaluated after those stages (`evaluate@<stage>` in the result).
    Returns {stage: stage_run_id}.
    """
    config = load_config(config_path, overrides)
    home = Home.of(config)
    pipeline_run_id = f"pipeline-{uuid.uuid4().hex[:10]}"
    parent = Tracker(home.root).start_run(f"pipeline:{pipeline_run_id}", params=config.model_dump(),
                                          tags={"kerneldojo.pipeline_run_id": pipeline_run_id})
    runs: dict[str, str] = {}
    previous: str | None = None
    try:
        for stage in STAGES:
            stage_task = STAGE_TASKS[stage]
            kwargs = dict(pipeline_mlflow_run_id=parent.run_id, pipeline_run_id=pipeline_run_id)
            if previous is None:
                previous = stage_task(config, **kwargs)
            else:
                previous = stage_task(config, previous, **kwargs)
            runs[stage] = previous
            if stage in config.evaluate.after:  # a side branch: the next stage builds on `previous`, not on this
                runs[f"evaluate@{stage}"] = STAGE_TASKS["evaluate"](config, previous, **kwargs)
    except BaseException:
        parent.finish(ok=False)
        raise
    parent.log_json(runs, "stage_runs.json")
    parent.finish(ok=True)
    return runs
