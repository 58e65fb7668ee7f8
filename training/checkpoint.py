"""Resumable RL checkpoints: the policy, the optimiser (the train engine's own format), RNG states, the BDR buffer, the step counter
and the run's metric history, written atomically so a kill mid-save leaves the previous one intact."""

from __future__ import annotations

import json
import os
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from training.model import save_policy


@dataclass
class RLState:
    step: int  # the last completed step
    buffer: list[dict[str, str]] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    composition: dict[str, int] = field(default_factory=dict)


def staging_dir(path: Path) -> Path:
    """The folder a checkpoint is written into before `finish_rl_checkpoint` renames it to `path`."""
    tmp = path.with_name(path.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    return tmp


def finish_rl_checkpoint(path: Path, rng: random.Random, state: RLState) -> Path:
    """Add the RNG states and the run state to the staged policy and trainer, then put it at `path` in one rename."""
    tmp = path.with_name(path.name + ".partial")
    torch.save({"torch_rng": torch.get_rng_state(),
                "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
                "python_rng": rng.getstate()}, tmp / "trainer.pt")
    (tmp / "state.json").write_text(json.dumps({"step": state.step, "buffer": state.buffer,
                                                "history": state.history, "composition": state.composition}))
    if path.exists():
        shutil.rmtree(path)
    os.replace(tmp, path)
    return path


def save_rl_checkpoint(path: Path, model, tokenizer, trainer, rng: random.Random, state: RLState) -> Path:
    tmp = staging_dir(path)
    save_policy(model, tokenizer, tmp / "policy")
    trainer.save(tmp / "trainer")
    return finish_rl_checkpoint(path, rng, state)


def load_rl_state(path: Path) -> tuple[Any, RLState]:
    """(python RNG state, RLState) of a checkpoint; restores torch RNG as a side effect."""
    blob = torch.load(path / "trainer.pt", weights_only=False)  # our own file: RNG states are tuples
    torch.set_rng_state(blob["torch_rng"])
    if blob["cuda_rng"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(blob["cuda_rng"])
    raw = json.loads((path / "state.json").read_text())
    return blob["python_rng"], RLState(step=raw["step"], buffer=raw["buffer"], history=raw["history"],
                                       composition=raw["composition"])
