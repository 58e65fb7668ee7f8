"""l2_086_matmul_divide_gelu__tiled: KernelBench level2/86_Matmul_Divide_GELU.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 1024 -> 32, input_size 8192 -> 512, output_size 8192 -> 256.
"""

SOURCE = "KernelBench level2/86_Matmul_Divide_GELU.py"
LEVEL = 2
FAMILY = "fused_gemm"
EXPECTED = "pass"
FEATURES = ["CHECK_INPUT_macros", "TORCH_CHECK", "cuda_stream", "device_guard", "factory_with_options", "launch_check", "options", "scalar_args", "shared_memory"]
SIZE_CHANGES = [('batch_size = 1024', 'batch_size = 32'), ('input_size = 8192', 'input_size = 512'), ('output_size = 8192', 'output_size = 256')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    A model that performs a matrix multiplication, divides by a scalar, and applies GELU activation.
    """
    def __init__(self, input_size, output_size, divisor):
        super(Model, self).__init__()
        self.linear = nn.Linear(input_size, output_size)
        self.divisor = divisor

    def forward(self, x):
        """
        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, input_size).
        Returns:
            torch.Tensor: Output tensor of shape (batch_size, output_size).
        """
        x = self.linear(x)
        x = x / self.divisor
        x = torch.nn.functional.gelu(x)
        return x

batch_size = 32  # KernelBench: 1024
input_size = 512  # KernelBench: 8192
output_size = 256  # KernelBench: 8192
divisor = 10.0

def get_inputs():
    return [torch.rand(batch_size, input_size)]

def get_init_inputs():
    return [input_size, output_size, divisor]'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

mm_div_gelu_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#define CHECK_CUDA(x) TORCH_CHECK(x.is_cuda(), #x " must be a CUDA tensor")
#define CHECK_CONTIGUOUS(x) TORCH_CHECK(x.is_contiguous(), #x " must be contiguous")
#define CHECK_INPUT(x) CHECK_CUDA(x); CHECK_CONTIGUOUS(x)

#define TILE 16

__global__ void mm_div_gelu_kernel(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y,
                            int M, int N, int K, float divisor) {
    __shared__ float xs[TILE][TILE];
    __shared__ float ws[TILE][TILE + 1];
    const int row = blockIdx.y * TILE + threadIdx.y;
    const int col = blockIdx.x * TILE + threadIdx.x;
    const int wrow = blockIdx.x * TILE + threadIdx.y;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        xs[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? x[(size_t)row * K + k0 + threadIdx.x] : 0.0f;
        ws[threadIdx.y][threadIdx.x] = (wrow < N && k0 + threadIdx.x < K) ? w[(size_t)wrow * K + k0 + threadIdx.x] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) acc += xs[threadIdx.y][k] * ws[threadIdx.x][k];
        __syncthreads();
    }
    if (row < M && col < N) {
        float v = acc + bias[col];
        v = v / divisor;
        v = 0.5f * v * (1.0f + erff(v * 0.70710678f));
        y[(size_t)row * N + col] = v;
    }
}

torch::Tensor mm_div_gelu(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double divisor, bool check_shapes) {
    CHECK_INPUT(x);
    CHECK_INPUT(weight);
    if (check_shapes) {
        TORCH_CHECK(x.dim() == 2 && weight.dim() == 2, "expected 2D x and weight");
        TORCH_CHECK(x.size(1) == weight.size(1), "in_features mismatch: ", x.size(1), " vs ", weight.size(1));
    }
    const at::cuda::OptionalCUDAGuard device_guard(device_of(x));
    const int M = x.size(0), K = x.size(1), N = weight.size(0);
    auto y = torch::empty({M, N}, x.options());
    dim3 block(TILE, TILE);
    dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    mm_div_gelu_kernel<<<grid, block, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(), M, N, K, static_cast<float>(divisor));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

mm_div_gelu_cpp_source = r"""torch::Tensor mm_div_gelu(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double divisor, bool check_shapes);"""

mm_div_gelu_module = load_inline(
    name="mm_div_gelu_tiled",
    cpp_sources=mm_div_gelu_cpp_source,
    cuda_sources=mm_div_gelu_cuda_source,
    functions=["mm_div_gelu"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, input_size, output_size, divisor):
        super(ModelNew, self).__init__()
        self.linear = nn.Linear(input_size, output_size)
        self.divisor = divisor
        self.mm_div_gelu = mm_div_gelu_module

    def forward(self, x):
        return self.mm_div_gelu.mm_div_gelu(x.contiguous(), self.linear.weight, self.linear.bias, self.divisor, True)
'''
