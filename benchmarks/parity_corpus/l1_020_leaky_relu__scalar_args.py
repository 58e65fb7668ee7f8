"""l1_020_leaky_relu__scalar_args: KernelBench level1/20_LeakyReLU.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 4096 -> 16, dim 393216 -> 16384.
"""

SOURCE = "KernelBench level1/20_LeakyReLU.py"
LEVEL = 1
FAMILY = "activation"
EXPECTED = "pass"
FEATURES = ["CHECK_INPUT_macros", "TORCH_CHECK", "cuda_stream", "grid_stride", "launch_check", "options", "scalar_args", "split_host"]
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
#include <ATen/cuda/CUDAContext.h>

__global__ void leaky_relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n, float negative_slope) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (; i < n; i += step) {
        const float v = x[i];
        y[i] = v > 0.0f ? v : v * negative_slope;
    }
}

void leaky_relu_launcher(const torch::Tensor& x, torch::Tensor& y, double negative_slope) {
    const int64_t n = x.numel();
    const int threads = 256;
    int blocks = static_cast<int>((n + threads - 1) / threads);
    if (blocks > 1024) blocks = 1024;
    leaky_relu_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), n, static_cast<float>(negative_slope));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}
"""

leaky_relu_cpp_source = r"""
#include <torch/extension.h>

void leaky_relu_launcher(const torch::Tensor& x, torch::Tensor& y, double negative_slope);

#define CHECK_CUDA(x) TORCH_CHECK(x.device().is_cuda(), #x " must be a CUDA tensor")
#define CHECK_CONTIGUOUS(x) TORCH_CHECK(x.is_contiguous(), #x " must be contiguous")
#define CHECK_INPUT(x) do { CHECK_CUDA(x); CHECK_CONTIGUOUS(x); } while (0)

torch::Tensor leaky_relu_forward(torch::Tensor x, double negative_slope, bool inplace) {
    CHECK_INPUT(x);
    TORCH_CHECK(x.dtype() == torch::kFloat32, "leaky_relu_forward: x must be float32");
    torch::Tensor y = inplace ? x : torch::empty_like(x);
    leaky_relu_launcher(x, y, negative_slope);
    return y;
}
"""

leaky_relu_module = load_inline(
    name="leaky_relu_scalar_args",
    cpp_sources=leaky_relu_cpp_source,
    cuda_sources=leaky_relu_cuda_source,
    functions=["leaky_relu_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super(ModelNew, self).__init__()
        self.negative_slope = negative_slope
        self.leaky_relu_op = leaky_relu_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.leaky_relu_op.leaky_relu_forward(x.contiguous(), self.negative_slope, False)
'''
