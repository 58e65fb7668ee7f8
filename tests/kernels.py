"""A reference problem and a red team of candidates for it: good, faulty and cheating (cpu backend).

`RED_TEAM[name] = (source, expected category, expected rule for illegal verdicts)`.
"""

from schemas.records import Candidate, Problem
from schemas.records import VerdictCategory as V

REFERENCE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8))

    def forward(self, x):
        return torch.sigmoid(x) * self.w


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return []
'''

TEMPLATE = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = r"""
#include <torch/extension.h>
#include <cmath>
torch::Tensor fwd(torch::Tensor x, torch::Tensor w) {
  auto xc = x.contiguous();
  auto out = torch::empty_like(xc);
  const float* a = xc.data_ptr<float>();
  const float* b = w.data_ptr<float>();
  float* o = out.data_ptr<float>();
  int64_t n = xc.numel(), m = w.numel();
  for (int64_t i = 0; i < n; ++i) {
    BODY
  }
  return out;
}
"""
mod = load_inline(name="fwd", cpp_sources=src, functions=["fwd"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8))

    def forward(self, x):
        return mod.fwd(x, self.w)
'''

CORRECT_BODY = "o[i] = 1.0f / (1.0f + std::exp(-a[i])) * b[i % m];"
CALL = "return mod.fwd(x, self.w)"


def good(body: str = CORRECT_BODY) -> str:
    return TEMPLATE.replace("BODY", body)


def with_forward(body: str) -> str:
    """The correct kernel, with ModelNew.forward's body replaced."""
    return good().replace(CALL, body)


FORGED_MARKER = "/tmp/kd-redteam-pwned"
# Native code writing its own message into every descriptor, the judge's channel among them, with no
# mechanism the static rules name (write() declared by hand): only the channel's decoding stands in the way.
FORGE_MESSAGE = r"""
  static const char forged[] = "\x00\x00\x00\x2e" "cos\nsystem\n(S'touch /tmp/kd-redteam-pwned'\ntR.";
  for (int fd = 3; fd < 256; ++fd) { long w = write(fd, forged, sizeof forged - 1); (void)w; }"""
FORGE_DECLARATION = 'extern "C" long write(int, const void*, unsigned long);'



def _framed_message(message) -> str:
    """A C array of one message in the channel's own framing (length, then the encoded message): what the
    harness itself would send."""
    from verifier.reference import dumps

    return framed_blob(dumps(message))


def framed_blob(blob: bytes) -> str:
    """A C array of `blob` in the channel's framing (its length, then its bytes): any bytes, as a message."""
    framed = len(blob).to_bytes(4, "big") + blob
    return f"static const unsigned char framed[] = {{{','.join(map(str, framed))}}};"


# In the first timed call (after 5 trials and 2 warm-up calls), ask the judge for a later call's inputs.
ASK_AHEAD = ("static int calls = 0;\n  if (++calls == 8) { " + _framed_message(("next", 99))
             + " for (int fd = 3; fd < 256; ++fd) { long w = write(fd, framed, sizeof framed); (void)w; } }")
# Honest always, but a result seen again among the timed calls (by its inputs' values) hangs: it never does,
# because no two timed calls share an input set.
MEMO_BY_CONTENT = """static int calls = 0; static std::set<std::tuple<float, float, float>> seen;
  auto key = std::make_tuple(x.data_ptr<float>()[0], x.data_ptr<float>()[x.numel() / 2],
                             x.data_ptr<float>()[x.numel() - 1]);
  if (++calls > 7 && !seen.insert(key).second) { while (true) { asm volatile(""); } }"""
# Honest in the correctness trials (the first 5 calls), then results remembered by the input's address.
MEMO_BY_ADDRESS = """static int calls = 0; static std::map<const void*, torch::Tensor> memo;
  if (++calls > 5 && memo.count(x.data_ptr<float>())) return memo[x.data_ptr<float>()];"""
