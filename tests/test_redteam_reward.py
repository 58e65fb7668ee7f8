"""Red team of the reward path (cpu backend): candidates that pass without doing the operator's work in their own
kernel, or that make their timed calls cheaper than their work. Each is judged through the real verifier."""

from __future__ import annotations

import pytest

from schemas import load_config
from schemas.records import VerdictCategory as V
from tests.kernels import candidate, good, problem
from verifier.judge import Judge

# ATen's compute, found by argument-dependent lookup (no static rule names it), under a C++ guard that excludes the
# Python dispatch keys: the trials' DispatchRecorder (a TorchDispatchMode) sees nothing of it.
EXCLUSION = ("c10::impl::ExcludeDispatchKeyGuard no_modes(c10::DispatchKeySet({c10::DispatchKey::Python, "
             "c10::DispatchKey::PythonTLSSnapshot}));\n  return sigmoid(x) * w;\n  auto xc = x.contiguous();")
EXCLUDES_PYTHON_KEYS = good().replace("auto xc = x.contiguous();", EXCLUSION)
# The same with every name assembled by the preprocessor: the static rules read none of them, the dispatcher still
# runs the ops, and RecordFunction (verifier.legality.ObservedOps) sees them there.
PASTED = ("#include <cmath>\n#define KD_PASTE(a, b) a##b\n#define KD_CAT(a, b) KD_PASTE(a, b)\n"
          "#define KD_NS KD_CAT(c10::im, pl)\n#define KD_KEY KD_CAT(c10::Dispatch, Key)\n")
EXCLUDES_PYTHON_KEYS_PASTED = good().replace("#include <cmath>", PASTED).replace(
    "auto xc = x.contiguous();",
    "KD_NS::KD_CAT(ExcludeDispatch, KeyGuard) no_modes(KD_CAT(KD_KEY, Set)({KD_KEY::Python, "
    "KD_KEY::KD_CAT(PythonTLS, Snapshot)}));\n  return sigmoid(x) * w;\n  auto xc = x.contiguous();")


@pytest.fixture(scope="module")
def judge(tmp_path_factory):
    cfg = load_config(None, ["verifier.memory_limit_mb=2048", "verifier.use_cache=false",
                             "verifier.spare_sandboxes=0", "verifier.trials=3", "verifier.timed=false",
                             "verifier.run_timeout_s=10"]).verifier
    with Judge(cfg, tmp_path_factory.mktemp("reward") / "cache") as j:
        yield j


def test_the_dispatch_keys_excluded_in_cpp_are_named_by_the_static_rules(judge):
    verdict = judge.verify(problem(), candidate("excludes_python_keys", EXCLUDES_PYTHON_KEYS))
    assert (verdict.category, verdict.rule) == (V.illegal, "torch-internals"), verdict.detail


def test_aten_compute_hidden_from_the_dispatch_mode_is_seen_in_the_dispatcher(judge):
    verdict = judge.verify(problem(), candidate("excludes_python_keys_pasted", EXCLUDES_PYTHON_KEYS_PASTED))
    assert (verdict.category, verdict.rule) == (V.illegal, "torch-compute"), verdict.detail
    assert "aten::sigmoid" in verdict.detail


def test_an_honest_kernel_still_passes_under_the_dispatchers_observer(judge):
    verdict = judge.verify(problem(), candidate("correct", good()))
    assert verdict.category == V.passed, verdict.detail
