"""Teachers write the first solutions the student learns from.

`Teacher` is the interface: given a problem and a backend, return a completion (the
six-step reasoning and a KernelBench-format `ModelNew`) or say why it cannot.
`TemplateTeacher` is built in: it walks the reference's torch.export graph and
writes one C++ loop nest per node (cpu backend). Every teacher output is verified
before it becomes training data (tasks/distill.py); a teacher that talks to an
OpenAI-compatible endpoint implements the same `solve`.
"""

from __future__ import annotations

import ast
import math
import os
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

import torch
import torch.fx

from operators.graph import ExportedGraph, export_reference, op_family, op_short_name
from schemas.records import Problem
from training.prompts import completion_text
from verifier.analysis import AnalysisError, trusted
from verifier.reference import load_reference_module


@dataclass
class TeacherOutput:
    problem_id: str
    completion: str | None = None  # six-step reasoning + ```python block
    refusal: str | None = None  # why the teacher could not solve it
    # the same problem gets the same answer next time: False where the machine, not the problem, decided it (an
    # analysis sandbox that timed out or died under load), so that no one keeps it across runs
    lasting: bool = True


class Teacher(Protocol):
    name: str

    def solve(self, problem: Problem, backend: str) -> TeacherOutput: ...

    def solve_many(self, problems: list[Problem], backend: str) -> list[TeacherOutput]: ...


class Unsupported(Exception):
    pass


CPP_TYPES = {torch.float32: "float", torch.bool: "bool", torch.int64: "int64_t", torch.int32: "int32_t"}

_HELPERS = {
    "at": """\
// Offset of the i-th element (row-major over `shape`) in memory laid out with `stride`.
static inline int64_t kd_at(int64_t i, const std::vector<int64_t>& shape, const std::vector<int64_t>& stride) {
  int64_t off = 0;
  for (int64_t d = (int64_t)shape.size() - 1; d >= 0; --d) { off += (i % shape[d]) * stride[d]; i /= shape[d]; }
  return off;
}
""",
    "broadcast": """\
static std::vector<int64_t> kd_broadcast(std::vector<int64_t> a, std::vector<int64_t> b) {
  if (a.size() < b.size()) std::swap(a, b);
  std::vector<int64_t> out = a;
  size_t off = a.size() - b.size();
  for (size_t d = 0; d < b.size(); ++d) out[off + d] = a[off + d] == 1 ? b[d] : a[off + d];
  return out;
}
""",
    "map1": """\
template <typename In, typename Out, typename F>
static torch::Tensor kd_map1(const torch::Tensor& a, torch::ScalarType out_type, F f) {
  auto out = torch::empty(a.sizes(), a.options().dtype(out_type));
  auto sh = a.sizes().vec(), st = a.strides().vec();
  const In* pa = a.data_ptr<In>();
  Out* po = out.data_ptr<Out>();
  for (int64_t i = 0, n = out.numel(); i < n; ++i) po[i] = f(pa[kd_at(i, sh, st)]);
  return out;
}
""",
    "map2": """\
template <typename A, typename B, typename Out, typename F>
static torch::Tensor kd_map2(const torch::Tensor& a, const torch::Tensor& b, torch::ScalarType out_type, F f) {
  auto shape = kd_broadcast(a.sizes().vec(), b.sizes().vec());
  auto ea = a.expand(shape), eb = b.expand(shape);
  auto out = torch::empty(shape, a.options().dtype(out_type));
  auto sa = ea.strides().vec(), sb = eb.strides().vec();
  const A* pa = a.data_ptr<A>();
  const B* pb = b.data_ptr<B>();
  Out* po = out.data_ptr<Out>();
  for (int64_t i = 0, n = out.numel(); i < n; ++i) po[i] = f(pa[kd_at(i, shape, sa)], pb[kd_at(i, shape, sb)]);
  return out;
}
""",
    "where": """\
static torch::Tensor kd_where(const torch::Tensor& c, const torch::Tensor& a, const torch::Tensor& b) {
  auto shape = kd_broadcast(kd_broadcast(c.sizes().vec(), a.sizes().vec()), b.sizes().vec());
  auto ec = c.expand(shape), ea = a.expand(shape), eb = b.expand(shape);
  auto out = torch::empty(shape, a.options());
  auto sc = ec.strides().vec(), sa = ea.strides().vec(), sb = eb.strides().vec();
  const bool* pc = c.data_ptr<bool>();
  const float* pa = a.data_ptr<float>();
  const float* pb = b.data_ptr<float>();
  float* po = out.data_ptr<float>();
  for (int64_t i = 0, n = out.numel(); i < n; ++i)
    po[i] = pc[kd_at(i, shape, sc)] ? pa[kd_at(i, shape, sa)] : pb[kd_at(i, shape, sb)];
  return out;
}
""",
    "reduce": """\
// Reduces `dims` of `a` (all dims when empty): acc folds elements, fin(total, count) finishes.
template <typename Acc, typename Fin>
static torch::Tensor kd_reduce(const torch::Tensor& a, std::vector<int64_t> dims, bool keepdim, float init, Acc acc, Fin fin) {
  int64_t nd = a.dim();
  std::vector<bool> red(nd, dims.empty());
  for (auto d : dims) red[(d % nd + nd) % nd] = true;
  std::vector<int64_t> out_shape, kept(nd);
  for (int64_t d = 0; d < nd; ++d) {
    kept[d] = red[d] ? 1 : a.size(d);
    if (!red[d] || keepdim) out_shape.push_back(kept[d]);
  }
  auto out = torch::empty(out_shape, a.options());
  int64_t n_out = out.numel(), count = n_out ? a.numel() / n_out : 0;
  std::vector<float> total(n_out, init);
  auto sh = a.sizes().vec(), st = a.strides().vec();
  const float* pa = a.data_ptr<float>();
  for (int64_t i = 0, n = a.numel(); i < n; ++i) {
    int64_t rem = i, off = 0, oi = 0, scale = 1;
    for (int64_t d = nd - 1; d >= 0; --d) {
      int64_t c = rem % sh[d];
      rem /= sh[d];
      off += c * st[d];
      if (!red[d]) { oi += c * scale; scale *= kept[d]; }
    }
    total[oi] = acc(total[oi], pa[off]);
  }
  float* po = out.data_ptr<float>();
  for (int64_t j = 0; j < n_out; ++j) po[j] = fin(total[j], count);
  return out;
}
""",
    "softmax": """\
static torch::Tensor kd_softmax(const torch::Tensor& a, int64_t dim, bool log) {
  int64_t nd = a.dim();
  dim = (dim % nd + nd) % nd;
  auto sh = a.sizes().vec(), st = a.strides().vec();
  int64_t len = sh[dim], outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= sh[d];
  for (int64_t d = dim + 1; d < nd; ++d) inner *= sh[d];
  std::vector<int64_t> sh_o(sh.begin(), sh.begin() + dim), st_o(st.begin(), st.begin() + dim);
  std::vector<int64_t> sh_i(sh.begin() + dim + 1, sh.end()), st_i(st.begin() + dim + 1, st.end());
  auto out = torch::empty(a.sizes(), a.options());
  const float* pa = a.data_ptr<float>();
  float* po = out.data_ptr<float>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      const float* row = pa + kd_at(o, sh_o, st_o) + kd_at(in, sh_i, st_i);
      float mx = -INFINITY, sum = 0.f;
      for (int64_t k = 0; k < len; ++k) mx = std::max(mx, row[k * st[dim]]);
      for (int64_t k = 0; k < len; ++k) sum += std::exp(row[k * st[dim]] - mx);
      for (int64_t k = 0; k < len; ++k) {
        float x = row[k * st[dim]] - mx;
        po[(o * len + k) * inner + in] = log ? x - std::log(sum) : std::exp(x) / sum;
      }
    }
  }
  return out;
}
""",
    "linear": """\
// y[..., o] = sum_i x[..., i] * w[o, i] (+ b[o]): the leading dims of x are rows.
static torch::Tensor kd_linear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor* b) {
  auto xc = x.contiguous(), wc = w.contiguous();
  int64_t in = xc.size(-1), out_f = wc.size(0), rows = xc.numel() / in;
  auto shape = xc.sizes().vec();
  shape.back() = out_f;
  auto out = torch::empty(shape, xc.options());
  const float* px = xc.data_ptr<float>();
  const float* pw = wc.data_ptr<float>();
  torch::Tensor bc;  // keeps a contiguous copy of the bias alive while the loop reads it
  if (b) bc = b->contiguous();
  const float* pb = b ? bc.data_ptr<float>() : nullptr;
  float* po = out.data_ptr<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out_f; ++o) {
      float acc = pb ? pb[o] : 0.f;
      for (int64_t i = 0; i < in; ++i) acc += px[r * in + i] * pw[o * in + i];
      po[r * out_f + o] = acc;
    }
  return out;
}
""",
    "mm": """\
// (n, k) x (k, m) -> (n, m)
static torch::Tensor kd_mm(const torch::Tensor& a, const torch::Tensor& b) {
  auto ac = a.contiguous(), bc = b.contiguous();
  int64_t n = ac.size(0), k = ac.size(1), m = bc.size(1);
  auto out = torch::empty({n, m}, ac.options());
  const float* pa = ac.data_ptr<float>();
  const float* pb = bc.data_ptr<float>();
  float* po = out.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      float acc = 0.f;
      for (int64_t t = 0; t < k; ++t) acc += pa[i * k + t] * pb[t * m + j];
      po[i * m + j] = acc;
    }
  return out;
}
""",
}
_HELPER_DEPS = {"map1": ["at"], "map2": ["at", "broadcast"], "where": ["at", "broadcast"], "reduce": [],
                "softmax": ["at"], "linear": [], "mm": []}

