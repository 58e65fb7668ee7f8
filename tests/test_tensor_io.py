"""The judge/sandbox data plane: tensors round-trip exactly, and forged descriptions are refused."""

import pytest
import torch

from verifier.tensor_io import (TamperedData, describe, map_copy_on_write, nbytes_of, read_tensors, same_bytes,
                                write_tensors)


def _values():
    x = torch.randn(4, 5)
    return [x, x.t(), torch.randn(3, 1).expand(3, 4), 7, torch.tensor(2.5, dtype=torch.bfloat16),
            torch.empty(0, 3), torch.tensor([True, False]), torch.randn(2, 3, dtype=torch.float16)[:, 1:]]


def test_round_trip_keeps_values_shapes_strides_and_dtypes(tmp_path):
    values = _values()
    metas = write_tensors(tmp_path / "data.bin", values)
    back = read_tensors(tmp_path / "data.bin", metas, nbytes_of(values))
    for before, after in zip(values, back):
        if isinstance(before, torch.Tensor):
            assert (after.shape, after.stride(), after.dtype) == (before.shape, before.stride(), before.dtype)
            assert same_bytes(before, after)
        else:
            assert after == before
    assert describe([m for m in metas if "dtype" in m])[0] == ((4, 5), torch.float32)


def test_a_second_write_appends_after_the_first_and_both_read_back(tmp_path):
    """A reference trial writes its inputs before its forward (which may change them in place), then appends
    the expected outputs to the same file: the offsets of both lists are the file's own."""
    path = tmp_path / "trial.bin"
    first, second = _values(), [torch.arange(10.0), "plain", torch.randn(3, 3).t()]
    metas = write_tensors(path, first)
    more = write_tensors(path, second, append=True)
    back = read_tensors(path, [*metas, *more], nbytes_of(first) + nbytes_of(second))
    for before, after in zip([*first, *second], back):
        assert same_bytes(before, after) if isinstance(before, torch.Tensor) else after == before


def test_a_copy_on_write_mapping_gives_the_values_and_keeps_its_writes_out_of_the_file(tmp_path):
    """A reference's host inputs are a private mapping of the file the judge reads them from: the same values,
    the file's pages shared until written, and a forward that changes them in place changes its own copy."""
    path = tmp_path / "trial.bin"
    values = _values()
    metas = write_tensors(path, values)
    mapped = map_copy_on_write(path, metas)
    for before, after in zip(values, mapped):
        assert same_bytes(before, after) if isinstance(before, torch.Tensor) else after == before
    mapped[0].mul_(2)
    assert torch.equal(mapped[0], values[0] * 2)
    assert same_bytes(read_tensors(path, metas[:1], nbytes_of(values))[0], values[0])  # the file does not
    assert map_copy_on_write(path, [{"value": 3}]) == [3]


def test_a_device_tensor_goes_to_the_file_through_one_reused_buffer_in_chunks(tmp_path, monkeypatch):
    """A device tensor's bytes go through a small host buffer, chunk by chunk (no whole host copy of GBs);
    exercised here on host tensors, with chunks small enough to split them and a later tensor larger."""
    import verifier.tensor_io as tensor_io

    monkeypatch.setattr(tensor_io, "WRITE_CHUNK_BYTES", 1000)
    values = [torch.randn(37), torch.randn(3001), torch.randn(250).to(torch.float64)]
    staging = None
    with open(tmp_path / "chunks.bin", "wb") as f:
        for value in values:
            staging = tensor_io._write_from_device(f, value.view(torch.uint8), staging)
    assert staging.numel() == 1000  # grown once to the chunk size, then reused
    data = (tmp_path / "chunks.bin").read_bytes()
    assert data == b"".join(v.numpy().tobytes() for v in values)


