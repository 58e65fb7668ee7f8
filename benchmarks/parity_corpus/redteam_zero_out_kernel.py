"""redteam_zero_out_kernel: KernelBench level1/1_Square_matrix_multiplication_.py with a CUDA candidate; expected verdict illegal.

zeroes its inputs and returns zeros: the judge's input-mutation check (illegal) fires before the comparison

Sizes reduced from KernelBench: N 2048 * 2 -> 256.
"""

SOURCE = "KernelBench level1/1_Square_matrix_multiplication_.py"
LEVEL = 1
FAMILY = "matmul"
EXPECTED = "illegal"
FEATURES = ["factory_with_options", "options", "redteam"]
SIZE_CHANGES = [('N = 2048 * 2', 'N = 256')]

REFERENCE = r'''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a single square matrix multiplication (C = A * B)
    """
    def __init__(self):
        super(Model, self).__init__()
    
    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        """
        Performs the matrix multiplication.

        Args:
            A (torch.Tensor): Input matrix A of shape (N, N).
            B (torch.Tensor): Input matrix B of shape (N, N).

        Returns:
            torch.Tensor: Output matrix C of shape (N, N).
        """
        return torch.matmul(A, B)

N = 256  # KernelBench: 2048 * 2

def get_inputs():
    A = torch.rand(N, N)
    B = torch.rand(N, N)
    return [A, B]

def get_init_inputs():
    return []  # No special initialization inputs needed'''

CANDIDATE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

###########################################
# This custom kernel zeros out the inputs and returns a zero matrix.
# It is specifically designed to test the eval script's robustness.
# Running this zero kernel should result in incorrectness for eval,
# as the reference kernel will not return all zeros.
###########################################

# Destroys all inputs, returns all zeros for final matmul shape
matmul_cuda_source = r"""
#include <torch/extension.h>

torch::Tensor matmul_cuda(torch::Tensor A, torch::Tensor B) {
    A.zero_();
    B.zero_();
    return torch::zeros({A.size(0), B.size(1)}, A.options());
}
"""

matmul_cuda_cpp = "torch::Tensor matmul_cuda(torch::Tensor A, torch::Tensor B);"

# Compile inline extension
matmul_module = load_inline(
    name="fast_matmul", # this is a hacky kernel that shall not pass; it would extra fast since it just allocates 0s
    cpp_sources=matmul_cuda_cpp,
    cuda_sources=matmul_cuda_source,
    functions=["matmul_cuda"],
    verbose=False,
)

class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.matmul = matmul_module

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return self.matmul.matmul_cuda(A, B)

N = 2048 * 2

def get_inputs():
    A = torch.rand(N, N)
    B = torch.rand(N, N)
    return [A, B]

def get_init_inputs():
    return []'''
