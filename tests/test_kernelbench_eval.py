"""KernelBench-protocol evaluation end to end on the CPU backend: a KernelBench-format folder, the template
teacher as the policy, per-level metrics, a broken reference reported per problem, `kerneldojo compare`."""

import textwrap

import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.stages import stage
from schemas import load_config
from tasks.common import Home
from warehouse.store import Warehouse

PROBLEM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        {body}


def get_inputs():
    {inputs}


def get_init_inputs():
    return []
'''

FOLDER = {
    "level1/1_ReLU.py": ("return torch.relu(x)", "return [torch.randn(64, 256)]"),
    "level1/2_Sum_over_dim.py": ("return torch.sum(x, dim=1)", "return [torch.randn(32, 128)]"),
    # a level-4-like problem whose inputs come from the hub: offline, its reference cannot run here
    "level1/3_Needs_the_hub.py": ("return x * 2", "raise OSError(\"We couldn't connect to 'https://huggingface.co'\")"),
    "level2/1_Abs_then_mean.py": ("return torch.mean(torch.abs(x), dim=1)", "return [torch.randn(16, 512)]"),
}


@pytest.fixture(scope="module")
def kernelbench(tmp_path_factory):
    root = tmp_path_factory.mktemp("KernelBench")
    for name, (body, inputs) in FOLDER.items():
        path = root / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(textwrap.dedent(PROBLEM).format(body=body, inputs=inputs))
    return root


@pytest.fixture(scope="module")
def evaluation(kernelbench, tmp_path_factory, verifier_cache):
    home = tmp_path_factory.mktemp("home")
    overrides = [f"home={home}", f"verifier.cache_dir={verifier_cache}", "evaluate.policy=template",
                 "evaluate.problems=kernelbench", f"evaluate.kernelbench_dir={kernelbench}", "evaluate.levels=[1,2]",
                 "evaluate.max_turns=2", "verifier.timing_runs=2"]
    run_id = stage(name="evaluate", overrides=overrides)
    config = load_config(None, overrides)
    return run_id, overrides, Warehouse(Home.of(config).warehouse_path), home


def test_a_kernelbench_folder_is_evaluated_per_level_without_an_upstream_run(evaluation):
    run_id, _, wh, _ = evaluation
    run = wh.stage_run(run_id)
    assert run.status.value == "succeeded" and run.parent_ids == []
    summary = wh.summary(run_id)
    assert summary["evaluated"] == "teacher:template"
    assert summary["problems"] == 3 and summary["reference_broken"] == 1
    metrics = summary["metrics"]
    # the template teacher writes correct kernels for these: correctness is fast_0, at turn 1, per level
    assert metrics["accuracy/turn_1"] == 1.0 == metrics["fast_0/eager/turn_1"]
    assert metrics["level1/accuracy/turn_1"] == 1.0 and metrics["level2/accuracy/turn_1"] == 1.0
    assert 0 <= metrics["fast_1/eager/turn_1"] <= 1 and metrics["speedup/geomean_eager"] > 0
    assert metrics["category/turn_1/pass"] == 1.0
    # the problems evaluated are the run's own rows, with their KernelBench level
    problems = wh.problems(run_id)
    assert sorted(p.name for p in problems) == sorted(n.removesuffix(".py") for n in FOLDER)
    assert {p.difficulty for p in problems} == {1, 2}
    rows = wh.eval_rows(run_id)
    assert len(rows) == 3 and all(r["passed"] for r in rows)


def test_a_reference_that_cannot_run_is_reported_per_problem_not_fatal(evaluation):
    import pyarrow.parquet as pq

    run_id, _, wh, home = evaluation
    table = pq.read_table(home / "artifacts" / run_id / "problems.parquet").to_pylist()
    left_out = [r for r in table if r["left_out"]]
    assert [r["name"] for r in left_out] == ["level1/3_Needs_the_hub"]
    assert "huggingface.co" in left_out[0]["left_out"]
    assert sorted(r["name"] for r in table if not r["left_out"]) == ["level1/1_ReLU", "level1/2_Sum_over_dim",
                                                                     "level2/1_Abs_then_mean"]


def test_compare_puts_evaluations_side_by_side(evaluation, tmp_path):
    import yaml

    run_id, overrides, wh, home = evaluation
    again = stage(name="evaluate", overrides=[*overrides, "evaluate.levels=[2]"])
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"home": str(home)}))
    result = CliRunner().invoke(app, ["compare", run_id, again, "--config", str(config)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("| metric |") and run_id in lines[0] and again in lines[0]
    assert "| level1/accuracy/turn_1 | 1 | - |" in lines
    assert "| level2/accuracy/turn_1 | 1 | 1 |" in lines
    assert any(line.startswith("| fast_1/eager/turn_1 |") for line in lines)


def test_eval_cli_asks_for_exactly_one_policy(kernelbench):
    result = CliRunner().invoke(app, ["eval", "--kernelbench", str(kernelbench)])
    assert result.exit_code != 0 and "say who is evaluated" in result.output
    result = CliRunner().invoke(app, ["eval", "--template", "--model", "somewhere"])
    assert result.exit_code != 0 and "say who is evaluated" in result.output
    result = CliRunner().invoke(app, ["eval", "--template"])
    assert result.exit_code != 0 and "--from-run" in result.output


def test_a_left_out_reason_keeps_the_exception_not_the_top_of_its_traceback():
    from tasks.evaluate import reason_in_brief

    frames = "".join(f'  File "/site-packages/torch/nn/modules/module.py", line {i}, in _call_impl\n    return f()\n'
                     for i in range(40))
    why = (f"problem level1/31_ELU: the reference failed in trial 0: Traceback (most recent call last):\n{frames}"
           "RuntimeError: DefaultCPUAllocator: can't allocate memory: you tried to allocate 6442450944 bytes.")
    brief = reason_in_brief(why)
    assert brief.startswith("problem level1/31_ELU") and len(brief) <= 310
    assert brief.endswith("you tried to allocate 6442450944 bytes.") and "_call_impl" not in brief
