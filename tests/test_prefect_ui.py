"""Operating kerneldojo from the Prefect UI, checked in the UI itself: a real `prefect server`, the repository's
`prefect.yaml` deployed to it, a process worker started outside the checkout (the pull step finds the code), and
headless Chromium reading the pages a user would open. Screenshots are kept under `.test-artifacts/prefect-ui/`."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCREENSHOTS = REPO / ".test-artifacts" / "prefect-ui"
CHROMIUM = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(name)), None)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="needs headless Chromium (`apt-get install chromium`; "
                                                "`make test` installs it where it may)"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    """Headless Chromium, one process per page: the page's text once the single-page app has rendered it."""

    def __init__(self, base_url: str, profile: Path):
        self.base_url, self.profile = base_url, profile

    def _chromium(self, path: str, *what: str) -> subprocess.CompletedProcess:
        return subprocess.run([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                               f"--user-data-dir={self.profile}", "--window-size=1400,1200",
                               "--virtual-time-budget=20000", *what, self.base_url + path],
                              capture_output=True, text=True, timeout=120)

    def text(self, path: str, expected: str, attempts: int = 4) -> str:
        """The visible text of `path`, read again (the app fetches from the API after loading) until it holds
        `expected` or the attempts run out."""
        for _ in range(attempts):
            dom = self._chromium(path, "--dump-dom").stdout
            dom = re.sub(r"<(script|style)\b.*?</\1>", " ", dom, flags=re.S)
            text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", dom)).split())
            if expected in text:
                return text
            time.sleep(1)
        return text

    def screenshot(self, path: str, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        out = SCREENSHOTS / f"{name}.png"
        self._chromium(path, f"--screenshot={out}")
        return out


@pytest.fixture(scope="module")
def prefect_server(tmp_path_factory):
    """`prefect server start` (the UI included) in a home of its own; yields the environment that points at it."""
    root = tmp_path_factory.mktemp("prefect-ui")
    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {**os.environ, "PREFECT_HOME": str(root / "prefect"), "PREFECT_API_URL": api,
           "PREFECT_UI_API_URL": api, "KERNELDOJO_HOME": str(root / "home"), "KERNELDOJO_PROGRESS": "0"}
    log = open(root / "server.log", "wb")
    server = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
                               "--port", str(port)], env={k: v for k, v in env.items() if k != "PREFECT_API_URL"},
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{api}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"prefect server did not start: {(root / 'server.log').read_text()[-2000:]}")
            time.sleep(0.5)
        yield env, root, f"http://127.0.0.1:{port}"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        log.close()


def _run(command: list[str], env: dict, cwd: Path = REPO, timeout: float = 600) -> str:
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(command)} -> {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _api(env: dict, path: str, body: dict) -> list[dict]:
    request = urllib.request.Request(f"{env['PREFECT_API_URL']}/{path}", data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def test_a_ui_user_finds_each_stage_run_reruns_a_stage_from_its_id_and_sees_the_lineage(prefect_server, tmp_path):
    from warehouse.store import Warehouse

    env, root, ui = prefect_server
    prefect = [sys.executable, "-m", "prefect"]
    cli = [sys.executable, "-c", "from flows.cli import main; main()"]
    # a first stage run, from the CLI, against the server
    _run([*cli, "stage", "synthesize", "--set", "synthesize.num_problems=6"], env)
    warehouse = Warehouse(root / "home" / "warehouse.duckdb")
    synthesized = warehouse.latest_run("synthesize").id

    # the repository's deployments, as a user registers them
    for pool in ("kerneldojo", "gpu-h200"):
        _run([*prefect, "work-pool", "create", pool, "--type", "process"], env)
    _run([*prefect, "work-pool", "set-concurrency-limit", "gpu-h200", "1"], env)
    _run([*prefect, "--no-prompt", "deploy", "--all"], env)
    deployments = {d["name"]: d for d in _api(env, "deployments/filter", {})}
    assert {"pipeline-nightly", "stage-hints", "gpu-stage", "kernelbench-eval"} <= set(deployments)
    assert deployments["stage-hints"]["pull_steps"] == [{"flows.worker_steps.enter_code_dir": {}}]
    assert deployments["gpu-stage"]["work_pool_name"] == "gpu-h200"

    browser = Browser(ui, tmp_path / "chromium")
    hints_deployment = deployments["stage-hints"]["id"]
    form = browser.text(f"/deployments/deployment/{hints_deployment}/run", "A succeeded run of the upstream stage")
    browser.screenshot(f"/deployments/deployment/{hints_deployment}/run", "1-run-form")
    assert "A succeeded run of the upstream stage" in form, form[:2000]
    assert "synthesize hints distill sft rft warmup_rl leap_rl evaluate" in form  # the stage is a choice

    # the user copies the synthesize run's id into `from_run` and submits: a worker started elsewhere runs it
    _run([*prefect, "deployment", "run", "kerneldojo-stage/stage-hints", "--param", f"from_run={synthesized}"], env)
    worker_dir = tmp_path / "elsewhere"
    worker_dir.mkdir()
    _run([*prefect, "worker", "start", "--pool", "kerneldojo", "--run-once"], env, cwd=worker_dir, timeout=600)
    hints = warehouse.latest_run("hints")
    assert hints is not None and hints.parent_ids == [synthesized]  # lineage from the id the user gave

    runs = browser.text("/runs", f"hints · {hints.id}")
    browser.screenshot("/runs", "2-runs")
    assert f"synthesize · {synthesized}" in runs and f"hints · {hints.id}" in runs, runs[:2000]

    flow_run = next(r for r in _api(env, "flow_runs/filter", {}) if r["name"] == f"hints · {hints.id}")
    logs = browser.text(f"/runs/flow-run/{flow_run['id']}", f"stage run {hints.id}, from {synthesized}")
    browser.screenshot(f"/runs/flow-run/{flow_run['id']}", "3-flow-run-logs")
    assert f"stage run {hints.id}, from {synthesized}; MLflow run {hints.mlflow_run_id}" in logs, logs[:3000]
    assert "All deployment steps completed successfully" in logs  # the pull step found the checkout

    artifact = next(a for a in _api(env, "artifacts/filter", {}) if a["key"] == hints.id)
    summary = browser.text(f"/artifacts/artifact/{artifact['id']}", "succeeded")
    browser.screenshot(f"/artifacts/artifact/{artifact['id']}", "4-summary-artifact")
    assert f"hints · {hints.id} — succeeded" in summary, summary[:2000]
    assert f"builds on: {synthesized}" in summary and f"--from-run {hints.id}" in summary
    assert "MLflow:" in summary and "problems 6" in summary
    assert all(shot.stat().st_size > 10_000 for shot in SCREENSHOTS.glob("*.png"))
