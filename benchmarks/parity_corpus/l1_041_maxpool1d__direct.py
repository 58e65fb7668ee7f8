"""l1_041_maxpool1d__direct: KernelBench level1/41_Max_Pooling_1D.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 64 -> 4, features 192 -> 16, sequence_length 65536 -> 1024.
"""

SOURCE = "KernelBench level1/41_Max_Pooling_1D.py"
LEVEL = 1
FAMILY = "pooling"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "factory_with_options", "options", "scalar_args"]
SIZE_CHANGES = [('batch_size = 64', 'batch_size = 4'), ('features = 192', 'features = 16'), ('sequence_length = 65536', 'sequence_length = 1024')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs Max Pooling 1D.
    """
    def __init__(self, kernel_size: int, stride: int = None, padding: int = 0, dilation: int = 1, return_indices: bool = False):
        """
        Initializes the Max Pooling 1D layer.

        Args:
            kernel_size (int): Size of the window to take a max over.
            stride (int, optional): Stride of the window. Defaults to None (same as kernel_size).
            padding (int, optional): Implicit zero padding to be added on both sides. Defaults to 0.
            dilation (int, optional): Spacing between kernel elements. Defaults to 1.
            return_indices (bool, optional): Whether to return the indices of the maximum values. Defaults to False.
        """
        super(Model, self).__init__()
        self.maxpool = nn.MaxPool1d(kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation, return_indices=return_indices)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies Max Pooling 1D to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, num_features, sequence_length).

        Returns:
            torch.Tensor: Output tensor with Max Pooling 1D applied, shape (batch_size, num_features, output_sequence_length).
        """
        return self.maxpool(x)

batch_size = 4  # KernelBench: 64
features = 16  # KernelBench: 192
sequence_length = 1024  # KernelBench: 65536

kernel_size = 8
stride      = 1
padding     = 4
dilation    = 3            

return_indices = False

def get_inputs():
    x = torch.rand(batch_size, features, sequence_length)
    return [x]

def get_init_inputs():
    return [kernel_size, stride, padding, dilation, return_indices]'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

maxpool1d_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <cfloat>

__global__ void maxpool1d_kernel(const float* __restrict__ x, float* __restrict__ y, int L, int L_out, int kernel_size,
                                 int stride, int padding, int dilation, int total) {
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    const int o = idx % L_out;
    const int row = idx / L_out;
    const float* in = x + (size_t)row * L;
    float best = -FLT_MAX;
    const int start = o * stride - padding;
    for (int k = 0; k < kernel_size; ++k) {
        const int pos = start + k * dilation;
        if (pos >= 0 && pos < L) best = fmaxf(best, in[pos]);
    }
    y[idx] = best;
}

torch::Tensor maxpool1d_forward(torch::Tensor x, int64_t kernel_size, int64_t stride, int64_t padding, int64_t dilation) {
    TORCH_CHECK(x.dim() == 3, "expected (N, C, L)");
    TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
    const int N = x.size(0), C = x.size(1), L = x.size(2);
    const int L_out = (L + 2 * padding - dilation * (kernel_size - 1) - 1) / stride + 1;
    auto y = torch::empty({N, C, L_out}, x.options());
    const int total = N * C * L_out;
    maxpool1d_kernel<<<(total + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), L, L_out, kernel_size,
                                                   stride, padding, dilation, total);
    return y;
}
"""

maxpool1d_cpp_source = r"""torch::Tensor maxpool1d_forward(torch::Tensor x, int64_t kernel_size, int64_t stride, int64_t padding, int64_t dilation);"""

maxpool1d_module = load_inline(
    name="maxpool1d_direct",
    cpp_sources=maxpool1d_cpp_source,
    cuda_sources=maxpool1d_cuda_source,
    functions=["maxpool1d_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int = None, padding: int = 0, dilation: int = 1, return_indices: bool = False):
        super(ModelNew, self).__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.maxpool1d = maxpool1d_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.maxpool1d.maxpool1d_forward(x.contiguous(), self.kernel_size, self.stride, self.padding, self.dilation)
'''
