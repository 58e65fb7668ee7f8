"""The whole DAG end to end through Prefect, DuckDB and MLflow, then single-stage re-runs."""

import importlib.util
import json
import shutil
from collections import defaultdict
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient
from typer.testing import CliRunner

from flows.cli import app
from flows.pipeline import pipeline
from flows.stages import stage
from schemas import STAGES, load_config
from schemas.records import StageStatus
from tasks.common import Home
from training.core_algos import dcp_gate, rollout_rank, tournament_reward
from verifier.pool import HARNESS_VERSION
from warehouse.store import Warehouse, WarehouseError
from warehouse.tracking import default_tracking_uri

import torch

SMALL = ["synthesize.num_problems=8", "synthesize.test_fraction=0.25", "sft.epochs=40",
         "rft.samples_per_problem=2", "warmup_rl.steps=1", "warmup_rl.prompts_per_step=3",
         "leap_rl.steps=1", "leap_rl.prompts_per_step=3", "leap_rl.max_turns=2", "evaluate.max_turns=2",
         "evaluate.after=[sft]", "evaluate.untimed_after=[sft]"]


@pytest.fixture(scope="module")
def demo(tmp_path_factory, verifier_cache):
    home = tmp_path_factory.mktemp("home")
    overrides = [f"home={home}", f"verifier.cache_dir={verifier_cache}", *SMALL]
    runs = pipeline(overrides=overrides)
    config = load_config(None, overrides)
    return runs, config, overrides, Warehouse(Home.of(config).warehouse_path)


def test_every_stage_succeeded_with_lineage_to_synthesize(demo):
    runs, _, _, wh = demo
    assert [r for r in runs if not r.startswith("evaluate@")] == list(STAGES)
    assert wh.stage_run(runs["evaluate@sft"]).parent_ids == [runs["sft"]]  # a side branch off sft
    assert wh.stage_run(runs["rft"]).parent_ids == [runs["sft"]]
    lineage = [r.stage for r in wh.lineage(runs["evaluate"])]
    assert lineage == list(reversed(STAGES))
    assert all(r.status.value == "succeeded" for r in wh.lineage(runs["evaluate"]))


def test_every_stage_wrote_its_rows(demo):
    runs, _, _, wh = demo
    expected = {
        "synthesize": ["problems"], "hints": ["problems"], "distill": ["candidates", "verdicts", "sft_examples"],
        "sft": ["checkpoints"], "rft": ["candidates", "verdicts", "checkpoints"],
        "warmup_rl": ["candidates", "verdicts", "trajectories", "checkpoints"],
        "leap_rl": ["candidates", "verdicts", "trajectories", "checkpoints"],
        "evaluate": ["candidates", "verdicts", "eval_results"],
    }
    for stage_name, tables in expected.items():
        for table in tables:
            assert wh.count(table, runs[stage_name]) > 0, f"{stage_name} wrote no {table}"
    tasks = {e["task"] for e in wh.sft_examples(runs["distill"])}
    assert tasks == {"kernel", "reviewer", "diagnosis", "qa"}  # MusaCoder's multi-task corpora
    # where verification time went: kernels and mutants judged in one pass, its rate and phases in the summary
    profile = wh.summary(runs["distill"])["verifier"]
    assert list(profile) == ["verify_teacher_kernels_and_mutants"]
    assert profile["verify_teacher_kernels_and_mutants"]["verdicts"] == wh.count("verdicts", runs["distill"]) > 8
    assert profile["verify_teacher_kernels_and_mutants"]["per_second"] > 0
    assert "trials" in profile["verify_teacher_kernels_and_mutants"]["phase_seconds"]
    entry = profile["verify_teacher_kernels_and_mutants"]
    assert entry["judged"] == entry["verdicts"]  # a fresh home: nothing from the verdict cache
    assert entry["phase_mean_seconds"]["trials"] == pytest.approx(entry["phase_seconds"]["trials"] / entry["judged"],
                                                                  abs=0.01)
    assert {"judge", "run", "build", "reference"} <= set(entry["cpu_mean_seconds"])  # where the time was work
    assert entry["torch_builds"] == 0 and entry["torch_build_reasons"] == {}  # teacher and mutants: all fast builds
    assert wh.summary(runs["leap_rl"])["verifier"]["verify_step"]["calls"] >= 1
    hinted = wh.problems(runs["hints"])
    assert len(hinted) == 8 and all(p.hints for p in hinted)
    # cpu backend: graphs solved at GPU size, scaled down, both recorded through synthesize and hints
    assert all(p.scale > 100 and p.cuda_working_set_bytes >= 16 * 2 ** 20 and p.measures["nodes"] >= 2
               for p in hinted)
    assert len(wh.problems(runs["hints"], split="test")) == 2
    assert wh.checkpoint(runs["leap_rl"]).joinpath("config.json").exists()


