"""NNSmith operator graphs -> standalone KernelBench-format reference problems.

NNSmith builds a random, shape-valid operator graph with symbolic shapes; its sizes are solved from a
working-set budget (operators/sizing.py), once at GPU size and once scaled down for the CPU; torch.export
turns each concrete graph (a `SymbolNet`) into an ATen graph; `emit_reference` prints that graph as plain
PyTorch (`Model`, `get_inputs`, `get_init_inputs`) that runs without nnsmith installed.

Structure: a graph is NNSmith's own random mix, or (`balanced`) built around an anchor op of a drawn
family and dropped when that family is not in the exported graph, or (`fused_fraction`) a KernelBench-
level-2-like chain. Its node count (after export) lies in [min_nodes, max_nodes]; its difficulty comes
from measured properties (operators/measures.py), not from the draw.

Every emitted CPU-size source is checked against the NNSmith model it came from, and references that
produce NaN/Inf or are nondeterministic are dropped; the GPU-size source must export to the same ops and
run under fake tensors.
"""

from __future__ import annotations

import functools
import logging
import math
import random
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.fx

from operators.dedup import structure_pattern
from operators.graph import ExportedGraph, dataflow_pattern, export_graph, op_short_name, structural_signature
from operators.measures import difficulty, measure_graph
from schemas.config import ConfigError, SynthesizeConfig
from schemas.records import Problem, Split, content_hash

log = logging.getLogger(__name__)

_NNSMITH_LOGGERS = ("dtest", "mgen", "smt", "core", "exec", "fuzz", "viz", "gen|torch", "gen|tf")


class SynthesisError(RuntimeError):
    pass


class SynthesisConfigError(SynthesisError, ConfigError):
    """A synthesize config the opset cannot satisfy: reported like any config error, in one line."""


@dataclass
class NNSmithSession:
    """NNSmith's model type and operator set, loaded once (it probes every op on first use)."""

    model_type: Any
    opset: list[Any]

    @classmethod
    def open(cls, cache_dir: Path, ops: list[str], dtypes: list[str]) -> "NNSmithSession":
        for name in _NNSMITH_LOGGERS:  # its op probing logs every unsupported dtype as a warning
            logging.getLogger(name).setLevel(logging.ERROR)
        import operators.sizing  # noqa: F401  (z3 first: it must not swallow SIGINT during NNSmith's checks either)

        try:
            with warnings.catch_warnings():  # "install pygraphviz", complex casts while probing ops
                warnings.simplefilter("ignore", UserWarning)
                import nnsmith.narrow_spec as narrow_spec
                from nnsmith.materialize import Model
        except ImportError as exc:  # pragma: no cover - nnsmith is a core dependency
            raise SynthesisError("nnsmith is not installed: pip install nnsmith==0.1.0") from exc
        cache_dir.mkdir(parents=True, exist_ok=True)
        narrow_spec.NNSMITH_CACHE_DIR = str(cache_dir)  # never ~/.cache: the run owns its caches
        model_type = Model.init("torch", backend_target="cpu")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            opset = _probe_opset(narrow_spec, model_type, ops)
        available = {op.__name__ for op in opset}
        if ops:
            unknown = sorted(set(ops) - available)
            if unknown:
                known = _op_names(model_type)
                unsupported = [op for op in unknown if op in known]
                why = f" ({unsupported}: NNSmith's probe found them unsupported here, {PROBES} times)" \
                    if unsupported else ""
                raise SynthesisConfigError(f"synthesize.ops: unknown NNSmith ops {unknown}{why}; available: "
                                           f"{sorted(available)}")
            opset = [op for op in opset if op.__name__ in set(ops)]
        return cls(model_type, opset)


