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

With `--beside`, evaluations run in processes of their own beside the training stages after them (an evaluation
waits on the verifier, the CPUs, while the next stage trains on the GPU): a seed of `configs/mini.yaml` takes one
device session instead of more. A step run beside that a later step reads from is waited for first; the command
waits for all of them before it ends, and one cut short runs again next time. A timed stage's timings still take
the GPU alone: the evaluation's trials and generation wait for them (verifier/device_lock.py).
"""

from __future__ import annotations

import argparse
import json
import subprocess
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


POLICY_STAGES = ("sft", "rft", "warmup_rl", "leap_rl")


def forget_lost_policies(steps: list[str], state: dict[str, str], warehouse) -> list[str]:
    """Steps whose policy a step still to run reads and which this machine no longer has (a lent box taken back
    keeps the records that came home but not the 100 MB policies): each leaves the state with every step after it,
    so the chain makes it again instead of failing on a missing folder. Returns the steps forgotten."""
    forgotten: list[str] = []
    while True:
        needed = [step_parts(s)[1] for s in steps if s not in state]
        lost = next((u for u in steps if u in needed and u in state and u in POLICY_STAGES
                     and not has_policy(warehouse, state[u])), None)
        if lost is None:
            return sorted(forgotten, key=steps.index)
        for step in steps[steps.index(lost):]:
            if state.pop(step, None) is not None:
                forgotten.append(step)


def has_policy(warehouse, run_id: str) -> bool:
    """Whether the policy run `run_id` recorded is on this machine."""
    from warehouse.store import WarehouseError

    try:
        return warehouse.checkpoint(run_id).exists()
    except WarehouseError:  # the run recorded no policy at all
        return False


RL_START_AND_SAVE_S = 60.0  # an RL stage's seconds beside its time budget: policy load, last step, checkpoint


def write_state(path: Path, state: dict[str, str]) -> None:
    path.write_text(json.dumps(state, indent=1))


class Beside:
    """Steps running in processes of their own (`python -m benchmarks.stage_chain` on a state of one step's
    upstream run), whose results join the chain's state when they end."""

    def __init__(self, state_path: Path, config_path: str | None, overrides: list[str]):
        self.state_path, self.config_path, self.overrides = state_path, config_path, overrides
        self.running: dict[str, subprocess.Popen] = {}

    def side_state(self, step: str) -> Path:
        return self.state_path.with_name(f"{self.state_path.stem}.{step.replace('@', '-at-')}.json")

    def finished(self, step: str, state: dict[str, str]) -> str | None:
        """The run of a step run beside (by this command or an earlier one), if it finished on the run `state`
        holds for its upstream step."""
        path = self.side_state(step)
        side = json.loads(path.read_text()) if path.exists() else {}
        upstream = step_parts(step)[1]
        return side.get(step) if upstream is None or side.get(upstream) == state.get(upstream) else None

    def start(self, step: str, upstream: str | None, state: dict[str, str]) -> None:
        path = self.side_state(step)
        write_state(path, {upstream: state[upstream]} if upstream else {})
        command = [sys.executable, "-m", "benchmarks.stage_chain", "--state", str(path),
                   *(["--config", self.config_path] if self.config_path else []),
                   *(arg for o in self.overrides for arg in ("--set", o)), "--", step]
        print(f"[stage_chain] {step}: started beside the chain (pid {(proc := subprocess.Popen(command)).pid})",
              flush=True)
        self.running[step] = proc

    def wait(self, step: str, state: dict[str, str]) -> None:
        """Wait for `step` (if running beside) and put its run into `state`."""
        proc = self.running.pop(step, None)
        if proc is None:
            return
        started = time.perf_counter()
        code = proc.wait()
        run = self.finished(step, state)
        if code == 0 and run:
            state[step] = run
            write_state(self.state_path, state)
            print(f"[stage_chain] {step} (beside): {run}, waited {time.perf_counter() - started:.0f} s", flush=True)
        else:
            print(f"[stage_chain] {step} (beside) ended with status {code}: it runs again next time", flush=True)

    def join_finished(self, state: dict[str, str]) -> None:
        for step in [s for s, proc in self.running.items() if proc.poll() is not None]:
            self.wait(step, state)

    def wait_all(self, state: dict[str, str]) -> None:
        for step in list(self.running):
            self.wait(step, state)

    def stop(self) -> None:
        for proc in self.running.values():
            proc.terminate()  # under `timeout` they got the group's signal already: this is for other ends
        for proc in self.running.values():
            proc.wait()
        self.running.clear()


