"""Where one deployment keeps its state. Light to import: the CLI needs it before any stage code."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from schemas.config import PipelineConfig


@dataclass
class Home:
    """Where one deployment keeps its state: `<home>/warehouse.duckdb`, `mlflow.db`, `artifacts/`, `cache/`."""

    root: Path

    @classmethod
    def of(cls, config: PipelineConfig) -> "Home":
        root = Path(os.environ.get("KERNELDOJO_HOME", config.home)).resolve()
        root.mkdir(parents=True, exist_ok=True)
        return cls(root)

    @property
    def warehouse_path(self) -> Path:
        return self.root / "warehouse.duckdb"

    @property
    def cache(self) -> Path:
        return self.root / "cache"

    def artifacts(self, run_id: str) -> Path:
        path = self.root / "artifacts" / run_id
        path.mkdir(parents=True, exist_ok=True)
        return path
