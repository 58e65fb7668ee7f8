"""l1_052_argmin__block: KernelBench level1/52_Argmin_over_a_dimension.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 128 -> 16, dim1 4096 -> 256, dim2 4095 -> 255.
"""

SOURCE = "KernelBench level1/52_Argmin_over_a_dimension.py"
LEVEL = 1
FAMILY = "reduction"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "block_reduction", "cuda_stream", "factory_with_options", "launch_check", "options", "shared_memory", "templates"]
SIZE_CHANGES = [('batch_size = 128', 'batch_size = 16'), ('dim1 = 4096', 'dim1 = 256'), ('dim2 = 4095', 'dim2 = 255')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that finds the index of the minimum value along a specified dimension.
    """
    def __init__(self, dim: int):
        """
        Initializes the model with the dimension to perform argmin on.

        Args:
            dim (int): Dimension along which to find the minimum value.
        """
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Finds the index of the minimum value along the specified dimension.

        Args:
            x (torch.Tensor): Input tensor.

        Returns:
            torch.Tensor: Tensor containing the indices of the minimum values along the specified dimension.
        """
        return torch.argmin(x, dim=self.dim)

batch_size = 16  # KernelBench: 128
dim1 = 256  # KernelBench: 4096
dim2 = 255  # KernelBench: 4095
dim = 1

def get_inputs():
    x = torch.rand(batch_size, dim1, dim2)
    return [x]

def get_init_inputs():
    return [dim]'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

argmin_red_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

// one block per (b, j): threads scan the reduced dim, then a shared-memory tree keeps the first extreme index
template <int BLOCK>
__global__ void argmin_block_kernel(const float* __restrict__ x, int64_t* __restrict__ out, int D1, int D2) {
    __shared__ float s_val[BLOCK];
    __shared__ int s_idx[BLOCK];
    const int b = blockIdx.x / D2;
    const int j = blockIdx.x % D2;
    const float* base = x + (size_t)b * D1 * D2 + j;
    float best = INFINITY;
    int best_k = 0x7fffffff;
    for (int k = threadIdx.x; k < D1; k += BLOCK) {
        const float v = base[(size_t)k * D2];
        if (v < best || (v == best && k < best_k)) {
            best = v;
            best_k = k;
        }
    }
    s_val[threadIdx.x] = best;
    s_idx[threadIdx.x] = best_k;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            const float ov = s_val[threadIdx.x + s];
            const int ok = s_idx[threadIdx.x + s];
            if (ov < s_val[threadIdx.x] || (ov == s_val[threadIdx.x] && ok < s_idx[threadIdx.x])) {
                s_val[threadIdx.x] = ov;
                s_idx[threadIdx.x] = ok;
            }
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s_idx[0];
}

torch::Tensor argmin_dim1(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
    TORCH_CHECK(x.dim() == 3, "expected (B, D1, D2)");
    const int B = x.size(0), D1 = x.size(1), D2 = x.size(2);
    auto out = torch::empty({B, D2}, torch::TensorOptions().dtype(torch::kInt64).device(x.device()));
    constexpr int BLOCK = 128;
    argmin_block_kernel<BLOCK><<<B * D2, BLOCK, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), out.data_ptr<int64_t>(), D1, D2);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

argmin_red_cpp_source = r"""torch::Tensor argmin_dim1(torch::Tensor x);"""

argmin_red_module = load_inline(
    name="argmin_red_block",
    cpp_sources=argmin_red_cpp_source,
    cuda_sources=argmin_red_cuda_source,
    functions=["argmin_dim1"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim
        self.argmin_red = argmin_red_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.argmin_red.argmin_dim1(x.contiguous())
'''
