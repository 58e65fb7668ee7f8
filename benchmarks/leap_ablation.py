"""LEAP against its baselines, in miniature (issue 12, LEAP Fig. 1 and Table 2 kinds).

From one warmup_rl checkpoint and the same problems, runs `leap_rl` once per method and seed for the same
wall-clock budget (`leap_rl.time_budget_s`), evaluates each result on the held-out split, and prints, per method,
first-turn accuracy and accuracy by turn 3 (mean ± std over seeds) against the wall time and verifier calls the
training spent, then each method's change against the warmup policy itself (the `before` row: the same
evaluation of the checkpoint every arm starts from, once a seed, so the table says whether a method moved the
policy at all) and against LEAP, paired by seed and problem (its standard error says which differences are
noise). Every run is a stage run with lineage (leap_rl from the warmup run, evaluate nested under it in
MLflow); the comparison itself is one more MLflow run, `leap_ablation`, holding the table and two plots (training
first-turn pass rate against wall seconds and against verifier calls, one line per method and seed).

    python -m benchmarks.leap_ablation --config configs/mini.yaml --from-run warmup_rl-1a2b3c4d5e --seconds 300
    python -m benchmarks.leap_ablation --seconds 20 --seeds 0 --set synthesize.num_problems=8   # CPU smoke run

Without `--from-run`, the home's latest succeeded warmup_rl run is used, and when there is none the stages up to
warmup_rl run first. With `--state`, the ablation spans commands that may each run only minutes (a lent GPU box, a
CI job): the file holds each finished training and evaluation, the next command skips them, and `--deadline` /
`--limit` keep a command from starting what it cannot finish (a training starts only if its budget and the
longest evaluation so far fit the limit); the table and the comparison run come when every method and seed is done.

    python -m benchmarks.leap_ablation --config configs/mini.yaml --from-run warmup_rl-1a2b3c4d5e --seconds 120 \
        --seeds 0 --state ablation.json --deadline 300 --limit 540     # again, until it prints the table
    python -m benchmarks.leap_ablation ... --state ablation.json --report     # the table so far; nothing runs

Each arm's training judges its rollouts with a verifier cache of its own, empty when it starts (the arms of a seed
sample the same first kernels: with one cache, a later arm bought steps with an earlier arm's verdicts), and each
seed trains the methods in an order rotated by one, so no method is always the first on a fresh machine.

LEAP's claims to test: at equal wall time, LEAP's first-turn accuracy >= GRPO-MT's, and DCP spends fewer verifier
calls than Full. The table says what the miniature says, whichever way it goes.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

from schemas.config import LEAP_PRESETS, ConfigError, load_config
from warehouse.tracking import flatten

UP_TO_WARMUP = ["synthesize", "hints", "distill", "sft", "rft", "warmup_rl"]


def warmup_run(config, config_path: str | None, sets: list[str], given: str | None) -> str:
    """The warmup_rl run every method starts from: the one given, the home's latest, or a fresh one."""
    from flows.stages import stage
    from tasks.common import Home
    from warehouse.store import Warehouse

    warehouse = Warehouse(Home.of(config).warehouse_path)
    if given:
        return warehouse.succeeded_run(given, "warmup_rl").id
    latest = warehouse.latest_run("warmup_rl")
    if latest is not None:
        return latest.id
    run = None
    for name in UP_TO_WARMUP:
        run = stage(name=name, from_run=run, config_path=config_path, overrides=sets)
    return run


# The state's mark that its arms trained with verifier caches of their own (below); a state without it is from
# before, when a later arm reused an earlier one's verdicts and builds of the same rollouts
ARM_CACHES = "per arm"
# The pseudo-method whose only step is the evaluation of the warmup policy itself, with each seed's settings
BEFORE = "before"


def method_overrides(sets: list[str], method: str, seed: int, seconds: float, max_steps: int) -> list[str]:
    """The arm's config: its preset's keys given explicitly, after the config's own. A key given explicitly wins
    over a preset (a user may tune one), so a config written for LEAP (`leap_rl.max_turns: 3`) made the GRPO arm
    multi-turn: GRPO ran as LEAP with scalar rewards (2026-12-06, both miniatures)."""
    return [*sets, f"seed={seed}", f"leap_rl.preset={method}",
            *(f"leap_rl.{key}={value}" for key, value in flatten(LEAP_PRESETS[method]).items()),
            f"leap_rl.time_budget_s={seconds}", f"leap_rl.steps={max_steps}"]


