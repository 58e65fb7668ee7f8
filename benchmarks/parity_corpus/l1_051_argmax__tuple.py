"""l1_051_argmax__tuple: KernelBench level1/51_Argmax_over_a_dimension.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 128 -> 16, dim1 4096 -> 256, dim2 4095 -> 255.
"""

SOURCE = "KernelBench level1/51_Argmax_over_a_dimension.py"
LEVEL = 1
FAMILY = "reduction"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "factory_with_options", "options", "tuple_return"]
SIZE_CHANGES = [('batch_size = 128', 'batch_size = 16'), ('dim1 = 4096', 'dim1 = 256'), ('dim2 = 4095', 'dim2 = 255')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs Argmax over a specified dimension.
    """
    def __init__(self, dim: int):
        """
        Initializes the model with the dimension to perform argmax.

        Args:
            dim (int): The dimension to perform argmax over.
        """
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies argmax over the specified dimension to the input tensor.

        Args:
            x (torch.Tensor): Input tensor.

        Returns:
            torch.Tensor: Output tensor with argmax applied, with the specified dimension removed.
        """
        return torch.argmax(x, dim=self.dim)

batch_size = 16  # KernelBench: 128
dim1 = 256  # KernelBench: 4096
dim2 = 255  # KernelBench: 4095

def get_inputs():
    x = torch.rand(batch_size, dim1, dim2)
    return [x]

def get_init_inputs():
    return [1]'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

argmax_red_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <tuple>

// argmax over dim 1 of (B, D1, D2); also returns the extreme values
__global__ void argmax_kernel(const float* __restrict__ x, float* __restrict__ values, int64_t* __restrict__ indices,
                            int B, int D1, int D2) {
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * D2) return;
    const int b = idx / D2;
    const int j = idx % D2;
    float best = -INFINITY;
    int64_t best_k = 0;
    for (int k = 0; k < D1; ++k) {
        const float v = x[((size_t)b * D1 + k) * D2 + j];
        if (v > best) {
            best = v;
            best_k = k;
        }
    }
    values[idx] = best;
    indices[idx] = best_k;
}

std::tuple<torch::Tensor, torch::Tensor> argmax_with_values(torch::Tensor x) {
    TORCH_CHECK(x.dim() == 3, "expected a 3D input");
    const int B = x.size(0), D1 = x.size(1), D2 = x.size(2);
    auto values = torch::empty({B, D2}, x.options());
    auto indices = torch::empty({B, D2}, x.options().dtype(torch::kLong));
    const int threads = 128;
    argmax_kernel<<<(B * D2 + threads - 1) / threads, threads>>>(
        x.data_ptr<float>(), values.data_ptr<float>(), indices.data_ptr<int64_t>(), B, D1, D2);
    return std::make_tuple(values, indices);
}
"""

argmax_red_cpp_source = r"""std::tuple<torch::Tensor, torch::Tensor> argmax_with_values(torch::Tensor x);"""

argmax_red_module = load_inline(
    name="argmax_red_tuple",
    cpp_sources=argmax_red_cpp_source,
    cuda_sources=argmax_red_cuda_source,
    functions=["argmax_with_values"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim
        self.argmax_red = argmax_red_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        values, indices = self.argmax_red.argmax_with_values(x.contiguous())
        return indices
'''
