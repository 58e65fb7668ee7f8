// kd_shim: the slice of the ATen C++ API that KernelBench-style host code uses, without torch headers.
// KD_SHIM_CPU: the cpu backend's variant (g++ only, no CUDA toolkit needed).
//
// nvcc spends ~25 s parsing torch/types.h for a one-line kernel; this header parses in milliseconds.
// A kd_shim::Tensor is a handle to a real at::Tensor owned by the bindings translation unit, which is
// compiled by g++ against real ATen (through a precompiled header) and implements the kd_shim_* functions.
// Code that needs more than this slice fails to compile here and is rebuilt with torch's own load_inline.
#pragma once
// Only what the shim itself needs: header parsing is most of nvcc's time (cudafe++, cicc and the host
// compiler each parse everything). The standard headers torch/extension.h would have brought in are
// added by the builder for the std:: names the candidate uses (fastbuild.std_includes), and the half
// types only when the candidate mentions them (KD_SHIM_HALF).
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>
#ifndef KD_SHIM_CPU
#include <cuda_runtime.h>
#endif
#if defined(KD_SHIM_HALF) && !defined(KD_SHIM_CPU)
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#endif
#ifdef KD_SHIM_OPTIONAL
#include <optional>
#endif
#ifdef __CUDACC__
#define KD_HD __host__ __device__
#else
#define KD_HD
#endif

namespace kd_shim {

// Values match c10::ScalarType.
enum class ScalarType : int8_t {
  Byte = 0, Char = 1, Short = 2, Int = 3, Long = 4, Half = 5, Float = 6, Double = 7,
  ComplexHalf = 8, ComplexFloat = 9, ComplexDouble = 10, Bool = 11, BFloat16 = 15, Undefined = 127
};
constexpr ScalarType kByte = ScalarType::Byte, kUInt8 = ScalarType::Byte, kChar = ScalarType::Char,
                     kInt8 = ScalarType::Char, kShort = ScalarType::Short, kInt16 = ScalarType::Short,
                     kInt = ScalarType::Int, kInt32 = ScalarType::Int, kLong = ScalarType::Long,
                     kInt64 = ScalarType::Long, kHalf = ScalarType::Half, kFloat16 = ScalarType::Half,
                     kFloat = ScalarType::Float, kFloat32 = ScalarType::Float, kDouble = ScalarType::Double,
                     kFloat64 = ScalarType::Double, kBool = ScalarType::Bool, kBFloat16 = ScalarType::BFloat16;

#if defined(KD_SHIM_HALF) && !defined(KD_SHIM_CPU)
// Like c10::Half and c10::BFloat16, not the raw CUDA types: 2-byte structs that convert to and from float
// implicitly (also under -D__CUDA_NO_HALF_CONVERSIONS__, as torch's do), and are not __half themselves,
// so code compiles here exactly when it compiles against torch.
struct alignas(2) Half {
  unsigned short x;
  Half() = default;
  KD_HD Half(float v) { __half h = __float2half(v); x = *reinterpret_cast<unsigned short*>(&h); }
  KD_HD operator float() const { return __half2float(*reinterpret_cast<const __half*>(&x)); }
#ifdef __CUDACC__
  KD_HD Half(const __half& v) { x = *reinterpret_cast<const unsigned short*>(&v); }
  KD_HD operator __half() const { return *reinterpret_cast<const __half*>(&x); }
#endif
};
struct alignas(2) BFloat16 {
  unsigned short x;
  BFloat16() = default;
  KD_HD BFloat16(float v) { __nv_bfloat16 h = __float2bfloat16(v); x = *reinterpret_cast<unsigned short*>(&h); }
  KD_HD operator float() const { return __bfloat162float(*reinterpret_cast<const __nv_bfloat16*>(&x)); }
#ifdef __CUDACC__
  KD_HD BFloat16(const __nv_bfloat16& v) { x = *reinterpret_cast<const unsigned short*>(&v); }
  explicit KD_HD operator __nv_bfloat16() const { return *reinterpret_cast<const __nv_bfloat16*>(&x); }
#endif
};
#endif

enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };
constexpr DeviceType kCPU = DeviceType::CPU, kCUDA = DeviceType::CUDA;

