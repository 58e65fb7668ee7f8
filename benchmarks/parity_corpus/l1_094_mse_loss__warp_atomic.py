"""l1_094_mse_loss__warp_atomic: KernelBench level1/94_MSELoss.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 32768 -> 128, input_shape (32768,) -> (4096,).
"""

SOURCE = "KernelBench level1/94_MSELoss.py"
LEVEL = 1
FAMILY = "loss"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "block_reduction", "cuda_stream", "factory_with_options", "grid_stride", "launch_check", "options", "shared_memory", "warp_shuffle"]
SIZE_CHANGES = [('batch_size = 32768', 'batch_size = 128'), ('input_shape = (32768,)', 'input_shape = (4096,)')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    A model that computes the Mean Squared Error loss for regression tasks.

    Parameters:
        None
    """
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, predictions, targets):
        return torch.mean((predictions - targets) ** 2)

batch_size = 128  # KernelBench: 32768
input_shape = (4096,)  # KernelBench: (32768,)
dim = 1

def get_inputs():
    scale = torch.rand(())
    return [torch.rand(batch_size, *input_shape)*scale, torch.rand(batch_size, *input_shape)]

def get_init_inputs():
    return []
'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

mse_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__device__ __forceinline__ float warp_reduce_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffff, v, offset);
    return v;
}

__global__ void mse_kernel(const float* __restrict__ p, const float* __restrict__ t, float* __restrict__ out,
                              int64_t n, float inv_n) {
    __shared__ float warp_sums[32];
    float local = 0.0f;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)blockDim.x * gridDim.x) {
        const float a = p[i];
        const float b = t[i];
        local += (a - b) * (a - b);
    }
    local = warp_reduce_sum(local);
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = local;
    __syncthreads();
    if (threadIdx.x < 32) {
        local = threadIdx.x < (blockDim.x >> 5) ? warp_sums[threadIdx.x] : 0.0f;
        local = warp_reduce_sum(local);
        if (threadIdx.x == 0) atomicAdd(out, local * inv_n);
    }
}

torch::Tensor mse_forward(torch::Tensor predictions, torch::Tensor targets) {
    TORCH_CHECK(predictions.sizes() == targets.sizes(), "predictions and targets must match");
    TORCH_CHECK(predictions.is_contiguous() && targets.is_contiguous(), "inputs must be contiguous");
    auto out = torch::zeros({}, predictions.options());
    const int64_t n = predictions.numel();
    const int threads = 256;
    const int blocks = 256;
    mse_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        predictions.data_ptr<float>(), targets.data_ptr<float>(), out.data_ptr<float>(), n, 1.0f / static_cast<float>(n));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

mse_cpp_source = r"""torch::Tensor mse_forward(torch::Tensor predictions, torch::Tensor targets);"""

mse_module = load_inline(
    name="mse_warp_atomic",
    cpp_sources=mse_cpp_source,
    cuda_sources=mse_cuda_source,
    functions=["mse_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.mse = mse_module

    def forward(self, predictions, targets):
        return self.mse.mse_forward(predictions.contiguous(), targets.contiguous())
'''
