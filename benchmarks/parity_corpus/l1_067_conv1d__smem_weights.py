"""l1_067_conv1d__smem_weights: KernelBench level1/67_conv_standard_1D.py with a CUDA candidate; expected verdict runtime_error.

Written as a pass, and measured a run-time error on the H200 (both build paths, 2026-12-01): `self.conv1d` is
rebound from the nn.Conv1d to the extension module, so forward's `self.conv1d.weight` does not exist.

Sizes reduced from KernelBench: batch_size 32 -> 4, in_channels 64 -> 8, out_channels 128 -> 16, length 131072
-> 1024.
"""

SOURCE = "KernelBench level1/67_conv_standard_1D.py"
LEVEL = 1
FAMILY = "conv"
EXPECTED = "runtime_error"
FEATURES = ["TORCH_CHECK", "factory_with_options", "mistake", "options", "shared_memory"]
SIZE_CHANGES = [('batch_size = 32', 'batch_size = 4'), ('in_channels = 64', 'in_channels = 8'), ('out_channels = 128', 'out_channels = 16'), ('length = 131072', 'length = 1024')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Performs a standard 1D convolution operation.

    Args:
        in_channels (int): Number of channels in the input tensor.
        out_channels (int): Number of channels produced by the convolution.
        kernel_size (int): Size of the convolution kernel.
        stride (int, optional): Stride of the convolution. Defaults to 1.
        padding (int, optional): Padding applied to the input. Defaults to 0.
        dilation (int, optional): Spacing between kernel elements. Defaults to 1.
        groups (int, optional): Number of blocked connections from input channels to output channels. Defaults to 1.
        bias (bool, optional): If `True`, adds a learnable bias to the output. Defaults to `False`.
    """
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0, dilation: int = 1, groups: int = 1, bias: bool = False):
        super(Model, self).__init__()
        self.conv1d = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding, dilation=dilation, groups=groups, bias=bias)
        
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Performs the 1D convolution.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, in_channels, length).

        Returns:
            torch.Tensor: Output tensor of shape (batch_size, out_channels, length_out).
        """
        return self.conv1d(x)

# Test code
batch_size = 4  # KernelBench: 32
in_channels = 8  # KernelBench: 64
out_channels = 16  # KernelBench: 128
kernel_size = 3
length = 1024  # KernelBench: 131072

def get_inputs():
    x = torch.rand(batch_size, in_channels, length)
    return [x]

def get_init_inputs():
    return [in_channels, out_channels, kernel_size]  # Provide in_channels, out_channels, kernel_size for initialization'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

conv1d_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

// weights of one output channel staged in shared memory
__global__ void conv1d_kernel(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                              int Cin, int L, int Cout, int K, int Lout) {
    extern __shared__ float sw[];
    const int co = blockIdx.y;
    const int n = blockIdx.z;
    for (int i = threadIdx.x; i < Cin * K; i += blockDim.x) sw[i] = w[(size_t)co * Cin * K + i];
    __syncthreads();
    const int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= Lout) return;
    float acc = 0.0f;
    for (int ci = 0; ci < Cin; ++ci) {
        const float* xr = x + ((size_t)n * Cin + ci) * L + o;
        for (int k = 0; k < K; ++k) acc += xr[k] * sw[ci * K + k];
    }
    y[((size_t)n * Cout + co) * Lout + o] = acc;
}

torch::Tensor conv1d_forward(torch::Tensor x, torch::Tensor weight) {
    TORCH_CHECK(x.is_contiguous() && weight.is_contiguous(), "contiguous inputs required");
    const int N = x.size(0), Cin = x.size(1), L = x.size(2);
    const int Cout = weight.size(0), K = weight.size(2);
    const int Lout = L - K + 1;
    auto y = torch::zeros({N, Cout, Lout}, x.options());
    dim3 grid((Lout + 127) / 128, Cout, N);
    const size_t smem = Cin * K * sizeof(float);
    conv1d_kernel<<<grid, 128, smem>>>(x.data_ptr<float>(), weight.data_ptr<float>(), y.data_ptr<float>(), Cin, L, Cout, K,
                                      Lout);
    return y;
}
"""

conv1d_cpp_source = r"""torch::Tensor conv1d_forward(torch::Tensor x, torch::Tensor weight);"""

conv1d_module = load_inline(
    name="conv1d_smem",
    cpp_sources=conv1d_cpp_source,
    cuda_sources=conv1d_cuda_source,
    functions=["conv1d_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0,
                 dilation: int = 1, groups: int = 1, bias: bool = False):
        super(ModelNew, self).__init__()
        self.conv1d = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                                dilation=dilation, groups=groups, bias=bias)
        self.conv1d = conv1d_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv1d.conv1d_forward(x.contiguous(), self.conv1d.weight)
'''
