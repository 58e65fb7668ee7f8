"""The anti-hacking wall: the computation must be done by the candidate's own kernels.

Two layers, both cheap:
- static rules over the candidate's Python (AST) and C++/CUDA text, checked in the
  judge before anything runs: imports outside an allowlist, any route by a name or a
  string to the harness's modules (loaders, frames, dunders), patching torch or the
  harness, exiting the process, inheriting from the reference, library math includes;
  and over what its built object imports (library math, ATen around the dispatcher,
  the interpreter);
- a run-time record of every ATen op `ModelNew.forward` dispatches (a
  TorchDispatchMode inside the sandbox, and a RecordFunction callback that sees
  what a C++ guard hides from the mode: verifier/op_watch.py), in the trials and
  the timed calls, checked in the judge against the glue DESIGN.md §4 allows.
  The mode poisons fresh allocations so that output memory a kernel never writes
  is caught by the comparison.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import re
import struct
import sys
import types
from collections import Counter
from collections.abc import Callable
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
# composite ops of glue: DispatchRecorder sees what they run (aten::_to_copy, aten::_local_scalar_dense), the
# sandbox's RecordFunction callback (verifier/op_watch.py) sees them too
COMPOSITE_GLUE = frozenset({"aten::to", "aten::item", "aten::is_nonzero", "aten::numel", "aten::dim"})
ALLOWED_OPS = ALLOCATION_OPS | VIEW_OPS | LAYOUT_OPS | QUERY_OPS | COMPOSITE_GLUE
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


# -- static rules ----------------------------------------------------------------------------------------------------
# What a candidate's Python may import: its module is glue around its own kernels. torch (with the sub-rules below),
# math (constants), os (the environment; its process calls refused), time, functools, itertools and collections:
# none resolves a dotted name, reads an attribute named by a string or loads code (functools' names that do, refused
# below). __future__: compiler directives, no code. typing: annotations, and only the names in _TYPING_NAMES
# (typing.get_type_hints evaluates a string annotation as code). Every other module, standard or not, is refused:
# a denylist missed pkgutil.resolve_name, pydoc.locate and string.Formatter().get_field, each of which reached the
# harness's modules by a string.
ALLOWED_MODULES = frozenset({"torch", "math", "os", "time", "functools", "itertools", "collections", "typing",
                             "__future__"})
_ALLOWLIST_TEXT = "torch, math, os, time, functools, itertools, collections, typing and __future__"
_TYPING_NAMES = frozenset({"Any", "Callable", "ClassVar", "Dict", "Final", "FrozenSet", "Generic", "Iterable",
                           "Iterator", "List", "Literal", "Mapping", "MutableMapping", "NamedTuple", "Optional",
                           "Sequence", "Set", "Tuple", "Type", "TypeVar", "Union", "cast", "overload", "TYPE_CHECKING",
                           "Annotated", "Generator", "Hashable", "Sized", "SupportsInt", "SupportsFloat",
                           "SupportsIndex", "Text", "NoReturn", "Deque", "DefaultDict", "OrderedDict", "Counter",
                           "ChainMap", "Collection", "Container", "Reversible", "MutableSequence", "AbstractSet",
                           "MutableSet", "Protocol", "TypeAlias", "ParamSpec", "Concatenate", "Self", "Never"})
# Modules reached as an attribute of anything (`m.importlib`, where `m` is a module the rules cannot follow): names
# of modules that resolve names, read attributes by a string, load code or reach the interpreter; the rules follow
# the attributes of the modules a candidate imports itself (`torch.nn.functional.importlib`) whatever their name.
_MODULE_ATTRIBUTES = {"importlib", "builtins", "ctypes", "gc", "inspect", "pickle", "_pickle", "marshal", "operator",
                      "copyreg", "pkgutil", "pydoc", "runpy", "subprocess", "_posixsubprocess", "threading", "_thread",
                      "multiprocessing", "traceback", "codeop", "zipimport", "pdb", "bdb", "dill", "cloudpickle",
                      "posix", "string", "sysconfig"}
# torch's loaders: they unpickle (torch.load ran a pickle's exec that blinded the op watch), import by name or run
# code given as a string (torch.utils.benchmark's Timer), or start processes and connections. torch.jit's loaders are
# refused with the compilers.
_TORCH_LOADERS = ("torch.hub", "torch.package", "torch.serialization", "torch.utils.model_zoo", "torch.utils.data",
                  "torch.utils.benchmark", "torch.utils.collect_env", "torch.utils.bundled_inputs",
                  "torch.utils.mobile_optimizer", "torch.utils.show_pickle", "torch.utils.tensorboard",
                  "torch.multiprocessing", "torch.distributed", "torch.onnx")
_HOST_COMPUTE_MODULES = {"numpy", "scipy", "math"}  # math is fine for constants, not as a module of kernels
# A tensor's values as a host array (numpy's arithmetic with no numpy imported), named however they are reached: an
# alias (`f = x.numpy; f()`) is no call of .numpy()
_HOST_ARRAYS = {"numpy", "tolist", "__array__", "__array_interface__", "__array_struct__", "__array_wrap__",
                "__array_priority__", "__dlpack__", "__cuda_array_interface__"}
_PROCESS_CALLS = {"exit", "quit", "_exit", "abort", "kill"}
_OS_CALLS = {"system", "fork", "forkpty", "popen", "execv", "execve", "execvp", "spawnv", "killpg"}
# os's process control by any of its names (exec*, spawn*, posix_spawn*, fork*, ...), however it is reached
_OS_PROCESS = re.compile(r"exec\w*|spawn\w*|posix_spawn\w*|fork\w*|system|popen|kill\w*|register_at_fork|setsid|"
                         r"abort|_exit|pidfd_\w+|plock|startfile")
# Builtins that read, write or evaluate by a name or a string, refused wherever they are named: called, or as a value
# (`g = getattr; g(obj, "x")`, `functools.partial(getattr, obj)`).
_DYNAMIC_CALLS = {"exec", "eval", "compile", "__import__", "setattr", "delattr", "globals", "vars", "locals",
                  "breakpoint", "open", "getattr", "help"}
_DUNDER_ESCAPES = {"__globals__", "__code__", "__subclasses__", "__dict__", "f_globals", "f_back", "__closure__",
                   "__builtins__", "__import__", "__loader__", "__reduce__", "__class__", "__mro__", "__bases__",
                   "__base__", "__self__", "__func__", "__spec__", "__getattribute__", "gi_frame", "cr_frame",
                   "tb_frame", "f_locals", "co_code",
                   # an object's namespace as a dict (a module's too: os.__getstate__()["sys"]), its pickling
                   "__getstate__", "__setstate__", "__reduce_ex__", "__defaults__", "__kwdefaults__",
                   # attributes set or removed by a name
                   "__setattr__", "__delattr__",
                   # a class pattern's attribute names, and classes that match anything
                   "__match_args__", "__instancecheck__", "__subclasscheck__",
                   # a forward reference's code (typing.Optional["..."] makes one of any string)
                   "__forward_code__", "__forward_arg__",
                   # a finalizer: the collector runs it whenever it runs, between the op watch's last look at a call
                   # and the harness's reading of its outputs too
                   "__del__"}
# Refused as names of functions a candidate defines too (a metaclass whose isinstance says yes to anything)
_DEFINED_ESCAPES = {"__match_args__", "__instancecheck__", "__subclasscheck__"}
# A tensor subclass's hooks run whenever the harness touches its outputs: a __torch_function__ computes with ATen
# when the harness reads the result, out of the trials' sight
_TORCH_HOOKS = {"__torch_function__", "__torch_dispatch__"}
# functools' names that read attributes by a string: singledispatch's register evaluates string annotations
# (typing.get_type_hints); update_wrapper (and wraps with `assigned`/`updated`) copies the attributes it is named onto
# an object that keeps them. typing's evaluators, and importers by name (torch.ops.import_module), however reached.
_NAME_READERS = {"singledispatch", "singledispatchmethod", "update_wrapper", "get_type_hints", "ForwardRef",
                 "get_annotations", "_eval_type", "evaluate_forward_ref", "WRAPPER_ASSIGNMENTS", "WRAPPER_UPDATES",
                 "import_module", "resolve_name", "locate"}
# Methods that evaluate a string as code, by name on any object: a typing.ForwardRef's (any string subscripted into
# typing.Optional, or given to the class of a torch TypeVar's bound, becomes one) evaluated __import__("verifier...")
_EVALUATORS = {"_evaluate", "evaluate"}
# Every attribute of a frame, generator, coroutine, async generator, traceback and code object: each leads to frames,
# and a frame to its globals and builtins (ag_frame.f_builtins["__import__"] reached the harness). Their exact names
# (honest code names its own attributes tb_mm or f_out), this interpreter's and later ones'.
_INTERPRETER_ATTRIBUTES = frozenset(
    {name for kind in (types.FrameType, types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType,
                       types.TracebackType, types.CodeType)
     for name in dir(kind) if re.match(r"(?:f|gi|cr|ag|tb|co)_", name)}
    | {"f_generator", "ag_suspended", "co_branches"})
# Attribute names that reach the interpreter or other modules whatever object they hang off
# (`os.sys.modules`, `torch.utils.cpp_extension.os`): frames, module tables, the dispatcher's modes.
_ESCAPE_ATTRIBUTES = {"sys", "modules", "_getframe", "load_library", "classes", "library", "overrides"}
# A module's own attributes a candidate may read (the rest are its machinery: namespace, loader, lazy __getattr__)
_MODULE_DUNDERS = {"__name__", "__doc__", "__version__", "__file__", "__all__", "__package__"}
# Format strings read attributes too: "{0.__globals__}".format(f)
_FORMAT_ESCAPE = re.compile(r"\{[^{}]*\.(__\w+__|(?:f|gi|cr|ag|tb|co)_\w+)")
_COMPILERS = {"compile", "jit", "_dynamo", "_inductor", "fx", "export", "compiler"}
# Graphs of device work captured once and replayed: a replay dispatches no op, so ATen's kernels captured in
# __init__ (the op watch takes nothing from there) would run in forward out of every observer's sight
_GRAPHS = ("torch.cuda.graphs", "torch.accelerator.graphs")
# torch.* calls ModelNew.forward may make: allocation and views (DESIGN.md §4).
_FORWARD_GLUE = {"empty", "empty_like", "empty_strided", "zeros", "zeros_like", "tensor", "as_strided", "reshape",
                 "flatten", "unsqueeze", "squeeze", "transpose", "permute", "narrow", "chunk", "split", "device",
                 "Size", "float32", "float16", "bfloat16", "float64", "int32", "int64", "bool", "no_grad",
                 "is_tensor", "get_default_dtype", "cuda", "is_grad_enabled"}
_LIBRARY_INCLUDES = re.compile(
    r"#\s*include\s*[<\"](cublas|cublasLt|cudnn|cutlass|cute|thrust|cub/|mkl|cblas|Eigen|oneapi|dnnl|"
    r"ATen/native|ATen/ops/|cufft|cusparse|cusolver|curand|nccl)[^>\"]*[>\"]")
_LIBRARY_CALLS = re.compile(r"\b(cublas\w+|cublasLt\w+|cudnn\w+|cblas_\w+|cufft\w+|cusparse\w+|"
                            r"torch::nn::functional|torch::nn::\w+|at::cuda::blas::\w+)\b")
# The dispatcher's thread-local state, from C++: excluding the Python dispatch keys hides every ATen call under the
# guard from the trials' DispatchRecorder (a TorchDispatchMode), and RecordFunction's switches hide them from any
# observer; a kernel has no use for either.
_DISPATCH_INTERNALS = re.compile(r"\bc10::impl\b|DispatchKey|DispatchMode|PythonTLSSnapshot|tls_set_dispatch_key|"
                                 r"tls_local_dispatch_key_set|_force_tls_local|RecordFunction|"
                                 r"\bAutoDispatch\w*|\bAutoNonVariableTypeMode\b")
_SIDE_STREAMS = re.compile(r"\b(cudaStreamCreate\w*|getStreamFromPool|cudaStreamBeginCapture|cudaGraphLaunch)\b")
# ATen compute called from C++: namespace form (torch::matmul(...)) and method form on tensors (x.matmul(...)).
_CPP_GLUE = {"empty", "empty_like", "empty_strided", "zeros", "zeros_like", "from_blob", "Tensor", "TensorOptions",
             "dtype", "device", "IntArrayRef", "ScalarType", "Device", "kCUDA", "kCPU", "cuda", "Scalar", "Half",
             "BFloat16", "ArrayRef", "optional", "nullopt", "indexing", "Generator", "autocast", "NoGradGuard",
             "InferenceMode", "MemoryFormat", "Layout", "DeviceGuard", "OptionalDeviceGuard", "TensorAccessor",
             "PackedTensorAccessor32", "PackedTensorAccessor64", "RestrictPtrTraits", "DefaultPtrTraits",
             "Stream", "get_num_threads", "parallel_for", "globalContext", "toString", "infer_size"}
_CPP_COMPUTE_METHODS = (
    "matmul|mm|bmm|addmm|baddbmm|addmv|mv|dot|einsum|linear|conv1d|conv2d|conv3d|conv_transpose2d|relu|relu_|gelu|"
    "sigmoid|tanh|softmax|log_softmax|exp|log|sum|mean|prod|norm|amax|amin|argmax|argmin|add|add_|sub|sub_|mul|"
    "mul_|div|div_|pow|sqrt|rsqrt|clamp|clamp_|where|cumsum|sort|topk|layer_norm|batch_norm|group_norm|"
    "max_pool2d|avg_pool2d|softplus|elu|silu|hardtanh|leaky_relu|abs|neg|reciprocal|square|var|std|logsumexp|"
    "maximum|minimum|floor|ceil|round|sin|cos|erf|index_select|gather|scatter|masked_fill|triu|tril|addcmul")
_CPP_METHOD_CALL = re.compile(r"(?<![:\w])\.\s*(" + _CPP_COMPUTE_METHODS + r")\s*\(")
_CPP_NAMESPACE_CALL = re.compile(r"\b(?:torch|at)::(\w+)\s*[(<]")
# ATen's per-backend entry points skip the dispatcher, so no run-time trace would see them
_ATEN_DIRECT = re.compile(r"\b(?:at|torch)::(?:native|cpu|cuda|_ops|compositeexplicitautograd|"
                          r"compositeimplicitautograd|meta)::(?!getCurrentCUDAStream|CUDAGuard|OptionalCUDAGuard|"
                          r"CUDAStream|getDefaultCUDAStream|current_device|device_count)\w+")


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _dotted(node: ast.AST) -> list[str]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return list(reversed(parts))


def _string_constants(tree: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _module_refusal(name: str) -> tuple[str, str] | None:
    """Why a candidate may not use the module `name` (dotted) — (rule, reason) — or None."""
    parts = name.split(".")
    root = parts[0]
    if root in _HOST_COMPUTE_MODULES - {"math"}:
        return "host-compute", "compute must run in your kernels, not on the host"
    if root not in ALLOWED_MODULES:
        return "forbidden-import", f"which the sandbox forbids: a candidate may import only {_ALLOWLIST_TEXT}"
    if root == "torch" and len(parts) > 1:
        if parts[1] in _COMPILERS:
            return "torch-compile", "compiled torch code is not your kernel"
        if any(p.startswith("_") for p in parts[1:]) or set(parts[1:]) & {"library", "overrides", "classes"}:
            return "torch-internals", "torch internals (dispatcher, modes, op registration) are off limits"
        if any(name == m or name.startswith(m + ".") for m in _TORCH_LOADERS):
            return "dynamic-code", "torch's loaders unpickle, import or run code by name; a kernel loads nothing"
        if any(name == m or name.startswith(m + ".") for m in _GRAPHS):
            return "side-stream", "a graph's replay runs device work no op watch sees"
    elif any(p.startswith("_") for p in parts[1:]):
        return "dynamic-code", "a module's private parts are off limits"
    return None


def _said(name: str, reason: str) -> str:
    return f"{name!r}, {reason}" if reason.startswith("which") else f"{name!r}: {reason}"


_MISSING = object()


def _member(owner: object, name: str) -> object:
    """`owner.name` where `owner` is a module, read in this (the judge's) process without running anything: the
    module's own namespace, else a submodule already imported; _MISSING otherwise (and for anything not a module)."""
    if not isinstance(owner, types.ModuleType):
        return _MISSING
    value = vars(owner).get(name, _MISSING)
    if value is _MISSING:
        value = sys.modules.get(f"{owner.__name__}.{name}", _MISSING)
    return value


def _module_name(owner: types.ModuleType, name: str, value: types.ModuleType) -> str:
    """The name a module reached as `owner.name` goes by: its path when it is registered there (os.path is
    posixpath), else its own (os.sys is sys)."""
    path = f"{owner.__name__}.{name}"
    return path if sys.modules.get(path) is value else value.__name__


def _defined_in_refused(value: object) -> tuple[str, str, str] | None:
    """(rule, reason, module) when a function or class reached in an allowed module is a refused torch module's own,
    re-exported (torch.load is torch.serialization's, torch.cuda.graph torch.cuda.graphs')."""
    module = getattr(value, "__module__", None) if callable(value) else None
    refusal = _module_refusal(module) if isinstance(module, str) and module.startswith("torch.") else None
    return (*refusal, module) if refusal and refusal[0] in ("dynamic-code", "side-stream") else None


class _Checker(ast.NodeVisitor):
    """Collects violations of the static rules over a candidate's Python."""

    def __init__(self, tree: ast.Module):
        self.found: list[Violation] = []
        self.torch_names = {"torch", "nn", "F"}
        self.imported: set[str] = set()  # every name an import binds
        self.modules: dict[str, types.ModuleType] = {}  # the names bound to modules the rules can follow
        self._rebound: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                self.torch_names |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.startswith("torch")}
                for a in node.names:
                    bound = a.asname or a.name.split(".")[0]
                    self.imported.add(bound)
                    module = sys.modules.get(a.name if a.asname else bound)
                    if module is not None and _module_refusal(a.name) is None:
                        self._bind(bound, module)
            elif isinstance(node, ast.ImportFrom):
                if (node.module or "").startswith("torch"):
                    self.torch_names |= {a.asname or a.name for a in node.names}
                owner = sys.modules.get(node.module or "") if not node.level else None
                for a in node.names:
                    self.imported.add(a.asname or a.name)
                    value = _member(owner, a.name)
                    if isinstance(value, types.ModuleType):
                        self._bind(a.asname or a.name, value)
        # aliases of what imports bound (`t = torch`, `T = torch.Tensor`): followed, and protected from assignment.
        # A plain assignment to names only, outside a class body (there it binds a class attribute the rules cannot
        # follow: `self.m.load`).
        self.aliases: set[str] = set()
        in_classes = {id(stmt) for cls in ast.walk(tree) if isinstance(cls, ast.ClassDef) for stmt in cls.body}
        assigns = [n for n in ast.walk(tree) if isinstance(n, ast.Assign) and id(n) not in in_classes
                   and isinstance(n.value, (ast.Name, ast.Attribute))
                   and all(isinstance(t, ast.Name) for t in n.targets)]
        self._aliased = {id(n.value) for n in assigns}
        self._attribute_values = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        for _ in range(4):
            for node in assigns:
                value = self._resolve(node.value)
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        if isinstance(value, types.ModuleType):
                            self._bind(target.id, value)
                        if _root_name(node.value) in self.imported | self.aliases | self.torch_names:
                            self.aliases.add(target.id)
        for name in sorted(self._rebound):  # the rules would follow one module, the code another
            self.add("dynamic-code", f"binds {name} to two modules: one name, one module")
        self.in_forward = 0
        self._calls = {id(n.func): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
        self._called = set(self._calls)

    def _bind(self, name: str, module: types.ModuleType) -> None:
        if self.modules.setdefault(name, module) is not module:
            self._rebound.add(name)

    def add(self, rule: str, message: str) -> None:
        self.found.append(Violation(rule, message))

    def _resolve(self, node: ast.AST) -> object | None:
        """The module object a name or attribute chain is, where the rules can follow it (imports, aliases)."""
        if isinstance(node, ast.Name):
            return self.modules.get(node.id)
        if isinstance(node, ast.Attribute):
            value = _member(self._resolve(node.value), node.attr)
            return None if value is _MISSING else value
        return None

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._module(alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.add("forbidden-import", f"a relative import (from {'.' * node.level}{node.module or ''}): a "
                                         f"candidate may import only {_ALLOWLIST_TEXT}")
            return
        module = node.module or ""
        self._module(module)
        if any(alias.name == "*" for alias in node.names):
            self.add("forbidden-import", f"from {module} import *: name what you import")
        if module.startswith("torch"):
            for alias in node.names:
                if alias.name.startswith("_") or alias.name in {"library", "overrides", "classes"}:
                    self.add("torch-internals", f"imports {module}.{alias.name}: torch internals are off limits")
        if module in ("os", "posix"):
            for alias in node.names:
                if alias.name in _PROCESS_CALLS | _OS_CALLS or _OS_PROCESS.fullmatch(alias.name):
                    self.add("process-control", f"imports os.{alias.name}")
        owner = sys.modules.get(module)
        for alias in node.names:
            if alias.name == "*":
                continue
            self._reached(owner, module, alias.name, f"imports {alias.name} from {module}")

    def _reached(self, owner: object, path: str, name: str, what: str) -> None:
        """Rules over `path.name` (`owner`: the module at `path`, where the rules can follow it): a module re-exported
        by an allowed one (`from torch import sys`), a loader's function (`torch.load`), a private name, a name of
        typing or functools that reads by a string."""
        root = path.split(".")[0]
        if root not in ALLOWED_MODULES:
            return  # refused as an import already
        if name in _NAME_READERS:
            self.add("dynamic-code", f"{what}: it reads attributes or evaluates code by a string")
        elif root == "typing" and name not in _TYPING_NAMES:
            self.add("dynamic-code", f"{what}: typing gives annotations only ({', '.join(sorted(_TYPING_NAMES)[:6])}"
                                     ", ...)")
        elif name.startswith("_") and not (name.startswith("__") and name.endswith("__")) and root != "torch":
            self.add("dynamic-code", f"{what}: a module's private names are off limits")
        value = _member(owner, name)
        if isinstance(value, types.ModuleType):
            full = _module_name(owner, name, value)
            refusal = _module_refusal(full)
            if refusal:
                self.add(refusal[0], f"{what}: it is the module {_said(full, refusal[1])}")
        elif value is _MISSING:
            refusal = _module_refusal(f"{path}.{name}") if root == "torch" else None
            if refusal is None and name in _MODULE_ATTRIBUTES:
                refusal = _module_refusal(name)
            if refusal:
                self.add(refusal[0], f"{what}: it is the module {_said(name, refusal[1])}")
        else:
            refusal = _defined_in_refused(value)
            if refusal:
                self.add(refusal[0], f"{what}: it is {refusal[2]}'s, and {refusal[1]}")

    def _module(self, name: str) -> None:
        refusal = _module_refusal(name)
        if refusal:
            self.add(refusal[0], f"imports {_said(name, refusal[1])}")

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.name in _DEFINED_ESCAPES:
            self.add("dynamic-code", f"defines {node.name}: classes that match anything, patterns that read "
                                     "attributes by name")
        elif node.name in _TORCH_HOOKS:
            self.add("torch-internals", f"defines {node.name}: a tensor subclass's dispatch hooks run when the "
                                        "harness reads its outputs")
        elif node.name == "__del__":
            self.add("dynamic-code", "defines __del__: a finalizer runs whenever the collector does, outside the "
                                     "calls the harness watches")
        forward = node.name == "forward"
        self.in_forward += forward
        self.generic_visit(node)
        self.in_forward -= forward

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Match(self, node: ast.Match) -> None:
        self.add("dynamic-code", "a match statement: its class patterns read attributes by name")
        self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if node.name == "ModelNew":
            for base in node.bases:
                if (isinstance(base, ast.Name) and base.id == "Model") or (isinstance(base, ast.Attribute) and base.attr == "Model"):
                    self.add("reference-reuse", "ModelNew inherits from the reference Model")
        for stmt in node.body:  # a class attribute the rules cannot follow (`A.torch.load`)
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                self.add("dynamic-code", f"imports in the body of class {node.name}: its modules would be class "
                                         "attributes; import at module level")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        dotted = _dotted(func)
        if isinstance(func, ast.Name):
            if func.id in _PROCESS_CALLS:
                self.add("process-control", f"calls {func.id}()")
            elif func.id in _DYNAMIC_CALLS:
                self.add("dynamic-code", f"calls {func.id}()")
        elif isinstance(func, ast.Attribute):
            if func.attr in _PROCESS_CALLS or (_root_name(func) == "os" and func.attr in _OS_CALLS):
                self.add("process-control", f"calls {ast.unparse(func)}()")
            elif func.attr in {"numpy", "tolist"}:
                self.add("host-compute", f"calls .{func.attr}(): compute must run in your kernels, not on the host")
            elif func.attr == "Stream" and dotted[:2] == ["torch", "cuda"]:
                self.add("side-stream", "creates a CUDA stream: work on side streams escapes the harness")
        if dotted and dotted[0] in self.torch_names and len(dotted) > 1:
            if dotted[1] in _COMPILERS and dotted[0] == "torch":
                self.add("torch-compile", f"calls {'.'.join(dotted)}(): compiled torch code is not your kernel")
            elif any(part.startswith("_") or part in _ESCAPE_ATTRIBUTES for part in dotted[1:]):
                pass  # torch internals: visit_Attribute names them
            elif self.in_forward and dotted[-1] not in _FORWARD_GLUE and not dotted[-1][:1].isupper() \
                    and not (dotted[0] == "torch" and dotted[1] in ("cuda", "Size", "device")):
                self.add("torch-compute", f"ModelNew.forward calls {'.'.join(dotted)}(); the computation must be "
                                          "done by your own kernel (a fallback counts too)")
        self.generic_visit(node)

    def _check_targets(self, targets: list[ast.AST]) -> None:
        protected = self.torch_names | self.imported | self.aliases | {"os", "time", "math", "numpy", "np"}
        for target in targets:
            for sub in ast.walk(target):
                if isinstance(sub, ast.Attribute) and _root_name(sub) in protected:
                    self.add("patching", f"assigns to {ast.unparse(sub)}: patching torch or the harness")

    def visit_Assign(self, node: ast.Assign) -> None:
        self._check_targets(node.targets)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_targets([node.target])
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._check_targets([node.target])
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        self._check_targets(node.targets)
        self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if isinstance(exc, ast.Name) and exc.id in {"SystemExit", "KeyboardInterrupt", "GeneratorExit"}:
            self.add("process-control", f"raises {exc.id}")
        self.generic_visit(node)

    def _module_as_value(self, node: ast.AST, module: object) -> None:
        """A module is used by its attributes (`torch.nn`, `F.relu`) or aliased by a plain assignment (`t = torch`),
        never as a value the rules would lose sight of (`[torch][0].load`, `f(torch)`, `lambda: torch`)."""
        if isinstance(module, types.ModuleType) and isinstance(node.ctx, ast.Load) \
                and id(node) not in self._attribute_values and id(node) not in self._aliased:
            self.add("dynamic-code", f"uses the module {ast.unparse(node)} as a value: a module is used by its "
                                     "attributes")

    def visit_Name(self, node: ast.Name) -> None:
        self._module_as_value(node, self.modules.get(node.id))
        if node.id in _DUNDER_ESCAPES:
            self.add("dynamic-code", f"uses {node.id}")
        elif node.id in _DYNAMIC_CALLS:  # named as a value too: `g = getattr; g(obj, "x")`
            self.add("dynamic-code", f"names {node.id}: it reads, writes or runs by a name or a string")
        elif node.id in _TORCH_HOOKS:
            self.add("torch-internals", f"uses {node.id}: a tensor subclass's dispatch hooks run when the harness "
                                        "reads its outputs")
        elif node.id in _NAME_READERS:
            self.add("dynamic-code", f"uses {node.id}: it reads attributes or evaluates code by a string")
        elif node.id == "wraps" and not self._plain_wraps(node):
            self.add("dynamic-code", "uses wraps other than as @wraps(f): it copies the attributes it is named, by a "
                                     "string")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.generic_visit(node)  # what it hangs off first: the first violation is the first in reading order
        attr = node.attr
        if attr in _HOST_ARRAYS:
            self.add("host-compute", f"uses .{attr}: a tensor's values as a host array are computed on by the "
                                     "host, not your kernels")
        elif attr in _DUNDER_ESCAPES or attr in _INTERPRETER_ATTRIBUTES:
            self.add("dynamic-code", f"uses .{attr}")
        elif attr in _TORCH_HOOKS:
            self.add("torch-internals", f"uses .{attr}: a tensor subclass's dispatch hooks run when the harness "
                                        "reads its outputs")
        elif attr in _ESCAPE_ATTRIBUTES and not (attr == "modules" and self._is_method_call(node)):
            self.add("dynamic-code", f"uses .{attr}: interpreter and dispatcher internals are off limits")
        elif attr in _MODULE_ATTRIBUTES and isinstance(node.ctx, ast.Load):
            self.add("forbidden-import", f"uses .{attr}: the module {attr!r}, which the sandbox forbids")
        elif attr in _NAME_READERS or attr in _EVALUATORS:
            self.add("dynamic-code", f"uses .{attr}: it reads attributes, imports or evaluates code by a string")
        elif attr == "wraps" and not self._plain_wraps(node):
            self.add("dynamic-code", f"uses {ast.unparse(node)} other than as @wraps(f): it copies the attributes it "
                                     "is named, by a string")
        owner = self._resolve(node.value)
        if isinstance(owner, types.ModuleType):
            self._module_as_value(node, _member(owner, attr))
            path = owner.__name__
            if attr.startswith("__") and attr.endswith("__") and attr not in _MODULE_DUNDERS:
                self.add("dynamic-code", f"uses {ast.unparse(node)}: a module's machinery (its namespace, loader, lazy "
                                         "attributes) is off limits")
            elif path.split(".")[0] in ("os", "posix", "posixpath") and _OS_PROCESS.fullmatch(attr):
                self.add("process-control", f"uses {ast.unparse(node)}")
            self._reached(owner, path, attr, f"uses {ast.unparse(node)}")
        dotted = _dotted(node)
        if dotted and dotted[0] in self.torch_names and any(
                part.startswith("_") and not (part.startswith("__") and part.endswith("__")) for part in dotted[1:]):
            self.add("torch-internals", f"uses {'.'.join(dotted)}: private torch internals (dispatcher, modes, "
                                        "the C extension) are off limits")
        elif attr.startswith("_") and not attr.endswith("__") and not isinstance(owner, types.ModuleType) \
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            # no honest candidate of the parity corpus or the runs' samples reads one; internals have their ways
            # (a ForwardRef's _evaluate ran any string, load_inline's module keeps its extension as _module)
            self.add("dynamic-code", f"uses {ast.unparse(node)}: private attributes are a class's own (self._x)")

    def _plain_wraps(self, node: ast.AST) -> bool:
        """`functools.wraps(f)` as a decorator's factory: one argument, no `assigned` or `updated`."""
        call = self._calls.get(id(node))
        return call is not None and len(call.args) == 1 and not call.keywords \
            and not isinstance(call.args[0], ast.Starred)

    def _is_method_call(self, node: ast.Attribute) -> bool:
        """`x.modules()` on a module of the candidate's own (nn.Module.modules) rather than `sys.modules`."""
        return id(node) in self._called and not (isinstance(node.value, ast.Attribute) and node.value.attr == "sys")

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            if _FORMAT_ESCAPE.search(node.value):
                self.add("dynamic-code", "a format string reads a dunder or frame attribute")
            elif node.value in _DUNDER_ESCAPES or node.value in _INTERPRETER_ATTRIBUTES:
                self.add("dynamic-code", f"names {node.value} in a string")
            elif node.value in _TORCH_HOOKS:
                self.add("torch-internals", f"names {node.value} in a string: a tensor subclass's dispatch hooks run "
                                            "when the harness reads its outputs")


# Mechanisms native code has no business using in a kernel: each one is how a candidate reaches the
# interpreter, the harness, other processes or the machine. The sandbox's OS walls stop them too; these
# rules name them, so the verdict says what was tried.
_INTERPRETER_API = re.compile(r"#\s*include\s*[<\"]Python\.h|(?<![\w.])Py[A-Z]\w*\s*\(|\b_?Py_\w+\b|"
                              r"\bPy[A-Z][a-z]+_[A-Z]\w*|"
                              r"\b(?:pybind11|py)::(?:exec|eval|eval_file|globals|module_?::import|import)\b")
_SYSTEM_HEADERS = re.compile(r"#\s*include\s*[<\"](?:sys/|netinet/|arpa/|linux/|asm/|"
                             r"(?:unistd|dlfcn|spawn|signal|fcntl|link|elf|netdb|ucontext|setjmp|seccomp|sched|"
                             r"pthread)\.h|csignal|csetjmp)[^>\"]*[>\"]")
# Names no kernel uses for anything else are refused wherever they appear (a function pointer is as good
# as a call); common words (system, kill, socket, exit...) only when called.
_SYSTEM_NAMES = re.compile(r"\b(?:fork|vfork|execve|execveat|execvpe?|execlp?e?|posix_spawnp?|popen|ptrace|socketpair|"
                           r"syscall|setns|unshare|dlopen|dlmopen|dlsym|dlvsym|memfd_create|process_vm_writev|"
                           r"process_vm_readv|pidfd_open|pidfd_getfd|mprotect|prctl|seccomp|pivot_root|chroot)\b")
_SYSTEM_CALLS = re.compile(r"(?<![\w.>])(?:system|clone3?|kill|tgkill|socket|sendto|sendmsg|mount|setsid|daemon|"
                           r"raise|abort|exit|_exit|quick_exit)\s*\(")
_PROC_PATH = re.compile(r"/proc\b|/dev/(?:mem|kmem|nvidia)|/sys/")
_INLINE_ASM = re.compile(r"\b(?:asm|__asm__|__asm)\b\s*(?:volatile|__volatile__|goto)?\s*\(")
_ASM_TEMPLATE = re.compile(r'\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)')
_PTX_STATEMENT = re.compile(r"^(?:@!?%?\w+\s+)?(?:[a-z][a-z0-9_]*(?:\.[a-z0-9_:]+)+|\.reg\b|\.pred\b|\.shared\b|"
                            r"[{}]|\w+:)")

# Compiler flags a candidate may pass (extra_cflags / extra_cuda_cflags). Anything else, and any linker
# flag or include path, is refused on both build paths: flags can load plug-ins, run wrappers, read
# files, or link library math.
_C_FLAGS = re.compile(r"-O(?:[0-3sgz]|fast)?|-std=(?:c|gnu)\+\+\d\w*|-D\w+(?:=[\w.+\-]*)?|-U\w+|-w|"
                      r"-W(?!l,|a,|p,)[\w=+-]+|-g\d?|-march=[\w-]+|-mtune=[\w-]+|-m(?:avx\w*|fma|sse\w*|f16c|bmi2?|"
                      r"popcnt|no-\w+)|-ffast-math|-fopenmp|-funroll-loops|-fno-[\w-]+|-fPIC|-fpermissive|"
                      r"-ftree-vectorize|-fvisibility=\w+|-pthread")
_CUDA_FLAGS = re.compile(r"-O\d|--?use_fast_math|-lineinfo|--?expt-relaxed-constexpr|--?expt-extended-lambda|"
                         r"--?extended-lambda|-std=c\+\+\d+|-D\w+(?:=[\w.+\-]*)?|-U\w+|-w|--?restrict|-res-usage|"
                         r"--?resource-usage|-ftz=(?:true|false)|-prec-(?:div|sqrt)=(?:true|false)|"
                         r"-fmad=(?:true|false)|--?maxrregcount[= ]?\d+|-arch=(?:sm|compute)_\d+a?|"
                         r"--gpu-architecture=(?:sm|compute)_\d+a?|-gencode=arch=compute_\d+a?,code=(?:sm|compute)_\d+a?|"
                         r"-Xptxas(?:=|\s+)?(?:-v|-O\d|--warn-on-spills|-dlcm=\w+)(?:,(?:-v|-O\d|--warn-on-spills))*|"
                         r"--ptxas-options=(?:-v|-O\d)(?:,(?:-v|-O\d))*|-Xcompiler(?:=|\s+)?[\w=,+-]*|--?keep|-G")
_LINK_FLAGS = {"-lcudart", "-lcuda", "-lgomp", "-lm", "-fopenmp", "-lpthread"}


def _asm_is_harmless(text: str, start: int, device: bool) -> bool:
    """The asm statement at `start` is empty (a compiler barrier) or, in device code, PTX (every instruction
    a dotted PTX mnemonic): host assembly never has a dot in its mnemonic, so neither can be a system call."""
    m = _ASM_TEMPLATE.match(text, text.index("(", start))
    if not m:
        return False
    template = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1))).replace("\\n", "\n").replace("\\t", " ")
    statements = [st.strip() for st in re.split(r"[;\n]", template) if st.strip()]
    return not statements or (device and all(_PTX_STATEMENT.match(st) for st in statements))


