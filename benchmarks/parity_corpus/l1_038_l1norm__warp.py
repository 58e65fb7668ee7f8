"""l1_038_l1norm__warp: KernelBench level1/38_L1Norm_.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 32768 -> 32, dim 65535 -> 4095.
"""

SOURCE = "KernelBench level1/38_L1Norm_.py"
LEVEL = 1
FAMILY = "norm"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "block_reduction", "cuda_stream", "launch_check", "shared_memory", "templates", "warp_shuffle"]
SIZE_CHANGES = [('batch_size = 32768', 'batch_size = 32'), ('dim = 65535', 'dim = 4095')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs L1 normalization.
    """
    def __init__(self):
        """
        Initializes the L1 normalization layer.
        """
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies L1 normalization to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of shape (..., dim, ...).

        Returns:
            torch.Tensor: Output tensor with L1 normalization applied, same shape as input.
        """
        return x / torch.mean(torch.abs(x), dim=1, keepdim=True)

batch_size = 32  # KernelBench: 32768
# choose dim so total <2^31
dim = 4095  # KernelBench: 65535

def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]

def get_init_inputs():
    return []'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

l1norm_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

template <unsigned BLOCK>
__global__ void l1_normalize_kernel(const float* __restrict__ x, float* __restrict__ y, int D) {
    const float* row = x + (size_t)blockIdx.x * D;
    float* out = y + (size_t)blockIdx.x * D;
    float local = 0.0f;
    for (int i = threadIdx.x; i < D; i += BLOCK) {
        const float v = row[i];
        local += fabsf(v);
    }
    for (int offset = 16; offset > 0; offset >>= 1) local += __shfl_xor_sync(0xffffffff, local, offset);
    __shared__ float partial[BLOCK / 32];
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = local;
    __syncthreads();
    float total = 0.0f;
#pragma unroll
    for (int w = 0; w < BLOCK / 32; ++w) total += partial[w];
    const float denom = total / (float)D;
    for (int i = threadIdx.x; i < D; i += BLOCK) out[i] = row[i] / denom;
}

torch::Tensor l1_normalize(torch::Tensor x) {
    TORCH_CHECK(x.dim() == 2, "l1_normalize expects (batch, dim)");
    TORCH_CHECK(x.scalar_type() == at::kFloat, "float32 only");
    x = x.contiguous();
    auto y = torch::empty_like(x);
    l1_normalize_kernel<256><<<x.size(0), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), static_cast<int>(x.size(1)));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

l1norm_cpp_source = r"""torch::Tensor l1_normalize(torch::Tensor x);"""

l1norm_module = load_inline(
    name="l1norm_warp",
    cpp_sources=l1norm_cpp_source,
    cuda_sources=l1norm_cuda_source,
    functions=["l1_normalize"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.l1norm = l1norm_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.l1norm.l1_normalize(x)
'''
