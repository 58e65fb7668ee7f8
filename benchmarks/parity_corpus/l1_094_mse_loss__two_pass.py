"""l1_094_mse_loss__two_pass: KernelBench level1/94_MSELoss.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 32768 -> 128, input_shape (32768,) -> (4096,).
"""

SOURCE = "KernelBench level1/94_MSELoss.py"
LEVEL = 1
FAMILY = "loss"
EXPECTED = "pass"
FEATURES = ["block_reduction", "factory_with_options", "options", "shared_memory"]
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
#include <cuda_runtime.h>

#define THREADS 512

__global__ void mse_partial_kernel(const float* p, const float* t, float* partial, int n) {
    __shared__ float sdata[THREADS];
    const int tid = threadIdx.x;
    float sum = 0.0f;
    for (int i = blockIdx.x * THREADS + tid; i < n; i += gridDim.x * THREADS) {
        const float a = p[i];
        const float b = t[i];
        sum += (a - b) * (a - b);
    }
    sdata[tid] = sum;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = sdata[0];
}

__global__ void mse_final_kernel(const float* partial, float* out, int blocks, int n) {
    __shared__ float sdata[THREADS];
    float sum = 0.0f;
    for (int i = threadIdx.x; i < blocks; i += THREADS) sum += partial[i];
    sdata[threadIdx.x] = sum;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = sdata[0] / n;
}

torch::Tensor mse_cuda(torch::Tensor predictions, torch::Tensor targets) {
    const int n = predictions.numel();
    const int blocks = 128;
    auto partial = torch::empty({blocks}, predictions.options());
    auto out = torch::empty({1}, predictions.options());
    mse_partial_kernel<<<blocks, THREADS>>>(predictions.data_ptr<float>(), targets.data_ptr<float>(),
                                               partial.data_ptr<float>(), n);
    mse_final_kernel<<<1, THREADS>>>(partial.data_ptr<float>(), out.data_ptr<float>(), blocks, n);
    return out.squeeze();
}
"""

mse_cpp_source = r"""torch::Tensor mse_cuda(torch::Tensor predictions, torch::Tensor targets);"""

mse_module = load_inline(
    name="mse_two_pass",
    cpp_sources=mse_cpp_source,
    cuda_sources=mse_cuda_source,
    functions=["mse_cuda"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.mse = mse_module

    def forward(self, predictions, targets):
        return self.mse.mse_cuda(predictions.contiguous(), targets.contiguous())
'''