def settings_unlike_preset(recorded: dict, method: str) -> dict[str, tuple[str, str]]:
    """The preset keys where a leap_rl run's recorded settings (`config["leap_rl"]`) differ from `method`'s preset
    as it stands, {key: (recorded, preset)}: such an arm trained another method (MURPHY's reward read the speed,
    and its pool timed passes, until 2026-12-06)."""
    from schemas.config import LeapRLConfig

    trained = {**flatten(LeapRLConfig().model_dump()), **flatten(recorded)}  # keys a run predates: their defaults
    return {key: (trained.get(key), value) for key, value in flatten(LEAP_PRESETS[method]).items()
            if trained.get(key) != value}


def arms_unlike_their_presets(warehouse, state: dict) -> dict[str, dict[str, tuple[str, str]]]:
    """{"method@seed": its settings unlike the preset's} for the state's trained arms that trained another method."""
    unlike = {}
    for key, done in state["runs"].items():
        method = key.split("@")[0]
        if "leap_rl" in done and method in LEAP_PRESETS:
            recorded = warehouse.stage_run(done["leap_rl"]).config.get("leap_rl", {})
            if settings := settings_unlike_preset(recorded, method):
                unlike[key] = settings
    return unlike


def arm_verifier_cache(config, method: str, seed: int) -> Path:
    """The verifier cache an arm's training judges with, made empty before it trains and removed after: every
    arm pays for judging its own rollouts. The arms of a seed start from one policy with one seed, so their first
    steps sample the same kernels; with the home's cache the second arm took ~56 % of its verdicts (and every
    build) from the first's and, at equal wall time, bought more steps with them (H100, 2026-12-06: GRPO judged 92
    of its 208 verdicts after LEAP, whose first step took 59 s to GRPO's 11 s)."""
    from tasks.common import Home

    home_cache = Path(config.verifier.cache_dir or Home.of(config).cache / "verifier")
    return home_cache.parent / "verifier-arms" / f"{method}@{seed}"


def method_order(methods: list[str], position: int) -> list[str]:
    """The methods in the order seed number `position` (0, 1, ...) trains them: rotated by one a seed, so no method
    is always the first on a fresh machine (whose first training pays the process's and the GPU's warm-up)."""
    shift = position % len(methods)
    return methods[shift:] + methods[:shift]


def planned_arms(methods: list[str], seeds: list[int], evaluate_before: bool) -> list[tuple[str, int]]:
    """(method, seed) in the order they run: each seed's `before` first, then its methods in their rotated order."""
    return [(method, seed) for position, seed in enumerate(seeds)
            for method in [BEFORE] * evaluate_before + method_order(methods, position)]


def reported_arms(config, state_path: Path, methods: list[str], seeds: list[int],
                  evaluate_before: bool) -> tuple[str, list[dict]]:
    """(the warmup run, the finished arms) of a state, read only: nothing runs and the state is not written, so a
    machine without the arms' policies may read it. An arm trained under its preset's older settings is left out,
    as the next command would train it again."""
    from tasks.common import Home
    from warehouse.store import Warehouse

    if not state_path.exists():
        raise ConfigError(f"--report reads the ablation's --state, and {state_path} does not exist")
    state = json.loads(state_path.read_text())
    for key in arms_unlike_their_presets(Warehouse(Home.of(config).warehouse_path), state):
        print(f"[leap_ablation] {key}: trained under the {key.split('@')[0]} preset's older settings: not counted (the "
              "next command trains it again)")
        state["runs"][key].pop("evaluate", None)
    return state["warmup"], _finished(state, planned_arms(methods, seeds, evaluate_before))


