"""l1_008_irregular_matmul__naive: KernelBench level1/8_Matmul_with_irregular_shapes_.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: M 8205 -> 205, K 2949 -> 149, N 5921 -> 121.
"""

SOURCE = "KernelBench level1/8_Matmul_with_irregular_shapes_.py"
LEVEL = 1
FAMILY = "matmul"
EXPECTED = "pass"
FEATURES = ["factory_with_options", "options"]
SIZE_CHANGES = [('M = 8205', 'M = 205'), ('K = 2949', 'K = 149'), ('N = 5921', 'N = 121')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a single matrix multiplication (C = A * B) with irregular shapes
    """
    def __init__(self):
        super(Model, self).__init__()
    
    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        """
        Performs matrix multiplication of A and B.

        Args:
            A: Input tensor with shape (M, K).
            B: Input tensor with shape (K, N).

        Returns:
            C: Output tensor with shape (M, N).
        """
        return torch.matmul(A, B)

M = 205  # KernelBench: 8205
K = 149  # KernelBench: 2949
N = 121  # KernelBench: 5921

def get_inputs():
    A = torch.rand(M, K)
    B = torch.rand(K, N)
    return [A, B]

def get_init_inputs():
    return []  # No special initialization inputs needed'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

irregular_mm_cuda_source = r"""
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

irregular_mm_cpp_source = r"""torch::Tensor matmul_cuda(torch::Tensor A, torch::Tensor B);"""

irregular_mm_module = load_inline(
    name="irregular_mm_naive",
    cpp_sources=irregular_mm_cpp_source,
    cuda_sources=irregular_mm_cuda_source,
    functions=["matmul_cuda"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.irregular_mm = irregular_mm_module

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return self.irregular_mm.matmul_cuda(A.contiguous(), B.contiguous())
'''
