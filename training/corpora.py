"""MusaCoder's multi-task SFT corpora, every label backed by the verifier or by torch.export:

- kernel: problem -> six-step reasoning + verified kernel (the distilled set);
- reviewer: problem + candidate -> `VERDICT: CORRECT` / `VERDICT: INCORRECT` (the candidate's verdict);
- diagnosis: problem + failed kernel + verifier feedback -> fixed kernel; the feedback is context, so
  its tokens are masked out of the loss like every other prompt token;
- qa: questions about a problem's graph (shapes, strides, dtypes, op count) answered from its hints.

Negatives come from mutating verified kernels and verifying the mutants.
"""

from __future__ import annotations

import random
import re
from typing import Any

from schemas.records import Problem, Verdict, content_hash
from training.prompts import SYSTEM_PROMPT, extract_code, feedback_message, prompt_messages, user_prompt

REVIEW_INSTRUCTION = ("Review this candidate ModelNew for the reference above. Answer on the first line with "
                      "`VERDICT: CORRECT` or `VERDICT: INCORRECT`, then one line of reasons.")

# Each mutation is a plausible kernel bug: a wrong operator, a wrong constant, a missed element, a
# swapped operand, a dropped write.
_MUTATIONS: list[tuple[str, re.Pattern, str]] = [
    ("operator", re.compile(r"(return [^;]*?) \+ "), r"\1 - "),
    ("operator", re.compile(r"(return [^;]*?) \* "), r"\1 + "),
    ("constant", re.compile(r"(\d+\.\d+)f"), r"(\1f * 1.5f)"),
    ("bounds", re.compile(r"i < n; \+\+i\)"), r"i < n - 1; ++i)"),
    ("bounds", re.compile(r"idx < size"), r"idx < size - 1"),
    ("init", re.compile(r"-INFINITY"), r"0.f"),
    ("write", re.compile(r"po\[i\] = "), r"po[i] += "),
]


def mutate_kernel(source: str, rng: random.Random) -> tuple[str, str] | None:
    """A buggy variant of a kernel source and the kind of bug, or None if no mutation applies."""
    options = [(kind, pattern, repl) for kind, pattern, repl in _MUTATIONS if pattern.search(source)]
    if not options:
        return None
    kind, pattern, repl = rng.choice(options)
    matches = list(pattern.finditer(source))
    m = rng.choice(matches)
    mutated = source[:m.start()] + m.expand(repl) + source[m.end():]
    return (mutated, kind) if mutated != source else None


def reviewer_example(problem: Problem, candidate_source: str, verdict: Verdict, backend: str) -> dict[str, Any]:
    correct = verdict.passed
    reason = ("all correctness trials pass and it uses only its own kernels" if correct
              else f"{verdict.category.value}: {verdict.detail.splitlines()[0][:200] if verdict.detail else ''}")
    user = f"{user_prompt(problem, backend)}\n\nCandidate:\n```python\n{candidate_source.strip()}\n```\n\n{REVIEW_INSTRUCTION}"
    return {"id": content_hash("reviewer", problem.id, candidate_source), "problem_id": problem.id, "task": "reviewer",
            "candidate_id": verdict.candidate_id,
            "messages": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}],
            "completion": f"VERDICT: {'CORRECT' if correct else 'INCORRECT'}\n{reason}"}


def diagnosis_example(problem: Problem, failed_completion: str, verdict: Verdict, fixed_completion: str,
                      backend: str) -> dict[str, Any]:
    """Failed kernel + feedback -> fixed kernel. Everything before the fix is context (masked)."""
    messages = prompt_messages(problem, backend) + [
        {"role": "assistant", "content": failed_completion},
        {"role": "user", "content": feedback_message(verdict)},
    ]
    return {"id": content_hash("diagnosis", problem.id, failed_completion), "problem_id": problem.id,
            "task": "diagnosis", "candidate_id": verdict.candidate_id, "messages": messages,
            "completion": fixed_completion}


def qa_examples(problem: Problem, limit: int = 2) -> list[dict[str, Any]]:
    """Questions about the problem's exported graph, answered from its torch.export hints."""
    out = []
    outputs = [h for h in problem.hints if h.op not in ("input", "parameter")]
    inputs = [h for h in problem.hints if h.op == "input"]
    facts = []
    if outputs:
        last = outputs[-1]
        facts.append((f"What are the shape, dtype and strides of `{last.name}` ({last.op})?",
                      f"`{last.name}` is {last.dtype} with shape {last.shape} and strides {last.stride}; it is "
                      f"{'contiguous' if last.contiguous else 'not contiguous'}."))
        facts.append(("How many ATen operators does the reference's graph run, and which?",
                      f"{len(outputs)}: " + ", ".join(h.op.removeprefix("aten.") for h in outputs) + "."))
    if inputs:
        first = inputs[0]
        n = 1
        for s in first.shape:
            n *= s
        facts.append((f"How many elements does input `{first.name}` hold, and how many bytes?",
                      f"{n} elements of {first.dtype}: {n * _itemsize(first.dtype)} bytes."))
    for question, answer in facts[:limit]:
        user = f"```python\n{problem.reference.strip()}\n```\n\n{question}"
        out.append({"id": content_hash("qa", problem.id, question), "problem_id": problem.id, "task": "qa",
                    "candidate_id": None, "messages": [{"role": "system", "content": SYSTEM_PROMPT},
                                                       {"role": "user", "content": user}],
                    "completion": answer})
    return out


def _itemsize(dtype: str) -> int:
    return {"float64": 8, "int64": 8, "float32": 4, "int32": 4, "float16": 2, "bfloat16": 2, "bool": 1,
            "int8": 1, "uint8": 1}.get(dtype, 4)


def mutants(solved: list[tuple[Problem, str]], per_problem: int, seed: int) -> list[tuple[Problem, str, str, str]]:
    """(problem, correct completion, mutated completion, bug kind) for up to `per_problem` mutants each."""
    rng = random.Random(seed)
    out = []
    for problem, completion in solved:
        code = extract_code(completion) or ""
        seen = set()
        for _ in range(per_problem * 3):
            if len(seen) >= per_problem:
                break
            result = mutate_kernel(code, rng)
            if result is None:
                break
            mutated, kind = result
            if mutated in seen:
                continue
            seen.add(mutated)
            out.append((problem, completion, completion.replace(code.strip(), mutated.strip()), kind))
    return out
