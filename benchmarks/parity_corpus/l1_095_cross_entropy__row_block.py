"""l1_095_cross_entropy__row_block: KernelBench level1/95_CrossEntropyLoss.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 32768 -> 128, num_classes 4096 -> 1000.
"""

SOURCE = "KernelBench level1/95_CrossEntropyLoss.py"
LEVEL = 1
FAMILY = "loss"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "block_reduction", "factory_with_options", "options", "shared_memory"]
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
#include <cuda_runtime.h>

// one block per row: loss_i = logsumexp(x_i) - x_i[target_i]; mean via atomicAdd of loss_i / batch
__global__ void cross_entropy_kernel(const float* __restrict__ logits, const int64_t* __restrict__ targets,
                                     float* __restrict__ out, int C, float inv_batch) {
    __shared__ float red[256];
    const float* row = logits + (size_t)blockIdx.x * C;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < C; c += blockDim.x) m = fmaxf(m, row[c]);
    red[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    const float row_max = red[0];
    __syncthreads();
    float sum = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) sum += expf(row[c] - row_max);
    red[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        const float lse = logf(red[0]) + row_max;
        atomicAdd(out, (lse - row[targets[blockIdx.x]]) * inv_batch);
    }
}

torch::Tensor cross_entropy_cuda(torch::Tensor predictions, torch::Tensor targets) {
    TORCH_CHECK(predictions.dim() == 2, "predictions must be (batch, classes)");
    TORCH_CHECK(targets.scalar_type() == torch::kInt64, "targets must be int64");
    TORCH_CHECK(targets.size(0) == predictions.size(0), "batch size mismatch");
    const int batch = predictions.size(0), C = predictions.size(1);
    auto out = torch::zeros({}, predictions.options());
    cross_entropy_kernel<<<batch, 256>>>(predictions.data_ptr<float>(), targets.data_ptr<int64_t>(), out.data_ptr<float>(), C,
                                         1.0f / batch);
    return out;
}
"""

xent_cpp_source = r"""torch::Tensor cross_entropy_cuda(torch::Tensor predictions, torch::Tensor targets);"""

xent_module = load_inline(
    name="xent_row_block",
    cpp_sources=xent_cpp_source,
    cuda_sources=xent_cuda_source,
    functions=["cross_entropy_cuda"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.xent = xent_module

    def forward(self, predictions, targets):
        return self.xent.cross_entropy_cuda(predictions.contiguous(), targets.contiguous())
'''
