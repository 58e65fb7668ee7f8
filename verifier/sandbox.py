"""The untrusted side: short-lived processes that run code the judge does not trust.

Each sandbox is forked from a forkserver that has torch imported, confines itself (verifier/jail.py)
before it reads its job, and plays one role:

- `run`: a candidate. It executes the candidate's module; every `load_inline` call becomes a request
  to the judge, which builds it (in a `build` sandbox) and hands back a shared object to load. Then it
  constructs ModelNew and serves trials and timing. It never receives the reference or its outputs.
- `build`: runs compiler commands for the judge (the only sandboxes that may start processes).
- `reference`: an untrusted reference program (an imported problem): its inputs, outputs and timing.

Whatever a sandbox does to itself costs only itself; the judge reads its silence or death as a verdict,
and believes nothing it reports without a check of its own.
"""

from __future__ import annotations

import gc
import os
import resource
import sys
import threading
import traceback
import types
from collections import Counter
from collections.abc import Callable
from multiprocessing.reduction import recv_handle
from typing import Any

# Bound before any candidate code runs, so later patching cannot reach the copies the sandbox uses.
from time import perf_counter as _perf_counter

import torch

from verifier import jail
from verifier.artifacts import load_artifact
from verifier.legality import DispatchRecorder
from verifier.op_watch import OpWatch
from verifier.reference import dumps, load_reference_module, loads, reassociation_scales, to_list
from verifier.tensor_io import (append_tensors, bytes_spanned, content_checksum, describe_tensors, hand_over,
                                map_copy_on_write, map_shared_staging, new_memory_file, seal, tensors_in,
                                write_sealed, write_tensors)
from verifier.timing import time_calls as _time_calls

MAX_TRACE = 4000

# The class-level functions the harness reads a forward's tensors with, bound before any candidate code runs: a method
# looked up on a tensor the candidate made or touched may be an instance attribute of its own (`x.detach = ...`).
_detach = torch.Tensor.detach
_clone = torch.Tensor.clone
# ...and with torch's function handling off: a torch function mode of the candidate's left on (entered, never left)
# would run its code in each torch call the harness makes — reading a trial's inputs before the forward, its outputs
# after it, a timed call's outputs after the timed calls — out of the recorder's and the op watch's sight. Off, not
# refused: torch's own set_default_device leaves one on.
_torch_function_off = torch._C.DisableTorchFunction
# What a forward may return, compared by type(), never isinstance: nn.Parameter exactly (torch disables its
# __torch_function__), never a subclass of either
_OUTPUT_TENSOR_TYPES = (torch.Tensor, torch.nn.Parameter)
_OUTPUT_SEQUENCE_TYPES = (tuple, list)


def _warm_up() -> None:
    """The first TorchDispatchMode use costs ~1 s of lazy imports; pay it once, in the forkserver."""
    with DispatchRecorder():
        torch.empty(1).add_(1)


_warm_up()


def _plain_limits(memory_limit_mb: int, device: str) -> None:
    """Without isolation (`verifier.isolation: none`): rlimits only."""
    if device == "cpu":  # CUDA reserves huge virtual ranges; RLIMIT_AS would break it
        limit = memory_limit_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    file_bytes = jail.file_size_limit(memory_limit_mb)  # no file it writes (outputs, objects, logs) grows past this
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))


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


_context: threading.Thread | None = None  # a cuda sandbox's context, made in the background while it waits


def _forbid_threads() -> None:
    """From here on no thread starts in this process (seccomp, stacked on the jail's: clone refused; processes
    were already). A candidate's native thread outlives its forward: it could keep the GPU or the CPUs busy while
    the judge times others — the eager baseline its speedup is measured against — or launch kernels that run
    past the harness's synchronisation. Its CUDA context first (its driver starts threads of its own): a spare
    sandbox made it while waiting for its job."""
    import errno

    import pyseccomp as sc

    if _context is not None:
        _context.join()
    refuse = sc.SyscallFilter(defaction=sc.ALLOW)
    refuse.add_rule(sc.ERRNO(errno.EPERM), "clone")
    refuse.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")  # libc falls back to clone
    refuse.load()


