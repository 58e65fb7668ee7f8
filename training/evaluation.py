"""KernelBench-protocol evaluation: per-turn cumulative accuracy with feedback, fast_p against eager and
torch.compile, pass@k and Avg@k, speedups and the verdict mix, overall and per KernelBench level."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import comb, exp, log

from schemas.config import EvaluateConfig
from schemas.records import Problem, Verdict, VerdictCategory
from training.rollout import ChatPolicy, Rollout, RolloutEngine, VerifyBatch, chat_rollouts, multi_turn_rollouts


@dataclass
class EvalSummary:
    rows: list[dict]
    metrics: dict[str, float]
    rollouts: list[Rollout]


def evaluate_policy(policy: RolloutEngine | ChatPolicy, verify: VerifyBatch, problems: list[Problem],
                    config: EvaluateConfig, backend: str, seed: int,
                    on_progress: Callable[[str, int], None] | None = None, timed: bool = True,
                    compiled: bool = True) -> EvalSummary:
    """Every sample gets up to `max_turns` turns with feedback; accuracy at turn t counts passes by turn t.
    `policy`: a trained policy's sampling engine, or a text policy (an endpoint, a teacher). `timed`: whether
    the verifier timed the passes (without, the metrics leave speed out rather than report none faster);
    `compiled`: whether it timed torch.compile too (without, the metrics leave that baseline out)."""
    if hasattr(policy, "complete"):
        rollouts = chat_rollouts(policy, verify, problems, config.samples_per_problem, config.max_turns,
                                 config.generation, backend, seed, origin="evaluate")
    else:
        rollouts = multi_turn_rollouts(policy, verify, problems, config.samples_per_problem, config.max_turns,
                                       config.generation, backend, seed, origin="evaluate", gate=None,
                                       on_progress=on_progress)
    return summarize_evaluation(rollouts, config, timed, compiled)


def summarize_evaluation(rollouts: list[Rollout], config: EvaluateConfig, timed: bool = True,
                         compiled: bool = True) -> EvalSummary:
    """The rows and metrics of judged rollouts (`evaluate_policy`'s, or those of the problems left after some
    were left out), overall and per KernelBench level."""
    rows = [{"problem_id": r.problem.id, "sample": r.index, "turn": t + 1, "candidate_id": turn.candidate.id,
             "category": turn.verdict.category.value, "passed": turn.verdict.passed,
             "speedup": turn.verdict.speedup_vs_eager}
            for r in rollouts for t, turn in enumerate(r.turns)]
    outcomes = [Outcome(r.problem.id, level_of(r.problem), [t.verdict for t in r.turns]) for r in rollouts]
    metrics = evaluation_metrics(outcomes, config.max_turns, config.samples_per_problem, config.pass_k,
                                 config.faster_threshold, timed, compiled)
    for level in sorted({o.level for o in outcomes if o.level}):  # KernelBench problems: per level too
        mine = [o for o in outcomes if o.level == level]
        metrics.update({f"{level}/{k}": v for k, v in evaluation_metrics(
            mine, config.max_turns, config.samples_per_problem, config.pass_k, config.faster_threshold,
            timed, compiled).items()})
    return EvalSummary(rows, metrics, rollouts)


FAST_P = (0.0, 1.0, 1.5, 2.0)  # KernelBench's thresholds; fast_0 is correctness


@dataclass
class Outcome:
    """One sample's verdicts, turn by turn (it stops at its first pass), and its problem's level."""

    problem_id: str
    level: str | None
    verdicts: list[Verdict]

    @property
    def passed_turn(self) -> int:
        """1-based turn of the first pass, 0 if never passed."""
        return next((t + 1 for t, v in enumerate(self.verdicts) if v.passed), 0)


def level_of(problem: Problem) -> str | None:
    """KernelBench's level of an imported benchmark problem (`level1`...), None for the others."""
    return f"level{problem.difficulty}" if problem.source == "kernelbench" else None


