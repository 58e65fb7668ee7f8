"""The DAG one stage at a time, across commands that each may run only minutes (a lent GPU box, a CI job).

A state file holds {stage or evaluate@stage: stage run id} — the same map a pipeline returns and
`benchmarks.learning_curve --runs` reads. Each invocation runs the listed steps in order, each against the run
the state holds for its upstream stage, skips those the state already has, and starts none after `--deadline`
seconds, so a step is never cut in half by the command's limit; the next invocation goes on where this one
stopped. With `--limit` (the command's own limit), a time-budgeted RL step starts only if its budget fits too.

    python -m benchmarks.stage_chain --state chain.json --from-run distill-0eee7bec1c --deadline 420 \\
        -c configs/mini.yaml --set seed=1 --set evaluate.split=test -- sft evaluate@sft rft evaluate@rft
    python -m benchmarks.stage_chain --state chain.json --deadline 420 -c configs/mini.yaml --set seed=1 \\
        --set evaluate.split=test -- warmup_rl evaluate@warmup_rl leap_rl evaluate
    python -m benchmarks.learning_curve --runs chain.json -c configs/mini.yaml --set evaluate.split=test

`evaluate@<stage>` evaluates that stage's policy (the pipeline's `evaluate.after`); `evaluate` alone is the
final one, of `leap_rl`. An RL step that a command's limit cut short (its run failed, with a checkpoint of the
same config on the same upstream run) is resumed from its last checkpoint, its time budget counting what it
already trained, rather than started again.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from schemas.config import STAGES, UPSTREAM, ConfigError, load_config


def step_parts(step: str) -> tuple[str, str | None]:
    """(stage to run, state key of the run it reads from) of a step."""
    stage, _, evaluated = step.partition("@")
    if stage not in STAGES or (evaluated and (stage != "evaluate" or evaluated not in STAGES)):
        raise ConfigError(f"unknown step {step!r}: a stage ({', '.join(STAGES)}) or evaluate@<stage>")
    if stage == "evaluate":
        return stage, evaluated or "leap_rl"
    return stage, UPSTREAM.get(stage)


def interrupted_run(warehouse, config, stage: str, upstream_run: str) -> str | None:
    """The latest run of a resumable stage that failed on `upstream_run` under the config this chain gives it,
    with a step checkpoint to go on from (its command was stopped mid-stage), or None."""
    from flows.stages import RESUMABLE
    from schemas.config import config_hash
    from schemas.records import StageStatus

    if stage not in RESUMABLE:
        return None
    warehouse.fail_vanished_runs()  # a SIGKILLed command's run is failed, not running
    wanted = config_hash(config.stage_config(stage))
    runs = [r for r in warehouse.stage_runs(stage) if r.parent_ids == [upstream_run] and r.config_hash == wanted]
    latest = max(runs, key=lambda r: r.started, default=None)
    if latest is None or latest.status != StageStatus.failed or warehouse.latest_checkpoint(latest.id) is None:
        return None
    return latest.id


RL_START_AND_SAVE_S = 60.0  # an RL stage's seconds beside its time budget: policy load, last step, checkpoint


def run_chain(steps: list[str], state_path: Path, config_path: str | None, overrides: list[str],
              deadline_s: float, from_run: str | None = None, limit_s: float = float("inf")) -> dict[str, str]:
    from flows.pipeline import stages_done
    from flows.stages import stage
    from tasks.common import Home
    from warehouse.store import Warehouse

    for step in steps:
        step_parts(step)  # every step named right before any runs
    started = time.perf_counter()
    state: dict[str, str] = json.loads(state_path.read_text()) if state_path.exists() else {}
    config = load_config(config_path, overrides)
    warehouse = Warehouse(Home.of(config).warehouse_path)
    if from_run:
        state = {**stages_done(warehouse, from_run), **state}
        state_path.write_text(json.dumps(state, indent=1))
    for step in steps:
        if step in state:
            continue
        used = time.perf_counter() - started
        if used > deadline_s:
            print(f"[stage_chain] {used:.0f} s used, past the deadline ({deadline_s:g} s): {step} and after wait "
                  "for the next invocation", flush=True)
            break
        name, upstream = step_parts(step)
        if upstream is not None and upstream not in state:
            raise ConfigError(f"step {step!r} reads from a {upstream} run and the state has none: run that step "
                              "first or give --from-run")
        # a time-budgeted RL stage knows how long it takes: start it only if the command's limit lets it finish
        budget = getattr(getattr(config, name), "time_budget_s", 0.0) if name in ("warmup_rl", "leap_rl") else 0.0
        if budget and used + budget + RL_START_AND_SAVE_S > limit_s:
            print(f"[stage_chain] {used:.0f} s used: {step} needs ~{budget + RL_START_AND_SAVE_S:.0f} s, past the "
                  f"command's limit ({limit_s:g} s): it and after wait for the next invocation", flush=True)
            break
        step_started = time.perf_counter()
        resume = interrupted_run(warehouse, config, name, state[upstream]) if upstream else None
        if resume:
            print(f"[stage_chain] {step}: resuming {resume}, cut short by an earlier command", flush=True)
            state[step] = stage(name=name, config_path=config_path, overrides=overrides, resume=resume)
        else:
            state[step] = stage(name=name, from_run=state.get(upstream) if upstream else None,
                                config_path=config_path, overrides=overrides)
        state_path.write_text(json.dumps(state, indent=1))
        print(f"[stage_chain] {step}: {state[step]} in {time.perf_counter() - step_started:.0f} s", flush=True)
    return state


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state", required=True, type=Path, help="JSON {step: stage run id}, read and updated")
    parser.add_argument("--from-run", default=None, help="fill the state with this run and its lineage first")
    parser.add_argument("--deadline", type=float, default=float("inf"), help="start no step after this many s")
    parser.add_argument("--limit", type=float, default=float("inf"), help="the command's own limit (s): a "
                        "time-budgeted RL step starts only if its budget and ~60 s more fit before it")
    parser.add_argument("--config", "-c", default=None)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("steps", nargs="+", help="stages, evaluate@<stage>, or evaluate")
    args = parser.parse_args(argv)
    from flows.script import run_in_order

    try:
        state = run_in_order(lambda: run_chain(args.steps, args.state, args.config, args.set, args.deadline,
                                               args.from_run, args.limit))
    except ConfigError as exc:
        sys.exit(f"error: {exc}")
    print(json.dumps(state), flush=True)


if __name__ == "__main__":
    main()
