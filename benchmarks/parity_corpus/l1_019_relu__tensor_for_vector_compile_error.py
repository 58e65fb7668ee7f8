"""l1_019_relu__tensor_for_vector_compile_error: KernelBench level1/19_ReLU.py with a CUDA candidate; expected verdict compile_error.

Sizes reduced from KernelBench: batch_size 4096 -> 16, dim 393216 -> 16384.
The mistake (seen on the H200, 2026-12-01): one tensor returned where the declaration promises a vector.
"""

SOURCE = "KernelBench level1/19_ReLU.py"
LEVEL = 1
FAMILY = "activation"
EXPECTED = "compile_error"
FEATURES = ['factory_with_options', 'mistake', 'options', 'templates', 'vector_return']
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
#include <cuda_runtime.h>

template <typename F>
__global__ void map_kernel(const float* __restrict__ input, float* __restrict__ output, int size, F f) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < size) output[idx] = f(input[idx]);
}

template <typename F>
static torch::Tensor map_float(const torch::Tensor& input, torch::ScalarType out_type, F f) {
    auto output = torch::empty(input.sizes(), input.options().dtype(out_type));
    int size = input.numel();
    map_kernel<<<(size + 255) / 256, 256>>>(input.data_ptr<float>(), output.data_ptr<float>(), size, f);
    return output;
}

std::vector<torch::Tensor> relu_cuda(torch::Tensor input) {
    auto out = map_float(input, torch::kFloat32, [] __device__ (float v) { return fmaxf(v, 0.0f); });
    return out;
}
"""

relu_cpp_source = r"""std::vector<torch::Tensor> relu_cuda(torch::Tensor input);"""

relu_module = load_inline(
    name="relu_tensor_for_vector",
    cpp_sources=relu_cpp_source,
    cuda_sources=relu_cuda_source,
    functions=["relu_cuda"],
    extra_cuda_cflags=["--extended-lambda"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.relu_op = relu_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu_op.relu_cuda(x.contiguous())[0]
'''
