"""KernelBench-format references: loading one, trial seeds, and comparing outputs.

The comparison runs in the judge, never in a sandbox, so a candidate can neither see the reference's
outputs nor patch the comparison. Loading and running a reference happens in a `reference` sandbox
(verifier/sandbox.py): an imported problem is untrusted code too.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import io
import math
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import torch

from schemas.records import content_hash

TOLERANCES: dict[str, dict[torch.dtype, tuple[float, float]]] = {
    # (atol, rtol)
    "default": {torch.float64: (1e-7, 1e-7), torch.float32: (1e-4, 1e-4),
                torch.float16: (5e-3, 5e-3), torch.bfloat16: (2e-2, 2e-2)},
    "kernelbench": {torch.float64: (1e-2, 1e-2), torch.float32: (1e-2, 1e-2),
                    torch.float16: (1e-2, 1e-2), torch.bfloat16: (1e-2, 1e-2)},
}


def reassociation_scales(model: torch.nn.Module, inputs: list[Any], expected: list[torch.Tensor]) \
        -> list[float | None]:
    """Per output, the largest value the reference gives with every floating input and parameter replaced by
    its magnitude: for a sum, a mean or a matmul, what the output's terms add up to in absolute value, which
    bounds how far an honest kernel summing in another order may round. None for an output where that is not
    a finite number (or for all, when the reference does not run so); for elementwise graphs it is about the
    output's own size and widens nothing that matters. `model`'s parameters become their magnitudes: pass a
    model that is not run again."""
    scales: list[float | None] = [None] * len(expected)
    try:
        with torch.no_grad():
            for tensor in [*model.parameters(), *model.buffers()]:
                if tensor.is_floating_point():
                    tensor.abs_()
            magnitudes = to_list(model(*[x.abs() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                                         for x in inputs]))
    except Exception:  # noqa: BLE001 - a reference that needs signed inputs simply gets no widening
        return scales
    if len(magnitudes) != len(expected):
        return scales
    for i, (magnitude, exp) in enumerate(zip(magnitudes, expected)):
        if isinstance(magnitude, torch.Tensor) and magnitude.is_floating_point() and magnitude.numel() \
                and exp.is_floating_point() and magnitude.shape == exp.shape:
            top = float(magnitude.abs().max())
            scales[i] = top if math.isfinite(top) else None
    return scales


class ReferenceError(RuntimeError):
    """The reference program itself is broken (not the candidate's fault)."""


def load_reference_module(source: str, name: str = "reference") -> ModuleType:
    """Execute a KernelBench-format source and check it defines the three required names."""
    module = ModuleType(name)
    try:
        exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    except Exception as exc:
        raise ReferenceError(f"reference source failed to execute: {exc!r}") from exc
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if not hasattr(module, n)]
    if missing:
        raise ReferenceError(f"reference source lacks {', '.join(missing)}")
    return module


def trial_seed(problem_id: str, trial: int, base_seed: int, key: bytes = b"") -> int:
    """The seed of a trial's (or a timed call's) inputs. Under `key` (a judge's: Judge.seed_key, from its home's
    secret) an HMAC no candidate can compute: from public values alone (the reference's hash, the run's seed), a
    ModelNew could draw every trial's and timed call's inputs in its __init__, compute their outputs there, off
    the clock, and look them up in forward — a pass with a forged speedup."""
    if key:
        message = "\x00".join((problem_id, str(trial), str(base_seed))).encode()
        return int(hmac.new(key, message, hashlib.sha256).hexdigest()[:8], 16)
    return int(content_hash(problem_id, str(trial), str(base_seed), length=8), 16)


def to_list(out: Any) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)) and all(isinstance(o, torch.Tensor) for o in out):
        return list(out)
    raise TypeError(f"forward must return a tensor or a tuple of tensors, got {type(out).__name__}")


def dumps(obj: Any) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


