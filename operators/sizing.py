"""Sizes for an NNSmith graph picked from a working-set budget, on its symbolic shapes.

Why this way: NNSmith builds a graph with every dimension a z3 variable and the constraints that keep
the graph valid (broadcasting, convolution arithmetic, reshape products, per-tensor element caps) in its
solver; left alone the solver picks the smallest model (every dimension 1). Scaling the emitted source
afterwards would need to re-derive those constraints for every op (a reshape's target, a slice's bounds,
a convolution's output size). Asking the same solver instead keeps every size valid by construction:

- *size variables* are the dimensions of the graph's inputs and weights plus the op parameters that are
  sizes (channels, features, reshape targets, interpolation sizes, expansion counts); every other op
  parameter (kernel, stride, padding, dilation, slice bounds, axes) is pinned to its first solution,
  so a graph keeps its meaning while it grows;
- growth is greedy and monotone: each step asks the solver for a model where one size variable
  (smaller ones first, at random) is 2x or 4x its current value and every other one lies between its
  current value and that factor times it; a step that would overshoot the budget is refused and that
  variable stops growing;
- the working set is the bytes of the graph's inputs, weights and outputs (the traffic a fully fused
  kernel cannot avoid), evaluated on the model without building anything.

Growing from the CPU budget to the GPU budget continues from the CPU model, so the GPU-size graph has
every dimension at least as large as the CPU-size one: the same graph, scaled.
"""

from __future__ import annotations

import copy
import inspect
import random
from dataclasses import dataclass
from typing import Any

import z3

# On a SIGINT during a check, z3 cancels the check and swallows the signal: the check says `unknown`, synthesis
# goes on, and the user's Ctrl-C (or a scheduler's interrupt) is lost. Without its handler the signal reaches
# Python as soon as the check ends, and every check is bounded (NNSmith sets z3's `timeout` for its generation).
z3.set_param("ctrl_c", False)

# Op constructor parameters that are sizes (they grow with the graph); all others are pinned.
GROWING_PARAMS = frozenset({"in_channels", "out_channels", "nfeat", "ifeat", "ofeat", "target_shape", "size",
                            "expand_n"})


def _uninterpreted(expr: Any, out: dict[str, z3.ExprRef]) -> None:
    if not isinstance(expr, z3.ExprRef):
        return
    if z3.is_const(expr) and expr.decl().kind() == z3.Z3_OP_UNINTERPRETED:
        out[str(expr)] = expr
        return
    for child in expr.children():
        _uninterpreted(child, out)


def _is_placeholder(op: Any) -> bool:
    from nnsmith.abstract.op import Constant, Input

    return isinstance(op, (Input, Constant))


def size_variables(ir) -> tuple[list[z3.ExprRef], list[z3.ExprRef]]:
    """(growing, pinned) z3 variables of a symbolic NNSmith graph."""
    grow: dict[str, z3.ExprRef] = {}
    pin: dict[str, z3.ExprRef] = {}
    for inst in ir.insts:
        op = inst.iexpr.op
        if _is_placeholder(op):
            for dim in op.abs_tensor.shape:
                _uninterpreted(dim, grow)
            continue
        for key in inspect.signature(op.__init__).parameters:
            value = getattr(op, key, None)
            for v in value if isinstance(value, (list, tuple)) else [value]:
                _uninterpreted(v, grow if key in GROWING_PARAMS else pin)
    return [grow[k] for k in sorted(grow)], [pin[k] for k in sorted(pin) if k not in grow]


def _module_weight_shape(op: Any) -> list[Any]:
    """Elements of the float32 weights NNSmith's module-backed ops own (they are no placeholders)."""
    name = type(op).__name__
    if name == "Linear":
        return [op.ofeat, op.ifeat + 1]  # weight and bias
    if name == "Conv1d":
        return [op.out_channels, op.in_channels * op.kernel_size + 1]
    if name == "NCHWConv2d":
        return [op.out_channels, op.in_channels * op.kernel_h_size * op.kernel_w_size + 1]
    if name == "BatchNorm2d":
        return [4, op.nfeat]  # weight, bias, running mean and variance
    if name == "PReLU":
        return [1]
    return []


@dataclass
class Footprint:
    """What a model of the graph moves: bytes of inputs + weights + outputs, and its largest tensor."""

    working_set: int
    largest_elements: int


def footprint(ir, model: z3.ModelRef) -> Footprint:
    def numel(shape) -> int:
        n = 1
        for d in shape:
            n *= model.eval(d, model_completion=True).as_long() if isinstance(d, z3.ExprRef) else int(d)
        return n

    total = 0
    for inst in ir.insts:
        op = inst.iexpr.op
        if _is_placeholder(op):
            total += numel(op.abs_tensor.shape) * op.abs_tensor.dtype.sizeof()
        else:
            total += 4 * numel(_module_weight_shape(op))
    for name in ir.leaf_var():
        tensor = ir.vars[name]
        total += numel(tensor.shape) * tensor.dtype.sizeof()
    largest = max((numel(t.shape) for t in ir.vars.values()), default=0)
    return Footprint(total, largest)


