"""torch.export views of a KernelBench-format reference: the one graph every stage reads.

The synthesis emitter, the shape-hint extractor and the template teacher all work
on the same `ExportedGraph`, so what the prompt says about a problem, what the
teacher writes for it and what the reference computes cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

from schemas.records import TensorHint, content_hash

# Ops torch.export inserts that compute nothing.
NOOP_TARGETS = {"aten::_assert_tensor_metadata", "aten::_assert_scalar", "aten::sym_constrain_range_for_size"}

OP_FAMILIES: dict[str, str] = {}
for _name in ("abs neg relu sigmoid sin cos tan atan exp log sqrt rsqrt tanh floor ceil round gelu "
              "leaky_relu hardtanh clamp clip silu elu erf reciprocal sign logical_not bitwise_not").split():
    OP_FAMILIES[_name] = "elementwise-unary"
for _name in "add sub mul div maximum minimum pow fmod remainder atan2 logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor".split():
    OP_FAMILIES[_name] = "elementwise-binary"
for _name in "gt lt ge le eq ne".split():
    OP_FAMILIES[_name] = "comparison"
for _name in "where".split():
    OP_FAMILIES[_name] = "select"
for _name in "sum mean amax amin max min prod argmax argmin".split():
    OP_FAMILIES[_name] = "reduction"
for _name in "softmax _softmax log_softmax _log_softmax".split():
    OP_FAMILIES[_name] = "softmax"
for _name in "mm bmm matmul addmm linear".split():
    OP_FAMILIES[_name] = "matmul"
for _name in "convolution conv1d conv2d conv3d _convolution".split():
    OP_FAMILIES[_name] = "convolution"
for _name in "avg_pool2d max_pool2d max_pool2d_with_indices adaptive_avg_pool2d".split():
    OP_FAMILIES[_name] = "pooling"
for _name in "cat concat stack pad constant_pad_nd reflection_pad2d replication_pad2d slice select expand permute transpose view reshape squeeze unsqueeze flatten tril triu".split():
    OP_FAMILIES[_name] = "layout"
for _name in "to _to_copy".split():
    OP_FAMILIES[_name] = "cast"
for _name in "batch_norm _native_batch_norm_legit_no_training native_batch_norm layer_norm native_layer_norm group_norm".split():
    OP_FAMILIES[_name] = "normalization"
for _name in "upsample_nearest2d upsample_bilinear2d upsample_bicubic2d upsample_linear1d upsample_trilinear3d upsample_nearest1d".split():
    OP_FAMILIES[_name] = "interpolation"
# Ops KernelBench's references export to (measured by benchmarks/problem_stats.py), beyond NNSmith's set.
for _names, _family in (
        ("mish hardswish hardsigmoid softplus softsign selu dropout", "elementwise-unary"),
        ("rsub multiply", "elementwise-binary"),
        ("conv_transpose1d conv_transpose2d conv_transpose3d", "convolution"),
        ("max_pool1d max_pool3d avg_pool1d avg_pool3d adaptive_avg_pool1d adaptive_avg_pool3d adaptive_max_pool2d",
         "pooling"),
        ("logsumexp linalg_vector_norm norm std var", "reduction"),
        ("instance_norm rms_norm", "normalization"),
        ("cumsum cumprod", "scan"),
        ("einsum baddbmm", "matmul"),
        ("scaled_dot_product_attention", "attention"),
        ("smooth_l1_loss kl_div cross_entropy_loss mse_loss triplet_margin_loss hinge_embedding_loss", "loss"),
        ("getitem numpy_T flip narrow broadcast_tensors clone detach detach_ lift_fresh_copy zeros_like alias",
         "layout")):
    for _name in _names.split():
        OP_FAMILIES.setdefault(_name, _family)


def op_short_name(target: Any) -> str:
    """`aten.add.Tensor` -> `add`."""
    schema_name = getattr(getattr(target, "_schema", None), "name", None)
    if schema_name:
        return schema_name.split("::", 1)[-1]
    return getattr(target, "__name__", str(target))


def op_family(target: Any) -> str:
    name = op_short_name(target)
    if name in ("max", "min") and getattr(target, "_overloadname", "") == "other":
        return "elementwise-binary"  # torch.max(a, b) is aten.max.other: elementwise, not a reduction
    return OP_FAMILIES.get(name, "other")


@dataclass
class ExportedGraph:
    """A reference exported by torch.export, with its inputs, parameters and nodes in order."""

    program: torch.export.ExportedProgram
    user_inputs: list[torch.fx.Node] = field(default_factory=list)
    parameters: dict[torch.fx.Node, str] = field(default_factory=dict)  # placeholder -> state-dict key
    constants: dict[torch.fx.Node, str] = field(default_factory=dict)
    compute: list[torch.fx.Node] = field(default_factory=list)
    outputs: list[Any] = field(default_factory=list)
    kwarg_names: list[str] = field(default_factory=list)  # when exported with keyword inputs

    def run_program(self, inputs: list[Any]) -> Any:
        """Run the exported program on positional user inputs (in `user_inputs` order)."""
        module = self.program.module()
        if self.kwarg_names:
            return module(**dict(zip(self.kwarg_names, inputs)))
        return module(*inputs)

    @property
    def state(self) -> dict[str, torch.Tensor]:
        return {**self.program.state_dict, **self.program.constants}

    def families(self) -> list[str]:
        return sorted({op_family(n.target) for n in self.compute})


def export_graph(model: torch.nn.Module, inputs: list[Any], kwargs: dict[str, Any] | None = None) -> ExportedGraph:
    from torch.export.graph_signature import InputKind

    with torch.no_grad():
        program = torch.export.export(model.eval(), tuple(inputs), kwargs=kwargs or None, strict=False)
    kinds = {spec.arg.name: spec for spec in program.graph_signature.input_specs}
    graph = ExportedGraph(program, kwarg_names=list(kwargs or {}))
    for node in program.graph.nodes:
        if node.op == "placeholder":
            spec = kinds[node.name]
            if spec.kind == InputKind.USER_INPUT:
                graph.user_inputs.append(node)
            elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
                graph.parameters[node] = spec.target
            else:
                graph.constants[node] = spec.target
        elif node.op == "call_function":
            name = getattr(getattr(node.target, "_schema", None), "name", "")
            if name not in NOOP_TARGETS:
                graph.compute.append(node)
        elif node.op == "output":
            outs = node.args[0]
            graph.outputs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    return graph


def export_reference(module) -> ExportedGraph:
    """Export a loaded KernelBench-format reference module (`Model`, `get_inputs`, `get_init_inputs`)
    with fake tensors: shapes, dtypes and strides without allocating (KernelBench inputs reach GBs)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode(allow_non_fake_inputs=True):
        torch.manual_seed(0)
        model = module.Model(*module.get_init_inputs())
        inputs = module.get_inputs()
        return export_graph(model, inputs)