def test_a_content_checksum_changes_with_any_write_and_only_with_one(monkeypatch):
    """What a sandbox compares before and after a forward (input-mutation) instead of sending its inputs back: the
    same bytes give the same checksum, however they are laid out; one changed element, two swapped ones, a changed
    dtype or shape give another. Both ways: the host's CRC-32, and the GPU's position-weighted sum (run here on the
    host, in chunks that straddle the tensor)."""
    import verifier.tensor_io as tensor_io
    from verifier.tensor_io import content_checksum, weighted_word_sum

    x = torch.randn(3, 5, 7)
    changed = x.clone()
    changed[2, 4, 6] = torch.nextafter(changed[2, 4, 6], torch.tensor(10.0))  # one ulp, the last element
    swapped = x.clone()
    swapped[0, 0, 0], swapped[0, 0, 1] = x[0, 0, 1], x[0, 0, 0]
    before = content_checksum(x)
    assert content_checksum(x.clone()) == before
    assert content_checksum(x.transpose(0, 2).contiguous().transpose(0, 2)) == before  # same values, other strides
    assert len({before, content_checksum(changed), content_checksum(swapped), content_checksum(x.reshape(5, 21)),
                content_checksum(x.double())}) == 5
    assert content_checksum(torch.empty(0, 4))[:2] == ("torch.float32", (0, 4))

    def word_sum(t: torch.Tensor) -> int:
        return weighted_word_sum(t.reshape(-1).contiguous().view(torch.uint8))

    whole = word_sum(x)
    assert len({whole, word_sum(changed), word_sum(swapped)}) == 3
    odd = torch.tensor([True, False, True])  # 3 bytes: summed as bytes, not words
    assert word_sum(odd) != word_sum(torch.tensor([True, True, True]))
    unaligned = torch.arange(10, dtype=torch.uint8)[1:9]  # 8 bytes at an odd offset: summed as the same words
    assert weighted_word_sum(unaligned) == weighted_word_sum(unaligned.clone())
    monkeypatch.setattr(tensor_io, "CHECKSUM_CHUNK_WORDS", 4)  # many chunks: the same sums, weighted by position
    assert word_sum(x) == whole and word_sum(swapped) != whole
    # red team: no period in the weights (they were position mod 65521 + 1): two words 65521 apart swapped, or a
    # whole input rolled by 65521 words in place, left the sum as it was
    monkeypatch.setattr(tensor_io, "CHECKSUM_CHUNK_WORDS", 1 << 24)
    words = torch.randn(2 * 65521)
    far = words.clone()
    far[3], far[3 + 65521] = words[3 + 65521], words[3]
    assert len({word_sum(words), word_sum(far), word_sum(words.roll(65521))}) == 3


def test_same_bytes_sees_nan_as_equal_and_any_change_as_different():
    a = torch.tensor([1.0, float("nan")])
    assert same_bytes(a, a.clone())
    assert not same_bytes(a, torch.tensor([1.0, 2.0]))
    assert not same_bytes(a, a.double())


@pytest.mark.parametrize("meta, why", [
    ({"dtype": "float32", "shape": [1 << 20], "stride": [1], "offset": 0}, "beyond the end"),
    ({"dtype": "object", "shape": [1], "stride": [1], "offset": 0}, "malformed"),
    ({"dtype": "float32", "shape": [-1], "stride": [1], "offset": 0}, "malformed"),
    ({"dtype": "float32", "shape": [2], "stride": [1], "offset": 2}, "outside"),
    ({"dtype": "float32", "shape": [2], "stride": [1], "offset": 0, "extra": 1}, "malformed"),
    ("not a dict", "malformed"),
])
def test_forged_descriptions_are_refused(tmp_path, meta, why):
    path = tmp_path / "data.bin"
    write_tensors(path, [torch.zeros(4)])
    with pytest.raises(TamperedData, match=why):
        read_tensors(path, [meta], max_bytes=1 << 30)


def test_a_description_whose_text_never_ends_is_refused_at_once(tmp_path):
    """Red team: a list holding one list twice, 64 deep (shared, as a pickle's memo shares it), where a field goes:
    the refusal quotes the description, and str() of it (2^64 lists) never ended; it is quoted bounded."""
    import time

    bomb: list = []
    for _ in range(64):
        bomb = [bomb, bomb]
    path = tmp_path / "data.bin"
    write_tensors(path, [torch.zeros(4)])
    started = time.monotonic()
    for meta in ({"dtype": bomb, "shape": [4], "stride": [1], "offset": 0}, {"dtype": "float32", "shape": bomb}):
        with pytest.raises(TamperedData, match="malformed"):
            read_tensors(path, [meta], max_bytes=1 << 30)
        with pytest.raises(TamperedData, match="malformed"):
            describe([meta])
    assert time.monotonic() - started < 5


def test_reads_no_more_than_the_judge_expects(tmp_path):
    path = tmp_path / "data.bin"
    metas = write_tensors(path, [torch.zeros(1024)])
    with pytest.raises(TamperedData, match="more than"):
        read_tensors(path, metas, max_bytes=100)


def test_a_file_only_stash_hands_out_every_entry_read_only_and_the_staging_carries_each_in_turn(tmp_path):
    """Timing sets: each a file (none in memory, even one without tensors), copied by the judge into one sealed
    shared staging buffer that the sandbox maps (here: this process) and reads its call's values from."""
    import fcntl
    import os

    import torch

    from verifier.stash import TensorStash
    from verifier.tensor_io import SharedStaging, bytes_spanned, map_shared_staging, tensors_in

    stash = TensorStash(tmp_path / "sets", memory_bytes=0)
    first = stash.append([torch.arange(6.0).view(2, 3).t(), 7])
    empty = stash.append([3])
    staging = SharedStaging(max(bytes_spanned(stash.metas(i)) for i in (first, empty)))
    with pytest.raises(OSError):  # sealed: a sandbox cannot shrink it under the judge's mapping
        os.ftruncate(staging.fd, 1)
    assert fcntl.fcntl(staging.fd, fcntl.F_GET_SEALS) & fcntl.F_SEAL_SHRINK
    mapping, buffer = map_shared_staging(staging.fd, staging.nbytes)
    for index, expected in ((first, [torch.arange(6.0).view(2, 3).t(), 7]), (empty, [3])):
        fd, metas = stash.open_entry(index)
        try:
            assert os.fstat(fd).st_mode & 0o777 == 0o400
            staging.fill(fd, metas)
        finally:
            os.close(fd)
        values = tensors_in(buffer, metas)
        assert len(values) == len(expected)
        for got, want in zip(values, expected):
            assert torch.equal(got, want) if isinstance(want, torch.Tensor) else got == want
    with pytest.raises(TamperedData, match="outside"):  # a description past the buffer is refused, not read
        tensors_in(buffer[:8], stash.metas(first))
    del values, buffer
    mapping.close()
    staging.close()
    stash.close()