# What decoding a message may build, in objects as if none were shared (MAX_EXPANDED + 2 per pickle opcode): a
# message the harness sends shares no containers, so it is never near; a pickle's memo can make a few hundred
# bytes stand for 2^64 objects (a tuple of one tuple twice, 64 deep), whose hash or repr never ends.
MAX_EXPANDED = 1 << 20
_MUTATORS = frozenset({"APPEND", "APPENDS", "SETITEM", "SETITEMS", "ADDITEMS", "BUILD"})


class _Shared:
    """One object a pickle builds, by how many objects it stands for unshared."""
    __slots__ = ("size",)

    def __init__(self, size: int):
        self.size = size


@functools.cache
def _shape(op: Any) -> tuple[bool, int]:
    """Whether a pickle opcode takes the stack down to its mark, and how many objects it takes besides (below
    the mark, or all it takes where it takes none)."""
    names = [s.name for s in op.stack_before]
    return ("mark" in names, names.index("mark") if "mark" in names else len(names))


def _expanded_size(pickled: bytes, limit: int) -> int:
    """The objects a pickle's value stands for, each memo fetch counted as a copy of what it fetches (a bound on
    the work of any traversal of it: hash, repr, equality); counting stops as soon as it is past `limit`."""
    import pickletools

    mark, stack, memo, largest = object(), [], {}, 0
    for op, arg, _ in pickletools.genops(pickled):
        name = op.name
        if name in ("PUT", "BINPUT", "LONG_BINPUT"):
            memo[arg] = stack[-1]
            continue
        if name == "MEMOIZE":
            memo[len(memo)] = stack[-1]
            continue
        if name in ("GET", "BINGET", "LONG_BINGET"):
            stack.append(memo[arg])
            continue
        if name == "MARK":
            stack.append(mark)
            continue
        if name == "DUP":
            stack.append(stack[-1])
            continue
        marked, below = _shape(op)
        popped = []
        if marked:
            while stack[-1] is not mark:
                popped.append(stack.pop())
            stack.pop()
        popped += [stack.pop() for _ in range(below)]
        size = 1 + sum(p.size for p in popped)
        if name in _MUTATORS:  # the container below, filled in place (the memo holds the same one)
            container = popped[-1]
            container.size = size
            stack.append(container)
        elif op.stack_after:
            stack.extend(_Shared(size) for _ in op.stack_after)
        largest = max(largest, size)
        if largest > limit:
            break
    return largest


def loads(blob: bytes) -> Any:
    """A message decoded. weights_only: the blob may come from an untrusted sandbox (no code runs); and refused
    (ValueError) where its pickle stands for more objects than its bytes could without sharing (MAX_EXPANDED):
    a dict key of 2^64 shared tuples froze the whole judge while torch.load hashed it, in C, holding the GIL."""
    import zipfile

    try:
        with zipfile.ZipFile(io.BytesIO(blob)) as archive:
            if any(info.compress_type != zipfile.ZIP_STORED for info in archive.infolist()):
                raise ValueError("a compressed entry")  # torch.save stores its entries; inflating is not bounded
        # the pickle torch.load will read, read as it reads it (its own zip reader: no other parser's view)
        pickled = torch._C.PyTorchFileReader(io.BytesIO(blob)).get_record("data.pkl")
        limit = MAX_EXPANDED + 2 * len(pickled)
        if _expanded_size(pickled, limit) > limit:
            raise ValueError("its pickle stands for more objects than it holds")
    except ValueError:
        raise
    except Exception as exc:  # noqa: BLE001 - no archive, or a pickle that never parses: never torch.save's
        raise ValueError(f"not a message torch.save writes ({type(exc).__name__})") from None
    return torch.load(io.BytesIO(blob), weights_only=True)


@dataclass
class Mismatch:
    message: str


def layout_mismatch(expected: list[torch.Tensor], actual: list[tuple[tuple[int, ...], torch.dtype]]) -> Mismatch | None:
    """Output count, shapes and dtypes checked before any data is read."""
    if len(expected) != len(actual):
        return Mismatch(f"returned {len(actual)} outputs, expected {len(expected)}")
    for i, (exp, (shape, dtype)) in enumerate(zip(expected, actual)):
        label = f"output {i}" if len(expected) > 1 else "output"
        if tuple(shape) != tuple(exp.shape):
            return Mismatch(f"{label} has shape {tuple(shape)}, expected {tuple(exp.shape)}")
        if dtype != exp.dtype:
            return Mismatch(f"{label} has dtype {dtype}, expected {exp.dtype}")
    return None


