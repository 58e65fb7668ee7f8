"""l1_063_conv2d__direct_optional_bias: KernelBench level1/63_conv_standard_2D__square_input__square_kernel.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 16 -> 2, in_channels 16 -> 8, out_channels 128 -> 16, width 1024 ->
64, height 1024 -> 64.
"""

SOURCE = "KernelBench level1/63_conv_standard_2D__square_input__square_kernel.py"
LEVEL = 1
FAMILY = "conv"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "cuda_stream", "factory_with_options", "grid_stride", "launch_check", "optional_arg", "options", "scalar_args"]
SIZE_CHANGES = [('batch_size = 16', 'batch_size = 2'), ('in_channels = 16', 'in_channels = 8'), ('out_channels = 128', 'out_channels = 16'), ('width = 1024', 'width = 64'), ('height = 1024', 'height = 64')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Performs a standard 2D convolution operation with a square input and square kernel.

    Args:
        in_channels (int): Number of channels in the input tensor.
        out_channels (int): Number of channels produced by the convolution.
        kernel_size (int): Size of the square convolution kernel.
        stride (int, optional): Stride of the convolution. Defaults to 1.
        padding (int, optional): Padding applied to the input. Defaults to 0.
        dilation (int, optional): Spacing between kernel elements. Defaults to 1.
        groups (int, optional): Number of blocked connections from input channels to output channels. Defaults to 1.
        bias (bool, optional): If `True`, adds a learnable bias to the output. Defaults to `False`.
    """
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0, dilation: int = 1, groups: int = 1, bias: bool = False):
        super(Model, self).__init__()
        self.conv2d = nn.Conv2d(in_channels, out_channels, (kernel_size, kernel_size), stride=stride, padding=padding, dilation=dilation, groups=groups, bias=bias)
        
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Performs the 2D convolution.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, in_channels, height, width).

        Returns:
            torch.Tensor: Output tensor of shape (batch_size, out_channels, height_out, width_out).
        """
        return self.conv2d(x)

# Test code
batch_size = 2  # KernelBench: 16
in_channels = 8  # KernelBench: 16
out_channels = 16  # KernelBench: 128
kernel_size = 3
width = 64  # KernelBench: 1024
height = 64  # KernelBench: 1024

def get_inputs():
    x = torch.rand(batch_size, in_channels, height, width)
    return [x]

def get_init_inputs():
    return [in_channels, out_channels, kernel_size]  # Provide in_channels, out_channels, kernel_size for initialization'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

conv2d_std_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void conv2d_standard_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                     const float* __restrict__ b, float* __restrict__ y, int N, int Cin, int H, int W,
                                     int Cout, int KH, int KW, int Hout, int Wout, int stride, int padding) {
    const long total = (long)N * Cout * Hout * Wout;
    for (long idx = blockIdx.x * (long)blockDim.x + threadIdx.x; idx < total; idx += (long)blockDim.x * gridDim.x) {
        const int ow = idx % Wout;
        const int oh = (idx / Wout) % Hout;
        const int co = (idx / ((long)Wout * Hout)) % Cout;
        const int n = idx / ((long)Wout * Hout * Cout);
        float acc = b ? b[co] : 0.0f;
        for (int ci = 0; ci < Cin; ++ci) {
            for (int i = 0; i < KH; ++i) {
                const int ih = oh * stride - padding + i;
                if (ih < 0 || ih >= H) continue;
                for (int j = 0; j < KW; ++j) {
                    const int iw = ow * stride - padding + j;
                    if (iw < 0 || iw >= W) continue;
                    acc += x[(((size_t)n * Cin + ci) * H + ih) * W + iw] * w[(((size_t)co * Cin + ci) * KH + i) * KW + j];
                }
            }
        }
        y[idx] = acc;
    }
}

torch::Tensor conv2d_standard_forward(torch::Tensor x, torch::Tensor weight, c10::optional<torch::Tensor> bias, int64_t stride, int64_t padding) {
    TORCH_CHECK(x.is_cuda() && weight.is_cuda(), "inputs must be CUDA tensors");
    TORCH_CHECK(x.dim() == 4 && weight.dim() == 4, "expected 4D input and weight");
    auto xc = x.contiguous();
    auto wc = weight.contiguous();
    const int N = xc.size(0), Cin = xc.size(1), H = xc.size(2), W = xc.size(3);
    const int Cout = wc.size(0), KH = wc.size(2), KW = wc.size(3);
    const int Hout = (H + 2 * padding - KH) / stride + 1;
    const int Wout = (W + 2 * padding - KW) / stride + 1;
    auto y = torch::empty({N, Cout, Hout, Wout}, xc.options());
    const int threads = 256;
    const long total = (long)N * Cout * Hout * Wout;
    const int blocks = (int)std::min<long>((total + threads - 1) / threads, 65535);
    conv2d_standard_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), wc.data_ptr<float>(), bias.has_value() && bias->defined() ? bias->data_ptr<float>() : nullptr, y.data_ptr<float>(), N, Cin, H, W, Cout, KH, KW, Hout,
        Wout, (int)stride, (int)padding);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

conv2d_std_cpp_source = r"""torch::Tensor conv2d_standard_forward(torch::Tensor x, torch::Tensor weight, c10::optional<torch::Tensor> bias, int64_t stride, int64_t padding);"""

conv2d_std_module = load_inline(
    name="conv2d_std_direct",
    cpp_sources=conv2d_std_cpp_source,
    cuda_sources=conv2d_std_cuda_source,
    functions=["conv2d_standard_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0, dilation: int = 1, groups: int = 1, bias: bool = False):
        super(ModelNew, self).__init__()
        self.conv2d = nn.Conv2d(in_channels, out_channels, (kernel_size, kernel_size), stride=stride, padding=padding, dilation=dilation, groups=groups, bias=bias)
        self.conv2d_std = conv2d_std_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2d_std.conv2d_standard_forward(x, self.conv2d.weight, self.conv2d.bias, self.conv2d.stride[0], self.conv2d.padding[0])
'''
