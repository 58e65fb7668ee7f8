"""The correctness-first reward (MusaCoder Eq. 2)."""

from __future__ import annotations

from schemas.records import Verdict, VerdictCategory

_FLOOR_CATEGORIES = {VerdictCategory.compile_error, VerdictCategory.runtime_error, VerdictCategory.timeout,
                     VerdictCategory.illegal}


def correctness_first_reward(verdict: Verdict, lam: float = 0.5, nu_max: float = 4.0) -> float:
    """MusaCoder Eq. 2: s = -1 if not compiled, runtime error, timeout, illegal or q = 0;
    s = -0.5 (1 - q) for partial correctness 0 < q < 1;
    s = 1 + lam * min(speedup, nu_max) when fully correct and legal.

    A missing speedup measurement counts as 0 (correctness alone earns 1).
    """
    q = verdict.pass_fraction
    if verdict.category in _FLOOR_CATEGORIES or not verdict.compiled or not verdict.legal or q <= 0.0:
        return -1.0
    if q < 1.0:
        return -0.5 * (1.0 - q)
    speedup = verdict.speedup_vs_eager or 0.0
    return 1.0 + lam * min(speedup, nu_max)

