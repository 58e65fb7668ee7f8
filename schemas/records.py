"""The typed records that cross stage boundaries (DESIGN.md §3)."""

from __future__ import annotations

import hashlib
from datetime import datetime
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


def content_hash(*parts: str, length: int = 16) -> str:
    """Stable short id for a piece of content (sources, configs, candidates)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\x00")
    return digest.hexdigest()[:length]


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Split(str, Enum):
    train = "train"
    validation = "validation"  # for choices (tuning, early stopping); the test split is never used for them
    test = "test"


class TensorHint(Record):
    """What torch.export knows about one value of the graph."""

    name: str
    op: str  # "input", "parameter" or the aten op that produced it
    shape: list[int]
    dtype: str
    stride: list[int]
    contiguous: bool


class Problem(Record):
    """A reference program in KernelBench format: `Model`, `get_inputs`, `get_init_inputs`."""

    id: str
    source: str  # where it came from: nnsmith, kernelbench, dataset, ...
    reference: str
    op_families: list[str] = Field(default_factory=list)
    difficulty: int = 1
    split: Split = Split.train
    hints: list[TensorHint] = Field(default_factory=list)
    name: str = ""
    # Sizes. `scale`: how many times smaller this reference's working set (bytes of inputs + weights +
    # outputs) is than the same graph at GPU size; 1.0 = GPU size. `cuda_working_set_bytes`: that GPU-size
    # working set (None = not measured, e.g. imports). `measures`: measured properties of this reference
    # (operators/measures.py: nodes, families, largest tensor, bytes, FLOPs, intensity, compute_bound; a
    # scaled-down one also holds them at GPU size under "cuda"). `drawn_family`: the family a balanced
    # mix drew for it (it is in op_families).
    scale: float = Field(1.0, ge=1.0)
    cuda_working_set_bytes: int | None = None
    measures: dict[str, Any] = Field(default_factory=dict)
    drawn_family: str | None = None
    # Shape- and name-agnostic structure (the dataflow of ops and how get_inputs builds its tensors, numbers
    # left out): problems that share it are one graph at different sizes or names, and go to the same split.
    pattern: str | None = None

    @staticmethod
    def make_id(reference: str) -> str:
        return content_hash(reference)


class Candidate(Record):
    """A `ModelNew` in KernelBench format that claims to compute the problem's `Model`."""

    id: str
    problem_id: str
    source: str
    backend: Literal["cpu", "cuda"] = "cpu"
    turn: int = 0
    parent_id: str | None = None
    origin: str = ""  # teacher, sft-sample, rollout, eval ...

    @staticmethod
    def make_id(problem_id: str, source: str, backend: str) -> str:
        return content_hash(problem_id, source, backend)


class VerdictCategory(str, Enum):
    passed = "pass"
    partial = "partial"
    wrong_output = "wrong_output"
    compile_error = "compile_error"
    runtime_error = "runtime_error"
    timeout = "timeout"
    illegal = "illegal"


class Verdict(Record):
    """MusaCoder's V(c, x): the structured outcome of verifying one candidate."""

    candidate_id: str
    problem_id: str
    compiled: bool
    correct: bool
    legal: bool
    pass_fraction: float  # q: fraction of correctness trials passed
    category: VerdictCategory
    detail: str = ""  # what the model sees as feedback; bounded
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    compile_seconds: float = 0.0
    run_seconds: float = 0.0
    device: str = "cpu"
    rule: str | None = None  # for illegal verdicts: the rule broken
    cached: bool = False
    phases: dict[str, float] = Field(default_factory=dict)  # seconds per harness phase, as the judge saw them
    # CPU seconds the judgement cost, by whom: the judge's thread, and each kind of sandbox it closed (run: the
    # candidate's, build: its compilers, reference: the problem's reference when this judgement made it), as
    # the kernel counts them (cgroup or /proc); where the wall time of `phases` was spent working, not waiting
    cpu_seconds: dict[str, float] = Field(default_factory=dict)
    # why the fast build path handed this candidate's builds to torch's load_inline (full torch headers: tens of
    # seconds each), built or not; empty when every build stayed on the fast path
    build_fallbacks: list[str] = Field(default_factory=list)
    # the harness that judged it (verifier.pool.HARNESS_VERSION), stamped when the judge's store keeps it
    harness: str = ""
    # seconds per call: the sandbox's claim, the judge's own clock, what was believed, the eager baseline
    timing: dict[str, float] = Field(default_factory=dict)
    # passing kernels: the least time their memory traffic needs (bytes read + written at the device's copy
    # bandwidth) over the time they took; 1.0 = at the bandwidth roofline
    roofline_fraction: float | None = None
    # host memory high-water mark of the candidate's sandbox (its cgroup's, or its processes' when there is none)
    peak_memory_bytes: int | None = None

    @property
    def passed(self) -> bool:
        return self.category == VerdictCategory.passed


class Turn(Record):
    candidate_id: str
    source: str
    verdict: Verdict
    feedback: str = ""
    generated_tokens: int = 0


class Trajectory(Record):
    """One rollout of a group: its turns, its rank, reward and advantage."""

    id: str
    group_id: str
    problem_id: str
    step: int
    rollout_index: int
    turns: list[Turn]
    gated: bool  # DCP decision for the group: True = entered multi-turn debugging
    rank: int | None = None
    reward: float = 0.0
    advantage: float = 0.0


class StageStatus(str, Enum):
    running = "running"
    succeeded = "succeeded"
    failed = "failed"


class StageRun(Record):
    id: str
    stage: str
    status: StageStatus
    config: dict[str, Any]
    config_hash: str
    parent_ids: list[str] = Field(default_factory=list)
    mlflow_run_id: str | None = None
    pipeline_run_id: str | None = None
    started: datetime
    finished: datetime | None = None
    error: str | None = None
