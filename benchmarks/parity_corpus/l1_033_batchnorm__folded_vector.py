"""l1_033_batchnorm__folded_vector: KernelBench level1/33_BatchNorm.py with a CUDA candidate; expected verdict pass.

Sizes reduced from KernelBench: batch_size 64 -> 4, features 64 -> 16, dim1 512 -> 32, dim2 512 -> 32.
"""

SOURCE = "KernelBench level1/33_BatchNorm.py"
LEVEL = 1
FAMILY = "norm"
EXPECTED = "pass"
FEATURES = ["CHECK_INPUT_macros", "TORCH_CHECK", "factory_with_options", "grid_stride", "options", "vector_return"]
SIZE_CHANGES = [('batch_size = 64', 'batch_size = 4'), ('features = 64', 'features = 16'), ('dim1 = 512', 'dim1 = 32'), ('dim2 = 512', 'dim2 = 32')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs Batch Normalization.
    """
    def __init__(self, num_features: int):
        """
        Initializes the BatchNorm layer.

        Args:
            num_features (int): Number of features in the input tensor.
        """
        super(Model, self).__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies Batch Normalization to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, num_features, *).

        Returns:
            torch.Tensor: Output tensor with Batch Normalization applied, same shape as input.
        """
        return self.bn(x)

batch_size = 4  # KernelBench: 64
features = 16  # KernelBench: 64
dim1 = 32  # KernelBench: 512
dim2 = 32  # KernelBench: 512

def get_inputs():
    x = torch.rand(batch_size, features, dim1, dim2)
    return [x]

def get_init_inputs():
    return [features]'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

batchnorm_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

#define CHECK_CUDA(x) TORCH_CHECK(x.device().is_cuda(), #x " must be a CUDA tensor")
#define CHECK_CONTIGUOUS(x) TORCH_CHECK(x.is_contiguous(), #x " must be contiguous")
#define CHECK_INPUT(x) CHECK_CUDA(x); CHECK_CONTIGUOUS(x)

__global__ void bn_kernel(const float* __restrict__ x, float* __restrict__ y, const float* __restrict__ scale,
                          const float* __restrict__ shift, int C, int HW, int total) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += blockDim.x * gridDim.x) {
        const int c = (i / HW) % C;
        y[i] = x[i] * scale[c] + shift[c];
    }
}

__global__ void bn_fold_kernel(const float* mean, const float* var, const float* weight, const float* bias,
                               float* scale, float* shift, int C, float eps) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < C) {
        const float s = weight[c] * rsqrtf(var[c] + eps);
        scale[c] = s;
        shift[c] = bias[c] - mean[c] * s;
    }
}

std::vector<torch::Tensor> bn_forward(torch::Tensor x, torch::Tensor mean, torch::Tensor var, torch::Tensor weight,
                                      torch::Tensor bias, double eps) {
    CHECK_INPUT(x);
    CHECK_INPUT(mean);
    CHECK_INPUT(var);
    const int C = x.size(1);
    const int HW = x.size(2) * x.size(3);
    const int total = x.numel();
    auto scale = torch::empty({C}, x.options());
    auto shift = torch::empty({C}, x.options());
    bn_fold_kernel<<<(C + 127) / 128, 128>>>(mean.data_ptr<float>(), var.data_ptr<float>(), weight.data_ptr<float>(),
                                             bias.data_ptr<float>(), scale.data_ptr<float>(), shift.data_ptr<float>(), C,
                                             static_cast<float>(eps));
    auto y = torch::empty_like(x);
    bn_kernel<<<std::min((total + 255) / 256, 2048), 256>>>(x.data_ptr<float>(), y.data_ptr<float>(),
                                                            scale.data_ptr<float>(), shift.data_ptr<float>(), C, HW, total);
    return {y, scale, shift};
}
"""

batchnorm_cpp_source = r"""std::vector<torch::Tensor> bn_forward(torch::Tensor x, torch::Tensor mean, torch::Tensor var, torch::Tensor weight,
                                      torch::Tensor bias, double eps);"""

batchnorm_module = load_inline(
    name="batchnorm_folded",
    cpp_sources=batchnorm_cpp_source,
    cuda_sources=batchnorm_cuda_source,
    functions=["bn_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, num_features: int):
        super(ModelNew, self).__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)
        self.batchnorm = batchnorm_module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.batchnorm.bn_forward(x.contiguous(), self.bn.running_mean, self.bn.running_var, self.bn.weight, self.bn.bias, self.bn.eps)[0]
'''
