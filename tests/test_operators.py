"""NNSmith synthesis, shape hints and the template teacher, for real."""

import subprocess
import sys

import pytest

from operators.hints import extract_hints, render_hints
from operators.synthesis import SynthesisError, synthesize_problems, validate_reference
from schemas.config import SynthesizeConfig
from schemas.records import Problem, Split
from training.prompts import extract_code, user_prompt
from training.teacher import TemplateTeacher

from tests.kernels import LINEAR_AND_MATMUL, TRANSPOSED, reductions


@pytest.fixture(scope="module")
def problems(session_dir):
    cfg = SynthesizeConfig(num_problems=8, test_fraction=0.25)
    found, report = synthesize_problems(cfg, seed=3, cache_dir=session_dir / "synth")
    return found, report, cfg


def test_synthesis_is_distinct_valid_and_split(problems):
    found, report, _ = problems
    assert len(found) == 8 and len({p.id for p in found}) == 8
    assert report.kept == 8 and report.attempts >= 8
    assert sum(p.split == Split.test for p in found) == 2
    for p in found:
        assert "nnsmith" not in p.reference.replace("NNSmith graph", "")
        assert validate_reference(p.reference) is None
        assert p.op_families and 1 <= p.difficulty <= 3


def test_synthesis_is_reproducible(problems, session_dir):
    found, _, cfg = problems
    again, _ = synthesize_problems(cfg, seed=3, cache_dir=session_dir / "synth")
    assert [p.id for p in again] == [p.id for p in found]


def test_reference_runs_without_nnsmith(problems, tmp_path):
    source = problems[0][0].reference
    script = tmp_path / "ref.py"
    script.write_text("import sys\nsys.modules['nnsmith'] = None  # importing it now fails\n" + source +
                      "\nm = Model(*get_init_inputs())\nout = m(*get_inputs())\nprint('ok')\n")
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("ok")


def test_unknown_op_is_a_clear_error(session_dir):
    with pytest.raises(SynthesisError, match="unknown NNSmith ops"):
        synthesize_problems(SynthesizeConfig(num_problems=1, ops=["NotAnOp"]), 0, session_dir / "synth")


def test_hints_report_shapes_strides_and_contiguity():
    problem = Problem(id="t", source="builtin", reference=TRANSPOSED)
    hints = extract_hints(problem)
    by_op = {h.op: h for h in hints}
    assert by_op["input"].shape == [4, 6] and by_op["input"].stride == [6, 1] and by_op["input"].contiguous
    assert by_op["aten.t"].shape == [6, 4] and by_op["aten.t"].stride == [1, 6] and not by_op["aten.t"].contiguous
    text = render_hints(hints)
    assert "float32[6, 4] stride [1, 6] non-contiguous" in text
    assert "Shape hints" in user_prompt(problem.model_copy(update={"hints": hints}), "cpu")


def test_teacher_solves_synthesized_problems_and_refuses_what_it_cannot(problems):
    teacher = TemplateTeacher()
    found, _, _ = problems
    outputs = [teacher.solve(p, "cpu") for p in found]
    assert all(o.completion for o in outputs), [o.refusal for o in outputs]
    code = extract_code(outputs[0].completion)
    assert "class ModelNew" in code and "load_inline" in code and "1. Operators" in outputs[0].completion
    scan = TRANSPOSED.replace("torch.relu(x.t())", "torch.cumsum(x, 0)")
    refused = teacher.solve(Problem(id="m", source="builtin", reference=scan), "cpu")
    assert refused.completion is None and "no template" in refused.refusal
    assert "cuda_sources=cuda_source" in teacher.solve(found[0], "cuda").completion
    assert teacher.solve(found[0], "rocm").refusal


