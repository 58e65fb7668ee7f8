"""l1_025_swish__accessor: KernelBench level1/25_Swish.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 4096 -> 16, dim 393216 -> 16384.
"""

SOURCE = "KernelBench level1/25_Swish.py"
LEVEL = 1
FAMILY = "activation"
EXPECTED = "pass"
FEATURES = ["AT_DISPATCH_FLOATING_TYPES", "TORCH_CHECK", "grid_stride", "packed_accessor", "templates"]
SIZE_CHANGES = [('batch_size = 4096', 'batch_size = 16'), ('dim = 393216', 'dim = 16384')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a Swish activation.
    """
    def __init__(self):
        super(Model, self).__init__()
    
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies Swish activation to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of any shape.

        Returns:
            torch.Tensor: Output tensor with Swish applied, same shape as input.
        """
        return x * torch.sigmoid(x)

batch_size = 16  # KernelBench: 4096
dim = 16384  # KernelBench: 393216

def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]

def get_init_inputs():
    return []  # No special initialization inputs needed'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

swish_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

template <typename scalar_t>
__global__ void swish_2d_kernel(
    const torch::PackedTensorAccessor32<scalar_t, 2, torch::RestrictPtrTraits> x,
    torch::PackedTensorAccessor32<scalar_t, 2, torch::RestrictPtrTraits> y) {
    const int row = blockIdx.y;
    for (int col = blockIdx.x * blockDim.x + threadIdx.x; col < x.size(1); col += blockDim.x * gridDim.x) {
        const scalar_t v = x[row][col];
        y[row][col] = v / (scalar_t(1) + exp(-v));
    }
}

torch::Tensor swish_forward(torch::Tensor x) {
    TORCH_CHECK(x.dim() == 2, "swish_forward expects a 2D tensor, got ", x.dim(), "D");
    TORCH_CHECK(x.size(0) <= 65535, "too many rows for gridDim.y");
    auto y = torch::empty_like(x);
    const dim3 threads(256);
    const dim3 blocks(static_cast<unsigned>(std::min<int64_t>((x.size(1) + 255) / 256, 64)), static_cast<unsigned>(x.size(0)));
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "swish_forward", ([&] {
        swish_2d_kernel<scalar_t><<<blocks, threads>>>(
            x.packed_accessor32<scalar_t, 2, torch::RestrictPtrTraits>(),
            y.packed_accessor32<scalar_t, 2, torch::RestrictPtrTraits>());
    }));
    return y;
}
"""

swish_cpp_source = r"""torch::Tensor swish_forward(torch::Tensor x);"""

swish_module = load_inline(
    name="swish_accessor",
    cpp_sources=swish_cpp_source,
    cuda_sources=swish_cuda_source,
    functions=["swish_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.swish_op = swish_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.swish_op.swish_forward(x)
'''