# NNSmith's operators by family, for a balanced mix: each graph draws its family first and is built around an
# anchor op of it. Family names are the exported graph's (operators/graph.py OP_FAMILIES), so "the drawn
# family is present" is checked on what the reference really computes.
NNSMITH_FAMILIES: dict[str, list[str]] = {
    "elementwise-unary": ["Abs", "Atan", "Ceil", "Clip", "Cos", "Floor", "GELU", "LeakyReLU", "Neg", "PReLU",
                          "ReLU", "Round", "Sigmoid", "Sin", "Tan"],
    "elementwise-binary": ["Add", "Div", "Max", "Min", "Mul", "Sub", "And", "Or", "Xor"],
    "comparison": ["Equal", "Greater", "Less"],
    "select": ["Where"],
    "reduction": ["ArgMax", "ArgMin", "ReduceMax", "ReduceMean", "ReduceMin", "TorchReduceSum"],
    "softmax": ["Softmax"],
    "matmul": ["Linear", "PTMatMul"],
    "convolution": ["Conv1d", "NCHWConv2d"],
    "pooling": ["AvgPool2d", "MaxPool2d"],
    "normalization": ["BatchNorm2d"],
    "interpolation": ["BicubicInterp", "BilinearInterp", "LinearInterp", "NearestInterp", "TrilinearInterp"],
    "layout": ["Concat1", "Concat2", "Concat3", "Concat4", "Concat5", "ConstPad", "ExpandLast1", "ExpandLast2",
               "ExpandLast3", "ExpandLast4", "Flatten", "ReflectPad", "ReplicatePad", "Reshape", "Slice",
               "Squeeze", "Transpose", "Tril", "Triu"],
    "cast": ["CastBool", "CastF32", "CastF64", "CastI32", "CastI64"],
}


@dataclass
class FamilyMix:
    family: str
    weight: float
    anchors: list[Any]  # the family's ops in the opset: one of them is the graph's first op
    ops: list[Any]  # every op the rest of the graph may use


def family_opsets(opset: list[Any], weights: dict[str, float]) -> list[FamilyMix]:
    """The balanced mix: each family with ops in `opset` (weight 0 leaves a family out). A graph drawn for
    a family starts from one of its ops and grows with any op of the opset."""
    unknown = sorted(set(weights) - set(NNSMITH_FAMILIES))
    if unknown:
        raise SynthesisConfigError(f"synthesize.family_weights: unknown op families {unknown}; families are "
                             f"{sorted(NNSMITH_FAMILIES)}")
    by_name = {op.__name__: op for op in opset}
    out = []
    for family, names in NNSMITH_FAMILIES.items():
        weight = weights.get(family, 1.0)
        anchors = [by_name[n] for n in names if n in by_name]
        if anchors and weight > 0:
            out.append(FamilyMix(family, weight, anchors, list(opset)))
    return out


PROBES = 8  # NNSmith op probes at most, each with its own seed


def _op_names(model_type) -> set[str]:
    """Every op NNSmith knows for this model type, supported here or not."""
    return {op.__name__ for op in model_type.operators()}


def _probe_opset(narrow_spec, model_type, wanted: list[str] | tuple[str, ...] = ()) -> list[Any]:
    """NNSmith's first-use probe of every op draws random shapes from the global `random` and
    sometimes trips its own sanity checks: probe deterministically, retrying with other seeds. A probe
    that finds a `wanted` op unsupported is not believed at once either (CI once lost Reshape to one):
    its cached result is removed and the probe runs again, up to PROBES times in all."""
    from nnsmith.error import InternalError

    import z3

    known = _op_names(model_type)
    cached = Path(narrow_spec.NNSMITH_CACHE_DIR) / f"{narrow_spec.get_cache_name(model_type, None)}.yaml"
    state = random.getstate()
    # NNSmith's generation sets z3's *global* timeout (a third of its time limit) and leaves it set: a probe in
    # the same process after a generation then fails its small solves under load ("Cannot solve the problem in
    # Reshape", CI on a busy machine). The probe runs without one, and leaves the setting as it found it.
    timeout = z3.get_param("timeout")
    z3.set_param("timeout", 4294967295)
    try:
        opset, last = None, None
        for attempt in range(PROBES):
            random.seed(attempt)
            try:
                opset = narrow_spec.auto_opset(model_type, None)
            except InternalError as exc:
                last = exc
                continue
            if not (set(wanted) & known) - {op.__name__ for op in opset}:
                return opset
            cached.unlink(missing_ok=True)  # probed again, not read back
        if opset is None:
            raise SynthesisError(f"NNSmith could not probe its operator set: {last}")
        return opset
    finally:
        z3.set_param("timeout", timeout)
        random.setstate(state)


# -- building graphs -------------------------------------------------------------------------
# KernelBench level 2's shape: a GEMM or convolution, a bias, activations, then a normalisation, pooling,
# reduction or scaling. Each role lists NNSmith ops; a chain uses the ones the configured opset has.
FUSED_HEADS = ["NCHWConv2d", "Conv1d", "Linear", "PTMatMul"]
FUSED_ACTIVATIONS = ["ReLU", "GELU", "Sigmoid", "LeakyReLU", "Clip", "PReLU", "Tan"]
FUSED_TAILS = ["BatchNorm2d", "MaxPool2d", "AvgPool2d", "ReduceMean", "ReduceMax", "TorchReduceSum", "Softmax", "Mul"]