def tensor_hint(node: torch.fx.Node, op: str) -> TensorHint | None:
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor):
        return None
    return TensorHint(
        name=node.name,
        op=op,
        shape=[int(s) for s in val.shape],
        dtype=str(val.dtype).replace("torch.", ""),
        stride=[int(s) for s in val.stride()],
        contiguous=bool(val.is_contiguous()),
    )


def graph_hints(graph: ExportedGraph) -> list[TensorHint]:
    """Per-node shape, dtype, stride and contiguity, in execution order."""
    hints: list[TensorHint] = []
    for node in graph.user_inputs:
        if (h := tensor_hint(node, "input")) is not None:
            hints.append(h)
    for node in graph.parameters:
        if (h := tensor_hint(node, "parameter")) is not None:
            hints.append(h)
    for node in graph.compute:
        if (h := tensor_hint(node, f"aten.{op_short_name(node.target)}")) is not None:
            hints.append(h)
    return hints


def structural_signature(graph: ExportedGraph) -> str:
    """Ops and shapes, ignoring names and weights: two problems with equal signatures are duplicates. Which
    values are returned is part of it (an LSTM returning h and one returning c are different problems)."""
    parts = []
    for node in graph.user_inputs:
        val = node.meta["val"]  # a scalar input (KernelBench's `A * s`) is a plain number
        parts.append(f"in:{list(val.shape)}:{val.dtype}" if isinstance(val, torch.Tensor) else f"in:{type(val).__name__}")
    for node in graph.compute:
        val = node.meta.get("val")
        shape = list(val.shape) if isinstance(val, torch.Tensor) else None
        parts.append(f"{node.target}:{shape}")
    parts.append(f"out:{_dataflow(graph)[1]}")
    return content_hash(*parts)


