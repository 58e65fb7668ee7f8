"""The data plane between judge and sandbox: tensors as raw bytes in a file, described by small metadata.

Pickling 16 MB tensors through a pipe, three times per trial, in a judge whose threads share one GIL,
was most of a verdict's run time. Here the writer puts each tensor's storage span at an aligned
offset of one file (tmpfs when there is one) and sends only `{dtype, shape, stride, offset}`; the
reader rebuilds the views. The judge never maps a file the sandbox can write (a truncation would
be a SIGBUS in the judge): it reads into its own buffer and checks every field before using it.
"""

from __future__ import annotations

import fcntl
import os
import reprlib
import zlib
from pathlib import Path
from typing import Any

import torch

from verifier.isolation import UntrustedFile, open_sandbox_file

ALIGN = 64
MAX_DIMS = 16
# Bytes read per pread. Each chunk's pages are then dropped from the page cache: a reader in a sandbox's cgroup is
# charged for every page it brings into the cache, so reading a 2 GiB set whose pages were evicted would otherwise
# count twice against the sandbox (cache + its own copy) — its peak memory, and its memory limit, would depend on
# the machine's cache pressure instead of on its own work. Every file read here is read once.
READ_CHUNK_BYTES = 64 << 20
WRITE_CHUNK_BYTES = 64 << 20  # a device tensor's bytes go to the file through a host buffer of this size
DTYPES: dict[str, torch.dtype] = {
    str(d).removeprefix("torch."): d
    for d in (torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32,
              torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128)
}


class TamperedData(ValueError):
    """Metadata or bytes that the sandbox's own code would never produce."""


def _span_elements(shape: list[int], stride: list[int]) -> int:
    """Elements of storage a strided view touches, from its first element to its last."""
    if any(s == 0 for s in shape):
        return 0
    return 1 + sum((size - 1) * st for size, st in zip(shape, stride))


def _laid_out(values: list[Any], offset: int) -> list[tuple[Any, int, torch.Tensor | None]]:
    """Where each value goes in a file that holds `offset` bytes already: (its description, the padding before
    its bytes, its bytes as a flat uint8 view — None for a plain value or an empty tensor)."""
    laid: list[tuple[Any, int, torch.Tensor | None]] = []
    for value in values:
        if not isinstance(value, torch.Tensor):
            laid.append(({"value": value}, 0, None))
            continue
        shape, stride = list(value.shape), list(value.stride())
        span = _span_elements(shape, stride)
        pad = (-offset) % ALIGN
        offset += pad
        raw = value.detach().as_strided((span,), (1,), value.storage_offset()).view(torch.uint8) if span else None
        laid.append(({"dtype": str(value.dtype).removeprefix("torch."), "shape": shape, "stride": stride,
                      "offset": offset}, pad, raw))
        offset += raw.numel() if raw is not None else 0
    return laid


def write_tensors(path: str | Path, values: list[Any], append: bool = False) -> list[dict[str, Any]]:
    """Write tensors' storage spans to `path` (after what it holds, with `append`); non-tensors travel in the
    metadata as `{"value": v}`."""
    with open(path, "ab" if append else "wb") as f:
        return _write_laid(f, _laid_out(values, os.path.getsize(path) if append else 0))


def _write_laid(f: Any, laid: list[tuple[Any, int, torch.Tensor | None]]) -> list[dict[str, Any]]:
    staging: torch.Tensor | None = None
    for meta, pad, raw in laid:
        if "value" in meta:
            continue
        f.write(b"\0" * pad)
        if raw is None:
            continue
        if raw.device.type == "cpu":
            f.write(raw.numpy().data)
        else:
            staging = _write_from_device(f, raw, staging)
    return [meta for meta, _, _ in laid]


HANDED_OVER = b"F"  # the byte a sandbox's descriptor rides on over its channel (hand_over, Sandbox.receive_descriptor)
SEALED = fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW  # what a handed-over memory file must carry


def new_memory_file() -> int:
    """A new, empty memory file (memfd) that takes seals: what a sandbox fills and hands over (`seal`)."""
    return os.memfd_create("kd-handed-over", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)


def append_tensors(fd: int, values: list[Any]) -> list[dict[str, Any]]:
    """`write_tensors` into the file `fd`, after what it holds."""
    with os.fdopen(fd, "ab", closefd=False) as f:  # append: positioned at its end
        return _write_laid(f, _laid_out(values, os.fstat(fd).st_size))


