"""l1_037_frobenius__atomic_vector: KernelBench level1/37_FrobeniusNorm_.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 112 -> 4, features 64 -> 16, dim1 512 -> 32, dim2 512 -> 32.
"""

SOURCE = "KernelBench level1/37_FrobeniusNorm_.py"
LEVEL = 1
FAMILY = "norm"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "block_reduction", "factory_with_options", "grid_stride", "launch_check", "options", "shared_memory", "vector_return"]
SIZE_CHANGES = [('batch_size = 112', 'batch_size = 4'), ('features = 64', 'features = 16'), ('dim1 = 512', 'dim1 = 32'), ('dim2 = 512', 'dim2 = 32')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs Frobenius norm normalization.
    """
    def __init__(self):
        """
        Initializes the Frobenius norm normalization layer.
        """
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies Frobenius norm normalization to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of arbitrary shape.

        Returns:
            torch.Tensor: Output tensor with Frobenius norm normalization applied, same shape as input.
        """
        norm = torch.norm(x, p='fro')
        return x / norm

batch_size = 4  # KernelBench: 112
features = 16  # KernelBench: 64
dim1 = 32  # KernelBench: 512
dim2 = 32  # KernelBench: 512

def get_inputs():
    x = torch.rand(batch_size, features, dim1, dim2)
    return [x]

def get_init_inputs():
    return []'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

frob_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void sum_squares_kernel(const float* __restrict__ x, float* __restrict__ total, int64_t n) {
    __shared__ float cache[256];
    float local = 0.0f;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)blockDim.x * gridDim.x) {
        local += x[i] * x[i];
    }
    cache[threadIdx.x] = local;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) cache[threadIdx.x] += cache[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(total, cache[0]);
}

__global__ void divide_by_norm_kernel(const float* __restrict__ x, float* __restrict__ y, const float* __restrict__ total,
                                      int64_t n) {
    const float inv = rsqrtf(*total);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)blockDim.x * gridDim.x) {
        y[i] = x[i] * inv;
    }
}

std::vector<torch::Tensor> frobenius_normalize(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous(), "x must be a contiguous CUDA tensor");
    auto total = torch::zeros({1}, x.options());
    auto y = torch::empty_like(x);
    const int64_t n = x.numel();
    sum_squares_kernel<<<512, 256>>>(x.data_ptr<float>(), total.data_ptr<float>(), n);
    divide_by_norm_kernel<<<512, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), total.data_ptr<float>(), n);
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "frobenius_normalize failed: ", cudaGetErrorString(err));
    return {y, total};
}
"""

frob_cpp_source = r"""std::vector<torch::Tensor> frobenius_normalize(torch::Tensor x);"""

frob_module = load_inline(
    name="frob_atomic",
    cpp_sources=frob_cpp_source,
    cuda_sources=frob_cuda_source,
    functions=["frobenius_normalize"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.frob = frob_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.frob.frobenius_normalize(x.contiguous())
        return y
'''
