"""Red team of the reward path (cpu backend): candidates that pass without doing the operator's work in their own
kernel, or that make their timed calls cheaper than their work. Each is judged through the real verifier."""

from __future__ import annotations

import json

import pytest

from schemas import load_config
from schemas.records import VerdictCategory as V
from tests.kernels import CALL, MANY_SECTIONS, candidate, good, problem, with_forward
from verifier.judge import Judge

# ATen's compute, found by argument-dependent lookup (no static rule names it), under a C++ guard that excludes the
# Python dispatch keys: the trials' DispatchRecorder (a TorchDispatchMode) sees nothing of it.
EXCLUSION = ("c10::impl::ExcludeDispatchKeyGuard no_modes(c10::DispatchKeySet({c10::DispatchKey::Python, "
             "c10::DispatchKey::PythonTLSSnapshot}));\n  return sigmoid(x) * w;\n  auto xc = x.contiguous();")
EXCLUDES_PYTHON_KEYS = good().replace("auto xc = x.contiguous();", EXCLUSION)
# The same with every name assembled by the preprocessor: the static rules read none of them, the dispatcher still
# runs the ops, and RecordFunction (verifier/op_watch.py) sees them there.
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


SHA256 = '''
def _sha256_hex(data):
    """SHA-256 in plain Python (hashlib is no module a candidate may import): the judge's public seeds."""
    k = [int(c, 16) for c in (
        "428a2f98 71374491 b5c0fbcf e9b5dba5 3956c25b 59f111f1 923f82a4 ab1c5ed5 d807aa98 12835b01 243185be 550c7dc3 "
        "72be5d74 80deb1fe 9bdc06a7 c19bf174 e49b69c1 efbe4786 0fc19dc6 240ca1cc 2de92c6f 4a7484aa 5cb0a9dc 76f988da "
        "983e5152 a831c66d b00327c8 bf597fc7 c6e00bf3 d5a79147 06ca6351 14292967 27b70a85 2e1b2138 4d2c6dfc 53380d13 "
        "650a7354 766a0abb 81c2c92e 92722c85 a2bfe8a1 a81a664b c24b8b70 c76c51a3 d192e819 d6990624 f40e3585 106aa070 "
        "19a4c116 1e376c08 2748774c 34b0bcb5 391c0cb3 4ed8aa4a 5b9cca4f 682e6ff3 748f82ee 78a5636f 84c87814 8cc70208 "
        "90befffa a4506ceb bef9a3f7 c67178f2").split()]
    h = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]
    rotr = lambda x, n: ((x >> n) | (x << (32 - n))) & 0xFFFFFFFF
    data = bytes(data) + b"\\x80" + b"\\x00" * ((55 - len(data)) % 64) + (8 * len(data)).to_bytes(8, "big")
    for at in range(0, len(data), 64):
        w = [int.from_bytes(data[at + 4 * i:at + 4 * i + 4], "big") for i in range(16)]
        for i in range(16, 64):
            s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3)
            s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10)
            w.append((w[i - 16] + s0 + w[i - 7] + s1) & 0xFFFFFFFF)
        a, b, c, d, e, f, g, hh = h
        for i in range(64):
            t1 = (hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i]) & 0xFFFFFFFF
            t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) & 0xFFFFFFFF
            a, b, c, d, e, f, g, hh = (t1 + t2) & 0xFFFFFFFF, a, b, c, (d + t1) & 0xFFFFFFFF, e, f, g
        h = [(x + y) & 0xFFFFFFFF for x, y in zip(h, [a, b, c, d, e, f, g, hh])]
    return "".join(f"{x:08x}" for x in h)
'''


# Every trial's and timed call's inputs drawn in __init__ from the judge's seeds as they would be from public values
# (the reference's hash, the run's seed 0; verifier.reference.trial_seed), their outputs computed there by the
# kernel, off the clock; forward only looks its inputs up (a miss: a copy of them). With public seeds it passed every trial
# and every checked timed call, a forward that computes nothing (a matmul's lookup ran 10x faster than its kernel).
PREDICTS_SEEDS = good().replace('functions=["fwd"])', 'functions=["fwd", "lookup"])').replace(
    "  return out;\n}\n", '''  return out;
}
torch::Tensor lookup(torch::Tensor x, torch::Tensor keys, torch::Tensor table) {
  const float* a = x.data_ptr<float>(); const float* k = keys.data_ptr<float>();
  int64_t n = x.numel();
  for (int64_t r = 0; r < keys.size(0); ++r)
    if (k[3 * r] == a[0] && k[3 * r + 1] == a[n / 2] && k[3 * r + 2] == a[n - 1]) {
      auto out = torch::empty_like(x);
      std::memcpy(out.data_ptr<float>(), table.data_ptr<float>() + r * n, n * sizeof(float));
      return out;
    }
  auto wrong = torch::empty_like(x);  // a miss: the input itself, wrong
  std::memcpy(wrong.data_ptr<float>(), a, n * sizeof(float));
  return wrong;
}
''', 1).replace("#include <cmath>", "#include <cmath>\n#include <cstring>").replace(
    "        self.w = nn.Parameter(torch.randn(8))\n", '''        self.w = nn.Parameter(torch.randn(8))
        digest = lambda *parts: _sha256_hex(b"".join(p.encode() + b"\\x00" for p in parts))
        problem_id = digest(REFERENCE)[:16]
        keys, table = [], []
        for index in [*range(8), *range(10_000, 10_100)]:
            torch.manual_seed(int(digest(problem_id, str(index), "0")[:8], 16))
            x = torch.randn(4, 8)
            keys.append(torch.stack([x.flatten()[0], x.flatten()[16], x.flatten()[31]]))
            table.append(mod.fwd(x, self.w.detach()))
        self.keys, self.table = torch.stack(keys), torch.stack(table)
''', 1).replace("return mod.fwd(x, self.w)", "return mod.lookup(x, self.keys, self.table)").replace(
    "\n\n\nclass ModelNew", "\n" + SHA256 + "\n\nclass ModelNew", 1)


