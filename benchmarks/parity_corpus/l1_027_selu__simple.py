"""l1_027_selu__simple: KernelBench level1/27_SELU_.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 4096 -> 16, dim 393216 -> 16384.
"""

SOURCE = "KernelBench level1/27_SELU_.py"
LEVEL = 1
FAMILY = "activation"
EXPECTED = "pass"
FEATURES = []
SIZE_CHANGES = [('batch_size = 4096', 'batch_size = 16'), ('dim = 393216', 'dim = 16384')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a SELU activation.
    """
    def __init__(self):
        super(Model, self).__init__()
    
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies SELU activation to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of any shape.

        Returns:
            torch.Tensor: Output tensor with SELU applied, same shape as input.
        """
        return torch.selu(x)
    
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

selu_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void selu_kernel(const float* __restrict__ input, float* __restrict__ output, int size) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < size) {
        float v = input[idx];
        output[idx] = 1.0507009873554805f * (v > 0.0f ? v : 1.6732632423543772f * expm1f(v));
    }
}

torch::Tensor selu_cuda(torch::Tensor input) {
    auto output = torch::empty_like(input);
    int size = input.numel();
    const int block_size = 256;
    const int num_blocks = (size + block_size - 1) / block_size;
    selu_kernel<<<num_blocks, block_size>>>(input.data_ptr<float>(), output.data_ptr<float>(), size);
    return output;
}
"""

selu_cpp_source = r"""torch::Tensor selu_cuda(torch::Tensor input);"""

selu_module = load_inline(
    name="selu_simple",
    cpp_sources=selu_cpp_source,
    cuda_sources=selu_cuda_source,
    functions=["selu_cuda"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.selu_op = selu_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.selu_op.selu_cuda(x.contiguous())
'''
