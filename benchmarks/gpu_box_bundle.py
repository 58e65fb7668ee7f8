"""Pack what a GPU box lacks to run the pipeline, as one `site.tar.xz` that fits a device call (< 64 MiB).

The H200 boxes have torch, CUDA and much of the scientific stack, but no network and no prefect, mlflow, duckdb
or their closure. This walks kerneldojo's requirements (with the extras they ask for, for CPython 3.12 on
Linux), leaves out what the box's `pip list` already has (docs/gpu-box-packages.txt) and torch's own stack,
downloads the same versions as this checkout's virtualenv as cp312 manylinux wheels, installs them into one
folder (`pip install --target`, never onto this machine) and compresses it with xz. The MLflow UI's JavaScript
is dropped (a box serves no UI). On the box:

    mkdir -p /root/site && tar -C /root/site -xJf .kerneldojo/gpu/site.tar.xz
    export PYTHONPATH=$PWD:/root/site

    python -m benchmarks.gpu_box_bundle                       # -> .kerneldojo/gpu/site.tar.xz
    python -m benchmarks.gpu_box_bundle --extra deepspeed     # also what deepspeed needs (the gpu extra)
    python -m benchmarks.gpu_box_bundle --leave-out z3-solver # evaluation and the verifier only (no synthesis)
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
BOX_ENV = {"python_version": "3.12", "python_full_version": "3.12.3", "sys_platform": "linux",
           "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
           "implementation_name": "cpython", "platform_python_implementation": "CPython"}
# pip takes an explicit --platform literally (no older glibc tags implied): name every one the box's glibc runs
PLATFORMS = ["manylinux1_x86_64", "manylinux2010_x86_64", "manylinux2014_x86_64",
             *(f"manylinux_2_{minor}_x86_64" for minor in (5, 12, 17, 24, 27, 28, 31, 34)), "any"]
NEVER = re.compile(r"^(torch|nvidia[-_].*|triton|kerneldojo)$")  # the box has its own CUDA torch stack
DROPPED = ["mlflow/server/js", "bin"]  # the MLflow UI's JavaScript (~20 MB), console scripts


def box_packages(listing: Path) -> set[str]:
    """Distribution names in a `pip list` (or `pip freeze`) printout."""
    names = set()
    for line in listing.read_text().splitlines():
        word = re.split(r"[\s=]", line.strip(), maxsplit=1)[0]
        if word and not word.startswith(("Package", "---", "#")):
            names.add(canonicalize_name(word))
    return names


def _applies(marker: Marker | None, extras: set[str]) -> bool:
    if marker is None:
        return True
    return any(marker.evaluate({**BOX_ENV, "extra": extra}) for extra in extras | {""})


def closure(roots: list[str]) -> dict[str, str]:
    """{distribution: installed version} of `roots` and everything they need on the box, extras included."""
    wanted: dict[str, set[str]] = {}
    todo = [(r, set()) for r in roots]
    found: dict[str, str] = {}
    while todo:
        name, extras = todo.pop()
        key = canonicalize_name(name)
        if key in wanted and extras <= wanted[key]:
            continue
        wanted[key] = wanted.get(key, set()) | extras
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue  # an optional requirement this virtualenv does not have: not needed here either
        found[key] = f"{dist.metadata['Name']}=={dist.version}"
        for text in dist.requires or []:
            req = Requirement(text)
            if _applies(req.marker, wanted[key]):
                todo.append((req.name, set(req.extras)))
    return found


def wheels_for(needed: dict[str, str], folder: Path) -> list[Path]:
    """The wheels in `folder` that are the pins of `needed`, nothing else: the folder is kept between bundles, so it
    also holds what an earlier bundle took (a `--leave-out` must not come back through it) and older versions."""
    pins = {(canonicalize_name(pin.split("==")[0]), Version(pin.split("==")[1])) for pin in needed.values()}
    return sorted(w for w in folder.glob("*.whl") if parse_wheel_filename(w.name)[:2] in pins)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--box-packages", type=Path, default=ROOT / "docs" / "gpu-box-packages.txt",
                        help="the box's `pip list` (what it already has)")
    parser.add_argument("--extra", nargs="*", default=[], help="more distributions to take (e.g. deepspeed)")
    parser.add_argument("--leave-out", nargs="*", default=[], help="distributions not to take (e.g. z3-solver: "
                        "only synthesize needs it, and it is a third of the bundle)")
    parser.add_argument("--out", type=Path, default=ROOT / ".kerneldojo" / "gpu" / "site.tar.xz")
    args = parser.parse_args(argv)

    have = box_packages(args.box_packages)
    needed = {k: v for k, v in closure(["kerneldojo", "pytest", "pytest-timeout", *args.extra]).items()
              if k not in have and not NEVER.match(k) and k not in {canonicalize_name(n) for n in args.leave_out}}
    print(f"{len(needed)} distributions the box lacks: {', '.join(sorted(needed))}")
    wheels = args.out.parent / "wheels"  # kept: a second bundle downloads only what changed
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site"
        pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
        platforms = [a for p in PLATFORMS for a in ("--platform", p)]
        have_wheels = {f"{name}=={version}" for name, version, *_ in map(parse_wheel_filename,
                                                                         (w.name for w in wheels.glob("*.whl")))}
        for pin in sorted(needed.values()):
            name, version = pin.split("==")
            if f"{canonicalize_name(name)}=={Version(version)}" in have_wheels:  # already downloaded
                continue
            got = subprocess.run([*pip, "download", "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
                                  *platforms, "-d", str(wheels), pin], capture_output=True, text=True)
            if got.returncode:  # no cp312 wheel (a pure-Python sdist, e.g. antlr4): build one here
                subprocess.run([*pip, "wheel", "--no-deps", "-w", str(wheels), pin], check=True)
        installed = subprocess.run([*pip, "install", "--no-deps", "--target", str(site), "--python-version", "3.12",
                                    "--only-binary=:all:", *platforms, *map(str, wheels_for(needed, wheels))],
                                   capture_output=True, text=True)
        if installed.returncode:
            sys.exit(f"pip install --target failed: {installed.stderr.strip()[-2000:]}")
        for rel in DROPPED:
            shutil.rmtree(site / rel, ignore_errors=True)
        for cache in site.rglob("__pycache__"):
            shutil.rmtree(cache, ignore_errors=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(f"tar -C {site} -cf - . | xz -T0 -7 > {args.out}", shell=True, check=True)
    size = args.out.stat().st_size / 2**20
    print(f"{args.out} {size:.1f} MiB" + ("  (a device call carries 64 MiB with the checkout: leave something out)"
                                          if size > 61 else ""))


if __name__ == "__main__":
    main()
