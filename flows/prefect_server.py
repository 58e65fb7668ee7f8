"""The CLI's ephemeral Prefect API server, which never outlives the CLI.

Prefect 3 runs flows without a configured server by starting one itself (`SubprocessASGIServer`: uvicorn
serving `prefect.server.api.server:create_app` in a child process) and stopping it from an `atexit` hook.
No hook runs when the CLI dies by a signal's default action, so a killed CLI left that server running,
and Prefect gives no way to change how it spawns it. So the CLI starts the same app itself, in the same
ephemeral mode, and points Prefect at it through `PREFECT_API_URL`:

- the CLI ends (normally, or by SIGTERM/SIGINT/SIGHUP, which the CLI turns into an orderly exit): an
  `atexit` hook registered before Prefect's own stops the server after Prefect's log and event workers
  have drained into it;
- the CLI is SIGKILLed: nothing runs in it, so the server watches its parent and exits once the CLI is
  gone. It polls getppid() rather than asking for PR_SET_PDEATHSIG: the death signal follows the
  *thread* that spawned the child, and is Linux-only; a changed parent pid means the process is gone.

Run as a script, this file is the server process.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

ORPHAN_POLL_S = 0.5
STOP_GRACE_S = 5.0
# The switches Prefect sets for its own temporary server: no UI, only the services an ephemeral server needs
EPHEMERAL_ENV = {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}

# A machine's first server makes its database and reads Prefect's modules cold: over Prefect's default 20 s on a
# fresh GPU box (2026-12-04). Unless the start-up timeout is set, the CLI waits this long rather than fail the run.
COLD_START_TIMEOUT_S = 120.0
STARTUP_TIMEOUT_SETTING = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"

_server: "OwnedServer | None" = None


class OwnedServer:
    def __init__(self, process: subprocess.Popen, port: int):
        self.process = process
        self.api_url = f"http://127.0.0.1:{port}/api"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def serve_prefect() -> str | None:
    """Point this process's Prefect at a server it owns; returns its API URL.

    Does nothing (None) where Prefect is configured to use a server (`PREFECT_API_URL`, in the
    environment or the active profile) or forbids an ephemeral one: Prefect's settings decide as before.
    """
    global _server
    import prefect.context
    from prefect.settings import get_current_settings

    settings = get_current_settings()
    if _server is None or _server.process.poll() is not None:
        if settings.api.url or not settings.server.ephemeral.enabled:
            return None
        env = {**os.environ, **settings.to_environment_variables(exclude_unset=True), **EPHEMERAL_ENV}
        _server = _start(env, timeout_s=startup_timeout_s(settings))
        atexit.register(_server.stop)
    # (again when the server was already ours: whatever pointed Prefect elsewhere since, it points at it now)
    os.environ["PREFECT_API_URL"] = _server.api_url
    prefect.context.refresh_global_settings_context()  # Prefect read the environment at import
    return _server.api_url


def startup_timeout_s(settings) -> float:
    """How long to wait for the server to answer: the setting where it is set (environment or profile), else
    Prefect's default raised to COLD_START_TIMEOUT_S."""
    timeout = float(settings.server.ephemeral.startup_timeout_seconds)
    if STARTUP_TIMEOUT_SETTING in settings.to_environment_variables(exclude_unset=True):
        return timeout
    return max(timeout, COLD_START_TIMEOUT_S)


def _start(env: dict[str, str], timeout_s: float, attempts: int = 3) -> OwnedServer:
    for _ in range(attempts):  # a port taken between choosing and binding it: choose another
        port = _free_port()
        # -P: the script's folder (flows/) stays off sys.path, so none of its modules shadows another
        process = subprocess.Popen([sys.executable, "-P", os.path.abspath(__file__), str(port), str(os.getpid())],
                                   env=env, start_new_session=True)  # a terminal's Ctrl-C is the CLI's to handle
        server = OwnedServer(process, port)
        deadline = time.monotonic() + timeout_s
        while process.poll() is None and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{server.api_url}/health", timeout=2) as response:
                    if response.status == 200:
                        return server
            except OSError:
                time.sleep(0.1)
        if process.poll() is None:
            server.stop()
            raise RuntimeError(f"the Prefect server did not answer within {timeout_s:.0f} s (give it longer with "
                               f"{STARTUP_TIMEOUT_SETTING})")
    raise RuntimeError(f"the Prefect server exited at start {attempts} times (last exit code {process.returncode})")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _exit_when_orphaned(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(ORPHAN_POLL_S)
    os.kill(os.getpid(), signal.SIGTERM)  # uvicorn shuts down in order
    time.sleep(STOP_GRACE_S)
    os._exit(1)


def _serve(port: int, parent_pid: int) -> None:
    threading.Thread(target=_exit_when_orphaned, args=(parent_pid,), daemon=True).start()
    import uvicorn

    uvicorn.run("prefect.server.api.server:create_app", factory=True, host="127.0.0.1", port=port,
                log_level="error", lifespan="on")


if __name__ == "__main__":
    _serve(int(sys.argv[1]), int(sys.argv[2]))
