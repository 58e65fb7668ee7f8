"""l1_049_max_reduction__warp: KernelBench level1/49_Max_reduction_over_a_dimension.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 128 -> 16, dim1 4096 -> 256, dim2 4095 -> 255.
"""

SOURCE = "KernelBench level1/49_Max_reduction_over_a_dimension.py"
LEVEL = 1
FAMILY = "reduction"
EXPECTED = "pass"
FEATURES = ["AT_DISPATCH_FLOATING_TYPES", "TORCH_CHECK", "cuda_stream", "factory_with_options", "launch_check", "options", "scalar_args", "templates", "warp_shuffle"]
SIZE_CHANGES = [('batch_size = 128', 'batch_size = 16'), ('dim1 = 4096', 'dim1 = 256'), ('dim2 = 4095', 'dim2 = 255')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs Max reduction over a specific dimension.
    """
    def __init__(self, dim: int):
        """
        Initializes the model with the dimension to reduce over.

        Args:
            dim (int): The dimension to reduce over.
        """
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies Max reduction over the specified dimension to the input tensor.

        Args:
            x (torch.Tensor): Input tensor.

        Returns:
            torch.Tensor: Output tensor after Max reduction over the specified dimension.
        """
        return torch.max(x, dim=self.dim)[0]

batch_size = 16  # KernelBench: 128
dim1 = 256  # KernelBench: 4096
dim2 = 255  # KernelBench: 4095

def get_inputs():
    x = torch.rand(batch_size, dim1, dim2)
    return [x]

def get_init_inputs():
    return [1] # Example, change to desired dimension'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

max_red_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

template <typename scalar_t>
__global__ void max_reduce_warp_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ out,
                                        int outer, int r, int inner) {
    const int warps_per_block = blockDim.x / 32;
    const int warp = blockIdx.x * warps_per_block + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (warp >= outer * inner) return;
    const int o = warp / inner;
    const int i = warp % inner;
    float acc = -INFINITY;
    for (int k = lane; k < r; k += 32) {
        const float v = static_cast<float>(x[((size_t)o * r + k) * inner + i]);
        acc = fmaxf(acc, v);
    }
#pragma unroll
    for (int off = 16; off > 0; off /= 2) {
        acc = fmaxf(acc, __shfl_xor_sync(0xffffffff, acc, off));
    }
    if (lane == 0) out[warp] = static_cast<scalar_t>(acc);
}

torch::Tensor max_reduce(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(x.device().is_cuda(), "x must live on the GPU");
    TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
    TORCH_CHECK(x.dim() == 3 && dim == 1, "this kernel reduces dim 1 of a 3D tensor");
    const int outer = x.size(0), r = x.size(1), inner = x.size(2);
    auto out = torch::empty({outer, inner}, x.options());
    const int threads = 256;
    const int blocks = (outer * inner + threads / 32 - 1) / (threads / 32);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "max_reduce", ([&] {
        max_reduce_warp_kernel<scalar_t><<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
            x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), outer, r, inner);
    }));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

max_red_cpp_source = r"""torch::Tensor max_reduce(torch::Tensor x, int64_t dim);"""

max_red_module = load_inline(
    name="max_red_warp",
    cpp_sources=max_red_cpp_source,
    cuda_sources=max_red_cuda_source,
    functions=["max_reduce"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim
        self.max_red = max_red_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.max_red.max_reduce(x.contiguous(), self.dim)
'''