def test_no_candidate_draws_the_trials_or_timed_calls_inputs_ahead(tmp_path):
    from tests.kernels import REFERENCE

    source = PREDICTS_SEEDS.replace("REFERENCE", repr(REFERENCE))
    cfg = load_config(None, ["verifier.memory_limit_mb=2048", "verifier.use_cache=false", "verifier.spare_sandboxes=0",
                             "verifier.trials=3", "verifier.timing_runs=5", "verifier.run_timeout_s=10"]).verifier
    with Judge(cfg, tmp_path / "cache") as judge:
        verdict = judge.verify(problem(), candidate("predicts_seeds", source))
    assert verdict.category == V.wrong_output, verdict.detail
    assert "seed" not in verdict.detail  # a trial's seed told in feedback would let a later candidate draw it


# Native code running Python in the sandbox's own interpreter (the C API, its names assembled by the preprocessor:
# the rules over the text read none): its first call replaces the harness's dispatch recorder and dispatcher
# observer with ones that see nothing, and every later trial computes with ATen — a legal pass, before.
INJECTED = """import verifier.sandbox as S
class _Quiet(S.DispatchRecorder):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))
class _Blind(S.OpWatch):
    def take(self):
        return {}
S.DispatchRecorder = _Quiet
S.OpWatch.take = _Blind.take
"""
RUNS_PYTHON = good().replace("#include <cmath>", (
    "#include <cmath>\n#define KD_PASTE(a, b) a##b\nextern \"C\" int KD_PASTE(P, yRun_SimpleString)(const char*);\n"
    "extern \"C\" int KD_PASTE(P, yGILState_Ensure)();\nextern \"C\" void KD_PASTE(P, yGILState_Release)(int);\n")).replace(
    "auto xc = x.contiguous();",
    "static int calls = 0;\n  if (++calls == 1) {\n    int g = KD_PASTE(P, yGILState_Ensure)();\n"
    "    int rc = KD_PASTE(P, yRun_SimpleString)(" + json.dumps(INJECTED) + ");\n"
    "    KD_PASTE(P, yGILState_Release)(g);\n    TORCH_CHECK(rc == 0, \"injection failed\");\n"
    "  } else return sigmoid(x) * w;\n  auto xc = x.contiguous();")


def test_native_code_that_imports_the_interpreter_is_refused_however_it_spells_it(judge):
    verdict = judge.verify(problem(), candidate("runs_python", RUNS_PYTHON))
    assert (verdict.category, verdict.rule) == (V.illegal, "interpreter-api"), verdict.detail
    assert "PyRun_SimpleString" in verdict.detail


def test_the_imports_of_a_shared_object_are_read_as_the_linker_wrote_them():
    """check_artifact_symbols: a fast-path object imports nothing of the interpreter; a pybind11 module (torch's
    own load_inline) its glue, never what runs or imports code."""
    from verifier.legality import check_artifact_symbols, undefined_symbols

    assert undefined_symbols(b"not an ELF") == set()
    module = [v.rule for v in check_artifact_symbols(_elf_importing(["PyObject_GetAttrString", "sinf"]), True)]
    fast = [v.rule for v in check_artifact_symbols(_elf_importing(["PyObject_GetAttrString", "sinf"]), False)]
    runs = [v.rule for v in check_artifact_symbols(_elf_importing(["PyRun_SimpleString"]), True)]
    assert (module, fast, runs) == ([], ["interpreter-api"], ["interpreter-api"])


def _elf_importing(names: list[str]) -> bytes:
    """A minimal ELF64 with a .dynsym of undefined symbols `names` (and its string table)."""
    import struct

    strtab = b"\0" + b"".join(n.encode() + b"\0" for n in names)
    symbols, at = [b"\0" * 24], 1
    for n in names:
        symbols.append(struct.pack("<IBBHQQ", at, 0x12, 0, 0, 0, 0))
        at += len(n) + 1
    dynsym = b"".join(symbols)
    header_size, dynsym_at = 64, 64
    strtab_at = dynsym_at + len(dynsym)
    shoff = strtab_at + len(strtab)
    header = b"\x7fELF" + bytes([2, 1, 1]) + b"\0" * 9 + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0,
                                                                      header_size, 0, 0, 64, 3, 2)
    sections = [b"\0" * 64,
                struct.pack("<IIQQQQIIQQ", 0, 11, 0, 0, dynsym_at, len(dynsym), 2, 1, 8, 24),
                struct.pack("<IIQQQQIIQQ", 0, 3, 0, 0, strtab_at, len(strtab), 0, 0, 1, 0)]
    return header + dynsym + strtab + b"".join(sections)


def test_where_the_reference_is_nan_or_inf_only_the_same_value_matches():
    """A reference that is NaN or ±Inf somewhere (log of a negative draw): any finite value there passed — the
    difference is NaN or Inf against an Inf bound — and the faithful kernel's NaN failed (NaN never passed)."""
    import torch

    from verifier.reference import compare_outputs

    x = torch.randn(1000, generator=torch.Generator().manual_seed(0))
    expected = torch.log(x)
    anything = torch.where(expected.isnan(), torch.full_like(expected, 12345.0), expected)
    assert compare_outputs([expected], [torch.log(x)], "default") is None
    assert "reference is NaN or Inf" in compare_outputs([expected], [anything], "default").message
    infinite = torch.tensor([float("inf"), -float("inf"), 1.0])
    assert compare_outputs([infinite], [infinite.clone()], "default") is None
    for wrong in ([0.0, -float("inf"), 1.0], [-float("inf"), float("inf"), 1.0], [float("nan"), -float("inf"), 1.0]):
        assert compare_outputs([infinite], [torch.tensor(wrong)], "default") is not None, wrong
    unwritten = compare_outputs([infinite], [torch.tensor([float("inf"), -float("inf"), float("nan")])], "default")
    assert "NaN/Inf values" in unwritten.message  # NaN where the reference is finite: as before


# The computation in Python on the host, the kernel called for show (own_calls > 0): numpy's arithmetic reached with
# no numpy imported and no .numpy() called (an alias of the method), and element by element through float(x[i, j])
# and out[i, j] = v (select, _local_scalar_dense, fill_: all glue). Both passed as legal.
NUMPY_BY_ALIAS = with_forward(
    "mod.fwd(x, self.w)\n        to_host = x.numpy\n        a = to_host()\n        w_host = self.w.detach().numpy\n"
    "        r = 1.0 / (1.0 + 2.718281828459045 ** (-a)) * w_host()\n        out = torch.empty_like(x)\n"
    "        into = out.numpy\n        into()[...] = r\n        return out")
