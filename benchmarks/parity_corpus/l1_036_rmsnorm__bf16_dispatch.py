"""l1_036_rmsnorm__bf16_dispatch: KernelBench level1/36_RMSNorm_.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 112 -> 4, features 64 -> 16, dim1 512 -> 32, dim2 512 -> 32.
"""

SOURCE = "KernelBench level1/36_RMSNorm_.py"
LEVEL = 1
FAMILY = "norm"
EXPECTED = "pass"
FEATURES = ["AT_DISPATCH_FLOATING_TYPES_AND2", "TORCH_CHECK", "bfloat16", "cuda_stream", "grid_stride", "half", "launch_check", "scalar_args", "templates"]
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
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <ATen/cuda/CUDAContext.h>

template <typename scalar_t>
__global__ void rms_norm_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, int64_t C, int64_t HW,
                                int64_t total, float eps) {
    for (int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; idx < total; idx += (int64_t)gridDim.x * blockDim.x) {
        const int64_t b = idx / HW;
        const int64_t p = idx % HW;
        const int64_t base = b * C * HW + p;
        float ss = 0.0f;
        for (int64_t c = 0; c < C; ++c) {
            const float v = static_cast<float>(x[base + c * HW]);
            ss += v * v;
        }
        const float inv = rsqrtf(ss / static_cast<float>(C) + eps);
        for (int64_t c = 0; c < C; ++c) {
            y[base + c * HW] = static_cast<scalar_t>(static_cast<float>(x[base + c * HW]) * inv);
        }
    }
}

torch::Tensor rms_norm_forward(const torch::Tensor& x, double eps) {
    TORCH_CHECK(x.is_cuda(), "x must be on CUDA");
    TORCH_CHECK(x.dim() >= 2, "x must have a channel dimension");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t B = xc.size(0), C = xc.size(1);
    const int64_t HW = xc.numel() / (B * C);
    const int64_t total = B * HW;
    const int threads = 256;
    const int blocks = static_cast<int>(std::min<int64_t>((total + threads - 1) / threads, 1024));
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "rms_norm_forward", ([&] {
        rms_norm_kernel<scalar_t><<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
            xc.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), C, HW, total, static_cast<float>(eps));
    }));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

rmsnorm_cpp_source = r"""torch::Tensor rms_norm_forward(const torch::Tensor& x, double eps);"""

rmsnorm_module = load_inline(
    name="rmsnorm_and2",
    cpp_sources=rmsnorm_cpp_source,
    cuda_sources=rmsnorm_cuda_source,
    functions=["rms_norm_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super(ModelNew, self).__init__()
        self.num_features = num_features
        self.eps = eps
        self.rmsnorm = rmsnorm_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.rmsnorm.rms_norm_forward(x.contiguous(), self.eps)
'''
