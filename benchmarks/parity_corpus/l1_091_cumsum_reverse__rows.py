"""l1_091_cumsum_reverse__rows: KernelBench level1/91_cumsum_reverse.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 32768 -> 128, input_shape (32768,) -> (1024,).
"""

SOURCE = "KernelBench level1/91_cumsum_reverse.py"
LEVEL = 1
FAMILY = "cumsum"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "scalar_args"]
SIZE_CHANGES = [('batch_size = 32768', 'batch_size = 128'), ('input_shape = (32768,)', 'input_shape = (1024,)')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    A model that performs a reverse cumulative sum operation along a specified dimension.

    Parameters:
        dim (int): The dimension along which to perform the reverse cumulative sum.
    """

    def __init__(self, dim):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumsum(x.flip(self.dim), dim=self.dim).flip(self.dim)

batch_size = 128  # KernelBench: 32768
input_shape = (1024,)  # KernelBench: (32768,)
dim = 1

def get_inputs():
    return [torch.rand(batch_size, *input_shape)]

def get_init_inputs():
    return [dim]
'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cumsum_rev_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void reverse_rows_kernel(const float* __restrict__ x, float* __restrict__ y, int rows, int L) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* in = x + (size_t)row * L;
    float* out = y + (size_t)row * L;
    float acc = 0.0f;
    for (int i = L - 1; i >= 0; --i) { acc += in[i]; out[i] = acc; }
}

torch::Tensor reverse_forward(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(x.dim() == 2 && dim == 1, "reverse_forward scans dim 1 of a 2D tensor");
    TORCH_CHECK(x.is_cuda(), "x must be on CUDA");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int rows = xc.size(0), L = xc.size(1);
    reverse_rows_kernel<<<(rows + 63) / 64, 64>>>(xc.data_ptr<float>(), y.data_ptr<float>(), rows, L);
    return y;
}
"""

cumsum_rev_cpp_source = r"""torch::Tensor reverse_forward(torch::Tensor x, int64_t dim);"""

cumsum_rev_module = load_inline(
    name="cumsum_rev_rows",
    cpp_sources=cumsum_rev_cpp_source,
    cuda_sources=cumsum_rev_cuda_source,
    functions=["reverse_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super(ModelNew, self).__init__()
        self.dim = dim
        self.cumsum_rev = cumsum_rev_module

    def forward(self, x) -> torch.Tensor:
        return self.cumsum_rev.reverse_forward(x, self.dim)
'''
