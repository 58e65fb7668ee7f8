// libkd_bridge: the real-ATen side of kd_shim and of the kd_abi calling convention. Built once per cache
// directory with torch's headers; every candidate's shared object links against it instead of parsing them.
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>
#include <torch/library.h>
#include <ATen/ATen.h>
#ifndef KD_BRIDGE_NO_CUDA
#include <c10/cuda/CUDAStream.h>
#endif
#include "kd_abi.h"
#include "kd_shim_core.h"

namespace {
inline at::Tensor& kd_t(void* h) { return *static_cast<at::Tensor*>(h); }
inline void* kd_h(at::Tensor t) { return new at::Tensor(std::move(t)); }
inline std::vector<int64_t> kd_sizes(const int64_t* s, int64_t n) { return std::vector<int64_t>(s, s + n); }
inline at::TensorOptions kd_opts(int dtype, int device_type, int device_index) {
  auto o = at::TensorOptions().dtype(static_cast<at::ScalarType>(dtype));
#ifndef KD_BRIDGE_NO_CUDA
  if (device_type == 1) return o.device(at::Device(at::kCUDA, device_index < 0 ? c10::cuda::current_device() : device_index));
#endif
  return o.device(at::kCPU);
}
}  // namespace

extern "C" {
void* kd_shim_copy(void* h) { return new at::Tensor(kd_t(h)); }
void kd_shim_free(void* h) { delete static_cast<at::Tensor*>(h); }
int64_t kd_shim_numel(void* h) { return kd_t(h).numel(); }
int64_t kd_shim_dim(void* h) { return kd_t(h).dim(); }
int64_t kd_shim_size(void* h, int64_t d) { return kd_t(h).size(d); }
int64_t kd_shim_stride(void* h, int64_t d) { return kd_t(h).stride(d); }
const int64_t* kd_shim_sizes_data(void* h) { return kd_t(h).sizes().data(); }
const int64_t* kd_shim_strides_data(void* h) { return kd_t(h).strides().data(); }
void* kd_shim_data(void* h) { return kd_t(h).data_ptr(); }
int kd_shim_scalar_type(void* h) { return static_cast<int>(kd_t(h).scalar_type()); }
int kd_shim_device_type(void* h) { return kd_t(h).is_cuda() ? 1 : 0; }
int kd_shim_device_index(void* h) { return kd_t(h).is_cuda() ? kd_t(h).get_device() : -1; }
int kd_shim_is_contiguous(void* h) { return kd_t(h).is_contiguous() ? 1 : 0; }
int64_t kd_shim_element_size(void* h) { return kd_t(h).element_size(); }
void* kd_shim_new(int kind, const int64_t* s, int64_t n, int dtype, int device_type, int device_index, double v) {
  auto o = kd_opts(dtype, device_type, device_index);
  auto sizes = kd_sizes(s, n);
  switch (kind) {
    case 1: return kd_h(at::zeros(sizes, o));
    case 2: return kd_h(at::ones(sizes, o));
    case 3: return kd_h(at::full(sizes, v, o));
    default: return kd_h(at::empty(sizes, o));
  }
}
void* kd_shim_like(int kind, void* h, int dtype, double v) {
  auto o = kd_t(h).options();
  if (dtype != 127) o = o.dtype(static_cast<at::ScalarType>(dtype));
  switch (kind) {
    case 1: return kd_h(at::zeros_like(kd_t(h), o));
    case 2: return kd_h(at::ones_like(kd_t(h), o));
    case 3: return kd_h(at::full_like(kd_t(h), v, o));
    default: return kd_h(at::empty_like(kd_t(h), o));
  }
}
void* kd_shim_reshape(int kind, void* h, const int64_t* s, int64_t n) {
  auto sizes = kd_sizes(s, n);
  switch (kind) {
    case 1: return kd_h(kd_t(h).reshape(sizes));
    case 2: return kd_h(kd_t(h).permute(sizes));
    case 3: return kd_h(kd_t(h).expand(sizes));
    default: return kd_h(kd_t(h).view(sizes));
  }
}
void* kd_shim_unary(int kind, void* h, int64_t a, int64_t b) {
  auto& t = kd_t(h);
  switch (kind) {
    case 1: return kd_h(t.transpose(a, b));
    case 2: return kd_h(t.unsqueeze(a));
    case 3: return kd_h(t.squeeze(a));
    case 4: return kd_h(t.flatten(a, b));
    case 5: return kd_h(t.clone());
    case 7: return kd_h(t.select(a, b));
    case 8: return kd_h(t.t());
    case 9: return kd_h(t.squeeze());
    default: return kd_h(t.contiguous());
  }
}
void* kd_shim_narrow(void* h, int64_t d, int64_t start, int64_t length) {
  return kd_h(kd_t(h).narrow(d, start, length));
}
void* kd_shim_to(void* h, int dtype, int device_type, int device_index) {
  if (dtype >= 0) return kd_h(kd_t(h).to(static_cast<at::ScalarType>(dtype)));
  return kd_h(kd_t(h).to(kd_opts(static_cast<int>(kd_t(h).scalar_type()), device_type, device_index).device()));
}
void kd_shim_fill(void* h, double v) { kd_t(h).fill_(v); }
void* kd_shim_stream(int device_index) {
#ifdef KD_BRIDGE_NO_CUDA
  return nullptr;
#else
  return device_index < 0 ? c10::cuda::getCurrentCUDAStream().stream()
                          : c10::cuda::getCurrentCUDAStream(device_index).stream();
#endif
}
void kd_shim_fail(const char* file, int line, const char* message) {
  // A plain std::runtime_error: Python gets it as RuntimeError(message), and no c10 backtrace is captured
  // across the candidate's frames.
  throw std::runtime_error(std::string(message) + " (" + file + ":" + std::to_string(line) + ")");
}
}  // extern "C"