def seal(fd: int) -> None:
    """Seal a memory file against writing, shrinking and growing, and against new seals: its bytes can change no
    more, through any descriptor or mapping of anyone's (the kernel refuses the seal while a writable shared
    mapping exists, or pages are pinned)."""
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALED | fcntl.F_SEAL_SEAL)


def write_sealed(values: list[Any]) -> tuple[int, list[dict[str, Any]]]:
    """The writer's side of a hand-over without a copy: `values` in a new memory file, sealed -> (its
    descriptor, for the caller to hand over and close; the descriptions)."""
    fd = new_memory_file()
    try:
        metas = append_tensors(fd, values)
        seal(fd)
    except BaseException:
        os.close(fd)
        raise
    return fd, metas


def hand_over(conn: Any, fd: int) -> None:
    """Send `fd` over the Unix socket of the multiprocessing connection `conn`, on the byte HANDED_OVER."""
    import socket
    with socket.socket(fileno=os.dup(conn.fileno())) as sock:
        socket.send_fds(sock, [HANDED_OVER], [fd])


def map_sealed(fd: int, groups: list[tuple[Any, int]]) -> list[list[Any]]:
    """The reader's side: for each group (descriptions, at most that many bytes described), its values, the
    tensors views of one private mapping of the memory file `fd` — no copy of its bytes. Refused (TamperedData)
    unless `fd` is a memory file sealed against writing, shrinking and growing, at least as long as the bytes
    described, and no two tensors share a byte: what the reader maps is what the writer sealed, and can never
    change or vanish under it (no SIGBUS). Private: a reader's write lands in its own copy. The caller closes
    `fd`; the mapping lives as long as the tensors."""
    import mmap
    checked = [_checked_within(metas, max_bytes) for metas, max_bytes in groups]
    spans = sorted((c[3], c[3] + c[4]) for group in checked for c in group if isinstance(c, tuple) and c[4])
    if any(start < end_before for (_, end_before), (start, _) in zip(spans, spans[1:])):
        raise TamperedData("two tensors described over the same bytes")
    try:
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
        size = os.fstat(fd).st_size
    except OSError as exc:  # EINVAL: not a file that takes seals (a pipe, a socket, a disk file)
        raise TamperedData(f"the handed-over descriptor is not a sealed memory file ({exc.strerror})") from None
    if seals & SEALED != SEALED:
        raise TamperedData("the handed-over memory file is not sealed against writing, shrinking and growing")
    end = spans[-1][1] if spans else 0
    if size < end:
        raise TamperedData(f"tensor bytes up to {end} described in a handed-over file of {size}")
    if not end:
        mapped = torch.empty(0, dtype=torch.uint8)
    else:
        try:
            # no MAP_POPULATE: on a private writable mapping it faults every page in for writing, a copy of all
            mapping = mmap.mmap(fd, end, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        except (OSError, ValueError) as exc:
            raise TamperedData(f"the handed-over memory file cannot be mapped ({exc})") from None
        mapped = torch.frombuffer(mapping, dtype=torch.uint8, count=end)  # holds the mapping while a view lives
    return [_views(mapped, group) for group in checked]


def describe_tensors(values: list[Any], offset: int = 0) -> list[dict[str, Any]]:
    """The descriptions `write_tensors` would send for `values` written after `offset` bytes, writing nothing
    (a reference's check: its trials' layout, not their bytes)."""
    return [meta for meta, _, _ in _laid_out(values, offset)]


def _write_from_device(f: Any, raw: torch.Tensor, staging: torch.Tensor | None) -> torch.Tensor:
    """A device tensor's bytes, through one host buffer of WRITE_CHUNK_BYTES reused chunk after chunk: a whole
    host copy first (`.cpu()`) would fault in GBs of fresh memory at full size (~1.5 GB/s), then copy them
    again into the file, and count them against the writer's memory limit beside the file's own pages."""
    if staging is None:
        staging = torch.empty(min(WRITE_CHUNK_BYTES, raw.numel()), dtype=torch.uint8)
    for start in range(0, raw.numel(), WRITE_CHUNK_BYTES):
        piece = raw[start:start + WRITE_CHUNK_BYTES]
        if piece.numel() > staging.numel():
            staging = torch.empty(piece.numel(), dtype=torch.uint8)
        chunk = staging[:piece.numel()]
        chunk.copy_(piece)
        f.write(chunk.numpy().data)
    return staging


def _shown(meta: Any, limit: int = 100) -> str:
    """A sandbox's description as a verdict quotes it, bounded whatever it is: str() of a list holding one list
    twice, 64 deep (a few hundred bytes pickled, the memo sharing them), is 2^64 lists long — it took the judge's
    memory and never ended."""
    quoter = reprlib.Repr()
    quoter.maxlevel, quoter.maxstring, quoter.maxother = 4, limit, limit
    try:
        return quoter.repr(meta)[:limit]
    except Exception:  # noqa: BLE001 - a repr past the recursion limit, a tensor's that fails
        return f"<unprintable {type(meta).__name__}>"


def _checked(meta: Any) -> tuple[torch.dtype, list[int], list[int], int, int]:
    if not isinstance(meta, dict) or set(meta) != {"dtype", "shape", "stride", "offset"}:
        raise TamperedData(f"malformed tensor description {_shown(meta)}")
    dtype = DTYPES.get(meta["dtype"]) if isinstance(meta["dtype"], str) else None
    shape, stride, offset = meta["shape"], meta["stride"], meta["offset"]
    ints = lambda xs: isinstance(xs, list) and len(xs) <= MAX_DIMS and all(type(x) is int and x >= 0 for x in xs)
    if dtype is None or not ints(shape) or not ints(stride) or len(shape) != len(stride) or type(offset) is not int:
        raise TamperedData(f"malformed tensor description {_shown(meta)}")
    itemsize = torch.empty((), dtype=dtype).element_size()
    nbytes = _span_elements(shape, stride) * itemsize
    if offset < 0 or offset % itemsize:  # past the end shows as a short read
        raise TamperedData(f"tensor bytes [{offset}, {offset + nbytes}) misaligned or outside the file")
    return dtype, shape, stride, offset, nbytes


def _checked_all(metas: list[Any]) -> list[Any]:
    """Each description checked: plain values as they are, tensors as (dtype, shape, stride, offset, nbytes)."""
    return [meta if isinstance(meta, dict) and set(meta) == {"value"} else _checked(meta) for meta in metas]


def describe(metas: list[Any]) -> list[tuple[tuple[int, ...], torch.dtype]]:
    """(shape, dtype) of each described tensor, validated, without reading any data."""
    if not isinstance(metas, list):
        raise TamperedData("tensor descriptions are not a list")
    return [(tuple(shape), dtype) for dtype, shape, *_ in (_checked(m) for m in metas)]


def _pread_exactly(fd: int, view: memoryview, offset: int) -> None:
    """Fill `view` from the file's bytes at `offset`, in chunks whose pages leave the page cache once read."""
    done, total = 0, len(view)
    while done < total:
        n = os.preadv(fd, [view[done:done + READ_CHUNK_BYTES]], offset + done)
        if n <= 0:
            raise TamperedData(f"tensor bytes [{offset}, {offset + total}) beyond the end of the file")
        os.posix_fadvise(fd, offset + done, n, os.POSIX_FADV_DONTNEED)
        done += n


def read_tensors(path: str | Path, metas: list[Any], max_bytes: int) -> list[Any]:
    """Tensors described by `metas`, copied out of `path` into this process's memory, every field checked;
    at most `max_bytes` are read, however large the file."""
    checked = _checked_within(metas, max_bytes)
    try:
        return _read_checked(path, checked)
    except UntrustedFile as exc:
        raise TamperedData(f"the data file was replaced: {exc}") from exc


def _checked_within(metas: Any, max_bytes: int) -> list[Any]:
    if not isinstance(metas, list):
        raise TamperedData("tensor descriptions are not a list")
    checked = _checked_all(metas)
    total = sum(c[4] for c in checked if isinstance(c, tuple))
    if total > max_bytes:
        raise TamperedData(f"{total} bytes of tensors described, more than the {max_bytes} expected")
    return checked


def check_descriptions(metas: Any, max_bytes: int) -> int:
    """What `read_tensors` checks of `metas` before reading (every field; at most `max_bytes` described), with
    nothing read: the bytes they describe."""
    return sum(c[4] for c in _checked_within(metas, max_bytes) if isinstance(c, tuple))


def _read_checked(path: str | Path, checked: list) -> list[Any]:
    values = []
    with open_sandbox_file(path) as f:
        for item in checked:
            if isinstance(item, dict):
                values.append(item["value"])
                continue
            dtype, shape, stride, offset, nbytes = item
            buf = torch.empty(nbytes, dtype=torch.uint8)
            if nbytes:
                _pread_exactly(f.fileno(), memoryview(buf.numpy()), offset)
                values.append(buf.view(dtype).as_strided(shape, stride))
            else:
                values.append(torch.empty_strided(shape, stride, dtype=dtype))
    return values


def bytes_spanned(metas: list[Any]) -> int:
    """The end of the last tensor's bytes that `metas` describe (a file or buffer holding them is this long)."""
    return max((c[3] + c[4] for c in _checked_all(metas) if isinstance(c, tuple)), default=0)


def tensors_in(buffer: torch.Tensor, metas: list[Any]) -> list[Any]:
    """The values `metas` describe, tensors as views of `buffer` (bytes laid out as write_tensors lays out a
    file), each checked to lie inside it."""
    return _views(buffer, _checked_all(metas))


def _views(buffer: torch.Tensor, checked: list[Any]) -> list[Any]:
    values = []
    for item in checked:
        if isinstance(item, dict):
            values.append(item["value"])
            continue
        dtype, shape, stride, offset, nbytes = item
        if offset + nbytes > buffer.numel():
            raise TamperedData(f"tensor bytes [{offset}, {offset + nbytes}) outside the {buffer.numel()}-byte buffer")
        span = buffer[offset:offset + nbytes]
        values.append(span.view(dtype).as_strided(shape, stride) if nbytes else
                      torch.empty_strided(shape, stride, dtype=dtype))
    return values


class SharedStaging:
    """The judge's side of a timing handshake's input buffer: a sealed memfd (it can be neither shrunk nor
    grown, so a sandbox that maps it cannot make the judge's mapping fault) that the judge fills with one
    timed call's inputs at a time, off its clock, and the sandbox maps and copies from. Filling it takes the
    judge a file read; the sandbox then only copies from memory (on a GPU, one DMA from page-locked pages),
    so what the judge's clock sees around a call no longer includes a disk or page-cache read whose time
    varies from one sandbox to the next by more than a short call takes."""

    def __init__(self, nbytes: int):
        import mmap
        import fcntl
        self.nbytes = max(nbytes, 1)
        self.fd = os.memfd_create("kd-timing-inputs", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(self.fd, self.nbytes)
            fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
            self._map = mmap.mmap(self.fd, self.nbytes)
        except BaseException:
            os.close(self.fd)
            raise

    def fill(self, fd: int, metas: list[Any]) -> None:
        """Copy the bytes of the tensors `metas` describe from the file `fd` to the same offsets here."""
        view = memoryview(self._map)
        try:
            for item in _checked_all(metas):
                if isinstance(item, tuple) and item[4]:
                    if item[3] + item[4] > self.nbytes:
                        raise TamperedData(f"an input set's bytes end past the {self.nbytes}-byte staging")
                    _pread_exactly(fd, view[item[3]:item[3] + item[4]], item[3])
        finally:
            view.release()

    def close(self) -> None:
        self._map.close()
        os.close(self.fd)


def map_shared_staging(fd: int, nbytes: int) -> tuple[Any, torch.Tensor]:
    """The sandbox's side: the judge's staging memfd mapped -> (the mapping, which the caller closes after the
    tensor is gone; its bytes as a uint8 tensor)."""
    import mmap
    mapping = mmap.mmap(fd, nbytes)
    return mapping, torch.frombuffer(mapping, dtype=torch.uint8, count=nbytes)


def map_copy_on_write(path: str | Path | int, metas: list[Any]) -> list[Any]:
    """The values `metas` describe, tensors as views of a private (copy-on-write) mapping of `path`, which this
    process wrote itself: they share the file's pages until written to, and a write lands in this process's own
    copy, never in the file. For a writer that must keep what it wrote (a reference's inputs on the host, for
    its forward and its timing, beside the file the judge reads them from), one copy of the bytes instead of
    two. The file must not be truncated while the views live (replace it with a new file instead). `path` may be
    an open descriptor (a memory file this process fills, then seals: a private mapping does not stop the seal)."""
    import mmap
    size = bytes_spanned(metas)
    if not size:
        return tensors_in(torch.empty(0, dtype=torch.uint8), metas)
    if isinstance(path, int):
        mapping = mmap.mmap(path, size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        return tensors_in(torch.frombuffer(mapping, dtype=torch.uint8, count=size), metas)
    with open(path, "rb") as f:
        mapping = mmap.mmap(f.fileno(), size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    # the tensors hold the mapping (torch.frombuffer keeps its buffer alive): unmapped when the last is gone
    return tensors_in(torch.frombuffer(mapping, dtype=torch.uint8, count=size), metas)


def nbytes_of(values: list[Any]) -> int:
    """Bytes `write_tensors` needs for these values, padding included (an upper bound)."""
    total = 0
    for v in values:
        if isinstance(v, torch.Tensor):
            total += _span_elements(list(v.shape), list(v.stride())) * v.element_size() + ALIGN
    return total


def same_bytes(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit-identical (NaNs included), so an input the candidate left alone always compares equal."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.numel() == 0:
        return True
    flat = lambda t: t.reshape(-1).contiguous().view(torch.uint8)
    return torch.equal(flat(a), flat(b.to(a.device)))


CHECKSUM_CHUNK_WORDS = 1 << 24  # words summed at once on a GPU: the int64 temporaries stay at 2 x 128 MB


def content_checksum(t: torch.Tensor) -> tuple[str, tuple[int, ...], int]:
    """Its dtype, shape and a checksum of its bytes, computed where it lives: equal for unchanged contents,
    different (but for a chance of about 1 in 2^32) after any write that changes them, a permutation included —
    the sandbox's check of its inputs after a forward, without sending them back. On the host a CRC-32 of the
    bytes (~3 GB/s, one pass; a torch reduction weighted by position took 2.9 s a GiB); on a GPU a
    position-weighted sum of its words there (`weighted_word_sum`), never a copy to the host. Compare checksums
    taken on the same device."""
    data = t.detach().reshape(-1)
    raw = data.contiguous().view(torch.uint8) if data.numel() else torch.empty(0, dtype=torch.uint8)
    if raw.device.type == "cpu":
        return str(t.dtype), tuple(t.shape), zlib.crc32(raw.numpy())
    return str(t.dtype), tuple(t.shape), weighted_word_sum(raw)


WORD_WEIGHT = 0x9E3779B97F4A7C15 - (1 << 64)  # odd: a word's weight is its position times this, wrapping, made odd


def weighted_word_sum(raw: torch.Tensor) -> int:
    """Sum over a byte tensor's 32-bit words (bytes, where they do not divide evenly) of word x its weight, (position
    x WORD_WEIGHT) | 1 in int64, wrapping (the total mod 2^64), a chunk at a time where the bytes live: integer
    arithmetic, so the same bytes give the same sum in any order of addition and any chunking; a changed word
    changes it (its weight is odd), and so does a swap of two words or a roll of them all (the weights have no
    period: position mod 65521 + 1 had one, and two words 65521 apart swapped summed the same)."""
    words = raw
    if raw.numel() % 4 == 0:
        try:
            words = raw.view(torch.int32)
        except RuntimeError:  # a storage offset that is not word-aligned: an aligned copy sums the same words
            words = raw.clone().view(torch.int32)
    total = 0
    for start in range(0, words.numel(), CHECKSUM_CHUNK_WORDS):
        chunk = words[start:start + CHECKSUM_CHUNK_WORDS].to(torch.int64)
        weights = torch.arange(start, start + chunk.numel(), device=chunk.device, dtype=torch.int64)
        # each chunk's int64 sum wraps: so does the total (mod 2^64), or the sum would depend on the chunking
        total = (total + int(chunk.mul_(weights.mul_(WORD_WEIGHT).bitwise_or_(1)).sum())) % (1 << 64)
    return total


__all__ = ["TamperedData", "write_tensors", "describe_tensors", "check_descriptions", "write_sealed", "map_sealed", "hand_over", "new_memory_file", "append_tensors", "seal", "read_tensors", "tensors_in", "bytes_spanned", "SharedStaging",
           "map_shared_staging", "map_copy_on_write", "describe", "nbytes_of", "same_bytes", "content_checksum",
           "weighted_word_sum", "WORD_WEIGHT"]
