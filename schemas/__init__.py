"""Typed records and configs shared by every stage."""

from schemas.config import (
    STAGES,
    UPSTREAM,
    ConfigError,
    PipelineConfig,
    config_hash,
    load_config,
)
from schemas.records import (
    Candidate,
    Problem,
    Split,
    StageRun,
    StageStatus,
    TensorHint,
    Trajectory,
    Turn,
    Verdict,
    VerdictCategory,
    content_hash,
)

__all__ = [
    "STAGES", "UPSTREAM", "Candidate", "ConfigError", "PipelineConfig", "Problem", "Split", "StageRun",
    "StageStatus", "TensorHint", "Trajectory", "Turn", "Verdict", "VerdictCategory",
    "config_hash", "content_hash", "load_config",
]
