"""Reconciliation: stage runs left `running` by a process that died without a word (SIGKILL, OOM killer,
power loss) are marked failed, in the warehouse and in MLflow. Every command that opens the warehouse
runs it first, so such a run is `failed` by the time anyone looks."""

from __future__ import annotations

from pathlib import Path

from schemas.records import StageRun
from warehouse.store import Warehouse


def reconcile(warehouse: Warehouse, home: Path) -> list[StageRun]:
    """Fail the runs whose owner process is gone; returns them."""
    vanished = warehouse.fail_vanished_runs()
    tracked = [run for run in vanished if run.mlflow_run_id]
    if tracked:
        from warehouse.tracking import Tracker  # MLflow is slow to import; only pay for it when needed

        tracker = Tracker(home)
        for run in tracked:
            tracker.fail_abandoned_run(run.mlflow_run_id, run.error or "")
    return vanished
