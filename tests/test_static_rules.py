"""The static rules over a candidate's Python and its native code's imported symbols (verifier/legality.py), case
by case and quickly: no judge, no compiler. Each refused case is a route a red-team review found to the harness's
own modules (verifier.sandbox: its dispatch recorder and op watch replaced, ATen's compute then unseen) or to library
math; tests/test_redteam_reward.py judges one of each for real. Honest code must keep passing: the parity corpus
(tests/test_parity_corpus.py), the template teacher's solutions, and the cases below."""

from __future__ import annotations

import ast

import pytest

from verifier.legality import ALLOWED_MODULES, check_artifact_symbols, check_source


def rules(source: str) -> list[str]:
    return [v.rule for v in check_source(ast.parse(source))]


def first(source: str):
    found = check_source(ast.parse(source))
    return found[0] if found else None


# -- 1: imports are an allowlist --------------------------------------------------------------------------------------
@pytest.mark.parametrize("source", [
    "import pkgutil", "import pydoc", "import string", "from string import Formatter", "import importlib.util",
    "import hashlib", "import dataclasses", "import abc", "import json", "import re", "import copy", "import random",
    "import logging", "import warnings", "import contextlib", "import enum", "import einops",
    "from pkgutil import resolve_name as r", "from pydoc import locate", "import os, pkgutil",
    "from . import sandbox", "from .. import verifier", "import antigravity", "import this",
])
def test_a_module_outside_the_allowlist_is_refused(source):
    violation = first(source)
    assert violation is not None and violation.rule == "forbidden-import", source
    assert "math" in violation.message or "forbids" in violation.message or "relative" in violation.message


def test_the_allowlist():
    assert ALLOWED_MODULES == {"torch", "math", "os", "time", "functools", "itertools", "collections", "typing",
                               "__future__"}


def test_the_refusal_lists_the_allowlist():
    message = first("import pkgutil").message
    for name in ("torch", "math", "os", "time", "functools", "itertools", "collections"):
        assert name in message, message


@pytest.mark.parametrize("source", [
    "import torch", "import torch.nn as nn", "import torch.nn.functional as F", "from torch import nn",
    "from torch.utils.cpp_extension import load_inline", "import math", "import os", "import os.path", "import time",
    "import functools", "import itertools", "import collections", "import collections.abc",
    "from collections import OrderedDict, namedtuple, defaultdict", "from collections.abc import Sequence",
    "from functools import reduce, partial, lru_cache", "from itertools import product, repeat",
    "from math import sqrt, pi, prod", "from __future__ import annotations",
    "from typing import Optional, List, Tuple, Dict, Union, Any, Callable, Sequence",
    "import typing\nx: typing.Optional[int] = None", "import torch as th", "from torch import Tensor",
    "import torch.cuda", "from torch.nn import init", "import torch.nn.init as init",
])
def test_what_honest_candidates_import_is_allowed(source):
    assert rules(source) == [], source


def test_numpy_is_still_host_compute():
    assert rules("import numpy as np") == ["host-compute"]


def test_star_imports_are_refused():
    """`from torch import *` binds load, and `from os import *` system, under names no rule tracks."""
    assert rules("from torch import *") == ["forbidden-import"]
    assert rules("from os import *") == ["forbidden-import"]


@pytest.mark.parametrize("source", [
    "from typing import get_type_hints", "import typing\ntyping.get_type_hints(f)", "from typing import ForwardRef",
    "import typing\ntyping._eval_type", "import typing\ntyping.sys",
    "import typing\ntyping.Optional['x'].__args__[0]._evaluate(None, None, frozenset())",
    "import torch\nr = T.__bound__\ntype(r)('x').evaluate()", "x = ref.__forward_code__", "x = ref.__forward_arg__",
])
def test_typing_gives_only_its_annotations(source):
    """typing.get_type_hints evaluates string annotations: any code, under no rule."""
    assert rules(source) != [], source