# The same helpers for the cuda backend: one thread per output element (grid-stride loops; a reduction to few
# outputs shares each one out among blocks), device lambdas (`--extended-lambda`), strides passed by value in a
# small struct.
_CUDA_HELPERS = {
    "at": """\
#define KD_MAX_DIMS 8
struct KdIndex { int64_t nd; int64_t shape[KD_MAX_DIMS]; int64_t stride[KD_MAX_DIMS]; };
static KdIndex kd_index(std::vector<int64_t> shape, std::vector<int64_t> stride) {
  TORCH_CHECK(shape.size() <= KD_MAX_DIMS, "at most 8 dims");
  KdIndex ix;
  ix.nd = (int64_t)shape.size();
  for (int64_t d = 0; d < ix.nd; ++d) { ix.shape[d] = shape[d]; ix.stride[d] = stride[d]; }
  return ix;
}
// Offset of the i-th element (row-major over ix.shape) in memory laid out with ix.stride.
__device__ __forceinline__ int64_t kd_at(int64_t i, const KdIndex& ix) {
  int64_t off = 0;
  for (int64_t d = ix.nd - 1; d >= 0; --d) { off += (i % ix.shape[d]) * ix.stride[d]; i /= ix.shape[d]; }
  return off;
}
#define KD_LOOP(i, n) for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)
static int kd_blocks(int64_t n) { return (int)std::max<int64_t>(1, std::min<int64_t>((n + 255) / 256, 65535)); }
""",
    "broadcast": _HELPERS["broadcast"],
    "map1": """\
template <typename In, typename Out, typename F>
__global__ void kd_map1_kernel(const In* a, KdIndex ia, Out* o, int64_t n, F f) {
  KD_LOOP(i, n) o[i] = f(a[kd_at(i, ia)]);
}
template <typename In, typename Out, typename F>
static torch::Tensor kd_map1(const torch::Tensor& a, torch::ScalarType out_type, F f) {
  auto out = torch::empty(a.sizes(), a.options().dtype(out_type));
  int64_t n = out.numel();
  if (n) kd_map1_kernel<<<kd_blocks(n), 256>>>(a.data_ptr<In>(), kd_index(a.sizes().vec(), a.strides().vec()),
                                                out.data_ptr<Out>(), n, f);
  return out;
}
""",
    "map2": """\
template <typename A, typename B, typename Out, typename F>
__global__ void kd_map2_kernel(const A* a, KdIndex ia, const B* b, KdIndex ib, Out* o, int64_t n, F f) {
  KD_LOOP(i, n) o[i] = f(a[kd_at(i, ia)], b[kd_at(i, ib)]);
}
template <typename A, typename B, typename Out, typename F>
static torch::Tensor kd_map2(const torch::Tensor& a, const torch::Tensor& b, torch::ScalarType out_type, F f) {
  auto shape = kd_broadcast(a.sizes().vec(), b.sizes().vec());
  auto ea = a.expand(shape), eb = b.expand(shape);
  auto out = torch::empty(shape, a.options().dtype(out_type));
  int64_t n = out.numel();
  if (n) kd_map2_kernel<<<kd_blocks(n), 256>>>(a.data_ptr<A>(), kd_index(shape, ea.strides().vec()), b.data_ptr<B>(),
                                                kd_index(shape, eb.strides().vec()), out.data_ptr<Out>(), n, f);
  return out;
}
""",
    "where": """\
__global__ void kd_where_kernel(const bool* c, KdIndex ic, const float* a, KdIndex ia, const float* b, KdIndex ib,
                                float* o, int64_t n) {
  KD_LOOP(i, n) o[i] = c[kd_at(i, ic)] ? a[kd_at(i, ia)] : b[kd_at(i, ib)];
}
static torch::Tensor kd_where(const torch::Tensor& c, const torch::Tensor& a, const torch::Tensor& b) {
  auto shape = kd_broadcast(kd_broadcast(c.sizes().vec(), a.sizes().vec()), b.sizes().vec());
  auto ec = c.expand(shape), ea = a.expand(shape), eb = b.expand(shape);
  auto out = torch::empty(shape, a.options());
  int64_t n = out.numel();
  if (n) kd_where_kernel<<<kd_blocks(n), 256>>>(c.data_ptr<bool>(), kd_index(shape, ec.strides().vec()),
      a.data_ptr<float>(), kd_index(shape, ea.strides().vec()), b.data_ptr<float>(),
      kd_index(shape, eb.strides().vec()), out.data_ptr<float>(), n);
  return out;
}
""",
    "reduce": """\
// acc folds elements (sum, max, min: associative, so partial folds fold again); fin(total, count) finishes.
// The k-th reduced element's offset: with the reduced dims merged into one run (kd_reduce does where memory
// allows) a multiply, not kd_at's divisions, which would take longer than the read.
__device__ __forceinline__ int64_t kd_red_at(int64_t k, const KdIndex& red) {
  return red.nd == 1 ? k * red.stride[0] : kd_at(k, red);
}
// Many outputs: one thread per output element folds all its elements.
template <typename Acc, typename Fin>
__global__ void kd_reduce_kernel(const float* a, KdIndex kept, KdIndex red, float* o, int64_t n_out, int64_t count,
                                 float init, Acc acc, Fin fin) {
  KD_LOOP(j, n_out) {
    int64_t base = kd_at(j, kept);
    float s = init;
    for (int64_t k = 0; k < count; ++k) s = acc(s, a[base + kd_red_at(k, red)]);
    o[j] = fin(s, count);
  }
}
// Few outputs whose elements lie side by side: a block folds one slice of an output's elements (its threads
// stride through the slice, reading neighbours together, then a tree in shared memory): o[j * slices + slice].
template <typename Acc, typename Fin>
__global__ void kd_reduce_blocks_kernel(const float* a, KdIndex kept, KdIndex red, float* o, int64_t n_out,
                                        int64_t count, int64_t slices, int64_t fin_count, float init, Acc acc, Fin fin) {
  __shared__ float tree[256];
  for (int64_t g = blockIdx.x; g < n_out * slices; g += gridDim.x) {
    int64_t base = kd_at(g / slices, kept);
    float s = init;
    for (int64_t k = (g % slices) * blockDim.x + threadIdx.x; k < count; k += slices * blockDim.x)
      s = acc(s, a[base + kd_red_at(k, red)]);
    tree[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {
      if (threadIdx.x < w) tree[threadIdx.x] = acc(tree[threadIdx.x], tree[threadIdx.x + w]);
      __syncthreads();
    }
    if (threadIdx.x == 0) o[g] = fin(tree[0], fin_count);
    __syncthreads();
  }
}
// Few outputs whose neighbours lie side by side (a reduction over an outer dim): neighbouring threads take
// neighbouring outputs, each folding one slice of its elements: o[slice * n_out + j].
template <typename Acc>
__global__ void kd_reduce_columns_kernel(const float* a, KdIndex kept, KdIndex red, float* o, int64_t n_out,
                                         int64_t count, int64_t slices, float init, Acc acc) {
  int64_t chunk = (count + slices - 1) / slices;
  KD_LOOP(g, n_out * slices) {
    int64_t base = kd_at(g % n_out, kept), k = (g / n_out) * chunk, end = k + chunk < count ? k + chunk : count;
    float s = init;
    for (; k < end; ++k) s = acc(s, a[base + kd_red_at(k, red)]);
    o[g] = s;
  }
}
struct KdKeep { __device__ float operator()(float s, int64_t) const { return s; } };
template <typename Acc, typename Fin>
static torch::Tensor kd_reduce(const torch::Tensor& a, std::vector<int64_t> dims, bool keepdim, float init, Acc acc, Fin fin) {
  int64_t nd = a.dim();
  std::vector<bool> red(nd, dims.empty());
  for (auto d : dims) red[(d % nd + nd) % nd] = true;
  std::vector<int64_t> out_shape, kept_shape, kept_stride, red_shape, red_stride;
  int64_t count = 1;
  for (int64_t d = 0; d < nd; ++d) {
    if (red[d]) { red_shape.push_back(a.size(d)); red_stride.push_back(a.stride(d)); count *= a.size(d); }
    else { kept_shape.push_back(a.size(d)); kept_stride.push_back(a.stride(d)); }
    if (!red[d] || keepdim) out_shape.push_back(red[d] ? 1 : a.size(d));
  }
  // the reduced dims in memory order (a fold may take its elements in any order), merged where they make one
  // run: a transposed view's full sum reads memory straight through
  std::vector<std::pair<int64_t, int64_t>> by_stride;  // (stride, size)
  for (size_t d = 0; d < red_shape.size(); ++d)
    if (red_shape[d] != 1) by_stride.push_back({red_stride[d], red_shape[d]});
  std::stable_sort(by_stride.begin(), by_stride.end(), [](auto x, auto y) { return x.first > y.first; });
  std::vector<int64_t> run_shape, run_stride;
  for (auto [stride, size] : by_stride) {
    if (!run_shape.empty() && run_stride.back() == stride * size) {
      run_shape.back() *= size;
      run_stride.back() = stride;
    } else {
      run_shape.push_back(size);
      run_stride.push_back(stride);
    }
  }
  auto out = torch::empty(out_shape, a.options());
  int64_t n_out = out.numel();
  if (!n_out) return out;
  auto kept = kd_index(kept_shape, kept_stride), reduced = kd_index(run_shape, run_stride);
  const float* pa = a.data_ptr<float>();
  float* po = out.data_ptr<float>();
  if (n_out >= 65536 || count < 1024) {  // enough outputs to fill the device, or too few elements to share out
    kd_reduce_kernel<<<kd_blocks(n_out), 256>>>(pa, kept, reduced, po, n_out, count, init, acc, fin);
    return out;
  }
  auto grid = [](int64_t blocks) { return (int)std::min<int64_t>(blocks, 65535); };
  // each output's partial folds, folded again by a block an output (o[j] = fin(partials of j, count))
  auto fold_partials = [&](const torch::Tensor& partial, int64_t slices, int64_t j_stride, int64_t slice_stride) {
    kd_reduce_blocks_kernel<<<grid(n_out), 256>>>(partial.data_ptr<float>(), kd_index({n_out}, {j_stride}),
        kd_index({slices}, {slice_stride}), po, n_out, slices, 1, count, init, acc, fin);
  };
  if (run_stride.back() == 1) {  // about 1,024 blocks in all, a slice at least 4,096 elements (16 a thread)
    int64_t slices = std::max<int64_t>(1, std::min<int64_t>(count / 4096, 1024 / n_out));
    if (slices == 1) {
      kd_reduce_blocks_kernel<<<grid(n_out), 256>>>(pa, kept, reduced, po, n_out, count, 1, count, init, acc, fin);
      return out;
    }
    auto partial = torch::empty({n_out * slices}, a.options());
    kd_reduce_blocks_kernel<<<grid(n_out * slices), 256>>>(pa, kept, reduced, partial.data_ptr<float>(), n_out, count,
                                                           slices, count, init, acc, KdKeep());
    fold_partials(partial, slices, slices, 1);
  } else {  // about 65,536 threads in all, a slice at least 64 elements
    int64_t slices = std::max<int64_t>(1, std::min<int64_t>(count / 64, (65536 + n_out - 1) / n_out));
    auto partial = torch::empty({n_out * slices}, a.options());
    kd_reduce_columns_kernel<<<kd_blocks(n_out * slices), 256>>>(pa, kept, reduced, partial.data_ptr<float>(), n_out,
                                                                 count, slices, init, acc);
    fold_partials(partial, slices, 1, n_out);
  }
  return out;
}
""",
    "softmax": """\
__global__ void kd_softmax_kernel(const float* a, KdIndex outer, KdIndex inner, int64_t len, int64_t step,
                                  float* o, int64_t rows, int64_t n_inner, bool log) {
  KD_LOOP(r, rows) {
    int64_t ro = r / n_inner, ri = r % n_inner;
    const float* row = a + kd_at(ro, outer) + kd_at(ri, inner);
    float mx = -INFINITY, sum = 0.f;
    for (int64_t k = 0; k < len; ++k) mx = fmaxf(mx, row[k * step]);
    for (int64_t k = 0; k < len; ++k) sum += expf(row[k * step] - mx);
    for (int64_t k = 0; k < len; ++k) {
      float x = row[k * step] - mx;
      o[(ro * len + k) * n_inner + ri] = log ? x - logf(sum) : expf(x) / sum;
    }
  }
}
static torch::Tensor kd_softmax(const torch::Tensor& a, int64_t dim, bool log) {
  int64_t nd = a.dim();
  dim = (dim % nd + nd) % nd;
  auto sh = a.sizes().vec(), st = a.strides().vec();
  std::vector<int64_t> sh_o(sh.begin(), sh.begin() + dim), st_o(st.begin(), st.begin() + dim);
  std::vector<int64_t> sh_i(sh.begin() + dim + 1, sh.end()), st_i(st.begin() + dim + 1, st.end());
  int64_t n_outer = 1, n_inner = 1;
  for (auto s : sh_o) n_outer *= s;
  for (auto s : sh_i) n_inner *= s;
  auto out = torch::empty(a.sizes(), a.options());
  int64_t rows = n_outer * n_inner;
  if (rows) kd_softmax_kernel<<<kd_blocks(rows), 256>>>(a.data_ptr<float>(), kd_index(sh_o, st_o), kd_index(sh_i, st_i),
      sh[dim], st[dim], out.data_ptr<float>(), rows, n_inner, log);
  return out;
}
""",
    "linear": """\
__global__ void kd_linear_kernel(const float* x, const float* w, const float* b, float* o, int64_t rows, int64_t in,
                                 int64_t out_f) {
  KD_LOOP(idx, rows * out_f) {
    int64_t r = idx / out_f, c = idx % out_f;
    float acc = b ? b[c] : 0.f;
    for (int64_t i = 0; i < in; ++i) acc += x[r * in + i] * w[c * in + i];
    o[idx] = acc;
  }
}
static torch::Tensor kd_linear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor* b) {
  auto xc = x.contiguous(), wc = w.contiguous();
  int64_t in = xc.size(-1), out_f = wc.size(0), rows = xc.numel() / in;
  auto shape = xc.sizes().vec();
  shape.back() = out_f;
  auto out = torch::empty(shape, xc.options());
  torch::Tensor bc;
  if (b) bc = b->contiguous();
  if (rows * out_f) kd_linear_kernel<<<kd_blocks(rows * out_f), 256>>>(xc.data_ptr<float>(), wc.data_ptr<float>(),
      b ? bc.data_ptr<float>() : nullptr, out.data_ptr<float>(), rows, in, out_f);
  return out;
}
""",
    "mm": """\
__global__ void kd_mm_kernel(const float* a, const float* b, float* o, int64_t n, int64_t k, int64_t m) {
  KD_LOOP(idx, n * m) {
    int64_t i = idx / m, j = idx % m;
    float acc = 0.f;
    for (int64_t t = 0; t < k; ++t) acc += a[i * k + t] * b[t * m + j];
    o[idx] = acc;
  }
}
static torch::Tensor kd_mm(const torch::Tensor& a, const torch::Tensor& b) {
  auto ac = a.contiguous(), bc = b.contiguous();
  int64_t n = ac.size(0), k = ac.size(1), m = bc.size(1);
  auto out = torch::empty({n, m}, ac.options());
  if (n * m) kd_mm_kernel<<<kd_blocks(n * m), 256>>>(ac.data_ptr<float>(), bc.data_ptr<float>(), out.data_ptr<float>(), n, k, m);
  return out;
}
""",
}
_CUDA_DEPS = {"map1": ["at"], "map2": ["at", "broadcast"], "where": ["at", "broadcast"], "reduce": ["at"],
              "softmax": ["at"], "linear": ["at"], "mm": ["at"]}


