"""The RL equations against values computed by hand."""

import pytest
import torch

from training.core_algos import (
    aggregate_loss,
    dcp_gate,
    grpo_group_advantage,
    per_turn_token_advantage,
    ppo_clip_loss,
    rollout_rank,
    tournament_reward,
)


def test_dcp_gate_opens_only_between_the_thresholds():
    # G = 4; N_fail = 0, 1, 3, 4
    failed = torch.tensor([[0, 0, 0, 0], [1, 0, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]], dtype=torch.bool)
    assert dcp_gate(failed, tau_min=1, tau_max=3).tolist() == [False, True, True, False]
    assert dcp_gate(failed, tau_min=0, tau_max=4).tolist() == [True, True, True, True]  # "Full": no pruning
    assert dcp_gate(failed, tau_min=2, tau_max=2).tolist() == [False, False, False, False]


def test_rank_by_turn_of_first_pass():
    # M = 3: pass at turn 1 -> 3, turn 2 -> 2, turn 3 -> 1, never -> 0
    passed_turn = torch.tensor([1, 2, 3, 0])
    assert rollout_rank(passed_turn, max_turns=3).tolist() == [3, 2, 1, 0]


def test_tournament_reward_hand_computed():
    ranks = torch.tensor([[3, 2, 0, 0]])  # G = 4
    # o1 beats 3 -> 3/3; o2 beats 2, loses 1 -> 1/3; o3, o4 lose 2, tie 1 -> -2/3
    assert torch.allclose(tournament_reward(ranks), torch.tensor([[1.0, 1 / 3, -2 / 3, -2 / 3]]))
    assert tournament_reward(torch.tensor([[2, 2, 2]])).abs().sum() == 0  # all tied


def _three_tier(n1, n2, n3):
    """LEAP §3.4 with M = 2: tiers O1 (rank 2), O2 (rank 1), O3 (rank 0)."""
    ranks = torch.tensor([[2] * n1 + [1] * n2 + [0] * n3])
    r = tournament_reward(ranks)[0]
    g = n1 + n2 + n3
    return r, g


@pytest.mark.parametrize("n1,n2,n3", [(5, 2, 1), (1, 2, 5), (2, 2, 2), (3, 1, 4)])
def test_three_tier_analysis_eq_7_to_9(n1, n2, n3):
    r, g = _three_tier(n1, n2, n3)
    assert r[0] == pytest.approx((n2 + n3) / (g - 1))  # Eq. 7
    assert r[n1] == pytest.approx((n3 - n1) / (g - 1))  # Eq. 8
    assert r[-1] == pytest.approx(-(n1 + n2) / (g - 1))  # Eq. 9


def test_sign_of_second_tier_follows_difficulty():
    easy, _ = _three_tier(6, 1, 1)  # N1 > N3: a second-turn pass is penalised (Eq. 10)
    hard, _ = _three_tier(1, 1, 6)  # N3 > N1: a second-turn pass is rewarded (Eq. 11)
    assert easy[6] < 0 < hard[1]


def test_grpo_advantage_normalises_within_groups_and_is_zero_when_all_equal():
    rewards = torch.tensor([[1.0, 0.0, 0.0, -1.0], [0.5, 0.5, 0.5, 0.5]])
    adv = grpo_group_advantage(rewards, eps=0.0 + 1e-6)
    std = torch.tensor([1.0, 0.0, 0.0, -1.0]).std()
    assert torch.allclose(adv[0], torch.tensor([1.0, 0.0, 0.0, -1.0]) / (std + 1e-6))
    assert torch.equal(adv[1], torch.zeros(4))


def test_per_turn_advantage_discounts_positive_and_keeps_negative():
    # rollout 0: A=+2, 3 turns; rollout 1: A=-1, 2 turns; -1 marks prompt/feedback/padding
    turn_ids = torch.tensor([[-1, 0, 0, -1, 1, -1, 2, 2], [-1, 0, -1, 1, 1, -1, -1, -1]])
    adv = per_turn_token_advantage(torch.tensor([2.0, -1.0]), turn_ids, torch.tensor([3, 2]), gamma=0.5)
    # turn t of T gets gamma^(T-t-1) * A when A >= 0: turn 0 -> 0.25*2, turn 1 -> 0.5*2, turn 2 -> 2
    assert adv[0].tolist() == [0.0, 0.5, 0.5, 0.0, 1.0, 0.0, 2.0, 2.0]
    assert adv[1].tolist() == [0.0, -1.0, 0.0, -1.0, -1.0, 0.0, 0.0, 0.0]