@pytest.mark.parametrize("source", [
    "import functools\n@functools.singledispatch\ndef f(x): pass",
    "from functools import singledispatch",
    "from functools import singledispatchmethod",
    "import functools\nfunctools.update_wrapper(a, b)",
    "import functools\nfunctools.wraps(f, assigned=('x',))(g)",
    "import functools\nfunctools.wraps(f, (), ('__dict__',))(g)",
    "import functools\nw = functools.wraps",
    "from functools import update_wrapper",
    "import functools\nfunctools.WRAPPER_ASSIGNMENTS",
])
def test_functools_reads_no_attribute_by_name(source):
    """singledispatch's register evaluates string annotations (typing.get_type_hints); update_wrapper and wraps
    copy the attributes they are named (`assigned`, `updated`) onto an object of the candidate's that keeps them."""
    assert "dynamic-code" in rules(source), source


def test_functools_wraps_as_a_plain_decorator_is_fine():
    source = "import functools\ndef deco(f):\n    @functools.wraps(f)\n    def g(*a):\n        return f(*a)\n    return g"
    assert rules(source) == []


# -- 2: torch's loaders -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("source", [
    "import torch\ntorch.load(f, weights_only=False)", "import torch\nload = torch.load", "from torch import load",
    "from torch import load as L", "import torch\ntorch.save(x, f)", "import torch.hub", "from torch import hub",
    "import torch\ntorch.hub.load('a', 'b')", "import torch.serialization", "from torch.serialization import load",
    "import torch\ntorch.serialization.load(f)", "import torch.package", "from torch.package import PackageImporter",
    "import torch\ntorch.package.PackageImporter(f)", "import torch.utils.model_zoo",
    "from torch.utils.model_zoo import load_url", "import torch\ntorch.utils.model_zoo.load_url('u')",
    "import torch\ntorch.utils.data.DataLoader(x)", "from torch.utils.data import DataLoader",
    "import torch.utils.benchmark", "import torch\ntorch.utils.benchmark.Timer('x').timeit(1)",
    "import torch.multiprocessing", "import torch\ntorch.distributed.rpc", "import torch\nt = torch\nt.load(f)",
    "import torch\ntorch.storage.torch.load(f)", "import torch.nn as nn\nnn.modules.module.torch.load(f)",
])
def test_torch_loaders_are_refused(source):
    assert "dynamic-code" in rules(source), source


@pytest.mark.parametrize("source", ["import torch\ntorch.jit.load(f)", "from torch.jit import load",
                                    "import torch.jit", "import torch\nl = torch.jit.load"])
def test_torchscript_loaders_are_refused(source):
    assert {"dynamic-code", "torch-compile"} & set(rules(source)), source


# -- 3: match statements ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("source", [
    "match f:\n    case object(__globals__=g):\n        pass",
    "match x:\n    case 1:\n        pass",
    "match x:\n    case C(a):\n        pass",
])
def test_match_statements_are_refused(source):
    assert "dynamic-code" in rules(source)


# -- 4: names -----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["getattr", "vars", "setattr", "delattr", "globals", "locals", "__import__", "exec",
                                  "eval", "compile", "open", "breakpoint", "help"])
def test_builtins_that_reach_by_name_are_refused_as_values(name):
    assert "dynamic-code" in rules(f"g = {name}\ng(obj, 'x')"), name
    assert "dynamic-code" in rules(f"fs = [{name}]"), name
    assert "dynamic-code" in rules(f"import functools\nfunctools.partial({name}, obj)"), name


@pytest.mark.parametrize("source", [
    "class C:\n    __match_args__ = ('__globals__',)",
    "class M(type):\n    def __instancecheck__(cls, o):\n        return True",
    "class M(type):\n    def __subclasscheck__(cls, o):\n        return True",
    "x = C.__match_args__", "M.__instancecheck__ = f", "t = type('C', (), {'__match_args__': ('x',)})",
    "x.__getstate__()", "x.__reduce_ex__(2)", "x.__setstate__(s)", "f.__defaults__", "f.__kwdefaults__",
    "type.__setattr__(C, 'x', 1)", "object.__delattr__(o, 'x')",
    "class C:\n    def __del__(self):\n        pass", "class C:\n    __del__ = f",
])
def test_dunder_names_that_read_or_write_by_name_are_refused(source):
    assert "dynamic-code" in rules(source), source


@pytest.mark.parametrize("source", [
    "class T(torch.Tensor):\n    @classmethod\n    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
    "        return func(*args)",
    "class T(torch.Tensor):\n    def __torch_dispatch__(self, func, types, args=(), kwargs=None):\n"
    "        return func(*args)",
    "class T(torch.Tensor):\n    __torch_function__ = staticmethod(f)",
    "T.__torch_dispatch__ = f", "x = y.__torch_function__",
    "t = type('T', (torch.Tensor,), {'__torch_function__': f})",
])
def test_tensor_subclass_dispatch_hooks_are_refused(source):
    """A tensor subclass whose __torch_function__ computes when the harness reads its output."""
    assert "torch-internals" in rules("import torch\n" + source), source


