// Candidate side of kd_abi: the schema string and the C-ABI entry of each function in `functions=[...]`,
// derived from the function's C++ type (what torch's schema inference does, without torch's headers).
// A type the dispatcher cannot express fails to compile here, and the build falls back to load_inline.
#pragma once
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>
#include "kd_abi.h"
#include "kd_shim.h"

namespace kd_bind {
template <typename T> using base_t = std::remove_cv_t<std::remove_reference_t<T>>;
template <typename T> struct always_false : std::false_type {};

template <typename T> struct arg {
  static_assert(always_false<T>::value, "kd_bind: argument type the dispatcher cannot bind");
};
template <> struct arg<kd_shim::Tensor> {
  static constexpr const char* schema = "Tensor";
  static kd_shim::Tensor in(const kd_value& v) { return kd_shim::Tensor::adopt(v.t ? kd_shim_copy(v.t) : nullptr); }
};
template <typename I> struct int_arg {
  static constexpr const char* schema = "int";
  static I in(const kd_value& v) { return static_cast<I>(v.i); }
};
template <> struct arg<int64_t> : int_arg<int64_t> {};
template <> struct arg<int32_t> : int_arg<int32_t> {};
template <> struct arg<uint32_t> : int_arg<uint32_t> {};
template <> struct arg<bool> {
  static constexpr const char* schema = "bool";
  static bool in(const kd_value& v) { return v.i != 0; }
};
template <typename F> struct float_arg {
  static constexpr const char* schema = "float";
  static F in(const kd_value& v) { return static_cast<F>(v.d); }
};
template <> struct arg<double> : float_arg<double> {};
template <> struct arg<float> : float_arg<float> {};
template <typename I> struct int_list_arg {
  static constexpr const char* schema = "int[]";
  static std::vector<I> in(const kd_value& v) { return std::vector<I>(v.ints, v.ints + v.n); }
};
template <> struct arg<std::vector<int64_t>> : int_list_arg<int64_t> {};
template <> struct arg<std::vector<int32_t>> : int_list_arg<int32_t> {};
template <> struct arg<kd_shim::IntList> {
  static constexpr const char* schema = "int[]";
  static kd_shim::IntList in(const kd_value& v) { return std::vector<int64_t>(v.ints, v.ints + v.n); }
};
template <typename F> struct float_list_arg {
  static constexpr const char* schema = "float[]";
  static std::vector<F> in(const kd_value& v) { return std::vector<F>(v.doubles, v.doubles + v.n); }
};
template <> struct arg<std::vector<double>> : float_list_arg<double> {};
template <> struct arg<std::vector<float>> : float_list_arg<float> {};
template <> struct arg<std::vector<kd_shim::Tensor>> {
  static constexpr const char* schema = "Tensor[]";
  static std::vector<kd_shim::Tensor> in(const kd_value& v) {
    std::vector<kd_shim::Tensor> out;
    for (int64_t k = 0; k < v.n; ++k) out.push_back(kd_shim::Tensor::adopt(kd_shim_copy(v.tensors[k])));
    return out;
  }
};

template <typename T> struct arg_schema { static std::string text() { return arg<T>::schema; } };
#ifdef KD_SHIM_OPTIONAL
template <typename T> struct arg_schema<std::optional<T>> { static std::string text() { return arg_schema<T>::text() + "?"; } };
// Optional arguments ("Tensor?", "int?", "float?"): None arrives as KD_NONE.
template <typename T> struct arg<std::optional<T>> {
  static std::optional<T> in(const kd_value& v) {
    if (v.tag == KD_NONE) return std::nullopt;
    return arg<T>::in(v);
  }
};
#endif

inline void push(void* results, const kd_shim::Tensor& t) { kd_value v{}; v.tag = KD_TENSOR; v.t = t.h; kd_push_result(results, &v); }
inline void push(void* results, bool b) { kd_value v{}; v.tag = KD_BOOL; v.i = b; kd_push_result(results, &v); }
template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
void push(void* results, T i) { kd_value v{}; v.tag = KD_INT; v.i = static_cast<int64_t>(i); kd_push_result(results, &v); }
template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
void push(void* results, T d) { kd_value v{}; v.tag = KD_DOUBLE; v.d = static_cast<double>(d); kd_push_result(results, &v); }
inline void push(void* results, const std::vector<kd_shim::Tensor>& list) {
  std::vector<void*> handles;
  for (const auto& t : list) handles.push_back(t.h);
  kd_value v{}; v.tag = KD_TENSORS; v.n = static_cast<int64_t>(handles.size()); v.tensors = handles.data();
  kd_push_result(results, &v);
}

template <typename T> struct ret {
  static_assert(always_false<T>::value, "kd_bind: return type the dispatcher cannot bind");
};
template <> struct ret<void> { static std::string schema() { return "()"; } };
template <> struct ret<kd_shim::Tensor> {
  static std::string schema() { return "Tensor"; }
  static void out(void* r, const kd_shim::Tensor& t) { push(r, t); }
};
template <> struct ret<std::vector<kd_shim::Tensor>> {
  static std::string schema() { return "Tensor[]"; }
  static void out(void* r, const std::vector<kd_shim::Tensor>& v) { push(r, v); }
};
template <typename T> struct scalar_ret {
  static std::string schema() { return std::is_same_v<T, bool> ? "bool" : std::is_floating_point_v<T> ? "float" : "int"; }
  static void out(void* r, T v) { push(r, v); }
};
template <> struct ret<bool> : scalar_ret<bool> {};
template <> struct ret<int64_t> : scalar_ret<int64_t> {};
template <> struct ret<int32_t> : scalar_ret<int32_t> {};
template <> struct ret<double> : scalar_ret<double> {};
template <> struct ret<float> : scalar_ret<float> {};
template <typename... T> struct ret<std::tuple<T...>> {
  static std::string schema() {
    std::string s = "(";
    ((s += ret<base_t<T>>::schema() + ", "), ...);
    return s.substr(0, s.size() - 2) + ")";
  }
  static void out(void* r, const std::tuple<T...>& v) { std::apply([&](const auto&... x) { (ret<base_t<T>>::out(r, x), ...); }, v); }
};

template <auto F> struct entry;
template <typename R, typename... A, R (*F)(A...)>
struct entry<F> {
  static std::string schema(const char* name) {
    std::string s = std::string(name) + "(";
    int k = 0;
    ((s += std::string(k ? ", " : "") + arg_schema<base_t<A>>::text() + " _" + std::to_string(k), ++k), ...);
    return s + ") -> " + ret<base_t<R>>::schema();
  }
  template <size_t... I> static void call(const kd_value* args, void* results, std::index_sequence<I...>) {
    if constexpr (std::is_void_v<R>) { F(arg<base_t<A>>::in(args[I])...); }
    else { ret<base_t<R>>::out(results, F(arg<base_t<A>>::in(args[I])...)); }
  }
  static void run(const kd_value* args, int64_t, void* results) { call(args, results, std::index_sequence_for<A...>{}); }
};

struct registrar {
  registrar(const char* ns, const std::string& schema, kd_entry_fn fn) { kd_register_op(ns, schema.c_str(), fn); }
};
}  // namespace kd_bind
