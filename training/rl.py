"""The policy trainer, the BDR repair buffer and the two RL stages' step functions.

`warmup_step`: single-turn GRPO with the correctness-first reward (MusaCoder).
`leap_step`: multi-turn rollouts behind the DCP gate, with the rank-based tournament reward,
scalar (GRPO-MT) or PrimeEcho rewards, and discounted per-turn advantages (LEAP). Both end
in the same PPO-clip update, with MirrorPop masking and gradient accumulation.
"""

from __future__ import annotations

import json
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F

from schemas.config import LeapRLConfig, PolicyOptimConfig, RewardConfig, WarmupRLConfig
from schemas.records import Problem, Trajectory, Turn, content_hash
from training.core_algos import (
    ADV_ESTIMATORS,
    POLICY_LOSSES,
    approx_kl,
    dcp_gate,
    k3_kl,
    mirrorpop_mask,
    per_turn_token_advantage,
    primeecho_reward,
    rollout_rank,
    scalar_tier_reward,
    tournament_reward,
)
from training.prompts import feedback_message
from training.rollout import Rollout, RolloutEngine, Task, VerifyBatch, multi_turn_rollouts
from verifier.device_lock import policy_on_device
from verifier.reward import correctness_first_reward


# -- optimiser backends --------------------------------------------------------------------
def world_size() -> int:
    """Ranks training this policy together (1 outside a launched world)."""
    dist = torch.distributed
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


class _TorchBackend:
    """AdamW on the model; in a world of several ranks the training forwards go through DDP, which averages the
    gradients of every backward (all but the mini-batch's last skip the all-reduce: `no_sync`)."""

    def __init__(self, model, config: PolicyOptimConfig):
        self.model = self.training_forward = model
        if world_size() > 1:
            from torch.nn.parallel import DistributedDataParallel

            on_gpu = next(model.parameters()).device.type == "cuda"
            self.training_forward = DistributedDataParallel(
                model, device_ids=[next(model.parameters()).device] if on_gpu else None)
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=0.0)
        self.grad_clip = config.grad_clip

    def backward(self, loss: torch.Tensor, last: bool) -> None:
        if last or self.training_forward is self.model:
            loss.backward()
        else:
            with self.training_forward.no_sync():
                loss.backward()

    def step(self) -> None:
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.grad_clip)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        torch.save(self.optimizer.state_dict(), directory / "optimizer.pt")

    def load(self, directory: Path) -> None:
        self.optimizer.load_state_dict(torch.load(directory / "optimizer.pt", weights_only=False))  # our own file


def _single_process_rendezvous() -> None:
    """Outside the `deepspeed`/`torchrun` launchers, run as a world of one (a free local port), as HF Trainer does."""
    import os
    import socket

    if "RANK" in os.environ or (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))


class _DeepSpeedBackend:
    """DeepSpeed ZeRO-2/3 (the `gpu` extra). The trainer owns accumulation and loss normalisation: DeepSpeed
    is told which backward closes a mini-batch (its gradient-accumulation boundary) and never rescales."""

    def __init__(self, model, config: PolicyOptimConfig):
        try:
            import deepspeed
        except ImportError as exc:
            raise RuntimeError("train_engine: deepspeed needs the `deepspeed` package: "
                               "pip install 'kerneldojo[gpu]'") from exc
        _single_process_rendezvous()
        ds_config = {
            "train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
            "gradient_clipping": config.grad_clip, "zero_optimization": {"stage": config.zero_stage},
            "bf16": {"enabled": config.bf16 and torch.cuda.is_available()},
            "optimizer": {"type": "AdamW", "params": {"lr": config.learning_rate, "weight_decay": 0.0}},
        }
        self.engine, self.optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                                                 config=ds_config)
        self.model = self.engine.module
        # Training forwards go through the engine: ZeRO-3 counts micro-steps there (accumulate, not overwrite).
        self.training_forward = self.engine

    def backward(self, loss: torch.Tensor, last: bool) -> None:
        self.engine.set_gradient_accumulation_boundary(last)
        self.engine.backward(loss, scale_wrt_gas=False)

    def step(self) -> None:
        self.engine.step()

    def save(self, directory: Path) -> None:
        """DeepSpeed's own checkpoint (one ZeRO partition per rank, master weights, optimizer state)."""
        self.engine.save_checkpoint(str(directory), tag="trainer")

    def load(self, directory: Path) -> None:
        self.engine.load_checkpoint(str(directory), tag="trainer", load_optimizer_states=True,
                                    load_lr_scheduler_states=False)


