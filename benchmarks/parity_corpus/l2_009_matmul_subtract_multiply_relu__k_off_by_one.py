"""l2_009_matmul_subtract_multiply_relu__k_off_by_one: KernelBench level2/9_Matmul_Subtract_Multiply_ReLU.py with a CUDA candidate; expected verdict pass.

Written as a mistake (the K loop stops one short), and measured a pass on the H200 (both build paths, 2026-12-01):
relu((x @ W.T + b - 2.0) * 1.5) is 0 everywhere for torch.rand inputs at these sizes, so no K term shows.
KernelBench's problem itself cannot tell this kernel from a right one.

Sizes reduced from KernelBench: batch_size 1024 -> 32, in_features 8192 -> 512, out_features 8192 -> 256.
"""

SOURCE = "KernelBench level2/9_Matmul_Subtract_Multiply_ReLU.py"
LEVEL = 2
FAMILY = "fused_gemm"
EXPECTED = "pass"
FEATURES = ["CHECK_INPUT_macros", "TORCH_CHECK", "cuda_stream", "device_guard", "factory_with_options", "launch_check", "options", "scalar_args"]
SIZE_CHANGES = [('batch_size = 1024', 'batch_size = 32'), ('in_features = 8192', 'in_features = 512'), ('out_features = 8192', 'out_features = 256')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Model that performs a matrix multiplication, subtraction, multiplication, and ReLU activation.
    """
    def __init__(self, in_features, out_features, subtract_value, multiply_value):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.subtract_value = subtract_value
        self.multiply_value = multiply_value

    def forward(self, x):
        x = self.linear(x)
        x = x - self.subtract_value
        x = x * self.multiply_value
        x = torch.relu(x)
        return x

batch_size = 32  # KernelBench: 1024
in_features = 512  # KernelBench: 8192
out_features = 256  # KernelBench: 8192
subtract_value = 2.0
multiply_value = 1.5

def get_inputs():
    return [torch.rand(batch_size, in_features)]

def get_init_inputs():
    return [in_features, out_features, subtract_value, multiply_value]'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

mm_sub_mul_relu_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#define CHECK_CUDA(x) TORCH_CHECK(x.is_cuda(), #x " must be a CUDA tensor")
#define CHECK_CONTIGUOUS(x) TORCH_CHECK(x.is_contiguous(), #x " must be contiguous")
#define CHECK_INPUT(x) CHECK_CUDA(x); CHECK_CONTIGUOUS(x)

__global__ void mm_sub_mul_relu_kernel(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y,
                            int M, int N, int K, float subtract_value, float multiply_value) {
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K - 1; ++k) acc += x[(size_t)row * K + k] * w[(size_t)col * K + k];
        float v = acc + bias[col];
        v = fmaxf((v - subtract_value) * multiply_value, 0.0f);
        y[(size_t)row * N + col] = v;
    }
}

torch::Tensor mm_sub_mul_relu(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double subtract_value, double multiply_value, bool check_shapes) {
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
    mm_sub_mul_relu_kernel<<<grid, block, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(), M, N, K, static_cast<float>(subtract_value), static_cast<float>(multiply_value));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

mm_sub_mul_relu_cpp_source = r"""torch::Tensor mm_sub_mul_relu(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double subtract_value, double multiply_value, bool check_shapes);"""

mm_sub_mul_relu_module = load_inline(
    name="mm_sub_mul_relu_naive",
    cpp_sources=mm_sub_mul_relu_cpp_source,
    cuda_sources=mm_sub_mul_relu_cuda_source,
    functions=["mm_sub_mul_relu"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, subtract_value, multiply_value):
        super(ModelNew, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.subtract_value = subtract_value
        self.multiply_value = multiply_value
        self.mm_sub_mul_relu = mm_sub_mul_relu_module

    def forward(self, x):
        return self.mm_sub_mul_relu.mm_sub_mul_relu(x.contiguous(), self.linear.weight, self.linear.bias, self.subtract_value, self.multiply_value, True)
'''
