"""Prefect deployment steps that run on the worker, in the flow run's process, before the flow is loaded.

A worker machine has kerneldojo installed (`pip install -e .` of a checkout, or the worker image): the pull
step enters that checkout, so the deployment's entrypoint (`flows/stages.py:stage`) and the relative config
paths (`configs/tiny.yaml`) resolve there, wherever the deployment was made from. `KERNELDOJO_CODE_DIR`
(the worker's environment or the deployment's `job_variables.env`) points at another checkout instead.
"""

from __future__ import annotations

import os
from pathlib import Path

ENTRYPOINTS = ("flows/stages.py", "flows/pipeline.py", "flows/evaluation.py")


class CodeDirError(RuntimeError):
    pass


def installed_code_dir() -> Path:
    """The checkout this kerneldojo is installed from (an editable install imports it in place)."""
    return Path(__file__).resolve().parent.parent


def enter_code_dir() -> dict[str, str]:
    """Pull step: chdir into the kerneldojo checkout; returns `{"directory": ...}` for later steps."""
    chosen = os.environ.get("KERNELDOJO_CODE_DIR")
    directory = Path(chosen).expanduser() if chosen else installed_code_dir()
    missing = [e for e in ENTRYPOINTS if not (directory / e).is_file()]
    if missing:
        source = "KERNELDOJO_CODE_DIR" if chosen else "the installed kerneldojo package"
        raise CodeDirError(f"{directory} (from {source}) is not a kerneldojo checkout: no {', '.join(missing)}; "
                           "install it with `pip install -e .` from a checkout on the worker, or set "
                           "KERNELDOJO_CODE_DIR to one")
    os.chdir(directory)
    return {"directory": str(directory)}
