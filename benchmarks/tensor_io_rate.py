"""How fast tensors cross between a sandbox and the judge: `write_tensors` (the sandbox's side) and `read_tensors`
(the judge's, every field checked, pages dropped as read) against a plain copy of the same bytes in memory,
measured in the same run. On the H200 box (2026-12-03) a full-size KernelBench reference's trials moved at
~1.3 GB/s each way through the sandbox's tmpfs: 60 s of a 94 s reference check at 12.9 GB a trial.

    python -m benchmarks.tensor_io_rate [--gb 1.0] [--dir /dev/shm] [--repeats 3]
    python -m benchmarks.tensor_io_rate --device cuda [--gb 2.0]   # a GPU tensor into a sealed memory file

Prints GB/s of each side and its ratio to the in-memory copy (a ratio near 1: the files cost nothing more).
With --device cuda: the ways a sandbox's device tensor (a full-size trial's inputs and outputs) can reach a
sealed memory file — today's (64 MB pageable staging, `write_sealed`), a page-locked staging buffer, and a copy
straight into the file's own pages mapped — against the device-to-host copy alone, and the way back (a mapped
file's bytes to the device: a candidate's inputs). The box measured 0.6-0.9 GB/s the first way (sessions 8, 10).

Since a trial's outputs come to the judge as a sealed memory file it maps (`write_sealed`, `map_sealed`), the
same bytes that way too; and what the judge does with them (one pass over every byte: its comparison), after
each way of getting them: the hand-over's gain is the read-back the judge no longer makes.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import torch

from verifier.tensor_io import map_sealed, read_tensors, write_sealed, write_tensors


def _best(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gb", type=float, default=1.0, help="bytes moved, GB")
    parser.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None,
                        help="where the file lives (a sandbox's io folder is a tmpfs)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu", help="cuda: a device tensor's ways into a memory file")
    args = parser.parse_args(argv)
    if args.device != "cpu":
        device_rates(args.gb, args.device, args.repeats)
        return
    tensor = torch.rand(int(args.gb * 1e9) // 4)
    nbytes = tensor.nbytes
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        path = os.path.join(folder, "trial.bin")
        copy_s = _best(lambda: tensor.clone(), args.repeats)
        metas: list = []

        def write() -> None:
            metas[:] = write_tensors(path, [tensor])

        write_s = _best(write, args.repeats)
        read_s = _best(lambda: read_tensors(path, metas, nbytes), args.repeats)
        read_pass_s = _best(lambda: read_tensors(path, metas, nbytes)[0].sum(), args.repeats)
    sealed: list = []

    def write_memory_file() -> None:
        for fd in sealed:
            os.close(fd)
        fd, metas[:] = write_sealed([tensor])
        sealed[:] = [fd]

    sealed_s = _best(write_memory_file, args.repeats)
    map_pass_s = _best(lambda: map_sealed(sealed[0], [(metas, nbytes)])[0][0].sum(), args.repeats)
    os.close(sealed[0])
    rate = lambda s: nbytes / s / 1e9
    print(f"{nbytes / 1e9:.2f} GB in {args.dir or 'the default temp folder'}, torch threads {torch.get_num_threads()}")
    print(f"{'':34} {'GB/s':>7} {'x in-memory copy':>17}")
    for name, seconds in (("in-memory copy", copy_s), ("write_tensors", write_s), ("read_tensors", read_s),
                          ("write_sealed (memory file)", sealed_s), ("read_tensors, then one pass", read_pass_s),
                          ("map_sealed, then one pass", map_pass_s)):
        print(f"{name:34} {rate(seconds):7.2f} {copy_s / seconds:17.2f}")
    print(f"the judge's side, mapped against read back: {read_pass_s / map_pass_s:.2f}x")


def device_rates(gb: float, device: str, repeats: int) -> None:
    """GB/s of a device tensor's ways into a sealed memory file, and of a mapped file's bytes to the device."""
    from verifier.tensor_io import new_memory_file, seal

    tensor = torch.rand(int(gb * 1e9) // 4, device=device)
    raw = tensor.view(torch.uint8)
    nbytes = tensor.nbytes
    chunk = 64 << 20
    opened: list[int] = []

    def kept(fd: int) -> int:
        """The one memory file held open (the last one written), the one before closed."""
        for old in opened:
            os.close(old)
        opened[:] = [fd]
        return fd

    def fresh() -> int:
        return kept(new_memory_file())

    def today() -> None:
        kept(write_sealed([tensor])[0])

    def staged(pinned: bool) -> None:
        fd = fresh()
        staging = torch.empty(chunk, dtype=torch.uint8, pin_memory=pinned)
        with os.fdopen(fd, "ab", closefd=False) as f:
            for start in range(0, nbytes, chunk):
                piece = raw[start:start + chunk]
                staging[:piece.numel()].copy_(piece)
                f.write(staging[:piece.numel()].numpy().data)
        seal(fd)

    def mapped() -> None:
        import mmap
        fd = fresh()
        os.ftruncate(fd, nbytes)
        with mmap.mmap(fd, nbytes, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE) as mapping:
            view = torch.frombuffer(mapping, dtype=torch.uint8, count=nbytes)
            view.copy_(raw)
            del view
        seal(fd)

    def sync(fn):
        def timed() -> None:
            fn()
            torch.cuda.synchronize()
        return timed

    rows = [("device-to-host copy (.cpu())", _best(sync(lambda: raw.cpu()), repeats)),
            ("write_sealed (64 MB pageable staging)", _best(sync(today), repeats)),
            ("64 MB page-locked staging", _best(sync(lambda: staged(True)), repeats)),
            ("copy into the mapped file", _best(sync(mapped), repeats))]
    sealed_fd, metas = write_sealed([tensor])
    host = map_sealed(sealed_fd, [(metas, nbytes)])[0][0]
    rows.append(("mapped file to the device (.to())", _best(sync(lambda: host.to(device)), repeats)))
    os.close(sealed_fd)
    for fd in opened:
        os.close(fd)
    copy_s = rows[0][1]
    print(f"{nbytes / 1e9:.2f} GB from {torch.cuda.get_device_name()} into a memory file")
    print(f"{'':40} {'GB/s':>7} {'x device-to-host':>17}")
    for name, seconds in rows:
        print(f"{name:40} {nbytes / seconds / 1e9:7.2f} {copy_s / seconds:17.2f}")


if __name__ == "__main__":
    main()