PYTHON_ELEMENTWISE = with_forward(
    "mod.fwd(x, self.w)\n        out = torch.empty_like(x)\n        for i in range(x.shape[0]):\n"
    "            for j in range(x.shape[1]):\n"
    "                out[i, j] = 1.0 / (1.0 + 2.718281828459045 ** (-float(x[i, j]))) * float(self.w[j])\n"
    "        return out")


@pytest.mark.parametrize("name", ["numpy_by_alias", "python_elementwise"])
def test_compute_in_python_on_the_host_is_not_the_candidates_kernel(judge, name):
    source = {"numpy_by_alias": NUMPY_BY_ALIAS, "python_elementwise": PYTHON_ELEMENTWISE}[name]
    verdict = judge.verify(problem(), candidate(name, source))
    assert (verdict.category, verdict.rule) == (V.illegal, "host-compute"), verdict.detail


# The kernel's own computation in the correctness trials, ATen's from the first warm-up call on (the 3 trials
# counted; the trials' poisoned allocations tell them apart too). Before the op watch, warm-up and timed calls ran with
# no recorder or observer: their outputs are right, so nothing said the timed work was not the candidate's. On a
# 384x384 matmul a naive kernel passed at 0.05x eager, the same kernel with ATen's matmul when timed at 0.58x. In C++
# (ATen by argument-dependent lookup) and in Python (a tensor method: no static rule names it), the same.
ATEN_WHEN_TIMED = good().replace("auto xc = x.contiguous();",
                                 "static int calls = 0;\n  if (++calls > 3) return sigmoid(x) * w;\n"
                                 "  auto xc = x.contiguous();")
PYTHON_ATEN_WHEN_TIMED = good().replace("mod = load_inline", "CALLS = []\nmod = load_inline").replace(
    CALL, "CALLS.append(1)\n        if len(CALLS) > 3:\n            return x.sigmoid() * self.w\n        " + CALL)


@pytest.mark.parametrize("name", ["cpp", "python"])
def test_aten_compute_in_the_timed_calls_alone_is_illegal(tmp_path, name):
    cfg = load_config(None, ["verifier.memory_limit_mb=2048", "verifier.use_cache=false", "verifier.spare_sandboxes=0",
                             "verifier.trials=3", "verifier.timing_runs=5", "verifier.run_timeout_s=10"]).verifier
    source = {"cpp": ATEN_WHEN_TIMED, "python": PYTHON_ATEN_WHEN_TIMED}[name]
    with Judge(cfg, tmp_path / "cache") as judge:
        verdict = judge.verify(problem(), candidate(f"aten_when_timed_{name}", source))
        honest = judge.verify(problem(), candidate("correct", good()))
    assert (verdict.category, verdict.rule) == (V.illegal, "torch-compute"), verdict.detail
    assert "aten::sigmoid" in verdict.detail and "timed calls" in verdict.detail
    assert honest.category == V.passed and honest.speedup_vs_eager is not None, honest.detail  # timed: its calls all glue


# The same injection as RUNS_PYTHON through torch's own load_inline (explicit pybind11: a pybind11 module), with
# only what pybind11's glue imports anyway (PyEval_GetBuiltins, then the builtins' exec); and pybind11's API with no
# pasted name at all (`pybind11::cast(x).attr(...)` walks from a tensor to every object: here to the builtins'
# exec). The module's glue imports the interpreter, so the shared object's imports cannot tell; the judge writes the
# glue itself and refuses what the candidate's own functions reach (verifier.legality.check_module_objects).
RUNS_PYTHON_AS_MODULE = good().replace("#include <cmath>", "#include <cmath>\n#define KD_PASTE(a, b) a##b\n").replace(
    "auto xc = x.contiguous();",
    "static int calls = 0;\n  if (++calls == 1) {\n"
    "    auto builtins = pybind11::reinterpret_borrow<pybind11::dict>(KD_PASTE(P, yEval_GetBuiltins)());\n"
    "    builtins[\"ex\" \"ec\"](" + json.dumps(INJECTED) + ");\n"
    "  } else return sigmoid(x) * w;\n  auto xc = x.contiguous();").replace('functions=["fwd"])', ")").replace(
    "  return out;\n}\n", "  return out;\n}\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"fwd\", &fwd); }\n", 1)
RUNS_PYTHON_BY_ATTRIBUTES = RUNS_PYTHON_AS_MODULE.replace(
    "auto builtins = pybind11::reinterpret_borrow<pybind11::dict>(KD_PASTE(P, yEval_GetBuiltins)());",
    "auto builtins = pybind11::cast(x).attr(\"__class__\").attr(\"__init__\").attr(\"__globals__\")"
    "[\"__buil\" \"tins__\"];")
# An honest module bound under another name (the fast path binds only same-named functions): torch's own build
# with the judge's glue, passed
HONEST_RENAMED = good().replace('functions=["fwd"])', ")").replace("mod.fwd(", "mod.forward(").replace(
    "  return out;\n}\n", "  return out;\n}\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n  // the kernel\n"
    "  m.def(\"forward\", &fwd, \"sigmoid times w\", py::arg(\"x\"), py::arg(\"w\"));\n}\n", 1)
# Glue of the candidate's own (a lambda would run with the glue's access to the interpreter): refused as a build
LAMBDA_GLUE = HONEST_RENAMED.replace("m.def(\"forward\", &fwd, \"sigmoid times w\", py::arg(\"x\"), py::arg(\"w\"));",
                                     "m.def(\"forward\", [](torch::Tensor x, torch::Tensor w) { return fwd(x, w); });")


@pytest.mark.parametrize("name", ["getbuiltins", "attributes"])
def test_native_code_that_runs_python_through_pybind11_is_refused(judge, name):
    source = {"getbuiltins": RUNS_PYTHON_AS_MODULE, "attributes": RUNS_PYTHON_BY_ATTRIBUTES}[name]
    verdict = judge.verify(problem(), candidate(f"runs_python_as_module_{name}", source))
    assert (verdict.category, verdict.rule) == (V.illegal, "interpreter-api"), verdict.detail