# Honest in the correctness trials, then the work skipped: whatever the fresh output memory holds.
SKIP_WHEN_TIMED = """static int calls = 0;
  if (++calls > 5) return torch::empty_like(x);"""

RED_TEAM: dict[str, tuple[str, V, str | None]] = {
    # honest outcomes
    "correct": (good(), V.passed, None),
    "wrong_output": (good("o[i] = 1.0f / (1.0f + std::exp(-a[i])) * b[0];"), V.wrong_output, None),
    "partial": (good("static int calls = 0; if (i == 0) ++calls; "
                     "o[i] = 1.0f / (1.0f + std::exp(-a[i])) * b[i % m] + (calls > 1 ? 1.0f : 0.0f);"),
                V.partial, None),  # right on the first trial only
    "unwritten_memory": (good("if (i > 0) o[i] = 1.0f / (1.0f + std::exp(-a[i])) * b[i % m];"), V.wrong_output, None),
    "wrong_shape": (with_forward("return mod.fwd(x, self.w).view(8, 4)"), V.wrong_output, None),
    "wrong_dtype": (good().replace("auto out = torch::empty_like(xc);",
                                   "auto out = torch::empty_like(xc); auto out64 = torch::empty(xc.sizes(), "
                                   "xc.options().dtype(torch::kFloat64));").replace("return out;", "return out64;"),
                    V.wrong_output, None),
    "nan_output": (good("o[i] = NAN;"), V.wrong_output, None),
    "precompute_in_init": (good().replace("self.w = nn.Parameter(torch.randn(8))",
                                          "self.w = nn.Parameter(torch.randn(8))\n        torch.manual_seed(0)\n"
                                          "        self.guess = torch.randn(4, 8)")
                           .replace(CALL, "return mod.fwd(self.guess, self.w)"), V.illegal, "output-caching"),
    # build and run failures
    "cuda_on_cpu_backend": (good().replace('functions=["fwd"])', 'cuda_sources="__global__ void k() {}", '
                                           'functions=["fwd"])'), V.compile_error, None),
    "cpp_compile_error": (good("o[i] = undeclared_name;"), V.compile_error, None),
    "python_syntax_error": ("class ModelNew(:\n    pass\n", V.compile_error, None),
    "no_model_new": ("import torch\n\nclass Something:\n    pass\n", V.compile_error, None),
    "segfault": (good("if (i == 3) { volatile int* p = nullptr; *p = 1; } o[i] = 0;"), V.runtime_error, None),
    "raises_in_forward": (with_forward("raise ValueError('boom')"), V.runtime_error, None),
    "cpp_throws": (good("TORCH_CHECK(false, \"kernel refuses\"); o[i] = 0;"), V.runtime_error, None),
    "returns_none": (with_forward("mod.fwd(x, self.w)\n        return None"), V.runtime_error, None),
    "memory_bomb": (good("static std::vector<char> hog; if (i == 0) hog.resize(size_t(64) << 30, 1); "
                         + CORRECT_BODY), V.runtime_error, None),
    "deep_recursion": (with_forward("return self.forward(x)"), V.runtime_error, None),
    "init_fails": (good().replace("super().__init__()", "super().__init__()\n        raise RuntimeError('no init')"),
                   V.runtime_error, None),
    "infinite_loop": (good("while (true) { asm volatile(\"\"); }"), V.timeout, None),
    # cheating, caught at run time or statically
    "torch_compute": (with_forward("return torch.sigmoid(x) * self.w"), V.illegal, "torch-compute"),
    "try_except_fallback": (with_forward("try:\n            raise RuntimeError('kernel unavailable')\n"
                                         "        except RuntimeError:\n            return torch.sigmoid(x) * self.w"),
                            V.illegal, "torch-compute"),
    "aten_in_cpp": (good().replace("auto out = torch::empty_like(xc);", "auto out = torch::sigmoid(xc) * w; return out;"),
                    V.illegal, "torch-compute"),
    # unqualified (found by argument-dependent lookup) and operator ATen calls: no static rule names them, the
    # shim lacks them so the build goes the full way, and the run-time trace sees them inside the op
    "aten_by_adl_and_operators": (good().replace("auto out = torch::empty_like(xc);",
                                                 "auto out = sigmoid(xc) * w; return out;"), V.illegal, "torch-compute"),
    "functional_via_alias": (with_forward("return getattr(torch, 'sigmoid')(x) * self.w"), V.illegal, "dynamic-code"),
    "no_own_kernel": (with_forward("return x.view(4, 8)"), V.illegal, "no-own-kernel"),
    "output_caching": (with_forward("fresh = mod.fwd(x, self.w)\n        if not hasattr(self, 'cache'):\n"
                                    "            self.cache = fresh\n        return self.cache"),
                       V.illegal, "output-caching"),
    "mutates_input": (good("o[i] = 1.0f / (1.0f + std::exp(-a[i])) * b[i % m]; ((float*)a)[i] = 0.0f;"),
                      V.illegal, "input-mutation"),
    "os_exit": (with_forward("import os; os._exit(0)"), V.illegal, "process-control"),
    "system_exit": (with_forward("raise SystemExit(0)"), V.illegal, "process-control"),
    "patch_allclose": (good().replace("class ModelNew", "torch.allclose = lambda *a, **k: True\n\nclass ModelNew"),
                       V.illegal, "patching"),
    "patch_timer": (good().replace("import torch\n", "import torch\nimport time\ntime.perf_counter = lambda: 0.0\n", 1),
                    V.illegal, "patching"),
    "inherits_reference": (good().replace("class ModelNew(nn.Module)", "class ModelNew(Model)"),
                           V.illegal, "reference-reuse"),
    "library_math": (good().replace("#include <cmath>", "#include <cblas.h>"), V.illegal, "library-math"),
    "torch_compile": (good().replace("super().__init__()", "super().__init__()\n        self.f = torch.compile(torch.sigmoid)"),
                      V.illegal, "torch-compile"),
    "host_numpy": (with_forward("import numpy as np\n        return torch.from_numpy(1 / (1 + np.exp(-x.numpy())) "
                                "* self.w.detach().numpy())"), V.illegal, "host-compute"),
    "harness_import": (good().replace("import torch\n", "import torch\nimport verifier.sandbox\n", 1),
                       V.illegal, "forbidden-import"),
    "ctypes_escape": (good().replace("import torch\n", "import torch\nimport ctypes\n", 1), V.illegal, "forbidden-import"),
    "reads_files": (with_forward("open('/etc/passwd').read()\n        return mod.fwd(x, self.w)"), V.illegal, "dynamic-code"),
    "frame_walk": (with_forward("import os\n        g = (lambda: 0).__globals__\n        return mod.fwd(x, self.w)"),
                   V.illegal, "dynamic-code"),
    # timing: results remembered in native code, work skipped once the correctness trials are over
    "memo_after_trials": (good().replace("auto xc = x.contiguous();", MEMO_BY_ADDRESS + "\n  auto xc = x.contiguous();")
                          .replace("return out;", "memo[xc.data_ptr<float>()] = out; return out;"),
                          V.illegal, "timing-output"),
    "hang_when_timed": (good().replace("auto xc = x.contiguous();", "static int calls = 0;\n  if (++calls > 5) { "
                                       "while (true) { asm volatile(\"\"); } }\n  auto xc = x.contiguous();"),
                        V.timeout, None),
    "skip_work_when_timed": (good().replace("auto xc = x.contiguous();", SKIP_WHEN_TIMED + "\n  auto xc = x.contiguous();"),
                             V.illegal, "timing-output"),
    # honest but unsteady: results that move by 1e-3 once the trials are over, as a float-atomics reduction's
    # do from call to call — outside the tolerance, inside KernelBench's: a failed check, not a cheat
    "drifts_when_timed": (good("static int calls = 0; if (i == 0) ++calls; "
                               "o[i] = 1.0f / (1.0f + std::exp(-a[i])) * b[i % m] + (calls > 5 ? 1e-3f : 0.0f);"),
                          V.partial, None),
    # native code asking, in the harness's own words, for a later timed call's inputs ahead of time
    "inputs_out_of_turn": (good().replace("#include <cmath>", "#include <cmath>\n" + FORGE_DECLARATION)
                           .replace("auto xc = x.contiguous();", ASK_AHEAD + "\n  auto xc = x.contiguous();"),
                           V.illegal, "harness-tampering"),
    # native code writing its own message into the sandbox's channel: a pickle that would run a shell command
    # in the judge if the judge unpickled what the sandbox sends
    "forged_message": (good().replace("#include <cmath>", "#include <cmath>\n" + FORGE_DECLARATION)
                       .replace("int64_t n = xc.numel(), m = w.numel();", FORGE_MESSAGE + "\n  int64_t n = xc.numel(), m = w.numel();"),
                       V.illegal, "harness-tampering"),
}