def test_teacher_covers_linear_matmul_and_views(verifier_cache):
    from schemas import load_config
    from schemas.records import Candidate
    from verifier.pool import LocalVerifierPool

    problem = Problem(id=Problem.make_id(LINEAR_AND_MATMUL), source="builtin", reference=LINEAR_AND_MATMUL)
    out = TemplateTeacher().solve(problem, "cpu")
    assert out.completion, out.refusal
    code = extract_code(out.completion)
    assert "kd_linear" in code and "kd_mm" in code and ".transpose(1, 2)" in code
    candidate = Candidate(id=Candidate.make_id(problem.id, code, "cpu"), problem_id=problem.id, source=code)
    with LocalVerifierPool(load_config(None, ["verifier.use_cache=false"]).verifier, verifier_cache) as pool:
        verdict = pool.verify(problem, candidate)
    assert verdict.passed, verdict.detail


@pytest.mark.skipif(not __import__("shutil").which("nvcc"), reason="needs nvcc (compile only, no GPU)")
def test_cuda_teacher_kernels_compile_with_nvcc_against_the_shim(problems, tmp_path):
    """The cuda template's kernels compile the way the fast build path compiles them (no GPU needed)."""
    import ast
    import subprocess

    from verifier.fastbuild import cuda_translation_units, nvcc_command

    teacher = TemplateTeacher()
    found, _, _ = problems
    extra = [Problem(id="lm", source="builtin", reference=LINEAR_AND_MATMUL),
             Problem(id="rd", source="builtin", reference=reductions(64, 32))]
    for i, problem in enumerate([*found[:3], *extra]):
        code = extract_code(teacher.solve(problem, "cuda").completion)
        strings = {t.id: n.value.value for n in ast.parse(code).body if isinstance(n, ast.Assign)
                   for t in n.targets if isinstance(t, ast.Name) and isinstance(n.value, ast.Constant)}
        _, kernels, _ = cuda_translation_units(strings["cpp_source"], strings["cuda_source"], ["forward"])
        src = tmp_path / f"k{i}.cu"
        src.write_text(kernels)
        result = subprocess.run(nvcc_command(src, tmp_path / f"k{i}.o", "90", ["--extended-lambda"]),
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout + result.stderr


def test_an_operator_probe_that_lost_a_wanted_op_is_not_believed(tmp_path):
    """NNSmith caches its operator probe per cache dir; a probe that once found a wanted op unsupported (CI lost
    Reshape to one) poisoned every later session of that run. A wanted op missing from the probe is probed
    again (the cache removed) before the config is called wrong; a name NNSmith does not know is refused at once."""
    import yaml

    from operators.synthesis import NNSmithSession, SynthesisConfigError

    NNSmithSession.open(tmp_path / "nnsmith", ["Reshape", "ReLU"], ["float32"])
    (cached,) = (tmp_path / "nnsmith").glob("*.yaml")
    topset = yaml.safe_load(cached.read_text())
    del topset["topset"]["core.Reshape"]  # what a flaky probe would have cached
    cached.write_text(yaml.safe_dump(topset))
    session = NNSmithSession.open(tmp_path / "nnsmith", ["Reshape", "ReLU"], ["float32"])
    assert session is not None and "core.Reshape" in yaml.safe_load(cached.read_text())["topset"]
    with pytest.raises(SynthesisConfigError, match=r"unknown NNSmith ops \['Reshap'\]; available"):
        NNSmithSession.open(tmp_path / "nnsmith", ["Reshap", "ReLU"], ["float32"])


def test_a_z3_timeout_left_by_an_earlier_generation_does_not_fail_the_operator_probe(tmp_path):
    """NNSmith's generation sets z3's global timeout and leaves it set; CI (busy) then failed a later session's
    operator probe with "Cannot solve the problem in Reshape". A 1 ms limit fails that probe whenever it
    applies: the probe must run without it, and leave it as it was."""
    import z3

    from operators.synthesis import NNSmithSession

    before = z3.get_param("timeout")
    z3.set_param("timeout", 1)
    try:
        session = NNSmithSession.open(tmp_path / "nnsmith", ["Reshape", "ReLU"], ["float32"])
        assert z3.get_param("timeout") == "1"
    finally:
        z3.set_param("timeout", before)
    assert session is not None
