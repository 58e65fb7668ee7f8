"""l1_042_maxpool2d__accessor: KernelBench level1/42_Max_Pooling_2D.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 32 -> 2, channels 64 -> 8, height 512 -> 64, width 512 -> 64.
"""

SOURCE = "KernelBench level1/42_Max_Pooling_2D.py"
LEVEL = 1
FAMILY = "pooling"
EXPECTED = "pass"
FEATURES = ["AT_DISPATCH_FLOATING_TYPES", "TORCH_CHECK", "cuda_stream", "factory_with_options", "launch_check", "options", "packed_accessor", "scalar_args", "templates"]
SIZE_CHANGES = [('batch_size = 32', 'batch_size = 2'), ('channels = 64', 'channels = 8'), ('height = 512', 'height = 64'), ('width = 512', 'width = 64')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs Max Pooling 2D.
    """
    def __init__(self, kernel_size: int, stride: int, padding: int, dilation: int):
        """
        Initializes the Max Pooling 2D layer.

        Args:
            kernel_size (int): Size of the pooling window.
            stride (int): Stride of the pooling window.
            padding (int): Padding to be applied before pooling.
            dilation (int): Spacing between kernel elements.
        """
        super(Model, self).__init__()
        self.maxpool = nn.MaxPool2d(kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies Max Pooling 2D to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, channels, height, width).

        Returns:
            torch.Tensor: Output tensor after Max Pooling 2D, shape (batch_size, channels, pooled_height, pooled_width).
        """
        return self.maxpool(x)

batch_size = 2  # KernelBench: 32
channels = 8  # KernelBench: 64
height = 64  # KernelBench: 512
width = 64  # KernelBench: 512
kernel_size = 4
stride = 1
padding = 1
dilation = 1

def get_inputs():
    x = torch.rand(batch_size, channels, height, width)
    return [x]

def get_init_inputs():
    return [kernel_size, stride, padding, dilation]
'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

maxpool2d_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

template <typename scalar_t>
__global__ void maxpool2d_kernel(const torch::PackedTensorAccessor32<scalar_t, 4, torch::RestrictPtrTraits> in,
                                 torch::PackedTensorAccessor32<scalar_t, 4, torch::RestrictPtrTraits> out,
                                 int k, int stride, int pad, int dil) {
    const int nc = blockIdx.z;
    const int n = nc / in.size(1);
    const int c = nc % in.size(1);
    const int oh = blockIdx.y * blockDim.y + threadIdx.y;
    const int ow = blockIdx.x * blockDim.x + threadIdx.x;
    if (oh >= out.size(2) || ow >= out.size(3)) return;
    scalar_t best = -std::numeric_limits<scalar_t>::infinity();
    for (int i = 0; i < k; ++i) {
        const int ih = oh * stride - pad + i * dil;
        if (ih < 0 || ih >= in.size(2)) continue;
        for (int j = 0; j < k; ++j) {
            const int iw = ow * stride - pad + j * dil;
            if (iw < 0 || iw >= in.size(3)) continue;
            const scalar_t v = in[n][c][ih][iw];
            best = v > best ? v : best;
        }
    }
    out[n][c][oh][ow] = best;
}

torch::Tensor maxpool2d_forward(torch::Tensor x, int64_t k, int64_t stride, int64_t pad, int64_t dil) {
    TORCH_CHECK(x.dim() == 4, "maxpool2d_forward: expected a 4D tensor");
    const int64_t H_out = (x.size(2) + 2 * pad - dil * (k - 1) - 1) / stride + 1;
    const int64_t W_out = (x.size(3) + 2 * pad - dil * (k - 1) - 1) / stride + 1;
    auto out = torch::empty({x.size(0), x.size(1), H_out, W_out}, x.options());
    const dim3 threads(16, 16);
    const dim3 blocks((W_out + 15) / 16, (H_out + 15) / 16, x.size(0) * x.size(1));
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "maxpool2d_forward", ([&] {
        maxpool2d_kernel<scalar_t><<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
            x.packed_accessor32<scalar_t, 4, torch::RestrictPtrTraits>(),
            out.packed_accessor32<scalar_t, 4, torch::RestrictPtrTraits>(), k, stride, pad, dil);
    }));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

maxpool2d_cpp_source = r"""torch::Tensor maxpool2d_forward(torch::Tensor x, int64_t k, int64_t stride, int64_t pad, int64_t dil);"""

maxpool2d_module = load_inline(
    name="maxpool2d_accessor",
    cpp_sources=maxpool2d_cpp_source,
    cuda_sources=maxpool2d_cuda_source,
    functions=["maxpool2d_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int, dilation: int):
        super(ModelNew, self).__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.maxpool2d = maxpool2d_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.maxpool2d.maxpool2d_forward(x, self.kernel_size, self.stride, self.padding, self.dilation)
'''
