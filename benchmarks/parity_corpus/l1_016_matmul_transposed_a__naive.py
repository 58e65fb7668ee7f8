"""l1_016_matmul_transposed_a__naive: KernelBench level1/16_Matmul_with_transposed_A.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: M 1024 * 2 -> 128, K 4096 * 2 -> 256, N 2048 * 2 -> 160.
"""

SOURCE = "KernelBench level1/16_Matmul_with_transposed_A.py"
LEVEL = 1
FAMILY = "matmul"
EXPECTED = "pass"
FEATURES = ["factory_with_options", "options"]
SIZE_CHANGES = [('M = 1024 * 2', 'M = 128'), ('K = 4096 * 2', 'K = 256'), ('N = 2048 * 2', 'N = 160')]

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
        return torch.matmul(A.T, B)

M = 128  # KernelBench: 1024 * 2
K = 256  # KernelBench: 4096 * 2
N = 160  # KernelBench: 2048 * 2

def get_inputs():
    A = torch.rand(K, M)
    B = torch.rand(K, N)
    return [A, B]

def get_init_inputs():
    return []  # No special initialization inputs needed'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

ta_mm_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void matmul_kernel(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < K; ++k) {
            sum += A[k * M + row] * B[k * N + col];
        }
        C[row * N + col] = sum;
    }
}

torch::Tensor matmul_cuda(torch::Tensor A, torch::Tensor B) {
    const int M = A.size(1);
    const int K = A.size(0);
    const int N = B.size(1);
    auto C = torch::zeros({M, N}, A.options());
    dim3 threads(16, 16);
    dim3 blocks((N + threads.x - 1) / threads.x, (M + threads.y - 1) / threads.y);
    matmul_kernel<<<blocks, threads>>>(A.data_ptr<float>(), B.data_ptr<float>(), C.data_ptr<float>(), M, N, K);
    return C;
}
"""

ta_mm_cpp_source = r"""torch::Tensor matmul_cuda(torch::Tensor A, torch::Tensor B);"""

ta_mm_module = load_inline(
    name="ta_mm_naive",
    cpp_sources=ta_mm_cpp_source,
    cuda_sources=ta_mm_cuda_source,
    functions=["matmul_cuda"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.ta_mm = ta_mm_module

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return self.ta_mm.matmul_cuda(A.contiguous(), B.contiguous())
'''
