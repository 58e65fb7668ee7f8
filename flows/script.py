"""What the CLI gives each of its commands, for scripts that drive stages in their own process
(`benchmarks.stage_chain`, `learning_curve`, `leap_ablation`).

Without it a signal to the script's process group (`timeout`, a terminal's Ctrl-C) reached Prefect's own
temporary server too: the stage was marked failed within seconds, then the process hung at exit, its Prefect
client retrying events to the server the same signal had stopped, until SIGKILL (seen on the H200 under
`timeout -k 10`). Here, as in the CLI, SIGTERM/SIGINT/SIGHUP become `Killed` (the running stage run is
marked failed and its verifier pool aborted) and Prefect runs against a server this process owns, in a
session of its own, stopped after Prefect's workers have drained into it (`flows/prefect_server.py`).
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Callable, Iterator, TypeVar

from warehouse.process import Killed, raise_killed_on_signals, restore_signal_handlers

T = TypeVar("T")


@contextmanager
def signals_as_killed() -> Iterator[None]:
    """SIGTERM, SIGINT and SIGHUP raise `Killed` meanwhile (in the main thread; elsewhere an embedding
    program's signals stay its own)."""
    try:
        previous = raise_killed_on_signals()
    except ValueError:  # not the main thread
        previous = None
    try:
        yield
    finally:
        if previous is not None:
            restore_signal_handlers(previous)


def killed_line(exc: Killed) -> str:
    """What a signal ended, in one line: the signal, and the stage run it marked failed."""
    common = sys.modules.get("tasks.common")  # a stage run can only have failed if stage code was loaded
    failed = common.failed_stage_run(exc) if common else None
    return f"{exc}; stage run {failed[1]} marked failed" if failed else str(exc)


def run_in_order(main: Callable[[], T]) -> T:
    """`main()`, ended in order by a terminating signal: one `error:` line on stderr naming the stage run
    marked failed, and exit status 128 + the signal's number, as the CLI's."""
    from flows.prefect_server import serve_prefect

    with signals_as_killed():
        try:
            serve_prefect()
            return main()
        except Killed as exc:
            print(f"error: {killed_line(exc)}", file=sys.stderr, flush=True)
            raise SystemExit(128 + exc.signal) from None
