"""One Prefect flow per stage, so any stage can be deployed, scheduled and re-run alone
against an earlier stage run (`--from-run`)."""

from __future__ import annotations

from prefect import flow

from schemas.config import STAGES, UPSTREAM, ConfigError, StageName, load_config
from tasks import run_stage_task
from tasks.common import Home
from warehouse.store import Warehouse


RESUMABLE = ("warmup_rl", "leap_rl")


@flow(name="kerneldojo-stage", log_prints=True)
def stage(name: StageName, from_run: str | None = None, config_path: str | None = None,
          overrides: list[str] | None = None, resume: str | None = None) -> str:
    """Re-run one stage against an earlier stage run, or resume an interrupted RL run. Returns the stage run id
    (also in the flow run's name, its logs and its summary artifact).

    Args:
        name: The stage to run.
        from_run: A succeeded run of the upstream stage (e.g. `sft-1a2b3c4d5e` for `rft`; for `evaluate`, any policy
            stage's run). Empty: the latest succeeded one.
        config_path: A pipeline YAML on the worker (empty: the embedded tiny config).
        overrides: Config overrides, KEY=VALUE each (e.g. `sft.epochs=5`).
        resume: A warmup_rl or leap_rl stage run to continue from its last checkpoint (then `from_run` is unused).
    """
    if name not in STAGES:
        raise ConfigError(f"unknown stage {name!r}; stages are {', '.join(STAGES)}")
    config = load_config(config_path, overrides)
    if resume:
        if name not in RESUMABLE:
            raise ConfigError(f"only {' and '.join(RESUMABLE)} can resume; re-run {name!r} instead")
        return run_stage_task(name, config, None, resume=resume)
    if name == "synthesize":
        return run_stage_task(name, config)
    if from_run is None and (name != "evaluate" or config.evaluate.needs_upstream_run):
        latest = Warehouse(Home.of(config).warehouse_path).latest_run(UPSTREAM[name])
        if latest is None:
            raise ConfigError(f"stage {name!r} needs --from-run <{UPSTREAM[name]} run id> and none has succeeded yet")
        from_run = latest.id
    return run_stage_task(name, config, from_run)
