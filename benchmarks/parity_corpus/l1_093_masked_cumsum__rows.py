"""l1_093_masked_cumsum__rows: KernelBench level1/93_masked_cumsum.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 32768 -> 128, input_shape (32768,) -> (1024,).
"""

SOURCE = "KernelBench level1/93_masked_cumsum.py"
LEVEL = 1
FAMILY = "cumsum"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK"]
SIZE_CHANGES = [('batch_size = 32768', 'batch_size = 128'), ('input_shape = (32768,)', 'input_shape = (1024,)')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    A model that performs a masked cumulative sum, only summing elements that satisfy a condition.

    Parameters:
        dim (int): The dimension along which to perform the masked cumulative sum.
    """

    def __init__(self, dim):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x, mask):
        """
        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, *input_shape).
            mask (torch.Tensor): Boolean mask of the same shape as x.

        Returns:
            torch.Tensor: Cumulative sum of elements where mask is True.
        """
        return torch.cumsum(x * mask, dim=self.dim)

batch_size = 128  # KernelBench: 32768
input_shape = (1024,)  # KernelBench: (32768,)
dim = 1

def get_inputs():
    x = torch.rand(batch_size, *input_shape)
    mask = torch.randint(0, 2, x.shape).bool()  # Random boolean mask
    return [x, mask]

def get_init_inputs():
    return [dim]
'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

masked_cumsum_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void masked_cumsum_kernel(const float* __restrict__ x, const bool* __restrict__ mask, float* __restrict__ y,
                                     int rows, int L) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        float acc = 0.0f;
        for (int i = 0; i < L; ++i) {
            const size_t k = (size_t)row * L + i;
            if (mask[k]) acc += x[k];
            y[k] = acc;
        }
    }
}

torch::Tensor masked_cumsum(torch::Tensor x, torch::Tensor mask) {
    TORCH_CHECK(x.sizes() == mask.sizes(), "x and mask must have the same shape");
    TORCH_CHECK(mask.scalar_type() == torch::kBool, "mask must be bool");
    auto y = torch::empty_like(x);
    const int rows = x.size(0), L = x.size(1);
    masked_cumsum_kernel<<<(rows + 31) / 32, 32>>>(x.data_ptr<float>(), mask.data_ptr<bool>(), y.data_ptr<float>(), rows, L);
    return y;
}
"""

masked_cumsum_cpp_source = r"""torch::Tensor masked_cumsum(torch::Tensor x, torch::Tensor mask);"""

masked_cumsum_module = load_inline(
    name="masked_cumsum_rows",
    cpp_sources=masked_cumsum_cpp_source,
    cuda_sources=masked_cumsum_cuda_source,
    functions=["masked_cumsum"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super(ModelNew, self).__init__()
        self.dim = dim
        self.masked_cumsum = masked_cumsum_module

    def forward(self, x, mask):
        return self.masked_cumsum.masked_cumsum(x.contiguous(), mask.contiguous())
'''
