"""Data-parallel training in several processes, started from inside a stage by torch's elastic launcher.

Why torch's elastic launcher (`torch.distributed.launcher.api.elastic_launch`), not the `torchrun`/`deepspeed`
command lines or Ray Train: a stage is one Prefect task, one Python call that returns a run id or raises. The
elastic launcher is such a call: it starts the ranks as children of the stage's process with the environment
every distributed library reads (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT: HF Trainer, DDP and
DeepSpeed's engine work in them as under their own launchers), watches them, stops them all when one dies and
raises with that rank's traceback, so Prefect's retries, timeouts and states apply to the whole world. The stage's
process keeps what is single by nature (the warehouse, MLflow, the verification pool, the progress bar); ranks
report to it through a queue (`RankEvents`). Ray Train would add a cluster to start and a second scheduler under
Prefect's; the CLI launchers would need a shell between the task and its ranks and lose the return value.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from schemas.config import ConfigError

EventHandler = Callable[[tuple], None]
RequestHandler = Callable[[str, tuple, int], Any]


class DistributedError(RuntimeError):
    pass


@dataclass(frozen=True)
class RankInfo:
    rank: int
    local_rank: int
    world_size: int

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def rank_info() -> RankInfo:
    """This process's place in the world (a world of one outside a launch)."""
    return RankInfo(int(os.environ.get("RANK", 0)), int(os.environ.get("LOCAL_RANK", 0)),
                    int(os.environ.get("WORLD_SIZE", 1)))


def collective_backend(device: str) -> str:
    return "nccl" if device.startswith("cuda") else "gloo"


def check_world(processes: int, device: str) -> int:
    """The number of ranks to start: `processes`, or one per visible GPU when 0; one clear error when it cannot be."""
    if processes < 0:
        raise ConfigError(f"distributed.processes={processes}: give a number of ranks, or 0 for one per GPU")
    gpus = torch.cuda.device_count() if device.startswith("cuda") else 0
    if processes == 0:
        if not gpus:
            raise ConfigError("distributed.processes=0 means one rank per GPU, and no GPU is visible here")
        return gpus
    if device.startswith("cuda") and processes > gpus:
        raise ConfigError(f"distributed.processes={processes} ranks on {gpus} visible GPU(s): one rank per GPU")
    return processes


def check_split(config, stage: str, processes: int) -> None:
    """One clear error (naming the key) for a stage whose batches cannot be split over `processes` ranks: SFT and RFT
    split each batch, the RL stages each step's groups and mini-batches; vLLM rollouts stay in one process."""
    if processes <= 1 or stage not in ("sft", "rft", "warmup_rl", "leap_rl"):
        return
    section = getattr(config, stage)
    if stage in ("sft", "rft"):
        sizes = {"batch_size": section.batch_size}
    else:
        if section.rollout_engine != "hf":
            raise ConfigError(f"{stage}.rollout_engine=vllm samples in one process: set distributed.processes=1, or "
                              "rollout_engine=hf (each rank samples with its own policy)")
        sizes = {"prompts_per_step": section.prompts_per_step, "mini_batch_size": section.mini_batch_size}
    for key, value in sizes.items():
        if value % processes:
            raise ConfigError(f"{stage}.{key}={value} does not split over distributed.processes={processes} ranks: "
                              "make it a multiple of the number of ranks")


