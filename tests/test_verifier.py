"""The cpu verification backend, for real: every candidate is compiled and run in a sandbox."""

import time

import pytest

from schemas import load_config
from schemas.records import VerdictCategory as V
from tests.kernels import CANDIDATES, candidate, problem
from verifier.pool import LocalVerifierPool

EXPECTED = {
    "pass": V.passed, "wrong_output": V.wrong_output, "partial": V.partial, "unwritten": V.wrong_output,
    "compile_error": V.compile_error, "syntax_error": V.compile_error, "segfault": V.runtime_error,
    "raises": V.runtime_error, "hang": V.timeout, "torch_compute": V.illegal, "torch_in_cpp": V.illegal,
    "no_own_kernel": V.illegal, "exit": V.illegal, "patch_torch": V.illegal, "mutates_input": V.illegal,
    "inherits_reference": V.illegal, "library_include": V.illegal, "no_model_new": V.compile_error,
}


@pytest.fixture(scope="module")
def verdicts(verifier_cache):
    cfg = load_config(None, ["verifier.run_timeout_s=4", "verifier.workers=2", "verifier.use_cache=false", "verifier.trials=5"]).verifier
    with LocalVerifierPool(cfg, verifier_cache) as pool:
        pairs = [(problem(), candidate(name)) for name in EXPECTED]
        by_id = {v.candidate_id: v for v in pool.verify_many(pairs)}
    return {name: by_id[c.id] for name, (_, c) in zip(EXPECTED, pairs)}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_category(verdicts, name):
    v = verdicts[name]
    assert v.category == EXPECTED[name], f"{name}: {v.category} {v.detail}"


def test_pass_is_correct_legal_and_timed(verdicts):
    v = verdicts["pass"]
    assert v.compiled and v.correct and v.legal and v.pass_fraction == 1.0
    assert v.speedup_vs_eager is not None and v.speedup_vs_eager > 0


def test_partial_pass_fraction(verdicts):
    assert verdicts["partial"].pass_fraction == pytest.approx(1 / 5)  # correct on the first of 5 trials
    assert verdicts["wrong_output"].pass_fraction == 0.0


def test_feedback_is_useful_and_bounded(verdicts):
    assert "candidate.cpp:" in verdicts["compile_error"].detail and "undeclared_name" in verdicts["compile_error"].detail
    assert "max abs err" in verdicts["wrong_output"].detail
    assert "NaN" in verdicts["unwritten"].detail
    assert "SIGSEGV" in verdicts["segfault"].detail
    assert "ValueError: boom" in verdicts["raises"].detail
    assert "aten::sigmoid" in verdicts["torch_compute"].detail
    assert "line 1" in verdicts["syntax_error"].detail
    assert all(len(v.detail) <= 1500 for v in verdicts.values())


def test_illegal_verdicts_name_their_rule(verdicts):
    rules = {name: verdicts[name].rule for name, cat in EXPECTED.items() if cat == V.illegal}
    assert rules == {"torch_compute": "torch-compute", "torch_in_cpp": "torch-compute", "no_own_kernel": "no-own-kernel",
                     "exit": "process-control", "patch_torch": "patching", "mutates_input": "input-mutation",
                     "inherits_reference": "reference-reuse", "library_include": "library-math"}


def test_static_rejections_take_milliseconds(verdicts):
    for name in ("syntax_error", "exit", "patch_torch", "no_model_new"):
        assert verdicts[name].run_seconds + verdicts[name].compile_seconds < 0.5


def test_pool_survives_crashes_and_caches(verifier_cache, tmp_path):
    """After a segfault and a hang, the same pool still judges; a repeat verdict comes from the cache."""
    cfg = load_config(None, ["verifier.run_timeout_s=3", "verifier.workers=1"]).verifier
    with LocalVerifierPool(cfg, verifier_cache) as pool:
        crash = pool.verify(problem(), candidate("segfault"))
        hang = pool.verify(problem(), candidate("hang"))
        ok = pool.verify(problem(), candidate("pass"))
        start = time.perf_counter()
        again = pool.verify(problem(), candidate("pass"))
        elapsed = time.perf_counter() - start
    assert (crash.category, hang.category, ok.category) == (V.runtime_error, V.timeout, V.passed)
    assert again.cached and again.category == V.passed and not ok.cached
    assert elapsed < 1.0


def test_identical_sources_build_once(verifier_cache):
    from verifier.fastbuild import FastInlineBuilder

    src = "torch::Tensor twice(torch::Tensor x) { auto o = torch::empty_like(x); " \
          "for (int64_t i = 0; i < x.numel(); ++i) o.data_ptr<float>()[i] = 2 * x.data_ptr<float>()[i]; return o; }"
    first = FastInlineBuilder(verifier_cache)
    first.load_inline("twice", src, functions=["twice"])
    second = FastInlineBuilder(verifier_cache)
    module = second.load_inline("twice", src, functions=["twice"])
    import torch

    assert torch.equal(module.twice(torch.ones(3)), torch.full((3,), 2.0))
    assert second.stats.builds == 0 and second.stats.cache_hits == 1
