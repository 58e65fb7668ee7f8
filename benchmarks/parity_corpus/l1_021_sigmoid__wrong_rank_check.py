"""l1_021_sigmoid__wrong_rank_check: KernelBench level1/21_Sigmoid.py with a CUDA candidate; expected verdict runtime_error.

Sizes reduced from KernelBench: batch_size 4096 -> 16, dim 393216 -> 16384.
"""

SOURCE = "KernelBench level1/21_Sigmoid.py"
LEVEL = 1
FAMILY = "activation"
EXPECTED = "runtime_error"
FEATURES = ["TORCH_CHECK", "cuda_stream", "launch_check", "mistake", "vectorized_float4"]
SIZE_CHANGES = [('batch_size = 4096', 'batch_size = 16'), ('dim = 393216', 'dim = 16384')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a Sigmoid activation.
    """
    def __init__(self):
        super(Model, self).__init__()
    
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies Sigmoid activation to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of any shape.

        Returns:
            torch.Tensor: Output tensor with Sigmoid applied, same shape as input.
        """
        return torch.sigmoid(x)

batch_size = 16  # KernelBench: 4096
dim = 16384  # KernelBench: 393216

def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]

def get_init_inputs():
    return []  # No special initialization inputs needed'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

sigmoid_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>

__device__ __forceinline__ float sigmoid_op(float v) {
    return 1.0f / (1.0f + expf(-v));
}

__global__ void sigmoid_vec4_kernel(const float4* __restrict__ in, float4* __restrict__ out, int64_t n4) {
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n4) {
        const float4 a = in[i];
        float4 r;
        r.x = sigmoid_op(a.x);
        r.y = sigmoid_op(a.y);
        r.z = sigmoid_op(a.z);
        r.w = sigmoid_op(a.w);
        out[i] = r;
    }
}

__global__ void sigmoid_tail_kernel(const float* __restrict__ in, float* __restrict__ out, int64_t start, int64_t n) {
    for (int64_t i = start + threadIdx.x; i < n; i += blockDim.x) {
        out[i] = sigmoid_op(in[i]);
    }
}

torch::Tensor sigmoid_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == at::kFloat, "sigmoid_forward: only float32 is supported, got ", x.scalar_type());
    TORCH_CHECK(x.dim() == 4, "expected an NCHW input, got ", x.dim(), " dims");
    auto out = torch::empty_like(x);
    const int64_t n = x.numel();
    const int64_t n4 = n / 4;
    const int threads = 256;
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    if (n4 > 0) {
        const int blocks = static_cast<int>((n4 + threads - 1) / threads);
        sigmoid_vec4_kernel<<<blocks, threads, 0, stream>>>(
            reinterpret_cast<const float4*>(x.data_ptr<float>()), reinterpret_cast<float4*>(out.data_ptr<float>()), n4);
    }
    if (n4 * 4 < n) {
        sigmoid_tail_kernel<<<1, 32, 0, stream>>>(x.data_ptr<float>(), out.data_ptr<float>(), n4 * 4, n);
    }
    AT_CUDA_CHECK(cudaGetLastError());
    return out;
}
"""

sigmoid_cpp_source = r"""torch::Tensor sigmoid_forward(torch::Tensor x);"""

sigmoid_module = load_inline(
    name="sigmoid_vec4",
    cpp_sources=sigmoid_cpp_source,
    cuda_sources=sigmoid_cuda_source,
    functions=["sigmoid_forward"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.sigmoid_op = sigmoid_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.sigmoid_op.sigmoid_forward(x.contiguous())
'''
