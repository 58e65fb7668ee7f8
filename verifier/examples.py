"""KernelBench-style example problems with hand-written candidates, for both backends.

Used by `benchmarks/verify_throughput.py` and the GPU tests: a family of elementwise
problems, each with a correct candidate in the exact shape KernelBench generations have
(`cpp_sources` declarations + `cuda_sources` kernels for cuda, a C++ loop for cpu), and a
few faulty variants so that "same verdicts" is checked on more than passes.
"""

from __future__ import annotations

from schemas.records import Candidate, Problem

# name -> (torch expression of x, C expression of v)
OPS: dict[str, tuple[str, str]] = {
    "relu": ("torch.relu(x)", "v > 0.f ? v : 0.f"),
    "scale_shift": ("x * 1.5 + 0.25", "v * 1.5f + 0.25f"),
    "square": ("x * x", "v * v"),
    "sigmoid": ("torch.sigmoid(x)", "1.f / (1.f + expf(-v))"),
    "swish": ("x * torch.sigmoid(x)", "v / (1.f + expf(-v))"),
    "softplus_like": ("torch.log1p(torch.exp(x))", "log1pf(expf(v))"),
    "tanh": ("torch.tanh(x)", "tanhf(v)"),
    "abs_plus": ("torch.abs(x) + 1.0", "fabsf(v) + 1.f"),
    "cube": ("x * x * x", "v * v * v"),
    "leaky": ("torch.where(x > 0, x, 0.1 * x)", "v > 0.f ? v : 0.1f * v"),
    "neg_exp": ("torch.exp(-x)", "expf(-v)"),
    "clamp": ("torch.clamp(x, -0.5, 0.5)", "fminf(fmaxf(v, -0.5f), 0.5f)"),
    "sin": ("torch.sin(x)", "sinf(v)"),
    "cos2": ("torch.cos(x) * 2.0", "cosf(v) * 2.f"),
    "hardsig": ("torch.clamp(x / 6.0 + 0.5, 0.0, 1.0)", "fminf(fmaxf(v / 6.f + 0.5f, 0.f), 1.f)"),
    "shifted_relu": ("torch.relu(x - 0.3)", "v - 0.3f > 0.f ? v - 0.3f : 0.f"),
}

REFERENCE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """{name}: y = {expr}"""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return {expr}


def get_inputs():
    return [torch.randn({shape})]


def get_init_inputs():
    return []
'''

CUDA_CANDIDATE = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

{name}_source = """
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void {name}_kernel(const float* x, float* out, int size) {{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < size) {{
        float v = x[idx];
        out[idx] = {body};
    }}
}}

torch::Tensor {name}_cuda(torch::Tensor x) {{
    auto size = x.numel();
    auto out = torch::empty_like(x);
    const int block_size = 256;
    const int num_blocks = (size + block_size - 1) / block_size;
    {name}_kernel<<<num_blocks, block_size>>>(x.data_ptr<float>(), out.data_ptr<float>(), size);
    return out;
}}
"""

{name}_cpp_source = "torch::Tensor {name}_cuda(torch::Tensor x);"

{name}_ext = load_inline(
    name="{name}_ext",
    cpp_sources={name}_cpp_source,
    cuda_sources={name}_source,
    functions=["{name}_cuda"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return {name}_ext.{name}_cuda(x.contiguous())
'''

CPU_CANDIDATE = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

{name}_source = """
#include <torch/extension.h>
#include <cmath>

torch::Tensor {name}_cpu(torch::Tensor x) {{
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    const float* px = xc.data_ptr<float>();
    float* po = out.data_ptr<float>();
    for (int64_t i = 0; i < xc.numel(); ++i) {{
        float v = px[i];
        po[i] = {body};
    }}
    return out;
}}
"""

{name}_ext = load_inline(name="{name}_ext", cpp_sources={name}_source, functions=["{name}_cpu"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return {name}_ext.{name}_cpu(x)
'''


def example_problem(name: str, backend: str) -> Problem:
    expr, _ = OPS[name]
    shape = "4096, 1024" if backend == "cuda" else "64, 256"
    source = REFERENCE.format(name=name, expr=expr, shape=shape)
    return Problem(id=Problem.make_id(source), source="builtin", reference=source, name=name,
                   op_families=["elementwise-unary"])


def example_candidate(problem: Problem, backend: str, body: str | None = None, tag: str = "correct") -> Candidate:
    template = CUDA_CANDIDATE if backend == "cuda" else CPU_CANDIDATE
    source = template.format(name=problem.name, body=body if body is not None else OPS[problem.name][1])
    return Candidate(id=Candidate.make_id(problem.id, source, backend), problem_id=problem.id, source=source,
                     backend=backend, origin=f"example:{tag}")


# An element that never finishes: a kernel that hangs. The loop must have an effect the compiler keeps: a
# volatile local is enough for a host compiler, but on the H200 that kernel returned (its verdict was
# wrong_output, not timeout); a GPU loop reads the clock anew on every pass.
HANG_BODY = {"cpu": "[&] { volatile int spin = 1; while (spin) {} return v; }()",
             "cuda": "[&] { while (clock64() >= 0) {} return v; }()"}


def hanging_candidates(n: int, backend: str) -> list[tuple[Problem, Candidate]]:
    """n distinct candidates whose kernel never ends (the verdict is a timeout)."""
    names = list(OPS)
    pairs = []
    for i in range(n):
        problem = example_problem(names[i % len(names)], backend)
        body = HANG_BODY[backend].replace("return v;", f"return v + {i}.0f * 0.f;")
        pairs.append((problem, example_candidate(problem, backend, body, "hang")))
    return pairs


def example_set(n: int, backend: str) -> list[tuple[Problem, Candidate]]:
    """n distinct candidates over the example problems: mostly correct, every 4th one faulty
    (a compile error, then a wrong result, alternating)."""
    names = list(OPS)
    pairs = []
    for i in range(n):
        problem = example_problem(names[i % len(names)], backend)
        round_ = i // len(names)  # later rounds differ in a constant so no two sources are equal
        body = OPS[problem.name][1]
        if i % 4 == 3:
            body, tag = (("undefined_symbol_" + str(i), "compile_error") if (i // 4) % 2 == 0
                         else (f"({body}) + 1.f", "wrong_output"))
        else:
            tag = "correct"
        body = f"({body}) + {round_}.0f * 0.f" if round_ else body
        pairs.append((problem, example_candidate(problem, backend, body, tag)))
    return pairs