# -- 5: forbidden modules re-exported from allowed ones -----------------------------------------------------------------
@pytest.mark.parametrize("source", [
    "from torch import sys", "from os import sys", "from torch import builtins", "from torch import ctypes",
    "from torch.nn.functional import importlib", "from torch.nn.modules.module import inspect",
    "from torch.serialization import pickle", "from collections import _sys", "from os import path as p\np.sys",
    "from torch.utils.cpp_extension import subprocess", "from torch.cuda import importlib",
    "import torch\ntorch.nn.functional.importlib.import_module('x')", "import torch\nb = torch.builtins",
    "import torch\ntorch.builtins.getattr(f, 'x')", "import torch.nn as nn\nnn.modules.module.inspect",
    "import os\nos.path.genericpath.os.sys", "import collections\ncollections._sys",
    "import torch\nm = torch.nn\nm.functional.importlib", "import torch\ntorch.ctypes.CDLL",
    "import torch\nx.importlib.import_module('v')", "import torch\nx.pickle.loads(b)",
])
def test_a_forbidden_module_reached_through_an_allowed_one_is_refused(source):
    assert set(rules(source)) & {"forbidden-import", "dynamic-code"}, source


@pytest.mark.parametrize("source", [
    "from torch import random", "from torch import nn", "import torch\ntorch.random.manual_seed(0)",
    "import torch\ntorch.nn.functional.relu", "from torch.nn import functional as F", "import os\nos.path.join('a')",
    "import torch\ntorch.types.Number", "import torch\nx.select(0, 1)", "import torch\ntorch.cuda.current_stream()",
    "import torch\ntorch.backends.cudnn.enabled", "import collections\ncollections.abc.Sequence",
    "import torch\ntorch.__version__", "import math\nmath.pi", "import torch\ntorch.utils.cpp_extension.load_inline",
])
def test_honest_attribute_chains_of_allowed_modules_pass(source):
    assert rules(source) == [], source


@pytest.mark.parametrize("source", ["import os\nos.__getstate__()", "import torch\ntorch.__getattr__('x')",
                                    "import collections\ncollections.__dict__", "import os\nos.__loader__"])
def test_a_modules_own_machinery_is_refused(source):
    assert "dynamic-code" in rules(source), source


def test_assigning_into_any_module_is_patching():
    assert "patching" in rules("import functools\nfunctools.WRAPPER_ASSIGNMENTS = ('x',)")
    assert "patching" in rules("import collections\ncollections.Counter = dict")
    assert "patching" in rules("import torch\nT = torch.nn\nT.Module = object")


@pytest.mark.parametrize("source", ["import os\nos.posix_spawn('/bin/sh', [], {})", "import os\nos.execl('/bin/sh')",
                                    "import os\nrun = os.system", "import os\nos.register_at_fork(after_in_child=f)",
                                    "from os import spawnlp", "import os\nos.spawnvpe(0, 'x', [], {})"])
def test_os_process_control_is_refused_however_named(source):
    assert "process-control" in rules(source), source


# -- 6: frames, generators, coroutines, tracebacks, code objects --------------------------------------------------------
@pytest.mark.parametrize("attr", ["ag_frame", "ag_code", "ag_await", "gi_code", "gi_frame", "gi_yieldfrom", "cr_code",
                                  "cr_frame", "cr_await", "f_builtins", "f_code", "f_globals", "f_locals", "f_back",
                                  "f_lasti", "f_trace", "tb_next", "tb_frame", "tb_lasti", "co_code", "co_consts",
                                  "co_names", "co_qualname"])
def test_frame_generator_coroutine_traceback_and_code_attributes_are_refused(attr):
    assert "dynamic-code" in rules(f"x = obj.{attr}"), attr
    assert "dynamic-code" in rules(f"x = '{{0.{attr}}}'.format(obj)"), attr


