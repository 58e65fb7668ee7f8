#include <cuda_runtime.h>
#include "kd_shim.h"
namespace kd_user { namespace torch = ::kd_shim; namespace at = ::kd_shim; namespace c10 = ::kd_shim;
#line 1 "candidate.cu"




__global__ void swish_kernel(const float* x, float* out, int size) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < size) {
        float v = x[idx];
        out[idx] = v / (1.f + expf(-v));
    }
}

torch::Tensor swish_cuda(torch::Tensor x) {
    auto size = x.numel();
    auto out = torch::empty_like(x);
    const int block_size = 256;
    const int num_blocks = (size + block_size - 1) / block_size;
    swish_kernel<<<num_blocks, block_size>>>(x.data_ptr<float>(), out.data_ptr<float>(), size);
    return out;
}

}
