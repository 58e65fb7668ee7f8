"""l1_004_matvec__warp_reduce: KernelBench level1/4_Matrix_vector_multiplication_.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: M 256 * 8 -> 256, K 131072 * 8 -> 8192.
"""

SOURCE = "KernelBench level1/4_Matrix_vector_multiplication_.py"
LEVEL = 1
FAMILY = "matmul"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "block_reduction", "factory_with_options", "options", "shared_memory", "warp_shuffle"]
SIZE_CHANGES = [('M = 256 * 8', 'M = 256'), ('K = 131072 * 8', 'K = 8192')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs matrix-vector multiplication (C = A * B).
    """
    def __init__(self):
        super(Model, self).__init__()
    
    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        """
        Performs matrix-vector multiplication.

        Args:
            A: Input matrix of shape (M, K).
            B: Input vector of shape (K, 1).

        Returns:
            Output vector of shape (M, 1).
        """
        return torch.matmul(A, B)

M = 256  # KernelBench: 256 * 8
K = 8192  # KernelBench: 131072 * 8

def get_inputs():
    A = torch.rand(M, K)
    B = torch.rand(K, 1)
    return [A, B]

def get_init_inputs():
    return []  # No special initialization inputs needed'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

matvec_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

// one block per row: threads stride over K, then a warp-shuffle + shared-memory reduction
__global__ void matvec_kernel(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y, int64_t K) {
    const int row = blockIdx.x;
    const float* a = A + (int64_t)row * K;
    float sum = 0.0f;
    for (int64_t k = threadIdx.x; k < K; k += blockDim.x) {
        sum += a[k] * x[k];
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        sum += __shfl_down_sync(0xffffffff, sum, offset);
    }
    __shared__ float warp_sums[32];
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    if (lane == 0) warp_sums[warp] = sum;
    __syncthreads();
    if (warp == 0) {
        sum = (lane < blockDim.x / 32) ? warp_sums[lane] : 0.0f;
        for (int offset = 16; offset > 0; offset >>= 1) {
            sum += __shfl_down_sync(0xffffffff, sum, offset);
        }
        if (lane == 0) y[row] = sum;
    }
}

torch::Tensor matvec_cuda(torch::Tensor A, torch::Tensor B) {
    TORCH_CHECK(A.dim() == 2 && B.dim() == 2 && B.size(1) == 1, "expected A (M, K) and B (K, 1)");
    TORCH_CHECK(A.size(1) == B.size(0), "A.size(1) must equal B.size(0)");
    const int64_t M = A.size(0), K = A.size(1);
    auto y = torch::empty({M, 1}, A.options());
    matvec_kernel<<<M, 256>>>(A.data_ptr<float>(), B.data_ptr<float>(), y.data_ptr<float>(), K);
    return y;
}
"""

matvec_cpp_source = r"""torch::Tensor matvec_cuda(torch::Tensor A, torch::Tensor B);"""

matvec_module = load_inline(
    name="matvec_warp",
    cpp_sources=matvec_cpp_source,
    cuda_sources=matvec_cuda_source,
    functions=["matvec_cuda"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.matvec = matvec_module

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return self.matvec.matvec_cuda(A.contiguous(), B.contiguous())
'''