@functools.cache
def _symbolic_gen_class():
    from nnsmith.graph_gen import SymbolicGen

    class AnchoredGen(SymbolicGen):
        """NNSmith's symbolic generator (every shape a z3 variable) that inserts `anchors` first, in order,
        and then grows the graph with random ops of the opset, forward or backward, as NNSmith does. The
        first input's rank is one the first anchor accepts, so it can always be placed."""

        def __init__(self, opset, seed, anchors, **kwargs):
            self.pending = list(anchors)
            self.anchor_failures = 0
            allowed = kwargs.get("rank_choices") or list(range(0, 7))
            ranks = [r for r in _first_input_ranks(anchors[0]) if r in allowed] if anchors else []
            self._first_rank = random.Random(seed).choice(ranks) if ranks else None
            super().__init__(opset, seed, symbolic_init=True, **kwargs)

        def random_rank(self):
            if self._first_rank is not None:
                rank, self._first_rank = self._first_rank, None
                return rank
            return super().random_rank()

        def try_insert(self):
            if not self.pending:
                return super().try_insert()
            if self.try_insert_node_type(self.pending[0]):
                self.pending.pop(0)
            else:
                self.anchor_failures += 1

        def extra_exit_check(self, max_node_size) -> bool:
            return bool(self.pending) and self.anchor_failures >= 24

    return AnchoredGen


def _first_input_ranks(op_type) -> list[int]:
    """The ranks an op accepts for its first input (read from an instance with placeholder parameters)."""
    import z3

    try:
        n = op_type.num_var_param[0] if isinstance(op_type.num_var_param, list) else op_type.get_num_var_param()
        return sorted(op_type(*[z3.Int(f"_rank_probe{k}") for k in range(n)]).inp_ranks[0])
    except Exception:
        return []


def anchored_graph(session: NNSmithSession, seed: int, config: SynthesizeConfig, anchors: list[Any],
                   nodes: int, opset: list[Any] | None = None):
    """A symbolic NNSmith graph of up to `nodes` ops that starts from `anchors` (none: NNSmith's own mix).
    Returns the generator (its IR and solver are what sizing works on), or raises SynthesisError."""
    from nnsmith.abstract.dtype import DType

    gen = _symbolic_gen_class()(opset or session.opset, seed, anchors, dtype_choices=[DType[d] for d in config.dtypes],
                                max_elem_per_tensor=config.max_tensor_elements)
    gen.abstract_gen(max_node_size=nodes, max_gen_millisec=config.generation_timeout_ms)
    if gen.pending:
        raise SynthesisError(f"anchor: NNSmith could not place {gen.pending[0].__name__}")
    return gen


