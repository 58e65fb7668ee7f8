"""l1_098_kldiv_loss__block: KernelBench level1/98_KLDivLoss.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 8192 * 2 -> 64, input_shape (8192 * 2,) -> (2048,).
"""

SOURCE = "KernelBench level1/98_KLDivLoss.py"
LEVEL = 1
FAMILY = "loss"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "block_reduction", "cuda_stream", "factory_with_options", "grid_stride", "launch_check", "options", "shared_memory", "templates"]
SIZE_CHANGES = [('batch_size = 8192 * 2', 'batch_size = 64'), ('input_shape = (8192 * 2,)', 'input_shape = (2048,)')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    A model that computes Kullback-Leibler Divergence for comparing two distributions.

    Parameters:
        None
    """
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, predictions, targets):
        return torch.nn.functional.kl_div(torch.log(predictions), targets, reduction='batchmean')

batch_size = 64  # KernelBench: 8192 * 2
input_shape = (2048,)  # KernelBench: (8192 * 2,)
dim = 1

def get_inputs():
    scale = torch.rand(())
    return [(torch.rand(batch_size, *input_shape)*scale).softmax(dim=-1), torch.rand(batch_size, *input_shape).softmax(dim=-1)]

def get_init_inputs():
    return []
'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

kldiv_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

// kl_div(log(p), t, batchmean) = sum(t * (log t - log p)) / batch
template <int BLOCK>
__global__ void kl_div_kernel(const float* __restrict__ p, const float* __restrict__ t, float* __restrict__ out,
                              int64_t n, float inv_batch) {
    __shared__ float s[BLOCK];
    float acc = 0.0f;
    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)BLOCK * gridDim.x) {
        const float ti = t[i];
        if (ti > 0.0f) acc += ti * (logf(ti) - logf(p[i]));
    }
    s[threadIdx.x] = acc;
    __syncthreads();
#pragma unroll
    for (int k = BLOCK / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(out, s[0] * inv_batch);
}

torch::Tensor kl_div_forward(torch::Tensor predictions, torch::Tensor targets) {
    TORCH_CHECK(predictions.device().is_cuda(), "predictions must be on CUDA");
    TORCH_CHECK(predictions.sizes() == targets.sizes(), "shape mismatch");
    auto p = predictions.contiguous();
    auto t = targets.contiguous();
    auto out = torch::zeros({1}, torch::TensorOptions().dtype(torch::kFloat32).device(p.device()));
    kl_div_kernel<256><<<320, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        p.data_ptr<float>(), t.data_ptr<float>(), out.data_ptr<float>(), p.numel(), 1.0f / p.size(0));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out.reshape({});
}
"""

kldiv_cpp_source = r"""torch::Tensor kl_div_forward(torch::Tensor predictions, torch::Tensor targets);"""

kldiv_module = load_inline(
    name="kldiv_block",
    cpp_sources=kldiv_cpp_source,
    cuda_sources=kldiv_cuda_source,
    functions=["kl_div_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.kldiv = kldiv_module

    def forward(self, predictions, targets):
        return self.kldiv.kl_div_forward(predictions, targets)
'''
