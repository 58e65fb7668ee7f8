"""How long `kerneldojo runs` takes to print its table, against importing torch and transformers (what it used
to pay before its imports were made lazy) and a bare interpreter, measured in the same run.

    python benchmarks/cli_latency.py [--home .kerneldojo] [--repeats 5]

Target (issue 14): `kerneldojo runs` under 2 s on an idle machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = [sys.executable, "-c", "from flows.cli import main; main()"]


def median_seconds(command: list[str], repeats: int, env: dict[str, str]) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", default=None, help="a kerneldojo home to list (default: a fresh, empty one)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    home = args.home or tempfile.mkdtemp(prefix="kerneldojo-cli-")
    env = {**os.environ, "KERNELDOJO_HOME": str(Path(home).resolve())}
    rows = [("python -c pass", median_seconds([sys.executable, "-c", "pass"], args.repeats, env)),
            ("import torch, transformers", median_seconds([sys.executable, "-c", "import torch, transformers"],
                                                          args.repeats, env)),
            ("kerneldojo runs", median_seconds([*CLI, "runs"], args.repeats, env))]
    baseline = rows[1][1]
    print(f"| command | median s ({args.repeats} runs) | x import torch+transformers |\n| --- | ---: | ---: |")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.2f} | {seconds / baseline:.2f} |")


if __name__ == "__main__":
    main()
