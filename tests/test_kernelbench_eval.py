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

SIZED_NAME = "level2/2_Large_ReLU.py"
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
    # KernelBench's own way of giving sizes, at its level-1 scale: 1 GiB in, 1 GiB out
    (root / SIZED_NAME).write_text(SIZED.replace("elu(x, alpha=self.alpha)", "relu(x)").replace("dim = 393216",
                                                                                             "dim = 65536"))
    return root


@pytest.fixture(scope="module")
def evaluation(kernelbench, tmp_path_factory, verifier_cache):
    home = tmp_path_factory.mktemp("home")
    overrides = [f"home={home}", f"verifier.cache_dir={verifier_cache}", "evaluate.policy=template",
                 "evaluate.problems=kernelbench", f"evaluate.kernelbench_dir={kernelbench}", "evaluate.levels=[1,2]",
                 "evaluate.max_turns=2", "verifier.timing_runs=2", "evaluate.scale_to_mb=1",
                 "verifier.kept_problems=1",  # the judge keeps one problem's trials: KernelBench at full size
                 "verifier.memory_admission=reference"]  # judgements take their problem's estimate, from its sizes
    run_id = stage(name="evaluate", overrides=overrides)
    config = load_config(None, overrides)
    return run_id, overrides, Warehouse(Home.of(config).warehouse_path), home


def test_a_kernelbench_folder_is_evaluated_per_level_without_an_upstream_run(evaluation):
    run_id, _, wh, _ = evaluation
    run = wh.stage_run(run_id)
    assert run.status.value == "succeeded" and run.parent_ids == []
    summary = wh.summary(run_id)
    assert summary["evaluated"] == "teacher:template"
    assert summary["problems"] == 4 and summary["reference_broken"] == 1
    # each reference ran once, as its problem's first candidate was judged, although the judge keeps one problem's
    # trials at a time; the check that follows the judging runs none of them again (only the hub problem's, which
    # no candidate reached, and fails). Checked first, each ran twice: for its check, then for its candidates.
    check = summary["reference_check"]
    assert check["checked"] == 5 and check["ran"] == 0 and check["seconds"] > 0
    assert summary["reference_runs"]["references"] == 4 and summary["reference_runs"]["total"] > 0
    metrics = summary["metrics"]
    # the template teacher writes correct kernels for these: correctness is fast_0, at turn 1, per level
    assert metrics["accuracy/turn_1"] == 1.0 == metrics["fast_0/eager/turn_1"]
    assert metrics["level1/accuracy/turn_1"] == 1.0 and metrics["level2/accuracy/turn_1"] == 1.0
    assert 0 <= metrics["fast_1/eager/turn_1"] <= 1 and metrics["speedup/geomean_eager"] > 0
    assert metrics["category/turn_1/pass"] == 1.0
    # the problems evaluated are the run's own rows, with their KernelBench level
    problems = wh.problems(run_id)
    assert sorted(p.name for p in problems) == sorted(n.removesuffix(".py") for n in [*FOLDER, SIZED_NAME])
    assert {p.difficulty for p in problems} == {1, 2}
    # the sizes its analysis measured go with each problem (a judgement's memory estimate starts from them), and
    # a later evaluation of the same problems finds them without exporting again
    relu = next(p for p in problems if p.name == "level1/1_ReLU")
    assert relu.measures["input_bytes"] == 64 * 256 * 4 == relu.measures["output_bytes"]
    assert wh.known_sizes([relu.id]) == {relu.id: {"input_bytes": 65536, "output_bytes": 65536, "weight_bytes": 0}}
    rows = wh.eval_rows(run_id)
    assert len(rows) == 4 and all(r["passed"] for r in rows)


def test_a_reference_that_cannot_run_is_reported_per_problem_not_fatal(evaluation):
    import pyarrow.parquet as pq

    run_id, _, wh, home = evaluation
    table = pq.read_table(home / "artifacts" / run_id / "problems.parquet").to_pylist()
    left_out = [r for r in table if r["left_out"]]
    assert [r["name"] for r in left_out] == ["level1/3_Needs_the_hub"]
    assert "huggingface.co" in left_out[0]["left_out"]
    assert sorted(r["name"] for r in table if not r["left_out"]) == ["level1/1_ReLU", "level1/2_Sum_over_dim",
                                                                     "level2/1_Abs_then_mean", "level2/2_Large_ReLU"]


