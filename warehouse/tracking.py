"""MLflow tracking: one parent run per pipeline run, one nested run per stage run.

Uses `MlflowClient` with explicit run ids rather than the fluent API, whose active
run is thread-local: Prefect runs tasks in worker threads.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import tempfile
import warnings
from pathlib import Path
from typing import Any

from mlflow.entities import Metric, Param, RunStatus
from mlflow.tracking import MlflowClient

_METRIC_NAME = re.compile(r"[^A-Za-z0-9_\-./ ]")
EXPERIMENT = "kerneldojo"


def sanitize(name: str) -> str:
    return _METRIC_NAME.sub("_", name)[:250]


def flatten(config: dict[str, Any], prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, f"{name}."))
        else:
            out[sanitize(name)] = json.dumps(value, default=str) if not isinstance(value, str) else value
    return out


EXPERIMENT_KIND_TAG, EXPERIMENT_KIND = "mlflow.experimentKind", "custom_model_development"


@functools.cache
def _git_commit() -> str:
    """The checkout's commit, once per process ("" outside a git checkout)."""
    import subprocess

    try:
        return subprocess.run(["git", "-C", str(Path(__file__).resolve().parents[1]), "rev-parse", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def run_tags(prefect_flow_run: str | None = None) -> dict[str, str]:
    """Tags every kerneldojo MLflow run carries: the git commit of the code (MLflow's own source tag, shown in
    its UI) and, when it runs in one, the Prefect flow run."""
    tags = {}
    commit = _git_commit()
    if commit:
        tags["mlflow.source.git.commit"] = commit
    if prefect_flow_run:
        tags["kerneldojo.prefect_flow_run_id"] = prefect_flow_run
    return tags


def default_tracking_uri(home: Path) -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{(home / 'mlflow.db').resolve()}"


class Tracker:
    """Creates and writes MLflow runs for a pipeline and its stages."""

    def __init__(self, home: Path, tracking_uri: str | None = None, experiment: str = EXPERIMENT):
        self.tracking_uri = tracking_uri or default_tracking_uri(home)
        self.client = MlflowClient(tracking_uri=self.tracking_uri)
        found = self.client.get_experiment_by_name(experiment)
        if found is None:
            artifacts = (home / "mlartifacts").resolve()
            artifacts.mkdir(parents=True, exist_ok=True)
            self.experiment_id = self.client.create_experiment(experiment, artifact_location=artifacts.as_uri())
        else:
            self.experiment_id = found.experiment_id
        if found is None or found.tags.get(EXPERIMENT_KIND_TAG) != EXPERIMENT_KIND:
            # MLflow 3 opens an experiment without a kind in its GenAI view (traces): ours is model training,
            # whose runs table, charts and compare view are what a user comes for
            self.client.set_experiment_tag(self.experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND)

    def start_run(self, name: str, params: dict[str, Any] | None = None, parent_run_id: str | None = None,
                  tags: dict[str, str] | None = None) -> "RunLogger":
        all_tags = dict(tags or {})
        if parent_run_id:
            all_tags["mlflow.parentRunId"] = parent_run_id
        run = self.client.create_run(self.experiment_id, run_name=name, tags=all_tags)
        logger = RunLogger(self.client, run.info.run_id)
        if params:
            logger.log_params(params)
        return logger

    def resume_run(self, run_id: str) -> "RunLogger":
        self.client.update_run(run_id, status="RUNNING")
        return RunLogger(self.client, run_id)

    def fail_abandoned_run(self, run_id: str, error: str) -> None:
        """End a run whose process died without ending it: FAILED, with the reason as a tag, and its
        pipeline's parent run too while that is still RUNNING (it died with the same process)."""
        run = self.client.get_run(run_id)
        self.client.set_tag(run_id, "kerneldojo.error", error[:5000])
        if run.info.status == "RUNNING":
            self.client.set_terminated(run_id, "FAILED")
        parent_id = run.data.tags.get("mlflow.parentRunId")
        if parent_id and self.client.get_run(parent_id).info.status == "RUNNING":
            self.client.set_terminated(parent_id, "FAILED")

    def register_policy(self, name: str, mlflow_run_id: str, tags: dict[str, str]) -> str:
        """A new version of the registered model `name` (the pipeline's name) from that run's `policy` MLflow
        Model; its version number."""
        from mlflow.exceptions import MlflowException

        try:
            self.client.create_registered_model(name, description="kerneldojo policies, one version per pipeline run")
        except MlflowException as exc:
            if "already exists" not in str(exc).lower() and "RESOURCE_ALREADY_EXISTS" not in str(exc):
                raise
        source = f"{self.client.get_run(mlflow_run_id).info.artifact_uri}/policy"
        return self.client.create_model_version(name, source, run_id=mlflow_run_id, tags=tags).version

    def ui_command(self) -> str:
        return f"mlflow ui --backend-store-uri {self.tracking_uri}"


class RunLogger:
    """Params, metrics and artifacts of one MLflow run."""

    def __init__(self, client: MlflowClient, run_id: str):
        self.client = client
        self.run_id = run_id

    def log_params(self, params: dict[str, Any]) -> None:
        flat = flatten(params)
        items = [Param(k, v[:6000]) for k, v in flat.items()]
        for i in range(0, len(items), 100):
            self.client.log_batch(self.run_id, params=items[i:i + 100])

    def log_metrics(self, metrics: dict[str, float | int | None], step: int = 0) -> None:
        import time

        now = int(time.time() * 1000)
        items = [Metric(sanitize(k), float(v), now, step) for k, v in metrics.items()
                 if v is not None and v == v]  # skip None and NaN
        for i in range(0, len(items), 500):
            self.client.log_batch(self.run_id, metrics=items[i:i + 500])

    def set_tags(self, tags: dict[str, str]) -> None:
        for k, v in tags.items():
            self.client.set_tag(self.run_id, k, v)

    def log_artifact(self, path: str | Path, artifact_path: str | None = None) -> None:
        path = Path(path)
        if path.is_dir():
            self.client.log_artifacts(self.run_id, str(path), artifact_path)
        else:
            self.client.log_artifact(self.run_id, str(path), artifact_path)

    def log_text(self, text: str, name: str) -> None:
        self.client.log_text(self.run_id, text, name)

    def log_json(self, obj: Any, name: str) -> None:
        self.client.log_text(self.run_id, json.dumps(obj, indent=2, default=str), name)

    def log_figure(self, figure, name: str) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / Path(name).name
            figure.savefig(path, dpi=110, bbox_inches="tight")
            self.log_artifact(path, str(Path(name).parent) if Path(name).parent != Path(".") else None)

    def log_dataset(self, rows: list[dict[str, Any]], name: str, source: str, context: str) -> None:
        """A table of this run's inputs or outputs as an MLflow dataset (its schema, size and digest in the run's
        Datasets column): `context` says how the run used it (training, evaluation, produced)."""
        import pandas as pd
        from mlflow.data.pandas_dataset import from_pandas
        from mlflow.entities import DatasetInput, InputTag

        with warnings.catch_warnings():  # two hints for model signatures, not for a record of rows: MLflow finds
            # its local-artifact source registered twice, and int columns "cannot represent missing values"
            warnings.filterwarnings("ignore", "The specified dataset source can be interpreted", UserWarning)
            warnings.filterwarnings("ignore", "Hint: Inferred schema contains integer column", UserWarning)
            dataset = from_pandas(pd.DataFrame(rows), source=source, name=name)
            self.client.log_inputs(self.run_id, datasets=[DatasetInput(
                dataset._to_mlflow_entity(), tags=[InputTag("mlflow.data.context", context)])])

    def log_policy(self, model, tokenizer, artifact_path: str = "policy") -> None:
        """The policy as an MLflow Model (transformers flavor, text-generation): registrable from the UI, loadable
        with `mlflow.transformers.load_model("runs:/<run>/policy")`, the tokenizer exactly as trained."""
        import mlflow.transformers
        import torch
        import transformers

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / artifact_path
            flavor_log = logging.getLogger("mlflow.transformers")
            level = flavor_log.level
            flavor_log.setLevel(logging.ERROR)  # its model card and licence are looked up on the Hub: ours is local
            try:
                mlflow.transformers.save_model(  # requirements given: inferring them imports every optional extra
                    transformers_model={"model": model, "tokenizer": tokenizer}, path=str(path),
                    task="text-generation", pip_requirements=[f"torch=={torch.__version__.split('+')[0]}",
                                                              f"transformers=={transformers.__version__}"])
            finally:
                flavor_log.setLevel(level)
            self.log_artifact(path, artifact_path)

    def finish(self, ok: bool) -> None:
        self.client.set_terminated(self.run_id, RunStatus.to_string(RunStatus.FINISHED if ok else RunStatus.FAILED))