def sandbox_main(conn, role: str, device: str, memory_limit_mb: int, plan: jail.JailPlan | None,
                 visible_gpu: str | None) -> None:
    """Entry point of every sandbox (possibly started before its job is known). Confines itself first;
    then, for cuda, sees only its GPU and creates its CUDA context in a background thread, overlapping
    the candidate's build. Serves exactly one job."""
    os.setpgrp()  # lets the judge kill the keeper and the jail as one group
    if plan is not None:
        try:
            jail.enter(plan, {conn.fileno()}, gpu=device == "cuda",  # returns only inside the jail
                       on_failure=lambda message: conn.send_bytes(dumps(("jail_error", message))))
        except jail.JailError as exc:
            conn.send_bytes(dumps(("jail_error", str(exc))))
            return
    else:
        _plain_limits(memory_limit_mb, device)
    try:
        if device == "cuda" and role != "build":
            global _context
            os.environ["CUDA_VISIBLE_DEVICES"] = visible_gpu or "0"  # before CUDA's first use
            _context = threading.Thread(target=lambda: torch.empty(1, device="cuda"), daemon=True)
            _context.start()
        job = conn.recv()
    except (EOFError, OSError, KeyboardInterrupt):  # the judge closed without using it
        return
    if isinstance(job, dict):  # anything else is the judge's ("stop",)
        {"run": run_candidate, "build": serve_builds, "reference": serve_reference,
         "analyse": serve_analysis}[role](conn, job)


def _sender(conn):
    # To the judge only bytes it decodes with a weights-only unpickler: never a pickle it would execute.
    return lambda message: conn.send_bytes(dumps(message))


def _prepare(job: dict[str, Any]) -> None:
    os.chdir(job["work_dir"])
    # the log lives in tmpfs, charged to the sandbox's memory: a flood of output fills its cgroup, not a disk
    _redirect_output(os.path.join(job["io_out"], "candidate.log"))
    torch.set_num_threads(job.get("num_threads", 1))


# -- candidates -----------------------------------------------------------------------------------
def no_dispatch_modes_left(when: str) -> None:
    """Refuse (RuntimeError) while a torch dispatch mode is active: one of the candidate's, entered and never left,
    runs its code in every ATen op the harness runs — reading a trial's inputs before the forward or its outputs
    after it, out of the recorder's and the op watch's sight. (Torch function modes: `_torch_function_off`.)"""
    if torch._C._len_torch_dispatch_stack():
        raise RuntimeError(f"a torch dispatch mode was left active {when}: a forward's modes must be left before it "
                           "returns")


def candidate_outputs(out: Any) -> list[torch.Tensor]:
    """A forward's outputs as the harness reads them (to seal a trial's, to keep a timed call's): exactly a
    torch.Tensor (or nn.Parameter), or exactly a tuple or list of them, types compared by type(). Anything else is
    the candidate's error (TypeError): a subclass's methods are the candidate's code — a tensor subclass's
    __torch_function__, a list subclass's __iter__ — and would run while the harness reads it, after the forward,
    where no recorder or op watch looks. The tensors come back as fresh aliases made by torch's own detach (bound
    before any candidate code), never through a method looked up on the candidate's objects: the harness reads
    objects of its own, with no attribute of the candidate's; no torch function mode sees them made."""
    no_dispatch_modes_left("after the forward")
    if type(out) in _OUTPUT_SEQUENCE_TYPES:
        items = list(out)  # a tuple or a list exactly: the built-in iteration, no code of the candidate's
    elif type(out) in _OUTPUT_TENSOR_TYPES:
        items = [out]
    else:
        raise TypeError("forward must return a torch.Tensor, or a tuple or list of them (exactly those types, no "
                        f"subclass), got {_type_name(out)}")
    for k, item in enumerate(items):
        if type(item) not in _OUTPUT_TENSOR_TYPES:
            raise TypeError(f"forward must return a torch.Tensor, or a tuple or list of them (exactly those types, no "
                            f"subclass): item {k} of its {type(out).__name__} is {_type_name(item)}")
    with _torch_function_off():
        return [_detach(t) for t in items]