class PolicyTrainer:
    """Scores token sequences and applies the PPO-clip update: mini-batches of rollouts, each one
    optimiser step, accumulated over micro-batches; MirrorPop drops off-policy sequences first."""

    def __init__(self, model, config: PolicyOptimConfig, pad_token_id: int, device: str = "cpu"):
        self.config = config
        self.pad = pad_token_id
        self.device = device
        self.ref_model = None
        if config.kl_coef > 0:  # copied before the backend takes the model: ZeRO-3 partitions its parameters
            import copy

            self.ref_model = copy.deepcopy(model).eval()
            for p in self.ref_model.parameters():
                p.requires_grad_(False)
        self.backend = _DeepSpeedBackend(model, config) if config.train_engine == "deepspeed" else _TorchBackend(model, config)
        self.model = self.backend.model
        self.updates = 0

    def _autocast(self):
        if self.device == "cuda" and self.config.bf16:
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return torch.autocast("cpu", enabled=False)

    def _batch(self, sequences: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        width = max(len(s) for s in sequences)
        ids = torch.full((len(sequences), width), self.pad, dtype=torch.long)
        mask = torch.zeros((len(sequences), width), dtype=torch.long)
        for i, s in enumerate(sequences):
            ids[i, : len(s)] = torch.tensor(s)
            mask[i, : len(s)] = 1
        return ids.to(self.device), mask.to(self.device)

    def token_logprobs(self, model, sequences: list[list[int]]) -> torch.Tensor:
        """log pi(token_t | tokens_<t) for t >= 1, aligned to positions 1..L-1; shape (B, L-1)."""
        ids, mask = self._batch(sequences)
        with self._autocast():
            logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1].float()
        return -F.cross_entropy(logits.transpose(1, 2), ids[:, 1:], reduction="none")

    def _scored(self, model, sequences: list[list[int]]) -> list[torch.Tensor]:
        out = []
        with torch.no_grad():
            for start in range(0, len(sequences), self.config.micro_batch_size):
                chunk = sequences[start:start + self.config.micro_batch_size]
                logp = self.token_logprobs(model, chunk)
                out += [logp[i, : len(s) - 1] for i, s in enumerate(chunk)]
        return out

    def update(self, sequences: list[list[int]], token_advantages: list[torch.Tensor], train_masks: list[torch.Tensor],
               rollout_logprobs: list[torch.Tensor] | None = None) -> dict[str, float]:
        """PPO-clip over the batch. Old log-probs are the pre-update policy's; with MirrorPop, a sequence whose
        mean |log pi_theta - log pi_rollout| exceeds delta is dropped (MusaCoder Eq. 21). On a GPU, never beside a
        kernel a judge on the machine times alone (verifier.device_lock)."""
        with policy_on_device(self.device):
            return self._update(sequences, token_advantages, train_masks, rollout_logprobs)

    def _update(self, sequences: list[list[int]], token_advantages: list[torch.Tensor],
                train_masks: list[torch.Tensor], rollout_logprobs: list[torch.Tensor] | None) -> dict[str, float]:
        cfg = self.config
        old = self._scored(self.model, sequences)
        ref = self._scored(self.ref_model, sequences) if self.ref_model is not None else None
        masks = [m[1:].float() for m in train_masks]  # aligned with log-probs (positions 1..L-1)
        dropped = 0
        if cfg.mirrorpop.enabled and rollout_logprobs is not None:
            for i, (lp, rlp) in enumerate(zip(old, rollout_logprobs)):
                keep = mirrorpop_mask(lp.view(1, -1), rlp[1:].view(1, -1).to(lp), masks[i].view(1, -1).to(lp),
                                      cfg.mirrorpop.delta)
                if not bool(keep[0]) and masks[i].sum() > 0:
                    masks[i] = torch.zeros_like(masks[i])
                    dropped += 1
        stats = {"loss": 0.0, "clip_frac": 0.0, "approx_kl": 0.0, "kl": 0.0, "optimizer_steps": 0.0}
        micro_batches = 0
        stopped_early = False
        # what target_kl's check last measured (the value that stopped the step, if one did): the loss's approx_kl
        # is a mean over every micro-batch, the first at 0, and read 0.001 in GPU steps that the bound 0.03 stopped
        checked_kl = 0.0
        ranks = world_size()
        # a rank holds 1/ranks of the batch: its share of each mini-batch, and the mini-batch's normaliser summed
        # over ranks, so the gradients the ranks average are one process's on the whole batch (times `ranks`)
        mini = cfg.mini_batch_size // ranks if cfg.mini_batch_size else len(sequences)
        self.model.train()
        for _ in range(cfg.ppo_epochs):
            if stopped_early:
                break
            for m_start in range(0, len(sequences), mini):
                members = list(range(m_start, min(m_start + mini, len(sequences))))
                if cfg.loss_agg == "token-mean":
                    normalizer = float(sum(masks[i].sum() for i in members)) or 1.0
                else:
                    normalizer = float(sum(bool(masks[i].sum() > 0) for i in members)) or 1.0
                normalizer = (self._summed_over_ranks(normalizer) or 1.0) if ranks > 1 else normalizer
                if stats["optimizer_steps"] and cfg.target_kl:
                    checked_kl = self._approx_kl_to(old, sequences, masks, members[:cfg.micro_batch_size])
                    if self._past_target_kl(checked_kl):
                        stopped_early = True  # decided before the mini-batch's first forward: nothing half-applied
                        break
                for start in range(0, len(members), cfg.micro_batch_size):
                    chunk = members[start:start + cfg.micro_batch_size]
                    logp = self.token_logprobs(self.backend.training_forward, [sequences[i] for i in chunk])

                    def padded(tensors: list[torch.Tensor]) -> torch.Tensor:
                        return _padded(tensors, logp.shape[1], self.device)

                    adv = padded([token_advantages[i][1:] for i in chunk])
                    mask = padded([masks[i] for i in chunk])
                    loss, info = POLICY_LOSSES["ppo_clip"](logp, padded([old[i] for i in chunk]), adv, mask,
                                                           cfg.clip_low, cfg.clip_high, cfg.loss_agg, normalizer)
                    if ref is not None:
                        kl = (k3_kl(logp, padded([ref[i] for i in chunk])) * mask).sum() / mask.sum().clamp(min=1.0)
                        loss = loss + cfg.kl_coef * kl * len(chunk) / (len(members) * ranks)
                        stats["kl"] += kl.item()
                    self.backend.backward(loss * ranks, last=start + cfg.micro_batch_size >= len(members))
                    stats["loss"] += loss.item()
                    stats["clip_frac"] += info["clip_frac"]
                    stats["approx_kl"] += info["approx_kl"]
                    micro_batches += 1
                self.backend.step()
                stats["optimizer_steps"] += 1
        self.updates += 1
        out = {k: v / max(micro_batches, 1) for k, v in stats.items() if k not in ("loss", "optimizer_steps")}
        out["loss"] = stats["loss"] / max(stats["optimizer_steps"], 1)  # micro-batch losses add up per step
        out["optimizer_steps"] = stats["optimizer_steps"]
        out["mirrorpop_mask_rate"] = dropped / max(len(sequences), 1)
        out["stopped_early"] = float(stopped_early)
        out["approx_kl_checked"] = checked_kl
        return out

    def _approx_kl_to(self, old: list[torch.Tensor], sequences: list[list[int]], masks: list[torch.Tensor],
                      chunk: list[int]) -> float:
        """approx_kl (as the PPO loss reports it) of the policy now against the step's old log-probs, on `chunk`:
        a forward without gradients through the plain model, as the old log-probs were scored, on every engine."""
        with torch.no_grad():
            logp = self.token_logprobs(self.model, [sequences[i] for i in chunk])
        width = logp.shape[1]
        return approx_kl(logp, _padded([old[i] for i in chunk], width, logp.device),
                         _padded([masks[i] for i in chunk], width, logp.device))

    def _past_target_kl(self, approx_kl: float) -> bool:
        """Whether the policy has moved past 1.5 x `target_kl` from the step's old policy (the mean over ranks:
        every rank stops at the same mini-batch, or the others would wait in their collectives forever)."""
        if world_size() > 1:
            approx_kl = self._summed_over_ranks(approx_kl) / world_size()
        return approx_kl > 1.5 * self.config.target_kl

    def _summed_over_ranks(self, value: float) -> float:
        dist = torch.distributed
        on = self.device if dist.get_backend() == "nccl" else "cpu"
        total = torch.tensor([value], dtype=torch.float64, device=on)
        dist.all_reduce(total)
        return float(total.item())

    def save(self, directory: Path) -> None:
        """Optimizer state (the backend's own format) and the update counter, into `directory`. In a world of ranks
        every rank calls it (DeepSpeed writes each rank's partition); DDP's state is rank 0's."""
        rank = torch.distributed.get_rank() if world_size() > 1 else 0
        if rank == 0 or isinstance(self.backend, _DeepSpeedBackend):
            self.backend.save(directory / "optimizer")
        if rank == 0:
            (directory / "trainer.json").write_text(json.dumps({"updates": self.updates}))

    def load(self, directory: Path) -> None:
        """Resume from `save`; the policy's weights must already be the checkpoint's."""
        self.backend.load(directory / "optimizer")
        self.updates = json.loads((directory / "trainer.json").read_text())["updates"]


