"""l2_057_conv2d_relu_hardswish__direct: KernelBench level2/57_Conv2d_ReLU_HardSwish.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 128 -> 2, in_channels 8 -> 4, out_channels 64 -> 16, height, width
128, 128 -> 32, 32.
"""

SOURCE = "KernelBench level2/57_Conv2d_ReLU_HardSwish.py"
LEVEL = 2
FAMILY = "fused_conv"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "factory_with_options", "launch_check", "options"]
SIZE_CHANGES = [('batch_size = 128', 'batch_size = 2'), ('in_channels = 8', 'in_channels = 4'), ('out_channels = 64', 'out_channels = 16'), ('height, width = 128, 128', 'height, width = 32, 32')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a convolution, applies ReLU, and applies HardSwish activation.
    """
    def __init__(self, in_channels, out_channels, kernel_size):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        x = self.conv(x)
        x = torch.relu(x)
        x = x * torch.clamp((x + 3) / 6, 0, 1)
        return x

batch_size = 2  # KernelBench: 128
in_channels = 4  # KernelBench: 8
out_channels = 16  # KernelBench: 64
height, width = 32, 32  # KernelBench: 128, 128
kernel_size = 3

def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]

def get_init_inputs():
    return [in_channels, out_channels, kernel_size]'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

conv_relu_hswish_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void conv_relu_hardswish_kernel(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                            float* __restrict__ y, int N, int Cin, int H, int W, int Cout, int K, int Ho, int Wo) {
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= N * Cout * Ho * Wo) return;
    const int ow = idx % Wo, oh = (idx / Wo) % Ho, co = (idx / (Wo * Ho)) % Cout, n = idx / (Wo * Ho * Cout);
    float acc = b[co];
    for (int ci = 0; ci < Cin; ++ci)
        for (int i = 0; i < K; ++i)
            for (int j = 0; j < K; ++j)
                acc += x[(((size_t)n * Cin + ci) * H + oh + i) * W + ow + j] * w[(((size_t)co * Cin + ci) * K + i) * K + j];
    float v = acc;
    v = fmaxf(v, 0.0f);
    v = v * fminf(fmaxf((v + 3.0f) / 6.0f, 0.0f), 1.0f);
    y[idx] = v;
}

torch::Tensor conv_relu_hardswish(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda() && weight.is_cuda() && bias.is_cuda(), "all inputs must be CUDA tensors");
    TORCH_CHECK(x.is_contiguous() && weight.is_contiguous(), "x and weight must be contiguous");
    const int N = x.size(0), Cin = x.size(1), H = x.size(2), W = x.size(3);
    const int Cout = weight.size(0), K = weight.size(2);
    const int Ho = H - K + 1, Wo = W - K + 1;
    auto y = torch::empty({N, Cout, Ho, Wo}, x.options());
    const int total = N * Cout * Ho * Wo;
    const int threads = 256;
    conv_relu_hardswish_kernel<<<(total + threads - 1) / threads, threads>>>(x.data_ptr<float>(), weight.data_ptr<float>(),
        bias.data_ptr<float>(), y.data_ptr<float>(), N, Cin, H, W, Cout, K, Ho, Wo);
    auto err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "conv_relu_hardswish launch failed: ", cudaGetErrorString(err));
    return y;
}
"""

conv_relu_hswish_cpp_source = r"""torch::Tensor conv_relu_hardswish(torch::Tensor x, torch::Tensor weight, torch::Tensor bias);"""

conv_relu_hswish_module = load_inline(
    name="conv_relu_hswish_direct",
    cpp_sources=conv_relu_hswish_cpp_source,
    cuda_sources=conv_relu_hswish_cuda_source,
    functions=["conv_relu_hardswish"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super(ModelNew, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.conv_relu_hswish = conv_relu_hswish_module

    def forward(self, x):
        return self.conv_relu_hswish.conv_relu_hardswish(x.contiguous(), self.conv.weight, self.conv.bias)
'''