class RankEvents:
    """Ranks <-> the stage's process, through manager queues: `send` a small event (metrics, progress), or make a
    `request` (verify these candidates, plan this step, record this result) and wait for the stage's answer.
    The stage handles events on a thread of its own and requests on a pool of threads, one request per rank at
    a time."""

    def __init__(self, channel, replies: list):
        self._channel = channel
        self._replies = replies

    def send(self, *event: Any) -> None:
        self._channel.put(("event", event))

    def request(self, kind: str, *payload: Any) -> Any:
        rank = rank_info().rank
        self._channel.put(("request", rank, kind, payload))
        ok, value = self._replies[rank].get()
        if not ok:
            raise DistributedError(f"the stage could not serve {kind!r}: {value}")
        return value


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def launch(entry: Callable[..., Any], args: tuple, processes: int, on_event: EventHandler | None = None,
           on_request: RequestHandler | None = None) -> list[Any]:
    """Run `entry(*args, events)` in `processes` ranks on this machine; returns each rank's return value, by rank.
    `on_event(event)` takes the ranks' events, `on_request(kind, payload, rank)` answers their requests. A failing
    rank stops the others and raises `DistributedError` with its error and traceback; a failing request handler
    fails its rank and is raised here as itself."""
    from concurrent.futures import ThreadPoolExecutor

    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    config = LaunchConfig(min_nodes=1, max_nodes=1, nproc_per_node=processes, run_id=uuid.uuid4().hex[:12],
                          rdzv_backend="c10d", rdzv_endpoint=f"127.0.0.1:{_free_port()}", max_restarts=0,
                          monitor_interval=0.5, start_method="spawn")
    handler_errors: list[BaseException] = []
    with multiprocessing.get_context("spawn").Manager() as manager, \
            ThreadPoolExecutor(max_workers=processes, thread_name_prefix="rank-requests") as serving:
        channel = manager.Queue()
        replies = [manager.Queue() for _ in range(processes)]
        stop = threading.Event()

        def serve(rank: int, kind: str, payload: tuple) -> None:
            try:
                answer = (True, on_request(kind, payload, rank))
            except BaseException as exc:  # the rank fails with it; the stage raises it as itself
                handler_errors.append(exc)
                answer = (False, f"{type(exc).__name__}: {exc}")
            replies[rank].put(answer)

        def pump() -> None:
            while True:
                try:
                    message = channel.get(timeout=0.2)
                except queue.Empty:
                    if stop.is_set():
                        return
                    continue
                except (EOFError, OSError):
                    return
                if message[0] == "request":
                    if on_request is None:
                        replies[message[1]].put((False, "this stage answers no requests"))
                    else:
                        serving.submit(serve, *message[1:])
                elif on_event is not None:
                    on_event(message[1])

        reader = threading.Thread(target=pump, name="rank-events", daemon=True)
        reader.start()
        owners = _signal_handlers()
        signalled = None
        try:
            results = elastic_launch(config, entry)(*args, RankEvents(channel, replies))
        except ChildFailedError as exc:
            if handler_errors:
                raise handler_errors[0]
            raise DistributedError(_first_failure(exc)) from None
        except SignalException as exc:  # the launcher stopped the ranks on it
            signalled = exc.sigval
        finally:
            stop.set()
            reader.join()
            _restore(owners)
    if signalled is not None:
        # the launcher put its own handlers in place of the process's (the CLI's turn signals into an orderly stop):
        # with those back, the signal goes to them as if the launcher had never caught it
        os.kill(os.getpid(), signalled)
        time.sleep(0.1)  # Python runs the handler at its next instruction in this (the main) thread
        raise DistributedError(f"training stopped by signal {signalled.name}")
    return [results[rank] for rank in sorted(results)]


_LAUNCHER_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT")


def _signal_handlers() -> dict:
    """The handlers torch's launcher replaces (main thread only: elsewhere it leaves them alone)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.getsignal(sig) for sig in (getattr(signal, name) for name in _LAUNCHER_SIGNALS)}


def _restore(handlers: dict) -> None:
    for sig, handler in handlers.items():
        if handler is not None:  # None: installed outside Python, cannot be put back from here
            signal.signal(sig, handler)


def _first_failure(exc) -> str:
    rank, failure = min(exc.failures.items())
    message = failure.message
    if isinstance(message, dict):
        trace = message.get("extraInfo", {}).get("py_callstack", "")
        message = message.get("message", "") + (f"\n{trace}" if trace else "")
    return f"training rank {rank} failed (exit code {failure.exitcode}): {message}"
