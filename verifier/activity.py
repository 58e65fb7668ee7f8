"""What each judging thread of this process is doing now, and since when.

A judgement that has not come back after minutes (KernelBench at full size: GBs of trials a problem) must say
whether it works — building, running its reference, its trials, its timing — or waits: for its share of the
machine's memory, for the device another judgement times on, for a reference another judgement is running. Each
thread keeps a stack: its judgement at the bottom (the problem), what it does now on top; `in_flight()` reads
every thread's at once, for a heartbeat line (`describe`) while a stage waits on its verdicts.
"""

from __future__ import annotations

import threading
import time
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from typing import Iterator, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_stacks: dict[int, list[tuple[str, float]]] = {}  # thread id -> [(what, since)], its judgement first


@dataclass(frozen=True)
class InFlight:
    """One judging thread: its judgement (`judgement`, for `judgement_s`) and what it does now (`now`, for
    `now_s`; empty while between the steps this module is told about)."""

    judgement: str
    judgement_s: float
    now: str
    now_s: float

    @property
    def waiting(self) -> bool:
        return self.now.startswith("waiting")


@contextmanager
def doing(what: str) -> Iterator[None]:
    """This thread does `what` for the block (the outermost block of a thread names its judgement)."""
    thread = threading.get_ident()
    with _lock:
        _stacks.setdefault(thread, []).append((what, time.monotonic()))
    try:
        yield
    finally:
        with _lock:
            stack = _stacks.get(thread, [])
            if stack:
                stack.pop()
            if not stack:
                _stacks.pop(thread, None)


@contextmanager
def waiting_for(what: str, held: AbstractContextManager[T]) -> Iterator[T]:
    """Enter `held` (a lock, a reservation) as "waiting for `what`" until it is entered, then hold it."""
    with ExitStack() as stack:
        with doing(f"waiting for {what}"):
            value = stack.enter_context(held)
        yield value


def in_flight() -> list[InFlight]:
    """Every thread of this process inside a judgement, the longest running first."""
    now = time.monotonic()
    with _lock:
        stacks = [list(s) for s in _stacks.values() if s]
    flights = [InFlight(s[0][0], now - s[0][1], s[-1][0] if len(s) > 1 else "", now - s[-1][1]) for s in stacks]
    return sorted(flights, key=lambda f: -f.judgement_s)


def describe(flights: list[InFlight], most: int = 8) -> str:
    """One line: how many judgements run and wait, then the longest running, each with what it does now."""
    if not flights:
        return "no judgement in flight"
    waiting = sum(f.waiting for f in flights)
    parts = [f"{f.judgement} {f.judgement_s:.0f} s" + (f" ({f.now}, {f.now_s:.0f} s)" if f.now else "")
             for f in flights[:most]]
    more = f"; {len(flights) - most} more" if len(flights) > most else ""
    return f"{len(flights)} in flight, {waiting} waiting: " + "; ".join(parts) + more
