"""Prompts: MusaCoder's six-step structured-reasoning template in chat format, the
multi-turn feedback turn shared by the RL stages and evaluation, and code extraction."""

from __future__ import annotations

import re

from operators.hints import render_hints
from schemas.records import Problem, Verdict

SIX_STEPS = (
    "1. Operators: what the graph computes, op by op.",
    "2. Shapes: input, intermediate and output shapes, dtypes, strides and contiguity.",
    "3. Strategy: how the work is split (loops, threads, blocks) and what is fused.",
    "4. Memory: what is read and written, and in which order.",
    "5. Edge cases: broadcasting, bounds, numerics.",
    "6. Code: the complete ModelNew.",
)

BACKEND_TEXT = {
    "cpu": "C++ (a CPU extension built with torch.utils.cpp_extension.load_inline(cpp_sources=...))",
    "cuda": "CUDA (kernels built with torch.utils.cpp_extension.load_inline(cuda_sources=...))",
}

SYSTEM_PROMPT = (
    "You are a GPU kernel engineer. You replace PyTorch reference programs with hand-written kernels "
    "that compute the same outputs faster. torch may only allocate outputs, make views and call your own "
    "kernels; all computation must happen in your kernels."
)

# A truncated completion may lack the closing fence: take what is there.
_CODE_BLOCK = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)(?:```|\Z)", re.S)


def _megabytes(n: int) -> str:
    return f"{n / 2 ** 20:.3g} MB" if n >= 2 ** 20 else f"{n / 2 ** 10:.3g} KB"


def scale_note(problem: Problem) -> str:
    """One line for a problem scaled down from its GPU size (empty when it is at full size): the factor and
    both working sets, so the model knows the sizes it reads are not the ones a GPU kernel would get."""
    if problem.scale <= 1.0 or not problem.cuda_working_set_bytes:
        return ""
    here = problem.measures.get("total_bytes") or round(problem.cuda_working_set_bytes / problem.scale)
    return (f"Sizes: scaled down {problem.scale:.0f}x for the CPU; this reference moves {_megabytes(here)} "
            f"(inputs + weights + outputs), the same graph at GPU size {_megabytes(problem.cuda_working_set_bytes)}. "
            "Write code that is correct for any size.\n\n")


def user_prompt(problem: Problem, backend: str, max_hint_lines: int = 40) -> str:
    hints = render_hints(problem.hints, max_hint_lines) if problem.hints else "(none)"
    steps = "\n".join(SIX_STEPS)
    return (
        f"Write ModelNew in {BACKEND_TEXT[backend]} for this reference.\n\n"
        f"```python\n{problem.reference.strip()}\n```\n\n"
        f"{scale_note(problem)}"
        f"Shape hints (torch.export):\n{hints}\n\n"
        f"Think in six steps, then give the code in one ```python block:\n{steps}"
    )


def prompt_messages(problem: Problem, backend: str, max_hint_lines: int = 40) -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": user_prompt(problem, backend, max_hint_lines)}]


def feedback_message(verdict: Verdict) -> str:
    """The user turn that carries the verifier's verdict back to the model (multi-turn RL, evaluation)."""
    return (f"Your kernel was judged `{verdict.category.value}`.\n{verdict.detail}\n\n"
            "Fix it and give the complete corrected ModelNew in one ```python block.")


def completion_text(reasoning: list[str], code: str) -> str:
    steps = "\n".join(reasoning)
    return f"{steps}\n```python\n{code.strip()}\n```"


def extract_code(completion: str) -> str | None:
    """The last ```python block of a completion (the six-step text comes first), or None."""
    blocks = _CODE_BLOCK.findall(completion)
    if blocks:
        return blocks[-1].strip() + "\n"
    return None