struct Device {
  DeviceType type_ = DeviceType::CPU;
  int index_ = -1;
  Device() = default;
  Device(DeviceType t, int i = -1) : type_(t), index_(i) {}
  DeviceType type() const { return type_; }
  int index() const { return index_; }
  bool is_cuda() const { return type_ == DeviceType::CUDA; }
  bool is_cpu() const { return type_ == DeviceType::CPU; }
  bool operator==(const Device& o) const { return type_ == o.type_ && index_ == o.index_; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

struct TensorOptions {
  ScalarType dtype_ = ScalarType::Undefined;
  Device device_{};
  bool has_device_ = false;
  TensorOptions() = default;
  TensorOptions(ScalarType t) : dtype_(t) {}
  TensorOptions(Device d) : device_(d), has_device_(true) {}
  TensorOptions(DeviceType d) : device_(d), has_device_(true) {}
  TensorOptions dtype(ScalarType t) const { TensorOptions o = *this; o.dtype_ = t; return o; }
  TensorOptions device(Device d) const { TensorOptions o = *this; o.device_ = d; o.has_device_ = true; return o; }
  TensorOptions device(DeviceType t, int i = -1) const { return device(Device(t, i)); }
  TensorOptions requires_grad(bool) const { return *this; }
  TensorOptions layout(int) const { return *this; }
  ScalarType scalar_type() const { return dtype_; }
};
inline TensorOptions dtype(ScalarType t) { return TensorOptions(t); }
inline TensorOptions device(Device d) { return TensorOptions(d); }
inline TensorOptions device(DeviceType d) { return TensorOptions(d); }

// A list of sizes or strides; converts from {..}, std::vector and back.
struct IntList {
  std::vector<int64_t> v;
  IntList() = default;
  IntList(std::initializer_list<int64_t> l) : v(l) {}
  IntList(const std::vector<int64_t>& x) : v(x) {}
  template <typename T, typename = typename std::enable_if<std::is_integral<T>::value>::type>
  IntList(const std::vector<T>& x) : v(x.begin(), x.end()) {}
  int64_t operator[](size_t i) const { return v[i]; }
  size_t size() const { return v.size(); }
  bool empty() const { return v.empty(); }
  const int64_t* data() const { return v.data(); }
  std::vector<int64_t>::const_iterator begin() const { return v.begin(); }
  std::vector<int64_t>::const_iterator end() const { return v.end(); }
  int64_t front() const { return v.front(); }
  int64_t back() const { return v.back(); }
  std::vector<int64_t> vec() const { return v; }
  operator std::vector<int64_t>() const { return v; }
  bool equals(const IntList& o) const { return v == o.v; }
  friend bool operator==(const IntList& a, const IntList& b) { return a.v == b.v; }
  friend bool operator!=(const IntList& a, const IntList& b) { return a.v != b.v; }
};
using IntArrayRef = IntList;

#ifdef KD_SHIM_OPTIONAL
// c10::optional is std::optional in the torch versions we support.
template <typename T> using optional = std::optional<T>;
using std::nullopt;
using std::make_optional;
#endif

// Element accessors, as ATen's TensorAccessor.h: a view of sizes and strides (host accessor: the tensor's own
// arrays) and the packed form that copies them into the object so that it can be passed to a kernel by value.
template <typename T> struct DefaultPtrTraits { typedef T* PtrType; };
template <typename T> struct RestrictPtrTraits { typedef T* __restrict__ PtrType; };

template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
class TensorAccessorBase {
 public:
  typedef typename PtrTraits<T>::PtrType PtrType;
  KD_HD TensorAccessorBase(PtrType data, const index_t* sizes, const index_t* strides)
      : data_(data), sizes_(sizes), strides_(strides) {}
  KD_HD index_t stride(index_t i) const { return strides_[i]; }
  KD_HD index_t size(index_t i) const { return sizes_[i]; }
  KD_HD PtrType data() { return data_; }
  KD_HD const PtrType data() const { return data_; }
 protected:
  PtrType data_;
  const index_t* sizes_;
  const index_t* strides_;
};

template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
class TensorAccessor : public TensorAccessorBase<T, N, PtrTraits, index_t> {
 public:
  typedef typename PtrTraits<T>::PtrType PtrType;
  KD_HD TensorAccessor(PtrType data, const index_t* sizes, const index_t* strides)
      : TensorAccessorBase<T, N, PtrTraits, index_t>(data, sizes, strides) {}
  KD_HD TensorAccessor<T, N - 1, PtrTraits, index_t> operator[](index_t i) {
    return TensorAccessor<T, N - 1, PtrTraits, index_t>(this->data_ + this->strides_[0] * i, this->sizes_ + 1, this->strides_ + 1);
  }
  KD_HD const TensorAccessor<T, N - 1, PtrTraits, index_t> operator[](index_t i) const {
    return TensorAccessor<T, N - 1, PtrTraits, index_t>(this->data_ + this->strides_[0] * i, this->sizes_ + 1, this->strides_ + 1);
  }
};
template <typename T, template <typename U> class PtrTraits, typename index_t>
class TensorAccessor<T, 1, PtrTraits, index_t> : public TensorAccessorBase<T, 1, PtrTraits, index_t> {
 public:
  typedef typename PtrTraits<T>::PtrType PtrType;
  KD_HD TensorAccessor(PtrType data, const index_t* sizes, const index_t* strides)
      : TensorAccessorBase<T, 1, PtrTraits, index_t>(data, sizes, strides) {}
  KD_HD T& operator[](index_t i) { return this->data_[this->strides_[0] * i]; }
  KD_HD const T& operator[](index_t i) const { return this->data_[this->strides_[0] * i]; }
};

template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
class GenericPackedTensorAccessorBase {
 public:
  typedef typename PtrTraits<T>::PtrType PtrType;
  KD_HD GenericPackedTensorAccessorBase(PtrType data, const int64_t* sizes, const int64_t* strides) : data_(data) {
    for (size_t i = 0; i < N; ++i) { sizes_[i] = static_cast<index_t>(sizes[i]); strides_[i] = static_cast<index_t>(strides[i]); }
  }
  KD_HD index_t stride(index_t i) const { return strides_[i]; }
  KD_HD index_t size(index_t i) const { return sizes_[i]; }
  KD_HD PtrType data() { return data_; }
  KD_HD const PtrType data() const { return data_; }
 protected:
  PtrType data_;
  index_t sizes_[N];
  index_t strides_[N];
};

template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
class GenericPackedTensorAccessor : public GenericPackedTensorAccessorBase<T, N, PtrTraits, index_t> {
 public:
  typedef typename PtrTraits<T>::PtrType PtrType;
  KD_HD GenericPackedTensorAccessor(PtrType data, const int64_t* sizes, const int64_t* strides)
      : GenericPackedTensorAccessorBase<T, N, PtrTraits, index_t>(data, sizes, strides) {}
  KD_HD TensorAccessor<T, N - 1, PtrTraits, index_t> operator[](index_t i) {
    return TensorAccessor<T, N - 1, PtrTraits, index_t>(this->data_ + this->strides_[0] * i, this->sizes_ + 1, this->strides_ + 1);
  }
  KD_HD const TensorAccessor<T, N - 1, PtrTraits, index_t> operator[](index_t i) const {
    return TensorAccessor<T, N - 1, PtrTraits, index_t>(this->data_ + this->strides_[0] * i, this->sizes_ + 1, this->strides_ + 1);
  }
};
template <typename T, template <typename U> class PtrTraits, typename index_t>
class GenericPackedTensorAccessor<T, 1, PtrTraits, index_t> : public GenericPackedTensorAccessorBase<T, 1, PtrTraits, index_t> {
 public:
  typedef typename PtrTraits<T>::PtrType PtrType;
  KD_HD GenericPackedTensorAccessor(PtrType data, const int64_t* sizes, const int64_t* strides)
      : GenericPackedTensorAccessorBase<T, 1, PtrTraits, index_t>(data, sizes, strides) {}
  KD_HD T& operator[](index_t i) { return this->data_[this->strides_[0] * i]; }
  KD_HD const T& operator[](index_t i) const { return this->data_[this->strides_[0] * i]; }
};
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits>
using PackedTensorAccessor32 = GenericPackedTensorAccessor<T, N, PtrTraits, int32_t>;
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits>
using PackedTensorAccessor64 = GenericPackedTensorAccessor<T, N, PtrTraits, int64_t>;

class Tensor;
}  // namespace kd_shim

// Implemented by the bindings translation unit (real ATen). Handles are at::Tensor* owned by the shim.
extern "C" {
void* kd_shim_copy(void* h);
void kd_shim_free(void* h);
int64_t kd_shim_numel(void* h);
int64_t kd_shim_dim(void* h);
int64_t kd_shim_size(void* h, int64_t d);
int64_t kd_shim_stride(void* h, int64_t d);
void* kd_shim_data(void* h);
int kd_shim_scalar_type(void* h);
int kd_shim_device_type(void* h);
int kd_shim_device_index(void* h);
int kd_shim_is_contiguous(void* h);
int64_t kd_shim_element_size(void* h);
void* kd_shim_new(int kind, const int64_t* sizes, int64_t n, int dtype, int device_type, int device_index, double value);
void* kd_shim_like(int kind, void* h, int dtype, double value);
void* kd_shim_reshape(int kind, void* h, const int64_t* sizes, int64_t n);
void* kd_shim_unary(int kind, void* h, int64_t a, int64_t b);
void* kd_shim_narrow(void* h, int64_t d, int64_t start, int64_t length);
void* kd_shim_to(void* h, int dtype, int device_type, int device_index);
void kd_shim_fill(void* h, double value);
void* kd_shim_stream(int device_index);
const int64_t* kd_shim_sizes_data(void* h);
const int64_t* kd_shim_strides_data(void* h);
void kd_shim_fail(const char* file, int line, const char* message);
}

namespace kd_shim {

enum NewKind { kEmpty = 0, kZeros = 1, kOnes = 2, kFull = 3 };
enum ReshapeKind { kView = 0, kReshapeOp = 1, kPermute = 2, kExpand = 3 };
enum UnaryKind { kContiguous = 0, kTranspose = 1, kUnsqueeze = 2, kSqueeze = 3, kFlatten = 4, kClone = 5,
                 kSelect = 7, kT = 8, kSqueezeAll = 9 };

template <typename T> struct scalar_of;
template <> struct scalar_of<float> { static constexpr ScalarType value = ScalarType::Float; };
template <> struct scalar_of<double> { static constexpr ScalarType value = ScalarType::Double; };
#if defined(KD_SHIM_HALF) && !defined(KD_SHIM_CPU)
template <> struct scalar_of<Half> { static constexpr ScalarType value = ScalarType::Half; };
template <> struct scalar_of<BFloat16> { static constexpr ScalarType value = ScalarType::BFloat16; };
#endif
template <> struct scalar_of<int32_t> { static constexpr ScalarType value = ScalarType::Int; };
template <> struct scalar_of<int64_t> { static constexpr ScalarType value = ScalarType::Long; };
template <> struct scalar_of<int16_t> { static constexpr ScalarType value = ScalarType::Short; };
template <> struct scalar_of<int8_t> { static constexpr ScalarType value = ScalarType::Char; };
template <> struct scalar_of<uint8_t> { static constexpr ScalarType value = ScalarType::Byte; };
template <> struct scalar_of<bool> { static constexpr ScalarType value = ScalarType::Bool; };

struct DeprecatedType {  // what the deprecated Tensor::type() returns
  ScalarType t;
  ScalarType scalarType() const { return t; }
  bool is_cuda() const { return true; }
};

class Tensor {
 public:
  void* h = nullptr;
  Tensor() = default;
  static Tensor adopt(void* handle) { Tensor t; t.h = handle; return t; }
  Tensor(const Tensor& o) : h(o.h ? kd_shim_copy(o.h) : nullptr) {}
  Tensor(Tensor&& o) noexcept : h(o.h) { o.h = nullptr; }
  Tensor& operator=(const Tensor& o) { if (this != &o) { release(); h = o.h ? kd_shim_copy(o.h) : nullptr; } return *this; }
  Tensor& operator=(Tensor&& o) noexcept { if (this != &o) { release(); h = o.h; o.h = nullptr; } return *this; }
  ~Tensor() { release(); }

