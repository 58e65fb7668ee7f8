"""What a Prefect UI user sees of a stage run: its id and lineage in the flow run's logs, the flow run named
after it, and a markdown artifact with its summary and a link to its MLflow run. Outside a Prefect run
(a stage called as a plain function) all of this is skipped."""

from __future__ import annotations

import json
import os
from contextlib import suppress
from typing import Any

SINGLE_STAGE_FLOWS = ("kerneldojo-stage", "kerneldojo-eval")  # flows whose run is one stage run: named after it


def _flow_run_context():
    from prefect.context import FlowRunContext

    return FlowRunContext.get()


def announce_stage_run(stage: str, run_id: str, parent_ids: list[str], mlflow_run_id: str | None) -> None:
    """Log the stage run id (the value a later stage takes as `from_run`) and what it builds on."""
    context = _flow_run_context()
    if context is None:
        return
    from prefect import get_run_logger

    get_run_logger().info("%s: stage run %s, from %s; MLflow run %s", stage, run_id,
                          ", ".join(parent_ids) or "nothing (a first stage)", mlflow_run_id or "-")
    if context.flow.name in SINGLE_STAGE_FLOWS:
        _rename_flow_run(context, f"{stage} · {run_id}")


def _rename_flow_run(context, name: str) -> None:
    from prefect.client.orchestration import get_client

    with suppress(Exception), get_client(sync_client=True) as client:  # a cosmetic rename never fails a stage
        client.update_flow_run(context.flow_run.id, name=name)


def announce_pipeline_run(pipeline_run_id: str, mlflow_link: str) -> None:
    """Name the pipeline's flow run after its pipeline run id and log where its MLflow parent run is."""
    context = _flow_run_context()
    if context is None:
        return
    from prefect import get_run_logger

    get_run_logger().info("pipeline run %s; MLflow: %s", pipeline_run_id, mlflow_link)
    _rename_flow_run(context, f"pipeline · {pipeline_run_id}")


def prefect_flow_run() -> str | None:
    """The id of the Prefect flow run this code runs in, if any (tagged on MLflow runs: MLflow -> Prefect)."""
    context = _flow_run_context()
    return str(context.flow_run.id) if context is not None else None


def _mlflow_ui() -> str:
    """The MLflow UI's address (`KERNELDOJO_MLFLOW_UI`, default a local `mlflow ui`)."""
    return os.environ.get("KERNELDOJO_MLFLOW_UI", "http://127.0.0.1:5000").rstrip("/")


def mlflow_run_link(experiment_id: str, mlflow_run_id: str) -> str:
    """The run's page in the MLflow UI."""
    return f"{_mlflow_ui()}/#/experiments/{experiment_id}/runs/{mlflow_run_id}"


def mlflow_compare_link(experiment_id: str, mlflow_run_ids: list[str]) -> str:
    """MLflow's compare view of these runs (its metrics side by side, as `kerneldojo compare` prints them)."""
    return (f"{_mlflow_ui()}/#/compare-runs?runs={json.dumps(mlflow_run_ids, separators=(',', ':'))}"
            f"&experiments={json.dumps([experiment_id])}")


def artifact_key(run_id: str) -> str:
    """Prefect artifact keys are lowercase letters, digits and dashes: `warmup_rl-1a2b` -> `warmup-rl-1a2b`."""
    return run_id.lower().replace("_", "-")


def publish_summary(stage: str, run_id: str, parent_ids: list[str], status: str, summary: dict[str, Any],
                    mlflow_link: str | None, error: str | None = None) -> None:
    """A markdown artifact keyed by the run id (`artifact_key`) on the flow run: status, lineage, summary, MLflow link."""
    if _flow_run_context() is None:
        return
    from prefect import get_run_logger
    from prefect.artifacts import create_markdown_artifact

    rows = "\n".join(f"| {k} | {v if not isinstance(v, (dict, list)) else json.dumps(v)[:300]} |"
                     for k, v in summary.items())
    markdown = (f"## {stage} · `{run_id}` — {status}\n\n"
                f"- builds on: {', '.join(f'`{p}`' for p in parent_ids) or 'nothing (a first stage)'}\n"
                f"- next stage: `kerneldojo stage <next> --from-run {run_id}` (parameter `from_run` in the UI)\n"
                + (f"- MLflow: [{run_id}]({mlflow_link})\n" if mlflow_link else "")
                + (f"- error: {error[:1000]}\n" if error else "")
                + (f"\n| summary | value |\n| --- | --- |\n{rows}\n" if rows else ""))
    with suppress(Exception):  # reporting never fails a stage
        create_markdown_artifact(markdown, key=artifact_key(run_id),
                                 description=f"{stage} stage run {run_id}")
        get_run_logger().info("%s %s %s: %s", stage, run_id, status,
                              json.dumps({k: v for k, v in summary.items() if not isinstance(v, dict)},
                                         default=str)[:1000])