# -- Buffered Dynamic Retry ------------------------------------------------------------------
class RepairBuffer:
    """BDR (MusaCoder): a bounded FIFO of repair tasks x' = Compose(x, c-, f-), built from the failed
    kernels of groups in which every rollout failed; batches draw from it with probability p_buf."""

    def __init__(self, capacity: int):
        self.items: deque[dict[str, str]] = deque(maxlen=capacity)

    def __len__(self) -> int:
        return len(self.items)

    def push_failures(self, rollouts: list[Rollout], group_size: int) -> int:
        """One repair task per all-failed group: its first rollout's last attempt and feedback."""
        pushed = 0
        for g in range(0, len(rollouts), group_size):
            group = rollouts[g:g + group_size]
            if group and all(r.passed_turn == 0 for r in group) and not group[0].task.is_repair:
                last = group[0].turns[-1]
                self.items.append({"problem_id": group[0].problem.id, "completion": last.generation.text,
                                   "feedback": feedback_message(last.verdict)})
                pushed += 1
        return pushed

    def draw(self, problems: list[Problem], p_buf: float, rng: random.Random,
             by_id: dict[str, Problem]) -> list[Task]:
        """The step's tasks: each slot takes the oldest buffered repair task with probability p_buf."""
        tasks = []
        for problem in problems:
            if self.items and rng.random() < p_buf:
                item = self.items.popleft()
                tasks.append(Task(by_id[item["problem_id"]], item["completion"], item["feedback"]))
            else:
                tasks.append(Task(problem))
        return tasks

    def state(self) -> list[dict[str, str]]:
        return list(self.items)

    def load(self, items: list[dict[str, str]]) -> None:
        self.items.clear()
        self.items.extend(items)


