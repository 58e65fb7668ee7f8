"""l2_068_matmul_min_subtract__naive: KernelBench level2/68_Matmul_Min_Subtract.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 128 -> 32, in_features 16384 -> 512, out_features 16384 -> 256.
"""

SOURCE = "KernelBench level2/68_Matmul_Min_Subtract.py"
LEVEL = 2
FAMILY = "fused_gemm"
EXPECTED = "pass"
FEATURES = ["CHECK_INPUT_macros", "TORCH_CHECK", "cuda_stream", "device_guard", "factory_with_options", "launch_check", "options", "scalar_args"]
SIZE_CHANGES = [('batch_size = 128', 'batch_size = 32'), ('in_features = 16384', 'in_features = 512'), ('out_features = 16384', 'out_features = 256')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a matrix multiplication, applies minimum, and subtracts a constant.
    """
    def __init__(self, in_features, out_features, constant):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.constant = nn.Parameter(torch.tensor(constant))

    def forward(self, x):
        x = self.linear(x)
        x = torch.min(x, self.constant)
        x = x - self.constant
        return x

batch_size = 32  # KernelBench: 128
in_features = 512  # KernelBench: 16384
out_features = 256  # KernelBench: 16384
constant = 2.0

def get_inputs():
    return [torch.rand(batch_size, in_features)]

def get_init_inputs():
    return [in_features, out_features, constant]'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

mm_min_sub_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#define CHECK_CUDA(x) TORCH_CHECK(x.is_cuda(), #x " must be a CUDA tensor")
#define CHECK_CONTIGUOUS(x) TORCH_CHECK(x.is_contiguous(), #x " must be contiguous")
#define CHECK_INPUT(x) CHECK_CUDA(x); CHECK_CONTIGUOUS(x)

__global__ void mm_min_subtract_kernel(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y,
                            int M, int N, int K, const float* __restrict__ constant) {
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += x[(size_t)row * K + k] * w[(size_t)col * K + k];
        float v = acc + bias[col];
        v = fminf(v, constant[0]) - constant[0];
        y[(size_t)row * N + col] = v;
    }
}

torch::Tensor mm_min_subtract(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, torch::Tensor constant, bool check_shapes) {
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
    mm_min_subtract_kernel<<<grid, block, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(), M, N, K, constant.data_ptr<float>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

mm_min_sub_cpp_source = r"""torch::Tensor mm_min_subtract(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, torch::Tensor constant, bool check_shapes);"""

mm_min_sub_module = load_inline(
    name="mm_min_sub_naive",
    cpp_sources=mm_min_sub_cpp_source,
    cuda_sources=mm_min_sub_cuda_source,
    functions=["mm_min_subtract"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, constant):
        super(ModelNew, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.constant = nn.Parameter(torch.tensor(constant))
        self.mm_min_sub = mm_min_sub_module

    def forward(self, x):
        return self.mm_min_sub.mm_min_subtract(x.contiguous(), self.linear.weight, self.linear.bias, self.constant, True)
'''
