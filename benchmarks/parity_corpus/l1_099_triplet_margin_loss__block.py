"""l1_099_triplet_margin_loss__block: KernelBench level1/99_TripletMarginLoss.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 32768 -> 128, input_shape (8192,) -> (1024,).
"""

SOURCE = "KernelBench level1/99_TripletMarginLoss.py"
LEVEL = 1
FAMILY = "loss"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "block_reduction", "cuda_stream", "factory_with_options", "launch_check", "options", "scalar_args", "shared_memory"]
SIZE_CHANGES = [('batch_size = 32768', 'batch_size = 128'), ('input_shape = (8192,)', 'input_shape = (1024,)')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    A model that computes Triplet Margin Loss for metric learning tasks.

    Parameters:
        margin (float): The margin between the positive and negative samples.
    """
    def __init__(self, margin=1.0):
        super(Model, self).__init__()
        self.loss_fn = torch.nn.TripletMarginLoss(margin=margin)

    def forward(self, anchor, positive, negative):
        return self.loss_fn(anchor, positive, negative)

batch_size = 128  # KernelBench: 32768
input_shape = (1024,)  # KernelBench: (8192,)
dim = 1

def get_inputs():
    scale = torch.rand(())
    return [torch.rand(batch_size, *input_shape)*scale, torch.rand(batch_size, *input_shape), torch.rand(batch_size, *input_shape)]
    
def get_init_inputs():
    return [1.0]  # Default margin
'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

triplet_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

// pairwise_distance adds eps to the difference before the norm (torch.nn.TripletMarginLoss, p=2)
__global__ void triplet_kernel(const float* __restrict__ a, const float* __restrict__ p, const float* __restrict__ n,
                               float* __restrict__ out, int D, float margin, float inv_batch) {
    __shared__ float s_ap[256];
    __shared__ float s_an[256];
    const size_t base = (size_t)blockIdx.x * D;
    float ap = 0.0f, an = 0.0f;
    for (int i = threadIdx.x; i < D; i += blockDim.x) {
        const float d1 = a[base + i] - p[base + i] + 1e-6f;
        const float d2 = a[base + i] - n[base + i] + 1e-6f;
        ap += d1 * d1;
        an += d2 * d2;
    }
    s_ap[threadIdx.x] = ap;
    s_an[threadIdx.x] = an;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            s_ap[threadIdx.x] += s_ap[threadIdx.x + s];
            s_an[threadIdx.x] += s_an[threadIdx.x + s];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        const float loss = fmaxf(sqrtf(s_ap[0]) - sqrtf(s_an[0]) + margin, 0.0f);
        atomicAdd(out, loss * inv_batch);
    }
}

torch::Tensor triplet_margin_loss(torch::Tensor anchor, torch::Tensor positive, torch::Tensor negative, double margin) {
    TORCH_CHECK(anchor.dim() == 2, "expected (batch, dim) inputs");
    TORCH_CHECK(anchor.sizes() == positive.sizes() && anchor.sizes() == negative.sizes(), "shape mismatch");
    const int B = anchor.size(0), D = anchor.size(1);
    auto out = torch::zeros({}, anchor.options());
    triplet_kernel<<<B, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        anchor.data_ptr<float>(), positive.data_ptr<float>(), negative.data_ptr<float>(), out.data_ptr<float>(), D,
        static_cast<float>(margin), 1.0f / B);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

triplet_cpp_source = r"""torch::Tensor triplet_margin_loss(torch::Tensor anchor, torch::Tensor positive, torch::Tensor negative, double margin);"""

triplet_module = load_inline(
    name="triplet_block",
    cpp_sources=triplet_cpp_source,
    cuda_sources=triplet_cuda_source,
    functions=["triplet_margin_loss"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, margin=1.0):
        super(ModelNew, self).__init__()
        self.margin = margin
        self.triplet = triplet_module

    def forward(self, anchor, positive, negative):
        return self.triplet.triplet_margin_loss(anchor.contiguous(), positive.contiguous(), negative.contiguous(), self.margin)
'''
