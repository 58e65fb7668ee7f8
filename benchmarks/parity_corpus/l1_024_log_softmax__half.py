"""l1_024_log_softmax__half: KernelBench level1/24_LogSoftmax.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 4096 -> 16, dim 393216 -> 4096.
"""

SOURCE = "KernelBench level1/24_LogSoftmax.py"
LEVEL = 1
FAMILY = "softmax"
EXPECTED = "pass"
FEATURES = ["AT_DISPATCH_FLOATING_TYPES_AND_HALF", "TORCH_CHECK", "block_reduction", "half", "shared_memory", "templates", "warp_shuffle"]
SIZE_CHANGES = [('batch_size = 4096', 'batch_size = 16'), ('dim = 393216', 'dim = 4096')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a LogSoftmax activation.
    """
    def __init__(self, dim: int = 1):
        super(Model, self).__init__()
        self.dim = dim
    
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies LogSoftmax activation to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, dim).

        Returns:
            torch.Tensor: Output tensor with LogSoftmax applied, same shape as input.
        """
        return torch.log_softmax(x, dim=self.dim)

batch_size = 16  # KernelBench: 4096
dim = 4096  # KernelBench: 393216

def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]

def get_init_inputs():
    return []  # No special initialization inputs needed'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

log_softmax_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_fp16.h>

template <typename scalar_t>
__device__ float block_reduce_max(float v, float* shared) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffff, v, o));
    if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = v;
    __syncthreads();
    v = threadIdx.x < blockDim.x / 32 ? shared[threadIdx.x] : -INFINITY;
    if (threadIdx.x < 32)
        for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffff, v, o));
    if (threadIdx.x == 0) shared[0] = v;
    __syncthreads();
    v = shared[0];
    __syncthreads();
    return v;
}

template <typename scalar_t>
__device__ float block_reduce_sum(float v, float* shared) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = v;
    __syncthreads();
    v = threadIdx.x < blockDim.x / 32 ? shared[threadIdx.x] : 0.0f;
    if (threadIdx.x < 32)
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    if (threadIdx.x == 0) shared[0] = v;
    __syncthreads();
    v = shared[0];
    __syncthreads();
    return v;
}

template <typename scalar_t>
__global__ void log_softmax_fwd_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, int cols) {
    __shared__ float shared[32];
    const scalar_t* in = x + (size_t)blockIdx.x * cols;
    scalar_t* out = y + (size_t)blockIdx.x * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, static_cast<float>(in[c]));
    const float row_max = block_reduce_max<scalar_t>(m, shared);
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(static_cast<float>(in[c]) - row_max);
    const float row_sum = block_reduce_sum<scalar_t>(s, shared);
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const float v = static_cast<float>(in[c]);
        out[c] = static_cast<scalar_t>((v - row_max) - logf(row_sum));
    }
}

torch::Tensor log_softmax_fwd(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.dim() == 2, "x must be 2D, got ", x.dim(), " dims");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int rows = xc.size(0), cols = xc.size(1);
    AT_DISPATCH_FLOATING_TYPES_AND_HALF(xc.scalar_type(), "log_softmax_fwd", ([&] {
        log_softmax_fwd_kernel<scalar_t><<<rows, 256>>>(xc.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), cols);
    }));
    return y;
}
"""

log_softmax_cpp_source = r"""torch::Tensor log_softmax_fwd(torch::Tensor x);"""

log_softmax_module = load_inline(
    name="log_softmax_half",
    cpp_sources=log_softmax_cpp_source,
    cuda_sources=log_softmax_cuda_source,
    functions=["log_softmax_fwd"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int = 1):
        super(ModelNew, self).__init__()
        self.dim = dim
        self.log_softmax = log_softmax_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.log_softmax.log_softmax_fwd(x)
'''