def test_explicit_bindings_are_the_judges_glue(judge):
    honest = judge.verify(problem(), candidate("honest_renamed", HONEST_RENAMED))
    assert honest.category == V.passed, honest.detail
    assert honest.build_fallbacks == ["bindings under other names"]
    lambda_glue = judge.verify(problem(), candidate("lambda_glue", LAMBDA_GLUE))
    assert lambda_glue.category == V.compile_error and "may hold only m.def" in lambda_glue.detail, lambda_glue.detail


# ATen's CPU kernel called by its own name, around the dispatcher (no dispatch mode, no RecordFunction callback sees
# it): declared by hand and its namespace assembled by the preprocessor, so the rules over the text read nothing.
DIRECT_KERNEL = good(body="o[i] = sp[i] * b[i % m];").replace(
    "#include <cmath>", "#include <cmath>\n#define KD_PASTE(a, b) a##b\n#define KD_CAT(a, b) KD_PASTE(a, b)\n"
                        "namespace at { namespace KD_CAT(c, pu) { at::Tensor sigmoid(const at::Tensor&); } }\n").replace(
    "auto out = torch::empty_like(xc);",
    "auto out = torch::empty_like(xc);\n  auto sv = at::KD_CAT(c, pu)::sigmoid(xc);\n  const float* sp = sv.data_ptr<float>();")
# The dispatcher's observers switched off from C++ (RecordFunction for this thread, the Python keys for the dispatch
# mode), every name pasted together: after it, ATen's compute runs in plain sight of nothing.
OBSERVERS_OFF = EXCLUDES_PYTHON_KEYS_PASTED.replace(
    "#define KD_NS", "#define KD_RF KD_CAT(enableRecord, Function)\nnamespace at { void KD_RF(bool); }\n#define KD_NS").replace(
    "return sigmoid(x) * w;", "at::KD_RF(false);\n  return sigmoid(x) * w;")


@pytest.mark.parametrize("name, rule, named", [("direct_kernel", "torch-compute", "at::cpu::sigmoid"),
                                               ("observers_off", "torch-internals", "enableRecordFunction")])
def test_what_the_compiled_code_imports_is_checked_whatever_its_text_spells(judge, name, rule, named):
    source = {"direct_kernel": DIRECT_KERNEL, "observers_off": OBSERVERS_OFF}[name]
    verdict = judge.verify(problem(), candidate(name, source))
    assert (verdict.category, verdict.rule) == (V.illegal, rule), verdict.detail
    assert named in verdict.detail


# Code of the candidate's that the judge's glue would call — here a macro over the glue's own `wrap_pybind_function`,
# which ran Python when the module was imported (before any trial: the recorder and the op watch replaced, every
# forward computing with ATen), while the glue shared the candidate's translation unit. The glue is now a file of its
# own (verifier.fastbuild.module_glue), so the macro reaches nothing, and the forward's ATen is seen.
HIJACKS_THE_GLUE = good(body="o[i] = 0.0f;").replace("#include <cmath>", (
    "#include <cmath>\n#define KD_PASTE(a, b) a##b\n"
    "template <typename F> F kd_first(F f) {\n"
    "  auto builtins = pybind11::reinterpret_borrow<pybind11::dict>(KD_PASTE(P, yEval_GetBuiltins)());\n"
    "  builtins[\"ex\" \"ec\"](" + json.dumps(INJECTED) + ");\n  return f;\n}\n"
    "#define wrap_pybind_function(f) wrap_pybind_function(kd_first(f))\n")).replace(
    "  return out;\n}\n", "  return sigmoid(x) * w;\n}\n", 1).replace('functions=["fwd"])', ")").replace(
    "mod.fwd(", "mod.forward(").replace(
    "  return sigmoid(x) * w;\n}\n", "  return sigmoid(x) * w;\n}\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { "
    "m.def(\"forward\", &fwd); }\n", 1)


def test_code_the_glue_calls_cannot_reach_the_interpreter(judge):
    verdict = judge.verify(problem(), candidate("hijacks_the_glue", HIJACKS_THE_GLUE))
    assert (verdict.category, verdict.rule) == (V.illegal, "torch-compute"), verdict.detail
    assert "aten::sigmoid" in verdict.detail


# -- what runs after the forward: the harness reading the outputs and the inputs ------------------------------------
# Once the forward returns, the harness reads its outputs (to seal them, to keep a timed call's) and checksums its
# inputs, out of the dispatch recorder's and the op watch's windows. Code of the candidate's that runs then — a method
# of an output or input object it chose or changed — computed the operator unseen, or forged the evidence of its own
# kernel's calls. The static rules would refuse most of these mechanisms by name; judged with static_rules=False, these
# pin the sandbox's own layer.
MATMUL = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(256, 256), torch.randn(256, 256)]


def get_init_inputs():
    return []
'''
NAIVE_MATMUL = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = r"""
#include <torch/extension.h>
torch::Tensor mm(torch::Tensor a, torch::Tensor b) {
  auto ac = a.contiguous();
  auto bc = b.contiguous();
  int64_t n = ac.size(0), k = ac.size(1), m = bc.size(1);
  auto out = torch::empty({n, m}, ac.options());
  const float* x = ac.data_ptr<float>();
  const float* y = bc.data_ptr<float>();
  float* o = out.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      float s = 0.0f;
      for (int64_t p = 0; p < k; ++p) s += x[i * k + p] * y[p * m + j];
      o[i * m + j] = s;
    }
  return out;
}
"""
mod = load_inline(name="mm", cpp_sources=src, functions=["mm"])

PRELUDE

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return mod.mm(a, b)
'''


def matmul_problem():
    from schemas.records import Problem

    return Problem(id=Problem.make_id(MATMUL), source="test", reference=MATMUL, name="matmul")


def matmul_candidate(name: str, prelude: str, forward: str | None = None):
    from schemas.records import Candidate

    source = NAIVE_MATMUL.replace("PRELUDE", prelude)
    if forward is not None:
        source = source.replace("return mod.mm(a, b)", forward)
    p = matmul_problem()
    return Candidate(id=Candidate.make_id(p.id, source, "cpu"), problem_id=p.id, source=source, origin=name)