def _float(value: Any) -> str:
    value = float(value)
    if math.isinf(value):
        return "INFINITY" if value > 0 else "-INFINITY"
    if math.isnan(value):
        return "NAN"
    text = repr(value)
    return (text if ("." in text or "e" in text) else text + ".0") + "f"


UNARY: dict[str, str] = {
    "abs": "std::fabs(v)", "neg": "-v", "relu": "v > 0.f ? v : 0.f", "sigmoid": "1.f / (1.f + std::exp(-v))",
    "sin": "std::sin(v)", "cos": "std::cos(v)", "tan": "std::tan(v)", "atan": "std::atan(v)", "exp": "std::exp(v)",
    "log": "std::log(v)", "sqrt": "std::sqrt(v)", "rsqrt": "1.f / std::sqrt(v)", "tanh": "std::tanh(v)",
    "floor": "std::floor(v)", "ceil": "std::ceil(v)", "round": "std::nearbyint(v)", "erf": "std::erf(v)",
    "reciprocal": "1.f / v", "silu": "v / (1.f + std::exp(-v))",
    "sign": "(float)((v > 0.f) - (v < 0.f))",
}
BINARY: dict[str, str] = {
    "add": "x + y", "sub": "x - y", "mul": "x * y", "div": "x / y", "maximum": "std::max(x, y)",
    "minimum": "std::min(x, y)", "pow": "std::pow(x, y)", "atan2": "std::atan2(x, y)",
}
COMPARE: dict[str, str] = {"gt": "x > y", "lt": "x < y", "ge": "x >= y", "le": "x <= y", "eq": "x == y", "ne": "x != y"}
# View and layout ops: emitted as tensor view calls, which the legality rules allow as glue.
VIEWS = {"t", "transpose", "permute", "view", "reshape", "_unsafe_view", "unsqueeze", "squeeze", "expand",
         "clone", "contiguous", "alias", "detach"}