def test_a_reference_that_breaks_while_its_candidate_is_judged_is_left_out_not_fatal(tmp_path, verifier_cache):
    """A reference can pass its check and break only while a candidate is judged: here its outputs change from run
    to run, which shows once its trials (too large to keep: stored_trials_gb) are made again for the candidate.
    The evaluation goes on: that problem is left out with the reason, in the summary and the table, and is not
    scored; the other problem is."""
    import pyarrow.parquet as pq

    root = tmp_path / "KernelBench"
    (root / "level1").mkdir(parents=True)
    for name, body in {"1_ReLU": "return torch.relu(x)",
                       "2_Moody_ReLU": "import time\n        return torch.relu(x) + (time.time_ns() % 999983) * 1e-3"}.items():
        (root / "level1" / f"{name}.py").write_text(
            textwrap.dedent(PROBLEM).format(body=body, inputs="return [torch.randn(64, 256)]"))
    overrides = [f"home={tmp_path / 'home'}", f"verifier.cache_dir={verifier_cache}", "evaluate.policy=template",
                 "evaluate.problems=kernelbench", f"evaluate.kernelbench_dir={root}", "evaluate.levels=[1]",
                 "evaluate.max_turns=1", "verifier.timed=false", "verifier.stored_trials_gb=1e-9"]
    run_id = stage(name="evaluate", overrides=overrides)
    wh = Warehouse(Home.of(load_config(None, overrides)).warehouse_path)
    summary = wh.summary(run_id)
    assert wh.stage_run(run_id).status.value == "succeeded"
    assert summary["problems"] == 1 and summary["reference_broken"] == 1
    assert "not deterministic" in summary["left_out"]["level1/2_Moody_ReLU"]
    assert summary["metrics"]["accuracy/turn_1"] == 1.0
    assert [r["problem_id"] for r in wh.eval_rows(run_id)] == \
        [p.id for p in wh.problems(run_id) if p.name == "level1/1_ReLU"]
    table = pq.read_table(tmp_path / "home" / "artifacts" / run_id / "problems.parquet").to_pylist()
    assert {r["name"]: bool(r["left_out"]) for r in table} == {"level1/1_ReLU": False, "level1/2_Moody_ReLU": True}


def test_a_problem_whose_reference_breaks_has_no_verdict_at_all_not_half_a_group(tmp_path, verifier_cache):
    """A candidate that fails to build is judged without its reference (verifier.build_first), so it gets a verdict
    even where its problem's reference breaks when another candidate's judgement runs it. The stage sees neither:
    every pair of a problem whose reference broke is None, the problem left out with its reason (a group of an RL
    step half judged would score the failures of a problem that cannot be judged)."""
    from schemas.records import Candidate, Problem
    from tasks.common import stage_run
    from tests.kernels import RED_TEAM, REFERENCE, good

    moody_source = REFERENCE.replace("return torch.sigmoid(x) * self.w",
                                     "import time\n        return torch.sigmoid(x) * self.w + (time.time_ns() % 999983) * 1e-3")
    moody = Problem(id=Problem.make_id(moody_source), source="test", reference=moody_source, name="moody")
    pairs = [(moody, Candidate(id=Candidate.make_id(moody.id, source, "cpu"), problem_id=moody.id, source=source))
             for source in (RED_TEAM["cpp_compile_error"][0], good())]
    config = load_config(None, [f"home={tmp_path}", f"verifier.cache_dir={verifier_cache}", "verifier.timed=false",
                                "verifier.stored_trials_gb=1e-9", "verifier.trials=2", "verifier.use_cache=false"])
    with stage_run("evaluate", config, []) as ctx:
        assert ctx.verify(pairs) == [None, None]
        assert "not deterministic" in ctx.summary["left_out"]["moody"]
        assert ctx.pool.calls == 2 and moody.id in ctx.pool.broken


def test_the_template_teachers_kept_answers_are_not_another_torchs(monkeypatch):
    """Its answers are written from torch.export's graph, which changes between torch versions: answers kept under
    one torch (this machine's) are not taken under another (the GPU box's)."""
    import torch

    from training.teacher import TemplateTeacher

    here = TemplateTeacher().version
    assert TemplateTeacher().version == here  # a function of the code, not of the moment
    monkeypatch.setattr(torch, "__version__", "2.11.0+cu130")
    assert TemplateTeacher().version != here


