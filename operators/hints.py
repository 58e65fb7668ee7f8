"""Shape hints: per-node shape, dtype, stride and contiguity from torch.export,
rendered concisely for the prompt (MusaCoder's tensor shape/stride/contiguity hints)."""

from __future__ import annotations

from schemas.records import Problem, TensorHint
from verifier.analysis import AnalysisError, ReferenceAnalyser, export_analysis


class HintError(RuntimeError):
    pass


def extract_hints(problem: Problem, analyser: ReferenceAnalyser | None = None) -> list[TensorHint]:
    """Per-node hints from torch.export under fake tensors (an imported problem's in a sandbox)."""
    try:
        return [TensorHint(**h) for h in export_analysis(problem, analyser)["hints"]]
    except AnalysisError as exc:
        raise HintError(f"torch.export failed for problem {problem.id}: {exc}") from exc


def _dims(values: list[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def render_hints(hints: list[TensorHint], max_lines: int = 40) -> str:
    """One line per value: `name = op -> dtype[shape] stride [..] (contiguous)`."""
    lines = []
    for h in hints:
        layout = "contiguous" if h.contiguous else "non-contiguous"
        lines.append(f"{h.name}: {h.op} -> {h.dtype}{_dims(h.shape)} stride {_dims(h.stride)} {layout}")
    if len(lines) > max_lines:
        lines = lines[: max_lines - 1] + [f"... {len(hints) - max_lines + 1} more values"]
    return "\n".join(lines)
