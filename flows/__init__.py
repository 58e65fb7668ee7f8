"""Prefect flows and the CLI: thin layers over tasks/.

Quiet, offline-friendly Prefect defaults for every entry point (the CLI, the benchmark scripts, a worker), set
before any of them imports Prefect; a user's own settings win. Without them, Prefect's temporary server sends a
telemetry heartbeat that fails noisily offline ("database is locked" under a busy pipeline).
"""

import os

os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
# Prefect's console shows warnings and errors only; the API (the flow run's logs in the UI) gets INFO too
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "INFO")
os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