def test_leap_trajectories_follow_the_equations(demo):
    runs, config, _, wh = demo
    cfg = config.leap_rl
    # the rank reward reads the turn of the first pass, not the speed: LEAP judges untimed, warmup RL timed
    assert (wh.summary(runs["leap_rl"])["timed"], wh.summary(runs["warmup_rl"])["timed"]) == (False, True)
    groups = defaultdict(list)
    for row in wh.trajectory_rows(runs["leap_rl"]):
        groups[row["group_id"]].append(row)
    assert len(groups) == cfg.prompts_per_step
    for rows in groups.values():
        rows.sort(key=lambda r: r["rollout_index"])
        assert len(rows) == cfg.group_size
        # the warehouse stores the 0-based turn of the first pass (None = never): turn 0 passed <=> value 0
        first_failed = torch.tensor([[r["passed_turn"] != 0 for r in rows]])
        gate = bool(dcp_gate(first_failed, cfg.tau_min, cfg.tau_max)[0])
        assert all(r["gated"] == gate for r in rows)
        if not gate:
            assert all(r["num_turns"] == 1 for r in rows)
        passed_turn = torch.tensor([(r["passed_turn"] + 1) if r["passed_turn"] is not None else 0 for r in rows])
        ranks = rollout_rank(passed_turn, cfg.max_turns)
        assert [r["rank"] for r in rows] == ranks.tolist()
        assert torch.allclose(torch.tensor([r["reward"] for r in rows]), tournament_reward(ranks.view(1, -1))[0])


