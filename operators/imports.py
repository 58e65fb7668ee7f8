"""Problems from outside NNSmith, and problem/SFT sets out to Hugging Face datasets.

- KernelBench checkouts: every `level<N>/*.py` is a KernelBench-format problem (level = N).
- Hugging Face datasets of PyTorch modules (a CUDA-Agent-Ops-style set: one column of code holding
  `Model`, `get_inputs`, `get_init_inputs`), from a `save_to_disk` folder, parquet/json files, or a name.
- Exports: any list of problems or SFT rows to `save_to_disk` and parquet.

Sources are parsed, not executed: KernelBench inputs reach gigabytes, and shape hints come from
torch.export under fake tensors (operators/graph.py).
"""

from __future__ import annotations

import ast
import operator
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from operators.graph import OP_FAMILIES
from schemas.records import Problem

REQUIRED = ("Model", "get_inputs", "get_init_inputs")
# nn module classes -> op family (module calls do not show up as torch.* functions)
MODULE_FAMILIES = {
    "Linear": "matmul", "Bilinear": "matmul", "Conv1d": "convolution", "Conv2d": "convolution",
    "Conv3d": "convolution", "ConvTranspose1d": "convolution", "ConvTranspose2d": "convolution",
    "ConvTranspose3d": "convolution", "BatchNorm1d": "normalization", "BatchNorm2d": "normalization",
    "BatchNorm3d": "normalization", "LayerNorm": "normalization", "GroupNorm": "normalization",
    "InstanceNorm1d": "normalization", "InstanceNorm2d": "normalization", "InstanceNorm3d": "normalization",
    "RMSNorm": "normalization", "MaxPool1d": "pooling", "MaxPool2d": "pooling", "MaxPool3d": "pooling",
    "AvgPool1d": "pooling", "AvgPool2d": "pooling", "AvgPool3d": "pooling", "AdaptiveAvgPool2d": "pooling",
    "ReLU": "elementwise-unary", "GELU": "elementwise-unary", "Sigmoid": "elementwise-unary",
    "Tanh": "elementwise-unary", "SiLU": "elementwise-unary", "Softmax": "softmax", "LogSoftmax": "softmax",
    "Dropout": "elementwise-unary", "LeakyReLU": "elementwise-unary", "Hardtanh": "elementwise-unary",
    "ELU": "elementwise-unary", "SELU": "elementwise-unary", "Mish": "elementwise-unary",
    "Hardswish": "elementwise-unary", "Hardsigmoid": "elementwise-unary", "Softplus": "elementwise-unary",
    "PReLU": "elementwise-unary", "Embedding": "gather", "MultiheadAttention": "attention", "LSTM": "recurrent",
    "GRU": "recurrent", "RNN": "recurrent", "Transformer": "attention", "TransformerEncoderLayer": "attention",
}
EXTRA_FAMILIES = {"scaled_dot_product_attention": "attention", "cumsum": "scan", "cumprod": "scan",
                  "cross_entropy": "loss", "mse_loss": "loss", "kl_div": "loss", "smooth_l1_loss": "loss",
                  "triplet_margin_loss": "loss", "hinge_embedding_loss": "loss", "argmax": "reduction",
                  "argmin": "reduction", "norm": "reduction", "einsum": "matmul", "bmm": "matmul",
                  "diag": "layout", "log_softmax": "softmax", "selu": "elementwise-unary", "elu": "elementwise-unary",
                  "softplus": "elementwise-unary", "softsign": "elementwise-unary", "hardsigmoid": "elementwise-unary"}


class ImportErrorReport(ValueError):
    pass


def ast_families(source: str) -> list[str]:
    """Op families from what the source calls (torch.*/F.* functions and nn modules), without running it."""
    tree = ast.parse(source)
    families: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if not name:
                continue
            if name in MODULE_FAMILIES:
                families.add(MODULE_FAMILIES[name])
            elif name in EXTRA_FAMILIES:
                families.add(EXTRA_FAMILIES[name])
            elif name in OP_FAMILIES:
                families.add(OP_FAMILIES[name])
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            families.add("matmul")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)) \
                and _inside_forward(tree, node):
            families.add("elementwise-binary")
    return sorted(families)


