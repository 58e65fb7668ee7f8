"""l1_088_new_gelu__dispatch_grid_stride: KernelBench level1/88_MinGPTNewGelu.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 8192 -> 64, dim 8192 -> 4096.
"""

SOURCE = "KernelBench level1/88_MinGPTNewGelu.py"
LEVEL = 1
FAMILY = "activation"
EXPECTED = "pass"
FEATURES = ["AT_DISPATCH_FLOATING_TYPES", "CHECK_INPUT_macros", "TORCH_CHECK", "cuda_stream", "grid_stride", "launch_check", "templates"]
SIZE_CHANGES = [('batch_size = 8192', 'batch_size = 64'), ('dim = 8192', 'dim = 4096')]

REFERENCE = r'''import torch
import torch.nn as nn
import torch.nn.functional as F
import math

# From https://github.com/karpathy/minGPT/blob/master/mingpt/model.py

class Model(nn.Module):
    """
    Implementation of the GELU activation function currently in Google BERT repo (identical to OpenAI GPT).
    Reference: Gaussian Error Linear Units (GELU) paper: https://arxiv.org/abs/1606.08415
    """
    def __init__(self):
        super(Model, self).__init__()
    
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))

batch_size = 64  # KernelBench: 8192
dim = 4096  # KernelBench: 8192

def get_inputs():
    return [torch.rand(batch_size, dim)]

def get_init_inputs():
    return []'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

new_gelu_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#define CHECK_CUDA(x) TORCH_CHECK(x.is_cuda(), #x " must be a CUDA tensor")
#define CHECK_CONTIGUOUS(x) TORCH_CHECK(x.is_contiguous(), #x " must be contiguous")
#define CHECK_INPUT(x) CHECK_CUDA(x); CHECK_CONTIGUOUS(x)

template <typename scalar_t>
__global__ void new_gelu_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, const int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)blockDim.x * gridDim.x) {
        const scalar_t v = x[i];
        y[i] = scalar_t(0.5) * v * (scalar_t(1) + tanh(scalar_t(0.7978845608028654) * (v + scalar_t(0.044715) * v * v * v)));
    }
}

torch::Tensor new_gelu_forward(torch::Tensor x) {
    CHECK_INPUT(x);
    auto y = torch::empty_like(x);
    const int64_t n = x.numel();
    const int threads = 512;
    const int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 4096));
    auto stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "new_gelu_forward", ([&] {
        new_gelu_kernel<scalar_t><<<blocks, threads, 0, stream>>>(x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), n);
    }));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

new_gelu_cpp_source = r"""torch::Tensor new_gelu_forward(torch::Tensor x);"""

new_gelu_module = load_inline(
    name="new_gelu_dispatch",
    cpp_sources=new_gelu_cpp_source,
    cuda_sources=new_gelu_cuda_source,
    functions=["new_gelu_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.new_gelu_op = new_gelu_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.new_gelu_op.new_gelu_forward(x.contiguous())
'''