# -- steps -------------------------------------------------------------------------------------
@dataclass
class StepResult:
    trajectories: list[Trajectory]
    rollouts: list[Rollout]
    metrics: dict[str, float] = field(default_factory=dict)
    advantages: list[float] = field(default_factory=list)


def _trajectories(rollouts: list[Rollout], step: int, ranks: list[int | None], rewards: torch.Tensor,
                  advantages: torch.Tensor, group_ids: list[str]) -> list[Trajectory]:
    out = []
    for k, r in enumerate(rollouts):
        turns = [Turn(candidate_id=t.candidate.id, source=t.candidate.source, verdict=t.verdict, feedback=t.feedback,
                      generated_tokens=len(t.generation.token_ids)) for t in r.turns]
        out.append(Trajectory(id=content_hash(group_ids[r.group], str(r.index)), group_id=group_ids[r.group],
                              problem_id=r.problem.id, step=step, rollout_index=r.index, turns=turns, gated=r.gated,
                              rank=ranks[k], reward=float(rewards.view(-1)[k]),
                              advantage=float(advantages.view(-1)[k])))
    return out


def _update_from_rollouts(trainer: PolicyTrainer, rollouts: list[Rollout], rollout_adv: torch.Tensor,
                          gamma: float) -> dict[str, float]:
    sequences, token_adv, masks, rollout_logp = [], [], [], []
    for r, a in zip(rollouts, rollout_adv.view(-1)):
        turn_ids = torch.tensor(r.turn_ids)
        adv = per_turn_token_advantage(a.view(1), turn_ids.view(1, -1), torch.tensor([len(r.turns)]), gamma)[0]
        sequences.append(r.tokens)
        token_adv.append(adv)
        masks.append(turn_ids >= 0)
        rollout_logp.append(torch.tensor(r.rollout_logprobs))
    return trainer.update(sequences, token_adv, masks, rollout_logp)