def test_mlflow_has_one_parent_and_a_nested_run_per_stage(demo):
    runs, config, _, wh = demo
    client = MlflowClient(default_tracking_uri(Home.of(config).root))
    experiment = client.get_experiment_by_name("kerneldojo")
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"  # the runs view, not GenAI's
    all_runs = client.search_runs([experiment.experiment_id])
    parents = [r for r in all_runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in all_runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 1
    assert {r.data.tags["kerneldojo.stage"] for r in children} == set(STAGES)
    # two pipelines compare on their parent runs: stage seconds and every stage's held-out numbers
    parent_metrics = parents[0].data.metrics
    assert {"pipeline/wall_seconds", "stage_seconds/sft", "held_out/sft/accuracy/turn_1",
            "held_out/leap_rl/accuracy/turn_1", "held_out/leap_rl/fast_1/eager/turn_1"} <= set(parent_metrics)
    assert parents[0].data.params["home"] == str(Home.of(config).root)
    assert all(r.info.run_name == r.data.tags["kerneldojo.stage_run_id"] for r in children)
    assert {r.data.tags["kerneldojo.harness"] for r in children} == {HARNESS_VERSION}  # which judge's verdicts
    assert all(len(r.data.tags.get("mlflow.source.git.commit", "")) == 40 for r in all_runs)
    by_id = {r.info.run_id: r for r in children}
    stages = [r for r in children if r.data.tags["kerneldojo.stage"] != "evaluate"]
    assert all(r.data.tags["mlflow.parentRunId"] == parents[0].info.run_id for r in stages)
    # an evaluation is nested under the stage run it evaluates: SFT's and LEAP's side by side in one view
    evaluations = [r for r in children if r.data.tags["kerneldojo.stage"] == "evaluate"]
    assert sorted(by_id[r.data.tags["mlflow.parentRunId"]].data.tags["kerneldojo.stage"] for r in evaluations) \
        == ["leap_rl", "sft"]
    assert sorted(r.data.tags["kerneldojo.evaluates"] for r in evaluations) == ["leap_rl", "sft"]
    assert all({"accuracy/turn_1", "accuracy/turn_2", "pass_at_1/turn_1"} <= set(r.data.metrics) for r in evaluations)
    # evaluate.untimed_after=[sft]: SFT's evaluation says it was not timed and reports no speed
    assert {r.data.tags["kerneldojo.evaluates"]: ("faster_rate" in r.data.metrics, r.data.tags["kerneldojo.timed"])
            for r in evaluations} == {"sft": (False, "false"), "leap_rl": (True, "true")}
    sft = next(r for r in children if r.data.tags["kerneldojo.stage"] == "sft")
    assert sft.data.params["sft.epochs"] == "40.0" and "lm/loss" in sft.data.metrics
    assert wh.stage_run(runs["sft"]).mlflow_run_id == sft.info.run_id
    artifacts = {stage_name: {a.path for a in client.list_artifacts(r.info.run_id)}
                 for r in children for stage_name in [r.data.tags["kerneldojo.stage"]]}
    assert {"policy", "sft_loss.png", "summary.json"} <= artifacts["sft"]
    assert {"sample_kernels.json", "op_families.png"} <= artifacts["distill"] | artifacts["synthesize"]
    assert "sizes.png" in artifacts["synthesize"]
    # the parent holds the held-out report: the table by stage, then LEAP's change against SFT problem by problem
    report = Path(client.download_artifacts(parents[0].info.run_id, "held_out.md")).read_text()
    assert "| sft |" in report and "| leap_rl vs sft |" in report
    assert "sample_kernels.json" in artifacts["leap_rl"] and "accuracy_by_turn.png" in artifacts["evaluate"]
    # the policy is an MLflow Model: it loads with mlflow.transformers and tokenizes as the checkpoint does
    import mlflow.artifacts
    import mlflow.transformers

    from training.model import load_policy

    local = mlflow.artifacts.download_artifacts(run_id=sft.info.run_id, artifact_path="policy",
                                                tracking_uri=default_tracking_uri(Home.of(config).root))
    components = mlflow.transformers.load_model(local, return_type="components")
    _, tokenizer = load_policy(wh.checkpoint(runs["sft"]))
    text = "torch::Tensor forward(torch::Tensor x0) {\n  return v1;\n}\n"
    assert components["tokenizer"](text)["input_ids"] == tokenizer(text)["input_ids"]
    assert type(components["model"]).__name__ == "Qwen2ForCausalLM"
    # the final policy is a version of the registered model named after the pipeline
    versions = client.search_model_versions(f"name='{config.name}'")
    assert [v.run_id for v in versions if v.tags.get("stage_run_id") == runs["leap_rl"]] == \
        [wh.stage_run(runs["leap_rl"]).mlflow_run_id]
    assert parents[0].data.tags["kerneldojo.registered_model"].startswith(f"{config.name}/")
    # problem sets and SFT corpora are MLflow datasets: made by one run, used (training, evaluation) by another
    datasets = {stage_name: {(d.dataset.name, next(t.value for t in d.tags if t.key == "mlflow.data.context"))
                             for d in r.inputs.dataset_inputs}
                for r in children for stage_name in [r.data.tags["kerneldojo.stage"]]}
    assert (f"sft_examples:{runs['distill']}", "produced") in datasets["distill"]
    assert (f"sft_examples:{runs['distill']}", "training") in datasets["sft"]
    assert (f"problems:{runs['hints']}", "produced") in datasets["hints"]
    assert (f"problems:{runs['hints']}", "evaluation") in datasets["evaluate"]


def test_the_held_out_report_reads_every_evaluation_of_the_pipeline(demo, capsys):
    from flows.cli import _print_held_out
    from warehouse.reports import evaluation_rows, held_out_table, problem_outcomes

    runs, config, _, wh = demo
    rows = evaluation_rows(wh, runs)
    assert [r["stage"] for r in rows] == ["sft", "leap_rl"]  # evaluate.after=[sft], and the last stage
    assert all(r["problems"] == 2 and 0 <= r["accuracy/turn_1"] <= r["accuracy/turn_2"] <= 1 and r["wall_s"] > 0
               for r in rows)
    table = held_out_table([rows], config.evaluate.max_turns)
    assert table.count("\n") == 3
    # per problem, for the paired stage-change table: the share of samples passing at turn 1 and by the last turn
    outcomes = problem_outcomes(wh, rows[0]["evaluation"], config.evaluate.max_turns)
    assert len(outcomes) == 2 and all(0 <= o.first <= o.by_turn <= 1 for o in outcomes.values())
    assert all(o.samples == config.evaluate.samples_per_problem for o in outcomes.values())
    assert sum(o.first for o in outcomes.values()) / 2 == pytest.approx(rows[0]["accuracy/turn_1"])
    _print_held_out(config, runs)  # what `kerneldojo run` ends with: the table, then LEAP's change against SFT
    printed = capsys.readouterr().out
    assert "| sft |" in printed and "| leap_rl vs sft |" in printed and printed.rstrip().endswith(" 2 |")
    # evaluate.untimed_after=[sft]: SFT's evaluation judged correctness only and reports no speed, not none faster
    sft, leap = rows
    assert sft["timed"] is False and "faster_rate" not in sft and "speedup/geomean_eager" not in sft["metrics"]
    assert leap["timed"] is True and "faster_rate" in leap
    assert all(v["speedup_vs_eager"] is None for v in wh.verdict_rows(runs["evaluate@sft"]))
    assert table.splitlines()[2].split("|")[4].strip() == "-"
    assert table.splitlines()[2].split("|")[7].strip() == HARNESS_VERSION  # which harness judged it


def test_evaluate_takes_any_policy_stage_and_nothing_else(demo):
    runs, _, overrides, wh = demo
    evaluated = stage(name="evaluate", from_run=runs["warmup_rl"], overrides=overrides)
    assert wh.stage_run(evaluated).status.value == "succeeded"
    assert wh.summary(evaluated)["evaluated"] == f"warmup_rl:{runs['warmup_rl']}"
    assert wh.count("eval_results", evaluated) > 0
    with pytest.raises(WarehouseError, match="is a 'distill' run, expected a 'sft' or 'rft' or 'warmup_rl' or "
                                             "'leap_rl' run"):
        stage(name="evaluate", from_run=runs["distill"], overrides=overrides)


def test_an_evaluation_run_again_replays_its_policys_samples_from_the_warehouse(demo):
    """A KernelBench evaluation cut short on one GPU box and run again on another (an H100, then an H200) sampled
    its policy afresh, and bfloat16 on another GPU model need not pick the same tokens: other candidates, judged
    again. A stage run's policy never changes, so its generate calls are recorded and replayed exactly."""
    import duckdb

    runs, _, overrides, wh = demo
    first = stage(name="evaluate", from_run=runs["rft"], overrides=overrides)  # the demo evaluated sft, not rft
    assert wh.summary(first)["generate_calls_replayed"] == 0
    again = stage(name="evaluate", from_run=runs["rft"], overrides=overrides)
    turns = max(r["turn"] for r in wh.eval_rows(first))
    assert wh.summary(again)["generate_calls_replayed"] == turns  # every turn's call: nothing sampled again
    assert [(r["problem_id"], r["sample"], r["turn"], r["candidate_id"]) for r in wh.eval_rows(again)] == \
        [(r["problem_id"], r["sample"], r["turn"], r["candidate_id"]) for r in wh.eval_rows(first)]
    # what is replayed is the record itself: samples altered there are the candidates judged
    policy = f"rft:{runs['rft']}"
    with duckdb.connect(str(wh.path)) as con:
        for key, kept in con.execute("SELECT call_key, generations FROM policy_generations WHERE policy = ?",
                                     [policy]).fetchall():
            altered = [{**g, "text": "```python\n# altered in the record: no ModelNew\n```"} for g in json.loads(kept)]
            con.execute("UPDATE policy_generations SET generations = ? WHERE policy = ? AND call_key = ?",
                        [json.dumps(altered), policy, key])
    replayed = stage(name="evaluate", from_run=runs["rft"], overrides=overrides)
    first_turn = lambda run: {(r["problem_id"], r["sample"]): r for r in wh.eval_rows(run) if r["turn"] == 1}
    assert set(first_turn(replayed)) == set(first_turn(first))
    assert all(first_turn(replayed)[k]["candidate_id"] != first_turn(first)[k]["candidate_id"]
               for k in first_turn(first))
    assert all(not r["passed"] for r in first_turn(replayed).values())


KERNELBENCH_PROBLEM = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return {body}


batch_size = 4096
dim = 65536


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
"""


def test_a_trained_policy_is_evaluated_on_kernelbench_with_feedback_turns(demo, tmp_path):
    """Issue 13's other half: the miniature's policy, not a teacher, on a KernelBench checkout — prompts made from
    KernelBench's references (sizes scaled down, recorded), every failing sample answered again with the
    verifier's feedback, one evaluation nested under the stage it evaluates."""
    runs, config, overrides, wh = demo
    for name, body in {"1_ReLU": "torch.relu(x)", "2_Sum_over_dim": "torch.sum(x, dim=1)"}.items():
        (tmp_path / "level1").mkdir(exist_ok=True)
        (tmp_path / "level1" / f"{name}.py").write_text(KERNELBENCH_PROBLEM.format(body=body))
    # what `kerneldojo eval --from-run <leap_rl run> --kernelbench <folder> --level 1` runs (the CLI in this process
    # would leave its Prefect server to the tests after it)
    from flows.evaluation import eval_overrides

    chosen = eval_overrides(from_run=runs["leap_rl"], kernelbench_dir=str(tmp_path), levels=[1])
    evaluated = stage(name="evaluate", from_run=runs["leap_rl"], overrides=[
        *overrides, *chosen, "evaluate.scale_to_mb=1", "evaluate.samples_per_problem=2"])
    summary = wh.summary(evaluated)
    assert summary["evaluated"] == f"leap_rl:{runs['leap_rl']}" and summary["problems_from"] == "kernelbench levels 1"
    assert summary["problems"] == 2 and summary["reference_broken"] == 0
    assert all(p.scale > 1 for p in wh.problems(evaluated))  # scaled down, said per problem
    turns = defaultdict(list)  # (problem, sample) -> its turns' outcomes
    for row in wh.eval_rows(evaluated):
        turns[row["problem_id"], row["sample"]].append(row["passed"])
    assert len(turns) == 2 * 2
    # a sample that failed its first turn was answered again, with feedback, up to evaluate.max_turns (2)
    assert all(outcomes in ([True], [False, True], [False, False]) for outcomes in turns.values())
    nested = MlflowClient(default_tracking_uri(Home.of(config).root)).get_run(wh.stage_run(evaluated).mlflow_run_id)
    assert nested.data.tags["kerneldojo.evaluates"] == "leap_rl"


def test_a_pipeline_continues_after_an_earlier_run_without_running_it_again(demo):
    """`from_run`: the stages up to it are its lineage (not run again); the rest builds on it, as `kerneldojo run
    --from-run` and the learning curve's seeds sharing one distilled corpus do."""
    runs, _, overrides, wh = demo
    before = len(wh.stage_runs())
    continued = pipeline(overrides=[*overrides, "evaluate.after=[]"], from_run=runs["warmup_rl"])
    assert {s: continued[s] for s in STAGES[:5]} == {s: runs[s] for s in STAGES[:5]}
    assert continued["leap_rl"] != runs["leap_rl"] and continued["evaluate"] != runs["evaluate"]
    assert len(wh.stage_runs()) == before + 2  # leap_rl and its evaluation, nothing else
    assert wh.stage_run(continued["leap_rl"]).parent_ids == [runs["warmup_rl"]]
    assert [r.stage for r in wh.lineage(continued["evaluate"])] == list(reversed(STAGES))
    refused = CliRunner().invoke(app, ["run", "--from-run", runs["evaluate"], "--config", _config_file(overrides)])
    assert refused.exit_code != 0 and "is a 'evaluate' run, expected" in refused.output
    assert len(wh.stage_runs()) == before + 2


def test_rerun_one_stage_from_an_earlier_run(demo):
    runs, _, overrides, wh = demo
    before = {t: wh.count(t, runs["rft"]) for t in ("candidates", "verdicts", "sft_examples", "checkpoints")}
    new_id = stage(name="rft", from_run=runs["sft"], overrides=[*overrides, "rft.max_problems=1"])
    assert new_id != runs["rft"]
    # rft.max_problems: one training problem sampled (2 samples, the same source at most once), not all of them
    assert 1 <= wh.count("candidates", new_id) <= 2 < before["candidates"]
    new = wh.stage_run(new_id)
    assert new.parent_ids == [runs["sft"]] and new.status.value == "succeeded"
    assert {t: wh.count(t, runs["rft"]) for t in before} == before  # the old run is untouched
    assert wh.count("checkpoints", new_id) == 1
    listing = CliRunner().invoke(app, ["runs", "--stage", "rft", "--config", _config_file(overrides)])
    assert listing.exit_code == 0 and new_id in listing.output and runs["rft"] in listing.output


def test_the_sft_stage_trains_in_ranks_it_starts_itself(demo):
    """distributed.processes=2: the stage starts two gloo ranks; its MLflow run gets every step's loss from rank 0,
    and the policy it saves holds the ranks' trained weights."""
    from training.model import build_model, load_policy

    runs, config, overrides, wh = demo
    run_id = stage(name="sft", from_run=runs["distill"],
                   overrides=[*overrides, "distributed.processes=2", "sft.epochs=2"])
    run = wh.stage_run(run_id)
    assert run.status.value == "succeeded" and run.config["distributed"]["processes"] == 2
    steps = wh.summary(run_id)["steps"]
    client = MlflowClient(default_tracking_uri(Home.of(config).root))
    history = sorted(client.get_metric_history(run.mlflow_run_id, "lm/loss"), key=lambda m: m.step)
    assert [m.step for m in history] == list(range(1, steps + 1))
    assert history[-1].value < history[0].value
    trained, tokenizer = load_policy(wh.checkpoint(run_id))
    initial = build_model(config.sft.model, tokenizer, config.seed)  # what the stage started the ranks from
    assert any(not torch.equal(a, b) for a, b in zip(trained.state_dict().values(), initial.state_dict().values()))


def test_leap_rl_trains_in_two_ranks_and_records_every_rollout_once(demo):
    """distributed.processes=2: each rank samples whole groups of the step and trains on them; the stage plans,
    verifies and records. Every rollout is recorded once, every group whole, every step logged and checkpointed,
    and the run resumes in one process from a checkpoint of two ranks. Its problems come in `prompts: frontier`
    order, from the first-turn verdicts of its lineage (warmup RL's groups, RFT's samples)."""
    from training.checkpoint import load_rl_state
    from training.model import load_policy
    from training.rl import PolicyTrainer

    runs, config, overrides, wh = demo
    steps, prompts = 2, 2
    run_id = stage(name="leap_rl", from_run=runs["warmup_rl"],
                   overrides=[*overrides, "distributed.processes=2", f"leap_rl.steps={steps}",
                              f"leap_rl.prompts_per_step={prompts}", "leap_rl.checkpoint_every=1",
                              "leap_rl.prompts=frontier"])
    run = wh.stage_run(run_id)
    group_size = config.leap_rl.group_size
    assert run.status.value == "succeeded" and wh.summary(run_id)["processes"] == 2
    order = wh.summary(run_id)["prompts"]
    assert order["from_runs"] == [runs["warmup_rl"], runs["rft"]]
    train = wh.problems(wh.ancestor(runs["warmup_rl"], "hints").id, split="train")
    assert sum(order[k] for k in ("frontier", "never_tried", "always_passed", "always_failed")) == len(train)
    rows = wh.trajectory_rows(run_id)
    assert len({r["id"] for r in rows}) == len(rows) == steps * prompts * group_size  # none lost, none twice
    for step in range(steps):
        groups: dict[str, list[int]] = defaultdict(list)
        for r in rows:
            if r["step"] == step:
                groups[r["group_id"]].append(r["rollout_index"])
        assert len(groups) == prompts and all(sorted(v) == list(range(group_size)) for v in groups.values())
    client = MlflowClient(default_tracking_uri(Home.of(config).root))
    assert sorted(m.step for m in client.get_metric_history(run.mlflow_run_id, "pass_rate/turn_1")) == [0, 1]
    assert wh.count("verdicts", run_id) > 0  # the ranks' candidates were judged and recorded by the stage
    last = wh.latest_checkpoint(run_id, prefix="step-")
    assert last is not None and last.name == f"step-{steps - 1:05d}" and load_rl_state(last)[1].step == steps - 1
    model, tokenizer = load_policy(last / "policy")
    PolicyTrainer(model, config.leap_rl, tokenizer.pad_token_id).load(last / "trainer")
    # as if it had died after step 0's checkpoint: resumed in one process, it redoes step 1 and nothing else
    shutil.rmtree(last)
    wh.finish_stage_run(run_id, StageStatus.failed, error="killed (simulated)")
    resumed = stage(name="leap_rl", overrides=[*overrides, "distributed.processes=1"], resume=run_id)
    assert resumed == run_id and wh.stage_run(run_id).status.value == "succeeded"
    assert wh.summary(run_id)["processes"] == 1 and wh.summary(run_id)["resumed"] is True
    rows = wh.trajectory_rows(run_id)
    assert sorted(r["step"] for r in rows) == sorted([0, 1] * prompts * group_size)


@pytest.mark.skipif(importlib.util.find_spec("deepspeed") is None, reason="needs the `gpu` extra's deepspeed")
def test_leap_rl_with_deepspeed_in_two_ranks_checkpoints_every_partition(demo):
    """ZeRO-2 in two ranks: every rank writes its optimizer partition into the step's checkpoint, rank 0 the policy."""
    runs, config, overrides, wh = demo
    run_id = stage(name="leap_rl", from_run=runs["warmup_rl"],
                   overrides=[*overrides, "distributed.processes=2", "leap_rl.steps=1", "leap_rl.prompts_per_step=2",
                              "leap_rl.train_engine=deepspeed", "leap_rl.zero_stage=2"])
    assert wh.stage_run(run_id).status.value == "succeeded"
    last = wh.latest_checkpoint(run_id, prefix="step-")
    partitions = sorted(p.name for p in (last / "trainer" / "optimizer" / "trainer").glob("*optim_states.pt"))
    assert len(partitions) == 2, partitions  # one per rank
    assert (last / "policy" / "config.json").exists() and (last / "trainer" / "trainer.json").exists()


def test_a_crashing_stage_is_marked_failed_and_not_built_upon(demo):
    runs, _, overrides, wh = demo
    with pytest.raises(ValueError, match="fits in max_length"):
        stage(name="sft", from_run=runs["distill"], overrides=[*overrides, "sft.max_length=64"])
    failed = [r for r in wh.stage_runs("sft") if r.status.value == "failed"]
    assert len(failed) == 1 and "max_length" in failed[0].error
    with pytest.raises(WarehouseError, match="failed"):
        stage(name="rft", from_run=failed[0].id, overrides=overrides)
    with pytest.raises(WarehouseError, match="expected a 'sft' run"):
        stage(name="rft", from_run=runs["hints"], overrides=overrides)


def test_cli_reports_bad_config_in_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("sft:\n  epoch: 3\n")
    result = CliRunner().invoke(app, ["run", "--config", str(bad)])
    assert result.exit_code == 2 and "sft.epoch: unknown key" in result.output


def test_a_pipeline_whose_rl_batches_cannot_split_over_its_ranks_fails_before_any_stage(tmp_path):
    result = CliRunner().invoke(app, ["run", "--set", f"home={tmp_path}", "--set", "distributed.processes=2",
                                      "--set", "leap_rl.prompts_per_step=3"])
    assert result.exit_code != 0
    assert "leap_rl.prompts_per_step=3 does not split over distributed.processes=2" in result.output
    assert not (tmp_path / "warehouse.duckdb").exists()  # said before the warehouse, Prefect or any stage started


def _config_file(overrides: list[str]) -> str:
    import tempfile

    import yaml

    cfg = load_config(None, overrides)
    path = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    yaml.safe_dump(cfg.model_dump(), path)
    path.close()
    return path.name


RL_SMALL = ["leap_rl.prompts_per_step=2", "leap_rl.group_size=3", "leap_rl.generation.max_new_tokens=300"]


@pytest.mark.parametrize("preset", ["grpo", "grpo_mt", "full", "murphy", "musacoder"])
def test_paper_baselines_run_by_config_alone(demo, preset):
    runs, _, overrides, wh = demo
    base = [o for o in overrides if not o.startswith("leap_rl.max_turns")]  # let the preset choose the turns
    # "musacoder": MURPHY's turns with MusaCoder's PrimeEcho (Eq. 9), whose turn rewards read the speedup
    chosen = ["leap_rl.preset=murphy", "leap_rl.primeecho.reads_speed=true"] if preset == "musacoder" \
        else [f"leap_rl.preset={preset}"]
    run_id = stage(name="leap_rl", from_run=runs["warmup_rl"],
                   overrides=[*base, *RL_SMALL, "leap_rl.steps=1", *chosen])
    rows = wh.trajectory_rows(run_id)
    assert len(rows) == 2 * 3
    # the baselines' rewards read the turn a kernel passed at, or whether it passed, never its speed: their passes
    # are not timed (a timed arm pays for it in steps at equal wall time); PrimeEcho's speed term is timed
    timed = preset == "musacoder"
    passes = [v for v in wh.verdict_rows(run_id) if v["correct"] and v["legal"]]
    assert wh.summary(run_id)["timed"] == timed
    assert passes, "no kernel passed: nothing says whether passes were timed"
    assert all((v["speedup_vs_eager"] is not None) == timed for v in passes), passes
    if preset == "grpo":
        assert all(r["num_turns"] == 1 for r in rows)
    else:  # no pruning: every group may debug, so every first-turn failure gets a second turn
        assert all(r["gated"] for r in rows)
        assert all(r["num_turns"] == 3 for r in rows if r["passed_turn"] is None)  # failures use every turn


def test_a_time_budget_stops_rl_after_the_step_that_reaches_it(demo):
    """Methods are compared at equal wall time: the step that crosses the budget is the last, and the run
    records what it did (steps, wall seconds, verifier calls) with a resumable checkpoint of that step."""
    runs, _, overrides, wh = demo
    run_id = stage(name="leap_rl", from_run=runs["warmup_rl"],
                   overrides=[*overrides, *RL_SMALL, "leap_rl.steps=5", "leap_rl.time_budget_s=0.001"])
    summary = wh.summary(run_id)
    assert summary["steps"] == 1
    assert summary["verifier_calls"] >= 2 * 3 and summary["train_seconds"] > 0
    assert {r["step"] for r in wh.trajectory_rows(run_id)} == {0}
    assert wh.latest_checkpoint(run_id, prefix="step-").name == "step-00000"


def test_leap_run_killed_mid_way_resumes_from_its_last_checkpoint(demo):
    """Kill the process during leap_rl; `--resume` continues from the last checkpoint without losing or
    duplicating trajectories, and the BDR buffer and step counter come back."""
    import os
    import signal
    import subprocess
    import sys
    import time

    runs, config, overrides, wh = demo
    steps = 4
    args = [*overrides, *RL_SMALL, "leap_rl.max_turns=2", f"leap_rl.steps={steps}", "leap_rl.checkpoint_every=1",
            "leap_rl.bdr.p_buf=1.0"]
    cmd = [sys.executable, "-m", "flows.cli", "stage", "leap_rl", "--from-run", runs["warmup_rl"]]
    for a in args:
        cmd += ["--set", a]
    before = {r.id for r in wh.stage_runs("leap_rl")}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        run_id, deadline = None, time.monotonic() + 600
        while time.monotonic() < deadline:
            new = [r for r in wh.stage_runs("leap_rl") if r.id not in before]
            if new:
                run_id = new[0].id
                checkpoints = Home.of(config).artifacts(run_id) / "checkpoints"
                if (checkpoints / "step-00001").exists():
                    break
            assert proc.poll() is None, "the stage finished before it could be interrupted"
            time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert run_id is not None and wh.stage_run(run_id).status.value == "running"

    resumed = stage(name="leap_rl", overrides=args, resume=run_id)
    assert resumed == run_id
    run = wh.stage_run(run_id)
    assert run.status.value == "succeeded" and wh.summary(run_id)["resumed"] is True
    rows = wh.trajectory_rows(run_id)
    per_step = {s: sum(r["step"] == s for r in rows) for s in range(steps)}
    assert per_step == {s: 2 * 3 for s in range(steps)}, per_step  # none lost, none duplicated
    assert len({r["id"] for r in rows}) == len(rows)
    client = MlflowClient(default_tracking_uri(Home.of(config).root))
    history = client.get_metric_history(run.mlflow_run_id, "pass_rate/turn_1")
    assert sorted({m.step for m in history}) == list(range(steps))
    # steps 0 and 1 were checkpointed before the kill: the resumed run did not redo them
    assert [m.step for m in history].count(0) == 1 and [m.step for m in history].count(1) == 1
    artifacts = {a.path for a in client.list_artifacts(run.mlflow_run_id)}
    assert {"leap_rl_accuracy_vs_time.png", "leap_rl_progress.png"} <= artifacts


def test_a_stage_flow_run_shows_its_stage_run_in_prefect(demo):
    """A Prefect UI user finds the stage run id (the next stage's `from_run`) in the flow run's name, its logs
    and a markdown artifact with the summary, the lineage and the MLflow link."""
    import time

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey, LogFilter, LogFilterFlowRunId

    runs, _, overrides, _ = demo
    run_id = stage(name="hints", from_run=runs["synthesize"], overrides=overrides)
    key = run_id  # a run id starts with its stage; `warmup_rl-...` would be `warmup-rl-...`
    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])))
        assert len(artifacts) == 1
        markdown = artifacts[0].data
        assert f"`{run_id}` — succeeded" in markdown and f"`{runs['synthesize']}`" in markdown
        assert "/#/experiments/" in markdown and "| problems | 8 |" in markdown
        flow_run = client.read_flow_run(artifacts[0].flow_run_id)
        assert flow_run.name == f"hints · {run_id}"
        announced = f"stage run {run_id}, from {runs['synthesize']}"
        deadline = time.monotonic() + 30  # Prefect ships run logs to its API in the background
        while True:
            logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run.id])))
            if any(announced in entry.message for entry in logs) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert any(announced in entry.message for entry in logs), [entry.message for entry in logs]
        from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

        task_runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run.id])))
        assert [sorted(t.tags) for t in task_runs] == [["kerneldojo", "stage:hints"]]  # no GPU: no `gpu` tag


