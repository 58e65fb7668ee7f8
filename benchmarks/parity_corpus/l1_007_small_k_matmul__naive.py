"""l1_007_small_k_matmul__naive: KernelBench level1/7_Matmul_with_small_K_dimension_.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: M 16384 * 2 -> 512, N 16384 * 2 -> 512, K 32 * 2 -> 64.
"""

SOURCE = "KernelBench level1/7_Matmul_with_small_K_dimension_.py"
LEVEL = 1
FAMILY = "matmul"
EXPECTED = "pass"
FEATURES = ["factory_with_options", "options"]
SIZE_CHANGES = [('M = 16384 * 2', 'M = 512'), ('N = 16384 * 2', 'N = 512'), ('K = 32 * 2', 'K = 64')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a single matrix multiplication (C = A * B) with a small K dimension
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

M = 512  # KernelBench: 16384 * 2
N = 512  # KernelBench: 16384 * 2
K = 64  # KernelBench: 32 * 2

def get_inputs():
    A = torch.rand(M, K)
    B = torch.rand(K, N)
    return [A, B]

def get_init_inputs():
    return []  # No special initialization inputs needed'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

smallk_mm_cuda_source = r"""
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
    matmul_kernel<<<blocks, threads>>>(A.data_ptr<float>(), B.data_ptr<float>(), C.data_ptr<float>(), M, N, K);
    return C;
}
"""

smallk_mm_cpp_source = r"""torch::Tensor matmul_cuda(torch::Tensor A, torch::Tensor B);"""

smallk_mm_module = load_inline(
    name="smallk_mm_naive",
    cpp_sources=smallk_mm_cpp_source,
    cuda_sources=smallk_mm_cuda_source,
    functions=["matmul_cuda"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.smallk_mm = smallk_mm_module

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return self.smallk_mm.matmul_cuda(A.contiguous(), B.contiguous())
'''
