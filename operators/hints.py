"""Shape hints: per-node shape, dtype, stride and contiguity from torch.export,
rendered concisely for the prompt (MusaCoder's tensor shape/stride/contiguity hints)."""

from __future__ import annotations

from operators.graph import export_reference, graph_hints
from schemas.records import Problem, TensorHint
from verifier.reference import load_reference_module


class HintError(RuntimeError):
    pass


def extract_hints(problem: Problem) -> list[TensorHint]:
    try:
        module = load_reference_module(problem.reference, f"hints_{problem.id}")
        return graph_hints(export_reference(module))
    except Exception as exc:
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