def dataflow_pattern(graph: ExportedGraph) -> str:
    """What the program computes, whatever its names and sizes: each op with where its operands come from
    (an input, a parameter, a constant, an earlier op) and the arguments that are not sizes, and which values
    it returns. A renamed-and-resized copy of a problem has the same pattern."""
    nodes, outputs = _dataflow(graph)
    return content_hash(*nodes, f"out:{outputs}")


_SIZE_LIKE = 8  # integer arguments this large (or lists holding one) are sizes, not semantics (dims, strides, ...)


def _dataflow(graph: ExportedGraph) -> tuple[list[str], str]:
    ref: dict[torch.fx.Node, str] = {}
    for k, node in enumerate(graph.user_inputs):
        ref[node] = f"in{k}"
    for node in graph.parameters:
        ref[node] = "param"
    for node in graph.constants:
        ref[node] = "const"

    def arg(a) -> str:
        if isinstance(a, torch.fx.Node):
            return ref.get(a, "?")
        if isinstance(a, (list, tuple)):
            parts = [arg(x) for x in a]
            return "N" if "N" in parts else "[" + ",".join(parts) + "]"
        if isinstance(a, bool) or a is None:
            return str(a)
        if isinstance(a, int):
            return "N" if abs(a) >= _SIZE_LIKE else str(a)
        if isinstance(a, float):
            return f"{a:.4g}"
        return type(a).__name__

    nodes = []
    for k, node in enumerate(graph.compute):
        ref[node] = f"v{k}"
        kwargs = ",".join(f"{key}={arg(v)}" for key, v in sorted(node.kwargs.items()))
        nodes.append(f"{op_short_name(node.target)}({','.join(arg(a) for a in node.args)};{kwargs})")
    return nodes, ",".join(arg(o) for o in graph.outputs)


def analyse_source(source: str, name: str = "reference") -> dict[str, Any]:
    """What the stages need to know about a reference, from torch.export under fake tensors: its structural
    signature, shape hints, op families, and the bytes its inputs, outputs and weights take when it really runs.
    Plain data (it crosses from a sandbox when the reference is untrusted)."""
    from verifier.reference import load_reference_module

    graph = export_reference(load_reference_module(source, name))
    nbytes = lambda vals: sum(int(v.numel()) * v.element_size() for v in vals if isinstance(v, torch.Tensor))
    return {"signature": structural_signature(graph), "pattern": dataflow_pattern(graph),
            "hints": [h.model_dump() for h in graph_hints(graph)],
            "families": graph.families(),
            "input_bytes": nbytes(n.meta.get("val") for n in graph.user_inputs),
            "output_bytes": nbytes(n.meta.get("val") for n in graph.outputs if isinstance(n, torch.fx.Node)),
            # parameters, buffers and constants: KernelBench level 2's Linear(32768, 32768) is 4 GB of weights
            # beside 16 MB of inputs
            "weight_bytes": nbytes(n.meta.get("val") for n in [*graph.parameters, *graph.constants])}
