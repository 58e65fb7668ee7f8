"""l1_032_hardtanh__scalar_args: KernelBench level1/32_HardTanh.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 4096 -> 16, dim 393216 -> 16384.
"""

SOURCE = "KernelBench level1/32_HardTanh.py"
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
    Simple model that performs a HardTanh activation.
    """
    def __init__(self):
        super(Model, self).__init__()
    
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies HardTanh activation to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of any shape.

        Returns:
            torch.Tensor: Output tensor with HardTanh applied, same shape as input.
        """
        return F.hardtanh(x, min_val=-1., max_val=1.)

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

hardtanh_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void hardtanh_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n, float min_val, float max_val) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (; i < n; i += step) {
        const float v = x[i];
        y[i] = fminf(fmaxf(v, min_val), max_val);
    }
}

void hardtanh_launcher(const torch::Tensor& x, torch::Tensor& y, double min_val, double max_val) {
    const int64_t n = x.numel();
    const int threads = 256;
    int blocks = static_cast<int>((n + threads - 1) / threads);
    if (blocks > 1024) blocks = 1024;
    hardtanh_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), n, static_cast<float>(min_val), static_cast<float>(max_val));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}
"""

hardtanh_cpp_source = r"""
#include <torch/extension.h>

void hardtanh_launcher(const torch::Tensor& x, torch::Tensor& y, double min_val, double max_val);

#define CHECK_CUDA(x) TORCH_CHECK(x.device().is_cuda(), #x " must be a CUDA tensor")
#define CHECK_CONTIGUOUS(x) TORCH_CHECK(x.is_contiguous(), #x " must be contiguous")
#define CHECK_INPUT(x) do { CHECK_CUDA(x); CHECK_CONTIGUOUS(x); } while (0)

torch::Tensor hardtanh_forward(torch::Tensor x, double min_val, double max_val, bool inplace) {
    CHECK_INPUT(x);
    TORCH_CHECK(x.dtype() == torch::kFloat32, "hardtanh_forward: x must be float32");
    torch::Tensor y = inplace ? x : torch::empty_like(x);
    hardtanh_launcher(x, y, min_val, max_val);
    return y;
}
"""

hardtanh_module = load_inline(
    name="hardtanh_scalar_args",
    cpp_sources=hardtanh_cpp_source,
    cuda_sources=hardtanh_cuda_source,
    functions=["hardtanh_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.hardtanh_op = hardtanh_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.hardtanh_op.hardtanh_forward(x.contiguous(), -1.0, 1.0, False)
'''
