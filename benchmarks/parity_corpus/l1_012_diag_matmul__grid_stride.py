"""l1_012_diag_matmul__grid_stride: KernelBench level1/12_Matmul_with_diagonal_matrices_.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: M 4096 -> 512, N 4096 -> 256.
"""

SOURCE = "KernelBench level1/12_Matmul_with_diagonal_matrices_.py"
LEVEL = 1
FAMILY = "matmul"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "cuda_stream", "grid_stride", "launch_check"]
SIZE_CHANGES = [('M = 4096', 'M = 512'), ('N = 4096', 'N = 256')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a matrix multiplication of a diagonal matrix with another matrix.
    C = diag(A) * B
    """
    def __init__(self):
        super(Model, self).__init__()
    
    def forward(self, A, B):
        """
        Performs the matrix multiplication.

        Args:
            A (torch.Tensor): A 1D tensor representing the diagonal of the diagonal matrix. Shape: (N,).
            B (torch.Tensor): A 2D tensor representing the second matrix. Shape: (N, M).

        Returns:
            torch.Tensor: The result of the matrix multiplication. Shape: (N, M).
        """
        # Logically equivalent to torch.diag(A) @ B 
        # more efficient as no need to materialize a full N×N matrix
        return A.unsqueeze(1) * B

M = 512  # KernelBench: 4096
N = 256  # KernelBench: 4096

def get_inputs():
    A = torch.rand(N)
    B = torch.rand(N, M)
    return [A, B]

def get_init_inputs():
    return []  # No special initialization inputs needed'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

diag_mm_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

// diag(A) @ B: row i of B scaled by A[i]
__global__ void diag_matmul_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                   int64_t N, int64_t M) {
    const int64_t total = N * M;
    for (int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; idx < total; idx += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = idx / M;
        C[idx] = A[i] * B[idx];
    }
}

torch::Tensor diag_matmul(torch::Tensor A, torch::Tensor B) {
    TORCH_CHECK(A.dim() == 1, "A must be 1D");
    TORCH_CHECK(B.dim() == 2 && B.size(0) == A.size(0), "B must be (N, M) with N == A.size(0)");
    TORCH_CHECK(A.scalar_type() == at::ScalarType::Float && B.scalar_type() == at::ScalarType::Float,
                "only float32 is supported");
    auto C = torch::empty_like(B);
    const int64_t N = B.size(0), M = B.size(1);
    const int threads = 256;
    const int blocks = static_cast<int>(std::min<int64_t>((N * M + threads - 1) / threads, 8192));
    diag_matmul_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        A.data_ptr<float>(), B.data_ptr<float>(), C.data_ptr<float>(), N, M);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return C;
}
"""

diag_mm_cpp_source = r"""torch::Tensor diag_matmul(torch::Tensor A, torch::Tensor B);"""

diag_mm_module = load_inline(
    name="diag_mm_grid_stride",
    cpp_sources=diag_mm_cpp_source,
    cuda_sources=diag_mm_cuda_source,
    functions=["diag_matmul"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.diag_mm = diag_mm_module

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return self.diag_mm.diag_matmul(A.contiguous(), B.contiguous())
'''