class SizeSolver:
    """Grows a symbolic NNSmith graph (a `SymbolicGen` after `abstract_gen`) towards working-set budgets.

    Reproducible: z3 may answer a satisfiable query with any model, and which one depends on the process's
    history (AST ids), so every model this class keeps is pinned down variable by variable (each fixed to a
    value chosen from `rng` or to its current or grown value, whichever the solver accepts first) and so
    depends only on the graph and the seed."""

    def __init__(self, gen, rng: random.Random, max_checks: int = 400):
        self.gen = gen
        self.ir = gen.ir
        self.solver: z3.Solver = gen.solver
        self.max_checks = max_checks
        self.grow_vars, pinned = size_variables(self.ir)
        self.checks = 0
        self.first: z3.ModelRef | None = self._small_start(pinned, rng)
        self.pins = [p == self.first.eval(p, model_completion=True) for p in pinned] if self.first else []

    def _sat(self, *constraints) -> bool:
        self.checks += 1
        return self.solver.check(*constraints) == z3.sat

    def _small_start(self, pinned: list[z3.ExprRef], rng: random.Random) -> z3.ModelRef | None:
        """A model with every size small (1..8) and every other parameter (kernel, stride, padding,
        dilation, slice bound, ...) in 0..4, each variable fixed in turn to the first value, in a seeded
        random order, that the solver accepts. NNSmith's own last model may hold any value its caps allow,
        and growth only goes up. None when no such model exists."""
        fixes: list[z3.BoolRef] = []
        grow = {str(v) for v in self.grow_vars}
        for var in sorted(self.grow_vars + pinned, key=str):
            values = list(range(1, 9)) if str(var) in grow else list(range(0, 5))
            rng.shuffle(values)
            for value in values:
                if self._sat(*fixes, var == value):
                    fixes.append(var == value)
                    break
            else:
                return None
        if not self._sat(*fixes):
            return None
        return self.solver.model()

    def _value(self, model: z3.ModelRef, var: z3.ExprRef) -> int:
        return model.eval(var, model_completion=True).as_long()

    def _step(self, model: z3.ModelRef, var: z3.ExprRef, factor: int) -> z3.ModelRef | None:
        """`var` times `factor`, every other size kept or grown by at most `factor`, the first of these the
        solver accepts: all others kept; else each other in turn kept, or else grown by `factor`."""
        now = {str(u): max(1, self._value(model, u)) for u in self.grow_vars}
        others = [u for u in self.grow_vars if not u.eq(var)]
        target = var == factor * now[str(var)]
        if self._sat(*self.pins, target, *[u == now[str(u)] for u in others]):
            return self.solver.model()
        box = [c for u in others for c in (u >= now[str(u)], u <= factor * now[str(u)])]
        if not self._sat(*self.pins, target, *box):
            return None
        fixes = [target]
        for u in others:
            for value in (now[str(u)], factor * now[str(u)]):
                if self._sat(*self.pins, *box, *fixes, u == value):
                    fixes.append(u == value)
                    break
        return self.solver.model() if self._sat(*self.pins, *box, *fixes) else None

    def grow(self, model: z3.ModelRef, target_bytes: int, rng: random.Random,
             max_elements: int | None = None) -> tuple[z3.ModelRef, Footprint]:
        """The model reached by growing `model` until its working set is at least half of `target_bytes`
        (never more than twice it, no tensor, intermediates included, over `max_elements`), or until
        nothing can grow. Smaller sizes are picked to grow more often, so shapes stay balanced."""
        current = footprint(self.ir, model)
        active = list(self.grow_vars)
        checks_at_start = self.checks
        while current.working_set < target_bytes / 2 and active and self.checks - checks_at_start < self.max_checks:
            values = {str(v): max(1, self._value(model, v)) for v in active}
            var = rng.choices(active, weights=[1.0 / values[str(v)] ** 0.5 for v in active])[0]
            grown = None
            for factor in [4, 2] if current.working_set * 64 < target_bytes else [2]:
                candidate = self._step(model, var, factor)
                if candidate is None:
                    continue
                size = footprint(self.ir, candidate)
                if size.working_set <= 2 * target_bytes and (max_elements is None or
                                                             size.largest_elements <= max_elements):
                    grown = (candidate, size)
                    break
            if grown is None:
                active = [v for v in active if not v.eq(var)]
                continue
            model, current = grown
        return model, current

    def concrete(self, model: z3.ModelRef):
        """A concrete copy of the graph at `model`'s sizes (the symbolic graph stays usable)."""
        ir = copy.deepcopy(self.ir)
        ir.concretize(model)
        return ir