  bool defined() const { return h != nullptr; }
  int64_t numel() const { return kd_shim_numel(h); }
  int64_t dim() const { return kd_shim_dim(h); }
  int64_t ndimension() const { return dim(); }
  int64_t size(int64_t d) const { return kd_shim_size(h, d); }
  int64_t stride(int64_t d) const { return kd_shim_stride(h, d); }
  IntList sizes() const { std::vector<int64_t> s; for (int64_t i = 0; i < dim(); ++i) s.push_back(size(i)); return s; }
  IntList strides() const { std::vector<int64_t> s; for (int64_t i = 0; i < dim(); ++i) s.push_back(stride(i)); return s; }
  ScalarType scalar_type() const { return static_cast<ScalarType>(kd_shim_scalar_type(h)); }
  ScalarType dtype() const { return scalar_type(); }
  DeprecatedType type() const { return DeprecatedType{scalar_type()}; }
  Device device() const { return Device(static_cast<DeviceType>(kd_shim_device_type(h)), kd_shim_device_index(h)); }
  int get_device() const { return kd_shim_device_index(h); }
  bool is_cuda() const { return device().is_cuda(); }
  bool is_contiguous() const { return kd_shim_is_contiguous(h) != 0; }
  int64_t element_size() const { return kd_shim_element_size(h); }
  int64_t itemsize() const { return element_size(); }
  int64_t nbytes() const { return numel() * element_size(); }
  TensorOptions options() const { return TensorOptions(scalar_type()).device(device()); }

