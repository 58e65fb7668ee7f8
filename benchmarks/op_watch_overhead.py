"""What the op watch (verifier/op_watch.cpp) adds to each dispatcher op a candidate's sandbox runs: the same small
ops timed in one process before the watch is installed (the baseline) and after (it stays installed: a process
cannot take it back), printed per op and as a ratio. Host time only — the callback runs on the host whatever the
device — so the CPU measures what a GPU sandbox pays per op too. Harness 14 copies each op's name once and compares
the name at its pointer on every op (a freed RecordFunction name was read as an op): this is where that shows.

    python -m benchmarks.op_watch_overhead [--ops 200000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time


def per_op_ns(run, ops: int, repeats: int) -> float:
    """The median over `repeats` of `run(ops)`'s wall time per op, in ns."""
    times = []
    for _ in range(repeats):
        begin = time.perf_counter_ns()
        run(ops)
        times.append((time.perf_counter_ns() - begin) / ops)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    import torch

    from verifier.fastbuild import FastInlineBuilder
    from verifier.op_watch import OpWatch

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    a, b, out = torch.ones(16), torch.ones(16), torch.empty(16)

    def adds(n: int) -> None:  # one dispatcher op a call: aten::add (its out= overload; the watch names no overload)
        for _ in range(n):
            torch.add(a, b, out=out)

    def empties(n: int) -> None:  # what a candidate's forward does most: allocate its output
        for _ in range(n):
            torch.empty(16)

    cases = {"aten::add, out= (16 floats)": adds, "aten::empty": empties}
    adds(1000), empties(1000)  # warm up the dispatcher
    before = {name: per_op_ns(run, args.ops, args.repeats) for name, run in cases.items()}
    with tempfile.TemporaryDirectory() as cache:
        watch = OpWatch(str(FastInlineBuilder(cache).op_watch_library()))
        watch.take()
        after = {name: per_op_ns(run, args.ops, args.repeats) for name, run in cases.items()}
        seen = watch.take()
    print(f"{'op':<28} {'unwatched ns':>13} {'watched ns':>11} {'added ns':>9} {'ratio':>6}")
    for name in cases:
        print(f"{name:<28} {before[name]:>13.0f} {after[name]:>11.0f} {after[name] - before[name]:>9.0f} "
              f"{after[name] / before[name]:>6.2f}")
    expected = args.ops * args.repeats
    print(f"the watch saw aten::add {seen['aten::add']} times and aten::empty {seen['aten::empty']} "
          f"(each ran {expected})")


if __name__ == "__main__":
    main()
