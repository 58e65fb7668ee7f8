"""l1_089_cumsum__block_scan: KernelBench level1/89_cumsum.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 32768 -> 128, input_shape (32768,) -> (1024,).
"""

SOURCE = "KernelBench level1/89_cumsum.py"
LEVEL = 1
FAMILY = "cumsum"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "cuda_stream", "launch_check", "scalar_args", "shared_memory", "warp_shuffle"]
SIZE_CHANGES = [('batch_size = 32768', 'batch_size = 128'), ('input_shape = (32768,)', 'input_shape = (1024,)')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    A simple model that performs a cumulative sum (prefix sum) operation along a specified dimension.

    Parameters:
        dim (int): The dimension along which to perform the scan operation.
    """

    def __init__(self, dim):
        """
        Initialize the Scan model.

        Args:
            dim (int): The dimension along which to perform the cumulative sum.
        """
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x):
        """
        Forward pass for the Scan model, computing the cumulative sum along the specified dimension.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, *input_shape), where `*input_shape` 
                              can vary depending on the use case.

        Returns:
            torch.Tensor: Tensor of the same shape as `x` after applying cumulative sum along `dim`.
        """
        return torch.cumsum(x, dim=self.dim)

# Define input dimensions and parameters
batch_size = 128  # KernelBench: 32768
input_shape = (1024,)  # KernelBench: (32768,)
dim = 1

def get_inputs():
    """
    Generates random inputs for testing the Scan model.

    Returns:
        list: A list containing a single randomly generated tensor with shape 
              (batch_size, *input_shape).
    """
    return [torch.rand(batch_size, *input_shape)]

def get_init_inputs():
    """
    Returns the initialization parameters for the Scan model.

    Returns:
        list: A list containing the `dim` parameter for model initialization.
    """
    return [dim]'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cumsum_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

// one block per row: each warp scans 32 elements with shuffles; the running total carries across chunks
__global__ void cumsum_scan_kernel(const float* __restrict__ x, float* __restrict__ y, int L) {
    __shared__ float warp_totals[32];
    __shared__ float carry;
    const float* in = x + (size_t)blockIdx.x * L;
    float* out = y + (size_t)blockIdx.x * L;
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int nwarps = blockDim.x >> 5;
    if (threadIdx.x == 0) carry = 0.0f;
    __syncthreads();
    for (int base = 0; base < L; base += blockDim.x) {
        const int i = base + threadIdx.x;
        float v = i < L ? in[i] : 0.0f;
        for (int off = 1; off < 32; off <<= 1) {
            const float n = __shfl_up_sync(0xffffffff, v, off);
            if (lane >= off) v += n;
        }
        if (lane == 31) warp_totals[warp] = v;
        __syncthreads();
        if (warp == 0) {
            float t = lane < nwarps ? warp_totals[lane] : 0.0f;
            for (int off = 1; off < 32; off <<= 1) {
                const float n = __shfl_up_sync(0xffffffff, t, off);
                if (lane >= off) t += n;
            }
            if (lane < nwarps) warp_totals[lane] = t;
        }
        __syncthreads();
        const float prefix = carry + (warp > 0 ? warp_totals[warp - 1] : 0.0f);
        if (i < L) out[i] = v + prefix;
        __syncthreads();
        if (threadIdx.x == blockDim.x - 1) carry = prefix + v;
        __syncthreads();
    }
}

torch::Tensor cumsum_forward(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(x.dim() == 2, "expected a 2D tensor");
    TORCH_CHECK(dim == 1 || dim == -1, "only the last dim is supported");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    cumsum_scan_kernel<<<xc.size(0), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), static_cast<int>(xc.size(1)));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

cumsum_cpp_source = r"""torch::Tensor cumsum_forward(torch::Tensor x, int64_t dim);"""

cumsum_module = load_inline(
    name="cumsum_block_scan",
    cpp_sources=cumsum_cpp_source,
    cuda_sources=cumsum_cuda_source,
    functions=["cumsum_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super(ModelNew, self).__init__()
        self.dim = dim
        self.cumsum = cumsum_module

    def forward(self, x) -> torch.Tensor:
        return self.cumsum.cumsum_forward(x, self.dim)
'''
