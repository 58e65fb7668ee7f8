"""The RL stages in data-parallel ranks (`distributed.processes` > 1), started by the stage (training/distributed.py).

Each rank holds the policy on its device, samples whole groups of the step's tasks (so the tournament reward and
the DCP gate see complete groups), and trains on them; DDP (or DeepSpeed's engine) averages the gradients, so the
update is one process's on the whole batch. What is single stays in the stage's process and is reached by request:
the step's plan (problems and BDR repair tasks, split into equal shares of whole groups), the verifier (one pool
for every rank, with its cache and records), and the record of each step (rank 0 gathers the ranks' samples and
statistics; the stage merges them, writes trajectories and metrics, and says whether to checkpoint or stop).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from schemas.config import LeapRLConfig, RewardConfig, WarmupRLConfig
from training.distributed import RankEvents, collective_backend, rank_info
from training.model import load_policy, save_policy
from training.rl import PolicyTrainer, leap_sample, train_on, warmup_sample
from training.rollout import HFRolloutEngine

RANK_SEED_STRIDE = 104_729  # ranks sample with different seeds: equal seeds would correlate their groups


@dataclass
class RLRankJob:
    stage: str  # warmup_rl | leap_rl
    config: WarmupRLConfig | LeapRLConfig
    reward: RewardConfig
    backend: str  # the verifier's backend (what the candidates are written for)
    device: str  # cpu | cuda
    seed: int
    first_step: int
    policy: str  # the weights to start from
    trainer_state: str | None  # a checkpoint's trainer folder to resume from
    final: str  # where rank 0 writes the trained policy


def rl_rank(job: RLRankJob, events: RankEvents) -> int:
    """One rank's RL loop; returns the number of steps done. Requests: ("plan", step) -> this rank's tasks or None
    (stop); ("verify", pairs) -> verdicts; rank 0: ("record", step, parts) -> {"checkpoint": folder or None,
    "stop": bool}, ("saved", step) after a checkpoint's policy and trainer are written."""
    me = rank_info()
    dist = torch.distributed
    if not dist.is_initialized():
        dist.init_process_group(collective_backend(job.device))
    device = job.device
    if job.device == "cuda":
        torch.cuda.set_device(me.local_rank)
        device = f"cuda:{me.local_rank}"
    model, tokenizer = load_policy(job.policy, device)
    trainer = PolicyTrainer(model, job.config, tokenizer.pad_token_id, device)
    if job.trainer_state:
        trainer.load(Path(job.trainer_state))
    engine = HFRolloutEngine(trainer.model, tokenizer, device)
    sample = warmup_sample if job.stage == "warmup_rl" else leap_sample
    verify = lambda pairs: events.request("verify", pairs)  # noqa: E731
    steps_done = job.first_step
    for step in range(job.first_step, job.config.steps):
        tasks = events.request("plan", step)
        if tasks is None:
            break
        seed = job.seed * 7919 + step + RANK_SEED_STRIDE * me.rank
        sampled = sample(engine, verify, tasks, job.config, job.reward, job.backend, seed)
        # every rank's verification over before any rank updates: an update holds its GPU against timings
        # (verifier.device_lock) and waits in its collectives for the other ranks, so a timing of a rank still
        # verifying, waiting on that GPU, would never end
        dist.barrier()
        stats, seconds = train_on(trainer, sampled, job.config)
        engine.sync_weights(trainer.model)
        parts = [None] * me.world_size if me.is_main else None
        dist.gather_object((sampled, stats, seconds), parts, dst=0)
        decision = [events.request("record", step, parts) if me.is_main else None]
        dist.broadcast_object_list(decision, src=0)
        steps_done = step + 1
        if decision[0]["checkpoint"]:
            staged = Path(decision[0]["checkpoint"])
            if me.is_main:
                save_policy(trainer.model, tokenizer, staged / "policy")
            trainer.save(staged / "trainer")
            dist.barrier()  # every part written
            if me.is_main:
                events.request("saved", step)
            dist.barrier()  # the checkpoint holds the RNG as it was at this step: no rank plans the next one before
        if decision[0]["stop"]:
            break
    if me.is_main:
        save_policy(trainer.model, tokenizer, job.final)
    dist.barrier()
    return steps_done
