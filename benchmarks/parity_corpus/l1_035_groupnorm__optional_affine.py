"""l1_035_groupnorm__optional_affine: KernelBench level1/35_GroupNorm_.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 112 -> 4, features 64 -> 16, dim1 512 -> 32, dim2 512 -> 32,
num_groups 8 -> 4.
"""

SOURCE = "KernelBench level1/35_GroupNorm_.py"
LEVEL = 1
FAMILY = "norm"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "cuda_stream", "launch_check", "optional_arg", "scalar_args", "shared_memory", "warp_shuffle"]
SIZE_CHANGES = [('batch_size = 112', 'batch_size = 4'), ('features = 64', 'features = 16'), ('dim1 = 512', 'dim1 = 32'), ('dim2 = 512', 'dim2 = 32'), ('num_groups = 8', 'num_groups = 4')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs Group Normalization.
    """
    def __init__(self, num_features: int, num_groups: int):
        """
        Initializes the GroupNorm layer.

        Args:
            num_features (int): Number of features in the input tensor.
            num_groups (int): Number of groups to divide the channels into.
        """
        super(Model, self).__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies Group Normalization to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, num_features, *).

        Returns:
            torch.Tensor: Output tensor with Group Normalization applied, same shape as input.
        """
        return self.gn(x)

batch_size = 4  # KernelBench: 112
features = 16  # KernelBench: 64
num_groups = 4  # KernelBench: 8
dim1 = 32  # KernelBench: 512
dim2 = 32  # KernelBench: 512

def get_inputs():
    x = torch.rand(batch_size, features, dim1, dim2)
    return [x]

def get_init_inputs():
    return [features, num_groups] # num_features'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

groupnorm_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__inline__ __device__ float warp_sum(float v) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffff, v, offset);
    return v;
}

__inline__ __device__ float block_sum(float v) {
    static __shared__ float shared[32];
    const int lane = threadIdx.x % warpSize;
    const int wid = threadIdx.x / warpSize;
    v = warp_sum(v);
    if (lane == 0) shared[wid] = v;
    __syncthreads();
    v = (threadIdx.x < blockDim.x / warpSize) ? shared[lane] : 0.0f;
    if (wid == 0) v = warp_sum(v);
    if (threadIdx.x == 0) shared[0] = v;
    __syncthreads();
    const float total = shared[0];
    __syncthreads();
    return total;
}

// one block per (n, group)
__global__ void group_norm_kernel(const float* __restrict__ x, float* __restrict__ y, const float* __restrict__ gamma,
                                  const float* __restrict__ beta, int C, int HW, int G, float eps) {
    const int n = blockIdx.x / G;
    const int g = blockIdx.x % G;
    const int cpg = C / G;
    const int group_size = cpg * HW;
    const size_t base = ((size_t)n * C + (size_t)g * cpg) * HW;
    float s = 0.0f;
    for (int i = threadIdx.x; i < group_size; i += blockDim.x) s += x[base + i];
    const float mean = block_sum(s) / group_size;
    float sq = 0.0f;
    for (int i = threadIdx.x; i < group_size; i += blockDim.x) {
        const float d = x[base + i] - mean;
        sq += d * d;
    }
    const float inv_std = rsqrtf(block_sum(sq) / group_size + eps);
    for (int i = threadIdx.x; i < group_size; i += blockDim.x) {
        const int c = g * cpg + i / HW;
        const float w = gamma ? gamma[c] : 1.0f;
        const float b = beta ? beta[c] : 0.0f;
        y[base + i] = (x[base + i] - mean) * inv_std * w + b;
    }
}

torch::Tensor group_norm_forward(torch::Tensor x, c10::optional<torch::Tensor> weight, c10::optional<torch::Tensor> bias, int64_t num_groups, double eps) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.size(1) % num_groups == 0, "channels must divide into groups");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int N = xc.size(0), C = xc.size(1);
    const int HW = xc.numel() / (N * C);
    group_norm_kernel<<<N * num_groups, 512, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), weight.has_value() ? weight->data_ptr<float>() : nullptr, bias.has_value() ? bias->data_ptr<float>() : nullptr, C, HW, (int)num_groups, (float)eps);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

groupnorm_cpp_source = r"""torch::Tensor group_norm_forward(torch::Tensor x, c10::optional<torch::Tensor> weight, c10::optional<torch::Tensor> bias, int64_t num_groups, double eps);"""

groupnorm_module = load_inline(
    name="groupnorm_optional",
    cpp_sources=groupnorm_cpp_source,
    cuda_sources=groupnorm_cuda_source,
    functions=["group_norm_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, num_groups: int):
        super(ModelNew, self).__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)
        self.groupnorm = groupnorm_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.groupnorm.group_norm_forward(x, self.gn.weight, self.gn.bias, self.gn.num_groups, self.gn.eps)
'''