def _padded(tensors: list[torch.Tensor], width: int, device) -> torch.Tensor:
    """Per-sequence token tensors of different lengths as one (B, width) float batch, zero past each one's end."""
    return torch.stack([F.pad(t.float(), (0, width - len(t))) for t in tensors]).to(device)


def _group_ids(tasks: list[Task], step: int, run_key: str) -> list[str]:
    return [content_hash(run_key, str(step), t.problem.id, str(g), "repair" if t.is_repair else "")
            for g, t in enumerate(tasks)]


def _common_metrics(rollouts: list[Rollout], max_turns: int) -> dict[str, float]:
    n = max(len(rollouts), 1)
    metrics = {"pass_rate/turn_1": sum(r.turns[0].verdict.passed for r in rollouts) / n}
    for t in range(2, max_turns + 1):
        metrics[f"pass_rate/cumulative_turn_{t}"] = sum(0 < r.passed_turn <= t for r in rollouts) / n
    metrics["verifier_calls"] = float(sum(len(r.turns) for r in rollouts))
    metrics["generated_tokens"] = float(sum(len(t.generation.token_ids) for r in rollouts for t in r.turns))
    generations = [t.generation for r in rollouts for t in r.turns]
    # verl's names: how long the policy writes, and how often the length limit cuts a kernel short
    metrics["response_length/mean"] = metrics["generated_tokens"] / max(len(generations), 1)
    metrics["response_length/clip_ratio"] = sum(not g.finished for g in generations) / max(len(generations), 1)
    compiled = [t.verdict.compiled for r in rollouts for t in r.turns]
    metrics["compile_rate"] = sum(compiled) / max(len(compiled), 1)
    metrics["repair_tasks"] = float(len({r.group for r in rollouts if r.task.is_repair}))
    return metrics


def _timed(verify: VerifyBatch, times: dict[str, float]) -> VerifyBatch:
    def wrapped(pairs):
        start = time.perf_counter()
        try:
            return verify(pairs)
        finally:
            times["verify"] = times.get("verify", 0.0) + time.perf_counter() - start
    return wrapped


