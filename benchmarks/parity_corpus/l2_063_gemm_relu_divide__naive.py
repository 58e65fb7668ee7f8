"""l2_063_gemm_relu_divide__naive: KernelBench level2/63_Gemm_ReLU_Divide.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 1024 -> 32, in_features 8192 -> 512, out_features 8192 -> 256.
"""

SOURCE = "KernelBench level2/63_Gemm_ReLU_Divide.py"
LEVEL = 2
FAMILY = "fused_gemm"
EXPECTED = "pass"
FEATURES = ["CHECK_INPUT_macros", "TORCH_CHECK", "cuda_stream", "device_guard", "factory_with_options", "launch_check", "options", "scalar_args"]
SIZE_CHANGES = [('batch_size = 1024', 'batch_size = 32'), ('in_features = 8192', 'in_features = 512'), ('out_features = 8192', 'out_features = 256')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a matrix multiplication, applies ReLU, and divides by a constant.
    """
    def __init__(self, in_features, out_features, divisor):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.divisor = divisor

    def forward(self, x):
        x = self.linear(x)
        x = torch.relu(x)
        x = x / self.divisor
        return x

batch_size = 32  # KernelBench: 1024
in_features = 512  # KernelBench: 8192
out_features = 256  # KernelBench: 8192
divisor = 2.0

def get_inputs():
    return [torch.rand(batch_size, in_features)]

def get_init_inputs():
    return [in_features, out_features, divisor]'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

gemm_relu_div_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#define CHECK_CUDA(x) TORCH_CHECK(x.is_cuda(), #x " must be a CUDA tensor")
#define CHECK_CONTIGUOUS(x) TORCH_CHECK(x.is_contiguous(), #x " must be contiguous")
#define CHECK_INPUT(x) CHECK_CUDA(x); CHECK_CONTIGUOUS(x)

__global__ void gemm_relu_div_kernel(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y,
                            int M, int N, int K, float divisor) {
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += x[(size_t)row * K + k] * w[(size_t)col * K + k];
        float v = acc + bias[col];
        v = fmaxf(v, 0.0f) / divisor;
        y[(size_t)row * N + col] = v;
    }
}

torch::Tensor gemm_relu_div(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double divisor, bool check_shapes) {
    CHECK_INPUT(x);
    CHECK_INPUT(weight);
    if (check_shapes) {
        TORCH_CHECK(x.dim() == 2 && weight.dim() == 2, "expected 2D x and weight");
        TORCH_CHECK(x.size(1) == weight.size(1), "in_features mismatch: ", x.size(1), " vs ", weight.size(1));
    }
    const at::cuda::OptionalCUDAGuard device_guard(device_of(x));
    const int M = x.size(0), K = x.size(1), N = weight.size(0);
    auto y = torch::empty({M, N}, x.options());
    dim3 block(16, 16);
    dim3 grid((N + 15) / 16, (M + 15) / 16);
    gemm_relu_div_kernel<<<grid, block, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(), M, N, K, static_cast<float>(divisor));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

gemm_relu_div_cpp_source = r"""torch::Tensor gemm_relu_div(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double divisor, bool check_shapes);"""

gemm_relu_div_module = load_inline(
    name="gemm_relu_div_naive",
    cpp_sources=gemm_relu_div_cpp_source,
    cuda_sources=gemm_relu_div_cuda_source,
    functions=["gemm_relu_div"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, divisor):
        super(ModelNew, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.divisor = divisor
        self.gemm_relu_div = gemm_relu_div_module

    def forward(self, x):
        return self.gemm_relu_div.gemm_relu_div(x.contiguous(), self.linear.weight, self.linear.bias, self.divisor, True)
'''