def run_methods(config, config_path: str | None, sets: list[str], warmup_given: str | None, methods: list[str],
                seeds: list[int], seconds: float, max_steps: int, state_path: Path | None = None,
                deadline_s: float = float("inf"), limit_s: float = float("inf"),
                evaluate_before: bool = True) -> tuple[str, list[dict], bool]:
    """(the warmup run, one result per finished method and seed, whether all are finished). `config`: the one
    `config_path` and `sets` make. Each is a leap_rl run
    from the warmup run, then its evaluation; with `evaluate_before`, each seed starts with the evaluation of the
    warmup run itself (method `BEFORE`, no training). With `state_path` ({"warmup": id, "runs": {"method@seed":
    {"leap_rl": id, "evaluate": id}}}) finished steps are skipped and each new one is recorded as it ends; no
    step starts after `deadline_s`, nor a training whose budget and evaluation cannot end before `limit_s`."""
    from benchmarks.stage_chain import RL_START_AND_SAVE_S, has_policy
    from flows.stages import stage
    from tasks.common import Home
    from warehouse.store import Warehouse

    started = time.perf_counter()
    state = json.loads(state_path.read_text()) if state_path is not None and state_path.exists() else {}
    if state.get("warmup") and warmup_given and state["warmup"] != warmup_given:
        raise ConfigError(f"{state_path} holds an ablation from {state['warmup']}, not {warmup_given}: give "
                          "another --state")
    if state.get("runs") and state.get("verifier_cache") != ARM_CACHES:
        raise ConfigError(f"{state_path} holds arms trained with one verifier cache between them (a later arm "
                          "reused an earlier one's verdicts of the same rollouts, and bought steps with them): give "
                          "another --state, or keep only arms that judged their own rollouts and add "
                          f'"verifier_cache": "{ARM_CACHES}" to it')
    warmup = state.get("warmup") or warmup_run(config, config_path, sets, warmup_given)
    state = {"warmup": warmup, "verifier_cache": ARM_CACHES, "runs": state.get("runs", {})}

    def save() -> None:
        if state_path is not None:
            state_path.write_text(json.dumps(state, indent=1))

    warehouse = Warehouse(Home.of(config).warehouse_path)
    # a training whose evaluation has not run and whose policy this machine no longer has (a lent box taken back
    # between the two keeps the records that came home, not the policy) is trained again, not evaluated; so is
    # one whose method's preset has changed since it trained, and its evaluation no longer counts
    for key, done in state["runs"].items():
        if "evaluate" not in done and "leap_rl" in done and not has_policy(warehouse, done["leap_rl"]):
            print(f"[leap_ablation] {key}: the policy of {done.pop('leap_rl')} is not on this machine: trained "
                  "again", flush=True)
    for key, unlike in arms_unlike_their_presets(warehouse, state).items():
        done = state["runs"][key]
        print(f"[leap_ablation] {key}: {done.pop('leap_rl')} trained with settings unlike the {key.split('@')[0]} "
              f"preset's now ({', '.join(f'{k} {a} not {b}' for k, (a, b) in unlike.items())}): trained again",
              flush=True)
        done.pop("evaluate", None)
    save()
    pairs = planned_arms(methods, seeds, evaluate_before)
    for method, seed in pairs:
        done = state["runs"].get(f"{method}@{seed}", {})
        if method == BEFORE:
            overrides, steps = [*sets, f"seed={seed}"], ("evaluate",)
        else:
            overrides, steps = method_overrides(sets, method, seed, seconds, max_steps), ("leap_rl", "evaluate")
            arm_cache = arm_verifier_cache(config, method, seed)
        for step in steps:
            if step in done:
                continue
            used = time.perf_counter() - started
            # a training starts only if its evaluation can follow it within the limit: a lent box taken back
            # between the two keeps the records, not the trained policy, and the next command trains it again
            budget = (seconds + RL_START_AND_SAVE_S + longest_evaluation_s(warehouse, state)
                      if step == "leap_rl" else 0.0)
            if used > deadline_s or used + budget > limit_s:
                print(f"[leap_ablation] {used:.0f} s used: {method} (seed {seed}) {step} and after wait for the "
                      "next invocation", flush=True)
                save()
                return warmup, _finished(state, pairs), False
            upstream = done.get("leap_rl", warmup) if step == "evaluate" else warmup  # BEFORE evaluates the warmup
            if upstream == warmup and not has_policy(warehouse, warmup):
                raise ConfigError(f"the policy of {warmup}, which every method starts from, is not on this machine:"
                                  " unpack its parcel into the home (python -m benchmarks.policy_parcel unpack) or "
                                  "train it again")
            if step == "leap_rl":  # judged cold, with a cache of its own (the evaluation: the home's, untimed)
                shutil.rmtree(arm_cache, ignore_errors=True)
                try:
                    done[step] = stage(name=step, from_run=upstream, config_path=config_path,
                                       overrides=[*overrides, f"verifier.cache_dir={arm_cache}"])
                finally:
                    shutil.rmtree(arm_cache, ignore_errors=True)
            else:
                done[step] = stage(name=step, from_run=upstream, config_path=config_path, overrides=overrides)
            state["runs"][f"{method}@{seed}"] = done
            save()
            print(f"[leap_ablation] {method} (seed {seed}) {step}: {done[step]}", flush=True)
    return warmup, _finished(state, pairs), True


def longest_evaluation_s(warehouse, state: dict) -> float:
    """The longest evaluation this ablation has run so far, in wall seconds (0.0 before its first)."""
    runs = [warehouse.stage_run(done["evaluate"]) for done in state["runs"].values() if "evaluate" in done]
    return max(((run.finished - run.started).total_seconds() for run in runs if run.finished), default=0.0)


