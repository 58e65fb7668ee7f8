"""What the judge keeps of a problem between candidates — the reference's trials (inputs, expected outputs),
the timing calls' inputs and checked outputs — held so that one verdict needs one trial's tensors at a time.

Small problems stay in memory (the common case, and the fastest). Once a problem's entries pass
`memory_bytes` together, or every problem's entries the judge's `MemoryAllowance`, further entries go to files
in a directory only the judge can reach (under its cache directory, which no sandbox sees), and each is read
back when it is needed and dropped after: a problem whose single trial fits the machine can be judged however
many trials and timing sets it has.

Timing sets are always on disk (a stash with `memory_bytes=0`): each timed call's inputs are one file, which
a sandbox is handed as a read-only descriptor (`open_entry`) just before the call that uses it. The page
cache keeps them in memory while it can; the sandbox reads one call's bytes, and nothing is written per call.
"""

from __future__ import annotations

import errno
import hashlib
import itertools
import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from verifier.tensor_io import nbytes_of, read_tensors, write_tensors

STASH_MEMORY_BYTES = 1 << 30  # per problem and kind (as the timing sets took before): above this, on disk


class MemoryAllowance:
    """The host memory a judge's stashes may hold together: an entry that would pass it goes to disk, whatever its
    own stash's `memory_bytes`. Without it, each problem's 1 GB in memory added up over the problems kept (up to
    verifier.kept_gb: 24 GB by default) and the kernel's OOM killer ended the judge of a 24 GB machine."""

    def __init__(self, capacity_bytes: int):
        self.capacity_bytes = capacity_bytes
        self.used_bytes = 0
        self._lock = threading.Lock()

    def take(self, nbytes: int) -> bool:
        with self._lock:
            if self.used_bytes + nbytes > self.capacity_bytes:
                return False
            self.used_bytes += nbytes
            return True

    def give(self, nbytes: int) -> None:
        with self._lock:
            self.used_bytes -= nbytes


def host_bytes(values: list[Any]) -> int:
    """Bytes of these values' tensors in host memory (a device tensor is the device's memory, not the host's)."""
    return nbytes_of([v for v in values if isinstance(v, torch.Tensor) and v.device.type == "cpu"])


_being_written = 0  # bytes of stash files being written now, every stash of the process (whole until written)
_being_written_lock = threading.Lock()


class JudgeDiskFull(RuntimeError):
    """A file the judge cannot do without (a timing set, a checked output) could not be written: its own disk
    is full — the machine's limit, never the problem's (its reference is not broken) nor the candidate's."""


@contextmanager
def disk_room(directory: Path, nbytes: int, min_free_bytes: int) -> Iterator[None]:
    """Room for a file of `nbytes` in `directory` that leaves `min_free_bytes` of its disk free, counting the
    files this process is writing meanwhile (several full-size trials at once), held while the body writes it;
    OSError (ENOSPC) where there is none. `min_free_bytes` 0: no check (the file is still counted)."""
    global _being_written
    with _being_written_lock:
        if min_free_bytes > 0:
            left = shutil.disk_usage(directory).free - _being_written - nbytes
            if left < min_free_bytes:
                raise OSError(errno.ENOSPC, f"keeping {nbytes / 1e9:.2f} GB would leave {max(0, left) / 1e9:.1f} GB "
                              f"of the judge's disk free, below its {min_free_bytes / 1e9:.1f} GB (min_free_disk_gb)")
        _being_written += nbytes
    try:
        yield
    finally:
        with _being_written_lock:
            _being_written -= nbytes