def problem() -> Problem:
    return Problem(id=Problem.make_id(REFERENCE), source="test", reference=REFERENCE, name="sigmoid_scale")


def candidate(name: str, source: str | None = None) -> Candidate:
    src = source if source is not None else RED_TEAM[name][0]
    p = problem()
    return Candidate(id=Candidate.make_id(p.id, src, "cpu"), problem_id=p.id, source=src, origin=name)


# References the template teacher covers: a transposed (non-contiguous) view, and linear + matmul + softmax.
TRANSPOSED = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x.t())


def get_inputs():
    return [torch.randn(4, 6)]


def get_init_inputs():
    return []
'''

LINEAR_AND_MATMUL = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x, y):
        return torch.relu(self.fc(x)), torch.matmul(y, y.t()), torch.softmax(x.transpose(1, 2), dim=-1)


def get_inputs():
    return [torch.randn(2, 3, 16), torch.randn(5, 7)]


def get_init_inputs():
    return [16, 8]
'''


def reductions(rows: int, cols: int) -> str:
    """A full sum, a mean over the outer dim, an amax over the inner one and a sum over both of a transposed
    view: each way the cuda template reduces (shared among blocks, a block an output, columns, strided)."""
    return f'''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return (torch.sum(x), torch.mean(x, dim=0), torch.amax(x, dim=1, keepdim=True),
                torch.sum(x.t(), dim=[0, 1]))


def get_inputs():
    return [torch.randn({rows}, {cols})]


def get_init_inputs():
    return []
'''


