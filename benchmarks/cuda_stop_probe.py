"""Does stopping (SIGSTOP) a process that holds a CUDA context disturb other processes' CUDA work on its GPU?

The GPU pool stops every other candidate's sandbox while it times one (SandboxFactory.others_paused). On the
first H200 run of that change the torch.compile baseline, timed with a candidate's process stopped, failed with
"CUDA error: OS call failed or operation not supported on this OS"; eager, timed the same way, did not. This
probe separates the cases, each in a fresh process beside a holder (none / idle / launching kernels), stopped or
not: an eager op, then a function under torch.compile.

    python -m benchmarks.cuda_stop_probe
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

HOLDER = r"""
import sys, torch
x = torch.randn(2048, 2048, device="cuda")
torch.cuda.synchronize()
print("ready", flush=True)
busy = sys.argv[1] == "busy"
while True:
    if busy:
        y = x @ x
        torch.cuda.synchronize()
    else:
        import time; time.sleep(0.05)
"""

WORKER = r"""
import time, torch
start = time.perf_counter()
x = torch.randn(1 << 20, device="cuda")
try:
    (x * 2 + 1).sum().item()
    eager = "ok"
except Exception as exc:
    eager = type(exc).__name__ + ": " + str(exc).splitlines()[0]
try:
    f = torch.compile(lambda t: torch.relu(t * 3 - 1) + t.sin())
    f(x); torch.cuda.synchronize()
    flush = torch.empty(1 << 24, dtype=torch.int32, device="cuda"); flush.zero_(); f(x); torch.cuda.synchronize()
    compiled = "ok"
except Exception as exc:
    compiled = type(exc).__name__ + ": " + str(exc).splitlines()[0]
print(f"eager {eager} | compiled {compiled} | {time.perf_counter() - start:.1f} s", flush=True)
"""


def case(holder: str | None, stopped: bool) -> str:
    proc = None
    if holder:
        proc = subprocess.Popen([sys.executable, "-c", HOLDER, holder], stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        if stopped:
            os.kill(proc.pid, signal.SIGSTOP)
    try:
        done = subprocess.run([sys.executable, "-c", WORKER], capture_output=True, text=True, timeout=300)
        return (done.stdout.strip() or done.stderr.strip()[-300:])
    finally:
        if proc is not None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


def judged(exclusive: bool, isolation: str) -> str:
    """The honest example kernel judged on the GPU with torch.compile's baseline, the pool's timing exclusive
    (every other run sandbox stopped) or not, in the jail or not."""
    import tempfile

    from schemas import load_config
    from verifier.examples import example_candidate, example_problem
    from verifier.judge import Devices, Judge

    cfg = load_config(None, ["verifier.backend=cuda", "verifier.use_cache=false", "verifier.trials=2",
                             "verifier.spare_sandboxes=0", "verifier.compare_torch_compile=true",
                             f"verifier.isolation={isolation}"]).verifier
    problem = example_problem("scale_shift", "cuda")
    cache = os.path.join(tempfile.gettempdir(), "cuda-stop-probe")  # one build of the kernel for every case
    with Judge(cfg, cache) as judge:
        verdict = judge.verify(problem, example_candidate(problem, "cuda"),
                               Devices([0], exclusive_timing=exclusive), static_rules=False)
    return (f"{verdict.category.value} vs eager {verdict.speedup_vs_eager} vs compile {verdict.speedup_vs_compile} "
            f"paused {verdict.phases.get('paused')} timing {verdict.timing}")


def main() -> None:
    for isolation, exclusive in (("namespaces", True), ("namespaces", False), ("none", True)):
        try:
            print(f"judged {isolation} exclusive={exclusive}: {judged(exclusive, isolation)}", flush=True)
        except Exception as exc:  # a probe: say what failed and go on
            print(f"judged {isolation} exclusive={exclusive}: {type(exc).__name__}: {exc}"[:600], flush=True)
    for holder, stopped in ((None, False), ("idle", True), ("busy", True)):
        print(f"holder {holder or 'none':4} {'stopped' if stopped else 'running':7}: {case(holder, stopped)}",
              flush=True)


if __name__ == "__main__":
    main()
