"""l1_020_leaky_relu__half_dispatch: KernelBench level1/20_LeakyReLU.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 4096 -> 16, dim 393216 -> 16384.
"""

SOURCE = "KernelBench level1/20_LeakyReLU.py"
LEVEL = 1
FAMILY = "activation"
EXPECTED = "pass"
FEATURES = ["AT_DISPATCH_FLOATING_TYPES_AND_HALF", "TORCH_CHECK", "factory_with_options", "half", "launch_check", "options", "templates"]
SIZE_CHANGES = [('batch_size = 4096', 'batch_size = 16'), ('dim = 393216', 'dim = 16384')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a LeakyReLU activation.
    """
    def __init__(self, negative_slope: float = 0.01):
        """
        Initializes the LeakyReLU module.

        Args:
            negative_slope (float, optional): The negative slope of the activation function. Defaults to 0.01.
        """
        super(Model, self).__init__()
        self.negative_slope = negative_slope
    
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies LeakyReLU activation to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of any shape.

        Returns:
            torch.Tensor: Output tensor with LeakyReLU applied, same shape as input.
        """
        return torch.nn.functional.leaky_relu(x, negative_slope=self.negative_slope)

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

leaky_relu_cuda_source = r"""
#include <torch/extension.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_fp16.h>

template <typename scalar_t>
__global__ void leaky_relu_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out, size_t n) {
    const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) {
        const float v = static_cast<float>(in[i]);
        out[i] = static_cast<scalar_t>(v > 0.0f ? v : v * 0.01f);
    }
}

torch::Tensor leaky_relu_cuda(torch::Tensor input) {
    TORCH_CHECK(input.device().is_cuda(), "input must be on a CUDA device");
    TORCH_CHECK(input.dim() >= 1, "input must have at least one dimension");
    auto in = input.contiguous();
    auto out = torch::empty(in.sizes(), in.options());
    const size_t n = in.numel();
    const int block = 256;
    const int grid = static_cast<int>((n + block - 1) / block);
    AT_DISPATCH_FLOATING_TYPES_AND_HALF(in.scalar_type(), "leaky_relu_cuda", ([&] {
        leaky_relu_kernel<scalar_t><<<grid, block>>>(in.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), n);
    }));
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "leaky_relu kernel launch failed: ", cudaGetErrorString(err));
    return out;
}
"""

leaky_relu_cpp_source = r"""torch::Tensor leaky_relu_cuda(torch::Tensor input);"""

leaky_relu_module = load_inline(
    name="leaky_relu_half",
    cpp_sources=leaky_relu_cpp_source,
    cuda_sources=leaky_relu_cuda_source,
    functions=["leaky_relu_cuda"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super(ModelNew, self).__init__()
        self.negative_slope = negative_slope
        self.leaky_relu_op = leaky_relu_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.leaky_relu_op.leaky_relu_cuda(x)
'''