REDUCE: dict[str, tuple[str, str, str]] = {  # init, acc, fin
    "sum": ("0.f", "s + v", "s"), "mean": ("0.f", "s + v", "s / (float)c"),
    "amax": ("-INFINITY", "std::max(s, v)", "s"), "amin": ("INFINITY", "std::min(s, v)", "s"),
}


class _Writer:
    """Turns the compute nodes of an exported graph into C++ statements."""

    def __init__(self, graph: ExportedGraph, names: dict[torch.fx.Node, str], cuda: bool = False):
        self.graph = graph
        self.names = names
        self.cuda = cuda
        self.lam = "[] __device__ " if cuda else "[]"  # device lambdas need nvcc's --extended-lambda
        self.helpers: list[str] = []
        self.lines: list[str] = []

    def need(self, helper: str) -> None:
        for dep in (_CUDA_DEPS if self.cuda else _HELPER_DEPS).get(helper, []):
            self.need(dep)
        if helper not in self.helpers:
            self.helpers.append(helper)

    def value(self, arg: Any) -> str:
        if isinstance(arg, torch.fx.Node):
            return self.names[arg]
        raise Unsupported(f"non-tensor operand {arg!r}")

    @staticmethod
    def dtype(node: torch.fx.Node) -> torch.dtype:
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor):
            raise Unsupported(f"{node.name} is not a tensor")
        return val.dtype

    def emit(self, node: torch.fx.Node, out: str) -> None:
        name = op_short_name(node.target)
        args, kwargs = list(node.args), dict(node.kwargs)
        out_dtype = self.dtype(node)
        if out_dtype not in (torch.float32, torch.bool):
            raise Unsupported(f"{name} produces {out_dtype}; the template teacher writes float32 kernels")
        operand_types = [self.dtype(a) for a in args if isinstance(a, torch.fx.Node)]
        expected = [torch.bool, torch.float32, torch.float32] if name == "where" else [torch.float32] * len(operand_types)
        if operand_types != expected[:len(operand_types)]:
            raise Unsupported(f"{name} reads {[str(t) for t in operand_types]}; the template expects float32 operands")
        if name in UNARY or name in ("gelu", "leaky_relu", "clamp", "clip", "hardtanh"):
            self.need("map1")
            self.lines.append(f"  auto {out} = kd_map1<float, float>({self.value(args[0])}, torch::kFloat32, "
                              f"{self.lam}(float v) {{ return {self.unary_expr(name, args, kwargs)}; }});")
        elif name in BINARY or name in COMPARE:
            expr = BINARY.get(name) or COMPARE[name]
            if kwargs.get("alpha", 1) != 1 or kwargs.get("rounding_mode"):
                raise Unsupported(f"{name} with {kwargs}")
            result = "float" if name in BINARY else "bool"
            scalar_type = "torch::kFloat32" if name in BINARY else "torch::kBool"
            a, b = args[0], args[1]
            if isinstance(b, (int, float)) and isinstance(a, torch.fx.Node):
                self.need("map1")
                self.lines.append(f"  auto {out} = kd_map1<float, {result}>({self.value(a)}, {scalar_type}, "
                                  f"{self.lam}(float x) {{ const float y = {_float(b)}; return {expr}; }});")
            else:
                self.need("map2")
                self.lines.append(f"  auto {out} = kd_map2<float, float, {result}>({self.value(a)}, {self.value(b)}, "
                                  f"{scalar_type}, {self.lam}(float x, float y) {{ return {expr}; }});")
        elif name == "where":
            if not all(isinstance(a, torch.fx.Node) for a in args[:3]):
                raise Unsupported("where with scalar branches")
            self.need("where")
            self.lines.append(f"  auto {out} = kd_where({', '.join(self.value(a) for a in args[:3])});")
        elif name in REDUCE:
            self.reduce(node, name, args, kwargs, out)
        elif name in VIEWS:
            self.lines.append(f"  auto {out} = {self.value(args[0])}{self.view_call(name, args[1:])};")
        elif name == "linear":
            x, w = args[0], args[1]
            bias = args[2] if len(args) > 2 else kwargs.get("bias")
            if self.rank(w) != 2 or (bias is not None and self.rank(bias) != 1):
                raise Unsupported("linear with unusual weight or bias ranks")
            self.need("linear")
            b = f"&{self.value(bias)}" if bias is not None else "nullptr"
            self.lines.append(f"  auto {out} = kd_linear({self.value(x)}, {self.value(w)}, {b});")
        elif name in ("mm", "matmul") and all(self.rank(a) == 2 for a in args[:2]):
            self.need("mm")
            self.lines.append(f"  auto {out} = kd_mm({self.value(args[0])}, {self.value(args[1])});")
        elif name in ("_softmax", "softmax", "_log_softmax", "log_softmax"):
            if self.dtype(args[0]) != torch.float32 or self.rank(args[0]) == 0:
                raise Unsupported(f"{name} of a 0-d or non-float tensor")
            self.need("softmax")
            log = "true" if "log" in name else "false"
            self.lines.append(f"  auto {out} = kd_softmax({self.value(args[0])}, {int(args[1])}, {log});")
        else:
            raise Unsupported(f"no template for aten.{name} ({op_family(node.target)})")

    @staticmethod
    def view_call(name: str, args: list[Any]) -> str:
        def ints(values) -> str:
            values = values if isinstance(values, (list, tuple)) else [values]
            return "{" + ", ".join(str(int(v)) for v in values) + "}"

        if name in ("t", "alias", "detach"):
            return ".t()" if name == "t" else ""
        if name == "transpose":
            return f".transpose({int(args[0])}, {int(args[1])})"
        if name == "permute":
            return f".permute({ints(args[0])})"
        if name in ("view", "reshape", "_unsafe_view"):
            return f".reshape({ints(args[0])})"
        if name == "unsqueeze":
            return f".unsqueeze({int(args[0])})"
        if name == "squeeze":
            if not args:
                return ".squeeze()"
            dims = args[0] if isinstance(args[0], (list, tuple)) else [args[0]]
            return "".join(f".squeeze({int(d)})" for d in sorted(dims, reverse=True))
        if name == "expand":
            return f".expand({ints(args[0])})"
        return ".contiguous()"  # clone / contiguous: a layout copy, allowed glue

    @staticmethod
    def rank(node: torch.fx.Node) -> int:
        return node.meta["val"].dim()

    def unary_expr(self, name: str, args: list[Any], kwargs: dict[str, Any]) -> str:
        if name in UNARY:
            return UNARY[name]
        if name == "gelu":
            if kwargs.get("approximate", args[1] if len(args) > 1 else "none") == "tanh":
                return "0.5f * v * (1.f + std::tanh(0.7978845608028654f * (v + 0.044715f * v * v * v)))"
            return "0.5f * v * (1.f + std::erf(v * 0.7071067811865476f))"
        if name == "leaky_relu":
            slope = args[1] if len(args) > 1 else kwargs.get("negative_slope", 0.01)
            return f"v > 0.f ? v : v * {_float(slope)}"
        lo = args[1] if len(args) > 1 else kwargs.get("min")
        hi = args[2] if len(args) > 2 else kwargs.get("max")
        if name == "hardtanh":
            lo, hi = (lo if lo is not None else -1.0), (hi if hi is not None else 1.0)
        if isinstance(lo, torch.fx.Node) or isinstance(hi, torch.fx.Node):
            raise Unsupported("clamp with tensor bounds")
        expr = "v"
        if lo is not None:
            expr = f"std::max({expr}, {_float(lo)})"
        if hi is not None:
            expr = f"std::min({expr}, {_float(hi)})"
        return expr

    def reduce(self, node, name, args, kwargs, out) -> None:
        src = args[0]
        if self.dtype(src) != torch.float32 or self.rank(src) == 0:
            raise Unsupported(f"{name} of a 0-d or non-float tensor")
        dims = args[1] if len(args) > 1 else kwargs.get("dim", [])
        dims = [dims] if isinstance(dims, int) else list(dims or [])
        keepdim = bool(args[2] if len(args) > 2 else kwargs.get("keepdim", False))
        if kwargs.get("dtype") not in (None, torch.float32):
            raise Unsupported(f"{name} with dtype={kwargs['dtype']}")
        init, acc, fin = REDUCE[name]
        self.need("reduce")
        dim_list = "{" + ", ".join(str(int(d)) for d in dims) + "}"
        self.lines.append(
            f"  auto {out} = kd_reduce({self.value(src)}, {dim_list}, {str(keepdim).lower()}, {init}, "
            f"{self.lam}(float s, float v) {{ return {acc}; }}, {self.lam}(float s, int64_t c) {{ return {fin}; }});")