def check_native_source(text: str, cuda: bool | None = None) -> list[Violation]:
    """Rules over C++/CUDA text: library math, ATen compute calls, side streams, and the mechanisms that
    reach the interpreter, other processes or the machine. `cuda`: the text is a .cu (PTX inline assembly
    allowed); None when it is not known (a string constant of the candidate's Python)."""
    found = []
    m = _LIBRARY_INCLUDES.search(text) or _LIBRARY_CALLS.search(text)
    if m:
        found.append(Violation("library-math", f"uses library code {m.group(0)!r} instead of its own kernel"))
    for m in _CPP_NAMESPACE_CALL.finditer(text):
        name = m.group(1)
        if name not in _CPP_GLUE and not name.startswith("k") and not name[:1].isupper():
            found.append(Violation("torch-compute", f"calls {m.group(0).rstrip('(<')} in C++: the computation must be "
                                                    "done by your own kernel"))
            break
    m = _ATEN_DIRECT.search(text)
    if m:
        found.append(Violation("torch-compute", f"calls ATen's kernels directly ({m.group(0)}): the computation must "
                                                "be done by your own kernel"))
    m = _CPP_METHOD_CALL.search(text)
    if m:
        found.append(Violation("torch-compute", f"calls tensor method .{m.group(1)}() in C++: the computation must "
                                                "be done by your own kernel"))
    m = _DISPATCH_INTERNALS.search(text)
    if m:
        found.append(Violation("torch-internals", f"uses the dispatcher's internals in C++ ({m.group(0)}): what "
                                                  "forward computes must go through the dispatcher in plain view"))
    m = _SIDE_STREAMS.search(text)
    if m:
        found.append(Violation("side-stream", f"uses {m.group(1)}: work on side streams escapes the harness"))
    m = _INTERPRETER_API.search(text)
    if m:
        found.append(Violation("interpreter-api", f"uses the Python interpreter from native code ({m.group(0).strip()})"))
    m = _SYSTEM_HEADERS.search(text) or _SYSTEM_NAMES.search(text) or _SYSTEM_CALLS.search(text)
    if m:
        found.append(Violation("system-api", f"uses operating-system interfaces ({m.group(0).strip().rstrip('(')}): "
                                             "a kernel needs none"))
    m = _PROC_PATH.search(text)
    if m:
        found.append(Violation("system-api", f"names a system path ({m.group(0)})"))
    device = bool(cuda) or (cuda is None and "__global__" in text)
    for m in _INLINE_ASM.finditer(text):
        if not _asm_is_harmless(text, m.start(), device):
            found.append(Violation("inline-asm", "inline assembly other than PTX in device code"))
            break
    return found


