"""l1_019_relu__dispatch_grid_stride: KernelBench level1/19_ReLU.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 4096 -> 16, dim 393216 -> 16384.
"""

SOURCE = "KernelBench level1/19_ReLU.py"
LEVEL = 1
FAMILY = "activation"
EXPECTED = "pass"
FEATURES = ["AT_DISPATCH_FLOATING_TYPES", "CHECK_INPUT_macros", "TORCH_CHECK", "cuda_stream", "grid_stride", "launch_check", "templates"]
SIZE_CHANGES = [('batch_size = 4096', 'batch_size = 16'), ('dim = 393216', 'dim = 16384')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a ReLU activation.
    """
    def __init__(self):
        super(Model, self).__init__()
    
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies ReLU activation to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of any shape.

        Returns:
            torch.Tensor: Output tensor with ReLU applied, same shape as input.
        """
        return torch.relu(x)

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

relu_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#define CHECK_CUDA(x) TORCH_CHECK(x.is_cuda(), #x " must be a CUDA tensor")
#define CHECK_CONTIGUOUS(x) TORCH_CHECK(x.is_contiguous(), #x " must be contiguous")
#define CHECK_INPUT(x) CHECK_CUDA(x); CHECK_CONTIGUOUS(x)

template <typename scalar_t>
__global__ void relu_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, const int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)blockDim.x * gridDim.x) {
        const scalar_t v = x[i];
        y[i] = v > scalar_t(0) ? v : scalar_t(0);
    }
}

torch::Tensor relu_forward(torch::Tensor x) {
    CHECK_INPUT(x);
    auto y = torch::empty_like(x);
    const int64_t n = x.numel();
    const int threads = 512;
    const int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 4096));
    auto stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "relu_forward", ([&] {
        relu_kernel<scalar_t><<<blocks, threads, 0, stream>>>(x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), n);
    }));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

relu_cpp_source = r"""torch::Tensor relu_forward(torch::Tensor x);"""

relu_module = load_inline(
    name="relu_dispatch",
    cpp_sources=relu_cpp_source,
    cuda_sources=relu_cuda_source,
    functions=["relu_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.relu_op = relu_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu_op.relu_forward(x.contiguous())
'''