  void* data_ptr() const { return kd_shim_data(h); }
  template <typename T> T* data_ptr() const {
    if (scalar_type() != scalar_of<typename std::remove_cv<T>::type>::value)
      kd_shim_fail(__FILE__, __LINE__, "data_ptr<T>(): T does not match the tensor's dtype");
    return static_cast<T*>(kd_shim_data(h));
  }
  template <typename T> T* data() const { return data_ptr<T>(); }

  template <typename T, size_t N> TensorAccessor<T, N> accessor() const& {
    check_accessor_dim(N);
    return TensorAccessor<T, N>(data_ptr<T>(), kd_shim_sizes_data(h), kd_shim_strides_data(h));
  }
  template <typename T, size_t N> TensorAccessor<T, N> accessor() && = delete;  // as torch: it would dangle
  template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
  GenericPackedTensorAccessor<T, N, PtrTraits, index_t> generic_packed_accessor() const& {
    check_accessor_dim(N);
    return GenericPackedTensorAccessor<T, N, PtrTraits, index_t>(
        static_cast<typename PtrTraits<T>::PtrType>(data_ptr<T>()), kd_shim_sizes_data(h), kd_shim_strides_data(h));
  }
  template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits>
  PackedTensorAccessor32<T, N, PtrTraits> packed_accessor32() const& {
    if (numel() > 2147483647LL) kd_shim_fail(__FILE__, __LINE__, "numel needs to be smaller than int32_t max; otherwise, please use packed_accessor64");
    return generic_packed_accessor<T, N, PtrTraits, int32_t>();
  }
  template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits>
  PackedTensorAccessor64<T, N, PtrTraits> packed_accessor64() const& { return generic_packed_accessor<T, N, PtrTraits, int64_t>(); }
  template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
  GenericPackedTensorAccessor<T, N> generic_packed_accessor() && = delete;
  template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits>
  PackedTensorAccessor32<T, N, PtrTraits> packed_accessor32() && = delete;
  template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits>
  PackedTensorAccessor64<T, N, PtrTraits> packed_accessor64() && = delete;
  template <typename T> T* mutable_data_ptr() const { return data_ptr<T>(); }
  template <typename T> const T* const_data_ptr() const { return data_ptr<T>(); }