def test_attributes_that_only_look_like_frame_attributes_pass():
    """An honest candidate of the parity corpus names its module tb_mm (transposed-b matmul)."""
    assert rules("self.tb_mm = mod\ny = self.tb_mm.matmul_forward(a, b)\nself.f_out = 3\nself.co_dim = 2") == []


# -- 7: library math in a built object's imported symbols ---------------------------------------------------------------
def _imports(*names: str) -> list[str]:
    from tests.test_redteam_reward import _elf_importing

    return [v.rule for v in check_artifact_symbols(_elf_importing(list(names)), False)]


@pytest.mark.parametrize("symbol", [
    "SGEMM", "sgemm_", "sgemm", "Sgemm", "DGEMM_64", "cgemm_batch", "ZGEMM", "sgemv_", "DGEMV", "saxpy", "DAXPY_",
    "sdot", "ddot_", "cdotc_", "zdotu", "sscal_", "DSCAL", "scopy", "dswap_", "srot", "drotg", "snrm2_", "dznrm2",
    "sasum", "isamax_", "IDAMAX", "ssyrk", "dsymm_", "ctrmm", "ztrsm_", "dger_", "zgeru", "sgetrf_", "DPOTRF",
    "dsyevd_", "sgesdd", "cblas_sgemm", "CBLAS_DGEMV", "cblas_saxpy", "mkl_sgemm", "MKL_Somatcopy",
    "mkl_blas_sgemm", "vsExp", "vdLn", "vmsExp", "VSEXP", "vsexp_", "vmdlog10_", "vdacos_64_", "VDTANH_", "vsTanh", "DftiComputeForward",
    "fbgemmPacked", "_ZN6fbgemm11fbgemmPackedEv", "_ZN6fbgemm9cblas_gemmEv", "_ZN4dnnl6memoryC1Ev",
    "dnnl_sgemm", "mkldnn_sgemm", "_ZN5ideep6tensorC1Ev", "cublasSgemm_v2", "CUBLASSGEMM", "cublasLtMatmul",
    "cudnnConvolutionForward", "cufftExecC2C", "cusparseSpMM", "cusolverDnSgetrf", "curandGenerate",
    "ncclAllReduce", "nnp_convolution_output", "pytorch_qnnp_create_convolution2d_nhwc_q8", "xnn_create_gemm",
    "aoti_torch_cpu_mm_out", "gemm_", "sgemm_batch_strided", "SGEMM_COMPACT",
])
def test_library_math_symbols_are_refused_in_any_case(symbol):
    assert _imports("expf", symbol) == ["library-math"], symbol


@pytest.mark.parametrize("symbol", [
    "expf", "exp", "sinf", "cosf", "tanhf", "logf", "sqrtf", "powf", "erff", "fmaxf", "fminf", "floorf", "ceilf",
    "roundf", "lroundf", "expm1f", "log1pf", "memcpy", "memset", "memmove", "malloc", "free", "calloc", "strlen",
    "vsnprintf", "vsprintf", "snprintf", "printf", "puts", "__cxa_throw", "__cxa_allocate_exception",
    "__cxa_begin_catch", "__gxx_personality_v0", "_Unwind_Resume", "__stack_chk_fail", "__assert_fail",
    "GOMP_parallel", "omp_get_thread_num", "omp_get_num_threads", "cudaLaunchKernel", "cudaGetLastError",
    "__cudaRegisterFunction", "__cudaRegisterFatBinary", "__cudaPopCallConfiguration", "cudaMemcpyAsync",
    "_ZN3c1019UndefinedTensorImpl10_singletonE", "_ZNK2at10TensorBase14const_data_ptrIfEEPKT_v",
    "_ZN3c106detail14torchCheckFailEPKcS2_jRKSs", "_ZdlPv", "_Znwm", "_ZSt9terminatev", "csqrtf", "cabsf", "cexpf",
    "sincosf", "scalbnf", "ldexpf", "frexpf", "copysignf", "sched_yield", "pthread_once", "strcmp",
    "Sleef_expf8_u10", "Sleef_tanhf8_u10",
])
def test_what_honest_objects_import_is_not_library_math(symbol):
    assert _imports(symbol) == [], symbol