def _sections(elf: bytes) -> list[tuple[int, int, int, int, int, int]] | None:
    """(name offset, kind, offset, size, link, info) of each section of a little-endian ELF64, or None."""
    if len(elf) < 64 or elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        return None
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", elf, 0x3A)
    if shnum == 0 and shoff:  # extended numbering (65,280 sections and more): the count is section 0's sh_size
        if shoff + 64 > len(elf):
            return None
        shnum, = struct.unpack_from("<Q", elf, shoff + 0x20)
    sections = []
    for i in range(shnum):
        at = shoff + i * shentsize
        if at + 64 > len(elf):
            return None
        name, kind, _, _, offset, size, link, info, _, _ = struct.unpack_from("<IIQQQQIIQQ", elf, at)
        sections.append((name, kind, offset, size, link, info))
    return sections


def _c_string(data: bytes, at: int) -> str:
    end = data.find(b"\0", at)
    return data[at:end if end >= 0 else None].decode("ascii", "replace")


def undefined_symbols(elf: bytes) -> set[str]:
    """The names a shared object imports (undefined in its .dynsym), read here in Python: the bytes are what the
    judge's compiler made of a candidate's source. Empty for anything that is not a little-endian ELF64."""
    sections = _sections(elf)
    names: set[str] = set()
    for _, kind, offset, size, link, _ in sections or []:
        if kind != 11 or link >= len(sections):  # SHT_DYNSYM and its string table
            continue
        strings = sections[link][2]
        for at in range(offset, min(offset + size, len(elf) - 23), 24):
            name, _, _, shndx = struct.unpack_from("<IBBH", elf, at)
            if shndx == 0 and name:  # SHN_UNDEF
                names.add(_c_string(elf, strings + name))
    return names


