"""The untrusted side: one short-lived process per candidate.

The judge forks it (from a forkserver that has torch imported already), hands it
the candidate source, then feeds it trial inputs one message at a time. It never
receives the reference or its outputs. Whatever it does to itself (segfault,
`os._exit`, an endless loop, patching torch) costs only this process; the judge
reads its silence or death as a verdict.
"""

from __future__ import annotations

import os
import resource
import sys
import threading
import traceback
from typing import Any

# Bound before any candidate code runs, so later patching cannot reach the copies
# the sandbox uses for timing and messaging.
from time import perf_counter as _perf_counter

import torch

from verifier.legality import DispatchRecorder
from verifier.reference import dumps, loads, to_list
from verifier.tensor_io import read_tensors, write_tensors
from verifier.timing import time_calls as _time_calls

FILE_SIZE_LIMIT = 8 << 30  # no file the sandbox writes (outputs, objects, logs) may grow past this

MAX_TRACE = 4000


def _warm_up() -> None:
    """The first TorchDispatchMode use costs ~1 s of lazy imports; pay it once, in the forkserver."""
    with DispatchRecorder():
        torch.empty(1).add_(1)


_warm_up()


def _limit_resources(memory_limit_mb: int, device: str) -> None:
    os.setpgrp()  # lets the judge kill the whole group, compilers included
    if device == "cpu":  # CUDA reserves huge virtual ranges; RLIMIT_AS would break it
        limit = memory_limit_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))


def _redirect_output(log_path: str) -> None:
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _short_trace(exc: BaseException) -> str:
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    # Drop the sandbox's own frames: the model should see its code, not ours.
    lines = [ln for ln in text.splitlines() if "verifier/sandbox.py" not in ln]
    return "\n".join(lines)[-MAX_TRACE:]


class _CountingModule:
    """What the candidate's load_inline returns: its compiled module, with every call counted,
    so the judge has evidence that the candidate's own code ran."""

    def __init__(self, module):
        self._module = module
        self.kd_calls = 0

    def __getattr__(self, name):
        attr = getattr(self._module, name)
        if not callable(attr):
            return attr

        def counted(*args, **kwargs):
            self.kd_calls += 1
            return attr(*args, **kwargs)

        return counted


def _load_inputs(path: str, metas: list[Any], device: str) -> list[Any]:
    """The trial inputs the judge wrote, each in its own storage on this sandbox's device."""
    values = read_tensors(path, metas, max_bytes=1 << 62)
    return [(v.to(device) if device != "cpu" else v.clone()) if isinstance(v, torch.Tensor) else v
            for v in values]


