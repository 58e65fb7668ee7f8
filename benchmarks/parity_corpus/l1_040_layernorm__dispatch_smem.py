"""l1_040_layernorm__dispatch_smem: KernelBench level1/40_LayerNorm.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 16 -> 8, features 64 -> 8, dim1 256 -> 16, dim2 256 -> 16.
"""

SOURCE = "KernelBench level1/40_LayerNorm.py"
LEVEL = 1
FAMILY = "norm"
EXPECTED = "pass"
FEATURES = ["AT_DISPATCH_FLOATING_TYPES", "block_reduction", "scalar_args", "shared_memory", "templates"]
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

template <typename scalar_t>
__global__ void layernorm_kernel(const scalar_t* __restrict__ input, const scalar_t* __restrict__ weight,
                                 const scalar_t* __restrict__ bias, scalar_t* __restrict__ output, int D, float eps) {
    extern __shared__ float smem[];
    float* s_sum = smem;
    float* s_sq = smem + blockDim.x;
    const scalar_t* x = input + (size_t)blockIdx.x * D;
    scalar_t* y = output + (size_t)blockIdx.x * D;
    float sum = 0.f, sq = 0.f;
    for (int i = threadIdx.x; i < D; i += blockDim.x) {
        const float v = static_cast<float>(x[i]);
        sum += v;
        sq += v * v;
    }
    s_sum[threadIdx.x] = sum;
    s_sq[threadIdx.x] = sq;
    __syncthreads();
    for (int stride = blockDim.x >> 1; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) {
            s_sum[threadIdx.x] += s_sum[threadIdx.x + stride];
            s_sq[threadIdx.x] += s_sq[threadIdx.x + stride];
        }
        __syncthreads();
    }
    const float mean = s_sum[0] / D;
    const float var = fmaxf(s_sq[0] / D - mean * mean, 0.f);
    const float inv_std = rsqrtf(var + eps);
    for (int i = threadIdx.x; i < D; i += blockDim.x) {
        const float v = static_cast<float>(x[i]);
        y[i] = static_cast<scalar_t>((v - mean) * inv_std * static_cast<float>(weight[i]) + static_cast<float>(bias[i]));
    }
}

torch::Tensor layernorm_cuda(torch::Tensor input, torch::Tensor weight, torch::Tensor bias, double eps) {
    const int D = weight.numel();
    const int rows = input.numel() / D;
    auto output = torch::empty_like(input);
    const int threads = 256;
    const size_t smem = 2 * threads * sizeof(float);
    AT_DISPATCH_FLOATING_TYPES(input.scalar_type(), "layernorm_cuda", ([&] {
        layernorm_kernel<scalar_t><<<rows, threads, smem>>>(input.data_ptr<scalar_t>(), weight.data_ptr<scalar_t>(),
                                                             bias.data_ptr<scalar_t>(), output.data_ptr<scalar_t>(), D,
                                                             static_cast<float>(eps));
    }));
    return output;
}
"""

layernorm_cpp_source = r"""torch::Tensor layernorm_cuda(torch::Tensor input, torch::Tensor weight, torch::Tensor bias, double eps);"""

layernorm_module = load_inline(
    name="layernorm_smem",
    cpp_sources=layernorm_cpp_source,
    cuda_sources=layernorm_cuda_source,
    functions=["layernorm_cuda"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super(ModelNew, self).__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)
        self.layernorm = layernorm_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layernorm.layernorm_cuda(x.contiguous(), self.ln.weight, self.ln.bias, self.ln.eps)
'''
