"""l1_040_layernorm__welford_tuple: KernelBench level1/40_LayerNorm.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 16 -> 8, features 64 -> 8, dim1 256 -> 16, dim2 256 -> 16.
"""

SOURCE = "KernelBench level1/40_LayerNorm.py"
LEVEL = 1
FAMILY = "norm"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "block_reduction", "cuda_stream", "factory_with_options", "launch_check", "options", "shared_memory", "tuple_return"]
SIZE_CHANGES = [('batch_size = 16', 'batch_size = 8'), ('features = 64', 'features = 8'), ('dim1 = 256', 'dim1 = 16'), ('dim2 = 256', 'dim2 = 16')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs Layer Normalization.
    """
    def __init__(self, normalized_shape: tuple):
        """
        Initializes the LayerNorm layer.

        Args:
            normalized_shape (tuple): Shape of the input tensor to be normalized.
        """
        super(Model, self).__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies Layer Normalization to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of shape (*, normalized_shape).

        Returns:
            torch.Tensor: Output tensor with Layer Normalization applied, same shape as input.
        """
        return self.ln(x)

batch_size = 8  # KernelBench: 16
features = 8  # KernelBench: 64
dim1 = 16  # KernelBench: 256
dim2 = 16  # KernelBench: 256

def get_inputs():
    x = torch.rand(batch_size, features, dim1, dim2)
    return [x]

def get_init_inputs():
    return [(features, dim1, dim2)]'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

layernorm_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <tuple>

// one block per sample; Welford statistics merged across the block in shared memory
struct WelfordData { float mean; float m2; float count; };

__device__ __forceinline__ WelfordData welford_merge(WelfordData a, WelfordData b) {
    const float count = a.count + b.count;
    if (count == 0.0f) return a;
    const float delta = b.mean - a.mean;
    const float mean = a.mean + delta * (b.count / count);
    const float m2 = a.m2 + b.m2 + delta * delta * (a.count * b.count / count);
    return {mean, m2, count};
}

__global__ void layer_norm_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                                  const float* __restrict__ beta, float* __restrict__ y, float* __restrict__ mean_out,
                                  float* __restrict__ rstd_out, int64_t D, float eps) {
    __shared__ WelfordData shared[256];
    const float* row = x + blockIdx.x * D;
    WelfordData w{0.0f, 0.0f, 0.0f};
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
        const float v = row[i];
        w.count += 1.0f;
        const float delta = v - w.mean;
        w.mean += delta / w.count;
        w.m2 += delta * (v - w.mean);
    }
    shared[threadIdx.x] = w;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) shared[threadIdx.x] = welford_merge(shared[threadIdx.x], shared[threadIdx.x + s]);
        __syncthreads();
    }
    const float mean = shared[0].mean;
    const float rstd = rsqrtf(shared[0].m2 / shared[0].count + eps);
    if (threadIdx.x == 0) {
        mean_out[blockIdx.x] = mean;
        rstd_out[blockIdx.x] = rstd;
    }
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
        y[blockIdx.x * D + i] = (row[i] - mean) * rstd * gamma[i] + beta[i];
    }
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> layer_norm_forward(torch::Tensor x, torch::Tensor weight,
                                                                           torch::Tensor bias, double eps) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(weight.numel() == bias.numel(), "weight and bias must match");
    const int64_t D = weight.numel();
    TORCH_CHECK(x.numel() % D == 0, "normalized shape does not divide the input");
    const int64_t rows = x.numel() / D;
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    auto mean = torch::empty({rows}, xc.options());
    auto rstd = torch::empty({rows}, xc.options());
    layer_norm_kernel<<<rows, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), weight.contiguous().data_ptr<float>(), bias.contiguous().data_ptr<float>(),
        y.data_ptr<float>(), mean.data_ptr<float>(), rstd.data_ptr<float>(), D, static_cast<float>(eps));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return std::make_tuple(y, mean, rstd);
}
"""

layernorm_cpp_source = r"""std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> layer_norm_forward(torch::Tensor x, torch::Tensor weight,
    torch::Tensor bias, double eps);"""

layernorm_module = load_inline(
    name="layernorm_welford_tuple",
    cpp_sources=layernorm_cpp_source,
    cuda_sources=layernorm_cuda_source,
    functions=["layer_norm_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super(ModelNew, self).__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)
        self.layernorm = layernorm_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layernorm.layer_norm_forward(x.contiguous(), self.ln.weight, self.ln.bias, self.ln.eps)[0]
'''