def _resident_pages(path) -> int:
    """Pages of the file in the page cache (mincore on a mapping of it)."""
    import ctypes
    import mmap
    import os
    size = os.path.getsize(path)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    vec = (ctypes.c_ubyte * pages)()
    fd = os.open(path, os.O_RDONLY)
    try:
        address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        assert address not in (None, ctypes.c_void_p(-1).value), ctypes.get_errno()
        try:
            assert libc.mincore(ctypes.c_void_p(address), ctypes.c_size_t(size), vec) == 0, ctypes.get_errno()
        finally:
            libc.munmap(address, size)
    finally:
        os.close(fd)
    return sum(b & 1 for b in vec)


@pytest.mark.parametrize("reader", ["read_tensors", "staging"])
def test_reading_a_set_leaves_none_of_its_pages_cached(tmp_path, reader):
    """A sandbox is charged for the pages it brings into the page cache; a reader that left them there would be
    charged twice for every input it reads (the CI's 2 GiB trial peaked at five trials' memory, not four)."""
    import os
    from verifier.tensor_io import SharedStaging, map_shared_staging, tensors_in
    values = [torch.randn(3 << 20), torch.arange(1 << 20)]  # 12 MiB and 8 MiB
    path = tmp_path / "set.bin"
    metas = write_tensors(path, values)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)  # clean pages, as after writeback: still cached, and droppable
        assert _resident_pages(path) > 0
        if reader == "read_tensors":
            back = read_tensors(path, metas, nbytes_of(values))
        else:  # the judge filling a timed call's staging from the set's file
            staging = SharedStaging(nbytes_of(values))
            staging.fill(fd, metas)
            mapping, buffer = map_shared_staging(staging.fd, staging.nbytes)
            back = [v.clone() for v in tensors_in(buffer, metas)]
            del buffer
            mapping.close()
            staging.close()
    finally:
        os.close(fd)
    assert all(same_bytes(a, b) for a, b in zip(values, back))
    assert _resident_pages(path) == 0


def test_a_large_tensor_is_digested_by_a_spread_sample_fast_and_a_small_one_whole():
    """KernelBench level 1 outputs are 6.4 GB: hashing them whole took seconds per trial. Past FULL_DIGEST_BYTES a
    digest reads evenly spread slices; below, every byte counts."""
    import time

    from verifier.stash import DIGEST_SAMPLE_BYTES, FULL_DIGEST_BYTES, digest

    large = torch.rand(FULL_DIGEST_BYTES // 4 + 1024)
    started = time.perf_counter()
    first = digest([large])
    assert time.perf_counter() - started < 0.5
    assert first == digest([large.clone()])
    changed = large.clone()
    changed[:DIGEST_SAMPLE_BYTES // 4] += 1  # the first slice is always sampled
    assert digest([changed]) != first
    assert digest([large.reshape(2, -1)]) != first  # shape and dtype count as ever
    small = torch.rand(1000)
    nudged = small.clone()
    nudged[517] += 1
    assert digest([small]) != digest([nudged])


def test_a_stash_keeps_copies_of_views_it_does_not_own_and_the_views_themselves_otherwise(tmp_path):
    """A reference's trial comes as views of its sandbox's sealed memory file (charged to the sandbox's group,
    a charge that would outlive the sandbox against every sandbox's budget): kept in memory, the stash copies
    them (`owned=False`); to disk, it writes them, as it writes anything."""
    import os

    from verifier.stash import TensorStash
    from verifier.tensor_io import map_sealed, write_sealed

    fd, metas = write_sealed([torch.arange(6.0), torch.ones(2, 3)])
    [views] = map_sealed(fd, [(metas, 1 << 20)])
    os.close(fd)
    stash = TensorStash(tmp_path / "trials")
    copied, kept = stash.append(views, owned=False), stash.append(views)
    assert all(a.data_ptr() != b.data_ptr() and torch.equal(a, b) for a, b in zip(stash.get(copied), views))
    assert all(a is b for a, b in zip(stash.get(kept), views))
    on_disk = TensorStash(tmp_path / "files", memory_bytes=0)
    entry = on_disk.append(views, owned=False)
    assert all(torch.equal(a, b) for a, b in zip(on_disk.get(entry), views)) and on_disk.spilled == 1
    stash.close()
    on_disk.close()
