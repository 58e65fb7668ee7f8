"""l1_030_softsign__simple: KernelBench level1/30_Softsign.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 4096 -> 16, dim 393216 -> 16384.
"""

SOURCE = "KernelBench level1/30_Softsign.py"
LEVEL = 1
FAMILY = "activation"
EXPECTED = "pass"
FEATURES = []
SIZE_CHANGES = [('batch_size = 4096', 'batch_size = 16'), ('dim = 393216', 'dim = 16384')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a Softsign activation.
    """
    def __init__(self):
        super(Model, self).__init__()
    
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies Softsign activation to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of any shape.

        Returns:
            torch.Tensor: Output tensor with Softsign applied, same shape as input.
        """
        return x / (1 + torch.abs(x))

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

softsign_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void softsign_kernel(const float* __restrict__ input, float* __restrict__ output, int size) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < size) {
        float v = input[idx];
        output[idx] = v / (1.0f + fabsf(v));
    }
}

torch::Tensor softsign_cuda(torch::Tensor input) {
    auto output = torch::empty_like(input);
    int size = input.numel();
    const int block_size = 256;
    const int num_blocks = (size + block_size - 1) / block_size;
    softsign_kernel<<<num_blocks, block_size>>>(input.data_ptr<float>(), output.data_ptr<float>(), size);
    return output;
}
"""

softsign_cpp_source = r"""torch::Tensor softsign_cuda(torch::Tensor input);"""

softsign_module = load_inline(
    name="softsign_simple",
    cpp_sources=softsign_cpp_source,
    cuda_sources=softsign_cuda_source,
    functions=["softsign_cuda"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.softsign_op = softsign_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.softsign_op.softsign_cuda(x.contiguous())
'''