def _nested_name(symbol: str) -> list[str]:
    """The leading components of an Itanium-mangled name (`_ZN2at4cuda3addE...` -> at, cuda, add; `_Z3fooi` -> foo):
    enough to tell a namespace's functions apart; templates and substitutions end the reading."""
    if not symbol.startswith("_Z"):
        return []
    at = 2
    nested = symbol.startswith("_ZN")
    if nested:
        at = 3
        while at < len(symbol) and symbol[at] in "rVKRO":
            at += 1
    parts = []
    while at < len(symbol) and symbol[at].isdigit():
        end = at
        while end < len(symbol) and symbol[end].isdigit():
            end += 1
        length = int(symbol[at:end])
        parts.append(symbol[end:end + length])
        at = end + length
        if not nested:
            break
    return parts


@functools.cache
def _aten_op_names() -> frozenset[str]:
    """Every ATen operator's name without its namespace and overload (add, add_, sigmoid, ...)."""
    return frozenset(s.name.split("::", 1)[1] for s in torch._C._jit_get_all_schemas() if s.name.startswith("aten::"))


# ATen's per-backend kernels (at::native::add, at::cpu::add, at::cuda::add, ...) run outside the dispatcher: no
# dispatch mode, no RecordFunction callback sees them
_DIRECT_KERNEL_NAMESPACES = {"native", "cpu", "meta", "compositeexplicitautograd", "compositeimplicitautograd",
                             "compositeexplicitautogradnonfunctional", "compositeimplicitautogradnestedtensor"}
