"""One timing method for candidates and references, so speedups compare like with like.

cpu: wall clock per call, median. cuda: CUDA events around each call with the L2 cache
flushed before it, median; a device-wide synchronize after each call, and if the wall
clock then says much more than the events, work escaped the timed stream (a side stream
or host work) and the wall clock is what counts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter

import torch

L2_FLUSH_BYTES = 256 * 1024 * 1024  # several times any current GPU's L2 (H200: 60 MB)
ESCAPE_SLACK_S = 200e-6


@dataclass(frozen=True)
class Timing:
    seconds: float  # median per call
    escaped: bool = False  # cuda: the events missed work that the wall clock saw


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def time_calls(fn: Callable[[], object], device: str, warmup: int, runs: int) -> Timing:
    if device != "cuda":
        for _ in range(warmup):
            fn()
        samples = []
        for _ in range(runs):
            start = perf_counter()
            fn()
            samples.append(perf_counter() - start)
        return Timing(_median(samples))
    flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    events, walls = [], []
    for _ in range(runs):
        flush.zero_()
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start = perf_counter()
        begin.record()
        fn()
        end.record()
        torch.cuda.synchronize()  # device-wide: waits for side streams too
        walls.append(perf_counter() - start)
        events.append(begin.elapsed_time(end) / 1000.0)
    event_s, wall_s = _median(events), _median(walls)
    escaped = wall_s > 2 * event_s + ESCAPE_SLACK_S
    return Timing(wall_s if escaped else event_s, escaped)