def test_a_verifier_rate_is_of_measured_seconds_never_of_an_instant(tmp_path):
    """Verdicts that all came at once (the cache) have no rate: once read as 11 of them in 0.0 s (seconds rounded
    first), 1.1e10 a second in the summary and in MLflow. The rate is of the unrounded seconds, when there are any."""
    from schemas.config import load_config
    from schemas.records import Verdict, VerdictCategory
    from tasks.common import stage_run

    verdict = Verdict(candidate_id="c", problem_id="p", compiled=True, correct=True, legal=True, pass_fraction=1.0,
                      category=VerdictCategory.passed, cached=True)
    with stage_run("synthesize", load_config(None, [f"home={tmp_path}"]), []) as ctx:
        ctx._note_throughput("verify step 1", [verdict] * 11, 0.004)
        entry = ctx.summary["verifier"]["verify_step"]
        assert entry["verdicts"] == 11 and "per_second" not in entry
        ctx._note_throughput("verify step 2", [verdict] * 10, 2.0)
        assert entry["seconds"] == 2.0 and entry["per_second"] == pytest.approx(21 / 2.004, abs=0.01)


def test_ablation_arms_each_judge_their_own_rollouts(demo, tmp_path):
    """Methods are compared at equal wall time, and the arms of a seed sample the same first-step kernels: an arm
    that took another's verdicts (and builds) of them from a shared cache bought steps with them (an H100 run:
    GRPO judged 92 of its 208 verdicts after LEAP). Each arm's training judges with an empty cache of its own."""
    from benchmarks.leap_ablation import arm_verifier_cache, method_order, run_methods

    runs, _, overrides, wh = demo
    sets = [*overrides, *RL_SMALL]
    config = load_config(None, sets)
    state = tmp_path / "ablation.json"
    _, results, complete = run_methods(config, None, sets, runs["warmup_rl"], ["grpo", "grpo_mt"], [0], 600.0, 1,
                                       state)
    assert complete and [r["method"] for r in results] == ["before", "grpo", "grpo_mt"]
    before, *results = results  # the warmup policy's own evaluation, the row every arm is paired against
    assert wh.stage_run(before["evaluate"]).parent_ids == [runs["warmup_rl"]] and "leap_rl" not in before
    assert json.loads(state.read_text())["verifier_cache"] == "per arm"

    def first_turn(run_id):
        candidates = {c.id: c for c in wh.candidates(run_id)}
        return {candidates[v["candidate_id"]].source: v["cached"] for v in wh.verdict_rows(run_id)
                if not candidates[v["candidate_id"]].turn}

    first, second = (first_turn(r["leap_rl"]) for r in results)
    shared = first.keys() & second.keys()
    assert shared, "the arms sampled no kernel in common: nothing says whose verdicts the second one used"
    assert not all(first[s] for s in shared)  # the first arm judged them (the demo's cache had grpo's verdicts)
    assert {s: second[s] for s in shared} == {s: first[s] for s in shared}  # ... and so did the second, again
    assert not any(arm_verifier_cache(config, m, 0).exists() for m in ("grpo", "grpo_mt"))
    # each arm is its paper's method whatever the config says for LEAP (here leap_rl.max_turns=2): GRPO is
    # single-turn, GRPO-MT debugs every group
    trained = [wh.stage_run(r["leap_rl"]).config["leap_rl"] for r in results]
    assert [(c["max_turns"], c["reward"], c["gate"]) for c in trained] == [(1, "scalar", "dcp"), (2, "scalar", "all")]
    grpo, grpo_mt = (wh.trajectory_rows(r["leap_rl"]) for r in results)
    assert {t["num_turns"] for t in grpo} == {1}
    assert all(t["gated"] for t in grpo_mt)
    assert all(t["num_turns"] == 2 for t in grpo_mt if t["passed_turn"] is None)
    assert method_order(["leap", "grpo", "full"], 1) == ["grpo", "full", "leap"]