@pytest.mark.parametrize("source", [
    "import torch\n[torch][0].load(f)", "import torch\nm = (lambda: torch)()", "import torch\nf(torch)",
    "import torch\nclass A:\n    m = torch\nA.m.load(f)", "import torch\nself.m = torch.nn", "import torch\nx = [torch.nn]",
    "import torch\ndef g(m=torch):\n    return m", "import torch\n(t := torch).load", "import torch\nt, = [torch]",
    "import torch\nt = torch\nreturn_me = lambda: t", "import torch\nwith torch as t:\n    pass",
    "import torch\nd = {'m': torch.nn.functional}", "import torch\ntorch.ops.import_module('x')",
    "class A:\n    import torch\nA.torch.load(f)", "class A:\n    from torch import serialization as s\n",
    "import os as x\ndef f():\n    import torch as x\n    return x.load", "import os\nimport torch\nt = os\nt = torch",
])
def test_a_module_is_used_by_its_attributes_never_as_a_value(source):
    """What the rules follow of a module is its name and its attributes: one put in a list, passed, returned or
    kept as a class attribute would reach torch.load (or anything) out of their sight."""
    assert "dynamic-code" in rules(source), source


def test_modules_aliased_and_used_by_their_attributes_pass():
    source = ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nt = torch\nfn = t.nn.functional\n"
              "class M(nn.Module):\n    def __init__(self):\n        self.act = (F.relu, fn.gelu, t.float32)\n"
              "y = isinstance(x, torch.Tensor)\nz = torch.empty(3, dtype=torch.float32, device=torch.device('cpu'))")
    assert rules(source) == []


def test_every_c_name_torchs_own_libraries_export_is_library_code():
    """libtorch_cpu exports 26,000 C names (MKL, LAPACK, NNPACK, QNNPACK, libuv, miniz, the AOTInductor shim's ATen
    kernels...): an object that imports one calls that library, whatever the rules over names know of it."""
    from verifier.legality import _bundled_exports

    exports = _bundled_exports()
    assert {"SGEMM", "sgemm_", "vsExp", "vmdLn", "aoti_torch_cpu_mm_out", "nnp_convolution_output", "uv_tcp_connect",
            "pthreadpool_parallelize_1d"} <= exports
    assert not exports & {"expf", "memcpy", "vsnprintf", "GOMP_parallel", "omp_get_thread_num", "Sleef_expf8_u10"}
    sample = sorted(exports)[::max(1, len(exports) // 400)]
    assert [name for name in sample if _imports(name) != ["library-math"]] == []


@pytest.mark.parametrize("source", ["x = mod._module", "x = obj._evaluate", "y = t.untyped_storage()._share_fd_cpu_()",
                                    "x = a.b._c", "x = self.mod._module", "x = obj.__private"])
def test_private_attributes_are_read_only_on_self(source):
    assert "dynamic-code" in rules(source), source


def test_a_class_reads_its_own_private_attributes():
    source = ("class M:\n    def __init__(self):\n        self._cache = {}\n        self.__hidden = 1\n"
              "    @classmethod\n    def make(cls):\n        return cls._registry\n    def get(self):\n"
              "        return self._cache, self.__hidden")
    assert rules(source) == []


@pytest.mark.parametrize("source", [
    "import torch\ng = torch.cuda.CUDAGraph()", "import torch\nwith torch.cuda.graph(g):\n    pass",
    "import torch\nf = torch.cuda.make_graphed_callables(m, (x,))", "from torch.cuda import graph",
    "import torch.cuda.graphs", "import torch\ntorch.cuda.graphs.CUDAGraph", "import torch\ng = torch.accelerator.Graph()",
    "from torch.cuda import CUDAGraph", "import torch\np = torch.cuda.graph_pool_handle()",
])
def test_device_graphs_are_refused(source):
    """A CUDA graph captured in __init__ (ATen's kernels, seen there by no one who counts) replays in forward
    with no op dispatched: the op watch sees nothing of it. CUDA-only, so no judgement here."""
    assert "side-stream" in rules(source), source


@pytest.mark.parametrize("source", ["import torch\ntorch.compiler.compile(f)", "import torch.compiler",
                                    "import torch\ntorch.compiler.load_compiled_function(f)"])
def test_torch_compiler_is_compiled_torch_code(source):
    assert "torch-compile" in rules(source), source


def test_cuda_glue_is_still_allowed():
    source = ("import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
              "        s = torch.cuda.current_stream()\n        torch.cuda.synchronize()\n"
              "        return mod.fwd(x.cuda(), torch.cuda.current_device())")
    assert rules(source) == []
