"""l1_095_cross_entropy__warp_two_pass: KernelBench level1/95_CrossEntropyLoss.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 32768 -> 128, num_classes 4096 -> 1000.
"""

SOURCE = "KernelBench level1/95_CrossEntropyLoss.py"
LEVEL = 1
FAMILY = "loss"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "block_reduction", "cuda_stream", "factory_with_options", "launch_check", "options", "shared_memory", "vector_return", "warp_shuffle"]
SIZE_CHANGES = [('batch_size = 32768', 'batch_size = 128'), ('num_classes = 4096', 'num_classes = 1000')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    A model that computes Cross Entropy Loss for multi-class classification tasks.

    Parameters:
        None
    """
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, predictions, targets):
        return torch.nn.functional.cross_entropy(predictions, targets)

batch_size = 128  # KernelBench: 32768
num_classes = 1000  # KernelBench: 4096
input_shape = (num_classes,)
dim = 1

def get_inputs():
    return [torch.rand(batch_size, *input_shape), torch.randint(0, num_classes, (batch_size,))]

def get_init_inputs():
    return []
'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

xent_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <vector>

// pass 1: per-row loss (one warp per row); pass 2: mean of the row losses in one block
__global__ void row_loss_kernel(const float* __restrict__ logits, const int64_t* __restrict__ targets,
                                float* __restrict__ row_loss, int batch, int C) {
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= batch) return;
    const float* x = logits + (size_t)row * C;
    float m = -INFINITY;
    for (int c = lane; c < C; c += 32) m = fmaxf(m, x[c]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
    float s = 0.0f;
    for (int c = lane; c < C; c += 32) s += __expf(x[c] - m);
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
    if (lane == 0) row_loss[row] = logf(s) + m - x[targets[row]];
}

__global__ void mean_kernel(const float* __restrict__ v, float* __restrict__ out, int n) {
    __shared__ float buf[1024];
    float s = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += v[i];
    buf[threadIdx.x] = s;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) buf[threadIdx.x] += buf[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) *out = buf[0] / n;
}

std::vector<torch::Tensor> cross_entropy_forward(torch::Tensor logits, torch::Tensor targets) {
    TORCH_CHECK(logits.is_cuda() && targets.is_cuda(), "inputs must be CUDA tensors");
    TORCH_CHECK(logits.dtype() == torch::kFloat32, "logits must be float32");
    const int batch = logits.size(0), C = logits.size(1);
    auto row_loss = torch::empty({batch}, logits.options());
    auto loss = torch::empty({}, logits.options());
    auto stream = at::cuda::getCurrentCUDAStream();
    const int warps_per_block = 8;
    row_loss_kernel<<<(batch + warps_per_block - 1) / warps_per_block, warps_per_block * 32, 0, stream>>>(
        logits.data_ptr<float>(), targets.data_ptr<int64_t>(), row_loss.data_ptr<float>(), batch, C);
    mean_kernel<<<1, 1024, 0, stream>>>(row_loss.data_ptr<float>(), loss.data_ptr<float>(), batch);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return {loss, row_loss};
}
"""

xent_cpp_source = r"""std::vector<torch::Tensor> cross_entropy_forward(torch::Tensor logits, torch::Tensor targets);"""

xent_module = load_inline(
    name="xent_warp",
    cpp_sources=xent_cpp_source,
    cuda_sources=xent_cuda_source,
    functions=["cross_entropy_forward"],
    verbose=False,
    extra_cuda_cflags=["-O3", "--use_fast_math"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.xent = xent_module

    def forward(self, predictions, targets):
        return self.xent.cross_entropy_forward(predictions.contiguous(), targets.contiguous())[0]
'''
