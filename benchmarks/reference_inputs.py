"""How long a KernelBench reference's inputs take to make: drawn on the host and copied to the device
(KernelBench's harness, and ours before harness 7) against drawn on the device (`verifier.sandbox.draw_inputs`,
what a reference sandbox does now) and copied back to the host whole (the sandbox streams them to its file). Full-size level-1 inputs are 1-8 GB, and
torch's CPU generators are serial: on the H200's host a trial's inputs took 11-18 s (2026-12-03, kb.log).

    python -m benchmarks.reference_inputs [--kernelbench DIR] [--problem NAME ...] [--repeats N]

Prints, per problem, the seconds of each way (the best of the repeats) and host/device; on a machine without a
GPU both ways draw on the host and the ratio is ~1.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from verifier.reference import load_reference_module
from verifier.sandbox import draw_inputs

DEFAULT_PROBLEMS = ["level1/21_Sigmoid.py", "level1/4_Matrix_vector_multiplication_.py",
                    "level1/6_Matmul_with_large_K_dimension_.py", "level2/1_Conv2D_ReLU_BiasAdd.py"]


def _drawn_on_host(module, device: str, seed: int) -> list:
    torch.manual_seed(seed)
    made = list(module.get_inputs())
    moved = [x.to(device) if isinstance(x, torch.Tensor) else x for x in made]
    if device != "cpu":
        torch.cuda.synchronize()
    return [made, moved]


def _drawn_on_device(module, device: str, seed: int) -> list:
    moved = draw_inputs(module, device, seed)
    host = [x.cpu() if isinstance(x, torch.Tensor) else x for x in moved]
    if device != "cpu":
        torch.cuda.synchronize()
    return [host, moved]


def _best_seconds(make, module, device: str, repeats: int) -> tuple[float, int]:
    """The fastest of `repeats` makings, and the bytes of one call's tensors."""
    best, nbytes = float("inf"), 0
    for seed in range(repeats):
        start = time.perf_counter()
        host, _ = make(module, device, seed)
        best = min(best, time.perf_counter() - start)
        nbytes = sum(x.nbytes for x in host if isinstance(x, torch.Tensor))
        del host, _
    return best, nbytes


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernelbench", default=".kerneldojo/kernelbench", help="a KernelBench checkout (levels)")
    parser.add_argument("--problem", action="append", default=[], help="level/file.py (repeatable)")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    rows = []
    for name in args.problem or DEFAULT_PROBLEMS:
        path = Path(args.kernelbench) / name
        if not path.exists():
            print(f"{name}: not found under {args.kernelbench}")
            continue
        module = load_reference_module(path.read_text(), path.stem)
        host, nbytes = _best_seconds(_drawn_on_host, module, device, args.repeats)
        on_device, _ = _best_seconds(_drawn_on_device, module, device, args.repeats)
        rows.append((name, nbytes / 1e9, host, on_device))
    print(f"device: {torch.cuda.get_device_name() if device == 'cuda' else 'cpu (no GPU: both ways draw on the host)'}")
    print(f"{'problem':50} {'GB':>6} {'host s':>8} {'device s':>9} {'host/device':>12}")
    for name, gb, host, on_device in rows:
        print(f"{name:50} {gb:6.2f} {host:8.2f} {on_device:9.2f} {host / max(on_device, 1e-9):12.1f}")


if __name__ == "__main__":
    main()