# Elements compared at once: an output is compared a slice at a time, so the comparison's float64 temporaries (a
# few times the slice: ~0.4 GB together at 8 M elements) stay the same whatever the output's size. Whole, a
# full-size KernelBench output of 6.4 GB took ~60 GB of the GPU's memory in the judge for one comparison, and the
# judge's allocator kept it: sandboxes beside it ran out of memory (session 10 on the H200).
COMPARE_CHUNK_ELEMENTS = 1 << 23


def compare_outputs(expected: list[torch.Tensor], actual: list[torch.Tensor], tolerance: str,
                    scales: list[float | None] | None = None,
                    device: torch.device | str | None = None) -> Mismatch | None:
    """None when `actual` matches `expected`; otherwise what differs, for the model to read. Runs on `device`
    (default: where each expected output lives — the GPU on the cuda backend), one slice of
    COMPARE_CHUNK_ELEMENTS at a time: each slice of both is moved there, so neither output need be there whole.

    `scales` (one per output, from the reference: `reassociation_scales`) widen the bound by one unit of
    roundoff of what the output's terms add up to in absolute value: a sum of 3 M normal values is about
    ±1,700 but its terms add up to 2.4 M, and two honest summation orders differ by ~0.1 — 50 times the
    default bound around a result near zero. Never beyond KernelBench's bound (rtol = atol = 1e-2)."""
    layout = layout_mismatch(expected, [(tuple(t.shape), t.dtype) for t in actual])
    if layout is not None:
        return layout
    for i, (exp, got) in enumerate(zip(expected, actual)):
        label = f"output {i}" if len(expected) > 1 else "output"
        scale = scales[i] if scales is not None and i < len(scales) else None
        found = _compare_output(exp, got, tolerance, scale, exp.device if device is None else torch.device(device))
        if found is not None:
            return Mismatch(f"{label} {found}")
    return None


