"""The anti-hacking wall: the computation must be done by the candidate's own kernels.

Two layers, both cheap:
- static rules over the candidate's Python (AST) and C++/CUDA text, checked in the
  judge before anything runs: patching torch or the harness, exiting the process,
  inheriting from the reference, library math includes;
- a run-time record of every ATen op `ModelNew.forward` dispatches (a
  TorchDispatchMode inside the sandbox), checked in the judge against the glue
  DESIGN.md §4 allows. The same mode poisons fresh allocations so that output
  memory a kernel never writes is caught by the comparison.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# Allowed torch glue inside ModelNew.forward (DESIGN.md §4): allocation, views and
# reshapes, .contiguous() (clone/copy_), shape/dtype/device queries.
ALLOCATION_OPS = frozenset({
    "aten::empty", "aten::empty_like", "aten::empty_strided", "aten::new_empty",
    "aten::new_empty_strided", "aten::zeros", "aten::zeros_like", "aten::new_zeros",
    "aten::zero_", "aten::fill_",
})
VIEW_OPS = frozenset({
    "aten::view", "aten::_unsafe_view", "aten::reshape", "aten::_reshape_alias", "aten::expand",
    "aten::permute", "aten::transpose", "aten::t", "aten::squeeze", "aten::unsqueeze",
    "aten::as_strided", "aten::slice", "aten::select", "aten::alias", "aten::detach",
    "aten::flatten", "aten::unflatten", "aten::narrow", "aten::split", "aten::chunk",
    "aten::unbind", "aten::view_as", "aten::expand_as", "aten::lift_fresh",
})
LAYOUT_OPS = frozenset({"aten::clone", "aten::copy_", "aten::contiguous"})
QUERY_OPS = frozenset({"aten::_local_scalar_dense", "aten::is_contiguous", "aten::sym_size",
                       "aten::sym_stride", "aten::sym_numel", "aten::size", "aten::stride"})
ALLOWED_OPS = ALLOCATION_OPS | VIEW_OPS | LAYOUT_OPS | QUERY_OPS
POISON_OPS = frozenset({"aten::empty", "aten::empty_like", "aten::empty_strided",
                        "aten::new_empty", "aten::new_empty_strided"})
OWN_OP_PREFIX = "kd_"


@dataclass(frozen=True)
class Violation:
    rule: str
    message: str


class DispatchRecorder(TorchDispatchMode):
    """Records every ATen op dispatched while active and poisons fresh allocations."""

    def __init__(self, poison: bool = True):
        super().__init__()
        self.ops: Counter[str] = Counter()
        self.poison = poison

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func._schema.name
        self.ops[name] += 1
        out = func(*args, **(kwargs or {}))
        if self.poison and name in POISON_OPS and isinstance(out, torch.Tensor):
            _poison(out)
        return out


def _poison(t: torch.Tensor) -> None:
    if t.is_floating_point() or t.is_complex():
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:
        t.fill_(True)
    else:
        t.fill_(torch.iinfo(t.dtype).max)


def forbidden_ops(ops: dict[str, int]) -> list[str]:
    """ATen ops seen at run time that do computation the candidate should have done itself."""
    return sorted(op for op in ops if op not in ALLOWED_OPS and not op.startswith(OWN_OP_PREFIX))


# -- static rules ----------------------------------------------------------------------
_FORBIDDEN_MODULES = {"ctypes", "gc", "inspect", "importlib", "builtins", "subprocess", "signal",
                      "threading", "multiprocessing", "pickle", "marshal", "socket", "sys",
                      "torch.testing", "unittest", "concurrent"}
_PROCESS_CALLS = {"exit", "quit", "_exit", "abort", "kill"}
_OS_CALLS = {"system", "fork", "forkpty", "popen", "execv", "execve", "execvp", "spawnv", "killpg"}
_DYNAMIC_CALLS = {"exec", "eval", "compile", "__import__", "setattr", "delattr", "globals", "vars",
                  "breakpoint", "open"}
_LIBRARY_INCLUDES = re.compile(
    r"#\s*include\s*[<\"](cublas|cublasLt|cudnn|cutlass|cute|thrust|cub/|mkl|cblas|Eigen|"
    r"oneapi|dnnl|ATen/native|ATen/ops/)[^>\"]*[>\"]")
_LIBRARY_CALLS = re.compile(r"\b(cublas\w+|cudnn\w+|cblas_\w+|at::native::\w+|torch::nn::functional)\b")


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _string_constants(tree: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def check_source(tree: ast.Module) -> list[Violation]:
    """Static rules over a parsed candidate module; see the module docstring."""
    found: list[Violation] = []
    torch_aliases = {"torch", "nn", "F"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            torch_aliases |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.startswith("torch")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch"):
            torch_aliases |= {a.asname or a.name for a in node.names}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for mod in modules:
                if mod in _FORBIDDEN_MODULES or mod.split(".")[0] in _FORBIDDEN_MODULES:
                    found.append(Violation("forbidden-import", f"imports {mod!r}, which the sandbox forbids"))
            if isinstance(node, ast.ImportFrom) and node.module == "os":
                for alias in node.names:
                    if alias.name in _PROCESS_CALLS | _OS_CALLS:
                        found.append(Violation("process-control", f"imports os.{alias.name}"))
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in _PROCESS_CALLS:
                found.append(Violation("process-control", f"calls {func.id}()"))
            elif isinstance(func, ast.Name) and func.id in _DYNAMIC_CALLS:
                found.append(Violation("dynamic-code", f"calls {func.id}()"))
            elif isinstance(func, ast.Attribute) and (func.attr in _PROCESS_CALLS or
                                                      (_root_name(func) == "os" and func.attr in _OS_CALLS)):
                found.append(Violation("process-control", f"calls {ast.unparse(func)}()"))
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Attribute) and _root_name(sub) in torch_aliases | {"os", "time", "math", "numpy", "np"}:
                        found.append(Violation("patching", f"assigns to {ast.unparse(sub)}: patching torch or the harness"))
        elif isinstance(node, ast.ClassDef) and node.name == "ModelNew":
            for base in node.bases:
                if isinstance(base, ast.Name) and base.id == "Model" or isinstance(base, ast.Attribute) and base.attr == "Model":
                    found.append(Violation("reference-reuse", "ModelNew inherits from the reference Model"))
        elif isinstance(node, ast.Name) and node.id in {"__builtins__", "__import__", "__loader__"}:
            found.append(Violation("dynamic-code", f"uses {node.id}"))
        elif isinstance(node, ast.Attribute) and node.attr in {"__globals__", "__code__", "__subclasses__", "__dict__", "f_globals", "f_back"}:
            found.append(Violation("dynamic-code", f"uses .{node.attr}"))
    for text in _string_constants(tree):
        m = _LIBRARY_INCLUDES.search(text) or _LIBRARY_CALLS.search(text)
        if m:
            found.append(Violation("library-math", f"uses library code {m.group(0)!r} instead of its own kernel"))
    # One violation per rule is enough for feedback; keep the first of each.
    seen: dict[str, Violation] = {}
    for v in found:
        seen.setdefault(v.rule, v)
    return list(seen.values())