  Tensor contiguous() const { return adopt(kd_shim_unary(kContiguous, h, 0, 0)); }
  Tensor clone() const { return adopt(kd_shim_unary(kClone, h, 0, 0)); }
  Tensor view(IntList s) const { return adopt(kd_shim_reshape(kView, h, s.data(), (int64_t)s.size())); }
  Tensor reshape(IntList s) const { return adopt(kd_shim_reshape(kReshapeOp, h, s.data(), (int64_t)s.size())); }
  Tensor permute(IntList s) const { return adopt(kd_shim_reshape(kPermute, h, s.data(), (int64_t)s.size())); }
  Tensor expand(IntList s) const { return adopt(kd_shim_reshape(kExpand, h, s.data(), (int64_t)s.size())); }
  Tensor transpose(int64_t a, int64_t b) const { return adopt(kd_shim_unary(kTranspose, h, a, b)); }
  Tensor t() const { return adopt(kd_shim_unary(kT, h, 0, 0)); }
  Tensor unsqueeze(int64_t d) const { return adopt(kd_shim_unary(kUnsqueeze, h, d, 0)); }
  Tensor squeeze(int64_t d) const { return adopt(kd_shim_unary(kSqueeze, h, d, 0)); }
  Tensor squeeze() const { return adopt(kd_shim_unary(kSqueezeAll, h, 0, 0)); }
  Tensor flatten(int64_t a = 0, int64_t b = -1) const { return adopt(kd_shim_unary(kFlatten, h, a, b)); }
  Tensor narrow(int64_t d, int64_t start, int64_t len) const { return adopt(kd_shim_narrow(h, d, start, len)); }
  Tensor select(int64_t d, int64_t i) const { return adopt(kd_shim_unary(kSelect, h, d, i)); }
  Tensor to(ScalarType t) const { return adopt(kd_shim_to(h, (int)t, -1, -1)); }
  Tensor to(Device d) const { return adopt(kd_shim_to(h, -1, (int)d.type(), d.index())); }
  Tensor to(DeviceType d) const { return to(Device(d)); }
  Tensor cuda() const { return to(Device(DeviceType::CUDA)); }
  Tensor cpu() const { return to(Device(DeviceType::CPU)); }
  Tensor& zero_() { kd_shim_fill(h, 0.0); return *this; }
  Tensor& fill_(double v) { kd_shim_fill(h, v); return *this; }

