"""l1_023_softmax__half: KernelBench level1/23_Softmax.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 4096 -> 16, dim 393216 -> 4096.
"""

SOURCE = "KernelBench level1/23_Softmax.py"
LEVEL = 1
FAMILY = "softmax"
EXPECTED = "pass"
FEATURES = ["AT_DISPATCH_FLOATING_TYPES_AND_HALF", "TORCH_CHECK", "block_reduction", "half", "shared_memory", "templates", "warp_shuffle"]
SIZE_CHANGES = [('batch_size = 4096', 'batch_size = 16'), ('dim = 393216', 'dim = 4096')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a Softmax activation.
    """
    def __init__(self):
        super(Model, self).__init__()
    
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies Softmax activation to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, num_features).

        Returns:
            torch.Tensor: Output tensor with Softmax applied, same shape as input.
        """
        return torch.softmax(x, dim=1)

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

softmax_cuda_source = r"""
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
__global__ void softmax_fwd_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, int cols) {
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
        out[c] = static_cast<scalar_t>(expf(v - row_max) / row_sum);
    }
}

torch::Tensor softmax_fwd(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.dim() == 2, "x must be 2D, got ", x.dim(), " dims");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int rows = xc.size(0), cols = xc.size(1);
    AT_DISPATCH_FLOATING_TYPES_AND_HALF(xc.scalar_type(), "softmax_fwd", ([&] {
        softmax_fwd_kernel<scalar_t><<<rows, 256>>>(xc.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), cols);
    }));
    return y;
}
"""

softmax_cpp_source = r"""torch::Tensor softmax_fwd(torch::Tensor x);"""

softmax_module = load_inline(
    name="softmax_half",
    cpp_sources=softmax_cpp_source,
    cuda_sources=softmax_cuda_source,
    functions=["softmax_fwd"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.softmax = softmax_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.softmax.softmax_fwd(x)
'''
