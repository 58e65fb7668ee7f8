"""l1_021_sigmoid__scalar_args: KernelBench level1/21_Sigmoid.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 4096 -> 16, dim 393216 -> 16384.
"""

SOURCE = "KernelBench level1/21_Sigmoid.py"
LEVEL = 1
FAMILY = "activation"
EXPECTED = "pass"
FEATURES = ["CHECK_INPUT_macros", "TORCH_CHECK", "cuda_stream", "grid_stride", "launch_check", "options", "scalar_args", "split_host"]
SIZE_CHANGES = [('batch_size = 4096', 'batch_size = 16'), ('dim = 393216', 'dim = 16384')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a Sigmoid activation.
    """
    def __init__(self):
        super(Model, self).__init__()
    
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies Sigmoid activation to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of any shape.

        Returns:
            torch.Tensor: Output tensor with Sigmoid applied, same shape as input.
        """
        return torch.sigmoid(x)

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

sigmoid_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void sigmoid_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (; i < n; i += step) {
        const float v = x[i];
        y[i] = 1.0f / (1.0f + expf(-v));
    }
}

void sigmoid_launcher(const torch::Tensor& x, torch::Tensor& y) {
    const int64_t n = x.numel();
    const int threads = 256;
    int blocks = static_cast<int>((n + threads - 1) / threads);
    if (blocks > 1024) blocks = 1024;
    sigmoid_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}
"""

sigmoid_cpp_source = r"""
#include <torch/extension.h>

void sigmoid_launcher(const torch::Tensor& x, torch::Tensor& y);

#define CHECK_CUDA(x) TORCH_CHECK(x.device().is_cuda(), #x " must be a CUDA tensor")
#define CHECK_CONTIGUOUS(x) TORCH_CHECK(x.is_contiguous(), #x " must be contiguous")
#define CHECK_INPUT(x) do { CHECK_CUDA(x); CHECK_CONTIGUOUS(x); } while (0)

torch::Tensor sigmoid_forward(torch::Tensor x, bool inplace) {
    CHECK_INPUT(x);
    TORCH_CHECK(x.dtype() == torch::kFloat32, "sigmoid_forward: x must be float32");
    torch::Tensor y = inplace ? x : torch::empty_like(x);
    sigmoid_launcher(x, y);
    return y;
}
"""

sigmoid_module = load_inline(
    name="sigmoid_scalar_args",
    cpp_sources=sigmoid_cpp_source,
    cuda_sources=sigmoid_cuda_source,
    functions=["sigmoid_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.sigmoid_op = sigmoid_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.sigmoid_op.sigmoid_forward(x.contiguous(), False)
'''
