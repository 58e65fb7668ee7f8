"""l1_019_relu__off_by_one: KernelBench level1/19_ReLU.py with a CUDA candidate; expected verdict wrong_output.

Sizes reduced from KernelBench: batch_size 4096 -> 16, dim 393216 -> 16384.
"""

SOURCE = "KernelBench level1/19_ReLU.py"
LEVEL = 1
FAMILY = "activation"
EXPECTED = "wrong_output"
FEATURES = ["mistake"]
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
#include <cuda_runtime.h>

__global__ void relu_kernel(const float* __restrict__ input, float* __restrict__ output, int size) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < size - 1) {
        float v = input[idx];
        output[idx] = fmaxf(v, 0.0f);
    }
}

torch::Tensor relu_cuda(torch::Tensor input) {
    auto output = torch::empty_like(input);
    int size = input.numel();
    const int block_size = 256;
    const int num_blocks = (size + block_size - 1) / block_size;
    relu_kernel<<<num_blocks, block_size>>>(input.data_ptr<float>(), output.data_ptr<float>(), size);
    return output;
}
"""

relu_cpp_source = r"""torch::Tensor relu_cuda(torch::Tensor input);"""

relu_module = load_inline(
    name="relu_simple",
    cpp_sources=relu_cpp_source,
    cuda_sources=relu_cuda_source,
    functions=["relu_cuda"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.relu_op = relu_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu_op.relu_cuda(x.contiguous())
'''