def _flat_range(t: torch.Tensor, start: int, stop: int) -> torch.Tensor:
    """Elements [start, stop) of `t` in row-major order, reading only those: `reshape(-1)` of a view it cannot
    flatten in place (a transposed output, a broadcast one of stride 0: legal layouts) copies the whole of it,
    multi-GB at full size, into the judge's memory. Their storage offsets are gathered instead, a slice at a time."""
    if t.is_contiguous():
        return t.reshape(-1)[start:stop]
    index = torch.arange(start, min(stop, t.numel()), dtype=torch.int64, device=t.device)
    offset = torch.full_like(index, t.storage_offset())
    for size, stride in zip(reversed(t.shape), reversed(t.stride())):
        offset.add_(index.remainder(size).mul_(stride))
        index.div_(size, rounding_mode="floor")
    del index
    # every element of the untyped storage the view lives in, flat (the offsets are within it: the view is)
    storage = t.as_strided((t.untyped_storage().nbytes() // t.element_size(),), (1,), 0)
    return storage[offset]


def _index_in(shape: torch.Size, flat: int) -> list[int]:
    return [int(i) for i in torch.unravel_index(torch.tensor(flat), shape)] if len(shape) else []


def _compare_output(exp: torch.Tensor, got: torch.Tensor, tolerance: str, scale: float | None,
                    device: torch.device) -> str | None:
    """What differs between one expected output and the candidate's (same layout), as the rest of the message
    after its label; None when it matches. One pass over the slices: NaN/Inf in the candidate's output where the
    reference's is finite is reported before any tolerance miss, wherever each occurs; where the reference's is
    NaN or Inf, the candidate's must be the same (NaN, the same Inf), never any finite value."""
    floating = exp.is_floating_point() or exp.is_complex()
    if floating:
        atol, rtol = TOLERANCES[tolerance].get(exp.dtype, (1e-4, 1e-4))
        allowance = torch.finfo(exp.dtype).eps * scale if scale else 0.0
        widest_atol, widest_rtol = TOLERANCES["kernelbench"].get(exp.dtype, (1e-2, 1e-2))
    nonfinite, first_nonfinite = 0, None  # NaN/Inf in the output where the reference is finite
    special, first_special = 0, None  # where the reference is NaN/Inf, an output that is not the same
    differing, first_differing = 0, None  # integer outputs: elements that differ; floating: outside the bound
    worst, worst_at, worst_rel = -1.0, 0, 0.0
    at = lambda t, i: _flat_range(t, i, i + 1).item()
    for start in range(0, exp.numel(), COMPARE_CHUNK_ELEMENTS):
        e = _flat_range(exp, start, start + COMPARE_CHUNK_ELEMENTS).to(device)
        g = _flat_range(got, start, start + COMPARE_CHUNK_ELEMENTS).to(device)
        if not floating:
            unequal = g != e
            count = int(unequal.sum())
            if count and first_differing is None:
                first_differing = start + int(unequal.nonzero()[0])
            differing += count
            continue
        expected_finite = torch.isfinite(e)
        bad_values = ~torch.isfinite(g) & expected_finite
        count = int(bad_values.sum())
        if count and first_nonfinite is None:
            first_nonfinite = start + int(bad_values.nonzero()[0])
        nonfinite += count
        del bad_values
        if not bool(expected_finite.all()):  # where the reference is NaN or ±Inf the output must be the same:
            # the difference there is NaN or Inf against an Inf bound, which no tolerance would ever miss
            missed = ~expected_finite & ~((g.isnan() & e.isnan()) | (g == e))
            count = int(missed.sum())
            if count and first_special is None:
                first_special = start + int(missed.nonzero()[0])
            special += count
            del missed
        del expected_finite
        if nonfinite:  # reported whatever the tolerance says: the rest need not be measured
            continue
        if exp.is_complex():  # .double() would keep the real parts only: the distance of complex numbers
            wide = e.to(torch.complex128)
            diff = g.to(torch.complex128).sub_(wide).abs().nan_to_num_(nan=0.0)
            magnitude = wide.abs()
            del wide
        else:
            diff = g.double().sub_(e.double()).abs_().nan_to_num_(nan=0.0)  # NaN expected (inf - inf): no miss
            magnitude = e.double().abs_()
        bound = magnitude.mul(rtol).add_(atol)
        if allowance:  # min(bound + allowance, max(bound, KernelBench's bound)), in place
            widest = magnitude.mul(widest_rtol).add_(widest_atol)
            torch.maximum(widest, bound, out=widest)
            torch.minimum(bound.add_(allowance), widest, out=bound)
            del widest
        count = int((diff > bound).sum())
        differing += count
        del bound
        top = float(diff.max())
        if top > worst:  # the first of the largest, as argmax over the whole output
            worst, worst_at = top, start + int(diff.argmax())
        worst_rel = max(worst_rel, float(diff.div_(magnitude.clamp_min_(1e-12)).max()))
        del diff, magnitude
    if not floating:
        if not differing:
            return None
        where = _index_in(exp.shape, first_differing)
        return (f"differs at index {where}: got {at(got, first_differing)}, expected "
                f"{at(exp, first_differing)} ({differing} elements differ)")
    if nonfinite:
        return (f"has {nonfinite} NaN/Inf values (first at index {_index_in(exp.shape, first_nonfinite)}); "
                "unwritten output memory reads as NaN")
    if special:
        return (f"has {special} elements where the reference is NaN or Inf and it is not the same (first at index "
                f"{_index_in(exp.shape, first_special)}: got {at(got, first_special)}, expected "
                f"{at(exp, first_special)})")
    if not differing:
        return None
    return (f"mismatch: {differing}/{exp.numel()} elements outside atol={atol:g} rtol={rtol:g}"
            + (f" (+{allowance:.3g} for summation order)" if allowance else "") + "; "
            f"max abs err {worst:.4g} at index {_index_in(exp.shape, worst_at)} (got {at(got, worst_at):.6g}, "
            f"expected {at(exp, worst_at):.6g}); max rel err {worst_rel:.4g}")
