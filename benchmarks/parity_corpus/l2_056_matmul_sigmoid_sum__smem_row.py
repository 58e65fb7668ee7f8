"""l2_056_matmul_sigmoid_sum__smem_row: KernelBench level2/56_Matmul_Sigmoid_Sum.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 128 -> 32, input_size 32768 -> 512, hidden_size 32768 -> 256.
"""

SOURCE = "KernelBench level2/56_Matmul_Sigmoid_Sum.py"
LEVEL = 2
FAMILY = "fused_gemm"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "block_reduction", "cuda_stream", "factory_with_options", "launch_check", "options", "shared_memory", "warp_shuffle"]
SIZE_CHANGES = [('batch_size = 128', 'batch_size = 32'), ('input_size = 32768', 'input_size = 512'), ('hidden_size = 32768', 'hidden_size = 256')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a matrix multiplication, applies sigmoid, and sums the result.
    """
    def __init__(self, input_size, hidden_size):
        super(Model, self).__init__()
        self.linear = nn.Linear(input_size, hidden_size)

    def forward(self, x):
        """
        Args:
            x: Input tensor of shape (batch_size, input_size).

        Returns:
            Output tensor of shape (batch_size, 1).
        """
        x = self.linear(x)
        x = torch.sigmoid(x)
        x = torch.sum(x, dim=1, keepdim=True)
        return x

batch_size = 32  # KernelBench: 128
input_size = 512  # KernelBench: 32768
hidden_size = 256  # KernelBench: 32768

def get_inputs():
    return [torch.rand(batch_size, input_size)]

def get_init_inputs():
    return [input_size, hidden_size]'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

gemm_sigmoid_sum_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

// one block per row of x: each thread owns output features j, the row of x sits in shared memory
__global__ void gemm_sigmoid_sum_kernel(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                                   float* __restrict__ out, int K, int N) {
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
        local += 1.0f / (1.0f + expf(-(acc + b[j])));
    }
    for (int o = 16; o > 0; o >>= 1) local += __shfl_down_sync(0xffffffff, local, o);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = local;
    __syncthreads();
    if (threadIdx.x == 0) {
        float total = 0.0f;
        for (int i = 0; i < (int)(blockDim.x >> 5); ++i) total += partial[i];
        out[blockIdx.x] = total;
    }
}

torch::Tensor gemm_sigmoid_sum(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.size(1) == weight.size(1), "shape mismatch");
    const int M = x.size(0), K = x.size(1), N = weight.size(0);
    auto out = torch::empty({M, 1}, x.options());
    const size_t smem = K * sizeof(float);
    gemm_sigmoid_sum_kernel<<<M, 256, smem, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), out.data_ptr<float>(), K, N);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

gemm_sigmoid_sum_cpp_source = r"""torch::Tensor gemm_sigmoid_sum(torch::Tensor x, torch::Tensor weight, torch::Tensor bias);"""

gemm_sigmoid_sum_module = load_inline(
    name="gemm_sigmoid_sum_row",
    cpp_sources=gemm_sigmoid_sum_cpp_source,
    cuda_sources=gemm_sigmoid_sum_cuda_source,
    functions=["gemm_sigmoid_sum"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size):
        super(ModelNew, self).__init__()
        self.linear = nn.Linear(input_size, hidden_size)
        self.gemm_sigmoid_sum = gemm_sigmoid_sum_module

    def forward(self, x):
        return self.gemm_sigmoid_sum.gemm_sigmoid_sum(x.contiguous(), self.linear.weight, self.linear.bias)
'''
