"""How fast tensors cross between a sandbox and the judge: `write_tensors` (the sandbox's side) and `read_tensors`
(the judge's, every field checked, pages dropped as read) against a plain copy of the same bytes in memory,
measured in the same run. On the H200 box (2026-12-03) a full-size KernelBench reference's trials moved at
~1.3 GB/s each way through the sandbox's tmpfs: 60 s of a 94 s reference check at 12.9 GB a trial.

    python -m benchmarks.tensor_io_rate [--gb 1.0] [--dir /dev/shm] [--repeats 3]

Prints GB/s of each side and its ratio to the in-memory copy (a ratio near 1: the files cost nothing more).
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
    args = parser.parse_args(argv)
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


if __name__ == "__main__":
    main()
