"""The parity corpus: KernelBench problems paired with CUDA candidates written the way language models write
them, for checking that the fast build path (verifier/fastbuild.py, kd_shim) never changes a verdict compared
with torch's own `load_inline`. See README.md beside this file.

Each pair is one module here: REFERENCE (a KernelBench reference, sizes reduced), CANDIDATE (a KernelBench-format
`ModelNew` built with `load_inline`), EXPECTED (the verdict category torch's `load_inline` path should give),
FEATURES (the host-API families and kernel techniques the candidate uses), FAMILY (the problem's kind) and SOURCE.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import NamedTuple

from schemas.records import Candidate, Problem, VerdictCategory

CORPUS_DIR = Path(__file__).parent

# What each feature name means, as a pattern its candidate's source must contain: FEATURES is checked against the
# text (tests/test_parity_corpus.py), so a label cannot claim coverage the candidate does not have.
FEATURE_MARKERS: dict[str, str] = {
    "TORCH_CHECK": r"TORCH_CHECK\(",
    "CHECK_INPUT_macros": r"#define CHECK_(?:CUDA|CONTIGUOUS|INPUT)\(",
    "AT_DISPATCH_FLOATING_TYPES": r"AT_DISPATCH_FLOATING_TYPES\(",
    "AT_DISPATCH_FLOATING_TYPES_AND_HALF": r"AT_DISPATCH_FLOATING_TYPES_AND_HALF\(",
    "AT_DISPATCH_FLOATING_TYPES_AND2": r"AT_DISPATCH_FLOATING_TYPES_AND2\(",
    "packed_accessor": r"\.packed_accessor(?:32|64)<",
    "options": r"\.(?:options|dtype|device)\(\)",
    "factory_with_options": r"(?:torch|at)::(?:empty|zeros|empty_like|zeros_like)\([^;]*(?:options\(|TensorOptions|dtype\()",
    "cuda_stream": r"getCurrentCUDAStream\(",
    "launch_check": r"C10_CUDA_KERNEL_LAUNCH_CHECK\(\)|cudaGetLastError\(\)",
    "vector_return": r"std::vector<(?:torch|at)::Tensor>\s+\w+\s*\(",
    "tuple_return": r"std::tuple<(?:(?:torch|at)::Tensor,?\s*)+>\s+\w+\s*\(",
    "optional_arg": r"(?:c10|std|at|torch)::optional<(?:torch|at)::Tensor>",
    "scalar_args": r"(?:torch|at)::Tensor\s+\w+\s*\([^)]*\b(?:double|int64_t|bool|float|int)\s+\w+\s*[,)]",
    "half": r"at::Half|c10::Half|__half\b|__half2float|AT_DISPATCH_FLOATING_TYPES_AND_HALF|kHalf",
    "bfloat16": r"__nv_bfloat16|at::BFloat16|c10::BFloat16|kBFloat16|__bfloat162float",
    "shared_memory": r"__shared__",
    "warp_shuffle": r"__shfl_(?:down_|up_|xor_)?sync\(",
    "templates": r"template\s*<",
    "grid_stride": r"blockDim\.x\s*\*\s*gridDim\.x|gridDim\.x\s*\*\s*(?:\(int64_t\)|\(long\))?\s*blockDim\.x|"
                   r"\*\s*gridDim\.x|\+=\s*(?:\(int64_t\))?\s*BLOCK\s*\*\s*gridDim\.x",
    "block_reduction": r"__syncthreads\(\)[\s\S]*(?:>>=\s*1|/=\s*2|>>\s*1)|warp_sums|partial\[",
    "device_guard": r"CUDAGuard",
    "vectorized_float4": r"float4",
    "split_host": r"void\s+\w+_launcher\(",
    "redteam": r"",
    "mistake": r"",
}
EXPECTED_CATEGORIES = {c.value for c in VerdictCategory}


class CorpusEntry(NamedTuple):
    problem: Problem
    candidate: Candidate
    expected: str
    features: list[str]


def entry_names() -> list[str]:
    """Module names of every pair, sorted (the pair's name)."""
    return sorted(p.stem for p in CORPUS_DIR.glob("*.py") if p.stem != "__init__")


def load_pair(name: str):
    return importlib.import_module(f"{__name__}.{name}")


def load_corpus(names: list[str] | None = None) -> list[CorpusEntry]:
    """(Problem, Candidate, expected verdict category, features) for every pair, in name order. A candidate's
    `origin` is `parity:<name>`, which `name_of` reads back."""
    entries = []
    for name in names or entry_names():
        module = load_pair(name)
        problem = Problem(id=Problem.make_id(module.REFERENCE), source="kernelbench", reference=module.REFERENCE,
                          name=module.SOURCE.removeprefix("KernelBench "), op_families=[module.FAMILY],
                          difficulty=module.LEVEL)
        candidate = Candidate(id=Candidate.make_id(problem.id, module.CANDIDATE, "cuda"), problem_id=problem.id,
                              source=module.CANDIDATE, backend="cuda", origin=f"parity:{name}")
        entries.append(CorpusEntry(problem, candidate, module.EXPECTED, list(module.FEATURES)))
    return entries


def name_of(candidate: Candidate) -> str:
    return candidate.origin.removeprefix("parity:")


def native_text(source: str) -> str:
    """The C++/CUDA string constants of a candidate's Python, joined (what its features are read from)."""
    import ast

    return "\n".join(n.value for n in ast.walk(ast.parse(source))
                     if isinstance(n, ast.Constant) and isinstance(n.value, str)
                     and ("#include" in n.value or "__global__" in n.value or "torch::" in n.value))


def detected_features(source: str) -> set[str]:
    """Feature names whose marker appears in the candidate's native code."""
    text = native_text(source)
    return {name for name, marker in FEATURE_MARKERS.items() if marker and re.search(marker, text)}
