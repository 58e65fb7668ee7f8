"""The process behind a running stage run: who it is, whether it still lives, and how a signal ends it.

A `running` row records its owner as pid, host and process start time. The pid alone would not do:
after a kill the kernel hands the same number to unrelated processes, and only the start time tells
the owner from a newcomer.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import psutil

# psutil derives a start time from boot time and clock ticks: the same process always gets the same
# value, and a different process reusing the pid would have to start within this window to be mistaken.
START_TIME_TOLERANCE_S = 1.0
TERMINATING_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# `kill -USR1 <pid>`: every thread's stack to stderr, the process going on. Written by faulthandler's C handler,
# so it answers where a Python handler cannot run: a main thread stuck in C, or Prefect's SIGTERM bridge in
# place of ours during a flow run (the box's evaluation outlived SIGTERM without a word: sessions 10-12).
STACKS_SIGNAL = signal.SIGUSR1


@dataclass(frozen=True)
class ProcessIdentity:
    pid: int
    host: str
    started: float  # seconds since the epoch

    @classmethod
    def of(cls, pid: int) -> "ProcessIdentity":
        return cls(pid, socket.gethostname(), psutil.Process(pid).create_time())

    @classmethod
    def current(cls) -> "ProcessIdentity":
        return cls.of(os.getpid())

    def is_gone(self) -> bool:
        """True once this process has certainly ended; False while it runs or when it cannot be seen
        from here (another host)."""
        if self.host != socket.gethostname():
            return False
        try:
            process = psutil.Process(self.pid)
            if abs(process.create_time() - self.started) > START_TIME_TOLERANCE_S:
                return True  # the pid now belongs to another process
            return process.status() == psutil.STATUS_ZOMBIE  # dead, not yet reaped by its parent
        except psutil.NoSuchProcess:
            return True
        except psutil.AccessDenied:
            return False


class Killed(BaseException):
    """A terminating signal, raised in the main thread so that `finally` and `except BaseException`
    blocks (the stage run's row, its MLflow run, the Prefect server) close before the process exits.
    A BaseException, like KeyboardInterrupt, so that `except Exception` in stage code does not swallow it."""

    def __init__(self, signum: int):
        self.signal = signum
        super().__init__(f"killed by {signal.Signals(signum).name}")


REDELIVERY_DELAY_S = 0.01


# A process that has not ended this long after its terminating signal writes every thread's stack to stderr
# (once): under `timeout -k 10` on the GPU box the evaluation outlived its 10 s and was SIGKILLed, its last
# words none (sessions 10, 11) — the stacks say what the orderly end waits for.
STACKS_AFTER_SIGNAL_S = 6.0


# (signal, time.monotonic()) of the last Killed raised: a library that swallows the exception its handler raised
# (DuckDB turns it into `RuntimeError: Query interrupted`) is answered with it again (`swallowed_signal`)
_last_killed: tuple[int, float] | None = None


def _raise_killed(signum: int, _frame) -> None:
    global _last_killed
    _last_killed = (signum, time.monotonic())
    faulthandler.dump_traceback_later(STACKS_AFTER_SIGNAL_S)
    raise Killed(signum)


def swallowed_signal(exc: BaseException, since: float) -> Killed | None:
    """The `Killed` a library replaced with `exc` — DuckDB answers a signal during a query, whose handler raised
    `Killed`, with `RuntimeError: Query interrupted` (an Exception: the stage would fail with it, the CLI exit 1,
    and the signal be lost) — when a terminating signal came at or after `since` (time.monotonic())."""
    if _last_killed is None or _last_killed[1] < since or "interrupted" not in str(exc).lower():
        return None
    return Killed(_last_killed[0])


def _redeliver_lost_signal(unraisable, fallback: Callable) -> None:
    """A handler's exception raised while a finalizer runs (`__del__`, a ctypes callback: z3 objects die
    by the thousand during synthesis) is dropped by Python as "Exception ignored in", and the process
    would carry on. Send the signal again, from another thread so that it lands after the finalizer;
    the handler raises anew. Covers Prefect's TerminationSignal too: both carry the signal number."""
    exc = unraisable.exc_value
    signum = getattr(exc, "signal", None)
    if isinstance(exc, BaseException) and not isinstance(exc, Exception) and isinstance(signum, int):
        threading.Timer(REDELIVERY_DELAY_S, os.kill, (os.getpid(), signum)).start()
    else:
        fallback(unraisable)


@dataclass
class PreviousHandlers:
    signals: dict[int, Any]
    unraisablehook: Callable
    stacks_on_signal: bool = False
    blocked: frozenset[int] = frozenset()  # of `signals`, those the thread held blocked before


def raise_killed_on_signals() -> PreviousHandlers:
    """Turn SIGTERM, SIGINT and SIGHUP into `Killed` (main thread only: ValueError elsewhere), and SIGUSR1 into
    every thread's stack on stderr (STACKS_SIGNAL) where nothing else handles it; returns what it replaced, for
    `restore_signal_handlers`.

    A signal the process was started ignoring (`nohup`, background jobs) stays ignored."""
    previous = PreviousHandlers({}, sys.unraisablehook)
    for signum in TERMINATING_SIGNALS:
        current = signal.getsignal(signum)
        if current is signal.SIG_IGN:
            continue
        signal.signal(signum, _raise_killed)
        previous.signals[signum] = current
    # a mask is inherited across exec, unlike a handler: a parent that spawned us while it held these signals
    # blocked (a resource tracker's spawn does, for a moment) would leave them pending here, unseen, for good
    previous.blocked = frozenset(signal.pthread_sigmask(signal.SIG_UNBLOCK, list(previous.signals))
                                 & set(previous.signals))
    if signal.getsignal(STACKS_SIGNAL) is signal.SIG_DFL:
        faulthandler.register(STACKS_SIGNAL, all_threads=True)
        previous.stacks_on_signal = True
    sys.unraisablehook = partial(_redeliver_lost_signal, fallback=previous.unraisablehook)
    return previous


def restore_signal_handlers(previous: PreviousHandlers) -> None:
    for signum, handler in previous.signals.items():
        signal.signal(signum, handler)
    if previous.blocked:
        signal.pthread_sigmask(signal.SIG_BLOCK, previous.blocked)
    if previous.stacks_on_signal:
        faulthandler.unregister(STACKS_SIGNAL)
    sys.unraisablehook = previous.unraisablehook