class TensorStash:
    """An append-only list of value lists (tensors and plain values), in memory or spilled to disk."""

    _ids = itertools.count()

    def __init__(self, directory: Path, memory_bytes: int = STASH_MEMORY_BYTES,
                 allowance: MemoryAllowance | None = None):
        self.directory = Path(directory)
        self.memory_bytes = memory_bytes
        self._allowance = allowance
        self._in_memory: dict[int, list[Any]] = {}
        self._on_disk: dict[int, tuple[Path, list[Any], int]] = {}
        self._bytes_in_memory = 0
        self._host_bytes_taken = 0  # of the allowance, given back on close
        self._count = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._count

    @property
    def nbytes(self) -> int:
        """Bytes kept, in memory and on disk together."""
        with self._lock:
            return self._bytes_in_memory + sum(size for _, _, size in self._on_disk.values())

    @property
    def spilled(self) -> int:
        """Entries kept on disk."""
        return len(self._on_disk)

    def append(self, values: list[Any], owned: bool = True, min_free_bytes: int = 0) -> int:
        """Keep `values` (host tensors are kept as they are; the caller gives up its references) -> its index.
        `owned=False`: its host tensors are views of memory that is not the judge's own (a sandbox's memory
        file, charged to the sandbox's group, whose charge would outlive it against every sandbox's budget):
        kept in memory, they are copies. OSError where its file cannot be written (the disk is full), or would
        leave less than `min_free_bytes` of its disk free: nothing of it is kept, its index unused."""
        size = nbytes_of(values)
        with self._lock:
            index = self._count
            self._count += 1
            host = host_bytes(values)
            in_memory = bool(self.memory_bytes) and self._bytes_in_memory + size <= self.memory_bytes \
                and (self._allowance is None or self._allowance.take(host))  # memory_bytes 0: every entry a file
            if in_memory:
                self._bytes_in_memory += size
                self._host_bytes_taken += host
                if owned:
                    self._in_memory[index] = values
                    return index
        if in_memory:  # a copy of each host tensor, made outside the lock (GBs at full size)
            try:
                kept = [v.clone() if isinstance(v, torch.Tensor) and v.device.type == "cpu" else v for v in values]
            except BaseException:
                with self._lock:
                    self._bytes_in_memory -= size
                    self._host_bytes_taken -= host
                    self._unused(index)
                if self._allowance is not None:
                    self._allowance.give(host)
                raise
            with self._lock:
                self._in_memory[index] = kept
            return index
        with self._lock:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            path = self.directory / f"{next(self._ids)}.bin"
        try:
            with disk_room(self.directory, size, min_free_bytes):
                metas = write_tensors(path, values)  # device tensors go through one small host buffer
        except BaseException:  # a disk that filled mid-write (ENOSPC, EFBIG) keeps no half entry
            path.unlink(missing_ok=True)
            with self._lock:
                self._unused(index)
            raise
        os.chmod(path, 0o400)  # nobody writes it again (a sandbox handed it reads it only, and runs as another uid)
        with self._lock:
            self._on_disk[index] = (path, metas, size)
        return index

    def _unused(self, index: int) -> None:
        """Entry `index` was refused (under _lock): the last one given is taken back, so that the stash's length
        still counts its entries — timing sets are numbered by it (set i for timed call i), and a set refused by
        a full disk once left the next judgement asking for set 0, which was never written."""
        if self._count == index + 1:
            self._count = index

    def get(self, index: int) -> list[Any]:
        """Entry `index`: the kept list itself when in memory, a fresh copy read from disk otherwise."""
        with self._lock:
            if index in self._in_memory:
                return self._in_memory[index]
            path, metas, size = self._on_disk[index]
        return read_tensors(path, metas, size)

    def metas(self, index: int) -> list[Any]:
        """The descriptions of entry `index`'s file (where each tensor's bytes lie). Only entries on disk."""
        with self._lock:
            if index not in self._on_disk:
                raise KeyError(f"stash entry {index} is not on disk")
            return self._on_disk[index][1]

    def open_entry(self, index: int) -> tuple[int, list[Any]]:
        """(a read-only descriptor of entry `index`'s file, which the caller closes; its descriptions) — for a
        sandbox to read that entry itself. Only entries on disk have a file."""
        with self._lock:
            if index not in self._on_disk:
                raise KeyError(f"stash entry {index} is not on disk")
            path, metas, _ = self._on_disk[index]
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC), metas

    def close(self) -> None:
        with self._lock:
            self._in_memory.clear()
            self._on_disk.clear()
            taken, self._host_bytes_taken = self._host_bytes_taken, 0
        if self._allowance is not None and taken:
            self._allowance.give(taken)
        shutil.rmtree(self.directory, ignore_errors=True)


FULL_DIGEST_BYTES = 64 << 20  # tensors up to this are hashed whole; larger ones by sample and checksums
DIGEST_SAMPLES = 256  # ... of DIGEST_SAMPLE_BYTES each, evenly spread
DIGEST_SAMPLE_BYTES = 64 << 10


def digest(values: list[Any]) -> str:
    """Content hash of tensors (shape, dtype and bytes) and plain values: equal lists, equal digests. Lets
    the judge remember what a candidate returned in earlier trials without keeping those outputs.

    A tensor past FULL_DIGEST_BYTES (KernelBench level 1 at full size: 6.4 GB an output, ~9 s to hash whole) is
    hashed by DIGEST_SAMPLES evenly spread slices: a digest tells trials' outputs apart (which trial an output
    replays), it never stands in for comparing an output in full."""
    h = hashlib.blake2b(digest_size=16)
    for value in values:
        if isinstance(value, torch.Tensor):
            t = value.detach().cpu().contiguous()
            h.update(f"{tuple(t.shape)}|{t.dtype}|".encode())
            if t.numel():
                data = t.reshape(-1).view(torch.uint8)
                if data.numel() <= FULL_DIGEST_BYTES:
                    h.update(data.numpy().data)
                else:
                    step = (data.numel() - DIGEST_SAMPLE_BYTES) // (DIGEST_SAMPLES - 1)
                    for k in range(DIGEST_SAMPLES):
                        h.update(data[k * step:k * step + DIGEST_SAMPLE_BYTES].numpy().data)
        else:
            h.update(repr(value).encode())
        h.update(b";")
    return h.hexdigest()


def private_directory(root: Path, tag: str) -> Path:
    """`root/<tag>` for this judge's stashes (mode 0700), created empty."""
    path = Path(root) / tag
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True, mode=0o700)
    os.chmod(path, 0o700)
    return path
