"""l1_034_instancenorm__mean_misses_last: KernelBench level1/34_InstanceNorm.py with a CUDA candidate; expected verdict wrong_output.

Sizes reduced from KernelBench: batch_size 112 -> 4, features 64 -> 16, dim1 512 -> 32, dim2 512 -> 32.
"""

SOURCE = "KernelBench level1/34_InstanceNorm.py"
LEVEL = 1
FAMILY = "norm"
EXPECTED = "wrong_output"
FEATURES = ["TORCH_CHECK", "block_reduction", "mistake", "scalar_args", "shared_memory"]
SIZE_CHANGES = [('batch_size = 112', 'batch_size = 4'), ('features = 64', 'features = 16'), ('dim1 = 512', 'dim1 = 32'), ('dim2 = 512', 'dim2 = 32')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs Instance Normalization.
    """
    def __init__(self, num_features: int):
        """
        Initializes the InstanceNorm layer.

        Args:
            num_features (int): Number of features in the input tensor.
        """
        super(Model, self).__init__()
        self.inorm = nn.InstanceNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies Instance Normalization to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, num_features, height, width).

        Returns:
            torch.Tensor: Output tensor with Instance Normalization applied, same shape as input.
        """
        return self.inorm(x)

batch_size = 4  # KernelBench: 112
features = 16  # KernelBench: 64
dim1 = 32  # KernelBench: 512
dim2 = 32  # KernelBench: 512

def get_inputs():
    x = torch.rand(batch_size, features, dim1, dim2)
    return [x]

def get_init_inputs():
    return [features]'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

instnorm_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

// one block per (n, c) plane: two-pass mean / variance with a shared-memory tree reduction
__global__ void instance_norm_kernel(const float* __restrict__ x, float* __restrict__ y, int HW, float eps) {
    __shared__ float buf[256];
    const float* in = x + (size_t)blockIdx.x * HW;
    float* out = y + (size_t)blockIdx.x * HW;
    const int tid = threadIdx.x;

    float s = 0.f;
    for (int i = tid; i < HW - 1; i += blockDim.x) s += in[i];
    buf[tid] = s;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) buf[tid] += buf[tid + stride];
        __syncthreads();
    }
    const float mean = buf[0] / HW;
    __syncthreads();

    float sq = 0.f;
    for (int i = tid; i < HW; i += blockDim.x) {
        const float d = in[i] - mean;
        sq += d * d;
    }
    buf[tid] = sq;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) buf[tid] += buf[tid + stride];
        __syncthreads();
    }
    const float inv_std = rsqrtf(buf[0] / HW + eps);
    for (int i = tid; i < HW; i += blockDim.x) out[i] = (in[i] - mean) * inv_std;
}

torch::Tensor instance_norm(torch::Tensor x, double eps) {
    TORCH_CHECK(x.dim() == 4, "expected (N, C, H, W)");
    TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
    auto y = torch::empty_like(x);
    const int planes = x.size(0) * x.size(1);
    const int HW = x.size(2) * x.size(3);
    instance_norm_kernel<<<planes, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), HW, (float)eps);
    return y;
}
"""

instnorm_cpp_source = r"""torch::Tensor instance_norm(torch::Tensor x, double eps);"""

instnorm_module = load_inline(
    name="instnorm_block",
    cpp_sources=instnorm_cpp_source,
    cuda_sources=instnorm_cuda_source,
    functions=["instance_norm"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, num_features: int):
        super(ModelNew, self).__init__()
        self.eps = 1e-5
        self.instnorm = instnorm_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.instnorm.instance_norm(x.contiguous(), self.eps)
'''
