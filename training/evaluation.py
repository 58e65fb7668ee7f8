"""KernelBench-style evaluation: per-turn cumulative accuracy, pass@k and faster rate on held-out problems."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import comb

from schemas.config import EvaluateConfig
from schemas.records import Problem
from training.rollout import HFRolloutEngine, Rollout, VerifyBatch, multi_turn_rollouts


@dataclass
class EvalSummary:
    rows: list[dict]
    metrics: dict[str, float]
    rollouts: list[Rollout]


def evaluate_policy(engine: HFRolloutEngine, verify: VerifyBatch, problems: list[Problem], config: EvaluateConfig,
                    backend: str, seed: int, on_progress: Callable[[str, int], None] | None = None) -> EvalSummary:
    """Every sample gets up to `max_turns` turns with feedback; accuracy at turn t counts passes by turn t."""
    rollouts = multi_turn_rollouts(engine, verify, problems, config.samples_per_problem, config.max_turns,
                                   config.generation, backend, seed, origin="evaluate", gate=None,
                                   on_progress=on_progress)
    rows = []
    for r in rollouts:
        for t, turn in enumerate(r.turns):
            rows.append({"problem_id": r.problem.id, "sample": r.index, "turn": t + 1,
                         "candidate_id": turn.candidate.id, "category": turn.verdict.category.value,
                         "passed": turn.verdict.passed, "speedup": turn.verdict.speedup_vs_eager})
    n = max(len(rollouts), 1)
    metrics: dict[str, float] = {}
    for t in range(1, config.max_turns + 1):
        metrics[f"accuracy/turn_{t}"] = sum(0 < r.passed_turn <= t for r in rollouts) / n
    first_pass = [r.turns[r.passed_turn - 1].verdict for r in rollouts if r.passed_turn]
    metrics["faster_rate"] = sum((v.speedup_vs_eager or 0) > config.faster_threshold for v in first_pass) / n
    by_problem: dict[str, list[Rollout]] = {}
    for r in rollouts:
        by_problem.setdefault(r.problem.id, []).append(r)
    for k in sorted({k for k in config.pass_k if k <= config.samples_per_problem}):
        metrics[f"pass_at_{k}/turn_1"] = sum(pass_at_k(len(rs), sum(r.passed_turn == 1 for r in rs), k)
                                          for rs in by_problem.values()) / max(len(by_problem), 1)
    metrics["turns_per_pass"] = (sum(r.passed_turn for r in rollouts if r.passed_turn) / len(first_pass)) if first_pass else 0.0
    return EvalSummary(rows, metrics, rollouts)


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimator of pass@k from n samples of which c pass (Chen et al., 2021, the one
    KernelBench and MusaCoder report; logged as pass_at_<k>): 1 - C(n-c, k) / C(n, k), the chance that k
    of the n samples drawn without replacement hold at least one pass."""
    if not 0 < k <= n or not 0 <= c <= n:
        raise ValueError(f"pass@k needs 0 < k <= n and 0 <= c <= n (got n={n}, c={c}, k={k})")
    return 1.0 - comb(n - c, k) / comb(n, k)