# What turns the dispatcher's observers off or reaches its kernels around them: RecordFunction's switches and
# callbacks and the thread-local state that carries them, the dispatcher's own handles (a redispatch runs no
# callback), and kernels registered for ATen's own ops (an override of aten::fill_ unpoisons the trials' memory)
_WATCH_SWITCHES = re.compile(r"(?i)recordfunction|record_function|callback|threadlocalstate|threadlocaldebuginfo")


def _bypasses_the_watch(parts: list[str]) -> bool:
    return (parts[:1] in (["at"], ["c10"]) and any(_WATCH_SWITCHES.search(p) for p in parts[1:])) \
        or parts[:2] in (["c10", "Dispatcher"], ["c10", "OperatorHandle"]) \
        or (parts[:2] == ["at", "_ops"] and parts[3:4] == ["redispatch"]) \
        or parts[:3] in (["torch", "Library", "_impl"], ["torch", "Library", "_fallback"])


# Library math among a built object's imports, by name in any case (libtorch_cpu exports MKL's BLAS as SGEMM, sgemm,
# sgemm_ and cblas_sgemm; a hand-declared extern "C" SGEMM passed a matmul as the candidate's own kernel): BLAS levels
# 1-3 and the common LAPACK drivers with their s/d/c/z (and isamax, scnrm2, dsdot...) prefixes, 64-bit, batched and
# Fortran spellings; cblas, LAPACKE, MKL (VML, VSL, DFTI), oneDNN, fbgemm, NNPACK, QNNPACK, XNNPACK, the AOTInductor
# shim's ATen kernels, and NVIDIA's libraries.
_BLAS_OPS = (r"gemm\w*|gemv\w*|gbmv|hemv|hbmv|hpmv|symv|sbmv|spmv|trmv|tbmv|tpmv|trsv|tbsv|tpsv|geru?|gerc|her2?k?|"
             r"hpr2?|syr2?k?|spr2?|symm|hemm|trmm|trsm\w*|axpby|axpy|dotu|dotc|dot|scal|swap|copy|rotg|rotmg|rotm|rot|"
             r"nrm2|asum|amax|amin|cabs1|omatcopy\w*|imatcopy|omatadd|"
             r"ge(?:trf|trs|tri|sv|svx|qrf|qp3|lqf|rqf|qlf|svd|sdd|svdx|jsv|ev|evd|evr|evx|es|hrd|brd|bal|bak|lsd|lss|"
             r"lsy|ls|els|con|equ|rfs)|po(?:trf|trs|tri|sv|con|equ)|pb(?:trf|trs|sv)|gb(?:trf|trs|sv)|"
             r"sy(?:ev|evd|evr|evx|trf|trs|tri|sv|trd|gv|gvd)|he(?:ev|evd|evr|evx|trf|trs|tri|sv|trd|gv|gvd)|"
             r"tr(?:tri|trs|con)|or(?:gqr|mqr|glq|mlq|gtr|mtr|gbr|mbr)|un(?:gqr|mqr|glq|mlq|gtr|mtr|gbr|mbr)|"
             r"st(?:ev|evd|edc|eqr|erf)|bd(?:sqr|sdc)|la(?:mch|nge|nsy|cpy|set|rfg|rfb|rft|rf|scl|swp|py2|rtg)")
