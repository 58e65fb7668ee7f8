"""l1_002_standard_matmul__launch_arity_compile_error: KernelBench level1/2_Standard_matrix_multiplication_.py with a CUDA candidate; expected verdict compile_error.

Sizes reduced from KernelBench: M 1024 * 2 -> 128, K 4096 * 2 -> 256, N 2048 * 2 -> 192.
"""

SOURCE = "KernelBench level1/2_Standard_matrix_multiplication_.py"
LEVEL = 1
FAMILY = "matmul"
EXPECTED = "compile_error"
FEATURES = ["factory_with_options", "mistake", "options"]
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
#include <cuda_runtime.h>

__global__ void matmul_kernel(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < K; ++k) {
            sum += A[row * K + k] * B[k * N + col];
        }
        C[row * N + col] = sum;
    }
}

torch::Tensor matmul_cuda(torch::Tensor A, torch::Tensor B) {
    const int M = A.size(0);
    const int K = A.size(1);
    const int N = B.size(1);
    auto C = torch::zeros({M, N}, A.options());
    dim3 threads(16, 16);
    dim3 blocks((N + threads.x - 1) / threads.x, (M + threads.y - 1) / threads.y);
    matmul_kernel<<<blocks, threads>>>(A.data_ptr<float>(), B.data_ptr<float>(), C.data_ptr<float>(), M, N);
    return C;
}
"""

std_mm_cpp_source = r"""torch::Tensor matmul_cuda(torch::Tensor A, torch::Tensor B);"""

std_mm_module = load_inline(
    name="std_mm_naive",
    cpp_sources=std_mm_cpp_source,
    cuda_sources=std_mm_cuda_source,
    functions=["matmul_cuda"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.std_mm = std_mm_module

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return self.std_mm.matmul_cuda(A.contiguous(), B.contiguous())
'''