def test_the_template_teachers_answers_are_kept_and_not_asked_for_again(evaluation):
    """Each of the template teacher's answers to a KernelBench problem is a sandbox's torch.export (~3 minutes for
    200 on the H200, every call of an evaluation cut short and run again): kept in the warehouse by the teacher's
    code version, and the next evaluation of the same problems takes them from there."""
    from training.teacher import TemplateTeacher

    run_id, overrides, wh, _ = evaluation
    version = TemplateTeacher().version
    problems = wh.problems(run_id)
    kept = wh.known_teacher_answers("teacher:template", version, "cpu", [p.id for p in problems])
    assert set(kept) == {p.id for p in problems} and all(kept.values())
    assert wh.known_teacher_answers("teacher:template", "another-version", "cpu", list(kept)) == {}
    relu = next(p for p in problems if p.name.endswith("1_ReLU"))
    # a kept answer is what the next evaluation judges (the problem is not asked again): this one now refuses
    with wh.connect() as con:
        con.execute("UPDATE teacher_answers SET answer = 'no kernel, kept' WHERE problem_id = ?", [relu.id])
    again = stage(name="evaluate", overrides=overrides)
    sources = {c.problem_id: c.source for c in wh.candidates(again) if c.turn == 0}
    assert "no kernel, kept" in sources[relu.id]
    assert all("load_inline" in sources[p.id] for p in problems if p.id != relu.id and p.id in sources
               and "load_inline" in kept[p.id])


def test_a_kernelbench_problem_too_large_for_the_cpu_is_scaled_down_explicitly(evaluation):
    """evaluate.scale_to_mb: the 2 GiB problem is judged at <= 1 MiB, its factor in the table; the others are
    small enough to stay as they are (scale 1)."""
    import pyarrow.parquet as pq

    run_id, _, wh, home = evaluation
    table = pq.read_table(home / "artifacts" / run_id / "problems.parquet").to_pylist()
    scales = {r["name"]: r["scale"] for r in table}
    assert scales["level2/2_Large_ReLU"] >= 2 * 2**30 / 2**20 and scales["level1/1_ReLU"] == 1.0
    large = next(p for p in wh.problems(run_id) if p.name == "level2/2_Large_ReLU")
    assert large.scale == scales["level2/2_Large_ReLU"] and set(large.measures["scaled_sizes"]) <= {"batch_size", "dim"}