def _finished(state: dict, pairs: list[tuple[str, int]]) -> list[dict]:
    return [{"method": method, "seed": seed, **state["runs"][f"{method}@{seed}"]} for method, seed in pairs
            if "evaluate" in state["runs"].get(f"{method}@{seed}", {})]


def step_curves(client, mlflow_run_id: str) -> list[dict[str, float]]:
    """Per training step: wall seconds, cumulative verifier calls, first-turn pass rate (from MLflow's history)."""
    history = {key: {m.step: m.value for m in client.get_metric_history(mlflow_run_id, key)}
               for key in ("elapsed_seconds", "verifier_calls", "pass_rate/turn_1")}
    rows, calls = [], 0.0
    for step in sorted(history["elapsed_seconds"]):
        calls += history["verifier_calls"].get(step, 0.0)
        rows.append({"step": step, "wall_seconds": history["elapsed_seconds"][step], "verifier_calls": calls,
                     "pass_rate_turn_1": history["pass_rate/turn_1"].get(step, float("nan"))})
    return rows


def _mean_std(values: list[float], digits: int = 3) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def ablation_table(results: list[dict], turn: int) -> str:
    """Markdown: one row per method, mean ± std over seeds."""
    from warehouse.reports import harnesses

    lines = [f"| method | held-out accuracy, turn 1 | accuracy by turn {turn} | train steps | train wall s | "
             "verifier calls | seeds | harness |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for method in dict.fromkeys(r["method"] for r in results):
        rows = [r for r in results if r["method"] == method]
        pick = lambda key: [float(r[key]) for r in rows if r.get(key) is not None]  # noqa: E731
        lines.append(f"| {method} | {_mean_std(pick('accuracy/turn_1'))} | {_mean_std(pick(f'accuracy/turn_{turn}'))} "
                     f"| {_mean_std(pick('steps'), 1)} | {_mean_std(pick('train_seconds'), 1)} "
                     f"| {_mean_std(pick('verifier_calls'), 0)} | {len(rows)} | {harnesses(rows)} |")
    return "\n".join(lines)


def log_comparison(config, results: list[dict], table: str, command: str) -> str:
    """One MLflow run holding the table, the per-run numbers and the two curves; its run id."""
    from tasks.common import Home
    from tasks.plots import close, line_chart
    from warehouse.tracking import Tracker

    tracker = Tracker(Home.of(config).root)
    run = tracker.start_run("leap_ablation", params={"methods": ",".join(dict.fromkeys(r["method"] for r in results)),
                                                      "seeds": len({r["seed"] for r in results}),
                                                      "time_budget_s": results[0]["time_budget_s"]},
                            tags={"kerneldojo.benchmark": "leap_ablation"})
    for x_key, label in (("wall_seconds", "training wall seconds"), ("verifier_calls", "verifier calls (cumulative)")):
        series = {f"{r['method']} (seed {r['seed']})": [(s[x_key], s["pass_rate_turn_1"]) for s in r["curve"]]
                  for r in results if r["curve"]}
        fig = line_chart(series, f"first-turn pass rate (training) against {label}", label, "pass rate")
        run.log_figure(fig, f"ablation_pass_rate_vs_{x_key}.png")
        close(fig)
    for method in dict.fromkeys(r["method"] for r in results):
        rows = [r for r in results if r["method"] == method]
        for key in ("accuracy/turn_1", "accuracy/turn_3", "verifier_calls", "train_seconds"):
            values = [float(r[key]) for r in rows if r.get(key) is not None]
            if values:
                run.log_metrics({f"{method}/{key}": statistics.mean(values)})
    run.log_text(f"```\n{command}\n```\n\n{table}\n", "leap_ablation.md")
    run.log_json(results, "leap_ablation.json")
    run.finish(True)
    return run.run_id


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", "-c", default=None, help="a pipeline config (default: the embedded tiny one)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override")
    parser.add_argument("--from-run", default=None, help="the warmup_rl run every method starts from")
    parser.add_argument("--methods", nargs="+", default=list(LEAP_PRESETS), choices=list(LEAP_PRESETS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--seconds", type=float, default=None, help="training wall-clock budget per method and seed "
                        "(required but with --report)")
    parser.add_argument("--max-steps", type=int, default=10_000, help="a step cap besides the time budget")
    parser.add_argument("--markdown", default=None, help="also write the table (and the command) to this file")
    parser.add_argument("--json", default=None, help="also write every run's numbers and curve to this file")
    parser.add_argument("--state", type=Path, default=None, help="JSON of the finished runs, read and updated: "
                        "the ablation goes on over several commands")
    parser.add_argument("--deadline", type=float, default=float("inf"), help="start no run after this many s")
    parser.add_argument("--limit", type=float, default=float("inf"), help="the command's own limit (s): a "
                        "training starts only if its budget, ~60 s more and the longest evaluation so far fit "
                        "before it")
    parser.add_argument("--no-before", dest="before", action="store_false", help="do not evaluate the warmup "
                        "policy itself (the `before` row, one evaluation a seed)")
    parser.add_argument("--report", action="store_true", help="print the table of what --state holds and change "
                        "nothing: no run starts, the state is not written, no MLflow run is made")
    args = parser.parse_args(argv)
    if args.seconds is None and not args.report:
        parser.error("--seconds is required: the training wall-clock budget per method and seed")
    if args.seconds is not None and args.seconds <= 0:
        parser.error("--seconds must be positive")
    if args.report and args.state is None:
        parser.error("--report reads the ablation's --state")
    if args.state is None and (args.deadline != float("inf") or args.limit != float("inf")):
        parser.error("--deadline and --limit stop an ablation part way: give --state, where the next command "
                     "finds what is done")

    from mlflow.tracking import MlflowClient

    from tasks.common import Home
    from warehouse.reports import paired_change_table, problem_outcomes
    from warehouse.store import Warehouse
    from warehouse.tracking import default_tracking_uri

    config = load_config(args.config, args.set)
    from flows.script import run_in_order

    try:
        if args.report:
            warmup, results = reported_arms(config, args.state, args.methods, args.seeds, args.before)
            complete = False
        else:
            warmup, results, complete = run_in_order(lambda: run_methods(
                config, args.config, args.set, args.from_run, args.methods, args.seeds, args.seconds, args.max_steps,
                args.state, args.deadline, args.limit, args.before))
    except ConfigError as exc:
        sys.exit(f"error: {exc}")
    for r in results:
        r["time_budget_s"] = args.seconds
    warehouse = Warehouse(Home.of(config).warehouse_path)
    client = MlflowClient(default_tracking_uri(Home.of(config).root))
    for r in results:
        r.update({k: v for k, v in warehouse.summary(r["evaluate"]).items()
                  if k.startswith("accuracy/") or k == "harness"})  # the verifier that judged the evaluation
        r["curve"] = []
        if "leap_rl" not in r:  # the warmup policy's own evaluation: nothing trained
            continue
        trained = warehouse.stage_run(r["leap_rl"])
        r.update({k: v for k, v in warehouse.summary(r["leap_rl"]).items()
                  if k in ("steps", "train_seconds", "verifier_calls", "activated_groups_pct")})
        if trained.mlflow_run_id:
            r["curve"] = step_curves(client, trained.mlflow_run_id)
    turn = min(3, config.evaluate.max_turns)
    table = ablation_table(results, turn)
    # paired by seed and problem: every method against the policy it started from, then against LEAP
    compared = [(BEFORE, m) for m in args.methods] * args.before
    compared += [("leap", m) for m in args.methods if m != "leap"] * ("leap" in args.methods)
    if compared:
        outcomes: dict[int, dict[str, dict]] = {}
        for r in results:
            outcomes.setdefault(r["seed"], {})[r["method"]] = problem_outcomes(warehouse, r["evaluate"], turn)
        table += "\n\n" + paired_change_table(list(outcomes.values()), compared, turn)
    command = "python -m benchmarks.leap_ablation " + " ".join(argv if argv is not None else sys.argv[1:])
    markdown = f"```\n{command}\n```\n\nfrom warmup_rl run {warmup}\n\n{table}\n"
    if not complete:
        planned = (len(args.methods) + args.before) * len(args.seeds)
        print(f"{len(results)} of {planned} methods and seeds done (`{BEFORE}`: the warmup's own evaluation); "
              + ("the state is as it was" if args.report else f"the same command goes on from {args.state}") + "\n")
        print(table)
        if args.report and args.markdown:
            Path(args.markdown).write_text(markdown)
        return
    mlflow_run = log_comparison(config, results, table, command)
    print(f"from warmup_rl run {warmup}; {args.seconds:g} s of training per method and seed\n")
    print(table)
    print(f"\nMLflow run {mlflow_run} (leap_ablation) holds the table and the curves")
    if args.markdown:
        Path(args.markdown).write_text(markdown)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
