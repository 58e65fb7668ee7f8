"""What Difficulty-Conditioned Pruning saves: the same recorded rollouts replayed through Full and DCP.

A `leap_rl` run with no pruning (`preset: full`) expands every group, so its trajectories hold every
turn either policy would have run. Replaying its recorded first turns through the DCP gate (LEAP
Eq. 1-2) gives the turns DCP would have kept; both are costed with the recorded verifier seconds
and generated tokens (generation seconds from the run's own seconds-per-token).

    python benchmarks/dcp_savings.py --home .kerneldojo --run leap_rl-1a2b3c4d5e
    python benchmarks/dcp_savings.py            # runs a small Full leap_rl itself (a few minutes)
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import defaultdict
from pathlib import Path

import torch

from training.core_algos import dcp_gate


def replay(rows: list[dict], tau_min: int, tau_max: int, gen_seconds_per_token: float) -> dict[int, dict]:
    """Per step: (calls, tokens, seconds) under Full and under DCP, from one Full run's trajectories."""
    groups: dict[tuple[int, str], list[dict]] = defaultdict(list)
    for row in rows:
        groups[(row["step"], row["group_id"])].append(row)
    per_step: dict[int, dict] = defaultdict(lambda: {"full": [0, 0, 0.0], "dcp": [0, 0, 0.0], "groups": 0, "kept": 0})
    for (step, _), members in groups.items():
        turns = [json.loads(r["turns"]) for r in sorted(members, key=lambda r: r["rollout_index"])]
        failed_first = torch.tensor([[t[0]["verdict"]["category"] != "pass" for t in turns]])
        kept = bool(dcp_gate(failed_first, tau_min, tau_max)[0])
        entry = per_step[step]
        entry["groups"] += 1
        entry["kept"] += kept
        for trajectory in turns:
            for index, turn in enumerate(trajectory):
                cost = [1, turn["generated_tokens"],
                        turn["verdict"]["compile_seconds"] + turn["verdict"]["run_seconds"]
                        + turn["generated_tokens"] * gen_seconds_per_token]
                for policy in ("full", "dcp") if (index == 0 or kept) else ("full",):
                    entry[policy] = [a + b for a, b in zip(entry[policy], cost)]
    return dict(sorted(per_step.items()))


def _run_full_leap(home: Path) -> str:
    from flows.pipeline import pipeline
    from flows.stages import stage

    overrides = [f"home={home}", "synthesize.num_problems=10", "leap_rl.steps=1", "evaluate.max_turns=1"]
    runs = pipeline(overrides=overrides)
    return stage(name="leap_rl", from_run=runs["warmup_rl"],
                 overrides=[*overrides, "leap_rl.preset=full", "leap_rl.steps=3", "leap_rl.bdr.enabled=false"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", default=None, help="kerneldojo home holding the run (default: a fresh one)")
    parser.add_argument("--run", default=None, help="a leap_rl run with gate=all (preset full)")
    parser.add_argument("--tau-min", type=int, default=None)
    parser.add_argument("--tau-max", type=int, default=None)
    args = parser.parse_args()

    from mlflow.tracking import MlflowClient

    from warehouse.store import Warehouse
    from warehouse.tracking import default_tracking_uri

    home = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="kd-dcp-"))
    run_id = args.run or _run_full_leap(home)
    wh = Warehouse(home / "warehouse.duckdb")
    run = wh.stage_run(run_id)
    cfg = run.config["leap_rl"]
    if cfg["gate"] != "all":
        raise SystemExit(f"{run_id} pruned with gate={cfg['gate']!r}: replay needs a run that expanded every group")
    tau_min = args.tau_min if args.tau_min is not None else cfg["tau_min"]
    tau_max = args.tau_max if args.tau_max is not None else cfg["tau_max"]
    client = MlflowClient(default_tracking_uri(home))
    gen_s = sum(m.value for m in client.get_metric_history(run.mlflow_run_id, "time/generate"))
    tokens = sum(m.value for m in client.get_metric_history(run.mlflow_run_id, "generated_tokens"))
    per_token = gen_s / tokens if tokens else 0.0

    steps = replay(wh.trajectory_rows(run_id), tau_min, tau_max, per_token)
    print(f"dcp_savings: run={run_id} group_size={cfg['group_size']} max_turns={cfg['max_turns']} "
          f"tau=[{tau_min}, {tau_max}] generation {1000 * per_token:.2f} ms/token")
    print(f"{'step':>5}{'groups kept':>13}{'calls full':>12}{'calls dcp':>11}{'tokens full':>13}{'tokens dcp':>12}"
          f"{'s full':>9}{'s dcp':>8}{'time ratio':>12}")
    totals = {"full": [0, 0, 0.0], "dcp": [0, 0, 0.0]}
    for step, e in steps.items():
        for policy in totals:
            totals[policy] = [a + b for a, b in zip(totals[policy], e[policy])]
        ratio = e["full"][2] / e["dcp"][2] if e["dcp"][2] else float("nan")
        print(f"{step:>5}{e['kept']:>7}/{e['groups']:<5}{e['full'][0]:>12}{e['dcp'][0]:>11}{e['full'][1]:>13}"
              f"{e['dcp'][1]:>12}{e['full'][2]:>9.1f}{e['dcp'][2]:>8.1f}{ratio:>11.2f}x")
    f, d = totals["full"], totals["dcp"]
    print(f"{'all':>5}{'':>13}{f[0]:>12}{d[0]:>11}{f[1]:>13}{d[1]:>12}{f[2]:>9.1f}{d[2]:>8.1f}"
          f"{(f[2] / d[2] if d[2] else float('nan')):>11.2f}x")
    print(f"ratios Full/DCP: verifier calls {f[0] / max(d[0], 1):.2f}x, generated tokens {f[1] / max(d[1], 1):.2f}x, "
          f"time {(f[2] / d[2] if d[2] else float('nan')):.2f}x")


if __name__ == "__main__":
    main()