namespace {
// One boxed kernel per candidate function: IValues off the stack -> kd_values -> the candidate's entry,
// whose results come back through kd_push_result.
struct KdKernel final : c10::OperatorKernel {
  explicit KdKernel(kd_entry_fn entry) : entry_(entry) {}
  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
    const size_t n = op.schema().arguments().size();
    std::deque<at::Tensor> tensors;  // stable addresses for the handles passed out
    std::deque<std::vector<int64_t>> int_lists;
    std::deque<std::vector<double>> double_lists;
    std::deque<std::vector<void*>> tensor_lists;
    std::vector<kd_value> args(n);
    auto in = torch::jit::last(*stack, n);
    for (size_t k = 0; k < n; ++k) {
      const c10::IValue& v = in[k];
      kd_value& a = args[k];
      if (v.isNone()) { a.tag = KD_NONE; }
      else if (v.isTensor()) { tensors.push_back(v.toTensor()); a.tag = KD_TENSOR; a.t = &tensors.back(); }
      else if (v.isBool()) { a.tag = KD_BOOL; a.i = v.toBool(); }
      else if (v.isInt()) { a.tag = KD_INT; a.i = v.toInt(); }
      else if (v.isDouble()) { a.tag = KD_DOUBLE; a.d = v.toDouble(); }
      else if (v.isIntList()) { int_lists.push_back(v.toIntVector()); a.tag = KD_INTS; a.n = int_lists.back().size(); a.ints = int_lists.back().data(); }
      else if (v.isDoubleList()) { double_lists.push_back(v.toDoubleVector()); a.tag = KD_DOUBLES; a.n = double_lists.back().size(); a.doubles = double_lists.back().data(); }
      else if (v.isTensorList()) {
        std::vector<void*> handles;
        for (const at::Tensor& t : v.toTensorVector()) { tensors.push_back(t); handles.push_back(&tensors.back()); }
        tensor_lists.push_back(std::move(handles));
        a.tag = KD_TENSORS; a.n = tensor_lists.back().size(); a.tensors = tensor_lists.back().data();
      } else {
        TORCH_CHECK(false, "kd_bridge: argument ", k, " has a type the bridge does not convert: ", v.tagKind());
      }
    }
    std::vector<c10::IValue> results;
    entry_(args.data(), static_cast<int64_t>(n), &results);
    torch::jit::drop(*stack, n);
    TORCH_CHECK(results.size() == op.schema().returns().size(), "kd_bridge: the function returned ", results.size(),
                " values for a schema with ", op.schema().returns().size());
    for (auto& r : results) stack->push_back(std::move(r));
  }
  kd_entry_fn entry_;
};
}  // namespace

extern "C" {
int kd_register_op(const char* ns, const char* schema, kd_entry_fn entry) {
  // One DEF library per namespace, alive as long as the process: ops stay registered.
  static std::map<std::string, std::unique_ptr<torch::Library>> libraries;
  try {
    auto& lib = libraries[ns];
    if (!lib) lib = std::make_unique<torch::Library>(torch::Library::DEF, ns, std::nullopt, __FILE__, __LINE__);
    lib->def(schema, torch::CppFunction::makeFromBoxedFunctor(std::make_unique<KdKernel>(entry)));
    return 0;
  } catch (const std::exception& e) {
    fprintf(stderr, "kd_bridge: could not register %s::%s: %s\n", ns, schema, e.what());
    return 1;
  }
}

void kd_push_result(void* results, const kd_value* v) {
  auto& out = *static_cast<std::vector<c10::IValue>*>(results);
  switch (v->tag) {
    case KD_TENSOR: out.emplace_back(v->t ? kd_t(v->t) : at::Tensor()); break;
    case KD_INT: out.emplace_back(v->i); break;
    case KD_BOOL: out.emplace_back(v->i != 0); break;
    case KD_DOUBLE: out.emplace_back(v->d); break;
    case KD_TENSORS: {
      std::vector<at::Tensor> list;
      for (int64_t k = 0; k < v->n; ++k) list.push_back(kd_t(v->tensors[k]));
      out.emplace_back(std::move(list));
      break;
    }
    default: TORCH_CHECK(false, "kd_bridge: unknown result tag ", v->tag);
  }
}
}  // extern "C"
