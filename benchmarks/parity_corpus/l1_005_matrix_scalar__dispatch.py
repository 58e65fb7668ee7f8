"""l1_005_matrix_scalar__dispatch: KernelBench level1/5_Matrix_scalar_multiplication.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: M 16384 * 4 -> 256, N 4096 * 4 -> 512.
"""

SOURCE = "KernelBench level1/5_Matrix_scalar_multiplication.py"
LEVEL = 1
FAMILY = "matmul"
EXPECTED = "pass"
FEATURES = ["AT_DISPATCH_FLOATING_TYPES", "TORCH_CHECK", "grid_stride", "scalar_args", "templates"]
SIZE_CHANGES = [('M = 16384 * 4', 'M = 256'), ('N = 4096 * 4', 'N = 512')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a matrix-scalar multiplication (C = A * s)
    """
    def __init__(self):
        super(Model, self).__init__()
    
    def forward(self, A: torch.Tensor, s: float) -> torch.Tensor:
        """
        Performs matrix-scalar multiplication.

        Args:
            A: Input matrix of shape (M, N)
            s: Scalar value

        Returns:
            C: Resulting matrix of shape (M, N)
        """
        return A * s

M = 256  # KernelBench: 16384 * 4
N = 512  # KernelBench: 4096 * 4

def get_inputs():
    A = torch.rand(M, N)
    s = 3.14
    return [A, s]

def get_init_inputs():
    return []  # No special initialization inputs needed'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

scalar_mm_cuda_source = r"""
#include <torch/extension.h>

template <typename scalar_t>
__global__ void scale_kernel(const scalar_t* __restrict__ a, scalar_t* __restrict__ out, scalar_t s, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)blockDim.x * gridDim.x) {
        out[i] = a[i] * s;
    }
}

torch::Tensor scalar_mul(torch::Tensor A, double s) {
    TORCH_CHECK(A.is_cuda(), "A must be a CUDA tensor");
    auto a = A.contiguous();
    auto out = torch::empty_like(a);
    const int64_t n = a.numel();
    const int threads = 256;
    const int blocks = std::min<int64_t>(1024, (n + threads - 1) / threads);
    AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "scalar_mul", ([&] {
        scale_kernel<scalar_t><<<blocks, threads>>>(a.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(),
                                                    static_cast<scalar_t>(s), n);
    }));
    return out;
}
"""

scalar_mm_cpp_source = r"""torch::Tensor scalar_mul(torch::Tensor A, double s);"""

scalar_mm_module = load_inline(
    name="scalar_mm_scalar",
    cpp_sources=scalar_mm_cpp_source,
    cuda_sources=scalar_mm_cuda_source,
    functions=["scalar_mul"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.scalar_mm = scalar_mm_module

    def forward(self, A: torch.Tensor, s: float) -> torch.Tensor:
        return self.scalar_mm.scalar_mul(A, s)
'''
