"""l1_014_upper_triangular_matmul__naive: KernelBench level1/14_Matmul_for_upper_triangular_matrices.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: N 4096 -> 256.
"""

SOURCE = "KernelBench level1/14_Matmul_for_upper_triangular_matrices.py"
LEVEL = 1
FAMILY = "matmul"
EXPECTED = "pass"
FEATURES = ["factory_with_options", "options"]
SIZE_CHANGES = [('N = 4096', 'N = 256')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs matrix multiplication (C = A * B) for upper triangular matrices.
    """
    def __init__(self):
        super(Model, self).__init__()
    
    def forward(self, A, B):
        """
        Performs matrix multiplication for upper triangular matrices.

        Args:
            A (torch.Tensor): Upper triangular matrix of shape (N, N).
            B (torch.Tensor): Upper triangular matrix of shape (N, N).

        Returns:
            torch.Tensor: The product of A and B, also an upper triangular matrix of shape (N, N).
        """
        return torch.triu(torch.matmul(A, B))

N = 256  # KernelBench: 4096

def get_inputs():
    """
    Generates upper triangular matrices for testing.

    Returns:
        list: A list containing two upper triangular matrices of shape (N, N).
    """
    A = torch.triu(torch.rand(N, N))
    B = torch.triu(torch.rand(N, N))
    return [A, B]

def get_init_inputs():
    """
    No specific initialization inputs are needed for this model.

    Returns:
        list: An empty list.
    """
    return []'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

triu_mm_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void matmul_kernel(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int k = row; k < col + 1; ++k) {
            sum += A[row * K + k] * B[k * N + col];
        }
        C[row * N + col] = (col >= row) ? sum : 0.0f;
    }
}

torch::Tensor matmul_cuda(torch::Tensor A, torch::Tensor B) {
    const int M = A.size(0);
    const int K = A.size(1);
    const int N = B.size(1);
    auto C = torch::zeros({M, N}, A.options());
    dim3 threads(16, 16);
    dim3 blocks((N + threads.x - 1) / threads.x, (M + threads.y - 1) / threads.y);
    matmul_kernel<<<blocks, threads>>>(A.data_ptr<float>(), B.data_ptr<float>(), C.data_ptr<float>(), M, N, K);
    return C;
}
"""

triu_mm_cpp_source = r"""torch::Tensor matmul_cuda(torch::Tensor A, torch::Tensor B);"""

triu_mm_module = load_inline(
    name="triu_mm_naive",
    cpp_sources=triu_mm_cpp_source,
    cuda_sources=triu_mm_cuda_source,
    functions=["matmul_cuda"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.triu_mm = triu_mm_module

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return self.triu_mm.matmul_cuda(A.contiguous(), B.contiguous())
'''