# An output of a tensor subclass: an empty placeholder of the right shape, the kernel called on one row for show
# (own_calls > 0). Its __torch_function__ computes the matmul with ATen when the harness seals it (.detach(), after the
# forward: a trial's outputs), and keeps it lazy when the harness keeps a timed call's output (.clone(): its inputs
# copied, glue), so a timed call's matmul runs only when the judge asks for its outputs — after the timed calls, their
# clocks and their op watch. It passed at 1.6-1.9x eager here (3.00x in the review that found it), where the honest
# naive kernel gets 0.04x.
LAZY_SUBCLASS = '''
class Lazy(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        with torch._C.DisableTorchFunctionSubclass():
            if args and type(args[0]) is Lazy and func is torch.Tensor.clone:
                kept = torch.empty(args[0].shape).as_subclass(Lazy)
                kept.kd_a, kept.kd_b = args[0].kd_a.clone(), args[0].kd_b.clone()
                return kept
            if args and type(args[0]) is Lazy and func is torch.Tensor.detach:
                return torch.matmul(args[0].kd_a, args[0].kd_b)
            return func(*args, **(kwargs or {}))
'''
LAZY_FORWARD = ("mod.mm(a[:1], b)\n        out = torch.empty(a.shape[0], b.shape[1]).as_subclass(Lazy)\n"
                "        out.kd_a, out.kd_b = a, b\n        return out")


def test_an_output_of_a_tensor_subclass_computes_nothing_after_the_forward(tmp_path):
    cfg = load_config(None, ["verifier.memory_limit_mb=2048", "verifier.use_cache=false", "verifier.spare_sandboxes=0",
                             "verifier.trials=2", "verifier.timing_runs=3", "verifier.timing_warmup=1",
                             "verifier.run_timeout_s=20"]).verifier
    with Judge(cfg, tmp_path / "cache") as judge:
        verdict = judge.verify(matmul_problem(), matmul_candidate("lazy_subclass", LAZY_SUBCLASS, LAZY_FORWARD),
                               static_rules=False)
    assert verdict.category == V.runtime_error and verdict.speedup_vs_eager is None, verdict.detail
    assert "Lazy" in verdict.detail and "torch.Tensor" in verdict.detail, verdict.detail


# A list subclass whose first iteration (the harness's check of its items) yields a placeholder of zeros and whose
# second (the harness's copy of it) computes the operator with ATen, after the forward; the kernel called for show. A
# legal pass.
SECOND_ITER = '''
class Twice(list):
    def __iter__(self):
        self.kd_seen = getattr(self, "kd_seen", 0) + 1
        if self.kd_seen == 2:
            x, w = self.kd_args
            return iter([torch.sigmoid(x) * w])
        return super().__iter__()
'''


def test_a_list_subclass_output_computes_nothing_after_the_forward(judge):
    source = good().replace("\nclass ModelNew", SECOND_ITER + "\n\nclass ModelNew").replace(
        CALL, "mod.fwd(x, self.w)\n        out = Twice([torch.zeros_like(x)])\n        out.kd_args = (x, self.w.detach())\n"
        "        return out")
    verdict = judge.verify(problem(), candidate("second_iter", source), static_rules=False)
    assert verdict.category == V.runtime_error, verdict.detail
    assert "Twice" in verdict.detail, verdict.detail


# A method of the input tensor replaced by an instance attribute: the harness's checksum of the inputs after the
# forward (.detach()) runs it, and it writes the operator's result (ATen's) into the output the forward left empty —
# the kernel called for show. A legal pass.
DETACH_ON_INPUT = ("mod.fwd(x, self.w)\n        out = torch.empty_like(x)\n        w = self.w.detach()\n"
                   "        def kd_detach():\n            out.copy_(torch.sigmoid(x) * w)\n"
                   "            return torch.Tensor.detach(x)\n        x.detach = kd_detach\n        return out")


def test_the_inputs_methods_do_not_run_when_the_harness_checks_them(judge):
    verdict = judge.verify(problem(), candidate("detach_on_input", with_forward(DETACH_ON_INPUT)), static_rules=False)
    assert verdict.category == V.wrong_output, verdict.detail


# A problem of glue alone (a transpose made contiguous: views and a copy, all glue the rules allow): the candidate
# compiles a kernel and never calls it, and writes the harness's count of its calls itself. A legal pass.
TRANSPOSE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.t().contiguous()


def get_inputs():
    return [torch.randn(16, 24)]


def get_init_inputs():
    return []
'''


@pytest.mark.parametrize("forges", ["mod.kd_calls += 1", "mod.kd_calls = getattr(mod, 'kd_calls', 0) + 1"])
def test_the_count_of_the_candidates_own_calls_cannot_be_written(judge, forges):
    from schemas.records import Candidate, Problem

    p = Problem(id=Problem.make_id(TRANSPOSE), source="test", reference=TRANSPOSE, name="transpose")
    source = with_forward(f"{forges}\n        return x.t().contiguous()")
    verdict = judge.verify(p, Candidate(id=Candidate.make_id(p.id, source, "cpu"), problem_id=p.id, source=source,
                                        origin="forges_own_calls"), static_rules=False)
    assert verdict.category != V.passed, verdict.detail
    if "+=" not in forges:  # `+=` reads a count the module does not have: the forward's own AttributeError
        assert (verdict.category, verdict.rule) == (V.illegal, "no-own-kernel"), verdict.detail


# A mode of the candidate's, entered when its module runs and never left: every torch function (or ATen op) the harness
# calls runs its code — here the harness's checksum of a trial's inputs, before the forward and out of the recorder's
# and the op watch's sight (.detach() of each input), computes the operator with ATen, and the forward returns it, the
# kernel called for show. A legal pass, either mode.
MODE_LEFT_ON = {
    "function": (
        "from torch.overrides import TorchFunctionMode as KdMode", "__torch_function__", "torch.Tensor.detach"),
    "dispatch": (
        "from torch.utils._python_dispatch import TorchDispatchMode as KdMode", "__torch_dispatch__",
        "torch.ops.aten.detach.default"),
}
LEFT_ON = '''
IMPORT


class KdAhead(KdMode):
    kd_w = None
    kd_out = []

    def HOOK(self, func, types, args=(), kwargs=None):
        if func is DETACH and args and tuple(args[0].shape) == (4, 8) and self.kd_w is not None:
            self.kd_out[:] = [torch.sigmoid(args[0]) * self.kd_w]
        return func(*args, **(kwargs or {}))