# 70,000 one-byte variables, each in a section of its own (`.data.*`, which the linker folds into .data): past 65,280
# sections an ELF object counts its sections (and names its section-name table) in section 0, and its symbols say
# SHN_XINDEX for their section. Nine lines of macros, two seconds of g++.
MANY_SECTIONS = ('#define KD_STR2(x) #x\n#define KD_STR(x) KD_STR2(x)\n#define KD_CAT2(a, b) a##b\n'
                 '#define KD_CAT(a, b) KD_CAT2(a, b)\n'
                 '#define KD_ONE2(n) __attribute__((used, section(".data.kd" KD_STR(n)))) char KD_CAT(kd_v, n) = 1;\n'
                 '#define KD_ONE(n) KD_ONE2(n)\n#define KD_A KD_ONE(__COUNTER__)\n'
                 '#define KD_B KD_A KD_A KD_A KD_A KD_A KD_A KD_A KD_A KD_A KD_A\n'
                 '#define KD_C KD_B KD_B KD_B KD_B KD_B KD_B KD_B KD_B KD_B KD_B\n'
                 '#define KD_D KD_C KD_C KD_C KD_C KD_C KD_C KD_C KD_C KD_C KD_C\n'
                 '#define KD_E KD_D KD_D KD_D KD_D KD_D KD_D KD_D KD_D KD_D KD_D\n'
                 'KD_E KD_E KD_E KD_E KD_E KD_E KD_E\n')
