"""Reports read back from the warehouse: held-out numbers of a pipeline's evaluations, stage by stage."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from typing import Any, NamedTuple

from schemas.config import POLICY_STAGES


def evaluation_rows(warehouse, runs: dict[str, str]) -> list[dict]:
    """Per policy stage of one pipeline: its evaluation's metrics and the stage's own wall time."""
    rows = []
    for stage in POLICY_STAGES:
        evaluation = runs.get("evaluate" if stage == "leap_rl" else f"evaluate@{stage}")
        if evaluation is None:
            continue
        summary, trained = warehouse.summary(evaluation), warehouse.stage_run(runs[stage])
        wall = (trained.finished - trained.started).total_seconds() if trained.finished else float("nan")
        rows.append({"stage": stage, "evaluation": evaluation, "wall_s": wall, **summary})
    return rows


def _mean_std(values: list[float]) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f}"


def held_out_table(per_seed: list[list[dict]], max_turns: int) -> str:
    """Markdown: a row per stage, mean ± std over seeds."""
    turn = min(3, max_turns)
    lines = [f"| stage | held-out pass@1 (turn 1) | accuracy by turn {turn} | faster than eager | problems | "
             "stage wall s | harness |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for stage in POLICY_STAGES:
        rows = [r for seed_rows in per_seed for r in seed_rows if r["stage"] == stage]
        if not rows:
            continue
        pick = lambda key: [float(r[key]) for r in rows if key in r]
        problems = sorted({int(r.get("problems", 0)) for r in rows})
        lines.append(f"| {stage} | {_mean_std(pick('accuracy/turn_1'))} | {_mean_std(pick(f'accuracy/turn_{turn}'))} "
                     f"| {_mean_std(pick('faster_rate'))} | {'/'.join(map(str, problems))} "
                     f"| {_mean_std(pick('wall_s'))} | {harnesses(rows)} |")
    return "\n".join(lines)


def harnesses(rows: list[dict]) -> str:
    """The verifier harnesses that judged these evaluations (seeds judged by different ones are not quite one
    measurement); "<=6" for one recorded before evaluations said (harness 7)."""
    known = sorted({str(r["harness"]) for r in rows if "harness" in r}, key=lambda v: (len(v), v))
    if any("harness" not in r for r in rows):
        known.insert(0, "<=6")
    return "/".join(known)


class Outcome(NamedTuple):
    """One problem in one evaluation: the share of its samples that passed at turn 1, the share that passed by
    the report's turn, and how many samples it had."""

    first: float
    by_turn: float
    samples: int = 1


def problem_outcomes(warehouse, evaluation: str, turn: int) -> dict[str, Outcome]:
    """Problem id -> its Outcome (share passed at turn 1, share passed by `turn`, samples) in one evaluation."""
    first, by_turn = defaultdict(dict), defaultdict(dict)
    for row in warehouse.eval_rows(evaluation):
        problem, sample, passed = row["problem_id"], row["sample"], bool(row["passed"])
        if row["turn"] == 1:
            first[problem][sample] = passed
        if row["turn"] <= turn:
            by_turn[problem][sample] = by_turn[problem].get(sample, False) or passed
    return {p: Outcome(statistics.mean(first[p].values()) if first[p] else 0.0, statistics.mean(by_turn[p].values()),
                       len(by_turn[p])) for p in by_turn}


def stage_change_table(per_seed: list[dict[str, dict[str, Outcome]]], turn: int) -> str:
    """Markdown: what each stage changed against the one before it (and the last against the first), paired by
    seed and problem. `per_seed`: per seed, {stage: problem_outcomes}."""
    stages = [s for s in POLICY_STAGES if any(s in seed for seed in per_seed)]
    pairs = list(zip(stages, stages[1:]))
    if len(stages) > 2:
        pairs.append((stages[0], stages[-1]))
    return paired_change_table(per_seed, pairs, turn)


