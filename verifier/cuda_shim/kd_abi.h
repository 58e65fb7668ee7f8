// The C ABI between a candidate's shared object (built without torch headers) and libkd_bridge (built once
// with them): the bridge registers each candidate function as a boxed dispatcher op and converts IValues
// to and from these plain structs.
#pragma once
#include <cstdint>

extern "C" {
enum kd_tag { KD_TENSOR = 1, KD_INT = 2, KD_DOUBLE = 3, KD_BOOL = 4, KD_INTS = 5, KD_DOUBLES = 6, KD_TENSORS = 7, KD_NONE = 8 };

struct kd_value {
  int tag;
  int64_t i;               // KD_INT, KD_BOOL
  double d;                // KD_DOUBLE
  void* t;                 // KD_TENSOR: an at::Tensor* the caller keeps
  int64_t n;               // list lengths
  const int64_t* ints;     // KD_INTS
  const double* doubles;   // KD_DOUBLES
  void* const* tensors;    // KD_TENSORS: at::Tensor* the caller keeps
};

// Called with the op's arguments; pushes each returned value through kd_push_result (the bridge copies).
typedef void (*kd_entry_fn)(const kd_value* args, int64_t nargs, void* results);

// Registers `schema` (e.g. "fwd(Tensor _0, int _1) -> Tensor") in namespace `ns`; nonzero on failure.
int kd_register_op(const char* ns, const char* schema, kd_entry_fn entry);
void kd_push_result(void* results, const kd_value* value);
}