KdAhead().__enter__()
'''


@pytest.mark.parametrize("mode", ["function", "dispatch"])
def test_no_mode_of_the_candidates_sees_the_harness_read_its_tensors(judge, mode):
    imports, hook, detach = MODE_LEFT_ON[mode]
    left_on = LEFT_ON.replace("IMPORT", imports).replace("HOOK", hook).replace("DETACH", detach)
    source = good().replace("\nclass ModelNew", left_on + "\n\nclass ModelNew").replace(
        "self.w = nn.Parameter(torch.randn(8))", "self.w = nn.Parameter(torch.randn(8))\n"
        "        KdAhead.kd_w = self.w.detach()").replace(
        CALL, "mod.fwd(x, self.w)\n        return KdAhead.kd_out[0] if KdAhead.kd_out else x")
    verdict = judge.verify(problem(), candidate(f"{mode}_mode_left_on", source), static_rules=False)
    if mode == "function":  # torch's function handling is off while the harness reads (set_default_device leaves one)
        assert verdict.category == V.wrong_output, verdict.detail
    else:  # refused: no honest forward leaves one on
        assert verdict.category == V.runtime_error and "dispatch mode was left active" in verdict.detail, verdict.detail


# What an honest forward returns still passes, trials and timed calls: a tuple or a list of tensors, one of them a view
# of its input (its own kernel's output beside it), and with torch's default device set when its module runs (which
# leaves a torch function mode on: off while the harness reads, not refused).
PAIR = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8))

    def forward(self, x):
        return torch.sigmoid(x) * self.w, x.t()


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return []
'''
HONEST_RETURNS = {
    "tuple": with_forward("return mod.fwd(x, self.w), x.t()"),
    "list": with_forward("return [mod.fwd(x, self.w), x.t()]"),
    "default_device": with_forward("return mod.fwd(x, self.w), x.t()").replace(
        "\nclass ModelNew", "\ntorch.set_default_device(\"cpu\")\n\n\nclass ModelNew"),
}


def test_honest_outputs_pass_as_tuples_lists_and_views_trials_and_timed_calls(tmp_path):
    from schemas.records import Candidate, Problem

    p = Problem(id=Problem.make_id(PAIR), source="test", reference=PAIR, name="sigmoid_scale_and_transpose")
    cfg = load_config(None, ["verifier.memory_limit_mb=2048", "verifier.use_cache=false", "verifier.spare_sandboxes=0",
                             "verifier.trials=2", "verifier.timing_runs=3", "verifier.timing_warmup=1",
                             "verifier.run_timeout_s=10"]).verifier
    with Judge(cfg, tmp_path / "cache") as judge:
        verdicts = {name: judge.verify(p, Candidate(id=Candidate.make_id(p.id, source, "cpu"), problem_id=p.id,
                                                    source=source, origin=f"returns_{name}"))
                    for name, source in HONEST_RETURNS.items()}
    for name, verdict in verdicts.items():
        assert verdict.category == V.passed and verdict.speedup_vs_eager is not None, (name, verdict.detail)


# -- the static rules over the candidate's Python: its routes to the harness's own modules ---------------------------
# Each candidate below reaches verifier.sandbox (the module, or its globals through the stub load_inline it imports),
# replaces the trials' dispatch recorder with one that records nothing and the op watch's take with one that saw
# nothing, and then computes with ATen in every call, its own kernel (writing zeros) called for show. Each was a legal
# pass: the route was in no rule.
QUIET = '''
class _Quiet:
    def __init__(self, poison=True):
        self.ops = collections.Counter()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
'''


def computes_with_aten(code: str) -> str:
    """The kernel writing zeros, called for show, and ATen's sigmoid returned, with `code` at module level."""
    return good("o[i] = 0.0f;").replace("import torch\n", "import collections\nimport torch\n", 1).replace(
        "\n\n\nclass ModelNew", "\n\n" + code + "\n\n\nclass ModelNew", 1).replace(
        CALL, "mod.fwd(x, self.w)\n        return x.sigmoid() * self.w")


def blinds_the_watch(reach: str, globals_dict: bool = False) -> str:
    """`reach` (Python that binds HARNESS to the module verifier.sandbox, or to its globals when `globals_dict`),
    then the recorder and the op watch blinded through it."""
    recorder, watch = ('HARNESS["DispatchRecorder"]', 'HARNESS["OpWatch"]') if globals_dict else \
        ("HARNESS.DispatchRecorder", "HARNESS.OpWatch")
    return computes_with_aten(f"{reach}\n{QUIET}\n\n{recorder} = _Quiet\n"
                              f"{watch}.take = lambda self: collections.Counter()\n")


# a pickle that runs `INJECTED` (which blinds the watch itself) when loaded, and a file-like class of the
# candidate's own that serves it to torch.load
class _Runs:
    def __reduce__(self):
        return exec, (INJECTED,)


BYTES_READER = '''
class _Bytes:
    def __init__(self, data):
        self.data, self.at = data, 0

    def read(self, n=-1):
        n = len(self.data) - self.at if n is None or n < 0 else n
        out = self.data[self.at:self.at + n]
        self.at += len(out)
        return out

    def readline(self):
        end = self.data.find(b"\\n", self.at)
        end = len(self.data) if end < 0 else end + 1
        out, self.at = self.data[self.at:end], end
        return out

    def seek(self, at, whence=0):
        self.at = at if whence == 0 else (self.at + at if whence == 1 else len(self.data) + at)
        return self.at

    def tell(self):
        return self.at
'''


def _unpickles() -> str:
    import pickle

    return computes_with_aten(BYTES_READER + f"\n\ntry:\n    torch.load(_Bytes({pickle.dumps(_Runs())!r}), "
                                             "weights_only=False)\nexcept Exception:\n    pass\n")