def _init_source(reference: str) -> tuple[str, str]:
    """The reference Model's __init__ signature and body, copied so ModelNew creates identical weights."""
    tree = ast.parse(reference)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    signature = ast.unparse(item.args)
                    body = "\n".join(ast.unparse(stmt) for stmt in item.body)
                    return signature, body.replace("super(Model, self)", "super()")
    return "self", "super().__init__()"


def _forward_args(reference: str) -> list[str]:
    tree = ast.parse(reference)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "forward":
                    return [a.arg for a in item.args.args[1:]]
    raise Unsupported("reference Model has no forward")


def write_solution(problem: Problem, graph: ExportedGraph, backend: str = "cpu") -> tuple[str, list[str]]:
    """The ModelNew source and the six reasoning steps for a float32 graph: C++ loops (cpu) or one CUDA
    kernel per node (cuda), in KernelBench's load_inline format."""
    if graph.constants:
        raise Unsupported("lifted tensor constants")
    forward_args = _forward_args(problem.reference)
    if len(forward_args) != len(graph.user_inputs):
        raise Unsupported("forward takes non-tensor arguments")
    names: dict[torch.fx.Node, str] = {}
    cpp_params, py_args = [], []
    for node, arg in zip(graph.user_inputs, forward_args):
        names[node] = arg
        cpp_params.append(f"torch::Tensor {arg}")
        py_args.append(arg)
    for node, key in graph.parameters.items():
        cpp_name = key.replace(".", "_")
        names[node] = cpp_name
        cpp_params.append(f"torch::Tensor {cpp_name}")
        py_args.append(f"self.{key}")
    for node in list(graph.user_inputs) + list(graph.parameters):
        if _Writer.dtype(node) not in (torch.float32, torch.bool):
            raise Unsupported(f"input {node.name} is {_Writer.dtype(node)}")
    cuda = backend == "cuda"
    writer = _Writer(graph, names, cuda)
    for i, node in enumerate(graph.compute):
        names[node] = f"v{i}"
        writer.emit(node, f"v{i}")
    outs = []
    for o in graph.outputs:
        if not isinstance(o, torch.fx.Node):
            raise Unsupported("non-tensor output")
        outs.append(names[o])
    single = len(outs) == 1
    ret_type = "torch::Tensor" if single else "std::vector<torch::Tensor>"
    ret = outs[0] if single else "{" + ", ".join(outs) + "}"
    order = ["at", "broadcast", "map1", "map2", "where", "reduce", "softmax", "linear", "mm"]
    helpers = "\n".join((_CUDA_HELPERS if cuda else _HELPERS)[h] for h in order if h in writer.helpers)
    signature = f"{ret_type} forward({', '.join(cpp_params)})"
    body = f"{signature} {{\n" + "\n".join(writer.lines) + f"\n  return {ret};\n}}\n"
    if cuda:
        includes = "#include <torch/extension.h>\n#include <cuda_runtime.h>\n#include <algorithm>\n#include <cmath>\n" \
                   "#include <vector>\n"
        sources = (f'cuda_source = r"""\n{includes}\n{helpers}\n{body}"""\n\n'
                   f'cpp_source = "{signature};"\n\n')
        build = (f'kernels = load_inline(name="kd_{problem.id}", cpp_sources=cpp_source, cuda_sources=cuda_source, '
                 'functions=["forward"], extra_cuda_cflags=["--extended-lambda"])')
    else:
        includes = "#include <torch/extension.h>\n#include <cmath>\n#include <vector>\n"
        sources = f'cpp_source = r"""\n{includes}\n{helpers}\n{body}"""\n\n'
        build = f'kernels = load_inline(name="kd_{problem.id}", cpp_sources=cpp_source, functions=["forward"])'
    init_sig, init_body = _init_source(problem.reference)
    py_return = "kernels.forward(" + ", ".join(py_args) + ")"
    if not single:
        py_return = f"tuple({py_return})"
    source = (
        "import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n\n"
        f"{sources}{build}\n\n\n"
        "class ModelNew(nn.Module):\n"
        f"    def __init__({init_sig}):\n{textwrap.indent(init_body, '        ')}\n\n"
        f"    def forward(self, {', '.join(forward_args)}):\n"
        f"        return {py_return}\n"
    )
    return source, _reasoning(graph, writer, forward_args, cuda)


