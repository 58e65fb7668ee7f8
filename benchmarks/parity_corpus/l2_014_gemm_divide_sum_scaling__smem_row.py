"""l2_014_gemm_divide_sum_scaling__smem_row: KernelBench level2/14_Gemm_Divide_Sum_Scaling.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 1024 -> 32, input_size 8192 -> 512, hidden_size 8192 -> 256.
"""

SOURCE = "KernelBench level2/14_Gemm_Divide_Sum_Scaling.py"
LEVEL = 2
FAMILY = "fused_gemm"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "block_reduction", "cuda_stream", "factory_with_options", "launch_check", "options", "scalar_args", "shared_memory", "warp_shuffle"]
SIZE_CHANGES = [('batch_size = 1024', 'batch_size = 32'), ('input_size = 8192', 'input_size = 512'), ('hidden_size = 8192', 'hidden_size = 256')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Model that performs a matrix multiplication, division, summation, and scaling.
    """
    def __init__(self, input_size, hidden_size, scaling_factor):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(hidden_size, input_size))
        self.scaling_factor = scaling_factor

    def forward(self, x):
        """
        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, input_size).
        Returns:
            torch.Tensor: Output tensor of shape (batch_size, hidden_size).
        """
        x = torch.matmul(x, self.weight.T)  # Gemm
        x = x / 2  # Divide
        x = torch.sum(x, dim=1, keepdim=True) # Sum
        x = x * self.scaling_factor  # Scaling
        return x


batch_size = 32  # KernelBench: 1024
input_size = 512  # KernelBench: 8192
hidden_size = 256  # KernelBench: 8192
scaling_factor = 1.5

def get_inputs():
    return [torch.rand(batch_size, input_size)]

def get_init_inputs():
    return [input_size, hidden_size, scaling_factor]'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

gemm_div_sum_scale_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

// one block per row of x: each thread owns output features j, the row of x sits in shared memory
__global__ void gemm_div_sum_scale_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                   float* __restrict__ out, int K, int N, float scale) {
    extern __shared__ float xs[];
    __shared__ float partial[32];
    const float* xr = x + (size_t)blockIdx.x * K;
    for (int k = threadIdx.x; k < K; k += blockDim.x) xs[k] = xr[k];
    __syncthreads();
    float local = 0.0f;
    for (int j = threadIdx.x; j < N; j += blockDim.x) {
        const float* wr = w + (size_t)j * K;
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += xs[k] * wr[k];
        local += acc / 2.0f;
    }
    for (int o = 16; o > 0; o >>= 1) local += __shfl_down_sync(0xffffffff, local, o);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = local;
    __syncthreads();
    if (threadIdx.x == 0) {
        float total = 0.0f;
        for (int i = 0; i < (int)(blockDim.x >> 5); ++i) total += partial[i];
        out[blockIdx.x] = total * scale;
    }
}

torch::Tensor gemm_div_sum_scale(torch::Tensor x, torch::Tensor weight, double scaling_factor) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.size(1) == weight.size(1), "shape mismatch");
    const int M = x.size(0), K = x.size(1), N = weight.size(0);
    auto out = torch::empty({M, 1}, x.options());
    const size_t smem = K * sizeof(float);
    gemm_div_sum_scale_kernel<<<M, 256, smem, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), weight.data_ptr<float>(), out.data_ptr<float>(), K, N, static_cast<float>(scaling_factor));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

gemm_div_sum_scale_cpp_source = r"""torch::Tensor gemm_div_sum_scale(torch::Tensor x, torch::Tensor weight, double scaling_factor);"""

gemm_div_sum_scale_module = load_inline(
    name="gemm_div_sum_scale_row",
    cpp_sources=gemm_div_sum_scale_cpp_source,
    cuda_sources=gemm_div_sum_scale_cuda_source,
    functions=["gemm_div_sum_scale"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size, scaling_factor):
        super(ModelNew, self).__init__()
        self.weight = nn.Parameter(torch.randn(hidden_size, input_size))
        self.scaling_factor = scaling_factor
        self.gemm_div_sum_scale = gemm_div_sum_scale_module

    def forward(self, x):
        return self.gemm_div_sum_scale.gemm_div_sum_scale(x.contiguous(), self.weight, self.scaling_factor)
'''
