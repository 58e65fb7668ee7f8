"""NNSmith operator graphs -> standalone KernelBench-format reference problems.

NNSmith builds a random, shape-valid operator graph (a `SymbolNet`); torch.export
turns it into an ATen graph; `emit_reference` prints that graph as plain PyTorch
(`Model`, `get_inputs`, `get_init_inputs`) that runs without nnsmith installed.
Every emitted source is checked against the NNSmith model it came from, and
references that produce NaN/Inf or are nondeterministic are dropped.
"""

from __future__ import annotations

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

from operators.graph import ExportedGraph, export_graph, op_short_name, structural_signature
from schemas.config import SynthesizeConfig
from schemas.records import Problem, Split, content_hash

log = logging.getLogger(__name__)

_NNSMITH_LOGGERS = ("dtest", "mgen", "smt", "core", "exec", "fuzz", "viz", "gen|torch", "gen|tf")


class SynthesisError(RuntimeError):
    pass


@dataclass
class NNSmithSession:
    """NNSmith's model type and operator set, loaded once (it probes every op on first use)."""

    model_type: Any
    opset: list[Any]

    @classmethod
    def open(cls, cache_dir: Path, ops: list[str], dtypes: list[str]) -> "NNSmithSession":
        for name in _NNSMITH_LOGGERS:  # its op probing logs every unsupported dtype as a warning
            logging.getLogger(name).setLevel(logging.ERROR)
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
            opset = _probe_opset(narrow_spec, model_type)
        available = {op.__name__ for op in opset}
        if ops:
            unknown = sorted(set(ops) - available)
            if unknown:
                raise SynthesisError(f"unknown NNSmith ops {unknown}; available: {sorted(available)}")
            opset = [op for op in opset if op.__name__ in set(ops)]
        return cls(model_type, opset)


# NNSmith's operators by family, for a balanced mix: each graph draws its family first.
NNSMITH_FAMILIES: dict[str, list[str]] = {
    "elementwise-unary": ["Abs", "Atan", "Ceil", "Clip", "Cos", "Floor", "GELU", "LeakyReLU", "Neg", "PReLU",
                          "ReLU", "Round", "Sigmoid", "Sin", "Tan"],
    "elementwise-binary": ["Add", "Div", "Max", "Min", "Mul", "Sub"],
    "comparison": ["Equal", "Greater", "Less", "And", "Or", "Xor", "Where"],
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
# Graphs need something to connect the drawn family's ops: a few cheap elementwise ops always join.
_GLUE_OPS = ["Add", "Mul", "ReLU"]


def family_opsets(opset: list[Any], weights: dict[str, float]) -> list[tuple[str, float, list[Any]]]:
    """(family, weight, ops) for each family with ops in `opset`; weight 0 leaves a family out."""
    unknown = sorted(set(weights) - set(NNSMITH_FAMILIES))
    if unknown:
        raise SynthesisError(f"unknown op families {unknown}; families are {sorted(NNSMITH_FAMILIES)}")
    by_name = {op.__name__: op for op in opset}
    out = []
    for family, names in NNSMITH_FAMILIES.items():
        weight = weights.get(family, 1.0)
        ops = [by_name[n] for n in names if n in by_name]
        if ops and weight > 0:
            glue = [by_name[n] for n in _GLUE_OPS if n in by_name and n not in names]
            out.append((family, weight, ops + glue))
    return out


def _probe_opset(narrow_spec, model_type) -> list[Any]:
    """NNSmith's first-use probe of every op draws random shapes from the global `random` and
    sometimes trips its own sanity checks: probe deterministically, retrying with other seeds."""
    from nnsmith.error import InternalError

    state = random.getstate()
    try:
        for attempt in range(8):
            random.seed(attempt)
            try:
                return narrow_spec.auto_opset(model_type, None)
            except InternalError as exc:
                last = exc
        raise SynthesisError(f"NNSmith could not probe its operator set: {last}")
    finally:
        random.setstate(state)


def nnsmith_graph(session: NNSmithSession, seed: int, config: SynthesizeConfig,
                  opset: list[Any] | None = None) -> tuple[torch.nn.Module, dict[str, torch.Tensor]]:
    """One random NNSmith model (a SymbolNet) and inputs that satisfy its constraints."""
    from nnsmith.abstract.dtype import DType
    from nnsmith.graph_gen import model_gen

    dtype_choices = [DType[d] for d in config.dtypes]
    gen = model_gen(opset=opset or session.opset, method="symbolic-cinit", seed=seed, max_nodes=config.max_nodes,
                    max_elem_per_tensor=config.max_elements, timeout_ms=config.generation_timeout_ms,
                    dtype_choices=dtype_choices)
    ir = gen.make_concrete()
    model = session.model_type.from_gir(ir)
    net = model.torch_model
    net.debug_numeric = lambda *_: None  # torch.export cannot trace NNSmith's numeric checks
    torch.manual_seed(seed)
    inputs = net.get_random_inps()
    return net, inputs


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


def _random_tensor(shape, dtype: torch.dtype) -> str:
    sizes = ", ".join(str(int(s)) for s in shape)
    if dtype.is_floating_point:
        return f"torch.randn({sizes + ', ' if sizes else '(), '}dtype={dtype})"
    return f"torch.randint(-4, 4, ({sizes}{',' if len(shape) == 1 else ''}), dtype={dtype})"


def emit_reference(graph: ExportedGraph, readable: bool = True, title: str = "") -> str:
    """Print an exported graph as a standalone KernelBench-format source."""
    names: dict[torch.fx.Node, str] = {}
    state = graph.state
    init_lines = []
    for i, (node, key) in enumerate(list(graph.parameters.items()) + list(graph.constants.items())):
        tensor = state[key]
        name = f"w{i}"
        names[node] = f"self.{name}"
        make = _random_tensor(tensor.shape, tensor.dtype)
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
                        else torch.randint(-4, 4, tuple(v.shape), dtype=v.dtype) for v in inputs]
            expected = to_list(graph.run_program(concrete))
            got = to_list(model(*concrete))
        return len(expected) == len(got) and all(
            e.shape == g.shape and e.dtype == g.dtype and torch.equal(torch.nan_to_num(e), torch.nan_to_num(g))
            for e, g in zip(expected, got))
    except Exception as exc:
        log.debug("emitted source does not match its export: %r", exc)
        return False


