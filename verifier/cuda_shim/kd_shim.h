// The header candidates compile against instead of torch/extension.h: the kd_shim API plus torch's macros.
#pragma once
#include "kd_shim_core.h"

#define TORCH_CHECK(cond, ...) \
  do { if (!(cond)) kd_shim_fail(__FILE__, __LINE__, ::kd_shim::format("Expected " #cond " to be true. ", ##__VA_ARGS__).c_str()); } while (0)
#define TORCH_INTERNAL_ASSERT(cond, ...) TORCH_CHECK(cond, ##__VA_ARGS__)
#define AT_ASSERTM(cond, ...) TORCH_CHECK(cond, ##__VA_ARGS__)
#define AT_ERROR(...) kd_shim_fail(__FILE__, __LINE__, ::kd_shim::format(__VA_ARGS__).c_str())
// torch defines these in c10/cuda/CUDAException.h, which torch/extension.h does not include: only a candidate
// that includes a c10/cuda or ATen/cuda header gets them (KD_SHIM_CUDA_EXCEPTION), here as there.
#if !defined(KD_SHIM_CPU) && defined(KD_SHIM_CUDA_EXCEPTION)
#define C10_CUDA_CHECK(expr) \
  do { cudaError_t kd_err_ = (expr); if (kd_err_ != cudaSuccess) kd_shim_fail(__FILE__, __LINE__, cudaGetErrorString(kd_err_)); } while (0)
#define AT_CUDA_CHECK(expr) C10_CUDA_CHECK(expr)
#define C10_CUDA_KERNEL_LAUNCH_CHECK() C10_CUDA_CHECK(cudaGetLastError())
#endif

#define KD_DISPATCH_CASE(ENUM, TYPE, ...) case ::kd_shim::ScalarType::ENUM: { using scalar_t = TYPE; return __VA_ARGS__(); }
#define KD_DISPATCH(TYPE, NAME, CASES)                                                      \
  [&] {                                                                                     \
    switch (::kd_shim::scalar_type_of(TYPE)) {                                               \
      CASES                                                                                 \
      default: kd_shim_fail(__FILE__, __LINE__, NAME ": unsupported dtype");                \
    }                                                                                       \
  }()
#define AT_DISPATCH_FLOATING_TYPES(TYPE, NAME, ...) \
  KD_DISPATCH(TYPE, NAME, KD_DISPATCH_CASE(Float, float, __VA_ARGS__) KD_DISPATCH_CASE(Double, double, __VA_ARGS__))
#define AT_DISPATCH_FLOATING_TYPES_AND_HALF(TYPE, NAME, ...)                                             \
  KD_DISPATCH(TYPE, NAME, KD_DISPATCH_CASE(Float, float, __VA_ARGS__) KD_DISPATCH_CASE(Double, double, __VA_ARGS__) \
              KD_DISPATCH_CASE(Half, ::kd_shim::Half, __VA_ARGS__))
#define AT_DISPATCH_FLOATING_TYPES_AND2(T1, T2, TYPE, NAME, ...)                                         \
  KD_DISPATCH(TYPE, NAME, KD_DISPATCH_CASE(Float, float, __VA_ARGS__) KD_DISPATCH_CASE(Double, double, __VA_ARGS__) \
              KD_DISPATCH_CASE(Half, ::kd_shim::Half, __VA_ARGS__) KD_DISPATCH_CASE(BFloat16, ::kd_shim::BFloat16, __VA_ARGS__))
#define AT_DISPATCH_INTEGRAL_TYPES(TYPE, NAME, ...)                                                      \
  KD_DISPATCH(TYPE, NAME, KD_DISPATCH_CASE(Byte, uint8_t, __VA_ARGS__) KD_DISPATCH_CASE(Char, int8_t, __VA_ARGS__) \
              KD_DISPATCH_CASE(Short, int16_t, __VA_ARGS__) KD_DISPATCH_CASE(Int, int32_t, __VA_ARGS__)          \
              KD_DISPATCH_CASE(Long, int64_t, __VA_ARGS__))
#define AT_DISPATCH_ALL_TYPES(TYPE, NAME, ...)                                                           \
  KD_DISPATCH(TYPE, NAME, KD_DISPATCH_CASE(Float, float, __VA_ARGS__) KD_DISPATCH_CASE(Double, double, __VA_ARGS__) \
              KD_DISPATCH_CASE(Byte, uint8_t, __VA_ARGS__) KD_DISPATCH_CASE(Char, int8_t, __VA_ARGS__)           \
              KD_DISPATCH_CASE(Short, int16_t, __VA_ARGS__) KD_DISPATCH_CASE(Int, int32_t, __VA_ARGS__)          \
              KD_DISPATCH_CASE(Long, int64_t, __VA_ARGS__))
