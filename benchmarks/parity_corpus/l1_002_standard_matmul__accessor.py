"""l1_002_standard_matmul__accessor: KernelBench level1/2_Standard_matrix_multiplication_.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: M 1024 * 2 -> 128, K 4096 * 2 -> 256, N 2048 * 2 -> 192.
"""

SOURCE = "KernelBench level1/2_Standard_matrix_multiplication_.py"
LEVEL = 1
FAMILY = "matmul"
EXPECTED = "pass"
FEATURES = ["AT_DISPATCH_FLOATING_TYPES", "TORCH_CHECK", "factory_with_options", "options", "packed_accessor", "templates"]
SIZE_CHANGES = [('M = 1024 * 2', 'M = 128'), ('K = 4096 * 2', 'K = 256'), ('N = 2048 * 2', 'N = 192')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a single matrix multiplication (C = A * B)
    """
    def __init__(self):
        super(Model, self).__init__()
    
    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        """
        Performs matrix multiplication.

        Args:
            A: Input tensor of shape (M, K).
            B: Input tensor of shape (K, N).

        Returns:
            Output tensor of shape (M, N).
        """
        return torch.matmul(A, B)

M = 128  # KernelBench: 1024 * 2
K = 256  # KernelBench: 4096 * 2
N = 192  # KernelBench: 2048 * 2

def get_inputs():
    A = torch.rand(M, K)
    B = torch.rand(K, N)
    return [A, B]

def get_init_inputs():
    return []  # No special initialization inputs needed'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

std_mm_cuda_source = r"""
#include <torch/extension.h>

template <typename scalar_t>
__global__ void mm_accessor_kernel(const torch::PackedTensorAccessor32<scalar_t, 2, torch::RestrictPtrTraits> a,
                                   const torch::PackedTensorAccessor32<scalar_t, 2, torch::RestrictPtrTraits> b,
                                   torch::PackedTensorAccessor32<scalar_t, 2, torch::RestrictPtrTraits> c) {
    const int i = blockIdx.y * blockDim.y + threadIdx.y;
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < c.size(0) && j < c.size(1)) {
        scalar_t acc = 0;
        for (int k = 0; k < a.size(1); ++k) {
            acc += a[i][k] * b[k][j];
        }
        c[i][j] = acc;
    }
}

torch::Tensor mm_forward(const torch::Tensor& a, const torch::Tensor& b) {
    TORCH_CHECK(a.size(1) == b.size(0), "inner dimensions must match: ", a.size(1), " vs ", b.size(0));
    auto c = torch::empty({a.size(0), b.size(1)}, a.options());
    const dim3 threads(32, 8);
    const dim3 blocks((b.size(1) + threads.x - 1) / threads.x, (a.size(0) + threads.y - 1) / threads.y);
    AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "mm_forward", ([&] {
        mm_accessor_kernel<scalar_t><<<blocks, threads>>>(
            a.packed_accessor32<scalar_t, 2, torch::RestrictPtrTraits>(),
            b.packed_accessor32<scalar_t, 2, torch::RestrictPtrTraits>(),
            c.packed_accessor32<scalar_t, 2, torch::RestrictPtrTraits>());
    }));
    return c;
}
"""

std_mm_cpp_source = r"""torch::Tensor mm_forward(const torch::Tensor& a, const torch::Tensor& b);"""

std_mm_module = load_inline(
    name="std_mm_accessor",
    cpp_sources=std_mm_cpp_source,
    cuda_sources=std_mm_cuda_source,
    functions=["mm_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.std_mm = std_mm_module

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return self.std_mm.mm_forward(A, B)
'''