def _reasoning(graph: ExportedGraph, writer: _Writer, inputs: list[str], cuda: bool = False) -> list[str]:
    ops = ", ".join(f"{op_short_name(n.target)}" for n in graph.compute)
    shapes = "; ".join(f"{name} {list(n.meta['val'].shape)}" for name, n in zip(inputs, graph.user_inputs))
    outs = "; ".join(str(list(o.meta["val"].shape)) for o in graph.outputs if isinstance(o, torch.fx.Node))
    fused = "one loop nest per node" if len(graph.compute) > 1 else "a single loop nest"
    return [
        f"1. Operators: {ops}.",
        f"2. Shapes: inputs {shapes or 'none'}; outputs {outs}; float32, any strides.",
        f"3. Strategy: {fused}, one output element per {'thread (grid-stride loop)' if cuda else 'iteration'}.",
        "4. Memory: read inputs through their strides, write fresh contiguous outputs.",
        "5. Edge cases: broadcast by expanding to the output shape (stride 0); reduce in float.",
        "6. Code:",
    ]


SANDBOXED_AT_ONCE = max(1, min(8, len(os.sched_getaffinity(0))))


class TemplateTeacher:
    """Writes C++ (cpu) or CUDA (cuda) for float32 graphs of elementwise, reduction, softmax, linear, 2-D
    matmul and view ops; like every teacher's, its outputs are verified before they are used.

    Walking a reference's graph runs its code (torch.export), so an imported problem is solved in a
    sandbox by `analyser` (verifier/analysis.py) and refused without one; `sandboxed` is set inside that
    sandbox."""

    name = "template"

    def __init__(self, analyser=None, sandboxed: bool = False):
        self.analyser = analyser
        self.sandboxed = sandboxed

    @property
    def version(self) -> str:
        """A hash of the code its answers come from (this module, the graph walk, the completion's format): its
        answers are a function of the problem, the backend and this, so a caller may keep them across runs. torch's
        version too: the graph it writes from is torch.export's, which changes between versions."""
        import hashlib
        import inspect

        import operators.graph
        import training.prompts

        sources = [inspect.getsource(m) for m in (sys.modules[__name__], operators.graph, training.prompts)]
        return hashlib.sha256("\0".join([torch.__version__, *sources]).encode()).hexdigest()[:16]

    def solve_many(self, problems: list[Problem], backend: str) -> list[TeacherOutput]:
        """In order. Problems answered in a sandbox are answered `SANDBOXED_AT_ONCE` at a time: each is a sandbox's
        start and a torch.export (1-2 s), and one after the other they were KernelBench's 200 problems' first
        five minutes on the H200 before the first candidate was judged. The rest (torch.export here, which is not
        thread-safe) one after the other."""
        sandboxed = {p.id for p in problems if self.analyser is not None and not (self.sandboxed or trusted(p))}
        answers: dict[str, TeacherOutput] = {}
        if len(sandboxed) > 1:
            with ThreadPoolExecutor(max_workers=min(SANDBOXED_AT_ONCE, len(sandboxed))) as threads:
                todo = [p for p in problems if p.id in sandboxed]
                answers = {p.id: out for p, out in zip(todo, threads.map(lambda q: self.solve(q, backend), todo))}
        return [answers[p.id] if p.id in answers else self.solve(p, backend) for p in problems]

    def solve(self, problem: Problem, backend: str) -> TeacherOutput:
        if backend not in ("cpu", "cuda"):
            return TeacherOutput(problem.id, refusal=f"the template teacher writes cpu and cuda kernels, not {backend}")
        if not (self.sandboxed or trusted(problem)):
            if self.analyser is None:
                return TeacherOutput(problem.id, refusal=f"{problem.source} problems are untrusted code: the template "
                                     "teacher analyses them only in a sandbox")
            try:
                answer = self.analyser.teacher(problem, backend)
            except AnalysisError as exc:
                return TeacherOutput(problem.id, refusal=str(exc)[:300], lasting=False)
            return TeacherOutput(problem.id, completion=answer.get("completion"), refusal=answer.get("refusal"))
        try:
            graph = export_reference(load_reference_module(problem.reference, f"teacher_{problem.id}"))
            source, reasoning = write_solution(problem, graph, backend)
        except Unsupported as exc:
            return TeacherOutput(problem.id, refusal=str(exc))
        except Exception as exc:  # export or reference failures: the problem is out of reach, not a crash
            return TeacherOutput(problem.id, refusal=f"could not analyse the reference: {exc!r}"[:300])
        return TeacherOutput(problem.id, completion=completion_text(reasoning, source))


