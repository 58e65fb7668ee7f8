"""Measured properties of a reference graph: size, work, and what bounds a good kernel.

Everything here reads an `ExportedGraph` (torch.export, possibly under fake tensors), so a synthesized
problem, an imported KernelBench file and a GPU-size graph that was never allocated are measured alike.

- `largest_elements`: the most elements of any value (input, weight, intermediate or output).
- `total_bytes`: bytes of the inputs, weights and outputs. This is the traffic a perfectly fused kernel
  cannot avoid (each is read or written once), so it is the working set synthesis sizes problems by,
  and the denominator of the arithmetic intensity.
- `flops`: floating-point operations, GEMM/convolution/attention by their formulas (2 per multiply-add),
  other ops by a small per-element cost (see `_elementwise_cost`). An estimate for ranking problems,
  not a profiler.
- `intensity = flops / total_bytes` against a ridge point decides compute- vs memory-bound.

`difficulty` turns these into KernelBench's three levels. Pure functions; no tracking imports.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.fx

from operators.graph import ExportedGraph, op_family, op_short_name

# The roofline ridge point of an H200 for fp32 on its CUDA cores: ~67 TFLOP/s over ~4.8 TB/s of HBM3e.
# A fully fused kernel of a graph below this many FLOPs per byte is limited by memory, above it by compute.
RIDGE_FLOPS_PER_BYTE = 14.0

# Families whose kernels need more than a per-element map: tiling, cross-thread reductions, windows.
HARD_FAMILIES = frozenset({"reduction", "softmax", "matmul", "convolution", "pooling", "normalization",
                           "interpolation", "attention", "recurrent", "scan", "loss"})
# Families that compute nothing (views, copies, casts): they do not make a graph harder to write.
FREE_FAMILIES = frozenset({"layout", "cast"})


@dataclass(frozen=True)
class GraphMeasures:
    nodes: int  # compute nodes of the exported graph
    families: tuple[str, ...] = ()
    largest_elements: int = 0
    total_bytes: int = 0  # inputs + weights + outputs
    flops: int = 0
    input_bytes: int = 0
    weight_bytes: int = 0
    output_bytes: int = 0
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def intensity(self) -> float:
        """FLOPs per byte of unavoidable traffic."""
        return self.flops / max(1, self.total_bytes)

    @property
    def compute_bound(self) -> bool:
        return self.intensity >= RIDGE_FLOPS_PER_BYTE

    @property
    def hard_families(self) -> tuple[str, ...]:
        return tuple(f for f in self.families if f in HARD_FAMILIES)

    def as_record(self) -> dict[str, Any]:
        """Plain data for `Problem.measures` (JSON in the warehouse)."""
        out = asdict(self)
        out.pop("extra")
        out["families"] = list(self.families)
        out["intensity"] = round(self.intensity, 4)
        out["compute_bound"] = self.compute_bound
        return out


def _nbytes(value: Any) -> int:
    return int(value.numel()) * value.element_size() if isinstance(value, torch.Tensor) else 0


def _val(arg: Any) -> Any:
    return arg.meta.get("val") if isinstance(arg, torch.fx.Node) else arg


def _numel(value: Any) -> int:
    if isinstance(value, torch.Tensor):
        return int(value.numel())
    if isinstance(value, (list, tuple)):
        return sum(_numel(v) for v in value)
    return 0


def _elementwise_cost(family: str, name: str) -> float:
    """FLOPs per element of the op's largest operand, for ops without a GEMM-like formula."""
    if family in FREE_FAMILIES or family == "other" and name in ("clone", "alias", "detach", "copy", "lift_fresh_copy"):
        return 0.0
    if family in ("softmax", "normalization"):
        return 5.0  # max/mean, subtract, exp or square, sum, scale
    if family == "interpolation":
        return 8.0
    if name in ("gelu", "tanh", "sigmoid", "silu", "elu", "selu", "softplus", "mish", "erf", "exp", "log"):
        return 4.0
    return 1.0


