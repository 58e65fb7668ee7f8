"""l1_013_symmetric_matmul__accessor: KernelBench level1/13_Matmul_for_symmetric_matrices.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: N 4096 -> 256.
"""

SOURCE = "KernelBench level1/13_Matmul_for_symmetric_matrices.py"
LEVEL = 1
FAMILY = "matmul"
EXPECTED = "pass"
FEATURES = ["AT_DISPATCH_FLOATING_TYPES", "TORCH_CHECK", "factory_with_options", "options", "packed_accessor", "templates"]
SIZE_CHANGES = [('N = 4096', 'N = 256')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a single matrix multiplication (C = A * B) with A and B being symmetric matrices.
    """
    def __init__(self):
        super(Model, self).__init__()
    
    def forward(self, A, B):
        """
        Performs matrix multiplication of two symmetric matrices.

        Args:
            A (torch.Tensor): Input matrix A, shape (N, N), symmetric.
            B (torch.Tensor): Input matrix B, shape (N, N), symmetric.

        Returns:
            torch.Tensor: Output matrix C, shape (N, N).
        """
        return torch.matmul(A, B)

N = 256  # KernelBench: 4096

def get_inputs():
    """
    Generates a pair of random symmetric matrices for testing.

    Returns:
        list: List containing two symmetric tensors A and B.
    """
    A = torch.rand(N, N)
    A = (A + A.T) / 2  # Ensure symmetry
    B = torch.rand(N, N)
    B = (B + B.T) / 2  # Ensure symmetry
    return [A, B]

def get_init_inputs():
    """
    No specific initialization inputs needed for this model.

    Returns:
        list: Empty list.
    """
    return []'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

sym_mm_cuda_source = r"""
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

sym_mm_cpp_source = r"""torch::Tensor mm_forward(const torch::Tensor& a, const torch::Tensor& b);"""

sym_mm_module = load_inline(
    name="sym_mm_accessor",
    cpp_sources=sym_mm_cpp_source,
    cuda_sources=sym_mm_cuda_source,
    functions=["mm_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.sym_mm = sym_mm_module

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return self.sym_mm.mm_forward(A, B)
'''
