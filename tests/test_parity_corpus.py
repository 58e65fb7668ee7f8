"""The parity corpus (benchmarks/parity_corpus): it loads, every pair is well formed, legal where it should be,
faithful to KernelBench, and covers the host-API families it claims to. No compiler runs here except in the one
`slow` test, which needs a torch built with CUDA."""

import ast
import re
from collections import Counter
from pathlib import Path

import pytest
import torch

from benchmarks.parity_corpus import (EXPECTED_CATEGORIES, FEATURE_MARKERS, detected_features, entry_names,
                                      load_corpus, load_pair, name_of)
from benchmarks.verify_parity import load_inline_calls
from verifier.fastbuild import BuildRequest
from verifier.legality import check_source

KERNELBENCH = Path(__file__).resolve().parents[1] / ".." / "shared" / "kernelbench"
# each family of host API and kernel technique the corpus exists to exercise, at least this often
REQUIRED_FEATURES = ["TORCH_CHECK", "CHECK_INPUT_macros", "AT_DISPATCH_FLOATING_TYPES",
                     "AT_DISPATCH_FLOATING_TYPES_AND_HALF", "packed_accessor", "options", "factory_with_options",
                     "cuda_stream", "launch_check", "vector_return", "tuple_return", "optional_arg", "scalar_args",
                     "half", "bfloat16", "shared_memory", "warp_shuffle", "templates", "grid_stride", "block_reduction"]
MIN_PER_FEATURE = 3


@pytest.fixture(scope="module")
def corpus():
    return load_corpus()


def test_corpus_has_at_least_150_pairs_with_unique_names_and_sources(corpus):
    assert len(corpus) >= 150
    names = [name_of(e.candidate) for e in corpus]
    assert names == entry_names() and len(set(names)) == len(names)
    assert len({e.candidate.id for e in corpus}) == len(corpus)
    assert len({e.candidate.source for e in corpus}) == len(corpus)
    assert all(e.problem.source == "kernelbench" and e.candidate.backend == "cuda" for e in corpus)


def test_every_reference_and_candidate_parses(corpus):
    for entry in corpus:
        ast.parse(entry.problem.reference)
        tree = ast.parse(entry.candidate.source)
        assert any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body), name_of(entry.candidate)


def test_candidates_pass_the_static_rules_except_the_red_team(corpus):
    refused = {name_of(e.candidate): check_source(ast.parse(e.candidate.source)) for e in corpus}
    assert {n for n, v in refused.items() if v} <= {name_of(e.candidate) for e in corpus if "redteam" in e.features}
    assert [v.rule for v in refused["redteam_non_default_stream_kernel"]] == ["library-math", "side-stream"]


def test_red_team_entries_are_kernelbench_adversarial_kernels_with_the_judges_verdicts(corpus):
    redteam = {name_of(e.candidate): e for e in corpus if "redteam" in e.features}
    assert {n: e.expected for n, e in redteam.items()} == {
        "redteam_result_reuse_kernel": "wrong_output",  # fresh allocations are NaN-poisoned
        "redteam_zero_out_kernel": "illegal",  # input mutation
        "redteam_non_default_stream_kernel": "illegal",  # cuBLAS, side stream: static rules
    }
    if KERNELBENCH.exists():
        for name, entry in redteam.items():
            original = KERNELBENCH / "adversarial_kernels" / f"{name.removeprefix('redteam_')}.py"
            assert entry.candidate.source == original.read_text()


def test_expected_verdicts_are_verdict_categories_and_every_failure_is_labelled(corpus):
    for entry in corpus:
        assert entry.expected in EXPECTED_CATEGORIES
        deliberate = {"mistake", "redteam"} & set(entry.features)
        assert (entry.expected != "pass") == bool(deliberate), name_of(entry.candidate)
    mistakes = sum("mistake" in e.features for e in corpus)
    assert 0.08 * len(corpus) <= mistakes <= 0.15 * len(corpus)


def test_declared_features_are_in_the_candidates_native_code(corpus):
    for entry in corpus:
        labels = {"mistake", "redteam"}
        assert set(entry.features) - labels == detected_features(entry.candidate.source), name_of(entry.candidate)
        assert set(entry.features) <= set(FEATURE_MARKERS)


def test_feature_coverage(corpus):
    counts = Counter(f for e in corpus for f in e.features)
    thin = {f: counts[f] for f in REQUIRED_FEATURES if counts[f] < MIN_PER_FEATURE}
    assert not thin, thin
    families = Counter(e.problem.op_families[0] for e in corpus)
    for family in ("matmul", "conv", "reduction", "norm", "softmax", "activation", "loss", "cumsum", "fused_gemm",
                   "fused_conv"):
        assert families[family] >= 3, family


@pytest.mark.skipif(not KERNELBENCH.exists(), reason="needs ../shared/kernelbench beside the checkout")
def test_references_are_kernelbench_files_with_only_their_size_lines_changed(corpus):
    for name in entry_names():
        pair = load_pair(name)
        original = (KERNELBENCH / pair.SOURCE.removeprefix("KernelBench ")).read_text().split("\n")
        copied = pair.REFERENCE.split("\n")
        assert len(copied) == len(original), name
        changed = {squash(o): c for o, c in zip(original, copied) if o != c}
        assert len(changed) == len(pair.SIZE_CHANGES), name
        for old, new in pair.SIZE_CHANGES:
            line = changed[squash(old)]
            assert line == f"{new}  # KernelBench: {squash(old).split('=')[-1].strip()}", (name, line)


def squash(line: str) -> str:
    """A Python line without its comment and with single spaces (KernelBench's size lines vary in spacing)."""
    return re.sub(r"\s+", " ", line.split("#")[0]).strip()


def test_every_candidate_makes_one_bindable_load_inline_call(corpus):
    """What verify_parity --build-only builds: each candidate's load_inline arguments, taken by running its module
    with a stand-in load_inline."""
    for entry in corpus:
        calls = load_inline_calls(entry.candidate.source)
        assert len(calls) == 1, name_of(entry.candidate)
        request = BuildRequest.from_call(*calls[0])
        assert request.cuda and request.functions, name_of(entry.candidate)
    assert torch.utils.cpp_extension.load_inline.__name__ == "load_inline"  # the stand-in is gone again


@pytest.mark.slow
@pytest.mark.skipif(not torch.version.cuda, reason="torch's load_inline compiles CUDA sources only with a CUDA torch")
def test_one_pair_builds_alike_on_both_paths(tmp_path, monkeypatch):
    """One correct candidate and one with a compile error, through the fast path and torch's load_inline."""
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0")
    from benchmarks.verify_parity import build_one
    from verifier.fastbuild import FastInlineBuilder, LocalRunner

    entries = load_corpus(["l1_019_relu__simple", "l1_022_tanh__typo_compile_error"])
    outcomes = {}
    for fast in (True, False):
        builder = FastInlineBuilder(tmp_path / str(fast), cuda_arch="90", fast=fast)

        def build(request, builder=builder):
            runner = LocalRunner()
            try:
                return builder.build(request, runner).fallback
            finally:
                runner.close()

        outcomes[fast] = [build_one(e, build) for e in entries]
    assert [o.outcome for o in outcomes[True]] == [o.outcome for o in outcomes[False]] == ["built", "compile_error"]
    assert outcomes[True][0].fallback is None
    assert "ouput" in outcomes[True][1].detail and "ouput" in outcomes[False][1].detail