# route: (candidate, the rule that refuses it now)
HARNESS_ROUTES = {
    # 1: modules that resolve dotted names or read attributes by name (a denylist missed each)
    "pkgutil_resolve_name": (blinds_the_watch('import pkgutil\nHARNESS = pkgutil.resolve_name("verifier.sandbox")'),
                             "forbidden-import"),
    "pydoc_locate": (blinds_the_watch('import pydoc\nHARNESS = pydoc.locate("verifier.sandbox")'), "forbidden-import"),
    "formatter_get_field": (blinds_the_watch('import string\nHARNESS = string.Formatter().get_field("0.__glob" + '
                                             '"als__", [load_inline], {})[0]', True), "forbidden-import"),
    # 2: torch's unpickler, of a bytes literal
    "torch_load": (_unpickles(), "dynamic-code"),
    # 3: a class pattern reads an attribute by the keyword's name: no Attribute node
    "match_class_pattern": (blinds_the_watch("match load_inline:\n    case object(__globals__=HARNESS):\n        pass",
                                             True), "dynamic-code"),
    # 4: getattr named as a value, called under another name
    "getattr_as_value": (blinds_the_watch('read = getattr\nHARNESS = read(load_inline, "__glob" + "als__")', True),
                         "dynamic-code"),
    # 5: a forbidden module re-exported by an allowed one, from-imported or reached as an attribute
    "reexported_from_import": (blinds_the_watch('from torch.nn.functional import importlib\n'
                                                'HARNESS = importlib.import_module("verifier.sandbox")'),
                               "forbidden-import"),
    "reexported_attribute": (blinds_the_watch('HARNESS = torch.nn.functional.importlib.import_module('
                                              '"verifier.sandbox")'), "forbidden-import"),
    # 6: an async generator's frame (ag_frame), a frame's builtins (f_builtins): __import__ by a string
    "frame_builtins": (blinds_the_watch("async def _suspended():\n    yield\n\n\nHARNESS = _suspended().ag_frame"
                                        '.f_builtins["__import__"]("verifier.sandbox", None, None, ["OpWatch"])'),
                       "dynamic-code"),
    # an allowed module's namespace by __getstate__ (a module object has one): os's, then sys's, then any module
    "module_getstate": (blinds_the_watch('import os\nHARNESS = os.__getstate__()["sys"].__getstate__()["modules"]'
                                         '["verifier.sandbox"]'), "dynamic-code"),
    # typing (allowed, for annotations) makes a forward reference of any string, and evaluates it when asked
    "typing_forward_ref": (blinds_the_watch('import typing\nHARNESS = typing.Optional["__import__(\'verifier.sandbox'
                                            '\', None, None, [\'OpWatch\'])"].__args__[0]._evaluate(None, None, '
                                            'frozenset())'), "dynamic-code"),
    # functools.wraps copies the attributes it is told to, by name, onto an object that keeps what it is given
    "wraps_assigned": (blinds_the_watch("import functools\n\n\nclass _Keeps:\n    def __setattr__(self, name, value):"
                                        "\n        _KEPT.append(value)\n\n\n_KEPT = []\nfunctools.wraps(load_inline, "
                                        'assigned=("__glob" + "als__",), updated=())(_Keeps())\nHARNESS = _KEPT[0]',
                                        True), "dynamic-code"),
}


@pytest.mark.parametrize("route", sorted(HARNESS_ROUTES))
def test_no_route_from_the_candidates_python_reaches_the_harness(judge, route):
    source, rule = HARNESS_ROUTES[route]
    verdict = judge.verify(problem(), candidate(f"reaches_harness_{route}", source))
    assert (verdict.category, verdict.rule) == (V.illegal, rule), verdict.detail


def test_without_a_route_to_the_harness_the_same_candidate_is_seen_computing_with_aten(judge):
    """The routes' control: what each blinds is what sees this candidate's compute (the passes above were the
    route's)."""
    verdict = judge.verify(problem(), candidate("aten_unblinded", computes_with_aten("")))
    assert (verdict.category, verdict.rule) == (V.illegal, "torch-compute"), verdict.detail
    assert "aten::sigmoid" in verdict.detail


