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


def scalar_tier_reward(passed_turn: torch.Tensor, first: float = 1.0, later: float = 0.5,
                       fail: float = 0.0) -> torch.Tensor:
    """GRPO-MT's fixed reward per outcome tier (the "magic numbers" LEAP §3.2 replaces):
    pass at turn 1 -> `first`, pass at a later turn -> `later`, never -> `fail`.

    passed_turn: (...,) long, 1-based turn of the first pass, 0 if never passed.
    """
    return torch.where(passed_turn == 1, torch.tensor(first),
                       torch.where(passed_turn > 1, torch.tensor(later), torch.tensor(fail))).float()


def primeecho_reward(turn_rewards: torch.Tensor, num_turns: torch.Tensor, alpha: float, beta1: float,
                     beta2: float) -> torch.Tensor:
    """MusaCoder Eq. 9 (PrimeEcho): R = alpha * s_1 + (1 - alpha) * max_k s_k + b_early, with
    b_early = beta1 * 1[pass at turn 1] + beta2 * 1[fail at turn 1, pass at turn 2].

    turn_rewards: (B, M) per-turn correctness-first rewards s_k (MusaCoder Eq. 2; a pass is s_k >= 1);
    num_turns: (B,) turns actually taken (later entries are ignored).
    """
    turns = torch.arange(turn_rewards.shape[-1]).unsqueeze(0)
    taken = turns < num_turns.unsqueeze(-1)
    best = torch.where(taken, turn_rewards, torch.full_like(turn_rewards, -float("inf"))).max(dim=-1).values
    passed = (turn_rewards >= 1.0) & taken
    pass_first = passed[:, 0].float()
    pass_second = (~passed[:, 0] & passed[:, 1]).float() if turn_rewards.shape[-1] > 1 else torch.zeros_like(pass_first)
    return alpha * turn_rewards[:, 0] + (1 - alpha) * best + beta1 * pass_first + beta2 * pass_second


def mirrorpop_mask(logp: torch.Tensor, rollout_logp: torch.Tensor, mask: torch.Tensor, delta: float) -> torch.Tensor:
    """MusaCoder Eq. 21 (MirrorPop): keep a sequence only if the mean over its tokens of
    |log pi_theta - log pi_rollout| is at most `delta`. The absolute value stops positive and
    negative deviations from cancelling, as they do in the signed mean of vanilla masking.

    All inputs (B, L); returns (B,) bool, True = keep.
    """
    m = mask.to(logp.dtype)
    mean_abs = ((logp - rollout_logp).abs() * m).sum(dim=-1) / m.sum(dim=-1).clamp(min=1.0)
    return mean_abs <= delta


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


def aggregate_loss(loss: torch.Tensor, mask: torch.Tensor, mode: str, normalizer: float | None = None) -> torch.Tensor:
    """`token-mean`: every generated token weighs the same. `seq-mean-token-mean` (DAPO's
    sample-level loss, LEAP's default): each sequence's token mean, then the mean over sequences.

    `normalizer` replaces the local token (or sequence) count: with gradient accumulation, pass the
    whole mini-batch's count so that micro-batches add up to the mini-batch's loss.
    """
    mask = mask.to(loss.dtype)
    if mode == "token-mean":
        return (loss * mask).sum() / (normalizer if normalizer is not None else mask.sum().clamp(min=1.0))
    if mode == "seq-mean-token-mean":
        per_seq_tokens = mask.sum(dim=-1)
        has_tokens = per_seq_tokens > 0
        per_seq = (loss * mask).sum(dim=-1) / per_seq_tokens.clamp(min=1.0)
        count = normalizer if normalizer is not None else has_tokens.sum().clamp(min=1)
        return per_seq[has_tokens].sum() / count
    raise ValueError(f"unknown loss aggregation {mode!r}")


def k3_kl(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Schulman's k3 estimator of KL(pi || ref) per token: exp(r) - r - 1 with r = ref - logp."""
    log_ratio = ref_logp - logp
    return torch.exp(log_ratio) - log_ratio - 1.0


def approx_kl(logp: torch.Tensor, old_logp: torch.Tensor, mask: torch.Tensor) -> float:
    """How far the policy moved from `old_logp` on the masked tokens: mean 0.5 (log pi - log pi_old)^2 (k2)."""
    with torch.no_grad():
        m = mask.bool()
        return float((0.5 * (logp - old_logp) ** 2 * m).sum() / m.float().sum().clamp(min=1.0))


@register_policy_loss("ppo_clip")
def ppo_clip_loss(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
                  clip_low: float = 0.2, clip_high: float = 0.28, agg: str = "seq-mean-token-mean",
                  normalizer: float | None = None) -> tuple[torch.Tensor, dict[str, float]]:
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
    return aggregate_loss(loss, mask, agg, normalizer), {"clip_frac": float(clip_frac),
                                                         "approx_kl": approx_kl(logp, old_logp, mask)}