def test_compare_puts_evaluations_side_by_side(evaluation, tmp_path):
    import yaml

    run_id, overrides, wh, home = evaluation
    again = stage(name="evaluate", overrides=[*overrides, "evaluate.levels=[2]"])
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"home": str(home)}))
    result = CliRunner().invoke(app, ["compare", run_id, again, "--config", str(config)])
    assert result.exit_code == 0, result.output
    # the home named by --set, as every other command takes it, gives the same table
    by_set = CliRunner().invoke(app, ["compare", run_id, again, "--set", f"home={home}"])
    assert by_set.exit_code == 0 and by_set.output == result.output, by_set.output
    lines = result.output.splitlines()
    assert lines[0].startswith("| metric |") and run_id in lines[0] and again in lines[0]
    assert "| level1/accuracy/turn_1 | 1 | - |" in lines
    assert "| level2/accuracy/turn_1 | 1 | 1 |" in lines
    assert any(line.startswith("| fast_1/eager/turn_1 |") for line in lines)
    # then the second against the first on the problems both judged (level 2's), paired problem by problem
    shared = {r["problem_id"] for r in wh.eval_rows(again)} & {r["problem_id"] for r in wh.eval_rows(run_id)}
    assert shared and f"| {again} vs {run_id} | +0.0 ± 0.0 | 0 / 0 | +0.0 ± 0.0 | 0 / 0 | {len(shared)} |" in lines
    # drawn side by side too: one row of panels for all problems and one per level (1 and 2 here)
    plot = tmp_path / "plots" / "compare.png"
    drawn = CliRunner().invoke(app, ["compare", run_id, again, "--set", f"home={home}", "--plot", str(plot)])
    assert drawn.exit_code == 0 and f"plot: {plot}" in drawn.output, drawn.output
    header = plot.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    assert (int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")) == (1210, 3 * 352)
    # and where MLflow shows the same two runs side by side
    link = next(line for line in lines if line.startswith("MLflow compare view: "))
    tracked = [wh.stage_run(run).mlflow_run_id for run in (run_id, again)]
    assert all(tracked) and link.endswith(f'/#/compare-runs?runs=["{tracked[0]}","{tracked[1]}"]&experiments=["1"]')


def test_eval_cli_asks_for_exactly_one_policy(kernelbench):
    result = CliRunner().invoke(app, ["eval", "--kernelbench", str(kernelbench)])
    assert result.exit_code != 0 and "say who is evaluated" in result.output
    result = CliRunner().invoke(app, ["eval", "--template", "--model", "somewhere"])
    assert result.exit_code != 0 and "say who is evaluated" in result.output
    result = CliRunner().invoke(app, ["eval", "--template"])
    assert result.exit_code != 0 and "--from-run" in result.output


def test_a_left_out_reason_keeps_the_exception_not_the_top_of_its_traceback():
    from tasks.common import reason_in_brief

    frames = "".join(f'  File "/site-packages/torch/nn/modules/module.py", line {i}, in _call_impl\n    return f()\n'
                     for i in range(40))
    why = (f"problem level1/31_ELU: the reference failed in trial 0: Traceback (most recent call last):\n{frames}"
           "RuntimeError: DefaultCPUAllocator: can't allocate memory: you tried to allocate 6442450944 bytes.")
    brief = reason_in_brief(why)
    assert brief.startswith("problem level1/31_ELU") and len(brief) <= 310
    assert brief.endswith("you tried to allocate 6442450944 bytes.") and "_call_impl" not in brief


SIZED = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x):
        return torch.nn.functional.elu(x, alpha=self.alpha)


batch_size = 4096  # KernelBench level 1 sizes: 6 GiB of input
dim = 393216
alpha = 1

def get_inputs():
    return [torch.rand(batch_size, dim)]

def get_init_inputs():
    return [alpha]
'''


def test_kernelbench_sizes_are_read_and_rewritten_from_the_source_alone():
    from operators.imports import size_constants, with_size_constants

    assert size_constants(SIZED) == {"batch_size": 4096, "dim": 393216, "alpha": 1}
    smaller = with_size_constants(SIZED, {"dim": 3072})
    assert size_constants(smaller) == {"batch_size": 4096, "dim": 3072, "alpha": 1}
    assert "dim = 3072\n" in smaller and "# KernelBench level 1 sizes" in smaller  # nothing else changes
    assert smaller.replace("dim = 3072", "dim = 393216") == SIZED


# KernelBench's level-1 matmuls write their sizes as arithmetic, and 5_Matrix_scalar_multiplication takes a number
SCALAR_TIMES = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, A, s):
        return A * s


M = 16384 * 4
N = 4096 * 4  # 16384
shift = 1 << 3
negative = -1
fraction = 7 / 2


def get_inputs():
    return [torch.rand(M, N), 3.14]

def get_init_inputs():
    return []
'''


def test_sizes_written_as_arithmetic_are_sizes_too():
    from operators.imports import size_constants, with_size_constants

    assert size_constants(SCALAR_TIMES) == {"M": 65536, "N": 16384, "shift": 8}  # not -1 nor 7 / 2
    smaller = with_size_constants(SCALAR_TIMES, {"M": 512})
    assert "\nM = 512\nN = 4096 * 4  # 16384\n" in smaller
    assert size_constants(smaller) == {"M": 512, "N": 16384, "shift": 8}


def test_a_problem_with_arithmetic_sizes_and_a_scalar_input_is_scaled_down(analyser):
    """Before, `M = 16384 * 4` was no size and a number among the inputs broke the analysis: the problem stayed at
    full size (8 GB) and its reference was killed on the CPU."""
    from schemas.records import Problem

    problem = Problem(id=Problem.make_id(SCALAR_TIMES), source="kernelbench", reference=SCALAR_TIMES,
                      name="level1/5_Matrix_scalar_multiplication")
    scaled = analyser.scaled_down(problem, 16 << 20)
    assert set(scaled.measures["scaled_sizes"]) <= {"M", "N"} and scaled.scale >= 8 * 2**30 / (16 << 20)
    assert analyser.scaled_down(scaled, 16 << 20) is scaled


