"""The RL algorithms as pure tensor functions, one per paper equation.

Shapes: groups are `(n_groups, G)`; token tensors are `(batch, seq_len)`. Each
advantage estimator and policy loss is registered by name (verl-style) and chosen
by config.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

ADV_ESTIMATORS: dict[str, Callable] = {}
POLICY_LOSSES: dict[str, Callable] = {}


def register_adv_est(name: str):
    def wrap(fn):
        ADV_ESTIMATORS[name] = fn
        return fn
    return wrap


def register_policy_loss(name: str):
    def wrap(fn):
        POLICY_LOSSES[name] = fn
        return fn
    return wrap


def dcp_gate(first_turn_failed: torch.Tensor, tau_min: int, tau_max: int) -> torch.Tensor:
    """LEAP Eq. 1-2 (Difficulty-Conditioned Pruning).

    N_fail(q) = sum_i I(o_i failed) over the group's first-turn rollouts (Eq. 1);
    G(q) = 1 iff tau_min <= N_fail(q) <= tau_max (Eq. 2): only those groups enter
    multi-turn debugging.

    first_turn_failed: (n_groups, G) bool. Returns (n_groups,) bool.
    """
    n_fail = first_turn_failed.long().sum(dim=-1)
    return (n_fail >= tau_min) & (n_fail <= tau_max)


def rollout_rank(passed_turn: torch.Tensor, max_turns: int) -> torch.Tensor:
    """LEAP Eq. 4: 1st-turn pass > 2nd-turn pass > ... > failure, as integer ranks.

    passed_turn: (...,) long, the 1-based turn of the first pass, 0 if the rollout
    never passed. Pass at turn m -> M - m + 1 (first-turn pass -> M); failure -> 0.
    """
    return torch.where(passed_turn > 0, max_turns - passed_turn + 1, torch.zeros_like(passed_turn))


def tournament_reward(ranks: torch.Tensor) -> torch.Tensor:
    """LEAP Eq. 5-6: R_i = (N_worse(o_i) - N_better(o_i)) / (G - 1), in [-1, 1].

    ranks: (n_groups, G). Each rollout plays every peer in its group; ties count for neither.
    """
    group_size = ranks.shape[-1]
    if group_size < 2:
        return torch.zeros_like(ranks, dtype=torch.float32)
    wins = torch.sign(ranks.unsqueeze(-1) - ranks.unsqueeze(-2)).sum(dim=-1)  # N_worse - N_better
    return wins.float() / (group_size - 1)


@register_adv_est("grpo")
def grpo_group_advantage(rewards: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """GRPO: A_i = (R_i - mean(R)) / (std(R) + eps) within each group; zero when all rewards are equal.

    rewards: (n_groups, G).
    """
    mean = rewards.mean(dim=-1, keepdim=True)
    std = rewards.std(dim=-1, keepdim=True) if rewards.shape[-1] > 1 else torch.zeros_like(mean)
    return (rewards - mean) / (std + eps)


def per_turn_token_advantage(advantages: torch.Tensor, turn_ids: torch.Tensor, num_turns: torch.Tensor,
                             gamma: float) -> torch.Tensor:
    """LEAP §3.3 (discounted per-turn advantage): tokens of generated turn t of T_i turns get
    beta_i ** (T_i - t - 1) * A_i, with beta_i = gamma if A_i >= 0 else 1.

    advantages: (B,) rollout-level A_i; turn_ids: (B, L) long, the generated turn of each
    token or -1 for prompt, feedback and padding tokens (which get 0); num_turns: (B,) T_i.
    """
    beta = torch.where(advantages >= 0, torch.full_like(advantages, gamma), torch.ones_like(advantages))
    exponent = (num_turns.unsqueeze(-1) - turn_ids - 1).clamp(min=0).to(advantages.dtype)
    token_adv = beta.unsqueeze(-1) ** exponent * advantages.unsqueeze(-1)
    return torch.where(turn_ids >= 0, token_adv, torch.zeros_like(token_adv))


def aggregate_loss(loss: torch.Tensor, mask: torch.Tensor, mode: str) -> torch.Tensor:
    """`token-mean`: every generated token weighs the same. `seq-mean-token-mean` (DAPO's
    sample-level loss, LEAP's default): each sequence's token mean, then the mean over sequences."""
    mask = mask.to(loss.dtype)
    if mode == "token-mean":
        return (loss * mask).sum() / mask.sum().clamp(min=1.0)
    if mode == "seq-mean-token-mean":
        per_seq_tokens = mask.sum(dim=-1)
        has_tokens = per_seq_tokens > 0
        per_seq = (loss * mask).sum(dim=-1) / per_seq_tokens.clamp(min=1.0)
        return per_seq[has_tokens].mean() if has_tokens.any() else loss.sum() * 0.0
    raise ValueError(f"unknown loss aggregation {mode!r}")


def k3_kl(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Schulman's k3 estimator of KL(pi || ref) per token: exp(r) - r - 1 with r = ref - logp."""
    log_ratio = ref_logp - logp
    return torch.exp(log_ratio) - log_ratio - 1.0


@register_policy_loss("ppo_clip")
def ppo_clip_loss(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
                  clip_low: float = 0.2, clip_high: float = 0.28,
                  agg: str = "seq-mean-token-mean") -> tuple[torch.Tensor, dict[str, float]]:
    """PPO-clip surrogate with asymmetric clip range [1 - clip_low, 1 + clip_high] (DAPO's clip-higher).

    All inputs (B, L); `mask` marks trained tokens. Returns the loss and diagnostics.
    """
    ratio = torch.exp(logp - old_logp)
    surrogate = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high) * advantages
    loss = -torch.minimum(surrogate, clipped)
    with torch.no_grad():
        m = mask.bool()
        clip_frac = ((surrogate > clipped) & m).float().sum() / m.float().sum().clamp(min=1.0)
        approx_kl = (0.5 * (logp - old_logp) ** 2 * m).sum() / m.float().sum().clamp(min=1.0)
    return aggregate_loss(loss, mask, agg), {"clip_frac": float(clip_frac), "approx_kl": float(approx_kl)}