 private:
  void check_accessor_dim(size_t n) const {
    if (dim() != static_cast<int64_t>(n))
      kd_shim_fail(__FILE__, __LINE__, ("TensorAccessor expected " + std::to_string(n) + " dims but tensor has " + std::to_string(dim())).c_str());
  }
  void release() { if (h) { kd_shim_free(h); h = nullptr; } }
};

inline int dev_type(const TensorOptions& o) { return o.has_device_ ? (int)o.device_.type() : (int)DeviceType::CPU; }
inline int dtype_or(const TensorOptions& o, ScalarType d) { return (int)(o.dtype_ == ScalarType::Undefined ? d : o.dtype_); }

inline Tensor empty(IntList s, TensorOptions o = {}) {
  return Tensor::adopt(kd_shim_new(kEmpty, s.data(), (int64_t)s.size(), dtype_or(o, kFloat), dev_type(o), o.device_.index(), 0));
}
inline Tensor zeros(IntList s, TensorOptions o = {}) {
  return Tensor::adopt(kd_shim_new(kZeros, s.data(), (int64_t)s.size(), dtype_or(o, kFloat), dev_type(o), o.device_.index(), 0));
}
inline Tensor ones(IntList s, TensorOptions o = {}) {
  return Tensor::adopt(kd_shim_new(kOnes, s.data(), (int64_t)s.size(), dtype_or(o, kFloat), dev_type(o), o.device_.index(), 0));
}
inline Tensor full(IntList s, double v, TensorOptions o = {}) {
  return Tensor::adopt(kd_shim_new(kFull, s.data(), (int64_t)s.size(), dtype_or(o, kFloat), dev_type(o), o.device_.index(), v));
}
inline Tensor empty_like(const Tensor& t, TensorOptions o = {}) { return Tensor::adopt(kd_shim_like(kEmpty, t.h, (int)o.dtype_, 0)); }
inline Tensor zeros_like(const Tensor& t, TensorOptions o = {}) { return Tensor::adopt(kd_shim_like(kZeros, t.h, (int)o.dtype_, 0)); }
inline Tensor ones_like(const Tensor& t, TensorOptions o = {}) { return Tensor::adopt(kd_shim_like(kOnes, t.h, (int)o.dtype_, 0)); }
inline Tensor full_like(const Tensor& t, double v, TensorOptions o = {}) { return Tensor::adopt(kd_shim_like(kFull, t.h, (int)o.dtype_, v)); }

#ifndef KD_SHIM_CPU
struct CUDAStream {
  cudaStream_t s;
  cudaStream_t stream() const { return s; }
  operator cudaStream_t() const { return s; }
};
namespace cuda {
inline CUDAStream getCurrentCUDAStream(int device_index = -1) { return CUDAStream{static_cast<cudaStream_t>(kd_shim_stream(device_index))}; }
// The sandbox already runs on the candidate's device; guards are kept for source compatibility.
struct CUDAGuard { template <typename T> explicit CUDAGuard(const T&) {} };
struct OptionalCUDAGuard { OptionalCUDAGuard() = default; template <typename T> explicit OptionalCUDAGuard(const T&) {} };
}  // namespace cuda
#endif
inline Device device_of(const Tensor& t) { return t.device(); }

inline ScalarType scalar_type_of(ScalarType t) { return t; }
inline ScalarType scalar_type_of(const DeprecatedType& t) { return t.t; }

// TORCH_CHECK's message, without <sstream> (a large share of the shim's parse time).
inline void append(std::string& s, const char* v) { s += v ? v : "(null)"; }
inline void append(std::string& s, const std::string& v) { s += v; }
inline void append(std::string& s, char v) { s += v; }
inline void append(std::string& s, bool v) { s += v ? "true" : "false"; }
template <typename T, typename std::enable_if<std::is_arithmetic<T>::value, int>::type = 0>
void append(std::string& s, T v) { s += std::to_string(v); }
inline void append(std::string& s, const IntList& v) {
  s += "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  s += "]";
}
inline void append(std::string& s, ScalarType t) { s += "ScalarType(" + std::to_string((int)t) + ")"; }
inline void append(std::string& s, const Device& d) { s += d.is_cuda() ? "cuda:" + std::to_string(d.index()) : "cpu"; }
inline void append(std::string& s, const Tensor& t) { s += "Tensor"; }
inline void format_into(std::string&) {}
template <typename T, typename... R> void format_into(std::string& s, const T& v, const R&... rest) {
  append(s, v);
  format_into(s, rest...);
}
template <typename... A> std::string format(const A&... a) { std::string s; format_into(s, a...); return s; }

}  // namespace kd_shim
