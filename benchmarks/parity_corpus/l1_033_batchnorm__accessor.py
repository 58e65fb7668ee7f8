"""l1_033_batchnorm__accessor: KernelBench level1/33_BatchNorm.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 64 -> 4, features 64 -> 16, dim1 512 -> 32, dim2 512 -> 32.
"""

SOURCE = "KernelBench level1/33_BatchNorm.py"
LEVEL = 1
FAMILY = "norm"
EXPECTED = "pass"
FEATURES = ["AT_DISPATCH_FLOATING_TYPES", "TORCH_CHECK", "cuda_stream", "grid_stride", "launch_check", "packed_accessor", "scalar_args", "templates"]
SIZE_CHANGES = [('batch_size = 64', 'batch_size = 4'), ('features = 64', 'features = 16'), ('dim1 = 512', 'dim1 = 32'), ('dim2 = 512', 'dim2 = 32')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs Batch Normalization.
    """
    def __init__(self, num_features: int):
        """
        Initializes the BatchNorm layer.

        Args:
            num_features (int): Number of features in the input tensor.
        """
        super(Model, self).__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies Batch Normalization to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, num_features, *).

        Returns:
            torch.Tensor: Output tensor with Batch Normalization applied, same shape as input.
        """
        return self.bn(x)

batch_size = 4  # KernelBench: 64
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

batchnorm_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

// inference batch norm: y = (x - running_mean) / sqrt(running_var + eps) * weight + bias
template <typename scalar_t>
__global__ void batchnorm_infer_kernel(
    const torch::PackedTensorAccessor32<scalar_t, 4, torch::RestrictPtrTraits> x,
    const torch::PackedTensorAccessor32<scalar_t, 1, torch::RestrictPtrTraits> mean,
    const torch::PackedTensorAccessor32<scalar_t, 1, torch::RestrictPtrTraits> var,
    const torch::PackedTensorAccessor32<scalar_t, 1, torch::RestrictPtrTraits> weight,
    const torch::PackedTensorAccessor32<scalar_t, 1, torch::RestrictPtrTraits> bias,
    torch::PackedTensorAccessor32<scalar_t, 4, torch::RestrictPtrTraits> y, float eps) {
    const int n = blockIdx.z;
    const int c = blockIdx.y;
    const scalar_t inv_std = scalar_t(1) / sqrt(var[c] + scalar_t(eps));
    const scalar_t scale = weight[c] * inv_std;
    const scalar_t shift = bias[c] - mean[c] * scale;
    const int hw = x.size(2) * x.size(3);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < hw; i += blockDim.x * gridDim.x) {
        const int h = i / x.size(3);
        const int w = i % x.size(3);
        y[n][c][h][w] = x[n][c][h][w] * scale + shift;
    }
}

torch::Tensor batchnorm_forward(torch::Tensor x, torch::Tensor running_mean, torch::Tensor running_var,
                                torch::Tensor weight, torch::Tensor bias, double eps) {
    TORCH_CHECK(x.dim() == 4, "expected NCHW input");
    TORCH_CHECK(running_mean.numel() == x.size(1), "running_mean has the wrong size");
    auto y = torch::empty_like(x);
    const dim3 blocks(8, x.size(1), x.size(0));
    const int threads = 256;
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "batchnorm_forward", ([&] {
        batchnorm_infer_kernel<scalar_t><<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
            x.packed_accessor32<scalar_t, 4, torch::RestrictPtrTraits>(),
            running_mean.packed_accessor32<scalar_t, 1, torch::RestrictPtrTraits>(),
            running_var.packed_accessor32<scalar_t, 1, torch::RestrictPtrTraits>(),
            weight.packed_accessor32<scalar_t, 1, torch::RestrictPtrTraits>(),
            bias.packed_accessor32<scalar_t, 1, torch::RestrictPtrTraits>(),
            y.packed_accessor32<scalar_t, 4, torch::RestrictPtrTraits>(), static_cast<float>(eps));
    }));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

batchnorm_cpp_source = r"""torch::Tensor batchnorm_forward(torch::Tensor x, torch::Tensor running_mean, torch::Tensor running_var,
                                torch::Tensor weight, torch::Tensor bias, double eps);"""

batchnorm_module = load_inline(
    name="batchnorm_accessor",
    cpp_sources=batchnorm_cpp_source,
    cuda_sources=batchnorm_cuda_source,
    functions=["batchnorm_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, num_features: int):
        super(ModelNew, self).__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)
        self.batchnorm = batchnorm_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.batchnorm.batchnorm_forward(x.contiguous(), self.bn.running_mean, self.bn.running_var, self.bn.weight, self.bn.bias, self.bn.eps)
'''