def _inside_forward(tree: ast.Module, target: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "forward" and any(n is target for n in ast.walk(node)):
            return True
    return False


def check_kernelbench_format(source: str) -> str | None:
    """None when the source parses and defines Model, get_inputs, get_init_inputs at top level; else why not."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return f"does not parse: {exc.msg} (line {exc.lineno})"
    defined = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    missing = [n for n in REQUIRED if n not in defined]
    return f"lacks {', '.join(missing)}" if missing else None


MIN_SCALED_SIZE = 8  # a size is halved only while it stays at least this (kernel sizes, small channel counts stay)


_SIZE_ARITHMETIC = {ast.Mult: operator.mul, ast.Add: operator.add, ast.Sub: operator.sub,
                    ast.FloorDiv: operator.floordiv, ast.LShift: operator.lshift}


def _int_value(node: ast.expr) -> int | None:
    """The value of an int literal or of arithmetic on int literals (`256 * 8`, `1 << 20`: KernelBench writes
    its larger sizes so), computed here without running anything; None for anything else."""
    if isinstance(node, ast.Constant):
        return node.value if type(node.value) is int else None
    if isinstance(node, ast.BinOp) and type(node.op) in _SIZE_ARITHMETIC:
        left, right = _int_value(node.left), _int_value(node.right)
        if left is None or right is None or (isinstance(node.op, ast.LShift) and not 0 <= right <= 62) \
                or (isinstance(node.op, ast.FloorDiv) and right == 0):
            return None
        return _SIZE_ARITHMETIC[type(node.op)](left, right)
    return None


def _size_slots(tree: ast.Module) -> list[tuple[str, ast.expr]]:
    """(name, its int expression) for each module-level size: `name = <int>`, and each int of `name = (<int>, ...)`
    as `name[i]` (KernelBench's losses: `input_shape = (32768,)`)."""
    slots: list[tuple[str, ast.expr]] = []
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name, value = node.targets[0].id, node.value
        if _int_value(value) is not None:
            slots.append((name, value))
        elif isinstance(value, ast.Tuple) and value.elts and all(_int_value(e) is not None for e in value.elts):
            slots += [(f"{name}[{i}]", element) for i, element in enumerate(value.elts)]
    return slots


def size_constants(source: str) -> dict[str, int]:
    """A KernelBench problem's sizes: its module-level `name = <int>` assignments (batch_size, dim, in_channels…;
    the int may be written as arithmetic on literals, `M = 256 * 8`) and the ints of its module-level tuples
    (`input_shape[0]`), read from the source, never by running it."""
    return {name: _int_value(value) for name, value in _size_slots(ast.parse(source))}


def with_size_constants(source: str, values: dict[str, int]) -> str:
    """`source` with some of its sizes (see `size_constants`) set to `values` (an arithmetic one, `256 * 8`,
    becomes its new value's literal); not a character else changes."""
    lines = source.splitlines(keepends=True)
    slots = sorted(_size_slots(ast.parse(source)), key=lambda slot: (slot[1].lineno, slot[1].col_offset),
                   reverse=True)  # from the end: an edit leaves the offsets before it as they were
    for name, value in slots:
        if name not in values or value.end_lineno != value.lineno:  # an int literal spans one line
            continue
        line = value.lineno - 1
        text = lines[line]
        lines[line] = text[:value.col_offset] + str(int(values[name])) + text[value.end_col_offset:]
    return "".join(lines)


def _halvings(values: dict[str, int]) -> list[dict[str, int]]:
    """The next sizes to try, smallest change first: each size halved alone, largest first; then each group of
    sizes that are equal halved together (a size broadcast against another of the same length: KernelBench's
    HingeLoss multiplies a (batch_size, input_shape[0]) tensor by a (batch_size,) one, valid only while equal)."""
    halvable = sorted((n for n in values if values[n] >= 2 * MIN_SCALED_SIZE), key=lambda n: -values[n])
    alone = [{**values, n: values[n] // 2} for n in halvable]
    together = []
    for size in sorted({values[n] for n in halvable}, reverse=True):
        group = [n for n in halvable if values[n] == size]
        if len(group) > 1:
            together.append({**values, **{n: size // 2 for n in group}})
    return alone + together


def scale_sizes_down(source: str, budget_bytes: int, measure) -> dict[str, Any]:
    """Halve a problem's sizes (see `size_constants`, `_halvings`) while `measure(source)` (bytes of its inputs,
    outputs and weights; raises if the sizes no longer make a valid problem) exceeds `budget_bytes`: {"sizes":
    the changed sizes, "original_bytes", "scaled_bytes"}. Runs the reference (under fake tensors): in a sandbox."""
    original = size_constants(source)
    values = dict(original)
    current = first = measure(source)
    while current > budget_bytes:
        step = None
        for trial in _halvings(values):
            try:
                smaller = measure(with_size_constants(source, trial))
            except Exception:  # e.g. groups no longer divide the channels: try the next size
                continue
            if smaller < current:
                step = trial, smaller
                break
        if step is None:  # nothing left to halve: as small as it gets
            break
        values, current = step
    return {"sizes": {n: v for n, v in values.items() if v != original[n]}, "original_bytes": first,
            "scaled_bytes": current}


@dataclass
class ImportReport:
    imported: int = 0
    skipped: dict[str, str] = field(default_factory=dict)  # name -> reason


_LEVEL = re.compile(r"level[_-]?(\d+)$", re.I)
_NUMBER = re.compile(r"^(\d+)_")


def _kernelbench_order(path: Path) -> tuple[int, str]:
    """KernelBench's own order: by the problem's number (`12_Gemm_...py`), so `--limit 30` means problems 1-30."""
    number = _NUMBER.match(path.name)
    return (int(number.group(1)) if number else 1 << 30, path.name)


def load_kernelbench(root: str | Path, levels: list[int] | None = None) -> tuple[list[Problem], ImportReport]:
    """Every problem file under the `level<N>` folders of a KernelBench checkout (or of `root` itself)."""
    root = Path(root)
    if not root.exists():
        raise ImportErrorReport(f"no KernelBench checkout at {root}")
    level_dirs = [d for d in sorted(root.rglob("*")) if d.is_dir() and _LEVEL.search(d.name)]
    if _LEVEL.search(root.name):
        level_dirs.insert(0, root)
    if not level_dirs:
        raise ImportErrorReport(f"{root} holds no level<N> folders (expected e.g. KernelBench/level1/*.py)")
    problems, report = [], ImportReport()
    for level_dir in level_dirs:
        level = int(_LEVEL.search(level_dir.name).group(1))
        if levels and level not in levels:
            continue
        for path in sorted(level_dir.glob("*.py"), key=_kernelbench_order):
            source = path.read_text()
            reason = check_kernelbench_format(source)
            if reason:
                report.skipped[str(path.relative_to(root))] = reason
                continue
            problems.append(Problem(id=Problem.make_id(source), source="kernelbench", reference=source,
                                    name=f"level{level}/{path.stem}", difficulty=level,
                                    op_families=ast_families(source)))
            report.imported += 1
    return problems, report


def load_hf_problems(location: str, code_column: str = "code", split: str = "train", name_column: str | None = None,
                     source: str = "dataset", limit: int | None = None) -> tuple[list[Problem], ImportReport]:
    """PyTorch modules from a Hugging Face dataset: a `save_to_disk` folder, parquet/json/jsonl files, or a name."""
    import datasets

    path = Path(location)
    if path.is_dir() and ((path / "dataset_info.json").exists() or (path / "dataset_dict.json").exists()):
        data = datasets.load_from_disk(str(path))
        if isinstance(data, datasets.DatasetDict):
            data = data[split]
    elif path.suffix in (".parquet", ".json", ".jsonl"):
        data = datasets.load_dataset("parquet" if path.suffix == ".parquet" else "json", data_files=str(path),
                                     split="train")
    else:
        data = datasets.load_dataset(location, split=split)
    if code_column not in data.column_names:
        raise ImportErrorReport(f"dataset {location} has no column {code_column!r}; columns: {data.column_names}")
    problems, report = [], ImportReport()
    for i, row in enumerate(data):
        if limit is not None and report.imported >= limit:
            break
        code = row[code_column] or ""
        name = str(row[name_column]) if name_column and row.get(name_column) is not None else f"{source}_{i}"
        reason = check_kernelbench_format(code)
        if reason:
            report.skipped[name] = reason
            continue
        problems.append(Problem(id=Problem.make_id(code), source=source, reference=code, name=name,
                                op_families=ast_families(code)))
        report.imported += 1
    return problems, report


def export_rows(rows: list[dict[str, Any]], out_dir: str | Path, parquet: bool = True, save_to_disk: bool = True) -> Path:
    """Rows (problems as `model_dump(mode='json')`, or SFT examples) to a HF dataset folder and/or parquet."""
    import datasets

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    data = datasets.Dataset.from_list(rows)
    if save_to_disk:
        data.save_to_disk(str(out / "dataset"))
    if parquet:
        data.to_parquet(str(out / "data.parquet"))
    return out


def export_problems(problems: list[Problem], out_dir: str | Path, **kwargs) -> Path:
    import json

    # nested, free-form fields as JSON text (parquet cannot hold an empty struct, and columns must agree)
    rows = [{**p.model_dump(mode="json", exclude={"hints", "measures"}),
             "hints": json.dumps([h.model_dump() for h in p.hints]), "measures": json.dumps(p.measures)}
            for p in problems]
    return export_rows(rows, out_dir, **kwargs)


def family_counts(problems: list[Problem]) -> Counter:
    return Counter(f for p in problems for f in p.op_families)
