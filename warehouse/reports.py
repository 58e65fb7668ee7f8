"""Reports read back from the warehouse: held-out numbers of a pipeline's evaluations, stage by stage."""

from __future__ import annotations

import statistics

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
             "stage wall s |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for stage in POLICY_STAGES:
        rows = [r for seed_rows in per_seed for r in seed_rows if r["stage"] == stage]
        if not rows:
            continue
        pick = lambda key: [float(r[key]) for r in rows if key in r]
        problems = sorted({int(r.get("problems", 0)) for r in rows})
        lines.append(f"| {stage} | {_mean_std(pick('accuracy/turn_1'))} | {_mean_std(pick(f'accuracy/turn_{turn}'))} "
                     f"| {_mean_std(pick('faster_rate'))} | {'/'.join(map(str, problems))} "
                     f"| {_mean_std(pick('wall_s'))} |")
    return "\n".join(lines)
