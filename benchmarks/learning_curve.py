"""Does it learn? Held-out numbers after every training stage, over several seeds (issue 12).

Runs the whole pipeline once per seed with `evaluate.after: [sft, rft, warmup_rl]` (the last stage, leap_rl,
is always evaluated), then reads the evaluations back from the warehouse and prints, per stage, held-out
pass@1 at turn 1 and cumulative accuracy at turn M (M = min(3, evaluate.max_turns)) with the verifier's
feedback, mean ± std over seeds, and each stage's wall time; then what each stage changed against the one before
it, paired by seed and problem, with its standard error (a change within about two of them is noise); then what
the first turn's failures were (wrong output, compile error, ...), the first thing to read when a stage does not
help. Every evaluation is also an MLflow run nested
under the stage run it evaluates: the same numbers side by side in MLflow's compare view.

    python -m benchmarks.learning_curve --seeds 0 1 2 --config configs/mini.yaml   # the miniature (a GPU)
    python -m benchmarks.learning_curve --seeds 0 --set synthesize.num_problems=8  # a smoke run on a CPU
    python -m benchmarks.learning_curve --runs stage_runs_0.json stage_runs_1.json        # tables only
    python -m benchmarks.learning_curve --seeds 0 1 2 --from-run distill-0eee7bec1c ...   # seeds share the data

With `--from-run <a distill run>`, every seed trains from SFT on the same distilled corpus and is evaluated on the
same held-out split: the seeds then vary what training varies (initialisation, sampling, batch order), and the
data stages run once.

The expected shape (MusaCoder Table 2, LEAP Table 1): RFT >= SFT, warmup RL >= RFT on pass@1, LEAP >= warmup
on turn-M accuracy. Whatever the numbers say is what the table shows.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from schemas.config import POLICY_STAGES, load_config
from warehouse.reports import (evaluation_rows, failure_mix_table, headroom_table, held_out_table, problem_outcomes,
                               stage_change_table)

EVALUATED_AFTER = [s for s in POLICY_STAGES if s != "leap_rl"]  # leap_rl: the pipeline's own last evaluate


def run_seeds(config_path: str | None, sets: list[str], seeds: list[int],
              from_run: str | None = None) -> list[dict[str, str]]:
    """One pipeline per seed (continued after `from_run` when given); its {stage or evaluate@stage: stage run id}."""
    from flows.pipeline import pipeline

    after = "evaluate.after=[" + ",".join(EVALUATED_AFTER) + "]"
    return [pipeline(config_path=config_path, overrides=[*sets, f"seed={seed}", after], from_run=from_run)
            for seed in seeds]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", "-c", default=None, help="a pipeline config (default: the embedded tiny one)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--from-run", default=None, help="continue every seed's pipeline after this stage run "
                        "(a distill run: the seeds share its data and held-out split)")
    parser.add_argument("--runs", nargs="*", default=None, help="tables only: JSON files of finished pipelines' "
                        "{stage: run id} (a pipeline's stage_runs.json artifact in MLflow)")
    parser.add_argument("--markdown", default=None, help="also write the table (and the command) to this file")
    parser.add_argument("--json", default=None, help="also write every evaluation's numbers to this file")
    args = parser.parse_args(argv)

    from tasks.common import Home
    from warehouse.store import Warehouse

    config = load_config(args.config, args.set)
    if args.runs is None:
        from flows.script import run_in_order

        all_runs = run_in_order(lambda: run_seeds(args.config, args.set, args.seeds, args.from_run))
    else:
        all_runs = [json.loads(Path(r).read_text()) for r in args.runs]
    warehouse = Warehouse(Home.of(config).warehouse_path)
    per_seed = [evaluation_rows(warehouse, runs) for runs in all_runs]
    if not any(per_seed):
        sys.exit("no evaluations found: were the pipelines run with evaluate.after?")
    turn = min(3, config.evaluate.max_turns)
    outcomes = [{r["stage"]: problem_outcomes(warehouse, r["evaluation"], turn) for r in rows} for rows in per_seed]
    text = "\n\n".join([held_out_table(per_seed, config.evaluate.max_turns), stage_change_table(outcomes, turn),
                         headroom_table(outcomes), failure_mix_table(per_seed)])
    print(text)
    if args.markdown:
        command = "python -m benchmarks.learning_curve " + " ".join(argv if argv is not None else sys.argv[1:])
        Path(args.markdown).write_text(f"```\n{command}\n```\n\n{text}\n")
    if args.json:
        Path(args.json).write_text(json.dumps(per_seed, indent=1, default=str))


if __name__ == "__main__":
    main()