def _visible_gpu(device_index: int) -> str:
    """The CUDA_VISIBLE_DEVICES entry of the judge's GPU `device_index`."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return visible.split(",")[device_index].strip() if visible else str(device_index)


def spare_main(conn, device: str, device_index: int) -> None:
    """A sandbox, possibly started before its candidate is known. It sees only its GPU (so "cuda" in the
    candidate's code means that GPU, in every thread) and creates its CUDA context in a background
    thread, overlapping the candidate's build instead of adding to it. It serves exactly one job."""
    try:
        if device == "cuda":
            os.environ["CUDA_VISIBLE_DEVICES"] = _visible_gpu(device_index)  # before CUDA's first use
            threading.Thread(target=lambda: torch.empty(1, device="cuda"), daemon=True).start()
        job = conn.recv()
    except (EOFError, OSError, KeyboardInterrupt):  # the judge closed without using it
        return
    if isinstance(job, dict):  # anything else is the judge's ("stop",)
        child_main(conn, job)


def child_main(conn, job: dict[str, Any]) -> None:
    # To the judge only bytes it decodes with a weights-only unpickler: never a pickle it would execute.
    send = lambda message: conn.send_bytes(dumps(message))
    recv = conn.recv
    inputs_path = os.path.join(job["io_dir"], "inputs.bin")
    outputs_path = os.path.join(job["io_dir"], "outputs.bin")
    send(("hello", os.getpid()))  # before any candidate code: silence after this is the candidate's
    try:
        _limit_resources(job["memory_limit_mb"], job["device"])
        os.chdir(job["scratch_dir"])
        _redirect_output(os.path.join(job["scratch_dir"], "candidate.log"))
        torch.set_num_threads(job.get("num_threads", 1))
        # torch's own builds (baseline and fallbacks) go to this sandbox's scratch: KernelBench candidates
        # reuse extension names, and builds of different sources under one name would collide.
        os.environ["TORCH_EXTENSIONS_DIR"] = os.path.join(job["scratch_dir"], "torch_extensions")
        # Imported here, never in the forkserver: its import probes CUDA.
        from torch.utils import cpp_extension
        from verifier.fastbuild import BuildError, FastInlineBuilder

        builder = None
        if job["fast_build"]:
            builder = FastInlineBuilder(job["build_cache_dir"], timeout_s=job["compile_timeout_s"],
                                        cuda_arch=job.get("cuda_arch"))
            build = builder.load_inline
        else:
            build = cpp_extension.load_inline
    except Exception as exc:  # the harness itself failed: report, do not judge
        send(("load_error", {"kind": "harness", "message": _short_trace(exc), "log": ""}))
        return
    modules: list[_CountingModule] = []

    def load_inline(*args, **kwargs):
        module = _CountingModule(build(*args, **kwargs))
        modules.append(module)
        return module

    cpp_extension.load_inline = load_inline

    start = _perf_counter()
    namespace: dict[str, Any] = {"__name__": "candidate", "__file__": "candidate.py"}
    try:
        exec(compile(job["source"], "candidate.py", "exec"), namespace)
    except BaseException as exc:  # SystemExit included: a candidate may not end the sandbox quietly
        if isinstance(exc, BuildError) or type(exc).__name__ == "BuildError" or "Error building extension" in str(exc):
            log = getattr(exc, "log", "") or str(exc)
            send(("load_error", {"kind": "compile", "message": str(exc)[:500], "log": log[-20000:],
                                 "seconds": _perf_counter() - start}))
        else:
            send(("load_error", {"kind": "exec", "message": _short_trace(exc), "log": "",
                                 "seconds": _perf_counter() - start}))
        return
    compile_seconds = _perf_counter() - start

    model_cls = namespace.get("ModelNew")
    if model_cls is None:
        send(("load_error", {"kind": "exec", "message": "the candidate defines no class ModelNew", "log": "",
                             "seconds": compile_seconds}))
        return
    def own_calls() -> int:
        return sum(m.kd_calls for m in modules)

    try:
        init_inputs = loads(job["init_inputs"])
        torch.manual_seed(job["init_seed"])
        model = model_cls(*init_inputs)
        if isinstance(model, torch.nn.Module):
            model = model.to(job["device"]).eval()
    except BaseException as exc:
        send(("load_error", {"kind": "init", "message": _short_trace(exc), "log": "",
                             "seconds": compile_seconds}))
        return

    send(("ready", {"compile_seconds": compile_seconds,
                    "fast_build": builder is not None and builder.stats.fallbacks == 0,
                    "fallbacks": builder.stats.fallback_reasons if builder else [], "own_modules": len(modules)}))
    sync = torch.cuda.synchronize if job["device"] == "cuda" else (lambda: None)

    while True:
        msg = recv()
        kind = msg[0]
        if kind == "stop":
            return
        if kind == "trial":
            _, index, metas = msg
            inputs = _load_inputs(inputs_path, metas, job["device"])
            calls_before = own_calls()
            recorder = DispatchRecorder(poison=True)
            try:
                with torch.no_grad():
                    t0 = _perf_counter()
                    with recorder:
                        out = model(*inputs)
                    sync()
                    seconds = _perf_counter() - t0
                outputs = to_list(out)
                written = write_tensors(outputs_path, [*outputs, *[x for x in inputs if isinstance(x, torch.Tensor)]])
            except BaseException as exc:
                send(("trial_error", index, _short_trace(exc)))
                continue
            send(("trial_out", index, {
                "outputs": written[:len(outputs)],
                "inputs_after": written[len(outputs):],
                "ops": dict(recorder.ops),
                "own_calls": own_calls() - calls_before if modules else None,
                "seconds": seconds,
            }))
        elif kind == "time":
            _, metas, warmup, runs = msg
            inputs = _load_inputs(inputs_path, metas, job["device"])
            with torch.no_grad():
                timing = _time_calls(lambda: model(*inputs), job["device"], warmup, runs)
            send(("timed", {"seconds": timing.seconds, "escaped": timing.escaped}))
        else:
            send(("protocol_error", f"unknown message {kind!r}"))
            sys.stdout.flush()
