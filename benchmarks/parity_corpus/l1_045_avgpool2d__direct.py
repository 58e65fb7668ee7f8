"""l1_045_avgpool2d__direct: KernelBench level1/45_Average_Pooling_2D.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 16 -> 2, channels 64 -> 8, height 2048 -> 128, width 2048 -> 128.
"""

SOURCE = "KernelBench level1/45_Average_Pooling_2D.py"
LEVEL = 1
FAMILY = "pooling"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "factory_with_options", "options", "scalar_args"]
SIZE_CHANGES = [('batch_size = 16', 'batch_size = 2'), ('channels = 64', 'channels = 8'), ('height = 2048', 'height = 128'), ('width = 2048', 'width = 128')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs 2D Average Pooling.
    """
    def __init__(self, kernel_size: int, stride: int = None, padding: int = 0):
        """
        Initializes the Average Pooling layer.

        Args:
            kernel_size (int): Size of the pooling window.
            stride (int, optional): Stride of the pooling operation. Defaults to None (same as kernel_size).
            padding (int, optional): Padding applied to the input tensor. Defaults to 0.
        """
        super(Model, self).__init__()
        self.avg_pool = nn.AvgPool2d(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies 2D Average Pooling to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, channels, height, width).

        Returns:
            torch.Tensor: Output tensor with Average Pooling applied.
        """
        return self.avg_pool(x)

batch_size = 2  # KernelBench: 16
channels = 8  # KernelBench: 64
height = 128  # KernelBench: 2048
width = 128  # KernelBench: 2048
kernel_size = 11

def get_inputs():
    x = torch.rand(batch_size, channels, height, width)
    return [x]

def get_init_inputs():
    return [kernel_size]'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

avgpool2d_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void avg_pool2d_kernel(const float* __restrict__ x, float* __restrict__ y, int H, int W, int H_out,
                                  int W_out, int k, int s) {
    const int plane = blockIdx.z;
    const int oh = blockIdx.y * blockDim.y + threadIdx.y;
    const int ow = blockIdx.x * blockDim.x + threadIdx.x;
    if (oh < H_out && ow < W_out) {
        const float* in = x + (size_t)plane * H * W;
        float acc = 0.0f;
        for (int i = 0; i < k; ++i)
            for (int j = 0; j < k; ++j)
                acc += in[(oh * s + i) * W + ow * s + j];
        y[(size_t)plane * H_out * W_out + oh * W_out + ow] = acc / (k * k);
    }
}

torch::Tensor avg_pool2d_forward(torch::Tensor x, int64_t kernel_size) {
    TORCH_CHECK(x.dim() == 4, "expected NCHW");
    auto xc = x.contiguous();
    const int N = xc.size(0), C = xc.size(1), H = xc.size(2), W = xc.size(3);
    const int k = kernel_size, s = kernel_size;
    const int H_out = (H - k) / s + 1, W_out = (W - k) / s + 1;
    auto y = torch::empty({N, C, H_out, W_out}, xc.options());
    dim3 block(8, 8);
    dim3 grid((W_out + 7) / 8, (H_out + 7) / 8, N * C);
    avg_pool2d_kernel<<<grid, block>>>(xc.data_ptr<float>(), y.data_ptr<float>(), H, W, H_out, W_out, k, s);
    return y;
}
"""

avgpool2d_cpp_source = r"""torch::Tensor avg_pool2d_forward(torch::Tensor x, int64_t kernel_size);"""

avgpool2d_module = load_inline(
    name="avgpool2d_direct",
    cpp_sources=avgpool2d_cpp_source,
    cuda_sources=avgpool2d_cuda_source,
    functions=["avg_pool2d_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int = None, padding: int = 0):
        super(ModelNew, self).__init__()
        self.kernel_size = kernel_size
        self.avgpool2d = avgpool2d_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.avgpool2d.avg_pool2d_forward(x, self.kernel_size)
'''