def fused_chain_graph(session: NNSmithSession, seed: int, config: SynthesizeConfig):
    """A KernelBench-level-2-like chain on one tensor: GEMM/convolution head, an optional bias (a weight
    broadcast along the channel dimension), one or two activations, a tail (normalisation, pooling,
    reduction, softmax or a scale), each op consuming the previous one's output. Uses only ops of the
    configured opset; raises SynthesisError when a role cannot be filled."""
    import z3
    from nnsmith.abstract.dtype import DType
    from nnsmith.gir import InstIR

    rng = random.Random(seed)
    by_name = {op.__name__: op for op in session.opset}
    heads = [by_name[n] for n in FUSED_HEADS if n in by_name]
    if not heads:
        raise SynthesisError("fused: no GEMM or convolution op in synthesize.ops")
    head = rng.choice(heads)
    gemm_rank = rng.choice([2, 3])
    head_rank = {"NCHWConv2d": 4, "Conv1d": 3, "Linear": gemm_rank, "PTMatMul": gemm_rank}[head.__name__]
    gen = _symbolic_gen_class()(session.opset, seed, [], max_elem_per_tensor=config.max_tensor_elements,
                                dtype_choices=[DType.float32], rank_choices=[head_rank])
    first = gen.placeholders[0]
    consts: set[str] = set()

    def new_weight(rank: int, dims: Callable[[list], list] | None = None) -> str:
        ph = gen.make_symbolic_placeholder(rank, dtype=DType.float32)
        inst = gen.insert_init_ph_node(ph)
        for c in gen.tensor_type_constraints(ph.ttype):
            gen.assume(c)
        for c in (dims(ph.ttype.shape) if dims else []):
            gen.assume(c)
        consts.add(inst.retval())
        return inst.retval()

    def append(op_type, extra: list[str] | None = None) -> bool:
        nonlocal tail
        for _ in range(3):
            params = [gen.new_sym(f"op{gen.ir.n_inst()}_{k}") for k in range(op_type.get_num_var_param())]
            op = op_type(*params)
            operands = [tail, *(extra or [])]
            if len(op.inp_ranks) != len(operands) or any(
                    gen.ir.vars[v].ndims not in ranks for v, ranks in zip(operands, op.inp_ranks)):
                return False  # NNSmith checks ranks before it asks an op for its constraints
            if gen.try_forward_insert_at(op, [tail, *(extra or [])]):
                tail = gen.ir.insts[-1].retval()
                return True
        return False

    tail = first
    extra = [new_weight(2)] if head.__name__ == "PTMatMul" else None
    if not append(head, extra):
        raise SynthesisError(f"fused: NNSmith could not place {head.__name__}")
    names = [head.__name__]
    if "Add" in by_name and rng.random() < 0.7:  # bias along the channel dim (NC... for convs, last for GEMMs)
        shape = gen.ir.vars[tail].shape
        channel = 1 if head.__name__ in ("NCHWConv2d", "Conv1d") else len(shape) - 1
        bias = new_weight(len(shape), lambda dims: [d == (shape[i] if i == channel else 1) for i, d in enumerate(dims)])
        if append(by_name["Add"], [bias]):
            names.append("Add")
    activations = [by_name[n] for n in FUSED_ACTIVATIONS if n in by_name]
    for _ in range(rng.choice([1, 1, 2])):
        if activations:
            act = rng.choice(activations)
            if append(act):
                names.append(act.__name__)
    tails = [by_name[n] for n in FUSED_TAILS if n in by_name]
    rng.shuffle(tails)
    for op_type in tails:
        extra = [new_weight(0)] if op_type.__name__ == "Mul" else None  # a learned scale
        if append(op_type, extra):
            names.append(op_type.__name__)
            break
    if gen.check_sat() != z3.sat:
        raise SynthesisError("fused: constraints became unsatisfiable")
    for ph in gen.placeholders:  # the chain's input is the one user input; weights and biases are constants
        inst = gen.ir.find_inst_by_id(InstIR.var_inst_idx(ph)[0])
        inst.iexpr.op = inst.iexpr.op.to_input() if ph == first else inst.iexpr.op.to_const()
    gen.chain = names
    return gen


# -- emitting plain PyTorch ------------------------------------------------------------
def _py(value: Any, names: dict[torch.fx.Node, str]) -> str:
    if isinstance(value, torch.fx.Node):
        return names[value]
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_py(v, names) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
    if isinstance(value, float):
        if math.isinf(value):
            return "float('inf')" if value > 0 else "float('-inf')"
        if math.isnan(value):
            return "float('nan')"
        return repr(value)
    if isinstance(value, torch.dtype):
        return str(value)
    if isinstance(value, torch.device):
        return f"torch.device({str(value)!r})"
    if isinstance(value, (torch.memory_format, torch.layout)):
        return str(value)
    return repr(value)


def _call_text(node: torch.fx.Node, names: dict[torch.fx.Node, str], readable: bool) -> str:
    args = [_py(a, names) for a in node.args]
    args += [f"{k}={_py(v, names)}" for k, v in node.kwargs.items() if k not in ("device", "layout", "pin_memory")]
    short = op_short_name(node.target)
    overload = getattr(node.target, "_overloadname", "default")
    if readable and hasattr(torch, short) and not short.startswith("_") and overload in ("default", "Tensor", "dim_IntList", "dim", "int", "Scalar", "self"):
        return f"torch.{short}({', '.join(args)})"
    return f"torch.ops.aten.{short}.{overload}({', '.join(args)})"


def _integer_range(dtype: torch.dtype) -> tuple[int, int]:
    """randint's [low, high) for integer and bool inputs (bools: 0 or 1)."""
    return (0, 2) if dtype == torch.bool else (-4, 4)


def _random_tensor(shape, dtype: torch.dtype, positive: bool = False) -> str:
    sizes = ", ".join(str(int(s)) for s in shape)
    if dtype.is_floating_point and positive:  # a variance: uniform in [0.5, 1.5)
        return f"(torch.rand({sizes + ', ' if sizes else '(), '}dtype={dtype}) + 0.5)"
    if dtype.is_floating_point:
        return f"torch.randn({sizes + ', ' if sizes else '(), '}dtype={dtype})"
    low, high = _integer_range(dtype)
    return f"torch.randint({low}, {high}, ({sizes}{',' if len(shape) == 1 else ''}), dtype={dtype})"


