"""l1_003_batched_matmul__accessor64: KernelBench level1/3_Batched_matrix_multiplication.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 128 -> 4, m 128 * 4 -> 64, k 256 * 4 -> 128, n 512 * 4 -> 96.
"""

SOURCE = "KernelBench level1/3_Batched_matrix_multiplication.py"
LEVEL = 1
FAMILY = "matmul"
EXPECTED = "pass"
FEATURES = ["AT_DISPATCH_FLOATING_TYPES", "TORCH_CHECK", "cuda_stream", "factory_with_options", "launch_check", "options", "packed_accessor", "templates"]
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
#include <ATen/cuda/CUDAContext.h>

template <typename scalar_t>
__global__ void bmm_kernel(const at::PackedTensorAccessor64<scalar_t, 3, at::RestrictPtrTraits> A,
                           const at::PackedTensorAccessor64<scalar_t, 3, at::RestrictPtrTraits> B,
                           at::PackedTensorAccessor64<scalar_t, 3, at::RestrictPtrTraits> C) {
    const int64_t b = blockIdx.z;
    const int64_t i = blockIdx.y * blockDim.y + threadIdx.y;
    const int64_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < C.size(1) && j < C.size(2)) {
        scalar_t acc = scalar_t(0);
        for (int64_t k = 0; k < A.size(2); ++k) acc += A[b][i][k] * B[b][k][j];
        C[b][i][j] = acc;
    }
}

at::Tensor bmm_forward(at::Tensor A, at::Tensor B) {
    TORCH_CHECK(A.dim() == 3 && B.dim() == 3, "bmm_forward: expected 3D tensors");
    TORCH_CHECK(A.size(0) == B.size(0) && A.size(2) == B.size(1), "bmm_forward: shape mismatch");
    at::Tensor C = at::empty({A.size(0), A.size(1), B.size(2)}, A.options());
    dim3 threads(16, 16);
    dim3 blocks((B.size(2) + 15) / 16, (A.size(1) + 15) / 16, A.size(0));
    auto stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES(A.scalar_type(), "bmm_forward", [&] {
        bmm_kernel<scalar_t><<<blocks, threads, 0, stream>>>(
            A.packed_accessor64<scalar_t, 3, at::RestrictPtrTraits>(),
            B.packed_accessor64<scalar_t, 3, at::RestrictPtrTraits>(),
            C.packed_accessor64<scalar_t, 3, at::RestrictPtrTraits>());
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return C;
}
"""

bmm_cpp_source = r"""at::Tensor bmm_forward(at::Tensor A, at::Tensor B);"""

bmm_module = load_inline(
    name="bmm_accessor64",
    cpp_sources=bmm_cpp_source,
    cuda_sources=bmm_cuda_source,
    functions=["bmm_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.bmm = bmm_module

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return self.bmm.bmm_forward(A.contiguous(), B.contiguous())
'''
