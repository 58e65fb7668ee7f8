"""The deployments' pull step: on a worker it enters the kerneldojo checkout, whatever directory the worker
(or the deploying machine) was in."""

import os
from pathlib import Path

import pytest

from flows.worker_steps import CodeDirError, enter_code_dir

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def restore_cwd():
    before = os.getcwd()
    yield
    os.chdir(before)


def test_the_pull_step_enters_the_installed_checkout(tmp_path, monkeypatch, restore_cwd):
    monkeypatch.delenv("KERNELDOJO_CODE_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    assert enter_code_dir() == {"directory": str(REPO)}
    assert Path.cwd() == REPO and Path("flows/stages.py").is_file()


def test_kerneldojo_code_dir_names_another_checkout(tmp_path, monkeypatch, restore_cwd):
    for entrypoint in ("flows/stages.py", "flows/pipeline.py", "flows/evaluation.py"):
        (tmp_path / entrypoint).parent.mkdir(exist_ok=True)
        (tmp_path / entrypoint).write_text("")
    monkeypatch.setenv("KERNELDOJO_CODE_DIR", str(tmp_path))
    assert enter_code_dir() == {"directory": str(tmp_path)}
    assert Path.cwd() == tmp_path


def test_a_code_dir_that_is_not_a_checkout_is_one_clear_error(tmp_path, monkeypatch, restore_cwd):
    monkeypatch.setenv("KERNELDOJO_CODE_DIR", str(tmp_path))
    monkeypatch.chdir(REPO)
    with pytest.raises(CodeDirError, match=r"from KERNELDOJO_CODE_DIR\) is not a kerneldojo checkout: no flows/stages"):
        enter_code_dir()
    assert Path.cwd() == REPO  # left where it was
