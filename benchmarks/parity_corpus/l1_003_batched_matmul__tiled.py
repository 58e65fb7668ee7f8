"""l1_003_batched_matmul__tiled: KernelBench level1/3_Batched_matrix_multiplication.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 128 -> 4, m 128 * 4 -> 64, k 256 * 4 -> 128, n 512 * 4 -> 96.
"""

SOURCE = "KernelBench level1/3_Batched_matrix_multiplication.py"
LEVEL = 1
FAMILY = "matmul"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "factory_with_options", "launch_check", "options", "shared_memory"]
SIZE_CHANGES = [('batch_size = 128', 'batch_size = 4'), ('m = 128 * 4', 'm = 64'), ('k = 256 * 4', 'k = 128'), ('n = 512 * 4', 'n = 96')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Performs batched matrix multiplication (C = A * B) where A, B, and C have the same batch dimension.
    """
    def __init__(self):
        super(Model, self).__init__()
    
    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        """
        Performs batched matrix multiplication.

        Args:
            A: Input tensor of shape (batch_size, m, k).
            B: Input tensor of shape (batch_size, k, n).

        Returns:
            C: Output tensor of shape (batch_size, m, n).
        """
        return torch.bmm(A, B)

batch_size = 4  # KernelBench: 128
m = 64  # KernelBench: 128 * 4
k = 128  # KernelBench: 256 * 4
n = 96  # KernelBench: 512 * 4

def get_inputs():
    A = torch.rand(batch_size, m, k)
    B = torch.rand(batch_size, k, n)
    return [A, B]

def get_init_inputs():
    return []  # No special initialization inputs needed'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

bmm_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

#define TILE 16

__global__ void bmm_tiled_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                 int M, int K, int N) {
    __shared__ float sA[TILE][TILE];
    __shared__ float sB[TILE][TILE];
    const int batch = blockIdx.z;
    const float* a = A + (size_t)batch * M * K;
    const float* b = B + (size_t)batch * K * N;
    float* c = C + (size_t)batch * M * N;
    const int row = blockIdx.y * TILE + threadIdx.y;
    const int col = blockIdx.x * TILE + threadIdx.x;
    float sum = 0.f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        sA[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? a[row * K + k0 + threadIdx.x] : 0.f;
        sB[threadIdx.y][threadIdx.x] = (col < N && k0 + threadIdx.y < K) ? b[(k0 + threadIdx.y) * N + col] : 0.f;
        __syncthreads();
        for (int kk = 0; kk < TILE; ++kk) sum += sA[threadIdx.y][kk] * sB[kk][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) c[row * N + col] = sum;
}

torch::Tensor bmm_cuda(torch::Tensor A, torch::Tensor B) {
    TORCH_CHECK(A.is_cuda() && B.is_cuda(), "inputs must be CUDA tensors");
    TORCH_CHECK(A.is_contiguous() && B.is_contiguous(), "inputs must be contiguous");
    int batch = A.size(0), M = A.size(1), K = A.size(2), N = B.size(2);
    auto C = torch::empty({batch, M, N}, A.options());
    dim3 block(TILE, TILE);
    dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE, batch);
    bmm_tiled_kernel<<<grid, block>>>(A.data_ptr<float>(), B.data_ptr<float>(), C.data_ptr<float>(), M, K, N);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
        printf("CUDA error: %s\n", cudaGetErrorString(err));
    }
    return C;
}
"""

bmm_cpp_source = r"""torch::Tensor bmm_cuda(torch::Tensor A, torch::Tensor B);"""

bmm_module = load_inline(
    name="bmm_tiled",
    cpp_sources=bmm_cpp_source,
    cuda_sources=bmm_cuda_source,
    functions=["bmm_cuda"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.bmm = bmm_module

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return self.bmm.bmm_cuda(A.contiguous(), B.contiguous())
'''
