"""Diversity-preserving rejection fine-tuning (MusaCoder): keep a heterogeneous set of
verified-correct samples per problem rather than only the fastest one."""

from __future__ import annotations

import re
from dataclasses import dataclass

from schemas.records import Verdict, content_hash

_COMMENT = re.compile(r"(//[^\n]*|/\*.*?\*/|#(?!include|define|pragma)[^\n]*)", re.S)
_SPACE = re.compile(r"\s+")


def normalized_signature(source: str) -> str:
    """Hash of the source with comments and whitespace removed: equal for cosmetic variants."""
    return content_hash(_SPACE.sub("", _COMMENT.sub("", source)))


@dataclass
class Sample:
    problem_id: str
    source: str
    completion: str
    verdict: Verdict


def select_diverse(samples: list[Sample], max_per_problem: int, keep_fastest_only: bool = False) -> list[Sample]:
    """Correct samples, distinct by normalized signature, at most `max_per_problem` per problem
    (fastest first). `keep_fastest_only` is the standard-RFT ablation: one sample per problem."""
    by_problem: dict[str, list[Sample]] = {}
    for s in samples:
        if s.verdict.passed:
            by_problem.setdefault(s.problem_id, []).append(s)
    kept: list[Sample] = []
    limit = 1 if keep_fastest_only else max_per_problem
    for group in by_problem.values():
        group.sort(key=lambda s: -(s.verdict.speedup_vs_eager or 0.0))
        seen: set[str] = set()
        for s in group:
            sig = normalized_signature(s.source)
            if sig in seen:
                continue
            seen.add(sig)
            kept.append(s)
            if len(seen) >= limit:
                break
    return kept
