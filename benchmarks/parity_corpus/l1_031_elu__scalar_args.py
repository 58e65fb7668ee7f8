"""l1_031_elu__scalar_args: KernelBench level1/31_ELU.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 4096 -> 16, dim 393216 -> 16384.
"""

SOURCE = "KernelBench level1/31_ELU.py"
LEVEL = 1
FAMILY = "activation"
EXPECTED = "pass"
FEATURES = ["CHECK_INPUT_macros", "TORCH_CHECK", "cuda_stream", "grid_stride", "launch_check", "options", "scalar_args", "split_host"]
SIZE_CHANGES = [('batch_size = 4096', 'batch_size = 16'), ('dim = 393216', 'dim = 16384')]

REFERENCE = r'''import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    """
    Simple model that performs an ELU activation.
    """
    def __init__(self, alpha: float = 1.0):
        """
        Initializes the ELU model.

        Args:
            alpha (float, optional): The alpha parameter for the ELU function. Defaults to 1.0.
        """
        super(Model, self).__init__()
        self.alpha = alpha
    
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies ELU activation to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of any shape.

        Returns:
            torch.Tensor: Output tensor with ELU applied, same shape as input.
        """
        return F.elu(x, alpha=self.alpha)

batch_size = 16  # KernelBench: 4096
dim = 16384  # KernelBench: 393216

def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]

def get_init_inputs():
    return [1.0]  # Provide alpha value for initialization'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

elu_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void elu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n, float alpha) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (; i < n; i += step) {
        const float v = x[i];
        y[i] = v > 0.0f ? v : alpha * expm1f(v);
    }
}

void elu_launcher(const torch::Tensor& x, torch::Tensor& y, double alpha) {
    const int64_t n = x.numel();
    const int threads = 256;
    int blocks = static_cast<int>((n + threads - 1) / threads);
    if (blocks > 1024) blocks = 1024;
    elu_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), n, static_cast<float>(alpha));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}
"""

elu_cpp_source = r"""
#include <torch/extension.h>

void elu_launcher(const torch::Tensor& x, torch::Tensor& y, double alpha);

#define CHECK_CUDA(x) TORCH_CHECK(x.device().is_cuda(), #x " must be a CUDA tensor")
#define CHECK_CONTIGUOUS(x) TORCH_CHECK(x.is_contiguous(), #x " must be contiguous")
#define CHECK_INPUT(x) do { CHECK_CUDA(x); CHECK_CONTIGUOUS(x); } while (0)

torch::Tensor elu_forward(torch::Tensor x, double alpha, bool inplace) {
    CHECK_INPUT(x);
    TORCH_CHECK(x.dtype() == torch::kFloat32, "elu_forward: x must be float32");
    torch::Tensor y = inplace ? x : torch::empty_like(x);
    elu_launcher(x, y, alpha);
    return y;
}
"""

elu_module = load_inline(
    name="elu_scalar_args",
    cpp_sources=elu_cpp_source,
    cuda_sources=elu_cuda_source,
    functions=["elu_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, alpha: float = 1.0):
        super(ModelNew, self).__init__()
        self.alpha = alpha
        self.elu_op = elu_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.elu_op.elu_forward(x.contiguous(), self.alpha, False)
'''