class OpenAITeacher:
    """A model behind an OpenAI-compatible `/v1/chat/completions` endpoint (`vllm serve`, `transformers
    serve`, a hosted API): the six-step prompt in, completions out. Requests run `concurrency` at a time,
    transient failures are retried with backoff, and responses are cached on disk by request hash, so a
    re-run of the stage costs no tokens. Its outputs are verified like any teacher's (tasks/distill.py)."""

    name = "openai"

    def __init__(self, base_url: str, model: str, api_key: str | None = None, concurrency: int = 8,
                 retries: int = 3, timeout_s: float = 300.0, temperature: float = 0.2, max_tokens: int = 4096,
                 cache_dir: str | None = None):
        import os

        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY", "")
        self.concurrency = concurrency
        self.retries = retries
        self.timeout_s = timeout_s
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.cache_dir = cache_dir
        self.requests_sent = 0

    def _request(self, payload: dict[str, Any]) -> str:
        import hashlib
        import json
        import time
        from pathlib import Path

        import httpx

        key = hashlib.sha256(json.dumps([self.base_url, payload], sort_keys=True).encode()).hexdigest()[:24]
        cached = Path(self.cache_dir) / f"{key}.json" if self.cache_dir else None
        if cached is not None and cached.exists():
            return json.loads(cached.read_text())["content"]
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            try:
                self.requests_sent += 1
                response = httpx.post(f"{self.base_url}/chat/completions", json=payload, headers=headers,
                                      timeout=self.timeout_s)
                if response.status_code in (429, 500, 502, 503, 504):
                    raise httpx.HTTPStatusError(f"status {response.status_code}", request=response.request,
                                                response=response)
                response.raise_for_status()
                content = response.json()["choices"][0]["message"]["content"] or ""
                if cached is not None:
                    cached.parent.mkdir(parents=True, exist_ok=True)
                    tmp = cached.with_suffix(".tmp")
                    tmp.write_text(json.dumps({"content": content}))
                    tmp.replace(cached)
                return content
            except (httpx.TransportError, httpx.HTTPStatusError) as exc:
                last = exc
                if isinstance(exc, httpx.HTTPStatusError) and exc.response.status_code < 500 \
                        and exc.response.status_code != 429:
                    break  # a client error will not succeed on retry
                time.sleep(min(2.0 ** attempt * 0.5, 8.0))
        raise TeacherUnavailable(f"{self.base_url}: {last}")

    def chat(self, messages: list[dict[str, str]], temperature: float | None = None, top_p: float | None = None,
             max_tokens: int | None = None, seed: int | None = None) -> str:
        """One chat completion (cached, retried); raises TeacherUnavailable when the endpoint fails."""
        payload: dict[str, Any] = {"model": self.model, "messages": messages,
                                   "temperature": self.temperature if temperature is None else temperature,
                                   "max_tokens": max_tokens or self.max_tokens}
        if top_p is not None:
            payload["top_p"] = top_p
        if seed is not None:
            payload["seed"] = seed
        return self._request(payload)

    def solve(self, problem: Problem, backend: str) -> TeacherOutput:
        from training.prompts import extract_code, prompt_messages

        try:
            completion = self.chat(prompt_messages(problem, backend))
        except TeacherUnavailable as exc:
            return TeacherOutput(problem.id, refusal=f"endpoint failed: {exc}"[:300])
        if not extract_code(completion):
            return TeacherOutput(problem.id, refusal="the completion holds no code block")
        return TeacherOutput(problem.id, completion=completion)

    def solve_many(self, problems: list[Problem], backend: str) -> list[TeacherOutput]:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(lambda p: self.solve(p, backend), problems))


class TeacherUnavailable(RuntimeError):
    pass


def make_teacher(name: str, **settings: Any) -> Teacher:
    if name == "template":
        return TemplateTeacher(**settings)
    if name == "openai":
        return OpenAITeacher(**settings)
    raise ValueError(f"unknown teacher {name!r}; available: template, openai")
