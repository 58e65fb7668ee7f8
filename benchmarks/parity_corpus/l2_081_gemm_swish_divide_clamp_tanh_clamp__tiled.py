"""l2_081_gemm_swish_divide_clamp_tanh_clamp__tiled: KernelBench level2/81_Gemm_Swish_Divide_Clamp_Tanh_Clamp.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 1024 -> 32, in_features 8192 -> 512, out_features 8192 -> 256.
"""

SOURCE = "KernelBench level2/81_Gemm_Swish_Divide_Clamp_Tanh_Clamp.py"
LEVEL = 2
FAMILY = "fused_gemm"
EXPECTED = "pass"
FEATURES = ["CHECK_INPUT_macros", "TORCH_CHECK", "cuda_stream", "device_guard", "factory_with_options", "launch_check", "options", "scalar_args", "shared_memory"]
SIZE_CHANGES = [('batch_size = 1024', 'batch_size = 32'), ('in_features = 8192', 'in_features = 512'), ('out_features = 8192', 'out_features = 256')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a gemm, swish, divide, clamp, tanh, and clamp operations.
    """
    def __init__(self, in_features, out_features, bias=True):
        super(Model, self).__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=bias)

    def forward(self, x):
        """
        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, in_features).
        Returns:
            torch.Tensor: Output tensor of shape (batch_size, out_features).
        """
        x = self.gemm(x)
        x = x * torch.sigmoid(x)  # Swish activation
        x = x / 2.0
        x = torch.clamp(x, min=-1.0, max=1.0)  # Clamp between -1 and 1
        x = torch.tanh(x)  # Tanh activation
        x = torch.clamp(x, min=-1.0, max=1.0)  # Clamp between -1 and 1
        return x

batch_size = 32  # KernelBench: 1024
in_features = 512  # KernelBench: 8192
out_features = 256  # KernelBench: 8192

def get_inputs():
    return [torch.rand(batch_size, in_features)]

def get_init_inputs():
    return [in_features, out_features]'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

gemm_swish_chain_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#define CHECK_CUDA(x) TORCH_CHECK(x.is_cuda(), #x " must be a CUDA tensor")
#define CHECK_CONTIGUOUS(x) TORCH_CHECK(x.is_contiguous(), #x " must be contiguous")
#define CHECK_INPUT(x) CHECK_CUDA(x); CHECK_CONTIGUOUS(x)

#define TILE 16

__global__ void gemm_swish_chain_kernel(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y,
                            int M, int N, int K) {
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
        v = v / (1.0f + expf(-v));
        v = v / 2.0f;
        v = fminf(fmaxf(v, -1.0f), 1.0f);
        v = tanhf(v);
        v = fminf(fmaxf(v, -1.0f), 1.0f);
        y[(size_t)row * N + col] = v;
    }
}

torch::Tensor gemm_swish_chain(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, bool check_shapes) {
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
    gemm_swish_chain_kernel<<<grid, block, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(), M, N, K);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

gemm_swish_chain_cpp_source = r"""torch::Tensor gemm_swish_chain(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, bool check_shapes);"""

gemm_swish_chain_module = load_inline(
    name="gemm_swish_chain_tiled",
    cpp_sources=gemm_swish_chain_cpp_source,
    cuda_sources=gemm_swish_chain_cuda_source,
    functions=["gemm_swish_chain"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super(ModelNew, self).__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=bias)
        self.gemm_swish_chain = gemm_swish_chain_module

    def forward(self, x):
        return self.gemm_swish_chain.gemm_swish_chain(x.contiguous(), self.gemm.weight, self.gemm.bias, True)
'''