# level 2's 56_Matmul_Sigmoid_Sum: 16 MB of inputs and 4 GB of weights
WIDE_GEMM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.linear = nn.Linear(input_size, hidden_size)

    def forward(self, x):
        return torch.sigmoid(self.linear(x)).sum(dim=1, keepdim=True)


batch_size = 128
input_size = 32768
hidden_size = 32768


def get_inputs():
    return [torch.rand(batch_size, input_size)]

def get_init_inputs():
    return [input_size, hidden_size]
'''


def test_weights_count_when_a_problem_is_scaled_down(analyser):
    """Before, only inputs and outputs counted: 16 MB fitted, and the CPU ran a 4 GB Linear (5 s to make a trial)."""
    from schemas.records import Problem

    problem = Problem(id=Problem.make_id(WIDE_GEMM), source="kernelbench", reference=WIDE_GEMM,
                      name="level2/56_Matmul_Sigmoid_Sum")
    scaled = analyser.scaled_down(problem, 64 << 20)
    sizes = scaled.measures["scaled_sizes"]
    assert {"input_size", "hidden_size"} & set(sizes) and "batch_size" not in sizes
    assert scaled.scale >= 32
    analysis = analyser.export(scaled)
    assert analysis["weight_bytes"] + analysis["input_bytes"] + analysis["output_bytes"] <= 64 << 20
    assert analysis["weight_bytes"] > analysis["input_bytes"]


# level 1's 100_HingeLoss: a (batch_size, input_shape[0]) tensor times a (batch_size,) one, valid only while equal
HINGE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, predictions, targets):
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))


batch_size = 32768
input_shape = (32768,)
dim = 1


def get_inputs():
    return [torch.rand(batch_size, *input_shape), torch.randint(0, 2, (batch_size,)).float() * 2 - 1]

def get_init_inputs():
    return []
'''


def test_sizes_in_tuples_and_sizes_tied_by_broadcasting_are_halved_together(analyser):
    from operators.imports import size_constants, with_size_constants
    from schemas.records import Problem
    from verifier.analysis import AnalysisError

    assert size_constants(HINGE) == {"batch_size": 32768, "input_shape[0]": 32768, "dim": 1}
    assert "input_shape = (512,)\n" in with_size_constants(HINGE, {"input_shape[0]": 512})
    problem = Problem(id=Problem.make_id(HINGE), source="kernelbench", reference=HINGE, name="level1/100_HingeLoss")
    scaled = analyser.scaled_down(problem, 64 << 20)  # halving either alone breaks the broadcast: both at once
    sizes = scaled.measures["scaled_sizes"]
    assert set(sizes) == {"batch_size", "input_shape[0]"} and sizes["batch_size"][1] == sizes["input_shape[0]"][1]
    fixed = HINGE.replace("batch_size = 32768", "batch_size = (32768)").replace("(32768,)", "[32768]")
    fixed = fixed.replace("input_shape = [32768]", "input_shape = [32767 + 1]")
    unscalable = Problem(id=Problem.make_id(fixed), source="kernelbench", reference=fixed, name="level1/fixed")
    with pytest.raises(AnalysisError, match="none of its sizes can be halved"):
        analyser.scaled_down(unscalable, 64 << 20)  # said, not left at 4 GB silently


def test_a_kernelbench_problem_is_scaled_down_in_a_sandbox_with_its_factor_recorded(analyser):
    from schemas.records import Problem

    problem = Problem(id=Problem.make_id(SIZED), source="kernelbench", reference=SIZED, name="level1/31_ELU")
    scaled = analyser.scaled_down(problem, 64 << 20)
    sizes = scaled.measures["scaled_sizes"]
    assert set(sizes) <= {"batch_size", "dim"} and all(new < old for old, new in sizes.values())
    assert "alpha" not in sizes  # too small to be a size
    assert scaled.id != problem.id and scaled.name == problem.name
    assert 12 * 2**30 / (64 << 20) <= scaled.scale <= 2 * 12 * 2**30 / (64 << 20)  # 12 GiB in+out, now <= 64 MiB
    assert analyser.scaled_down(scaled, 64 << 20) is scaled  # it fits: unchanged


