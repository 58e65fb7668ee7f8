"""l2_059_matmul_swish_scaling__naive: KernelBench level2/59_Matmul_Swish_Scaling.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 128 -> 32, in_features 32768 -> 512, out_features 32768 -> 256.
"""

SOURCE = "KernelBench level2/59_Matmul_Swish_Scaling.py"
LEVEL = 2
FAMILY = "fused_gemm"
EXPECTED = "pass"
FEATURES = ["CHECK_INPUT_macros", "TORCH_CHECK", "cuda_stream", "device_guard", "factory_with_options", "launch_check", "options", "scalar_args"]
SIZE_CHANGES = [('batch_size = 128', 'batch_size = 32'), ('in_features = 32768', 'in_features = 512'), ('out_features = 32768', 'out_features = 256')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a matrix multiplication, applies Swish activation, and scales the result.
    """
    def __init__(self, in_features, out_features, scaling_factor):
        super(Model, self).__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor

    def forward(self, x):
        x = self.matmul(x)
        x = x * torch.sigmoid(x)  # Swish activation
        x = x * self.scaling_factor
        return x

batch_size = 32  # KernelBench: 128
in_features = 512  # KernelBench: 32768
out_features = 256  # KernelBench: 32768
scaling_factor = 2.0

def get_inputs():
    return [torch.rand(batch_size, in_features)]

def get_init_inputs():
    return [in_features, out_features, scaling_factor]'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

mm_swish_scale_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#define CHECK_CUDA(x) TORCH_CHECK(x.is_cuda(), #x " must be a CUDA tensor")
#define CHECK_CONTIGUOUS(x) TORCH_CHECK(x.is_contiguous(), #x " must be contiguous")
#define CHECK_INPUT(x) CHECK_CUDA(x); CHECK_CONTIGUOUS(x)

__global__ void mm_swish_scale_kernel(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y,
                            int M, int N, int K, float scaling_factor) {
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += x[(size_t)row * K + k] * w[(size_t)col * K + k];
        float v = acc + bias[col];
        v = v / (1.0f + expf(-v)) * scaling_factor;
        y[(size_t)row * N + col] = v;
    }
}

torch::Tensor mm_swish_scale(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double scaling_factor, bool check_shapes) {
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
    mm_swish_scale_kernel<<<grid, block, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(), M, N, K, static_cast<float>(scaling_factor));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

mm_swish_scale_cpp_source = r"""torch::Tensor mm_swish_scale(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double scaling_factor, bool check_shapes);"""

mm_swish_scale_module = load_inline(
    name="mm_swish_scale_naive",
    cpp_sources=mm_swish_scale_cpp_source,
    cuda_sources=mm_swish_scale_cuda_source,
    functions=["mm_swish_scale"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scaling_factor):
        super(ModelNew, self).__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor
        self.mm_swish_scale = mm_swish_scale_module

    def forward(self, x):
        return self.mm_swish_scale.mm_swish_scale(x.contiguous(), self.matmul.weight, self.matmul.bias, self.scaling_factor, True)
'''
