"""l1_036_rmsnorm__simple: KernelBench level1/36_RMSNorm_.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 112 -> 4, features 64 -> 16, dim1 512 -> 32, dim2 512 -> 32.
"""

SOURCE = "KernelBench level1/36_RMSNorm_.py"
LEVEL = 1
FAMILY = "norm"
EXPECTED = "pass"
FEATURES = ["scalar_args"]
SIZE_CHANGES = [('batch_size = 112', 'batch_size = 4'), ('features = 64', 'features = 16'), ('dim1 = 512', 'dim1 = 32'), ('dim2 = 512', 'dim2 = 32')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs RMS Normalization.
    """
    def __init__(self, num_features: int, eps: float = 1e-5):
        """
        Initializes the RMSNorm layer.

        Args:
            num_features (int): Number of features in the input tensor.
            eps (float, optional): A small value added to the denominator to avoid division by zero. Defaults to 1e-5.
        """
        super(Model, self).__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies RMS Normalization to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, num_features, *).

        Returns:
            torch.Tensor: Output tensor with RMS Normalization applied, same shape as input.
        """
        # Calculate the RMS along the feature dimension
        rms = torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + self.eps)

        # Normalize the input by dividing by the RMS
        return x / rms

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

rmsnorm_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

// x: (B, C, H, W); normalise over C for every (b, h, w)
__global__ void rms_norm_kernel(const float* __restrict__ x, float* __restrict__ y, int B, int C, int HW, float eps) {
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * HW) return;
    const int b = idx / HW;
    const int p = idx % HW;
    const float* in = x + (size_t)b * C * HW + p;
    float* out = y + (size_t)b * C * HW + p;
    float ss = 0.0f;
    for (int c = 0; c < C; ++c) {
        const float v = in[(size_t)c * HW];
        ss += v * v;
    }
    const float inv_rms = 1.0f / sqrtf(ss / C + eps);
    for (int c = 0; c < C; ++c) out[(size_t)c * HW] = in[(size_t)c * HW] * inv_rms;
}

torch::Tensor rms_norm_cuda(torch::Tensor x, float eps) {
    auto y = torch::empty_like(x);
    const int B = x.size(0), C = x.size(1);
    const int HW = x.numel() / (B * C);
    const int threads = 256;
    rms_norm_kernel<<<(B * HW + threads - 1) / threads, threads>>>(x.data_ptr<float>(), y.data_ptr<float>(), B, C, HW, eps);
    return y;
}
"""

rmsnorm_cpp_source = r"""torch::Tensor rms_norm_cuda(torch::Tensor x, float eps);"""

rmsnorm_module = load_inline(
    name="rmsnorm_simple",
    cpp_sources=rmsnorm_cpp_source,
    cuda_sources=rmsnorm_cuda_source,
    functions=["rms_norm_cuda"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super(ModelNew, self).__init__()
        self.num_features = num_features
        self.eps = eps
        self.rmsnorm = rmsnorm_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.rmsnorm.rms_norm_cuda(x.contiguous(), self.eps)
'''
