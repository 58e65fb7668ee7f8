"""l2_082_conv2d_tanh_scaling_biasadd_max__fused_pool: KernelBench level2/82_Conv2d_Tanh_Scaling_BiasAdd_Max.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 128 -> 2, in_channels 8 -> 4, out_channels 64 -> 16, height, width
256, 256 -> 34, 34.
"""

SOURCE = "KernelBench level2/82_Conv2d_Tanh_Scaling_BiasAdd_Max.py"
LEVEL = 2
FAMILY = "fused_conv"
EXPECTED = "pass"
FEATURES = ["TORCH_CHECK", "factory_with_options", "launch_check", "options", "scalar_args"]
SIZE_CHANGES = [('batch_size = 128', 'batch_size = 2'), ('in_channels = 8', 'in_channels = 4'), ('out_channels = 64', 'out_channels = 16'), ('height, width = 256, 256', 'height, width = 34, 34')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    A model that performs a convolution, applies tanh, scaling, adds a bias term, and then max-pools.
    """
    def __init__(self, in_channels, out_channels, kernel_size, scaling_factor, bias_shape, pool_kernel_size):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.scaling_factor = scaling_factor
        self.bias = nn.Parameter(torch.randn(bias_shape))
        self.max_pool = nn.MaxPool2d(pool_kernel_size)

    def forward(self, x):
        # Convolution
        x = self.conv(x)
        # Tanh activation
        x = torch.tanh(x)
        # Scaling
        x = x * self.scaling_factor
        # Bias addition
        x = x + self.bias
        # Max-pooling
        x = self.max_pool(x)
        return x

batch_size = 2  # KernelBench: 128
in_channels = 4  # KernelBench: 8
out_channels = 16  # KernelBench: 64
height, width = 34, 34  # KernelBench: 256, 256
kernel_size = 3
scaling_factor = 2.0
bias_shape = (out_channels, 1, 1)
pool_kernel_size = 4

def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]

def get_init_inputs():
    return [in_channels, out_channels, kernel_size, scaling_factor, bias_shape, pool_kernel_size]'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

conv_tanh_pool_cuda_source = r"""
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

// conv, epilogue, then a 4x4 max pool: one thread per pooled output
__global__ void conv_tanh_scale_bias_maxpool_kernel(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                            float* __restrict__ y, int N, int Cin, int H, int W, int Cout, int K, int Ho, int Wo, float scaling_factor, const float* __restrict__ extra_bias) {
    const int Po = Ho / 4, Qo = Wo / 4;
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= N * Cout * Po * Qo) return;
    const int q = idx % Qo, p = (idx / Qo) % Po, co = (idx / (Qo * Po)) % Cout, n = idx / (Qo * Po * Cout);
    float best = -INFINITY;
    for (int di = 0; di < 4; ++di) {
        for (int dj = 0; dj < 4; ++dj) {
            float v = conv_at(x, w, b, n, co, p * 4 + di, q * 4 + dj, Cin, H, W, K);
            v = tanhf(v) * scaling_factor + extra_bias[co];
            best = fmaxf(best, v);
        }
    }
    y[idx] = best;
}

torch::Tensor conv_tanh_scale_bias_maxpool(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double scaling_factor, torch::Tensor extra_bias) {
    TORCH_CHECK(x.is_cuda() && weight.is_cuda() && bias.is_cuda(), "all inputs must be CUDA tensors");
    TORCH_CHECK(x.is_contiguous() && weight.is_contiguous(), "x and weight must be contiguous");
    const int N = x.size(0), Cin = x.size(1), H = x.size(2), W = x.size(3);
    const int Cout = weight.size(0), K = weight.size(2);
    const int Ho = H - K + 1, Wo = W - K + 1;
    auto y = torch::empty({N, Cout, Ho / 4, Wo / 4}, x.options());
    const int total = N * Cout * (Ho / 4) * (Wo / 4);
    const int threads = 256;
    conv_tanh_scale_bias_maxpool_kernel<<<(total + threads - 1) / threads, threads>>>(x.data_ptr<float>(), weight.data_ptr<float>(),
        bias.data_ptr<float>(), y.data_ptr<float>(), N, Cin, H, W, Cout, K, Ho, Wo, static_cast<float>(scaling_factor), extra_bias.data_ptr<float>());
    auto err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "conv_tanh_scale_bias_maxpool launch failed: ", cudaGetErrorString(err));
    return y;
}
"""

conv_tanh_pool_cpp_source = r"""torch::Tensor conv_tanh_scale_bias_maxpool(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double scaling_factor, torch::Tensor extra_bias);"""

conv_tanh_pool_module = load_inline(
    name="conv_tanh_pool_direct",
    cpp_sources=conv_tanh_pool_cpp_source,
    cuda_sources=conv_tanh_pool_cuda_source,
    functions=["conv_tanh_scale_bias_maxpool"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, scaling_factor, bias_shape, pool_kernel_size):
        super(ModelNew, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.scaling_factor = scaling_factor
        self.bias = nn.Parameter(torch.randn(bias_shape))
        self.max_pool = nn.MaxPool2d(pool_kernel_size)
        self.conv_tanh_pool = conv_tanh_pool_module

    def forward(self, x):
        return self.conv_tanh_pool.conv_tanh_scale_bias_maxpool(x.contiguous(), self.conv.weight, self.conv.bias, self.scaling_factor, self.bias)
'''
