"""The policy trainer and the two RL stages' step functions.

`warmup_step`: single-turn GRPO with the correctness-first reward (MusaCoder).
`leap_step`: multi-turn rollouts gated by DCP, the rank-based tournament reward and
discounted per-turn advantages (LEAP). Both end in the same PPO-clip update.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from schemas.config import LeapRLConfig, PolicyOptimConfig, RewardConfig, WarmupRLConfig
from schemas.records import Problem, Trajectory, Turn, content_hash
from training.core_algos import (
    ADV_ESTIMATORS,
    POLICY_LOSSES,
    dcp_gate,
    k3_kl,
    per_turn_token_advantage,
    rollout_rank,
    tournament_reward,
)
from training.rollout import HFRolloutEngine, Rollout, VerifyBatch, multi_turn_rollouts
from verifier.reward import correctness_first_reward


class PolicyTrainer:
    """Scores token sequences and applies the PPO-clip update (plain torch, gradient accumulation)."""

    def __init__(self, model, config: PolicyOptimConfig, pad_token_id: int, device: str = "cpu"):
        self.model = model
        self.config = config
        self.pad = pad_token_id
        self.device = device
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=0.0)
        self.ref_model = None
        if config.kl_coef > 0:
            import copy

            self.ref_model = copy.deepcopy(model).eval()
            for p in self.ref_model.parameters():
                p.requires_grad_(False)

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
        logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1].float()
        return -F.cross_entropy(logits.transpose(1, 2), ids[:, 1:], reduction="none")

    def update(self, sequences: list[list[int]], token_advantages: list[torch.Tensor],
               train_masks: list[torch.Tensor]) -> dict[str, float]:
        """One PPO-clip pass over the batch in micro-batches; old log-probs are the pre-update policy's."""
        cfg = self.config
        loss_fn = POLICY_LOSSES["ppo_clip"]
        order = list(range(len(sequences)))
        with torch.no_grad():
            old = {i: self.token_logprobs(self.model, [sequences[i]])[0] for i in order}
            ref = {i: self.token_logprobs(self.ref_model, [sequences[i]])[0] for i in order} if self.ref_model else {}
        stats = {"loss": 0.0, "clip_frac": 0.0, "approx_kl": 0.0, "kl": 0.0}
        updates = 0
        self.model.train()
        for _ in range(cfg.ppo_epochs):
            for start in range(0, len(order), cfg.micro_batch_size):
                chunk = order[start:start + cfg.micro_batch_size]
                self.optimizer.zero_grad(set_to_none=True)
                logp = self.token_logprobs(self.model, [sequences[i] for i in chunk])
                width = logp.shape[1]

                def pad(tensors: list[torch.Tensor], value: float = 0.0) -> torch.Tensor:
                    return torch.stack([F.pad(t[1:], (0, width - (len(t) - 1)), value=value) for t in tensors]).to(self.device)

                adv = pad([token_advantages[i] for i in chunk])
                mask = pad([train_masks[i].float() for i in chunk])
                old_logp = torch.stack([F.pad(old[i], (0, width - len(old[i]))) for i in chunk])
                loss, info = loss_fn(logp, old_logp, adv, mask, cfg.clip_low, cfg.clip_high, cfg.loss_agg)
                if self.ref_model is not None:
                    ref_logp = torch.stack([F.pad(ref[i], (0, width - len(ref[i]))) for i in chunk])
                    kl = (k3_kl(logp, ref_logp) * mask).sum() / mask.sum().clamp(min=1.0)
                    loss = loss + cfg.kl_coef * kl
                    stats["kl"] += kl.item()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.grad_clip)
                self.optimizer.step()
                stats["loss"] += loss.item()
                stats["clip_frac"] += info["clip_frac"]
                stats["approx_kl"] += info["approx_kl"]
                updates += 1
        return {k: v / max(updates, 1) for k, v in stats.items()}


@dataclass
class StepResult:
    trajectories: list[Trajectory]
    rollouts: list[Rollout]
    metrics: dict[str, float] = field(default_factory=dict)


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
    sequences, token_adv, masks = [], [], []
    for r, a in zip(rollouts, rollout_adv.view(-1)):
        turn_ids = torch.tensor(r.turn_ids)
        num_turns = torch.tensor([len(r.turns)])
        adv = per_turn_token_advantage(a.view(1), turn_ids.view(1, -1), num_turns, gamma)[0]
        sequences.append(r.tokens)
        token_adv.append(adv)
        masks.append(turn_ids >= 0)
    return trainer.update(sequences, token_adv, masks)


def _group_ids(problems: list[Problem], step: int, run_key: str) -> list[str]:
    return [content_hash(run_key, str(step), p.id, str(g)) for g, p in enumerate(problems)]


def _common_metrics(rollouts: list[Rollout], max_turns: int) -> dict[str, float]:
    n = max(len(rollouts), 1)
    metrics = {"pass_rate/turn_1": sum(r.turns[0].verdict.passed for r in rollouts) / n}
    for t in range(2, max_turns + 1):
        metrics[f"pass_rate/cumulative_turn_{t}"] = sum(0 < r.passed_turn <= t for r in rollouts) / n
    metrics["verifier_calls"] = float(sum(len(r.turns) for r in rollouts))
    metrics["generated_tokens"] = float(sum(len(t.generation.token_ids) for r in rollouts for t in r.turns))
    compiled = [t.verdict.compiled for r in rollouts for t in r.turns]
    metrics["compile_rate"] = sum(compiled) / max(len(compiled), 1)
    return metrics