def emit_reference(graph: ExportedGraph, readable: bool = True, title: str = "") -> str:
    """Print an exported graph as a standalone KernelBench-format source."""
    names: dict[torch.fx.Node, str] = {}
    state = graph.state
    init_lines = []
    # a batch norm's running variance must be positive (a random normal one makes NaNs)
    variances = {n.args[4] for n in graph.compute if len(n.args) > 4 and op_short_name(n.target) in
                 ("_native_batch_norm_legit_no_training", "batch_norm", "native_batch_norm")}
    for i, (node, key) in enumerate(list(graph.parameters.items()) + list(graph.constants.items())):
        tensor = state[key]
        name = f"w{i}"
        names[node] = f"self.{name}"
        make = _random_tensor(tensor.shape, tensor.dtype, positive=node in variances)
        init_lines.append(f"        self.{name} = nn.Parameter({make}, requires_grad=False)" if tensor.is_floating_point()
                          else f"        self.register_buffer({name!r}, {make})")
    input_names = []
    input_makers = []
    for i, node in enumerate(graph.user_inputs):
        names[node] = f"x{i}"
        input_names.append(f"x{i}")
        val = node.meta["val"]
        input_makers.append(_random_tensor(val.shape, val.dtype))
    body = []
    for i, node in enumerate(graph.compute):
        names[node] = f"v{i}"
        body.append(f"        v{i} = {_call_text(node, names, readable)}")
    outs = [_py(o, names) for o in graph.outputs]
    ret = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"
    header = f'"""{title}"""\n' if title else ""
    return (
        f"{header}import torch\nimport torch.nn as nn\n\n\n"
        "class Model(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        + ("\n".join(init_lines) + "\n" if init_lines else "")
        + f"\n    def forward(self, {', '.join(input_names)}):\n"
        + "\n".join(body) + f"\n        return {ret}\n\n\n"
        "def get_inputs():\n"
        f"    return [{', '.join(input_makers)}]\n\n\n"
        "def get_init_inputs():\n"
        "    return []\n"
    )


# -- validation --------------------------------------------------------------------------
def _run_reference(source: str, seed: int) -> list[torch.Tensor]:
    from verifier.reference import load_reference_module, to_list

    module = load_reference_module(source)
    torch.manual_seed(0)
    model = module.Model(*module.get_init_inputs()).eval()
    torch.manual_seed(seed)
    with torch.no_grad():
        return [t.clone() for t in to_list(model(*module.get_inputs()))]


def validate_reference(source: str) -> str | None:
    """None when the reference is usable: runs, finite, deterministic; else why not."""
    try:
        first = _run_reference(source, 1)
        again = _run_reference(source, 1)
        other = _run_reference(source, 2)
    except Exception as exc:
        return f"does not run: {exc!r}"[:300]
    for out in first + other:
        if out.numel() == 0:
            return "has an empty output"
        if (out.is_floating_point() or out.is_complex()) and not torch.isfinite(out).all():
            return "produces NaN/Inf on random inputs"
    if any(not torch.equal(a, b) for a, b in zip(first, again)):
        return "is nondeterministic"
    return None


def _matches_exported(source: str, graph: ExportedGraph) -> bool:
    """The emitted source computes what the exported program computes (same weights, same inputs)."""
    from verifier.reference import load_reference_module, to_list

    try:
        module = load_reference_module(source)
        model = module.Model().eval()
        state = graph.state
        keys = list(graph.parameters.values()) + list(graph.constants.values())
        with torch.no_grad():
            for i, key in enumerate(keys):
                getattr(model, f"w{i}").copy_(state[key])
            inputs = [n.meta["val"] for n in graph.user_inputs]
            torch.manual_seed(3)
            concrete = [torch.randn(v.shape, dtype=v.dtype) if v.is_floating_point()
                        else torch.randint(*_integer_range(v.dtype), tuple(v.shape), dtype=v.dtype) for v in inputs]
            expected = to_list(graph.run_program(concrete))
            got = to_list(model(*concrete))
        return len(expected) == len(got) and all(
            e.shape == g.shape and e.dtype == g.dtype and torch.equal(torch.nan_to_num(e), torch.nan_to_num(g))
            for e, g in zip(expected, got))
    except Exception as exc:
        log.debug("emitted source does not match its export: %r", exc)
        return False