def run_chain(steps: list[str], state_path: Path, config_path: str | None, overrides: list[str],
              deadline_s: float, from_run: str | None = None, limit_s: float = float("inf"),
              beside: set[str] = frozenset(), over_calls: bool = False) -> dict[str, str]:
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
        write_state(state_path, state)
    if lost := forget_lost_policies(steps, state, warehouse):
        print(f"[stage_chain] the policies of {lost[0]} are not on this machine: {', '.join(lost)} run again",
              flush=True)
        write_state(state_path, state)
    side = Beside(state_path, config_path, overrides)
    for step in beside:  # run beside by an earlier command that ended before its results joined the state
        if step not in state and (run := side.finished(step, state)):
            state[step] = run
            write_state(state_path, state)
    try:
        for step in steps:
            if step in state:
                continue
            name, upstream = step_parts(step)
            if upstream in side.running:
                side.wait(upstream, state)
            used = time.perf_counter() - started
            if used > deadline_s:
                print(f"[stage_chain] {used:.0f} s used, past the deadline ({deadline_s:g} s): {step} and after "
                      "wait for the next invocation", flush=True)
                break
            if upstream is not None and upstream not in state:
                raise ConfigError(f"step {step!r} reads from a {upstream} run and the state has none: run that "
                                  "step first or give --from-run")
            if step in beside:
                side.start(step, upstream, state)
                continue
            # a time-budgeted RL stage knows how long it takes: start it only if the command's limit lets it finish
            budget = getattr(getattr(config, name), "time_budget_s", 0.0) if name in ("warmup_rl", "leap_rl") else 0.0
            if budget and used + budget + RL_START_AND_SAVE_S > limit_s:
                if not over_calls:
                    print(f"[stage_chain] {used:.0f} s used: {step} needs ~{budget + RL_START_AND_SAVE_S:.0f} s, past "
                          f"the command's limit ({limit_s:g} s): it and after wait for the next invocation", flush=True)
                    break
                print(f"[stage_chain] {step} needs ~{budget + RL_START_AND_SAVE_S:.0f} s, past the command's limit: it "
                      "starts anyway (--over-calls), the limit cuts it, the next command resumes it", flush=True)
            step_started = time.perf_counter()
            resume = interrupted_run(warehouse, config, name, state[upstream]) if upstream else None
            if resume:
                print(f"[stage_chain] {step}: resuming {resume}, cut short by an earlier command", flush=True)
                state[step] = stage(name=name, config_path=config_path, overrides=overrides, resume=resume)
            else:
                state[step] = stage(name=name, from_run=state.get(upstream) if upstream else None,
                                    config_path=config_path, overrides=overrides)
            write_state(state_path, state)
            print(f"[stage_chain] {step}: {state[step]} in {time.perf_counter() - step_started:.0f} s", flush=True)
            side.join_finished(state)
        side.wait_all(state)
    finally:
        side.stop()
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
    parser.add_argument("--beside", nargs="*", default=None, metavar="STEP", help="run these steps (none named: "
                        "every evaluation) in processes of their own beside the steps after them")
    parser.add_argument("--over-calls", action="store_true", help="start a time-budgeted RL step even where its "
                        "budget passes --limit: the limit cuts it and the next command resumes it from its last "
                        "checkpoint (on a box kept warm between the commands, which keeps the checkpoints)")
    parser.add_argument("steps", nargs="+", help="stages, evaluate@<stage>, or evaluate")
    args = parser.parse_args(argv)
    beside = set() if args.beside is None else set(args.beside) or {s for s in args.steps if s.startswith("evaluate")}
    from flows.script import run_in_order

    try:
        state = run_in_order(lambda: run_chain(args.steps, args.state, args.config, args.set, args.deadline,
                                               args.from_run, args.limit, beside, args.over_calls))
    except ConfigError as exc:
        sys.exit(f"error: {exc}")
    print(json.dumps(state), flush=True)


if __name__ == "__main__":
    main()
