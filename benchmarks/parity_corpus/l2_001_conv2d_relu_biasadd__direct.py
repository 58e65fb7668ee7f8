"""l2_001_conv2d_relu_biasadd__direct: KernelBench level2/1_Conv2D_ReLU_BiasAdd.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 128 -> 2, in_channels 64 -> 8, out_channels 128 -> 16, height width
= 128 -> width = 32.
"""

SOURCE = "KernelBench level2/1_Conv2D_ReLU_BiasAdd.py"
LEVEL = 2
FAMILY = "fused_conv"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "factory_with_options", "launch_check", "options"]
SIZE_CHANGES = [('batch_size = 128', 'batch_size = 2'), ('in_channels = 64', 'in_channels = 8'), ('out_channels = 128', 'out_channels = 16'), ('height = width = 128', 'height = width = 32')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a convolution, applies ReLU, and adds a bias term.
    """
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape)) 

    def forward(self, x):
        x = self.conv(x)
        x = torch.relu(x)
        x = x + self.bias
        return x

batch_size = 2  # KernelBench: 128
in_channels = 8  # KernelBench: 64
out_channels = 16  # KernelBench: 128
height = width = 32  # KernelBench: 128
kernel_size = 3
bias_shape = (out_channels, 1, 1)

def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]

def get_init_inputs():
    return [in_channels, out_channels, kernel_size, bias_shape]'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

conv_relu_bias_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void conv_relu_bias_kernel(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                            float* __restrict__ y, int N, int Cin, int H, int W, int Cout, int K, int Ho, int Wo, const float* __restrict__ extra_bias) {
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= N * Cout * Ho * Wo) return;
    const int ow = idx % Wo, oh = (idx / Wo) % Ho, co = (idx / (Wo * Ho)) % Cout, n = idx / (Wo * Ho * Cout);
    float acc = b[co];
    for (int ci = 0; ci < Cin; ++ci)
        for (int i = 0; i < K; ++i)
            for (int j = 0; j < K; ++j)
                acc += x[(((size_t)n * Cin + ci) * H + oh + i) * W + ow + j] * w[(((size_t)co * Cin + ci) * K + i) * K + j];
    float v = acc;
    v = fmaxf(v, 0.0f) + extra_bias[co];
    y[idx] = v;
}

torch::Tensor conv_relu_bias(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, torch::Tensor extra_bias) {
    TORCH_CHECK(x.is_cuda() && weight.is_cuda() && bias.is_cuda(), "all inputs must be CUDA tensors");
    TORCH_CHECK(x.is_contiguous() && weight.is_contiguous(), "x and weight must be contiguous");
    const int N = x.size(0), Cin = x.size(1), H = x.size(2), W = x.size(3);
    const int Cout = weight.size(0), K = weight.size(2);
    const int Ho = H - K + 1, Wo = W - K + 1;
    auto y = torch::empty({N, Cout, Ho, Wo}, x.options());
    const int total = N * Cout * Ho * Wo;
    const int threads = 256;
    conv_relu_bias_kernel<<<(total + threads - 1) / threads, threads>>>(x.data_ptr<float>(), weight.data_ptr<float>(),
        bias.data_ptr<float>(), y.data_ptr<float>(), N, Cin, H, W, Cout, K, Ho, Wo, extra_bias.data_ptr<float>());
    auto err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "conv_relu_bias launch failed: ", cudaGetErrorString(err));
    return y;
}
"""

conv_relu_bias_cpp_source = r"""torch::Tensor conv_relu_bias(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, torch::Tensor extra_bias);"""

conv_relu_bias_module = load_inline(
    name="conv_relu_bias_direct",
    cpp_sources=conv_relu_bias_cpp_source,
    cuda_sources=conv_relu_bias_cuda_source,
    functions=["conv_relu_bias"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super(ModelNew, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))
        self.conv_relu_bias = conv_relu_bias_module

    def forward(self, x):
        return self.conv_relu_bias.conv_relu_bias(x.contiguous(), self.conv.weight, self.conv.bias, self.bias)
'''
