"""A reference problem and hand-written candidates for it, good and bad (cpu backend)."""

from schemas.records import Candidate, Problem

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

GOOD = '''
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


def good(body: str = CORRECT_BODY) -> str:
    return GOOD.replace("BODY", body)


CANDIDATES = {
    "pass": good(),
    "wrong_output": good("o[i] = 1.0f / (1.0f + std::exp(-a[i])) * b[0];"),
    # correct on the first call only: 1 of 5 trials passes
    "partial": good("static int calls = 0; if (i == 0) ++calls; "
                    "o[i] = 1.0f / (1.0f + std::exp(-a[i])) * b[i % m] + (calls > 1 ? 1.0f : 0.0f);"),
    "unwritten": good("if (i > 0) o[i] = 1.0f / (1.0f + std::exp(-a[i])) * b[i % m];"),
    "compile_error": good("o[i] = undeclared_name;"),
    "syntax_error": "class ModelNew(:\n    pass\n",
    "segfault": good("if (i == 3) { volatile int* p = nullptr; *p = 1; } o[i] = 0;"),
    "raises": good(CORRECT_BODY).replace("return mod.fwd(x, self.w)", "raise ValueError('boom')"),
    "hang": good("while (true) { asm volatile(\"\"); }"),
    "torch_compute": good().replace("return mod.fwd(x, self.w)", "return torch.sigmoid(x) * self.w"),
    "torch_in_cpp": good().replace("auto out = torch::empty_like(xc);",
                                   "auto out = torch::sigmoid(xc) * w; return out;"),
    "no_own_kernel": good().replace("return mod.fwd(x, self.w)", "return x.view(4, 8)"),
    "exit": good().replace("return mod.fwd(x, self.w)", "import os; os._exit(0)"),
    "patch_torch": good().replace("class ModelNew", "torch.allclose = lambda *a, **k: True\n\nclass ModelNew"),
    "mutates_input": good("o[i] = 1.0f / (1.0f + std::exp(-a[i])) * b[i % m]; ((float*)a)[i] = 0.0f;"),
    "inherits_reference": good().replace("class ModelNew(nn.Module)", "class ModelNew(Model)"),
    "library_include": good().replace("#include <cmath>", "#include <cblas.h>"),
    "no_model_new": "import torch\n\nclass Something:\n    pass\n",
}


def problem() -> Problem:
    return Problem(id=Problem.make_id(REFERENCE), source="test", reference=REFERENCE, name="sigmoid_scale")


def candidate(name: str, source: str | None = None) -> Candidate:
    src = source if source is not None else CANDIDATES[name]
    p = problem()
    return Candidate(id=Candidate.make_id(p.id, src, "cpu"), problem_id=p.id, source=src, origin=name)