def paired_change_table(per_seed: list[dict[str, dict[str, Outcome]]], pairs: list[tuple[str, str]],
                        turn: int) -> str:
    """Markdown: a row per (before, after) pair of evaluated policies — the change in the share of problems passed
    at turn 1 and by `turn`, paired by seed and problem: the same problems judged before and after, so a
    problem's own difficulty cancels and the standard error is the change's, not two tables' spread. A change
    within about two standard errors of zero is noise. `per_seed`: per seed, {policy: problem_outcomes}."""
    lines = [f"| change | turn 1, points | problems up / down | by turn {turn}, points | problems up / down | pairs |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for before, after in pairs:
        deltas = [(seed[after][p][0] - seed[before][p][0], seed[after][p][1] - seed[before][p][1])
                  for seed in per_seed if before in seed and after in seed
                  for p in sorted(seed[before].keys() & seed[after].keys())]
        if not deltas:
            continue
        cells = []
        for column in zip(*deltas):
            mean = 100 * statistics.mean(column)
            error = 100 * statistics.stdev(column) / math.sqrt(len(column)) if len(column) > 1 else float("nan")
            cells += [f"{mean:+.1f} ± {error:.1f}", f"{sum(d > 0 for d in column)} / {sum(d < 0 for d in column)}"]
        lines.append(f"| {after} vs {before} | " + " | ".join(cells) + f" | {len(deltas)} |")
    return "\n".join(lines)


def headroom_table(per_seed: list[dict[str, dict[str, Outcome]]]) -> str:
    """Markdown: a row per stage — its problems by how many of their samples passed at turn 1 (none, some, all),
    pass@1, and the share with any pass (pass@n, n = samples a problem). RL on a policy's own samples sharpens:
    it can raise pass@1 towards pass@n on the problems it sometimes solves; a problem it never solves gives its
    groups one reward and no gradient. So pass@n − pass@1 is about what RL can show, and a policy whose problems
    are all-or-nothing leaves it nothing. Shares of problems, mean over seeds. `per_seed`: as stage_change_table's."""
    lines = ["| stage (turn 1) | problems never passed | sometimes | always | pass@1 | pass@n | headroom, points |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for stage in POLICY_STAGES:
        seeds = [seed[stage] for seed in per_seed if seed.get(stage)]
        if not seeds:
            continue
        share = lambda test: statistics.mean(sum(test(o.first) for o in s.values()) / len(s) for s in seeds)
        never, always = share(lambda f: f == 0.0), share(lambda f: f == 1.0)
        pass_1 = statistics.mean(statistics.mean(o.first for o in s.values()) for s in seeds)
        if all(o.samples == 1 for s in seeds for o in s.values()):  # one sample: all or nothing
            lines.append(f"| {stage} | {never:.3f} | - | - | {pass_1:.3f} | - | - (one sample a problem) |")
            continue
        some = max(0.0, 1 - never - always)  # (not -0.000)
        lines.append(f"| {stage} | {never:.3f} | {some:.3f} | {always:.3f} | {pass_1:.3f} "
                     f"| {1 - never:.3f} | {100 * max(0.0, 1 - never - pass_1):.1f} |")
    return "\n".join(lines)


FAILURES = ("wrong_output", "compile_error", "runtime_error", "timeout", "illegal")


def failure_mix_table(per_seed: list[list[dict]]) -> str:
    """Markdown: what the first turn's verdicts were, a row per stage (share of samples, mean over seeds) — why a
    stage's pass rate is what it is (a policy that compiles and computes wrong, or one that does not compile)."""
    lines = ["| stage (turn 1) | " + " | ".join(f.replace("_", " ") for f in FAILURES) + " |",
             "| --- |" + " ---: |" * len(FAILURES)]
    for stage in POLICY_STAGES:
        rows = [r for seed_rows in per_seed for r in seed_rows if r["stage"] == stage]
        if rows:
            found = [{**r, **r.get("metrics", {})} for r in rows]  # an evaluation's summary keeps them in metrics
            shares = [[float(r[f"category/turn_1/{f}"]) for r in found if f"category/turn_1/{f}" in r] for f in FAILURES]
            lines.append(f"| {stage} | " + " | ".join(f"{statistics.mean(v):.3f}" if v else "-" for v in shares) + " |")
    return "\n".join(lines)


# What `kerneldojo compare` shows of each evaluation, per level and overall (prefix "" = all problems).
COMPARED = ("problems", "accuracy/turn_1", "accuracy/turn_3", "fast_0/eager/turn_1", "fast_1/eager/turn_1",
            "fast_1.5/eager/turn_1", "fast_2/eager/turn_1", "fast_1/compile/turn_1", "fast_1/eager",
            "speedup/geomean_eager", "speedup/geomean_compile", "pass_at_1/turn_1", "pass_at_5/turn_1",
            "turns_per_pass", "category/turn_1/compile_error", "category/turn_1/wrong_output",
            "category/turn_1/illegal")


def compared_evaluations(warehouse, run_ids: list[str]) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(run id, who was evaluated, on what, metrics) of each evaluation run, in order."""
    columns = []
    for run_id in run_ids:
        run = warehouse.succeeded_run(run_id, "evaluate")
        summary = warehouse.summary(run.id)
        metrics = summary.get("metrics") or {k: v for k, v in summary.items() if isinstance(v, (int, float))}
        columns.append((run.id, summary.get("evaluated", "?"), summary.get("problems_from", "?"), metrics))
    return columns


def metric_levels(metrics: list[dict[str, Any]]) -> list[str]:
    """The KernelBench levels these metrics break down by (`level1`, ...)."""
    return sorted({k.split("/", 1)[0] for m in metrics for k in m if k.startswith("level")})


def compare_table(warehouse, run_ids: list[str]) -> str:
    """Markdown: one column per evaluation run, one row per metric (overall, then per KernelBench level)."""
    columns = compared_evaluations(warehouse, run_ids)
    levels = metric_levels([m for *_, m in columns])
    lines = ["| metric | " + " | ".join(run_id for run_id, *_ in columns) + " |",
             "| --- |" + " ---: |" * len(columns),
             "| evaluated | " + " | ".join(who for _, who, _, _ in columns) + " |",
             "| problems from | " + " | ".join(where for _, _, where, _ in columns) + " |"]
    for prefix in ["", *(f"{level}/" for level in levels)]:
        for name in COMPARED:
            values = [m.get(prefix + name) for *_, m in columns]
            if all(v is None for v in values):
                continue
            cells = ["-" if v is None else f"{v:.3f}" if isinstance(v, float) and not float(v).is_integer()
                     else f"{v:g}" for v in values]
            lines.append(f"| {prefix}{name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