@dataclass
class Sampled:
    """One step's rollouts, rewards (n_groups, G), advantages and ranks, and the seconds they took. Groups are whole
    here: a data-parallel rank samples whole groups, so the reward and the DCP gate see every rollout of a group."""
    rollouts: list[Rollout]
    rewards: torch.Tensor
    advantages: torch.Tensor
    ranks: list[int | None]
    verify_seconds: float
    generate_seconds: float


def _sampled(rollouts, rewards, advantages, ranks, started: float, times: dict[str, float]) -> Sampled:
    verify_seconds = times.get("verify", 0.0)
    return Sampled(rollouts, rewards, advantages, ranks, verify_seconds,
                   time.perf_counter() - started - verify_seconds)


def merge_sampled(parts: list[Sampled]) -> Sampled:
    """The ranks' samples as one step's, groups renumbered in rank order (what one process sampling every task in
    that order makes); seconds are the slowest rank's."""
    rollouts, offset = [], 0
    for part in parts:
        for r in part.rollouts:
            r.group += offset
        rollouts += part.rollouts
        offset += part.rewards.shape[0]
    return Sampled(rollouts, torch.cat([p.rewards for p in parts]), torch.cat([p.advantages for p in parts]),
                   [r for p in parts for r in p.ranks], max(p.verify_seconds for p in parts),
                   max(p.generate_seconds for p in parts))


def merge_ppo_stats(parts: list[dict[str, float]]) -> dict[str, float]:
    """The update's statistics over ranks: each rank's loss is its share of the batch's (they add up); the
    rates and KL estimates are averages over equal shares; optimiser steps are the same on every rank."""
    merged = {k: sum(p[k] for p in parts) / len(parts) for k in parts[0]}
    merged["loss"] = sum(p["loss"] for p in parts)
    merged["optimizer_steps"] = parts[0]["optimizer_steps"]
    return merged


def warmup_sample(engine: RolloutEngine, verify: VerifyBatch, tasks: list[Task], config: WarmupRLConfig,
                  reward: RewardConfig, backend: str, seed: int,
                  on_progress: Callable[[str, int], None] | None = None) -> Sampled:
    """Single-turn GRPO's rollouts: G samples per prompt, correctness-first reward (MusaCoder Eq. 2), group
    advantage."""
    times: dict[str, float] = {}
    started = time.perf_counter()
    rollouts = multi_turn_rollouts(engine, _timed(verify, times), tasks, config.group_size, 1, config.generation,
                                   backend, seed, origin="warmup_rl", on_progress=on_progress)
    rewards = torch.tensor([correctness_first_reward(r.turns[0].verdict, reward.lam, reward.nu_max)
                            for r in rollouts]).view(-1, config.group_size)  # groups of broken problems left out
    advantages = ADV_ESTIMATORS["grpo"](rewards, config.adv_eps)
    return _sampled(rollouts, rewards, advantages, [None] * len(rollouts), started, times)


