"""l2_032_conv2d_scaling_min__channel_min: KernelBench level2/32_Conv2d_Scaling_Min.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 64 -> 2, in_channels 64 -> 8, out_channels 128 -> 16, height width
= 256 -> width = 32.
"""

SOURCE = "KernelBench level2/32_Conv2d_Scaling_Min.py"
LEVEL = 2
FAMILY = "fused_conv"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "factory_with_options", "launch_check", "options", "scalar_args"]
SIZE_CHANGES = [('batch_size = 64', 'batch_size = 2'), ('in_channels = 64', 'in_channels = 8'), ('out_channels = 128', 'out_channels = 16'), ('height = width = 256', 'height = width = 32')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Model that performs a convolution, scales the output, and then applies a minimum operation.
    """
    def __init__(self, in_channels, out_channels, kernel_size, scale_factor):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.scale_factor = scale_factor

    def forward(self, x):
        """
        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, in_channels, height, width).
        Returns:
            torch.Tensor: Output tensor of shape (batch_size, out_channels, height, width).
        """
        x = self.conv(x)
        x = x * self.scale_factor
        x = torch.min(x, dim=1, keepdim=True)[0]  # Minimum along channel dimension
        return x

batch_size = 2  # KernelBench: 64
in_channels = 8  # KernelBench: 64
out_channels = 16  # KernelBench: 128
height = width = 32  # KernelBench: 256
kernel_size = 3
scale_factor = 2.0

def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]

def get_init_inputs():
    return [in_channels, out_channels, kernel_size, scale_factor]'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

conv_scale_min_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__device__ __forceinline__ float conv_at(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                                         int n, int co, int oh, int ow, int Cin, int H, int W, int K) {
    float acc = b[co];
    for (int ci = 0; ci < Cin; ++ci)
        for (int i = 0; i < K; ++i)
            for (int j = 0; j < K; ++j)
                acc += x[(((size_t)n * Cin + ci) * H + oh + i) * W + ow + j] * w[(((size_t)co * Cin + ci) * K + i) * K + j];
    return acc;
}

__global__ void conv_scale_min_kernel(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                            float* __restrict__ y, int N, int Cin, int H, int W, int Cout, int K, int Ho, int Wo, float scale_factor) {
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= N * Ho * Wo) return;
    const int ow = idx % Wo, oh = (idx / Wo) % Ho, n = idx / (Wo * Ho);
    float best = INFINITY;
    for (int co = 0; co < Cout; ++co) {
        float v = conv_at(x, w, b, n, co, oh, ow, Cin, H, W, K);
        v *= scale_factor;
        best = fminf(best, v);
    }
    y[idx] = best;
}

torch::Tensor conv_scale_min(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double scale_factor) {
    TORCH_CHECK(x.is_cuda() && weight.is_cuda() && bias.is_cuda(), "all inputs must be CUDA tensors");
    TORCH_CHECK(x.is_contiguous() && weight.is_contiguous(), "x and weight must be contiguous");
    const int N = x.size(0), Cin = x.size(1), H = x.size(2), W = x.size(3);
    const int Cout = weight.size(0), K = weight.size(2);
    const int Ho = H - K + 1, Wo = W - K + 1;
    auto y = torch::empty({N, 1, Ho, Wo}, x.options());
    const int total = N * Ho * Wo;
    const int threads = 256;
    conv_scale_min_kernel<<<(total + threads - 1) / threads, threads>>>(x.data_ptr<float>(), weight.data_ptr<float>(),
        bias.data_ptr<float>(), y.data_ptr<float>(), N, Cin, H, W, Cout, K, Ho, Wo, static_cast<float>(scale_factor));
    auto err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "conv_scale_min launch failed: ", cudaGetErrorString(err));
    return y;
}
"""

conv_scale_min_cpp_source = r"""torch::Tensor conv_scale_min(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double scale_factor);"""

conv_scale_min_module = load_inline(
    name="conv_scale_min_direct",
    cpp_sources=conv_scale_min_cpp_source,
    cuda_sources=conv_scale_min_cuda_source,
    functions=["conv_scale_min"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, scale_factor):
        super(ModelNew, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.scale_factor = scale_factor
        self.conv_scale_min = conv_scale_min_module

    def forward(self, x):
        return self.conv_scale_min.conv_scale_min(x.contiguous(), self.conv.weight, self.conv.bias, self.scale_factor)
'''