_QUALNAME = vars(type)["__qualname__"]  # read from the type itself: a metaclass's property is the candidate's code


def _type_name(value: Any) -> str:
    kind = type(value)
    name = _QUALNAME.__get__(kind)[:80]
    for base in (*_OUTPUT_TENSOR_TYPES, *_OUTPUT_SEQUENCE_TYPES):
        if kind is not base and issubclass(kind, base):
            return f"{name} (a subclass of {_QUALNAME.__get__(base)})"
    return name


class BuildFailed(RuntimeError):
    """What a candidate's load_inline raises when its source does not compile (the judge holds the log)."""


def _counting_module(module: Any, calls: Counter) -> Any:
    """What the candidate's load_inline returns: its compiled module, every call of its functions counted in
    `calls["own"]`, so the judge has evidence that the candidate's own code ran. The count is the harness's, held in
    closures (here and in run_candidate): no attribute of the object the candidate holds reaches it — an attribute
    count (`mod.kd_calls += 1`) passed a problem of glue alone whose kernel never ran."""

    class CountingModule:
        def __getattr__(self, name):
            attr = getattr(module, name)
            if not callable(attr):
                return attr

            def counted(*args, **kwargs):
                calls["own"] += 1
                return attr(*args, **kwargs)

            return counted

    return CountingModule()


