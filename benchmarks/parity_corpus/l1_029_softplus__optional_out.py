"""l1_029_softplus__optional_out: KernelBench level1/29_Softplus.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 4096 -> 16, dim 393216 -> 16384.
"""

SOURCE = "KernelBench level1/29_Softplus.py"
LEVEL = 1
FAMILY = "activation"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "grid_stride", "launch_check", "optional_arg"]
SIZE_CHANGES = [('batch_size = 4096', 'batch_size = 16'), ('dim = 393216', 'dim = 16384')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a Softplus activation.
    """
    def __init__(self):
        super(Model, self).__init__()
    
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies Softplus activation to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of any shape.

        Returns:
            torch.Tensor: Output tensor with Softplus applied, same shape as input.
        """
        return torch.nn.functional.softplus(x)

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

softplus_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void softplus_kernel(const float* __restrict__ x, float* __restrict__ y, const int n) {
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    for (int i = tid; i < n; i += blockDim.x * gridDim.x) {
        const float v = __ldg(&x[i]);
        y[i] = v > 20.0f ? v : log1pf(expf(v));
    }
}

torch::Tensor softplus_forward(torch::Tensor x, c10::optional<torch::Tensor> out) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous(), "x must be a contiguous CUDA tensor");
    torch::Tensor y = out.has_value() ? out.value() : torch::empty_like(x);
    TORCH_CHECK(y.sizes() == x.sizes(), "out must have the shape of x");
    const int n = static_cast<int>(x.numel());
    int device = x.get_device();
    int sm_count = 0;
    cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device);
    const int threads = 256;
    const int blocks = std::max(1, std::min((n + threads - 1) / threads, sm_count * 8));
    softplus_kernel<<<blocks, threads>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    auto err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, cudaGetErrorString(err));
    return y;
}
"""

softplus_cpp_source = r"""torch::Tensor softplus_forward(torch::Tensor x, c10::optional<torch::Tensor> out);"""

softplus_module = load_inline(
    name="softplus_optional_out",
    cpp_sources=softplus_cpp_source,
    cuda_sources=softplus_cuda_source,
    functions=["softplus_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.softplus_op = softplus_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.softplus_op.softplus_forward(x.contiguous(), None)
'''