def warmup_step(engine: HFRolloutEngine, trainer: PolicyTrainer, verify: VerifyBatch, problems: list[Problem],
                config: WarmupRLConfig, reward: RewardConfig, backend: str, step: int, seed: int, run_key: str,
                on_progress: Callable[[str, int], None] | None = None) -> StepResult:
    """Single-turn GRPO: G samples per prompt, correctness-first reward (MusaCoder Eq. 2), group advantage."""
    times = {}
    t0 = time.perf_counter()
    rollouts = multi_turn_rollouts(engine, _timed(verify, times), problems, config.group_size, 1, config.generation,
                                   backend, seed, origin="warmup_rl", on_progress=on_progress)
    t1 = time.perf_counter()
    rewards = torch.tensor([correctness_first_reward(r.turns[0].verdict, reward.lam, reward.nu_max)
                            for r in rollouts]).view(len(problems), config.group_size)
    advantages = ADV_ESTIMATORS["grpo"](rewards, config.adv_eps)
    stats = _update_from_rollouts(trainer, rollouts, advantages, gamma=1.0)
    t2 = time.perf_counter()
    metrics = {**_common_metrics(rollouts, 1), **{f"train/{k}": v for k, v in stats.items()},
               "reward/mean": float(rewards.mean()), "advantage/abs_mean": float(advantages.abs().mean()),
               "time/verify": times.get("verify", 0.0), "time/generate": (t1 - t0) - times.get("verify", 0.0),
               "time/train": t2 - t1}
    trajectories = _trajectories(rollouts, step, [None] * len(rollouts), rewards, advantages,
                                 _group_ids(problems, step, run_key))
    return StepResult(trajectories, rollouts, metrics)


def leap_step(engine: HFRolloutEngine, trainer: PolicyTrainer, verify: VerifyBatch, problems: list[Problem],
              config: LeapRLConfig, backend: str, step: int, seed: int, run_key: str,
              on_progress: Callable[[str, int], None] | None = None) -> StepResult:
    """LEAP: DCP-gated multi-turn rollouts (Eq. 1-2), ranks (Eq. 4), tournament reward (Eq. 5-6),
    GRPO advantage, discounted per-turn token advantages (§3.3), PPO-clip update."""
    times = {}
    t0 = time.perf_counter()
    gate = lambda failed: dcp_gate(failed, config.tau_min, config.tau_max)  # noqa: E731
    rollouts = multi_turn_rollouts(engine, _timed(verify, times), problems, config.group_size, config.max_turns,
                                   config.generation, backend, seed, origin="leap_rl", gate=gate,
                                   on_progress=on_progress)
    t1 = time.perf_counter()
    passed_turn = torch.tensor([r.passed_turn for r in rollouts]).view(len(problems), config.group_size)
    ranks = rollout_rank(passed_turn, config.max_turns)
    rewards = tournament_reward(ranks)
    advantages = ADV_ESTIMATORS["grpo"](rewards, config.adv_eps)
    stats = _update_from_rollouts(trainer, rollouts, advantages, config.gamma)
    t2 = time.perf_counter()
    gated_groups = {r.group for r in rollouts if r.gated}
    first_failed = [r for r in rollouts if r.gated and not r.turns[0].verdict.passed]
    recovered = [r for r in first_failed if r.passed_turn > 1]
    groups_recovered = {r.group for r in recovered}
    passes = [r.passed_turn for r in rollouts if r.passed_turn > 0]
    metrics = {**_common_metrics(rollouts, config.max_turns), **{f"train/{k}": v for k, v in stats.items()},
               "dcp/activated_groups_pct": 100.0 * len(gated_groups) / max(len(problems), 1),
               "recovery/per_rollout": len(recovered) / max(len(first_failed), 1),
               "recovery/per_group": len(groups_recovered) / max(len(gated_groups), 1),
               "turns_per_pass": sum(passes) / len(passes) if passes else 0.0,
               "reward/mean": float(rewards.mean()), "advantage/abs_mean": float(advantages.abs().mean()),
               "time/verify": times.get("verify", 0.0), "time/generate": (t1 - t0) - times.get("verify", 0.0),
               "time/train": t2 - t1}
    trajectories = _trajectories(rollouts, step, ranks.view(-1).tolist(), rewards, advantages,
                                 _group_ids(problems, step, run_key))
    return StepResult(trajectories, rollouts, metrics)


def _timed(verify: VerifyBatch, times: dict[str, float]) -> VerifyBatch:
    def wrapped(pairs):
        start = time.perf_counter()
        try:
            return verify(pairs)
        finally:
            times["verify"] = times.get("verify", 0.0) + time.perf_counter() - start
    return wrapped


def sample_problems(problems: list[Problem], n: int, step: int, seed: int) -> list[Problem]:
    """Round-robin over a seeded shuffle, so every problem is seen before any repeats."""
    import random

    order = list(problems)
    random.Random(seed).shuffle(order)
    start = (step * n) % len(order)
    return [order[(start + i) % len(order)] for i in range(n)]
