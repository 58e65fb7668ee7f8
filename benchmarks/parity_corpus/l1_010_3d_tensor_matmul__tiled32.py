"""l1_010_3d_tensor_matmul__tiled32: KernelBench level1/10_3D_tensor_matrix_multiplication.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: N 16 -> 4, M 1024 -> 64, K 2048 -> 128, L 768 -> 96.
"""

SOURCE = "KernelBench level1/10_3D_tensor_matrix_multiplication.py"
LEVEL = 1
FAMILY = "matmul"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "factory_with_options", "options", "shared_memory"]
SIZE_CHANGES = [('N = 16', 'N = 4'), ('M = 1024', 'M = 64'), ('K = 2048', 'K = 128'), ('L = 768', 'L = 96')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Performs 3D tensor-matrix multiplication.
    """
    def __init__(self):
        super(Model, self).__init__()
    
    def forward(self, A, B):
        """
        Performs 3D tensor-matrix multiplication.

        Args:
            A (torch.Tensor): Input 3D tensor of shape (N, M, K).
            B (torch.Tensor): Input matrix of shape (K, L).

        Returns:
            torch.Tensor: Output tensor of shape (N, M, L), resulting from the multiplication of A and B along the last dimension of A.
        """
        return torch.matmul(A, B)

N = 4  # KernelBench: 16
M = 64  # KernelBench: 1024
K = 128  # KernelBench: 2048
L = 96  # KernelBench: 768

def get_inputs():
    A = torch.rand(N, M, K)
    B = torch.rand(K, L)
    return [A, B]

def get_init_inputs():
    return []  # No special initialization inputs needed'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

tensor3d_mm_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

#define TILE_DIM 32

// (N, M, K) x (K, L): flatten the batch into rows, one shared-memory tiled GEMM
__global__ void tensor_matmul_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                     int rows, int K, int L) {
    __shared__ float tileA[TILE_DIM][TILE_DIM];
    __shared__ float tileB[TILE_DIM][TILE_DIM + 1];
    int r = blockIdx.y * TILE_DIM + threadIdx.y;
    int c = blockIdx.x * TILE_DIM + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE_DIM) {
        tileA[threadIdx.y][threadIdx.x] = (r < rows && t + threadIdx.x < K) ? A[(size_t)r * K + t + threadIdx.x] : 0.0f;
        tileB[threadIdx.y][threadIdx.x] = (c < L && t + threadIdx.y < K) ? B[(size_t)(t + threadIdx.y) * L + c] : 0.0f;
        __syncthreads();
        for (int i = 0; i < TILE_DIM; ++i) acc += tileA[threadIdx.y][i] * tileB[i][threadIdx.x];
        __syncthreads();
    }
    if (r < rows && c < L) C[(size_t)r * L + c] = acc;
}

torch::Tensor tensor_matmul(torch::Tensor A, torch::Tensor B) {
    TORCH_CHECK(A.dim() == 3, "A must be 3D, got ", A.dim());
    TORCH_CHECK(B.dim() == 2, "B must be 2D, got ", B.dim());
    TORCH_CHECK(A.size(2) == B.size(0), "A.size(2) != B.size(0)");
    auto a = A.contiguous();
    auto b = B.contiguous();
    const int N = a.size(0), M = a.size(1), K = a.size(2), L = b.size(1);
    auto out = torch::empty({N, M, L}, a.options());
    dim3 block(TILE_DIM, TILE_DIM);
    dim3 grid((L + TILE_DIM - 1) / TILE_DIM, (N * M + TILE_DIM - 1) / TILE_DIM);
    tensor_matmul_kernel<<<grid, block>>>(a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), N * M, K, L);
    return out;
}
"""

tensor3d_mm_cpp_source = r"""torch::Tensor tensor_matmul(torch::Tensor A, torch::Tensor B);"""

tensor3d_mm_module = load_inline(
    name="tensor3d_mm_tiled32",
    cpp_sources=tensor3d_mm_cpp_source,
    cuda_sources=tensor3d_mm_cuda_source,
    functions=["tensor_matmul"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.tensor3d_mm = tensor3d_mm_module

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return self.tensor3d_mm.tensor_matmul(A, B)
'''