def node_flops(node: torch.fx.Node) -> int:
    """FLOPs of one exported node (2 per multiply-add for GEMMs and convolutions)."""
    name = op_short_name(node.target)
    args = [_val(a) for a in node.args]
    out = node.meta.get("val")
    out_numel = _numel(out)
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if name in ("mm", "bmm", "matmul", "linear", "addmm", "baddbmm", "addbmm", "addmv", "mv", "dot", "vdot"):
        a, b = (tensors[1], tensors[2]) if name.startswith("add") or name == "baddbmm" else (tensors[0], tensors[1])
        k = int(a.shape[-1]) if a.dim() else 1
        return 2 * out_numel * k + (out_numel if name.startswith("add") or name == "baddbmm" else 0)
    if name in ("convolution", "_convolution", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                "conv_transpose2d", "conv_transpose3d"):
        x, w = tensors[0], tensors[1]
        transposed = name.startswith("conv_transpose") or (name in ("convolution", "_convolution") and bool(args[6]))
        # weight [out, in/groups, *kernel]: each output takes in/groups x kernel multiply-adds; transposed
        # weight [in, out/groups, *kernel]: each input element scatters into out/groups x kernel outputs
        per = math.prod(int(s) for s in w.shape[1:])
        return 2 * (int(x.numel()) if transposed else out_numel) * per
    if name in ("scaled_dot_product_attention", "_scaled_dot_product_flash_attention",
                "_scaled_dot_product_efficient_attention"):
        q, k = tensors[0], tensors[1]
        return 4 * int(q.numel()) * int(k.shape[-2])
    if name in ("lstm", "gru", "rnn_tanh", "rnn_relu") and tensors:
        # x [seq, batch, in] (or batch-first); weights come as a flat list: 2 * sum(weight numel) per step
        x = tensors[0]
        weights = [w for a in node.args if isinstance(a, (list, tuple)) for w in (_val(v) for v in a)
                   if isinstance(w, torch.Tensor) and w.dim() == 2]
        steps = int(x.numel()) // max(1, int(x.shape[-1]))
        return 2 * steps * sum(int(w.numel()) for w in weights)
    family = op_family(node.target)
    if family == "pooling" and len(args) > 1 and isinstance(args[1], (list, tuple)):
        return out_numel * math.prod(int(k) for k in args[1])
    biggest = max([out_numel] + [int(t.numel()) for t in tensors])
    return int(biggest * _elementwise_cost(family, name))


def measure_graph(graph: ExportedGraph) -> GraphMeasures:
    """Size, work and families of an exported graph (real or fake tensors alike)."""
    values = [n.meta.get("val") for n in list(graph.user_inputs) + list(graph.parameters) + list(graph.constants)
              + list(graph.compute)]
    largest = max([_numel(v) if isinstance(v, torch.Tensor) else 0 for v in values] + [0])
    inputs = sum(_nbytes(n.meta.get("val")) for n in graph.user_inputs)
    weights = sum(_nbytes(n.meta.get("val")) for n in list(graph.parameters) + list(graph.constants))
    seen, outputs = set(), 0
    for out in graph.outputs:
        if isinstance(out, torch.fx.Node) and out not in seen:
            seen.add(out)
            outputs += _nbytes(out.meta.get("val"))
    flops = sum(node_flops(n) for n in graph.compute)
    families = tuple(f for f in graph.families() if f != "other") or tuple(graph.families())
    return GraphMeasures(nodes=len(graph.compute), families=families, largest_elements=largest,
                         total_bytes=inputs + weights + outputs, flops=int(flops), input_bytes=inputs,
                         weight_bytes=weights, output_bytes=outputs)


def difficulty_points(m: GraphMeasures) -> float:
    """A score that grows with every measured property (never falls when one grows, the others fixed):

    - 1 per compute node beyond the first (up to 9): more to fuse;
    - 1 per op family beyond the first, not counting views and casts: more kinds of loops in one kernel;
    - 2 per hard family (reduction, softmax, GEMM, convolution, pooling, normalization, ...): tiling,
      cross-thread reductions, windows;
    - up to 2 for arithmetic intensity, on a log scale from 1 FLOP/byte to the ridge point: the full 2 when
      compute-bound (beating eager there means beating cuBLAS/cuDNN-class code), less for memory-bound
      graphs, where a good kernel mostly has to stream bytes once."""
    real = [f for f in m.families if f not in FREE_FAMILIES]
    points = min(max(m.nodes - 1, 0), 9) + max(len(real) - 1, 0) + 2 * len(m.hard_families)
    return points + 2 * min(1.0, max(0.0, math.log(max(m.intensity, 1.0)) / math.log(RIDGE_FLOPS_PER_BYTE)))


# Level thresholds on the points (KernelBench's levels): a lone op, even a GEMM or a convolution (4 points),
# or a short elementwise chain is level 1; a fused chain (conv/GEMM + bias + activation + norm/pool, 8-12
# points) or a long elementwise one is level 2; long graphs mixing several hard families are level 3.
LEVEL_2_POINTS = 5.0
LEVEL_3_POINTS = 14.0


def difficulty(m: GraphMeasures) -> int:
    """KernelBench-like level 1..3 from measured properties (monotone in each of them)."""
    points = difficulty_points(m)
    return 1 + int(points >= LEVEL_2_POINTS) + int(points >= LEVEL_3_POINTS)


KERNELBENCH_REFERENCE = Path(__file__).with_name("kernelbench_sizes.json")


def kernelbench_reference(levels: tuple[int, ...] = (1, 2, 3)) -> list[dict[str, Any]]:
    """KernelBench's measures, one record per problem (`GraphMeasures.as_record()` plus name and level),
    as `benchmarks/problem_stats.py --write-kernelbench-reference` stored them; [] when the file is absent."""
    if not KERNELBENCH_REFERENCE.exists():
        return []
    rows = json.loads(KERNELBENCH_REFERENCE.read_text())["problems"]
    return [r for r in rows if "error" not in r and r.get("level") in levels]