def test_a_reference_that_lies_about_its_sizes_is_not_scaled(analyser):
    """The sandbox names new values for the problem's own sizes only, each no larger than before; a reference that
    rewrites the analysis from inside gets an AnalysisError (the evaluation keeps it at full size)."""
    from schemas.records import Problem
    from verifier.analysis import AnalysisError

    forge = """import sys
for _sandbox in [m for m in list(sys.modules.values()) if hasattr(m, "_sender") and hasattr(m, "dumps")]:
    # what the sandbox sends next is this reply, whatever it meant to send
    _dumps = _sandbox.dumps
    _sandbox.dumps = lambda message: _dumps(("analysed", {"sizes": {"batch_size": 4096, "injected": 64},
                                                          "original_bytes": 1, "scaled_bytes": 1}))
"""
    liar = SIZED.replace("import torch.nn as nn\n", "import torch.nn as nn\n" + forge, 1)
    problem = Problem(id=Problem.make_id(liar), source="kernelbench", reference=liar, name="level1/liar")
    with pytest.raises(AnalysisError, match="malformed reply"):
        analyser.scaled_down(problem, 64 << 20)


def test_the_template_teacher_answers_sandboxed_problems_together_in_their_order(kernelbench, analyser):
    """KernelBench's problems are untrusted: each answer is a sandbox's torch.export. Answered several at once
    (they were the H200's first five minutes one after the other), they come back in the problems' order, each
    the answer that problem alone gets; a teacher policy prepared with them asks its teacher nothing again."""
    from operators.imports import load_kernelbench
    from training.policies import TeacherPolicy
    from training.teacher import TemplateTeacher

    problems, _ = load_kernelbench(kernelbench, [1, 2])
    problems = [p for p in problems if "hub" not in p.name and "Large" not in p.name]
    assert len(problems) == 3
    teacher = TemplateTeacher(analyser=analyser)
    together = teacher.solve_many(problems + problems[:1], "cpu")
    alone = [teacher.solve(p, "cpu") for p in problems]
    assert [o.problem_id for o in together] == [p.id for p in problems + problems[:1]]
    assert [(o.completion, o.refusal) for o in together] == [(o.completion, o.refusal) for o in alone + alone[:1]]
    assert all(o.completion and "load_inline" in o.completion for o in together)

    class Counted(TemplateTeacher):
        asked = 0

        def solve_many(self, todo, backend):
            Counted.asked += len(todo)
            return super().solve_many(todo, backend)

    policy, advanced = TeacherPolicy(Counted(analyser=analyser), "cpu"), []
    policy.prepare(problems + problems[:1], advanced.append, chunk=2)
    assert advanced == [2, 1] and Counted.asked == 3  # one answer a problem, in chunks the caller sees
    answers = policy.complete([(p, [], seed) for seed, p in enumerate(problems)], None)
    assert Counted.asked == 3 and answers == [o.completion for o in alone]


def test_an_answer_the_machine_decided_is_not_kept(kernelbench, verifier_cache):
    """A refusal because the analysis sandbox timed out (a loaded machine) says nothing about the problem: the
    template teacher marks it passing and a teacher policy offers it for no keeping — the next run asks again."""
    from operators.imports import load_kernelbench
    from schemas.config import VerifierConfig
    from training.policies import TeacherPolicy
    from training.teacher import TemplateTeacher
    from verifier.analysis import ReferenceAnalyser

    problems, _ = load_kernelbench(kernelbench, [1])
    relu = next(p for p in problems if p.name.endswith("1_ReLU"))
    hurried = ReferenceAnalyser(VerifierConfig(run_timeout_s=0.001), verifier_cache)
    try:
        out = TemplateTeacher(analyser=hurried).solve(relu, "cpu")
        assert out.completion is None and "did not finish" in out.refusal and not out.lasting
        policy = TeacherPolicy(TemplateTeacher(analyser=hurried), "cpu")
        policy.prepare([relu])
        assert "did not finish" in policy.complete([(relu, [], 0)], None)[0]
        assert policy.answers([relu.id]) == {}
    finally:
        hurried.close()
