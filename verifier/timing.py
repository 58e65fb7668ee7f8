"""One timing method for candidates and references, so speedups compare like with like, and the judge's
outside check of what a sandbox reports.

cpu: wall clock per call, median. cuda: CUDA events around each call with the L2 cache flushed before
it, median; a device-wide synchronize after each call, and if the wall clock then says much more than
the events, work escaped the timed stream (a side stream or host work) and the wall clock is what counts.

A sandbox's figures come from inside a process the candidate shares, so the judge does not take them on
trust: the timed loop starts only when the judge says `go` (`before_timed`), the judge's own clock runs
around it, and `believed_seconds` keeps the sandbox's median only where that clock allows it. Every timed
call gets values of its own (generated before the clock starts) in memory that alternates between
buffers, refilled in place before each call; the judge checks some timed calls' outputs. A kernel that
remembers a result — by address or by content — either misses every time or returns a stale, wrong one.
`physical_floor_seconds` is the least time a call's memory traffic needs: below it is impossible.
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
    total: float = 0.0  # sum of the per-call figures over the timed runs


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def time_calls(fn: Callable[[int], object], device: str, warmup: int, runs: int,
               before_timed: Callable[[], None] | None = None,
               after_timed: Callable[[], None] | None = None,
               warm: Callable[[], object] | None = None,
               prepare: Callable[[int], None] | None = None,
               keep: Callable[[int, object], None] | None = None) -> Timing:
    """Median per call of `fn(i)` for i in range(runs), after `warmup` calls of `warm` (`fn(0)` when not
    given). Off the clock, before each timed call: `prepare(i)` (the caller puts call i's inputs in place),
    then the L2 flush; after it: `keep(i, output)`."""
    warm = warm or (lambda: fn(0))
    prepare = prepare or (lambda i: None)
    keep = keep or (lambda i, out: None)
    if device != "cuda":
        for _ in range(warmup):
            warm()
        if before_timed:
            before_timed()
        samples = []
        for i in range(runs):
            prepare(i)
            start = perf_counter()
            out = fn(i)
            samples.append(perf_counter() - start)
            keep(i, out)
        if after_timed:
            after_timed()
        return Timing(_median(samples), total=sum(samples))
    flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    for _ in range(warmup):
        warm()
    torch.cuda.synchronize()
    if before_timed:
        before_timed()
    events, walls = [], []
    for i in range(runs):
        prepare(i)
        flush.zero_()
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start = perf_counter()
        begin.record()
        out = fn(i)
        end.record()
        torch.cuda.synchronize()  # device-wide: waits for side streams too
        walls.append(perf_counter() - start)
        events.append(begin.elapsed_time(end) / 1000.0)
        keep(i, out)
    if after_timed:
        after_timed()
    event_s, wall_s = _median(events), _median(walls)
    escaped = wall_s > 2 * event_s + ESCAPE_SLACK_S
    return Timing(wall_s if escaped else event_s, escaped, total=sum(walls if escaped else events))


@dataclass(frozen=True)
class TimingCheck:
    seconds: float  # what the judge believes, per call
    claimed: float  # the sandbox's median
    outside: float  # per call by the judge's clock, the harness's own overhead taken off
    overruled: bool  # the claim contradicted the judge's clock beyond noise


def believed_seconds(claimed: float, window_s: float, runs: int, overhead_s: float,
                     rel_noise: float = 0.2, window_noise_s: float = 200e-6) -> TimingCheck:
    """The sandbox's median per call, unless the judge's clock (`window_s` around all `runs` timed calls,
    minus the harness's per-call overhead measured on the reference) says it must have taken longer; then
    the judge's figure. Noise: `rel_noise` of a call, and `window_noise_s` once per window (wake-ups and
    messages), spread over its calls."""
    outside = max(0.0, window_s / runs - overhead_s)
    if claimed >= outside * (1 - rel_noise) - window_noise_s / runs:
        return TimingCheck(claimed, claimed, outside, False)
    return TimingCheck(outside, claimed, outside, True)


def physical_floor_seconds(read_bytes: int, written_bytes: int, bandwidth: float, cache_bytes: int) -> float:
    """The least time one call can take: the bytes it must read from memory plus those it writes beyond
    what a cache absorbs, at the device's copy bandwidth (bytes/s, read + written)."""
    return (max(0, read_bytes - cache_bytes) + max(0, written_bytes - cache_bytes)) / bandwidth


def copy_bandwidth(device: str, nbytes: int = 1 << 28) -> float:
    """Bytes per second a device-to-device copy moves (read + written), best of five; cpu: one thread."""
    src = torch.empty(nbytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    best = float("inf")
    for _ in range(5):
        if device.startswith("cuda"):
            torch.cuda.synchronize(device)
        start = perf_counter()
        dst.copy_(src)
        if device.startswith("cuda"):
            torch.cuda.synchronize(device)
        best = min(best, perf_counter() - start)
    return 2 * nbytes / best
