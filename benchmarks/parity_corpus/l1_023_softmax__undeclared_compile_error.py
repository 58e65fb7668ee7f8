"""l1_023_softmax__undeclared_compile_error: KernelBench level1/23_Softmax.py with a CUDA candidate; expected verdict compile_error.

Sizes reduced from KernelBench: batch_size 4096 -> 16, dim 393216 -> 4096.
"""

SOURCE = "KernelBench level1/23_Softmax.py"
LEVEL = 1
FAMILY = "softmax"
EXPECTED = "compile_error"
FEATURES = ["TORCH_CHECK", "block_reduction", "mistake", "shared_memory"]
SIZE_CHANGES = [('batch_size = 4096', 'batch_size = 16'), ('dim = 393216', 'dim = 4096')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a Softmax activation.
    """
    def __init__(self):
        super(Model, self).__init__()
    
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies Softmax activation to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, num_features).

        Returns:
            torch.Tensor: Output tensor with Softmax applied, same shape as input.
        """
        return torch.softmax(x, dim=1)

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

softmax_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

// one block per row: max and sum reduced in shared memory
__global__ void softmax_kernel(const float* __restrict__ input, float* __restrict__ output, int dim) {
    extern __shared__ float sdata[];
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    const float* in = input + (size_t)row * dim;
    float* out = output + (size_t)row * dim;

    float local_max = -INFINITY;
    for (int i = tid; i < dim; i += blockDim.x) local_max = fmaxf(local_max, in[i]);
    sdata[tid] = local_max;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] = fmaxf(sdata[tid], sdata[tid + s]);
        __syncthreads();
    }
    const float row_max = sdata[0];
    __syncthreads();

    float local_sum = 0.0f;
    for (int i = tid; i < dim; i += blockDim.x) local_sum += expf(in[i] - row_max);
    sdata[tid] = local_sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    const float row_sum = sdata[0] + shared_bias;

    for (int i = tid; i < dim; i += blockDim.x) {
        const float v = in[i];
        out[i] = expf(v - row_max) / row_sum;
    }
}

torch::Tensor softmax_cuda(torch::Tensor input) {
    TORCH_CHECK(input.dim() == 2, "input must be 2D");
    auto output = torch::empty_like(input);
    const int batch = input.size(0);
    const int dim = input.size(1);
    const int threads = 256;
    const size_t shared = threads * sizeof(float);
    softmax_kernel<<<batch, threads, shared>>>(input.data_ptr<float>(), output.data_ptr<float>(), dim);
    return output;
}
"""

softmax_cpp_source = r"""torch::Tensor softmax_cuda(torch::Tensor input);"""

softmax_module = load_inline(
    name="softmax_block",
    cpp_sources=softmax_cpp_source,
    cuda_sources=softmax_cuda_source,
    functions=["softmax_cuda"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.softmax = softmax_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.softmax.softmax_cuda(x.contiguous())
'''
