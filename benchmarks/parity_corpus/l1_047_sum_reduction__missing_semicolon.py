"""l1_047_sum_reduction__missing_semicolon: KernelBench level1/47_Sum_reduction_over_a_dimension.py with a CUDA candidate; expected verdict compile_error.

Sizes reduced from KernelBench: batch_size 128 -> 16, dim1 4096 -> 256, dim2 4095 -> 255.
"""

SOURCE = "KernelBench level1/47_Sum_reduction_over_a_dimension.py"
LEVEL = 1
FAMILY = "reduction"
EXPECTED = "compile_error"
FEATURES = ["TORCH_CHECK", "factory_with_options", "mistake", "options", "scalar_args"]
SIZE_CHANGES = [('batch_size = 128', 'batch_size = 16'), ('dim1 = 4096', 'dim1 = 256'), ('dim2 = 4095', 'dim2 = 255')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs sum reduction over a specified dimension.
    """
    def __init__(self, dim: int):
        """
        Initializes the model with the dimension to reduce over.

        Args:
            dim (int): Dimension to reduce over.
        """
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies sum reduction over the specified dimension.

        Args:
            x (torch.Tensor): Input tensor of shape (..., dim, ...).

        Returns:
            torch.Tensor: Output tensor after sum reduction, shape (..., 1, ...).
        """
        return torch.sum(x, dim=self.dim, keepdim=True)

batch_size = 16  # KernelBench: 128
dim1 = 256  # KernelBench: 4096
dim2 = 255  # KernelBench: 4095
reduce_dim = 1

def get_inputs():
    x = torch.rand(batch_size, dim1, dim2)
    return [x]

def get_init_inputs():
    return [reduce_dim]'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

sum_red_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <vector>

// out[o][i] = sum over r of x[o][r][i], with x viewed as (outer, r, inner)
__global__ void sum_dim_kernel(const float* __restrict__ x, float* __restrict__ out,
                                int64_t outer, int64_t r, int64_t inner) {
    const int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (idx >= outer * inner) return;
    const int64_t o = idx / inner;
    const int64_t i = idx % inner
    const float* base = x + o * r * inner + i;
    float acc = 0.0f;
    for (int64_t k = 0; k < r; ++k) {
        const float v = base[k * inner];
        acc += v;
    }
    out[idx] = acc;
}

torch::Tensor sum_dim_cuda(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat, "x must be float32");
    if (dim < 0) dim += x.dim();
    TORCH_CHECK(dim >= 0 && dim < x.dim(), "dim out of range");
    auto xc = x.contiguous();
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= xc.size(d);
    for (int64_t d = dim + 1; d < xc.dim(); ++d) inner *= xc.size(d);
    const int64_t r = xc.size(dim);
    std::vector<int64_t> sizes = xc.sizes().vec();
    sizes[dim] = 1;
    auto out = torch::empty(sizes, xc.options());
    const int threads = 256;
    const int64_t blocks = (outer * inner + threads - 1) / threads;
    sum_dim_kernel<<<blocks, threads>>>(xc.data_ptr<float>(), out.data_ptr<float>(), outer, r, inner);
    return out;
}
"""

sum_red_cpp_source = r"""torch::Tensor sum_dim_cuda(torch::Tensor x, int64_t dim);"""

sum_red_module = load_inline(
    name="sum_red_generic",
    cpp_sources=sum_red_cpp_source,
    cuda_sources=sum_red_cuda_source,
    functions=["sum_dim_cuda"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim
        self.sum_red = sum_red_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.sum_red.sum_dim_cuda(x, self.dim)
'''