def evaluation_metrics(outcomes: list[Outcome], max_turns: int, samples: int, pass_k: list[int],
                       faster_threshold: float = 1.1, timed: bool = True, compiled: bool = True) -> dict[str, float]:
    """Every number of the KernelBench protocol, over samples (problem x sample):

    - `accuracy/turn_<t>`: passed by turn t with the verifier's feedback (LEAP's per-turn accuracy);
    - `fast_<p>/<eager|compile>` and `.../turn_1`: KernelBench's fast_p, the share that is correct *and* faster
      than the baseline by more than p (fast_0 = correctness), for the kernel a sample ends with (its first pass)
      and for its first turn alone (KernelBench's single-turn protocol);
    - `speedup/geomean_<eager|compile>`: geometric mean speedup over correct kernels;
    - `pass_at_<k>/turn_1` (unbiased estimator) and `avg_at_<n>/turn_1` (mean first-turn pass rate of the n
      samples, MusaCoder's Avg@k) per problem, averaged over problems;
    - `turns_per_pass`, `faster_rate` (first pass faster than eager by `faster_threshold`), and
      `category/turn_1/<category>`: the first-turn verdict mix.

    Untimed (`timed=False`: the verifier judged correctness only) leaves out every speed metric but fast_0;
    without torch.compile timed (`compiled=False`: the cpu backend, verifier.compare_torch_compile off), every
    `compile` metric is left out rather than read as "never faster than torch.compile"."""
    n = max(len(outcomes), 1)
    metrics: dict[str, float] = {}
    for t in range(1, max_turns + 1):
        metrics[f"accuracy/turn_{t}"] = sum(0 < o.passed_turn <= t for o in outcomes) / n
    final = [o.verdicts[o.passed_turn - 1] if o.passed_turn else None for o in outcomes]
    first = [o.verdicts[0] if o.verdicts and o.verdicts[0].passed else None for o in outcomes]
    for baseline in ("eager", "compile") if compiled else ("eager",):
        for p in FAST_P if timed else FAST_P[:1]:
            name = f"fast_{p:g}/{baseline}"
            metrics[name] = fast_p(final, p, baseline)
            metrics[f"{name}/turn_1"] = fast_p(first, p, baseline)
        if timed:
            metrics[f"speedup/geomean_{baseline}"] = geomean_speedup(final, baseline)
    if timed:
        metrics["faster_rate"] = sum((v.speedup_vs_eager or 0) > faster_threshold for v in final if v) / n
    passes = [o.passed_turn for o in outcomes if o.passed_turn]
    metrics["turns_per_pass"] = sum(passes) / len(passes) if passes else 0.0
    by_problem: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by_problem.setdefault(o.problem_id, []).append(o)
    for k in sorted({k for k in pass_k if k <= samples}):
        metrics[f"pass_at_{k}/turn_1"] = sum(pass_at_k(len(os_), sum(o.passed_turn == 1 for o in os_), k)
                                          for os_ in by_problem.values()) / max(len(by_problem), 1)
    metrics[f"avg_at_{samples}/turn_1"] = sum(sum(o.passed_turn == 1 for o in os_) / len(os_)
                                              for os_ in by_problem.values()) / max(len(by_problem), 1)
    for category in VerdictCategory:
        metrics[f"category/turn_1/{category.value}"] = sum(
            bool(o.verdicts) and o.verdicts[0].category == category for o in outcomes) / n
    return metrics


def fast_p(kernels: list[Verdict | None], p: float, baseline: str = "eager") -> float:
    """KernelBench's fast_p over samples: the share whose kernel is correct (not None, passed) and faster than
    the baseline by more than p. A correct kernel without a measured speedup counts as correct for p = 0 only;
    with no torch.compile baseline (the reference did not compile) the compile variant counts none faster."""
    if not kernels:
        return 0.0
    hits = 0
    for v in kernels:
        if v is None or not v.passed:
            continue
        speedup = v.speedup_vs_eager if baseline == "eager" else v.speedup_vs_compile
        hits += p == 0 or (speedup is not None and speedup > p)
    return hits / len(kernels)


def geomean_speedup(kernels: list[Verdict | None], baseline: str = "eager") -> float:
    """Geometric mean of the measured speedups of the correct kernels (0 when there is none)."""
    values = [v.speedup_vs_eager if baseline == "eager" else v.speedup_vs_compile
              for v in kernels if v is not None and v.passed]
    values = [x for x in values if x is not None and x > 0]
    return exp(sum(log(x) for x in values) / len(values)) if values else 0.0


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimator of pass@k from n samples of which c pass (Chen et al., 2021, the one
    KernelBench and MusaCoder report; logged as pass_at_<k>): 1 - C(n-c, k) / C(n, k), the chance that k
    of the n samples drawn without replacement hold at least one pass."""
    if not 0 < k <= n or not 0 <= c <= n:
        raise ValueError(f"pass@k needs 0 < k <= n and 0 <= c <= n (got n={n}, c={c}, k={k})")
    return 1.0 - comb(n - c, k) / comb(n, k)