def difficulty(graph: ExportedGraph) -> int:
    """Level 1..3 from node count and op kinds (KernelBench-like: single ops, fusions, harder ops)."""
    families = set(graph.families())
    hard = families & {"reduction", "softmax", "matmul", "convolution", "pooling", "normalization", "interpolation"}
    n = len(graph.compute)
    return 1 + int(n >= 3 or bool(hard)) + int(n >= 3 and bool(hard))


@dataclass
class SynthesisReport:
    attempts: int = 0
    kept: int = 0
    duplicates: int = 0
    rejected: dict[str, int] | None = None
    drawn: dict[str, int] | None = None  # balanced mix: kept problems by the family drawn for them

    def reject(self, reason: str) -> None:
        self.rejected = self.rejected or {}
        key = reason.split(":")[0]
        self.rejected[key] = self.rejected.get(key, 0) + 1


def synthesize_problems(config: SynthesizeConfig, seed: int, cache_dir: Path,
                        progress: Callable[[int], None] | None = None) -> tuple[list[Problem], SynthesisReport]:
    """Generate `config.num_problems` distinct, validated problems, reproducibly from `seed`."""
    if config.num_problems == 0:
        return [], SynthesisReport()
    session = NNSmithSession.open(cache_dir / "nnsmith", config.ops, config.dtypes)
    rng = random.Random(seed)
    report = SynthesisReport()
    problems: list[Problem] = []
    seen_sources: set[str] = set()
    seen_structures: set[str] = set()
    budget = config.num_problems * config.max_attempts_per_problem
    families = family_opsets(session.opset, config.family_weights) if config.balanced else []
    while len(problems) < config.num_problems and report.attempts < budget:
        report.attempts += 1
        graph_seed = rng.getrandbits(31)
        opset, family = None, None
        if families:  # balanced mix: draw the family, then build the graph from its ops
            family, _, opset = rng.choices(families, weights=[w for _, w, _ in families])[0]
        try:
            net, inputs = nnsmith_graph(session, graph_seed, config, opset)
            graph = export_graph(net, [], kwargs=inputs)
        except Exception as exc:  # NNSmith occasionally builds graphs export cannot take
            report.reject(f"export: {type(exc).__name__}")
            continue
        if not graph.compute:
            report.reject("empty graph")
            continue
        structure = structural_signature(graph)
        if structure in seen_structures:
            report.duplicates += 1
            continue
        title = f"NNSmith graph (seed {graph_seed}): {', '.join(op_short_name(n.target) for n in graph.compute)}"
        source = emit_reference(graph, readable=True, title=title)
        if not _matches_exported(source, graph):
            source = emit_reference(graph, readable=False, title=title)
            if not _matches_exported(source, graph):
                report.reject("emit mismatch")
                continue
        problem_id = Problem.make_id(source)
        if problem_id in seen_sources:
            report.duplicates += 1
            continue
        reason = validate_reference(source)
        if reason:
            report.reject(reason)
            continue
        seen_sources.add(problem_id)
        seen_structures.add(structure)
        problems.append(Problem(id=problem_id, source="nnsmith", reference=source, op_families=graph.families(),
                                difficulty=difficulty(graph), name=f"nnsmith_{graph_seed}"))
        report.kept += 1
        if family:
            report.drawn = report.drawn or {}
            report.drawn[family] = report.drawn.get(family, 0) + 1
        if progress:
            progress(1)
    if len(problems) < config.num_problems:
        raise SynthesisError(f"only {len(problems)} of {config.num_problems} problems after {report.attempts} "
                             f"attempts (rejected: {report.rejected}); widen `synthesize.ops` or raise "
                             "`synthesize.max_attempts_per_problem`")
    return assign_splits(problems, config.test_fraction, seed), report


def assign_splits(problems: list[Problem], test_fraction: float, seed: int) -> list[Problem]:
    """Deterministic train/test split by id hash, with at least one test problem when asked for."""
    ordered = sorted(problems, key=lambda p: content_hash(p.id, str(seed)))
    n_test = max(1, round(len(problems) * test_fraction)) if test_fraction > 0 and len(problems) > 1 else 0
    test_ids = {p.id for p in ordered[:n_test]}
    return [p.model_copy(update={"split": Split.test if p.id in test_ids else Split.train}) for p in problems]

