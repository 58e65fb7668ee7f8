"""l1_089_cumsum__rows: KernelBench level1/89_cumsum.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 32768 -> 128, input_shape (32768,) -> (1024,).
"""

SOURCE = "KernelBench level1/89_cumsum.py"
LEVEL = 1
FAMILY = "cumsum"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "scalar_args"]
SIZE_CHANGES = [('batch_size = 32768', 'batch_size = 128'), ('input_shape = (32768,)', 'input_shape = (1024,)')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    A simple model that performs a cumulative sum (prefix sum) operation along a specified dimension.

    Parameters:
        dim (int): The dimension along which to perform the scan operation.
    """

    def __init__(self, dim):
        """
        Initialize the Scan model.

        Args:
            dim (int): The dimension along which to perform the cumulative sum.
        """
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x):
        """
        Forward pass for the Scan model, computing the cumulative sum along the specified dimension.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, *input_shape), where `*input_shape` 
                              can vary depending on the use case.

        Returns:
            torch.Tensor: Tensor of the same shape as `x` after applying cumulative sum along `dim`.
        """
        return torch.cumsum(x, dim=self.dim)

# Define input dimensions and parameters
batch_size = 128  # KernelBench: 32768
input_shape = (1024,)  # KernelBench: (32768,)
dim = 1

def get_inputs():
    """
    Generates random inputs for testing the Scan model.

    Returns:
        list: A list containing a single randomly generated tensor with shape 
              (batch_size, *input_shape).
    """
    return [torch.rand(batch_size, *input_shape)]

def get_init_inputs():
    """
    Returns the initialization parameters for the Scan model.

    Returns:
        list: A list containing the `dim` parameter for model initialization.
    """
    return [dim]'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cumsum_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void cumsum_rows_kernel(const float* __restrict__ x, float* __restrict__ y, int rows, int L) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* in = x + (size_t)row * L;
    float* out = y + (size_t)row * L;
    float acc = 0.0f;
    for (int i = 0; i < L; ++i) { acc += in[i]; out[i] = acc; }
}

torch::Tensor cumsum_forward(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(x.dim() == 2 && dim == 1, "cumsum_forward scans dim 1 of a 2D tensor");
    TORCH_CHECK(x.is_cuda(), "x must be on CUDA");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int rows = xc.size(0), L = xc.size(1);
    cumsum_rows_kernel<<<(rows + 63) / 64, 64>>>(xc.data_ptr<float>(), y.data_ptr<float>(), rows, L);
    return y;
}
"""

cumsum_cpp_source = r"""torch::Tensor cumsum_forward(torch::Tensor x, int64_t dim);"""

cumsum_module = load_inline(
    name="cumsum_rows",
    cpp_sources=cumsum_cpp_source,
    cuda_sources=cumsum_cuda_source,
    functions=["cumsum_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super(ModelNew, self).__init__()
        self.dim = dim
        self.cumsum = cumsum_module

    def forward(self, x) -> torch.Tensor:
        return self.cumsum.cumsum_forward(x, self.dim)
'''
