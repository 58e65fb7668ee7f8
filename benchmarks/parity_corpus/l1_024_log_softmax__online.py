"""l1_024_log_softmax__online: KernelBench level1/24_LogSoftmax.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 4096 -> 16, dim 393216 -> 4096.
"""

SOURCE = "KernelBench level1/24_LogSoftmax.py"
LEVEL = 1
FAMILY = "softmax"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "block_reduction", "cuda_stream", "device_guard", "launch_check", "options", "scalar_args", "shared_memory", "templates", "warp_shuffle"]
SIZE_CHANGES = [('batch_size = 4096', 'batch_size = 16'), ('dim = 393216', 'dim = 4096')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a LogSoftmax activation.
    """
    def __init__(self, dim: int = 1):
        super(Model, self).__init__()
        self.dim = dim
    
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies LogSoftmax activation to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, dim).

        Returns:
            torch.Tensor: Output tensor with LogSoftmax applied, same shape as input.
        """
        return torch.log_softmax(x, dim=self.dim)

batch_size = 16  # KernelBench: 4096
dim = 4096  # KernelBench: 393216

def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]

def get_init_inputs():
    return []  # No special initialization inputs needed'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

log_softmax_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

// online softmax: each thread keeps a running (max, sum), merged with warp shuffles then across warps
__device__ __forceinline__ void merge(float& m, float& s, float om, float os) {
    const float nm = fmaxf(m, om);
    s = s * expf(m - nm) + os * expf(om - nm);
    m = nm;
}

template <int THREADS>
__global__ void log_softmax_online_kernel(const float* __restrict__ in, float* __restrict__ out, int cols) {
    const float* row_in = in + (size_t)blockIdx.x * cols;
    float* row_out = out + (size_t)blockIdx.x * cols;
    float m = -INFINITY, s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) {
        const float x = row_in[c];
        const float nm = fmaxf(m, x);
        s = s * expf(m - nm) + expf(x - nm);
        m = nm;
    }
    for (int off = 16; off > 0; off >>= 1) {
        const float om = __shfl_xor_sync(0xffffffff, m, off);
        const float os = __shfl_xor_sync(0xffffffff, s, off);
        merge(m, s, om, os);
    }
    __shared__ float sm[THREADS / 32], ss[THREADS / 32];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) { sm[warp] = m; ss[warp] = s; }
    __syncthreads();
    if (warp == 0) {
        m = lane < THREADS / 32 ? sm[lane] : -INFINITY;
        s = lane < THREADS / 32 ? ss[lane] : 0.0f;
        for (int off = 16; off > 0; off >>= 1) {
            const float om = __shfl_xor_sync(0xffffffff, m, off);
            const float os = __shfl_xor_sync(0xffffffff, s, off);
            merge(m, s, om, os);
        }
        if (lane == 0) { sm[0] = m; ss[0] = s; }
    }
    __syncthreads();
    m = sm[0];
    s = ss[0];
    for (int c = threadIdx.x; c < cols; c += THREADS) {
        const float x = row_in[c];
        row_out[c] = (x - m) - logf(s);
    }
}

torch::Tensor log_softmax_online(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat, "x must be a float32 CUDA tensor");
    TORCH_CHECK(x.dim() == 2 && (dim == 1 || dim == -1), "log_softmax_online handles the last dim of a 2D tensor");
    at::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto out = at::empty_like(xc);
    constexpr int THREADS = 512;
    log_softmax_online_kernel<THREADS><<<xc.size(0), THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), out.data_ptr<float>(), static_cast<int>(xc.size(1)));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

log_softmax_cpp_source = r"""torch::Tensor log_softmax_online(torch::Tensor x, int64_t dim);"""

log_softmax_module = load_inline(
    name="log_softmax_online",
    cpp_sources=log_softmax_cpp_source,
    cuda_sources=log_softmax_cuda_source,
    functions=["log_softmax_online"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int = 1):
        super(ModelNew, self).__init__()
        self.dim = dim
        self.log_softmax = log_softmax_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.log_softmax.log_softmax_online(x, self.dim)
'''