_LIBRARY_SYMBOLS = re.compile(
    r"(?:i[sdcz]|sc|dz|ds|sds|zd|cs|[sdcz])(?:" + _BLAS_OPS + r")(?:_batch(?:_strided)?|_compact|_?64)*_?|"
    r"\w*(?:gemm|gemv|blas|lapack|mkl|fbgemm|dnnl|mkldnn|onednn|ideep|qnnp|nnpack|xnnpack)\w*|"
    r"(?:vml|vsl|dfti|nnp_|xnn_|aoti_torch_)\w*|"
    r"(?:cublas|cublasLt|cudnn|cufft|cusparse|cusolver|curand|cutensor|nccl|magma_|nvblas|cusparseLt)\w*",
    re.IGNORECASE)
# MKL's vector math and statistics in their mixed- and upper-case spellings (vsExp, vmdLn, VSEXP_); the lower-case
# ones (vsexp) only as torch's libraries export them, below: libc has vsnprintf
_VECTOR_MATH = re.compile(r"v(?:m[sdcz]|[sdcz])[A-Z]\w*|V(?:M[SDCZ]|[SDCZ])[A-Z0-9]+_?|v(?:m[sdcz]|[sdcz])[a-z0-9]+_")
# C++ namespaces of the libraries torch bundles (fbgemm::, dnnl::, ideep::, qnnpack:: and quantized packed weights)
_LIBRARY_NAMESPACES = re.compile(r"(?i)fbgemm\w*|dnnl|mkldnn|onednn|ideep|qnnpack|xnnpack|mkl|cublas\w*|cudnn\w*|"
                                 r"Packed\w*Weight\w*|sleef|cutlass|cute")
# What a candidate's object may import by a C name that torch's own libraries export too: the elementary functions
# ATen's vectorized math compiles to (at::vec, like libm's), OpenMP, the CUDA runtime and driver, torch's Python glue
# (THPVariableClass: a pybind11 module's reach into the interpreter is check_module_objects' to judge)
_C_GLUE = re.compile(r"Sleef_\w+|GOMP_\w+|omp_\w+|kmp_\w+|_?_?cuda\w*|cu[A-Z]\w*|THP\w+|_end|_edata|__bss_start|_init|"
                     r"_fini")


def _defined_c_names(path: str, mangled: bool = False) -> frozenset[str]:
    """The C (unmangled; with `mangled`, C++ too) names a shared library exports: defined, global or weak, in its
    .dynsym."""
    import mmap

    names = set()
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as elf:
        sections = _sections(elf)
        for _, kind, offset, size, link, _ in sections or []:
            if kind != 11 or link >= len(sections):  # SHT_DYNSYM
                continue
            strings = sections[link][2]
            for at in range(offset, min(offset + size, len(elf) - 23), 24):
                name, info, _, shndx = struct.unpack_from("<IBBH", elf, at)
                if name and shndx != 0 and info >> 4 in (1, 2) and (mangled or elf[strings + name:strings + name + 2] != b"_Z"):
                    names.add(_c_string(elf, strings + name))
    return frozenset(names)


@functools.cache
def _bundled_exports() -> frozenset[str]:
    """The C names torch's own shared libraries export (libtorch_cpu's 27,000: MKL's BLAS, LAPACK, VML, VSL and FFT in
    every spelling, NNPACK, QNNPACK, pthreadpool, miniz, libuv, the AOTInductor shim's ATen kernels...): a candidate's
    object that imports one calls that library, whatever the rules over names know of it. OpenMP's runtime (which
    torch ships beside them) and the glue in _C_GLUE are the candidate's to use."""
    from pathlib import Path

    names: set[str] = set()
    for path in sorted((Path(torch.__file__).parent / "lib").glob("lib*.so*")):
        if not path.name.startswith(("libgomp", "libiomp", "libomp", "libcudart", "libnvrtc", "libnvToolsExt",
                                     "libcuda.", "libcupti")):
            try:
                names |= _defined_c_names(str(path))
            except (OSError, ValueError):
                continue
    return frozenset(name for name in names if not _C_GLUE.fullmatch(name))


@functools.cache
def _python_bindings() -> frozenset[str]:
    """Every name torch's Python bindings (libtorch_python) export, C and C++: THPVariable_Wrap (a tensor's Python
    object), THPVariableClass (torch.Tensor), pybind11's type_caster<at::Tensor> (`pybind11::cast(x)`),
    torch::handle_torch_function_no_python_arg_parser (calls Python objects)... Code that reaches one reaches the
    interpreter, though no name of the C API's (Py...) is among its imports."""
    from pathlib import Path

    try:
        return _defined_c_names(str(Path(torch.__file__).parent / "lib" / "libtorch_python.so"), mangled=True)
    except (OSError, ValueError):
        return frozenset()


def _library_math(name: str, parts: list[str]) -> bool:
    if parts:  # a C++ name: the library's namespace, or a library's name among its components
        return bool(_LIBRARY_NAMESPACES.fullmatch(parts[0])) or any(
            re.fullmatch(r"(?i)\w*(?:gemm|gemv|blas|lapack|mkl)\w*", part) for part in parts)
    if name.startswith("_Z"):
        return False
    return bool(_LIBRARY_SYMBOLS.fullmatch(name) or _VECTOR_MATH.fullmatch(name)) or name in _bundled_exports()


_SYSTEM_SYMBOLS = frozenset({"dlopen", "dlmopen", "dlsym", "dlvsym", "syscall", "fork", "vfork", "execve", "execv",
                             "execvp", "execvpe", "execl", "execlp", "ptrace", "process_vm_readv", "process_vm_writev",
                             "mprotect", "pkey_mprotect", "prctl", "unshare", "setns", "clone", "clone3",
                             # the loader by other doors (a walk of every loaded object's symbols is dlsym by hand)
                             "dl_iterate_phdr", "dladdr", "dladdr1", "dlinfo", "_dl_find_object", "_r_debug",
                             # processes by other names
                             "posix_spawn", "posix_spawnp", "execle", "execveat", "fexecve", "system", "popen",
                             "__clone", "__fork", "__vfork", "memfd_create", "pidfd_open", "pidfd_getfd",
                             "personality",
                             # memory made executable: code written at run time, which no rule over its build reads
                             "mmap", "mmap64", "mremap", "remap_file_pages", "pkey_alloc"})


def _native_symbol_violations(imported: set[str]) -> list[Violation]:
    found = []
    for name in sorted(imported):
        parts = _nested_name(name)
        if parts[:1] == ["at"] and len(parts) > 2 and (
                parts[1] in _DIRECT_KERNEL_NAMESPACES or (parts[1] == "cuda" and parts[2] in _aten_op_names()
                                                          and f"aten::{parts[2]}" not in ALLOWED_OPS)):
            found.append(Violation("torch-compute", f"its compiled code calls ATen's kernel {'::'.join(parts)} "
                                                    "directly: the computation must be done by your own kernel"))
        elif parts[:3] == ["at", "cuda", "blas"] or _library_math(name, parts):
            found.append(Violation("library-math", f"its compiled code calls library code {name[:60]}"))
        elif _bypasses_the_watch(parts):
            found.append(Violation("torch-internals", f"its compiled code uses the dispatcher's internals ({name[:70]}): "
                                                      "what forward computes must go through the dispatcher in plain "
                                                      "view"))
        elif name in _SYSTEM_SYMBOLS:
            found.append(Violation("system-api", f"its compiled code imports {name}: a kernel needs none"))
    return found


# What a candidate's shared object may import from the interpreter. The fast path binds dispatcher ops, no
# pybind11: nothing. torch's own load_inline (a pybind11 module): pybind11's and torch's glue, never the entry
# points that run or import Python code.
_PYTHON_SYMBOL = re.compile(r"_?Py[A-Z_]\w*")
_PYTHON_EXECUTION = re.compile(r"PyRun_\w*|Py_CompileString\w*|PyEval_EvalCode\w*|PyEval_EvalFrame\w*|PyImport_\w*|"
                               r"PyMarshal_\w*|PySys_\w*|Py_Exit|Py_FinalizeEx?|PyOS_\w*")


def check_artifact_symbols(elf: bytes, python_module: bool, native: bool = True) -> list[Violation]:
    """Rules over what a candidate's built shared object imports: its native code calls into the interpreter it
    shares a process with, ATen's kernels around the dispatcher, the switches of the dispatcher's observers,
    library math or the loader only through symbols it imports, however its source assembled their names (the
    preprocessor's `##` reads as nothing to the rules over the text). native=False: the rules but the
    interpreter's are check_module_objects' (torch's own build, where the judge's glue is linked in)."""
    imported = undefined_symbols(elf)
    allowed = (lambda name: not _PYTHON_EXECUTION.fullmatch(name)) if python_module else (lambda name: False)
    bad = sorted(name for name in imported if _PYTHON_SYMBOL.fullmatch(name) and not allowed(name))
    if bad:
        return [Violation("interpreter-api", f"its compiled code imports the Python interpreter's "
                                             f"{', '.join(bad[:4])}: native code has no business with the interpreter")]
    return _native_symbol_violations(imported)[:1] if native else []


# Machine code no compiler writes for C++ or CUDA host code: only inline assembly does (however its asm keyword is
# spelt: a macro, a -D flag, a header's token pasting), or bytes placed in an executable section.
_SYSTEM_INSTRUCTION = re.compile(r"^(?:(?:lock|rep\w*|bnd|notrack|data16|addr32|[c-gs]s|rex\S*)\s+)*"
                                 r"(syscall|sysenter|sysexit|sysret[lq]?|int\s+\$0x80|\(bad\))(?:\s|$)")
