"""Shared fixtures. Environment is set before Prefect, MLflow or torch are imported anywhere."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

_SESSION_DIR = Path(tempfile.mkdtemp(prefix="kerneldojo-tests-"))
os.environ.setdefault("PREFECT_HOME", str(_SESSION_DIR / "prefect"))
os.environ["KERNELDOJO_PROGRESS"] = "0"
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
# a fresh PREFECT_HOME migrates its database on the first start: past Prefect's 20 s on 2 busy cores (seen twice)
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
# Prefect's console shows warnings and errors only; the API (the flow run's logs in the UI) gets INFO too
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "INFO")
os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.pop("MLFLOW_TRACKING_URI", None)
# Ray reads its authentication mode once per process; its local clusters use tokens (and so does the cluster test)
os.environ.setdefault("RAY_AUTH_MODE", "token")
os.environ.pop("KERNELDOJO_HOME", None)

import pytest  # noqa: E402
import torch  # noqa: E402


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def pytest_sessionfinish(session, exitstatus):
    """The session's folder (Prefect's home, the verifier's caches: ~0.4 GB a run) goes with it, unless
    KERNELDOJO_KEEP_TEST_DIRS=1 keeps it to look into."""
    import shutil

    if os.environ.get("KERNELDOJO_KEEP_TEST_DIRS") != "1":
        shutil.rmtree(_SESSION_DIR, ignore_errors=True)


@pytest.fixture(scope="session")
def session_dir() -> Path:
    return _SESSION_DIR


@pytest.fixture(scope="session")
def verifier_cache(session_dir) -> Path:
    """Shared across tests so the precompiled prelude is built once per session."""
    path = session_dir / "verifier-cache"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture(scope="session")
def analyser(verifier_cache):
    """Sandboxes for analysing untrusted (imported) references."""
    from schemas.config import VerifierConfig
    from verifier.analysis import ReferenceAnalyser

    analyser = ReferenceAnalyser(VerifierConfig(), verifier_cache)
    yield analyser
    analyser.close()
