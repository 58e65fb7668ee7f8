"""l1_100_hinge_loss__atomic: KernelBench level1/100_HingeLoss.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 32768 -> 512, input_shape (32768,) -> (512,).
"""

SOURCE = "KernelBench level1/100_HingeLoss.py"
LEVEL = 1
FAMILY = "loss"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "block_reduction", "factory_with_options", "grid_stride", "options", "shared_memory"]
SIZE_CHANGES = [('batch_size = 32768', 'batch_size = 512'), ('input_shape = (32768,)', 'input_shape = (512,)')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    A model that computes Hinge Loss for binary classification tasks.

    Parameters:
        None
    """
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, predictions, targets):
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))

batch_size = 512  # KernelBench: 32768
input_shape = (512,)  # KernelBench: (32768,)
dim = 1

def get_inputs():
    return [torch.rand(batch_size, *input_shape), torch.randint(0, 2, (batch_size,)).float() * 2 - 1]

def get_init_inputs():
    return []'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

hinge_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

// predictions (B, D) * targets (D,) broadcast along rows, as in the reference
__global__ void hinge_kernel(const float* __restrict__ p, const float* __restrict__ t, float* __restrict__ out, int B, int D) {
    __shared__ float cache[256];
    float acc = 0.0f;
    const int n = B * D;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        acc += fmaxf(1.0f - p[i] * t[i % D], 0.0f);
    }
    cache[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) cache[threadIdx.x] += cache[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(out, cache[0] / n);
}

torch::Tensor hinge_loss(torch::Tensor predictions, torch::Tensor targets) {
    const int B = predictions.size(0), D = predictions.size(1);
    TORCH_CHECK(targets.numel() == D, "targets must broadcast along the last dim");
    auto out = torch::zeros({1}, predictions.options());
    hinge_kernel<<<128, 256>>>(predictions.data_ptr<float>(), targets.data_ptr<float>(), out.data_ptr<float>(), B, D);
    return out;
}
"""

hinge_cpp_source = r"""torch::Tensor hinge_loss(torch::Tensor predictions, torch::Tensor targets);"""

hinge_module = load_inline(
    name="hinge_atomic",
    cpp_sources=hinge_cpp_source,
    cuda_sources=hinge_cuda_source,
    functions=["hinge_loss"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.hinge = hinge_module

    def forward(self, predictions, targets):
        return self.hinge.hinge_loss(predictions.contiguous(), targets.contiguous())[0]
'''
