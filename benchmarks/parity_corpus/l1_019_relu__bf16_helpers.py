"""l1_019_relu__bf16_helpers: KernelBench level1/19_ReLU.py with a CUDA candidate; expected verdict compile_error.

torch's load_inline rejects it: c10::BFloat16 converts to __nv_bfloat16 only explicitly, so
__bfloat162float(v) does not compile (kd_shim's at::BFloat16 is __nv_bfloat16 itself, so the fast path builds
it)

Sizes reduced from KernelBench: batch_size 4096 -> 16, dim 393216 -> 16384.
"""

SOURCE = "KernelBench level1/19_ReLU.py"
LEVEL = 1
FAMILY = "activation"
EXPECTED = "compile_error"
FEATURES = ["AT_DISPATCH_FLOATING_TYPES_AND2", "TORCH_CHECK", "bfloat16", "device_guard", "grid_stride", "half", "launch_check", "mistake", "templates"]
SIZE_CHANGES = [('batch_size = 4096', 'batch_size = 16'), ('dim = 393216', 'dim = 16384')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a ReLU activation.
    """
    def __init__(self):
        super(Model, self).__init__()
    
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies ReLU activation to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of any shape.

        Returns:
            torch.Tensor: Output tensor with ReLU applied, same shape as input.
        """
        return torch.relu(x)

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

relu_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <c10/cuda/CUDAGuard.h>

template <typename T>
__device__ __forceinline__ float to_float(T v) { return static_cast<float>(v); }
template <>
__device__ __forceinline__ float to_float<at::Half>(at::Half v) { return __half2float(v); }
template <>
__device__ __forceinline__ float to_float<at::BFloat16>(at::BFloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v) { return static_cast<T>(v); }
template <>
__device__ __forceinline__ at::Half from_float<at::Half>(float v) { return __float2half(v); }
template <>
__device__ __forceinline__ at::BFloat16 from_float<at::BFloat16>(float v) { return __float2bfloat16(v); }

template <typename scalar_t>
__global__ void relu_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, int64_t n) {
    const int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = to_float<scalar_t>(x[i]);
        y[i] = from_float<scalar_t>(fmaxf(v, 0.0f));
    }
}

torch::Tensor relu_forward(const torch::Tensor& x) {
    TORCH_CHECK(x.is_cuda(), "relu_forward: expected a CUDA tensor");
    const c10::cuda::OptionalCUDAGuard device_guard(device_of(x));
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t n = xc.numel();
    if (n == 0) return y;
    const int threads = 256;
    const int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 65535));
    AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16, xc.scalar_type(), "relu_forward", [&] {
        relu_kernel<scalar_t><<<blocks, threads>>>(xc.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), n);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

relu_cpp_source = r"""torch::Tensor relu_forward(const torch::Tensor& x);"""

relu_module = load_inline(
    name="relu_bf16",
    cpp_sources=relu_cpp_source,
    cuda_sources=relu_cuda_source,
    functions=["relu_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.relu_op = relu_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu_op.relu_forward(x)
'''
