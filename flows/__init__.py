"""Prefect flows and the CLI: thin layers over tasks/.

Quiet, offline-friendly Prefect defaults for every entry point (the CLI, the benchmark scripts, a worker), set
before any of them imports Prefect; a user's own settings win. Without them, Prefect's temporary server sends a
telemetry heartbeat that fails noisily offline ("database is locked" under a busy pipeline).
"""

import logging
import os

os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
# Prefect's console shows warnings and errors only; the API (the flow run's logs in the UI) gets INFO too
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "INFO")
os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# the project's own INFO lines (a slow reference's phases, a problem scaled down) reach a console set to show INFO
# (PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL=INFO); by default the console shows warnings, as above
logging.getLogger("kerneldojo").setLevel(logging.INFO)
