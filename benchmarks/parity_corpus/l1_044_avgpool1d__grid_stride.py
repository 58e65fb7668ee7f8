"""l1_044_avgpool1d__grid_stride: KernelBench level1/44_Average_Pooling_1D.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 64 -> 4, in_channels 128 -> 16, input_length 65536 -> 1024.
"""

SOURCE = "KernelBench level1/44_Average_Pooling_1D.py"
LEVEL = 1
FAMILY = "pooling"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "factory_with_options", "grid_stride", "options", "scalar_args"]
SIZE_CHANGES = [('batch_size = 64', 'batch_size = 4'), ('in_channels = 128', 'in_channels = 16'), ('input_length = 65536', 'input_length = 1024')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs 1D Average Pooling.
    """
    def __init__(self, kernel_size: int, stride: int = 1, padding: int = 0):
        """
        Initializes the 1D Average Pooling layer.

        Args:
            kernel_size (int): Size of the pooling window.
            stride (int, optional): Stride of the pooling operation. Defaults to 1.
            padding (int, optional): Padding applied to the input tensor. Defaults to 0.
        """
        super(Model, self).__init__()
        self.avg_pool = nn.AvgPool1d(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies 1D Average Pooling to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, in_channels, input_length).

        Returns:
            torch.Tensor: Output tensor with 1D Average Pooling applied, shape (batch_size, in_channels, output_length).
        """
        return self.avg_pool(x)

batch_size = 4  # KernelBench: 64
in_channels = 16  # KernelBench: 128
input_length = 1024  # KernelBench: 65536
kernel_size = 8
stride = 1
padding = 4

def get_inputs():
    x = torch.rand(batch_size, in_channels, input_length)
    return [x]

def get_init_inputs():
    return [kernel_size, stride, padding]'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

avgpool1d_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

// count_include_pad=True: always divide by kernel_size
__global__ void avg_pool1d_kernel(const float* __restrict__ x, float* __restrict__ y, int L, int L_out, int k, int s,
                                  int p, long total) {
    for (long idx = blockIdx.x * (long)blockDim.x + threadIdx.x; idx < total; idx += (long)blockDim.x * gridDim.x) {
        const int o = idx % L_out;
        const long row = idx / L_out;
        const int start = o * s - p;
        float acc = 0.0f;
        for (int j = 0; j < k; ++j) {
            const int pos = start + j;
            if (pos >= 0 && pos < L) acc += x[row * L + pos];
        }
        y[idx] = acc / k;
    }
}

torch::Tensor avg_pool1d_cuda(torch::Tensor x, int kernel_size, int stride, int padding) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous(), "x must be a contiguous CUDA tensor");
    const int L = x.size(2);
    const int L_out = (L + 2 * padding - kernel_size) / stride + 1;
    auto y = torch::empty({x.size(0), x.size(1), L_out}, x.options());
    const long total = y.numel();
    avg_pool1d_kernel<<<1024, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), L, L_out, kernel_size, stride, padding, total);
    return y;
}
"""

avgpool1d_cpp_source = r"""torch::Tensor avg_pool1d_cuda(torch::Tensor x, int kernel_size, int stride, int padding);"""

avgpool1d_module = load_inline(
    name="avgpool1d_grid_stride",
    cpp_sources=avgpool1d_cpp_source,
    cuda_sources=avgpool1d_cuda_source,
    functions=["avg_pool1d_cuda"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int = 1, padding: int = 0):
        super(ModelNew, self).__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.avgpool1d = avgpool1d_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.avgpool1d.avg_pool1d_cuda(x.contiguous(), self.kernel_size, self.stride, self.padding)
'''