def _plain(value: Any) -> Any:
    """A load_inline argument as plain data (strings, numbers, lists, dicts), or TypeError."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    raise TypeError(f"load_inline: unsupported argument of type {type(value).__name__}")


def _cpp_extension_stub(send, recv, modules: list, calls: Counter) -> types.ModuleType:
    """`torch.utils.cpp_extension` as candidates see it: `load_inline` asks the judge to build, and loads
    the shared object the judge hands back (its calls counted in `calls`, `_counting_module`). Nothing compiles in
    this process."""
    stub = types.ModuleType("torch.utils.cpp_extension")

    def load_inline(*args, **kwargs):
        send(("build", [_plain(a) for a in args], _plain(kwargs)))
        reply = recv()
        if reply[0] == "build_error":
            raise BuildFailed(reply[1])
        if reply[0] == "call_error":
            raise TypeError(reply[1])
        module = _counting_module(load_artifact(reply[1], reply[2]), calls)
        modules.append(module)
        return module

    def not_here(*_, **__):
        raise RuntimeError("only load_inline builds code in the sandbox")

    stub.load_inline = load_inline
    stub.load = stub.CppExtension = stub.CUDAExtension = stub.BuildExtension = not_here
    stub.CUDA_HOME = None
    return stub


def run_candidate(conn, job: dict[str, Any]) -> None:
    send = _sender(conn)
    recv = conn.recv
    try:
        _prepare(job)
        modules: list[Any] = []
        calls: Counter = Counter()  # the candidate's calls of its compiled functions: in no object it holds
        stub = _cpp_extension_stub(send, recv, modules, calls)
        sys.modules["torch.utils.cpp_extension"] = stub
        torch.utils.cpp_extension = stub
        # every op the dispatcher runs from here on is seen, in trials and timed calls alike (verifier/op_watch.py)
        watch = OpWatch(job["op_watch"])
        if not job.get("threads", True):
            _forbid_threads()
    except Exception as exc:  # the harness itself failed: said instead of its hello, where no candidate can say it
        send(("load_error", {"kind": "harness", "message": _short_trace(exc), "log": ""}))
        return
    send(("hello", os.getpid()))  # before any candidate code: silence after this is the candidate's

    start = _perf_counter()
    namespace: dict[str, Any] = {"__name__": "candidate", "__file__": "candidate.py"}
    try:
        exec(compile(job["source"], "candidate.py", "exec"), namespace)
    except BaseException as exc:  # SystemExit included: a candidate may not end the sandbox quietly
        kind = "compile" if isinstance(exc, BuildFailed) else "exec"
        send(("load_error", {"kind": kind, "message": _short_trace(exc), "log": "",
                             "seconds": _perf_counter() - start}))
        return
    compile_seconds = _perf_counter() - start
    send(("loaded",))  # the module ran; constructing ModelNew is run time, not build time

    model_cls = namespace.get("ModelNew")
    if model_cls is None:
        send(("load_error", {"kind": "exec", "message": "the candidate defines no class ModelNew", "log": "",
                             "seconds": compile_seconds}))
        return

    def own_calls() -> int:
        return calls["own"]

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

    send(("ready", {"compile_seconds": compile_seconds, "own_modules": len(modules)}))
    if job.get("load_only"):  # the judge's first look (verifier.build_first): built and constructed, no trial
        return
    sync = torch.cuda.synchronize if job["device"] == "cuda" else (lambda: None)

    while True:
        msg = recv()
        kind = msg[0]
        if kind == "stop":
            return
        if kind == "trial":
            _, index, metas = msg
            inputs = _load_inputs(recv_handle(conn), metas, job["device"])
            calls_before = own_calls()
            recorder = DispatchRecorder(poison=True)
            try:
                # no mode of the candidate's sees the harness read the inputs (before the forward: unwatched)
                no_dispatch_modes_left("before the forward")
                with _torch_function_off():
                    # its inputs' contents before and after: whether the forward wrote them (input-mutation), told
                    # rather than sent back (a full-size input is GBs to write); a report on itself either way. Read
                    # through aliases of the harness's own, made before the forward and never handed to it: a
                    # method the forward sets on an input (`x.detach = ...`) would run when the harness checks it
                    tensors = [_detach(x) for x in inputs if isinstance(x, torch.Tensor)]
                    before = [content_checksum(x) for x in tensors]
                # from the forward until its outputs are sealed no collection runs a finalizer of the candidate's
                # (its code, run while the harness reads them); `out` and `inputs` hold its objects until then
                gc.disable()
                with torch.no_grad():
                    t0 = _perf_counter()
                    watch.take()  # what ran before this forward is not its
                    with recorder:
                        out = model(*inputs)
                    observed = watch.take()
                    gc.disable()  # again: the forward may have enabled it
                    sync()
                    seconds = _perf_counter() - t0
                outputs = candidate_outputs(out)
                with _torch_function_off():
                    mutated = [k for k, (x, was) in enumerate(zip(tensors, before)) if content_checksum(x) != was]
                    del tensors
                    # into a sealed memory file the judge maps: no file to read back into its memory
                    sealed, written = write_sealed(outputs)
                del outputs
            except BaseException as exc:
                send(("trial_error", index, _short_trace(exc)))
                continue
            finally:
                # what the candidate's finalizers do now, the outputs sealed and the inputs checked, changes neither
                inputs = out = None
                gc.enable()
            try:
                send(("trial_out", index, {
                    "outputs": written,
                    "inputs_mutated": mutated,
                    # what the dispatch mode saw, and what the dispatcher ran out of its sight
                    "ops": dict(recorder.ops + Counter({op: n for op, n in observed.items()
                                                        if op not in recorder.ops})),
                    "own_calls": own_calls() - calls_before if modules else None,
                    "seconds": seconds,
                }))
                hand_over(conn, sealed)
            finally:
                os.close(sealed)
        elif kind == "time":
            _, warm_metas, warmup, runs = msg
            warm_inputs = _load_inputs(recv_handle(conn), warm_metas, job["device"])
            _serve_timing(conn, send, model, warm_inputs, job["device"], warmup, runs,
                          os.path.join(job["io_out"], "timed.bin"), watch=watch)
        else:
            send(("protocol_error", f"unknown message {kind!r}"))


_DONE = dumps(("done",))  # serialised ahead: the judge's clock stops when these bytes arrive


ROTATING_BUFFERS = 2  # timed calls alternate between this many input buffers, refilled before each call


def _serve_timing(conn, send, model_fn, warm_inputs: list[Any], device: str, warmup: int, runs: int,
                  outputs_path: str, pin: bool = True, watch: OpWatch | None = None,
                  read: Callable[[Any], list[torch.Tensor]] = candidate_outputs) -> None:
    """Warm up, tell the judge, wait for its `go` (with the staging buffer it fills with each call's inputs),
    run the timed calls, say `done`, report; then write the outputs of the timed calls the judge asks to see.

    Before timed call i the sandbox asks the judge for call i's inputs; the judge writes them into the shared
    staging buffer (off its clock), starts its clock for the call and says where they lie; the sandbox
    refills one of ROTATING_BUFFERS buffers from the staging (on a GPU, one DMA from page-locked pages), runs
    the call, and asks for the next call's inputs, which stops the judge's clock for this one. No call's
    inputs exist anywhere the sandbox can see before the call before it has finished (nothing to compute
    ahead), a kernel that keys a remembered result on an address returns a stale one, one that keys it on
    the values never finds it (no two timed calls share a set). Each call's output is copied as soon as it is
    timed, so a kernel may write every call into one output buffer of its own.

    `watch` (a candidate's): the ops the warm-up and timed calls ran, reported with the timing — what the harness
    itself runs among them (the inputs' copies, the L2 flush, the outputs' copies) is glue the rules allow.
    `read`: a call's outputs as a list of tensors — a candidate's strictly (`candidate_outputs`), a reference's as
    its trials read them (`to_list`: torch's named tuples, as `torch.max(x, 1)` returns)."""
    # the warm-up's own inputs are the first buffer (refilled before timed call 0): one trial's inputs fewer
    buffers = [list(warm_inputs)] + [[x.clone() if isinstance(x, torch.Tensor) else x for x in warm_inputs]
                                     for _ in range(ROTATING_BUFFERS - 1)]
    outputs: list[Any] = [None] * runs
    staging: list[Any] = [None, None]  # the judge's staging, mapped: (mapping, its bytes as a tensor)
    registered = [False]
    # the sandbox's own clock over what lies inside the judge's clock besides the calls: from a call's inputs
    # being handed over to their copy being issued, and keeping its outputs (a diagnosis, never believed)
    around = {"prepared": 0.0, "kept": 0.0}

    def prepare(i):
        send(("next", i))
        reply = conn.recv()
        if reply[:2] != ("set", i):
            raise RuntimeError(f"timing: the judge sent {str(reply)[:60]} for call {i}")
        handed = _perf_counter()
        values = tensors_in(staging[1], reply[2])
        buffer = buffers[i % ROTATING_BUFFERS]
        for k, value in enumerate(values):
            if isinstance(value, torch.Tensor) and isinstance(buffer[k], torch.Tensor) \
                    and value.shape == buffer[k].shape and value.dtype == buffer[k].dtype:
                # asynchronous from page-locked memory: the timing's synchronize before the call waits for it
                buffer[k].copy_(value, non_blocking=registered[0])
            elif isinstance(value, torch.Tensor):  # inputs that change shape from call to call: new memory
                # (empty + copy_, not .to(): aten::_to_copy is no glue, and the watch sees the harness's ops too)
                buffer[k] = torch.empty_like(value, device=device).copy_(value) if device != "cpu" else value.clone()
            else:
                buffer[k] = value
        del values
        around["prepared"] += _perf_counter() - handed

    def keep(i, out):
        start = _perf_counter()
        fresh = read(out)  # a candidate's as strictly as its trials': no code of its runs
        with _torch_function_off():
            outputs[i] = [_clone(t) for t in fresh]
        around["kept"] += _perf_counter() - start

    def handshake():
        send(("warm",))
        go = conn.recv()
        if not (isinstance(go, tuple) and len(go) == 2 and go[0] == "go" and type(go[1]) is int and go[1] > 0):
            raise RuntimeError("timing: the judge did not say go")
        fd = recv_handle(conn)
        try:
            staging[0], staging[1] = map_shared_staging(fd, go[1])
        finally:
            os.close(fd)
        if device != "cpu" and pin:  # page-locked in place: each refill is one DMA (unpinned: a staged copy)
            try:
                registered[0] = int(torch.cuda.cudart().cudaHostRegister(staging[1].data_ptr(), go[1], 0)) == 0
            except (AttributeError, RuntimeError):
                registered[0] = False

    no_dispatch_modes_left("before the timed calls")
    if watch is not None:
        watch.take()  # what ran before the warm-up is not the timing's
    with torch.no_grad():
        timing = _time_calls(lambda i: model_fn(*buffers[i % ROTATING_BUFFERS]), device, warmup, runs,
                             before_timed=handshake, warm=lambda: model_fn(*buffers[0]), prepare=prepare, keep=keep,
                             after_timed=lambda: conn.send_bytes(_DONE))
    # the watch takes what the calls ran: from here until the outputs the judge checks are written, out of its sight
    # and off the clocks, no collection runs a finalizer of the candidate's (its code), nor a torch function mode
    gc.disable()
    try:
        if registered[0]:
            torch.cuda.cudart().cudaHostUnregister(staging[1].data_ptr())
        ops = dict(watch.take()) if watch is not None else {}
        send(("timed", {"seconds": timing.seconds, "escaped": timing.escaped, "total": timing.total, "ops": ops,
                        **around}))
        msg = conn.recv()
        if msg[0] == "outputs":
            chosen = [outputs[i] for i in msg[1]]
            with _torch_function_off():
                metas = write_tensors(outputs_path, [t for outs in chosen for t in outs])
            send(("timed_outputs", metas, [len(outs) for outs in chosen]))
    finally:
        gc.enable()


def _load_inputs(fd: int, metas: list[Any], device: str) -> list[Any]:
    """The trial inputs the judge handed over as a sealed memory file (`fd`, closed here), on this sandbox's
    device: on the cpu, views of a private mapping of it (no copy; a forward that writes its input writes its
    own copy of those pages), on a GPU copied there from the mapping."""
    try:
        mapped = map_copy_on_write(fd, metas)
    finally:
        os.close(fd)
    return mapped if device == "cpu" else [v.to(device) if isinstance(v, torch.Tensor) else v for v in mapped]


# -- builds ---------------------------------------------------------------------------------------
def serve_builds(conn, job: dict[str, Any]) -> None:
    """Run the judge's compiler commands (it chose them; the sources are the candidate's)."""
    from verifier.fastbuild import BuildError, run_commands, torch_build

    send = _sender(conn)
    os.chdir(job["work_dir"])
    _redirect_output(os.path.join(job["io_out"], "candidate.log"))
    os.environ.update(job.get("env", {}))
    os.environ["CUDA_VISIBLE_DEVICES"] = ""  # compilers need no GPU, and torch's build helpers must not probe one
    # torch's load_inline finds ninja on PATH; the venv's bin is not always there
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    send(("hello", os.getpid()))
    while True:
        msg = conn.recv()
        if msg[0] == "stop":
            return
        try:
            if msg[0] == "run":
                _, commands, timeout_s = msg
                results = run_commands(commands, timeout_s)
                send(("ran", [(r.returncode, r.stdout, r.stderr) for r in results]))
            elif msg[0] == "torch_build":
                _, kwargs, directory, timeout_s = msg
                send(("torch_built", str(torch_build(kwargs, __import__("pathlib").Path(directory)))))
        except BuildError as exc:
            send(("build_error", str(exc), exc.log[-200_000:]))
        except Exception as exc:
            send(("build_error", f"build harness failed: {exc!r}"[:500], ""))


# -- references -----------------------------------------------------------------------------------
def serve_reference(conn, job: dict[str, Any]) -> None:
    """An untrusted reference program: its init inputs, trials (inputs and outputs) and timing."""
    send = _sender(conn)
    send(("hello", os.getpid()))
    try:
        _prepare(job)
        module = load_reference_module(job["source"], "reference")
        init_inputs = list(module.get_init_inputs())
    except BaseException as exc:
        send(("reference_error", _short_trace(exc)))
        return
    device = job["device"]
    kept_inputs: dict[int, list[Any]] = {}  # the latest trial's only (timing warms up on it): one trial's memory
    compiled_model: list[Any] = []  # the reference under torch.compile, compiled by "compile" before "time"

    def model():
        torch.manual_seed(job["init_seed"])
        return module.Model(*module.get_init_inputs()).to(device).eval()

    send(("init_inputs", init_inputs))
    handed = None  # a trial's memory file, until it is handed over
    while True:
        msg = conn.recv()
        kind = msg[0]
        if kind == "stop":
            return
        try:
            if kind == "trial":
                # ("trial", index, seed[, "layout"]): with "layout" (a check's trial, kept nowhere) the judge
                # wants the trial's layout, not its bytes: nothing is written, no scales are measured
                _, index, seed, *layout_only = msg
                bytes_wanted = not layout_only
                # the previous trial's inputs go before this trial's are drawn: one trial's inputs at a time
                kept_inputs.clear()
                inputs = None
                clock = [_perf_counter()]

                def lap() -> float:
                    clock.append(_perf_counter())
                    return clock[-1] - clock[-2]

                with torch.no_grad():
                    reference = model()
                    if device != "cpu":
                        torch.cuda.synchronize()
                    model_seconds = lap()
                    made = draw_inputs(module, device, seed)
                    if device != "cpu":
                        made = [x.to(device) if isinstance(x, torch.Tensor) else x for x in made]
                        torch.cuda.synchronize()
                    inputs_seconds = lap()
                    # the inputs as drawn, for the judge, before a forward can change them in place; written
                    # from where they were drawn (a device tensor streams through one small host buffer: no
                    # whole host copy of GBs at full size) into a new memory file, which the judge maps once
                    # it is sealed (after the expected outputs) and handed over
                    handed = new_memory_file() if bytes_wanted else None
                    written = append_tensors(handed, made) if bytes_wanted else describe_tensors(made)
                    # on the host, the forward runs on a copy-on-write mapping of that file, not on the drawn
                    # tensors: one copy of a trial's inputs in the sandbox (its memory file's pages count against
                    # its memory limit too), and a forward that changes them in place changes its own copy only
                    inputs = map_copy_on_write(handed, written) if device == "cpu" and bytes_wanted else made
                    del made
                    write_seconds = lap()
                    expected = to_list(reference(*inputs))
                    if device != "cpu":
                        torch.cuda.synchronize()
                    forward_seconds = lap()
                # this trial's model is not run again: its parameters may become their magnitudes
                scales = reassociation_scales(reference, inputs, expected) if bytes_wanted else [None] * len(expected)
                del reference
                scales_seconds = lap()
                if bytes_wanted:
                    kept_inputs[index] = inputs
                    written_expected = append_tensors(handed, expected)
                    seal(handed)
                else:
                    del inputs
                    written_expected = describe_tensors(expected, bytes_spanned(written))
                del expected
                # where a full-size trial's time goes (a diagnosis the judge logs, never believed for limits)
                phases = {"model": model_seconds, "inputs": inputs_seconds, "scales": scales_seconds,
                          "write": write_seconds + lap()}
                send(("trial_out", index, {"inputs": written, "expected": written_expected,
                                           "forward_seconds": forward_seconds, "scales": scales,
                                           "phases": phases}))
                if handed is not None:
                    hand_over(conn, handed)
                    os.close(handed)  # the judge's copy of the descriptor keeps the file
                    handed = None
            elif kind == "timing_set":  # the inputs of one timed call, from the judge's seed
                _, seed = msg
                set_file, written = write_sealed(draw_inputs(module, device, seed))
                try:
                    send(("set", written))
                    hand_over(conn, set_file)
                finally:
                    os.close(set_file)
            elif kind == "compile":  # inductor's compile (seconds to minutes) before the device is taken alone
                _, index = msg
                if index not in kept_inputs:
                    raise RuntimeError(f"compile: trial {index} is not the latest trial run")
                start = _perf_counter()
                with torch.no_grad():
                    compiled_model[:] = [torch.compile(model())]
                    compiled_model[0](*kept_inputs[index])
                    if device != "cpu":
                        torch.cuda.synchronize()
                send(("compiled", _perf_counter() - start))
            elif kind == "time":
                _, index, warmup, runs, compiled = msg
                with torch.no_grad():
                    if index not in kept_inputs:
                        raise RuntimeError(f"timing: trial {index} is not the latest trial run")
                    if compiled and not compiled_model:
                        raise RuntimeError("timing: the reference under torch.compile was not compiled first")
                    fn = compiled_model[0] if compiled else model()
                    # under torch.compile the process has compile workers forked beside it: page-locking the
                    # staging there failed the first copy from it in about half the H200's compiled baselines
                    # (cudaErrorOperatingSystem, 2026-12-03); a call's own time leaves the copy out, so unpinned
                    _serve_timing(conn, send, fn, kept_inputs[index], device, warmup, runs,
                                  os.path.join(job["io_out"], "timed.bin"), pin=not compiled, read=to_list)
            else:
                send(("protocol_error", f"unknown message {kind!r}"))
        except BaseException as exc:
            if handed is not None:  # a trial that failed hands nothing over
                os.close(handed)
                handed = None
            send(("reference_error", _short_trace(exc)))


def draw_inputs(module: types.ModuleType, device: str, seed: int) -> list[Any]:
    """The reference's get_inputs under `seed`, its tensors made on `device`: KernelBench's `torch.rand(...)` on
    the host draws one number at a time (torch's CPU generators are serial), 11-18 s for a full-size level-1
    input of 6-8 GB on the H200's host (2026-12-03), where the device draws it in milliseconds. The same
    distributions as KernelBench's harness (which draws on the host, then copies), other draws; the judge's seeds
    make them the same in every sandbox of the machine. A get_inputs that cannot draw on the device (its own CPU
    generator) draws on the host, as it always does: the same choice in every sandbox."""
    torch.manual_seed(seed)
    if device != "cpu":
        try:
            with torch.device(device):
                return list(module.get_inputs())
        except Exception:  # noqa: BLE001 - the host's draw says what is wrong, if anything is
            torch.manual_seed(seed)
    return list(module.get_inputs())


# -- analyses of untrusted references (verifier/analysis.py) -------------------------------------------
def serve_analysis(conn, job: dict[str, Any]) -> None:
    """One analysis of an untrusted reference: its torch.export summary, or the template teacher's answer."""
    send = _sender(conn)
    send(("hello", os.getpid()))
    try:
        _prepare(job)
        msg = conn.recv()
        if msg[0] == "export":
            from operators.graph import analyse_source

            send(("analysed", analyse_source(msg[1])))
        elif msg[0] == "scale":
            from operators.graph import analyse_source
            from operators.imports import scale_sizes_down

            def measure(source: str) -> int:
                analysis = analyse_source(source)
                return analysis["input_bytes"] + analysis["output_bytes"] + analysis["weight_bytes"]

            send(("analysed", scale_sizes_down(msg[1], int(msg[2]), measure)))
        elif msg[0] == "teacher":
            from schemas.records import Problem
            from training.teacher import TemplateTeacher

            out = TemplateTeacher(sandboxed=True).solve(Problem.model_validate_json(msg[1]), msg[2])
            send(("analysed", {"completion": out.completion, "refusal": out.refusal}))
    except BaseException as exc:
        send(("analysis_error", _short_trace(exc)))