@dataclass
class SynthesisReport:
    attempts: int = 0
    kept: int = 0
    duplicates: int = 0
    rejected: dict[str, int] | None = None
    attempted: dict[str, int] | None = None  # balanced mix: graphs tried for each drawn family
    drawn: dict[str, int] | None = None  # balanced mix: kept problems by the family drawn for them
    present: dict[str, int] | None = None  # ... and of those, how many really contain the drawn family
    absent: dict[str, int] | None = None  # graphs dropped because their drawn family did not survive export
    fused: int = 0  # kept problems that are fused chains
    scale: dict[str, float] | None = None  # kept problems' cpu scale factor: min, median, max

    def reject(self, reason: str) -> None:
        self.rejected = self.rejected or {}
        key = reason.split(":")[0]
        self.rejected[key] = self.rejected.get(key, 0) + 1

    def count(self, name: str, family: str) -> None:
        table = getattr(self, name) or {}
        table[family] = table.get(family, 0) + 1
        setattr(self, name, table)


def _skeleton(graph: ExportedGraph) -> list[str]:
    """Ops and where their tensor operands come from, without any constant: the same graph at two sizes
    has the same skeleton."""
    index = {n: f"in{k}" for k, n in enumerate(graph.user_inputs)}
    index.update({n: "w" for n in list(graph.parameters) + list(graph.constants)})
    out = []
    for k, node in enumerate(graph.compute):
        index[node] = f"v{k}"
        refs = [index.get(a, "?") for a in node.args if isinstance(a, torch.fx.Node)]
        out.append(f"{node.target}({','.join(refs)})")
    return out


def _export_symbolnet(session: NNSmithSession, ir, fake: bool) -> tuple[ExportedGraph, dict[str, torch.Tensor]]:
    """Build NNSmith's SymbolNet for a concrete graph and export it. `fake`: under fake tensors, so a
    GPU-size graph is exported (shapes, dtypes, strides) without allocating its gigabytes."""
    from contextlib import nullcontext

    from torch._subclasses.fake_tensor import FakeTensorMode

    from nnsmith.materialize.torch.symbolnet import SymbolNet

    with FakeTensorMode(allow_non_fake_inputs=True) if fake else nullcontext():
        # SymbolNet itself, not `model_type.from_gir`: its `.to(device)` cannot move fake parameters
        net = SymbolNet(ir) if fake else session.model_type.from_gir(ir).torch_model
        net.debug_numeric = lambda *_: None  # torch.export cannot trace NNSmith's numeric checks
        if fake:
            inputs = {k: torch.empty([int(s) for s in t.shape], dtype=t.dtype.torch())
                      for k, t in net.input_like.items()}
        else:
            inputs = net.get_random_inps()
        return export_graph(net, [], kwargs=inputs), inputs


def _runs_at_full_size(source: str, graph: ExportedGraph) -> str | None:
    """None when the emitted GPU-size reference builds and runs under fake tensors with the exported
    graph's output shapes; else why not. (Its numbers are checked at the CPU size.)"""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from verifier.reference import load_reference_module, to_list

    try:
        module = load_reference_module(source)
        with FakeTensorMode(allow_non_fake_inputs=True), torch.no_grad():
            outs = to_list(module.Model(*module.get_init_inputs()).eval()(*module.get_inputs()))
        expected = [n.meta["val"] for n in graph.outputs if isinstance(n, torch.fx.Node)]
        if [tuple(o.shape) for o in outs] != [tuple(e.shape) for e in expected]:
            return "full size: output shapes differ from the export"
    except Exception as exc:
        return f"full size: does not run: {exc!r}"[:300]
    return None


@dataclass
class _Draw:
    kind: str  # "nnsmith" | "balanced" | "fused"
    family: str | None
    nodes: int
    cuda_bytes: int
    seed: int


def _draw(rng: random.Random, config: SynthesizeConfig, families: list[FamilyMix]) -> tuple[_Draw, FamilyMix | None]:
    seed = rng.getrandbits(31)
    lo, hi = (mb * 2 ** 20 for mb in config.cuda_working_set_mb)
    cuda_bytes = int(math.exp(rng.uniform(math.log(lo), math.log(hi))))
    nodes = rng.randint(config.min_nodes, config.max_nodes)
    if config.fused_fraction > 0 and rng.random() < config.fused_fraction:
        return _Draw("fused", None, nodes, cuda_bytes, seed), None
    if families:
        mix = rng.choices(families, weights=[f.weight for f in families])[0]
        return _Draw("balanced", mix.family, nodes, cuda_bytes, seed), mix
    return _Draw("nnsmith", None, nodes, cuda_bytes, seed), None