# 7: library math linked from torch's own libraries (libtorch_cpu exports MKL's BLAS in every spelling): a 256x256
# matmul by the Fortran-style SGEMM, declared by hand under a name the preprocessor pastes together. It passed as
# the candidate's own kernel, at about eager's speed. (MATMUL: the problem above.)
LIBRARY_GEMM = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = r"""
#include <torch/extension.h>
#define KD_PASTE(a, b) a##b
extern "C" void KD_PASTE(SG, EMM)(const char*, const char*, const int*, const int*, const int*, const float*,
                                  const float*, const int*, const float*, const int*, const float*, float*, const int*);
torch::Tensor fwd(torch::Tensor a, torch::Tensor b) {
  auto ac = a.contiguous();
  auto bc = b.contiguous();
  int m = ac.size(0), k = ac.size(1), n = bc.size(1);
  auto out = torch::empty({m, n}, ac.options());
  const float one = 1.0f, zero = 0.0f;
  // row-major out = a b is column-major out^T = b^T a^T
  KD_PASTE(SG, EMM)("N", "N", &n, &m, &k, &one, bc.data_ptr<float>(), &n, ac.data_ptr<float>(), &k, &zero,
                    out.data_ptr<float>(), &n);
  return out;
}
"""
mod = load_inline(name="fwd", cpp_sources=src, functions=["fwd"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return mod.fwd(a, b)
'''


def test_library_math_is_refused_in_the_built_objects_imports_whatever_its_case(judge):
    from schemas.records import Candidate

    matmul = matmul_problem()
    gemm = Candidate(id=Candidate.make_id(matmul.id, LIBRARY_GEMM, "cpu"), problem_id=matmul.id, source=LIBRARY_GEMM,
                     origin="library_gemm")
    verdict = judge.verify(matmul, gemm)
    assert (verdict.category, verdict.rule) == (V.illegal, "library-math"), verdict.detail
    assert "SGEMM" in verdict.detail


# RUNS_PYTHON_AS_MODULE with 70,000 one-byte variables in sections of their own (nine lines of macros, two seconds
# of g++): past 65,280 sections an ELF object counts them in section 0 (e_shnum 0), and check_module_objects read
# main.o as an object of no sections, symbols or relocations; the module's imports (PyEval_GetBuiltins) are the
# glue's too, so the exec ran in the sandbox and blinded the watch.
RUNS_PYTHON_PAST_65280_SECTIONS = RUNS_PYTHON_AS_MODULE.replace("#include <cmath>\n", "#include <cmath>\n" + MANY_SECTIONS, 1)


def test_an_object_of_more_sections_than_elf_counts_in_its_header_is_read_whole(judge):
    verdict = judge.verify(problem(), candidate("runs_python_past_65280_sections", RUNS_PYTHON_PAST_65280_SECTIONS))
    assert (verdict.category, verdict.rule) == (V.illegal, "interpreter-api"), verdict.detail


# Inline assembly whose asm keyword a macro spells (the rules over the text read no asm statement), and machine code
# placed as data in an executable section (no asm at all): each made a system call (getpid, 39) of its own in the
# sandbox, imported nothing and passed. The built object's machine code is read now, however its source spelt it.
_KD_ASM = ("#define KD_ID(x) x\nstatic long kd_call() {\n  long r;\n"
           "  KD_ID(__asm__) volatile(\".byte 0x0f, 0x05\" : \"=a\"(r) : \"a\"(39L) : \"rcx\", \"r11\", \"memory\");\n"
           "  return r;\n}\n")
_KD_CODE_AS_DATA = ("__attribute__((section(\".text.kd\"))) static const unsigned char kd_code[] = "
                    "{0xb8, 0x27, 0, 0, 0, 0x0f, 0x05, 0xc3};\n"
                    "static long kd_call() { return ((long (*)())kd_code)(); }\n")


@pytest.mark.parametrize("name, prelude, said", [("asm_by_macro", _KD_ASM, "`syscall`"),
                                                 ("code_as_data", _KD_CODE_AS_DATA, "kd_code")])
def test_a_system_call_of_the_candidates_own_machine_code_is_illegal_however_its_source_spells_it(judge, name,
                                                                                                   prelude, said):
    from tests.kernels import CORRECT_BODY

    source = good(body=CORRECT_BODY.replace(";", " + 0.0f * (float)(kd_call() & 0);", 1)).replace(
        "#include <cmath>\n", "#include <cmath>\n" + prelude, 1)
    verdict = judge.verify(problem(), candidate(name, source))
    assert (verdict.category, verdict.rule) == (V.illegal, "inline-asm"), verdict.detail
    assert said in verdict.detail


# -- red team (session 25): code the toolchain's startup files call ---------------------------------------------------
# crti.o's _init calls `__gmon_start__` if the module defines it (a weak reference, for profiling), and crtbeginS.o
# calls `_ITM_registerTMCloneTable` and `__cxa_finalize` likewise: a definition of the candidate's under one of those
# names runs when the module is loaded (or unloaded), though no bound function, initializer, finalizer or glue call
# reaches it. Here it ran Python (pybind11 over PyEval_GetBuiltins, which the judge's glue imports too) that blinded the
# recorder and the op watch before the first trial, and the forward computed with ATen: a legal pass, before.
GMON_RUNS_PYTHON = good().replace("#include <cmath>", (
    "#include <cmath>\n#define KD_PASTE(a, b) a##b\n"
    "extern \"C\" void __gmon_start__() {\n"
    "  auto builtins = pybind11::reinterpret_borrow<pybind11::dict>(KD_PASTE(P, yEval_GetBuiltins)());\n"
    "  builtins[\"ex\" \"ec\"](" + json.dumps(INJECTED) + ");\n}\n"), 1).replace(
    "auto xc = x.contiguous();", "return sigmoid(x) * w;\n  auto xc = x.contiguous();", 1).replace(
    'functions=["fwd"])', ")").replace(
    "  return out;\n}\n", "  return out;\n}\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"fwd\", &fwd); }\n", 1)


def test_code_the_toolchains_startup_files_call_is_the_candidates(judge):
    verdict = judge.verify(problem(), candidate("gmon_runs_python", GMON_RUNS_PYTHON))
    assert (verdict.category, verdict.rule) == (V.illegal, "interpreter-api"), verdict.detail


# A personality routine of the candidate's, named in its frame's CIE by `.cfi_personality` (the asm keyword spelt by a
# macro), is called by the unwinder when an exception passes through that frame: code referenced only from .eh_frame,
# which no bound function reaches. Its first forward threw through it and ran Python that blinded the watch; the
# forwards after it computed with ATen: a legal pass, before.
PERSONALITY_RUNS_PYTHON = good().replace("#include <cmath>", (
    "#include <cmath>\n#define KD_PASTE(a, b) a##b\n#define KD_ID(x) x\n"
    "extern \"C\" __attribute__((used)) int kd_pers(int, int, unsigned long, void*, void*) {\n"
    "  static bool ran = false;\n  if (!ran) {\n    ran = true;\n"
    "    auto builtins = pybind11::reinterpret_borrow<pybind11::dict>(KD_PASTE(P, yEval_GetBuiltins)());\n"
    "    builtins[\"ex\" \"ec\"](" + json.dumps(INJECTED) + ");\n  }\n  return 8;\n}\n"
    "extern \"C\" __attribute__((noinline, used)) void kd_raise() { throw 1; }\n"
    "KD_ID(__asm__)(\".text\\n.globl kd_thrower\\n.type kd_thrower,@function\\nkd_thrower:\\n.cfi_startproc\\n\"\n"
    "  \".cfi_personality 0x1b, kd_pers_local\\nsub $8, %rsp\\n.cfi_adjust_cfa_offset 8\\ncall kd_raise\\n\"\n"
    "  \"add $8, %rsp\\n.cfi_adjust_cfa_offset -8\\nret\\n.cfi_endproc\\n.size kd_thrower, .-kd_thrower\\n\"\n"
    "  \".set kd_pers_local, kd_pers\\n\");\nextern \"C\" void kd_thrower();\n"), 1).replace(
    "auto xc = x.contiguous();",
    "static int calls = 0;\n  if (++calls == 1) { try { kd_thrower(); } catch (...) {} }\n"
    "  else return sigmoid(x) * w;\n  auto xc = x.contiguous();", 1).replace(
    'functions=["fwd"])', ")").replace(
    "  return out;\n}\n", "  return out;\n}\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"fwd\", &fwd); }\n", 1)


def test_a_personality_routine_of_the_candidates_is_its_code(judge):
    verdict = judge.verify(problem(), candidate("personality_runs_python", PERSONALITY_RUNS_PYTHON))
    assert (verdict.category, verdict.rule) == (V.illegal, "interpreter-api"), verdict.detail
