"""l1_052_argmin__tuple: KernelBench level1/52_Argmin_over_a_dimension.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 128 -> 16, dim1 4096 -> 256, dim2 4095 -> 255.
"""

SOURCE = "KernelBench level1/52_Argmin_over_a_dimension.py"
LEVEL = 1
FAMILY = "reduction"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "factory_with_options", "options", "tuple_return"]
SIZE_CHANGES = [('batch_size = 128', 'batch_size = 16'), ('dim1 = 4096', 'dim1 = 256'), ('dim2 = 4095', 'dim2 = 255')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that finds the index of the minimum value along a specified dimension.
    """
    def __init__(self, dim: int):
        """
        Initializes the model with the dimension to perform argmin on.

        Args:
            dim (int): Dimension along which to find the minimum value.
        """
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Finds the index of the minimum value along the specified dimension.

        Args:
            x (torch.Tensor): Input tensor.

        Returns:
            torch.Tensor: Tensor containing the indices of the minimum values along the specified dimension.
        """
        return torch.argmin(x, dim=self.dim)

batch_size = 16  # KernelBench: 128
dim1 = 256  # KernelBench: 4096
dim2 = 255  # KernelBench: 4095
dim = 1

def get_inputs():
    x = torch.rand(batch_size, dim1, dim2)
    return [x]

def get_init_inputs():
    return [dim]'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

argmin_red_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <tuple>

// argmin over dim 1 of (B, D1, D2); also returns the extreme values
__global__ void argmin_kernel(const float* __restrict__ x, float* __restrict__ values, int64_t* __restrict__ indices,
                            int B, int D1, int D2) {
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * D2) return;
    const int b = idx / D2;
    const int j = idx % D2;
    float best = INFINITY;
    int64_t best_k = 0;
    for (int k = 0; k < D1; ++k) {
        const float v = x[((size_t)b * D1 + k) * D2 + j];
        if (v < best) {
            best = v;
            best_k = k;
        }
    }
    values[idx] = best;
    indices[idx] = best_k;
}

std::tuple<torch::Tensor, torch::Tensor> argmin_with_values(torch::Tensor x) {
    TORCH_CHECK(x.dim() == 3, "expected a 3D input");
    const int B = x.size(0), D1 = x.size(1), D2 = x.size(2);
    auto values = torch::empty({B, D2}, x.options());
    auto indices = torch::empty({B, D2}, x.options().dtype(torch::kLong));
    const int threads = 128;
    argmin_kernel<<<(B * D2 + threads - 1) / threads, threads>>>(
        x.data_ptr<float>(), values.data_ptr<float>(), indices.data_ptr<int64_t>(), B, D1, D2);
    return std::make_tuple(values, indices);
}
"""

argmin_red_cpp_source = r"""std::tuple<torch::Tensor, torch::Tensor> argmin_with_values(torch::Tensor x);"""

argmin_red_module = load_inline(
    name="argmin_red_tuple",
    cpp_sources=argmin_red_cpp_source,
    cuda_sources=argmin_red_cuda_source,
    functions=["argmin_with_values"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim
        self.argmin_red = argmin_red_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        values, indices = self.argmin_red.argmin_with_values(x.contiguous())
        return indices
'''
