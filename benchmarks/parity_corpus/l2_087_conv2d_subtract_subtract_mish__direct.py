"""l2_087_conv2d_subtract_subtract_mish__direct: KernelBench level2/87_Conv2d_Subtract_Subtract_Mish.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 128 -> 2, in_channels 8 -> 4, out_channels 64 -> 16, height, width
256, 256 -> 32, 32.
"""

SOURCE = "KernelBench level2/87_Conv2d_Subtract_Subtract_Mish.py"
LEVEL = 2
FAMILY = "fused_conv"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "factory_with_options", "launch_check", "options", "scalar_args"]
SIZE_CHANGES = [('batch_size = 128', 'batch_size = 2'), ('in_channels = 8', 'in_channels = 4'), ('out_channels = 64', 'out_channels = 16'), ('height, width = 256, 256', 'height, width = 32, 32')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Model that performs a convolution, subtracts two values, applies Mish activation.
    """
    def __init__(self, in_channels, out_channels, kernel_size, subtract_value_1, subtract_value_2):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.subtract_value_1 = subtract_value_1
        self.subtract_value_2 = subtract_value_2

    def forward(self, x):
        x = self.conv(x)
        x = x - self.subtract_value_1
        x = x - self.subtract_value_2
        x = torch.nn.functional.mish(x)
        return x

batch_size = 2  # KernelBench: 128
in_channels = 4  # KernelBench: 8
out_channels = 16  # KernelBench: 64
height, width = 32, 32  # KernelBench: 256, 256
kernel_size = 3
subtract_value_1 = 0.5
subtract_value_2 = 0.2

def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]

def get_init_inputs():
    return [in_channels, out_channels, kernel_size, subtract_value_1, subtract_value_2]'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

conv_sub_mish_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void conv_sub_sub_mish_kernel(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                            float* __restrict__ y, int N, int Cin, int H, int W, int Cout, int K, int Ho, int Wo, float subtract_value_1, float subtract_value_2) {
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= N * Cout * Ho * Wo) return;
    const int ow = idx % Wo, oh = (idx / Wo) % Ho, co = (idx / (Wo * Ho)) % Cout, n = idx / (Wo * Ho * Cout);
    float acc = b[co];
    for (int ci = 0; ci < Cin; ++ci)
        for (int i = 0; i < K; ++i)
            for (int j = 0; j < K; ++j)
                acc += x[(((size_t)n * Cin + ci) * H + oh + i) * W + ow + j] * w[(((size_t)co * Cin + ci) * K + i) * K + j];
    float v = acc;
    v = v - subtract_value_1 - subtract_value_2;
    v = v * tanhf(v > 20.0f ? v : log1pf(expf(v)));
    y[idx] = v;
}

torch::Tensor conv_sub_sub_mish(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double subtract_value_1, double subtract_value_2) {
    TORCH_CHECK(x.is_cuda() && weight.is_cuda() && bias.is_cuda(), "all inputs must be CUDA tensors");
    TORCH_CHECK(x.is_contiguous() && weight.is_contiguous(), "x and weight must be contiguous");
    const int N = x.size(0), Cin = x.size(1), H = x.size(2), W = x.size(3);
    const int Cout = weight.size(0), K = weight.size(2);
    const int Ho = H - K + 1, Wo = W - K + 1;
    auto y = torch::empty({N, Cout, Ho, Wo}, x.options());
    const int total = N * Cout * Ho * Wo;
    const int threads = 256;
    conv_sub_sub_mish_kernel<<<(total + threads - 1) / threads, threads>>>(x.data_ptr<float>(), weight.data_ptr<float>(),
        bias.data_ptr<float>(), y.data_ptr<float>(), N, Cin, H, W, Cout, K, Ho, Wo, static_cast<float>(subtract_value_1), static_cast<float>(subtract_value_2));
    auto err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "conv_sub_sub_mish launch failed: ", cudaGetErrorString(err));
    return y;
}
"""

conv_sub_mish_cpp_source = r"""torch::Tensor conv_sub_sub_mish(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double subtract_value_1, double subtract_value_2);"""

conv_sub_mish_module = load_inline(
    name="conv_sub_mish_direct",
    cpp_sources=conv_sub_mish_cpp_source,
    cuda_sources=conv_sub_mish_cuda_source,
    functions=["conv_sub_sub_mish"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, subtract_value_1, subtract_value_2):
        super(ModelNew, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.subtract_value_1 = subtract_value_1
        self.subtract_value_2 = subtract_value_2
        self.conv_sub_mish = conv_sub_mish_module

    def forward(self, x):
        return self.conv_sub_mish.conv_sub_sub_mish(x.contiguous(), self.conv.weight, self.conv.bias, self.subtract_value_1, self.subtract_value_2)
'''