def check_config(config: SynthesizeConfig, session: NNSmithSession) -> list[FamilyMix]:
    """What the configured opset allows, or one clear error naming the key that asks for the impossible."""
    families = family_opsets(session.opset, config.family_weights) if config.balanced else []
    if config.balanced and not families:
        raise SynthesisConfigError("synthesize.balanced: no family has ops in synthesize.ops (or all weigh 0)")
    if config.fused_fraction > 0 and not {op.__name__ for op in session.opset} & set(FUSED_HEADS):
        raise SynthesisConfigError(f"synthesize.fused_fraction={config.fused_fraction} needs a GEMM or convolution "
                                   f"op in synthesize.ops (one of {FUSED_HEADS})")
    return families


def synthesize_problems(config: SynthesizeConfig, seed: int, cache_dir: Path,
                        progress: Callable[[int], None] | None = None, backend: str = "cpu",
                        session: NNSmithSession | None = None) -> tuple[list[Problem], SynthesisReport]:
    """Generate `config.num_problems` distinct, validated problems, reproducibly from `seed`.

    Each graph is drawn (kind, family, node count, GPU working set), built by NNSmith with symbolic
    shapes, and sized twice on those shapes (operators/sizing.py): the CPU size (the GPU working set over
    `cpu_scale`), then, growing on from it, the GPU size. The CPU-size graph is exported for real and its
    emitted source checked against NNSmith's model and for NaN/Inf and determinism; the GPU-size graph is
    exported under fake tensors and its source must have the same ops and run under fake tensors.
    `backend` picks which of the two sources becomes the problem's reference: cuda gets the GPU size,
    cpu the scaled-down one with its factor recorded (`Problem.scale`). `session`: one already open for
    `config.ops` and `config.dtypes` (opening one probes every NNSmith op, a second or two)."""
    if config.num_problems == 0:
        return [], SynthesisReport()
    if backend not in ("cpu", "cuda"):
        raise SynthesisError(f"unknown backend {backend!r} (cpu or cuda)")
    from operators.sizing import SizeSolver  # z3 (37 MB) only where problems are synthesized

    session = session or NNSmithSession.open(cache_dir / "nnsmith", config.ops, config.dtypes)
    families = check_config(config, session)
    rng = random.Random(seed)
    report = SynthesisReport()
    problems: list[Problem] = []
    seen_sources: set[str] = set()
    seen_structures: set[str] = set()
    scales: list[float] = []
    budget = config.num_problems * config.max_attempts_per_problem
    while len(problems) < config.num_problems and report.attempts < budget:
        report.attempts += 1
        draw, mix = _draw(rng, config, families)
        if draw.family:
            report.count("attempted", draw.family)
        try:
            if draw.kind == "fused":
                gen = fused_chain_graph(session, draw.seed, config)
            else:
                anchors = [random.Random(draw.seed).choice(mix.anchors)] if mix else []
                gen = anchored_graph(session, draw.seed, config, anchors, draw.nodes)
        except SynthesisError as exc:
            report.reject(str(exc))
            continue
        except Exception as exc:  # NNSmith's own sanity checks
            report.reject(f"generate: {type(exc).__name__}")
            continue
        size_rng = random.Random(draw.seed)
        sizer = SizeSolver(gen, size_rng)
        if sizer.first is None:
            report.reject("size: no small start")
            continue
        cpu_model, cpu_size = sizer.grow(sizer.first, int(draw.cuda_bytes / config.cpu_scale), size_rng,
                                         max_elements=max(1, int(config.max_tensor_elements / config.cpu_scale)))
        cuda_model, cuda_size = sizer.grow(cpu_model, draw.cuda_bytes, size_rng, config.max_tensor_elements)
        if cuda_size.working_set < config.cuda_working_set_mb[0] * 2 ** 20 / 2:
            report.reject("size: cannot reach the cuda working set")
            continue
        if cpu_size.working_set > config.cuda_working_set_mb[1] * 2 ** 20 * 2 / config.cpu_scale:
            report.reject("size: too large at cpu scale")
            continue
        try:
            graph, _ = _export_symbolnet(session, sizer.concrete(cpu_model), fake=False)
            full_graph, _ = _export_symbolnet(session, sizer.concrete(cuda_model), fake=True)
        except Exception as exc:  # NNSmith occasionally builds graphs export cannot take
            report.reject(f"export: {type(exc).__name__}")
            continue
        if not graph.compute:
            report.reject("empty graph")
            continue
        if not config.min_nodes <= len(graph.compute) <= config.max_nodes:
            report.reject("nodes: exported node count out of range")
            continue
        if draw.family and draw.family not in graph.families():
            report.count("absent", draw.family)
            report.reject("family: drawn family absent after export")
            continue
        if _skeleton(graph) != _skeleton(full_graph):
            report.reject("full size: exports to other ops")
            continue
        structure = structural_signature(graph)
        if structure in seen_structures:
            report.duplicates += 1
            continue
        ops = ", ".join(op_short_name(n.target) for n in graph.compute)
        kind = "fused chain" if draw.kind == "fused" else "graph"
        title = f"NNSmith {kind} (seed {draw.seed}): {ops}"
        readable = True
        source = emit_reference(graph, readable=True, title=title)
        if not _matches_exported(source, graph):
            readable = False
            source = emit_reference(graph, readable=False, title=title)
            if not _matches_exported(source, graph):
                report.reject("emit mismatch")
                continue
        full_source = emit_reference(full_graph, readable=readable, title=title)
        reason = validate_reference(source) or _runs_at_full_size(full_source, full_graph)
        if reason:
            report.reject(reason)
            continue
        small, full = measure_graph(graph), measure_graph(full_graph)
        scale = full.total_bytes / max(1, small.total_bytes) if backend == "cpu" else 1.0
        reference = source if backend == "cpu" else full_source
        problem_id = Problem.make_id(reference)
        if problem_id in seen_sources:
            report.duplicates += 1
            continue
        seen_sources.add(problem_id)
        seen_structures.add(structure)
        mine = small if backend == "cpu" else full
        problems.append(Problem(
            id=problem_id, source="nnsmith", reference=reference, op_families=list(mine.families),
            difficulty=difficulty(full), name=f"nnsmith_{'fused_' if draw.kind == 'fused' else ''}{draw.seed}",
            scale=round(scale, 3), cuda_working_set_bytes=full.total_bytes, drawn_family=draw.family,
            measures={**mine.as_record(), "cuda": full.as_record(), "kind": draw.kind},
            pattern=structure_pattern(dataflow_pattern(graph), reference)))
        report.kept += 1
        report.fused += draw.kind == "fused"
        scales.append(scale)
        if draw.family:
            report.count("drawn", draw.family)
            if draw.family in full.families:  # and at GPU size (export was checked at CPU size above)
                report.count("present", draw.family)
        if progress:
            progress(1)
    if len(problems) < config.num_problems:
        raise SynthesisError(f"only {len(problems)} of {config.num_problems} problems after {report.attempts} "
                             f"attempts (rejected: {report.rejected}); widen `synthesize.ops` or raise "
                             "`synthesize.max_attempts_per_problem`")
    if scales:
        ordered = sorted(scales)
        report.scale = {"min": ordered[0], "median": ordered[len(ordered) // 2], "max": ordered[-1]}
    return assign_splits(problems, config.test_fraction, seed), report


def assign_splits(problems: list[Problem], test_fraction: float, seed: int,
                  validation_fraction: float = 0.0) -> list[Problem]:
    """Deterministic train/validation/test split by structure: problems that share a `pattern` (one graph at
    other sizes or names) go to the same split, so no held-out graph is a training graph in disguise. Groups
    are ordered by a hash of their pattern and the seed and dealt to test, then validation, until each holds
    its share of problems (at least one each when asked for and there is a group to spare)."""
    groups: dict[str, list[Problem]] = {}
    for p in problems:
        groups.setdefault(p.pattern or p.id, []).append(p)
    ordered = sorted(groups, key=lambda key: content_hash(key, str(seed)))
    split_of: dict[str, Split] = {}
    taken = 0
    for split, fraction in ((Split.test, test_fraction), (Split.validation, validation_fraction)):
        want = max(1, round(len(problems) * fraction)) if fraction > 0 else 0
        have = 0
        while have < want and len(ordered) - taken > 1:
            split_of[ordered[taken]] = split
            have += len(groups[ordered[taken]])
            taken += 1
    return [p.model_copy(update={"split": split_of.get(p.pattern or p.id, Split.train)}) for p in problems]
