"""What every candidate's sandbox runs its ops under: verifier/op_watch.cpp, a global RecordFunction callback
built once per judge cache (`FastInlineBuilder.op_watch_library`) and loaded by the harness before any candidate
code. It sees every op the dispatcher runs, on every thread, whatever dispatch keys a C++ guard excludes, in the
correctness trials and in the warm-up and timed calls alike — a candidate that tells the timed calls from the
trials (by a count, by the trials' poisoned allocations) and does ATen's work only there is seen doing it."""

from __future__ import annotations

import ctypes
from collections import Counter
from pathlib import Path

SOURCE = Path(__file__).with_name("op_watch.cpp")
LIBRARY = "libkd_watch.so"


class OpWatch:
    """The callback, installed in this process (once; it stays), and what it saw: `take()` returns the ops run
    since the last take (dispatcher ops, `namespace::name`) and forgets them."""

    def __init__(self, path: str):
        self._lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        self._lib.kd_watch_install.restype = ctypes.c_int
        self._lib.kd_watch_take.restype = ctypes.c_int64
        self._lib.kd_watch_take.argtypes = [ctypes.c_void_p, ctypes.c_int64]
        self._lib.kd_watch_install()
        self._buffer = ctypes.create_string_buffer(1 << 16)

    def take(self) -> Counter[str]:
        while True:
            needed = self._lib.kd_watch_take(ctypes.addressof(self._buffer), len(self._buffer))
            if needed <= len(self._buffer):
                break
            self._buffer = ctypes.create_string_buffer(2 * needed)
        ops: Counter[str] = Counter()
        for line in self._buffer.raw[:needed].decode("utf-8", "replace").splitlines():
            name, _, count = line.rpartition("\t")
            if "::" in name:  # dispatcher ops, not record_function scopes
                ops[name] += int(count)
        return ops
