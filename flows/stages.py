"""One Prefect flow per stage, so any stage can be deployed, scheduled and re-run alone
against an earlier stage run (`--from-run`)."""

from __future__ import annotations

from prefect import flow

from schemas.config import STAGES, UPSTREAM, ConfigError, load_config
from tasks import STAGE_TASKS
from tasks.common import Home
from warehouse.store import Warehouse


RESUMABLE = ("warmup_rl", "leap_rl")


@flow(name="kerneldojo-stage", log_prints=True)
def stage(name: str, from_run: str | None = None, config_path: str | None = None,
          overrides: list[str] | None = None, resume: str | None = None) -> str:
    """Re-run one stage. `from_run` is a succeeded run of its upstream stage; when omitted, the
    latest succeeded one is used. `resume` continues an interrupted RL run from its last checkpoint.
    Returns the stage run id."""
    if name not in STAGES:
        raise ConfigError(f"unknown stage {name!r}; stages are {', '.join(STAGES)}")
    config = load_config(config_path, overrides)
    if resume:
        if name not in RESUMABLE:
            raise ConfigError(f"only {' and '.join(RESUMABLE)} can resume; re-run {name!r} instead")
        return STAGE_TASKS[name](config, None, resume=resume)
    if name == "synthesize":
        return STAGE_TASKS[name](config)
    if from_run is None and (name != "evaluate" or config.evaluate.needs_upstream_run):
        latest = Warehouse(Home.of(config).warehouse_path).latest_run(UPSTREAM[name])
        if latest is None:
            raise ConfigError(f"stage {name!r} needs --from-run <{UPSTREAM[name]} run id> and none has succeeded yet")
        from_run = latest.id
    return STAGE_TASKS[name](config, from_run)