_INSTRUCTION_LINE = re.compile(r"^\s*([0-9a-f]+):\t(.*)$")
_DIRECT_BRANCH = re.compile(r"\b(?:j[a-z]{1,4}|call[lq]?|loop[a-z]*|xbegin)\s+([0-9a-f]+) <")
_PT_LOAD, _PT_GNU_STACK, _PF_X, _PF_W = 1, 0x6474E551, 1, 2
_SHF_WRITE, _SHF_EXECINSTR = 1, 4


def _executable_sections(elf: bytes, sections: list) -> tuple[set[int], bool]:
    """(the indexes of its executable sections, whether any section is both writable and executable)."""
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, = struct.unpack_from("<H", elf, 0x3A)
    executable, writable_code = set(), False
    for i in range(len(sections)):
        flags, = struct.unpack_from("<Q", elf, shoff + i * shentsize + 8)
        if flags & _SHF_EXECINSTR:
            executable.add(i)
            writable_code |= bool(flags & _SHF_WRITE)
    return executable, writable_code


def _data_in_code(elf: bytes, sections: list, executable: set[int]) -> str | None:
    """The name of a data object (or thread-local) that a symbol table places in an executable section."""
    for _, section_kind, offset, size, link, _ in sections:
        if section_kind in (2, 11):  # SHT_SYMTAB, SHT_DYNSYM
            strings = sections[link][2] if link < len(sections) else 0
            for at in range(offset, min(offset + size, len(elf) - 23), 24):
                name, info, _, shndx = struct.unpack_from("<IBBH", elf, at)
                if info & 0xF in (1, 5, 6) and shndx in executable:  # STT_OBJECT, STT_COMMON, STT_TLS
                    return _c_string(elf, strings + name) or "(unnamed)"
    return None


def check_machine_code(elf: bytes) -> list[Violation]:
    """Rules over a candidate's built shared object's machine code (x86-64), what inline assembly leaves however
    its source spelt it: a system call instruction; a direct jump or call into the middle of an instruction (how a
    system call's bytes hide inside another instruction from a disassembler); data in an executable section, a
    section both writable and executable, a loadable segment both, or an executable stack (code written or placed
    as data, then run). The sandbox's seccomp filter bounds what a system call can do; these name it."""
    key = hashlib.sha256(elf).digest()  # a judge loads the same build for every judgement of its candidate
    if key not in _MACHINE_CODE_VERDICTS:
        if len(_MACHINE_CODE_VERDICTS) >= 1024:  # bounded: a long judge meets many builds
            _MACHINE_CODE_VERDICTS.clear()
        _MACHINE_CODE_VERDICTS[key] = _machine_code_violations(elf)
    return list(_MACHINE_CODE_VERDICTS[key])


_MACHINE_CODE_VERDICTS: dict[bytes, tuple[Violation, ...]] = {}  # sha256 of a shared object -> what it broke


def _machine_code_violations(elf: bytes) -> tuple[Violation, ...]:
    sections = _sections(elf)
    if sections is None or struct.unpack_from("<H", elf, 0x12)[0] != 62:  # EM_X86_64 (an aarch64 host: none)
        return ()
    phoff, = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    for i in range(phnum):
        kind, flags = struct.unpack_from("<II", elf, phoff + i * phentsize)
        if (kind == _PT_LOAD and flags & _PF_W and flags & _PF_X) or (kind == _PT_GNU_STACK and flags & _PF_X):
            what = "an executable stack" if kind == _PT_GNU_STACK else "memory both writable and executable"
            return (Violation("inline-asm", f"its compiled code asks for {what}: code written at run time"),)
    executable, writable_code = _executable_sections(elf, sections)
    if writable_code:
        return (Violation("inline-asm", "its compiled code has a section both writable and executable"),)
    data = _data_in_code(elf, sections, executable)
    if data:
        return (Violation("inline-asm", f"its compiled code places data ({data[:60]}) in an executable section"),)
    return _disassembled_violations(elf)


def _disassembled_violations(elf: bytes) -> tuple[Violation, ...]:
    import shutil
    import subprocess
    import tempfile

    objdump = shutil.which("objdump")
    if objdump is None:  # binutils come with every compiler the judge builds with
        raise RuntimeError("objdump (binutils) is needed to read a candidate's machine code: install binutils")
    with tempfile.NamedTemporaryFile(suffix=".so") as f:
        f.write(elf)
        f.flush()
        listing = subprocess.run([objdump, "-d", "-w", "--no-show-raw-insn", "-M", "att", f.name],
                                 capture_output=True, text=True, timeout=120, check=True).stdout
    starts: set[int] = set()
    spans: list[tuple[int, int]] = []
    branches: list[tuple[int, int]] = []
    for line in listing.splitlines():
        if line.startswith("Disassembly of section"):
            spans.append((-1, -1))
            continue
        m = _INSTRUCTION_LINE.match(line)
        if not m:
            continue
        address, instruction = int(m.group(1), 16), m.group(2)
        bad = _SYSTEM_INSTRUCTION.match(instruction)
        if bad:
            what = "an instruction no compiler writes" if bad.group(1) == "(bad)" else f"`{bad.group(1)}`"
            return (Violation("inline-asm", f"its compiled code holds {what} at {address:#x}: host code makes no "
                                            "system call of its own"),)
        starts.add(address)
        low, high = spans[-1] if spans else (-1, -1)
        spans[-1:] = [(address if low < 0 else low, address)]
        branch = _DIRECT_BRANCH.search(instruction)
        if branch:
            branches.append((address, int(branch.group(1), 16)))
    for address, target in branches:
        if target not in starts and any(low <= target <= high for low, high in spans):
            return (Violation("inline-asm", f"its compiled code jumps from {address:#x} into the middle of an "
                                            f"instruction ({target:#x}): code hidden from a disassembler"),)
    return ()


# What the loader runs of an object by itself: its initializers, and (at unload or exit) its finalizers
_INIT_SECTIONS = (".init_array", ".preinit_array", ".ctors", ".fini_array", ".dtors", ".init", ".fini")
# ...and what the toolchain's startup files, linked into every module, call by name when the module defines it: crti.o's
# _init calls __gmon_start__, crtbeginS.o _ITM_registerTMCloneTable, _ITM_deregisterTMCloneTable and __cxa_finalize
# (a hidden definition is the module's own, not libc's). Their hooks are names reserved to the implementation (a
# leading double underscore, or an underscore and a capital; `_Z` is a C++ name's mangling): a candidate's global or
# weak definition under one is code that may run when its module is loaded or unloaded.
_IMPLEMENTATION_NAME = re.compile(r"_(?:_|(?!Z)[A-Z])\w*")


def _symbol_table(obj: bytes) -> tuple[list, list[str], list[tuple[str, int, int]], int, set[int]] | None:
    """(sections, section names, symbols as (name, binding, section index), the symbol table's index, the sections
    of its ifunc resolvers) of a relocatable little-endian ELF64; None for anything else. A name is read without its
    symbol version (`.symver` makes a reference to libc's syscall `syscall@GLIBC_2.2.5`); past 65,280 sections, the
    section-name table's index is section 0's sh_link and a symbol's section is in SHT_SYMTAB_SHNDX."""
    sections = _sections(obj)
    if sections is None or struct.unpack_from("<H", obj, 0x10)[0] != 1:  # ET_REL
        return None
    shstrndx, = struct.unpack_from("<H", obj, 0x3E)
    if shstrndx == 0xFFFF and sections:  # SHN_XINDEX
        shstrndx = sections[0][4]
    names = [_c_string(obj, sections[shstrndx][2] + name) if shstrndx < len(sections) else ""
             for name, *_ in sections]
    symtab = next((i for i, sec in enumerate(sections) if sec[1] == 2), None)  # SHT_SYMTAB
    symbols, ifuncs = [], set()
    if symtab is not None:
        _, _, offset, size, link, _ = sections[symtab]
        strings = sections[link][2] if link < len(sections) else 0
        extended = next((sec[2] for sec in sections if sec[1] == 18 and sec[4] == symtab), None)  # SHT_SYMTAB_SHNDX
        for k, at in enumerate(range(offset, min(offset + size, len(obj) - 23), 24)):
            name, info, _, shndx = struct.unpack_from("<IBBH", obj, at)
            if shndx == 0xFFFF:  # SHN_XINDEX
                shndx = struct.unpack_from("<I", obj, extended + 4 * k)[0] \
                    if extended is not None and extended + 4 * k + 4 <= len(obj) else 0xFFFF
            if info & 0xF == 10 and 0 < shndx < len(sections):  # STT_GNU_IFUNC: the loader runs its resolver
                ifuncs.add(shndx)
            symbols.append((_c_string(obj, strings + name).partition("@")[0], info >> 4, shndx))
    return sections, names, symbols, symtab, ifuncs


_UNWINDER = -1  # _ObjectFile.refs' key of what the unwinder runs, beside the sections' indexes
_SHT_X86_64_UNWIND = 0x70000001  # the type gas gives .eh_frame on x86-64


def _cie_spans(obj: bytes, section: tuple) -> list[tuple[int, int]]:
    """The (start, end) offsets of each CIE (common information entry: a personality routine's pointer among its
    augmentation data) in an .eh_frame section; the whole section where its records cannot be read (no compiler
    writes such a section: every relocation in it is then followed)."""
    _, _, offset, size, _, _ = section
    spans, at = [], 0
    while at + 8 <= size:
        length, cie_id = struct.unpack_from("<II", obj, offset + at)
        if length == 0:  # a terminator
            at += 4
            continue
        if length == 0xFFFFFFFF or at + 4 + length > size or offset + at + 4 + length > len(obj):
            return [(0, size)]  # the 64-bit format, or a record past the section's end
        if cie_id == 0:
            spans.append((at, at + 4 + length))
        at += 4 + length
    return spans


