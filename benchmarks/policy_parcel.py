"""A policy checkpoint in parts small enough to cross the GPU box's wall, and back into a checkpoint.

A device call returns files of at most 16 MiB (64 MiB in all) and carries at most 64 MiB, the tracked tree
included; the miniature's policy is 109 MB in float32. Policies that live only on a box die with it, so a seed's
warmup checkpoint (the LEAP ablation's starting point) or its final policy (KernelBench) could not outlive a
session. A parcel is the checkpoint with its floating-point weights in bfloat16 (half the bytes; the policy
computes in bfloat16 on the GPU anyway), as one tar cut into parts of `--part-mib`, with a manifest of sha256
sums. Unpacking checks every part and the whole, and writes the weights back in float32 (a training stage goes on
from float32 master weights; the values are the bfloat16 ones, exactly).

    python -m benchmarks.policy_parcel pack .kerneldojo/mini/artifacts/warmup_rl-.../policy $OUT --name warmup_rl-...
    python -m benchmarks.policy_parcel unpack runs/parcels/warmup_rl-....parcel.json \\
        .kerneldojo/mini/artifacts/warmup_rl-.../policy
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

PART_MIB = 15.0  # a device call returns files of at most 16 MiB


class ParcelError(ValueError):
    """A parcel that is incomplete, altered or not a policy's."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _cast_weights(folder: Path, dtype: torch.dtype) -> None:
    """Every floating-point tensor of the folder's safetensors files cast to `dtype`, in place."""
    for weights in sorted(folder.glob("*.safetensors")):
        tensors = load_file(weights)
        cast = {name: t.to(dtype) if t.is_floating_point() else t for name, t in tensors.items()}
        save_file(cast, weights, metadata={"format": "pt"})


def pack(policy: str | Path, out_dir: str | Path, name: str, part_mib: float = PART_MIB) -> Path:
    """The checkpoint folder `policy` as `<name>.parcel.NNN` parts and `<name>.parcel.json` in `out_dir`; returns
    the manifest's path."""
    policy, out_dir = Path(policy), Path(out_dir)
    if not (policy / "config.json").exists() or not list(policy.glob("*.safetensors")):
        raise ParcelError(f"{policy} is not a policy checkpoint (config.json and *.safetensors)")
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "policy"
        shutil.copytree(policy, copy)
        _cast_weights(copy, torch.bfloat16)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            for path in sorted(copy.rglob("*")):
                if path.is_file():
                    tar.add(path, arcname=str(path.relative_to(copy)))
    data = buffer.getvalue()
    out_dir.mkdir(parents=True, exist_ok=True)
    size = max(1, int(part_mib * (1 << 20)))
    parts = []
    for index, start in enumerate(range(0, len(data), size)):
        chunk = data[start:start + size]
        part = out_dir / f"{name}.parcel.{index:03d}"
        part.write_bytes(chunk)
        parts.append({"file": part.name, "bytes": len(chunk), "sha256": _sha256(chunk)})
    manifest = out_dir / f"{name}.parcel.json"
    manifest.write_text(json.dumps({"name": name, "source": str(policy), "weights": "bfloat16",
                                    "bytes": len(data), "sha256": _sha256(data), "parts": parts}, indent=1))
    return manifest


def unpack(manifest: str | Path, policy: str | Path) -> Path:
    """The checkpoint a parcel holds, written to `policy` (float32 weights) once every part and the whole match
    their sums; nothing is written otherwise."""
    manifest, policy = Path(manifest), Path(policy)
    try:
        spec = json.loads(manifest.read_text())
        parts = spec["parts"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ParcelError(f"{manifest}: not a parcel manifest ({exc})") from None
    chunks = []
    for part in parts:
        path = manifest.parent / Path(part["file"]).name  # never outside the manifest's folder
        if not path.exists():
            raise ParcelError(f"{manifest.name}: part {path.name} is missing ({len(parts)} parts)")
        chunk = path.read_bytes()
        if len(chunk) != part["bytes"] or _sha256(chunk) != part["sha256"]:
            raise ParcelError(f"{manifest.name}: part {path.name} is not the one packed (size or sha256 differs)")
        chunks.append(chunk)
    data = b"".join(chunks)
    if _sha256(data) != spec.get("sha256"):
        raise ParcelError(f"{manifest.name}: the parts put together are not the parcel packed")
    partial = policy.with_name(policy.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        tar.extractall(partial, filter="data")
    _cast_weights(partial, torch.float32)
    if policy.exists():
        shutil.rmtree(policy)
    os.replace(partial, policy)  # a crash mid-unpack leaves no half checkpoint under `policy`
    return policy


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack", help="a checkpoint folder -> parts and a manifest")
    p.add_argument("policy")
    p.add_argument("out_dir")
    p.add_argument("--name", required=True)
    p.add_argument("--part-mib", type=float, default=PART_MIB)
    u = sub.add_parser("unpack", help="a manifest (its parts beside it) -> a checkpoint folder")
    u.add_argument("manifest")
    u.add_argument("policy")
    args = parser.parse_args(argv)
    try:
        if args.command == "pack":
            manifest = pack(args.policy, args.out_dir, args.name, args.part_mib)
            spec = json.loads(manifest.read_text())
            print(f"{manifest}: {len(spec['parts'])} parts, {spec['bytes'] / 2**20:.1f} MiB")
        else:
            print(f"unpacked into {unpack(args.manifest, args.policy)}")
    except ParcelError as exc:
        raise SystemExit(f"policy_parcel: {exc}") from None


if __name__ == "__main__":
    main()