def leap_sample(engine: RolloutEngine, verify: VerifyBatch, tasks: list[Task], config: LeapRLConfig,
                reward: RewardConfig, backend: str, seed: int,
                on_progress: Callable[[str, int], None] | None = None) -> Sampled:
    """LEAP's rollouts: gated multi-turn rollouts (DCP, Eq. 1-2, or every group), the configured reward (rank:
    Eq. 4-6; scalar; PrimeEcho: MusaCoder Eq. 9), GRPO advantage."""
    times: dict[str, float] = {}
    started = time.perf_counter()
    if config.gate == "dcp":
        gate = lambda failed: dcp_gate(failed, config.tau_min, config.tau_max)  # noqa: E731
    else:
        gate = None  # every group may debug (Full, GRPO-MT, MURPHY-style)
    rollouts = multi_turn_rollouts(engine, _timed(verify, times), tasks, config.group_size, config.max_turns,
                                   config.generation, backend, seed, origin="leap_rl", gate=gate,
                                   on_progress=on_progress)
    rewards, ranks = leap_rewards(rollouts, config, reward, len(rollouts) // config.group_size)
    advantages = ADV_ESTIMATORS["grpo"](rewards, config.adv_eps)
    return _sampled(rollouts, rewards, advantages, ranks, started, times)


def group_signal_metrics(rollouts: list[Rollout], rewards: torch.Tensor, group_size: int) -> dict[str, float]:
    """How much of a step could teach: the share of its groups whose every rollout passed at turn 1, whose none
    did, and whose rewards are all one value — a GRPO group of one reward has advantage 0 everywhere and gives no
    gradient (DAPO's dynamic sampling drops them). A policy whose prompts are all or nothing spends its rollouts
    there (docs/learning.md: the H200 miniature's headroom)."""
    groups = [rollouts[i:i + group_size] for i in range(0, len(rollouts), group_size)]
    if not groups:
        return {}
    first_passes = [sum(r.turns[0].verdict.passed for r in g) for g in groups]
    spread = rewards.view(len(groups), -1)
    one_reward = spread.max(dim=1).values - spread.min(dim=1).values <= 1e-9
    return {"groups/all_passed": sum(c == len(g) for c, g in zip(first_passes, groups)) / len(groups),
            "groups/all_failed": sum(c == 0 for c in first_passes) / len(groups),
            "groups/one_reward": float(one_reward.float().mean())}


def step_result(sampled: Sampled, ppo_stats: dict[str, float], train_seconds: float,
                config: WarmupRLConfig | LeapRLConfig, step: int, run_key: str) -> StepResult:
    """The step's metrics and trajectories, from its (merged) sample and the update's statistics. The sample's
    groups are its tasks' in order, less those of problems whose reference broke while judged (left out whole)."""
    rollouts = sampled.rollouts
    tasks = [r.task for r in rollouts[::config.group_size]]
    n_tasks = len(tasks)
    max_turns = getattr(config, "max_turns", 1)
    metrics = {**_common_metrics(rollouts, max_turns), **{f"ppo/{k}": v for k, v in ppo_stats.items()}}
    if isinstance(config, LeapRLConfig):
        gated_groups = {r.group for r in rollouts if r.gated}
        first_failed = [r for r in rollouts if r.gated and not r.turns[0].verdict.passed]
        recovered = [r for r in first_failed if r.passed_turn > 1]
        passes = [r.passed_turn for r in rollouts if r.passed_turn > 0]
        metrics.update({"dcp/activated_groups_pct": 100.0 * len(gated_groups) / max(n_tasks, 1),
                        "recovery/per_rollout": len(recovered) / max(len(first_failed), 1),
                        "recovery/per_group": len({r.group for r in recovered}) / max(len(gated_groups), 1),
                        "turns_per_pass": sum(passes) / len(passes) if passes else 0.0})
    metrics.update(group_signal_metrics(rollouts, sampled.rewards, config.group_size))
    metrics.update({"reward/mean": float(sampled.rewards.mean()),
                    "advantage/abs_mean": float(sampled.advantages.abs().mean()),
                    "time/verify": sampled.verify_seconds, "time/generate": sampled.generate_seconds,
                    "time/train": train_seconds})
    trajectories = _trajectories(rollouts, step, sampled.ranks, sampled.rewards, sampled.advantages,
                                 _group_ids(tasks, step, run_key))
    return StepResult(trajectories, rollouts, metrics, sampled.advantages.view(-1).tolist())


def train_on(trainer: PolicyTrainer, sampled: Sampled, config: WarmupRLConfig | LeapRLConfig) \
        -> tuple[dict[str, float], float]:
    """The PPO-clip update on a sample (per-turn advantages discounted by LEAP's gamma; 1 for single-turn);
    returns its statistics and seconds."""
    started = time.perf_counter()
    stats = _update_from_rollouts(trainer, sampled.rollouts, sampled.advantages, getattr(config, "gamma", 1.0))
    return stats, time.perf_counter() - started


def warmup_step(engine: RolloutEngine, trainer: PolicyTrainer, verify: VerifyBatch, tasks: list[Task],
                config: WarmupRLConfig, reward: RewardConfig, backend: str, step: int, seed: int, run_key: str,
                on_progress: Callable[[str, int], None] | None = None) -> StepResult:
    """Single-turn GRPO (`warmup_sample`) and its PPO-clip update."""
    sampled = warmup_sample(engine, verify, tasks, config, reward, backend, seed, on_progress)
    stats, seconds = train_on(trainer, sampled, config)
    return step_result(sampled, stats, seconds, config, step, run_key)


def leap_rewards(rollouts: list[Rollout], config: LeapRLConfig, reward: RewardConfig,
                 n_groups: int) -> tuple[torch.Tensor, list[int | None]]:
    """(n_groups, G) rewards by `config.reward`, and the ranks (LEAP Eq. 4) where the rank reward is used."""
    passed_turn = torch.tensor([r.passed_turn for r in rollouts]).view(n_groups, config.group_size)
    if config.reward == "rank":
        ranks = rollout_rank(passed_turn, config.max_turns)
        return tournament_reward(ranks), ranks.view(-1).tolist()
    if config.reward == "scalar":
        s = config.scalar_rewards
        return scalar_tier_reward(passed_turn, s.first, s.later, s.fail), [None] * len(rollouts)
    p = config.primeecho
    lam = reward.lam if p.reads_speed else 0.0
    turn_rewards = torch.full((len(rollouts), config.max_turns), -1.0)
    for i, r in enumerate(rollouts):
        for t, turn in enumerate(r.turns):
            turn_rewards[i, t] = correctness_first_reward(turn.verdict, lam, reward.nu_max)
    values = primeecho_reward(turn_rewards, torch.tensor([len(r.turns) for r in rollouts]), p.alpha, p.beta1, p.beta2)
    return values.view(n_groups, config.group_size), [None] * len(rollouts)


def leap_step(engine: RolloutEngine, trainer: PolicyTrainer, verify: VerifyBatch, tasks: list[Task],
              config: LeapRLConfig, reward: RewardConfig, backend: str, step: int, seed: int, run_key: str,
              on_progress: Callable[[str, int], None] | None = None) -> StepResult:
    """LEAP (`leap_sample`) and its PPO-clip update with per-turn advantages (§3.3)."""
    sampled = leap_sample(engine, verify, tasks, config, reward, backend, seed, on_progress)
    stats, seconds = train_on(trainer, sampled, config)
    return step_result(sampled, stats, seconds, config, step, run_key)


def frontier_order(problems: list[Problem], passes: dict[str, tuple[int, int]], seed: int) -> list[Problem]:
    """`problems` for RL's steps, the policy's frontier first (`PolicyOptimConfig.prompts: frontier`): those its
    lineage passed sometimes and failed sometimes at the first turn (`passes`: problem id -> (passed, judged)),
    nearest an even split first, where G samples most likely differ in reward (GRPO's advantage, LEAP's DCP
    gate); then those never tried; last those always passed or always failed. Seeded shuffles within each."""
    rng = random.Random(seed)
    mixed, unseen, uniform = [], [], []
    for p in problems:
        passed, judged = passes.get(p.id, (0, 0))
        (unseen if judged == 0 else mixed if 0 < passed < judged else uniform).append(p)
    for part in (mixed, unseen, uniform):
        rng.shuffle(part)
    mixed.sort(key=lambda p: abs(passes[p.id][0] / passes[p.id][1] - 0.5))  # stable: ties stay shuffled
    return mixed + unseen + uniform


def sample_problems(problems: list[Problem], n: int, step: int, seed: int, shuffle: bool = True) -> list[Problem]:
    """Round-robin, so every problem is seen before any repeats: over a seeded shuffle, or in the given order
    (`shuffle=False`, e.g. `frontier_order`'s)."""
    order = list(problems)
    if shuffle:
        random.Random(seed).shuffle(order)
    start = (step * n) % len(order)
    return [order[(start + i) % len(order)] for i in range(n)]
