"""l1_053_min_reduction__generic: KernelBench level1/53_Min_reduction_over_a_dimension.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 128 -> 16, dim1 4096 -> 256, dim2 4095 -> 255.
"""

SOURCE = "KernelBench level1/53_Min_reduction_over_a_dimension.py"
LEVEL = 1
FAMILY = "reduction"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "factory_with_options", "options", "scalar_args"]
SIZE_CHANGES = [('batch_size = 128', 'batch_size = 16'), ('dim1 = 4096', 'dim1 = 256'), ('dim2 = 4095', 'dim2 = 255')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs min reduction over a specific dimension.
    """
    def __init__(self, dim: int):
        """
        Initializes the model with the dimension to reduce over.

        Args:
            dim (int): The dimension to reduce over.
        """
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies min reduction over the specified dimension to the input tensor.

        Args:
            x (torch.Tensor): Input tensor.

        Returns:
            torch.Tensor: Output tensor after min reduction over the specified dimension.
        """
        return torch.min(x, dim=self.dim)[0]

batch_size = 16  # KernelBench: 128
dim1 = 256  # KernelBench: 4096
dim2 = 255  # KernelBench: 4095

def get_inputs():
    x = torch.rand(batch_size, dim1, dim2)
    return [x]

def get_init_inputs():
    return [1] # Example, change to desired dimension'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

min_red_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <vector>

// out[o][i] = min over r of x[o][r][i], with x viewed as (outer, r, inner)
__global__ void min_dim_kernel(const float* __restrict__ x, float* __restrict__ out,
                                int64_t outer, int64_t r, int64_t inner) {
    const int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (idx >= outer * inner) return;
    const int64_t o = idx / inner;
    const int64_t i = idx % inner;
    const float* base = x + o * r * inner + i;
    float acc = INFINITY;
    for (int64_t k = 0; k < r; ++k) {
        const float v = base[k * inner];
        acc = fminf(acc, v);
    }
    out[idx] = acc;
}

torch::Tensor min_dim_cuda(torch::Tensor x, int64_t dim) {
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
    sizes.erase(sizes.begin() + dim);
    auto out = torch::empty(sizes, xc.options());
    const int threads = 256;
    const int64_t blocks = (outer * inner + threads - 1) / threads;
    min_dim_kernel<<<blocks, threads>>>(xc.data_ptr<float>(), out.data_ptr<float>(), outer, r, inner);
    return out;
}
"""

min_red_cpp_source = r"""torch::Tensor min_dim_cuda(torch::Tensor x, int64_t dim);"""

min_red_module = load_inline(
    name="min_red_generic",
    cpp_sources=min_red_cpp_source,
    cuda_sources=min_red_cuda_source,
    functions=["min_dim_cuda"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim
        self.min_red = min_red_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.min_red.min_dim_cuda(x, self.dim)
'''