def test_loss_aggregation_modes():
    loss = torch.tensor([[1.0, 1.0, 1.0, 1.0], [4.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 1, 1], [1, 0, 0, 0]])
    assert aggregate_loss(loss, mask, "token-mean").item() == pytest.approx(8 / 5)
    assert aggregate_loss(loss, mask, "seq-mean-token-mean").item() == pytest.approx((1 + 4) / 2)
    with pytest.raises(ValueError):
        aggregate_loss(loss, mask, "sum")


def test_ppo_clip_is_asymmetric():
    logp = torch.log(torch.tensor([[2.0, 0.5]]))
    old = torch.zeros(1, 2)
    mask = torch.ones(1, 2)
    pos, _ = ppo_clip_loss(logp, old, torch.ones(1, 2), mask, clip_low=0.2, clip_high=0.28, agg="token-mean")
    # ratio 2.0 clipped to 1.28 for A > 0; ratio 0.5 unclipped (min picks 0.5)
    assert pos.item() == pytest.approx(-(1.28 + 0.5) / 2)
    neg, _ = ppo_clip_loss(logp, old, -torch.ones(1, 2), mask, clip_low=0.2, clip_high=0.28, agg="token-mean")
    # A < 0: min(-2, -1.28) = -2 and min(-0.5, -0.8) = -0.8
    assert neg.item() == pytest.approx((2.0 + 0.8) / 2)


def test_scalar_tier_reward():
    from training.core_algos import scalar_tier_reward

    assert scalar_tier_reward(torch.tensor([1, 2, 3, 0]), first=1.0, later=0.5, fail=-1.0).tolist() == [1.0, 0.5, 0.5, -1.0]


def test_primeecho_hand_computed():
    from training.core_algos import primeecho_reward

    # s_k per turn (M = 3); a pass is s >= 1. Rows: pass at 1; fail then pass at 2; fail, fail, pass at 3.
    s = torch.tensor([[2.0, -1.0, -1.0], [-1.0, 1.5, -1.0], [-1.0, -0.5, 1.0]])
    turns = torch.tensor([1, 2, 3])
    r = primeecho_reward(s, turns, alpha=0.7, beta1=0.2, beta2=0.1)
    assert r[0].item() == pytest.approx(0.7 * 2.0 + 0.3 * 2.0 + 0.2)
    assert r[1].item() == pytest.approx(0.7 * -1.0 + 0.3 * 1.5 + 0.1)
    assert r[2].item() == pytest.approx(0.7 * -1.0 + 0.3 * 1.0)
    # the anchor: with alpha high, deferring correctness to turn 3 is worth less than passing at once
    assert r[2] < r[1] < r[0]
    # turns not taken are ignored even if they hold larger numbers
    assert primeecho_reward(torch.tensor([[-1.0, 5.0]]), torch.tensor([1]), 0.5, 0.0, 0.0).item() == pytest.approx(-1.0)


def test_mirrorpop_catches_the_cancelling_sequence():
    from training.core_algos import mirrorpop_mask

    rollout = torch.zeros(2, 6)
    on_policy = torch.tensor([0.01, -0.02, 0.01, 0.0, 0.02, -0.01])
    cancelling = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])  # signed mean 0, every token far off
    logp = torch.stack([on_policy, cancelling])
    mask = torch.ones(2, 6)
    assert mirrorpop_mask(logp, rollout, mask, delta=0.5).tolist() == [True, False]
    assert ((logp - rollout) * mask).mean(dim=-1).abs().max() < 0.5  # the signed mean would have kept both
    # tokens outside the mask do not count
    masked = torch.tensor([[1.0, 1.0, 1.0, 1.0, 1.0, 1.0]])
    assert mirrorpop_mask(masked * 5, torch.zeros(1, 6), torch.zeros(1, 6), delta=0.5).tolist() == [True]


def test_aggregate_loss_normaliser_adds_micro_batches_up():
    loss = torch.tensor([[1.0, 3.0], [2.0, 0.0], [5.0, 5.0]])
    mask = torch.tensor([[1, 1], [1, 0], [1, 1]])
    whole = aggregate_loss(loss, mask, "seq-mean-token-mean")
    parts = aggregate_loss(loss[:2], mask[:2], "seq-mean-token-mean", normalizer=3) + \
        aggregate_loss(loss[2:], mask[2:], "seq-mean-token-mean", normalizer=3)
    assert parts.item() == pytest.approx(whole.item())
    whole_tok = aggregate_loss(loss, mask, "token-mean")
    parts_tok = aggregate_loss(loss[:1], mask[:1], "token-mean", normalizer=5) + \
        aggregate_loss(loss[1:], mask[1:], "token-mean", normalizer=5)
    assert parts_tok.item() == pytest.approx(whole_tok.item())