class _ObjectFile:
    """One relocatable object file, its symbol table and relocations parsed once (check_module_objects asks
    several questions of each file, some on every pass to its fixed point)."""

    def __init__(self, table: tuple[list, list[str], list[tuple[str, int, int]], int, set[int]], obj: bytes):
        self.sections, self.names, self.symbols, self.symtab, self.ifuncs = table
        self.refs: dict[int, set[int]] = {}  # section -> symbols its relocations name
        # what the unwinder runs (_UNWINDER below): the symbols a CIE of .eh_frame names (its personality routine) and
        # those an LSDA (.gcc_except_table) names (its catch clauses' type_info objects, whose virtual functions the
        # personality calls), under the key _UNWINDER
        self.refs[_UNWINDER] = set()
        for _, kind, offset, size, link, info in self.sections:
            if self.symtab is not None and kind == 4 and link == self.symtab:  # SHT_RELA of the symbol table
                target = self.names[info] if info < len(self.names) else ""
                frames = _cie_spans(obj, self.sections[info]) if target.startswith(".eh_frame") or (
                    info < len(self.sections) and self.sections[info][1] == _SHT_X86_64_UNWIND) else None
                for at in range(offset, min(offset + size, len(obj) - 23), 24):
                    r_offset, r_info = struct.unpack_from("<QQ", obj, at)
                    self.refs.setdefault(info, set()).add(r_info >> 32)
                    if target.startswith(".gcc_except_table") or (
                            frames is not None and any(low <= r_offset < high for low, high in frames)):
                        self.refs[_UNWINDER].add(r_info >> 32)

    @classmethod
    def parse(cls, obj: bytes) -> "_ObjectFile | None":
        table = _symbol_table(obj)
        return None if table is None else cls(table, obj)

    def defined_globals(self, strong_only: bool = False) -> set[str]:
        """The names it defines for the linker: global (and, unless strong_only, weak) symbols."""
        bindings = (1,) if strong_only else (1, 2)  # STB_GLOBAL, STB_WEAK
        return {name for name, bind, shndx in self.symbols if name and bind in bindings and shndx != 0}

    def undefined_names(self) -> set[str]:
        return {name for name, _, shndx in self.symbols if name and shndx == 0}

    def reached_imports(self, is_root: Callable[[str], bool], loaded: bool = True) -> tuple[set[str], set[str]]:
        """(the undefined symbols, the global and weak definitions) its code reaches from the functions whose names
        `is_root` and (`loaded`) from its initializers, finalizers, ifunc resolvers, definitions under names
        reserved to the implementation (the toolchain's startup files call some), personality routines and what its
        LSDAs name (the unwinder runs them when an exception passes through a frame), following its relocations
        section by section (built with -ffunction-sections, each function is a section of its own): what that code
        can call, whatever calls it makes of pybind11's inline glue on the way. A global or weak definition is
        followed here, and its name given back: the linker may keep another file's definition of it (a strong one
        over a weak one, the first file's instance of an inline function)."""
        todo = [shndx for name, _, shndx in self.symbols if 0 < shndx < len(self.sections) and name and is_root(name)]
        if loaded:
            todo += [i for i, name in enumerate(self.names) if name.startswith(_INIT_SECTIONS)] + sorted(self.ifuncs)
            todo += [shndx for name, bind, shndx in self.symbols if 0 < shndx < len(self.sections)
                     and bind in (1, 2) and _IMPLEMENTATION_NAME.fullmatch(name)]  # STB_GLOBAL, STB_WEAK
            todo.append(_UNWINDER)
        seen, reached, linked = set(), set(), set()
        while todo:
            section = todo.pop()
            if section in seen:
                continue
            seen.add(section)
            for k in self.refs.get(section, ()):
                if k >= len(self.symbols):
                    continue
                name, bind, shndx = self.symbols[k]
                if shndx == 0:
                    reached.add(name)
                elif shndx < len(self.sections):
                    todo.append(shndx)
                    if name and bind in (1, 2):  # STB_GLOBAL, STB_WEAK
                        linked.add(name)
        return reached, linked


def check_module_objects(objects: dict[str, bytes], bound: set[str], glue: bytes | None = None) -> list[Violation]:
    """Rules over the object files of a pybind11 module the judge built (torch's load_inline, the fallback; every
    file compiled with -ffunction-sections): the glue is the judge's, generated from the functions it binds; the
    candidate's code — the functions `bound`, what the glue (`glue`, its object file) calls or takes over from a
    candidate's object, everything those and each file's initializers and finalizers call, from one of its files
    to another — may not reach the interpreter, nor anything a compiled kernel may not import (the rules of
    check_artifact_symbols, over what runs rather than over what the shared object imports: the judge's glue,
    built from torch's headers by the box's toolchain, imports what it imports). pybind11's API needs no name of
    the C API (`pybind11::cast(x).attr(...)` walks from a tensor to any object, and to the harness that reports on
    it), and torch/extension.h alone brings pybind11's glue into every file that includes it: what counts is what
    the candidate's code reaches."""
    parsed = {file: _ObjectFile.parse(obj) for file, obj in sorted(objects.items())}
    glue_file = _ObjectFile.parse(glue) if glue is not None else None
    for file, candidate in parsed.items():
        if candidate is None or candidate.symtab is None:
            return [Violation("interpreter-api", f"{file}: not an object file the judge's compiler makes")]
    files: dict[str, _ObjectFile] = {file: f for file, f in parsed.items() if f is not None}
    defined = set().union(*(f.defined_globals() for f in files.values()))
    strong = set().union(*(f.defined_globals(strong_only=True) for f in files.values()))
    # the glue calls the bound functions and whatever else it imports that a candidate's file defines, and a
    # strong definition of the candidate's takes the place of the glue's own (weak) instance of the same name
    wanted: set[str] = set()
    glue_defined: set[str] = set()
    if glue_file is not None:
        glue_defined = glue_file.defined_globals()
        wanted = (glue_file.undefined_names() & defined) | (glue_defined & strong)
    # the glue's code that the candidate's calls: a name of the glue's that no file of the candidate's defines, or
    # an instance of an inline function of the glue's (linked first, the glue's instance is the one kept)
    into_glue: set[str] = set()

    def is_root(symbol: str) -> bool:
        return symbol in wanted or symbol in bound or (_nested_name(symbol)[-1:] or [""])[0] in bound

    while True:  # one file's code calls another's: what it reaches there is followed too, to a fixed point
        reached, linked = {}, set()
        for file, f in files.items():
            reached[file], names = f.reached_imports(is_root)
            linked |= names
        if glue_file is not None:
            reached["the judge's glue, called by the candidate's code"], names = glue_file.reached_imports(
                lambda symbol: symbol in into_glue, loaded=False)
            linked |= names
        called = set().union(*reached.values()) | linked
        across = called & defined
        glue_called = (called & glue_defined) - strong
        if across <= wanted and glue_called <= into_glue:
            break
        wanted |= across
        into_glue |= glue_called
    for file, names in reached.items():
        bad = sorted(name for name in names if _PYTHON_SYMBOL.fullmatch(name) or name in _python_bindings())
        if bad:
            return [Violation("interpreter-api", f"its compiled code reaches the Python interpreter "
                                                 f"({', '.join(bad[:4])}): native code has no business with the "
                                                 "interpreter (pybind11's API included)")]
    for file, names in reached.items():
        found = _native_symbol_violations(names - defined)
        if found:
            return [Violation(found[0].rule, f"{found[0].message} ({file})")]
    return []


def check_build_request(request) -> list[Violation]:
    """The rules a candidate's source passed, applied again to what it actually asked to build (its
    Python may assemble the source at run time), and its compiler flags. Same rules for every build
    path: the fast path and torch's own load_inline."""
    found = check_native_source(request.cpp, cuda=False) + check_native_source(request.cuda, cuda=True)
    for flag in request.cflags:
        if flag.strip() and not _C_FLAGS.fullmatch(flag.strip()):
            found.append(Violation("build-flags", f"compiler flag {flag[:60]!r} is not allowed"))
    for flag in request.cuda_cflags:
        if flag.strip() and not _CUDA_FLAGS.fullmatch(flag.strip()):
            found.append(Violation("build-flags", f"nvcc flag {flag[:60]!r} is not allowed"))
    for flag in request.ldflags:
        if flag.strip() and flag.strip() not in _LINK_FLAGS:
            found.append(Violation("build-flags", f"linker flag {flag[:60]!r} is not allowed"))
    if request.include_paths:
        found.append(Violation("build-flags", "extra_include_paths: a candidate's code is all in its sources"))
    seen: dict[str, Violation] = {}
    for v in found:
        seen.setdefault(v.rule, v)
    return list(seen.values())


def check_source(tree: ast.Module) -> list[Violation]:
    """Static rules over a parsed candidate module (and the C++/CUDA strings inside it)."""
    checker = _Checker(tree)
    checker.visit(tree)
    found = list(checker.found)
    for text in _string_constants(tree):
        if "#include" in text or "__global__" in text or "torch::" in text:
            found += check_native_source(text)
    seen: dict[str, Violation] = {}
    for v in found:  # one violation per rule is enough for feedback
        seen.setdefault(v.rule, v)
    return list(seen.values())
