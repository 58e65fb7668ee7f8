"""RL machinery on a real tiny Qwen2 model: the trainer's accumulation and MirrorPop, the BDR buffer,
reward selection, and clear errors for missing optional engines."""

import copy
import importlib.util
import random

import pytest
import torch

from schemas.config import LeapRLConfig, ModelConfig, PolicyOptimConfig, RewardConfig
from schemas.records import Problem, Verdict, VerdictCategory
from training.model import build_model, train_tokenizer
from training.rl import PolicyTrainer, RepairBuffer, leap_rewards
from training.rollout import Generation, Rollout, Task, TurnRecord


@pytest.fixture(scope="module")
def tiny():
    texts = ["torch::Tensor forward(torch::Tensor x) { return x; }", "def forward(self, x):\n    return x\n"] * 4
    tokenizer = train_tokenizer(texts, 300)
    cfg = ModelConfig(vocab_size=300, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=256)
    return build_model(cfg, tokenizer, seed=0), tokenizer


def _batch(seed: int = 0, n: int = 6, length: int = 20):
    g = torch.Generator().manual_seed(seed)
    sequences = [torch.randint(3, 300, (length - i,), generator=g).tolist() for i in range(n)]
    advantages = [torch.randn(len(s), generator=g) for s in sequences]
    masks = [torch.arange(len(s)) >= 5 for s in sequences]  # a 5-token "prompt" per sequence
    return sequences, advantages, masks


@pytest.mark.parametrize("agg", ["seq-mean-token-mean", "token-mean"])
def test_gradient_accumulation_equals_one_big_batch(tiny, agg):
    model, tokenizer = tiny
    sequences, advantages, masks = _batch()
    results = []
    for micro in (1, 6):
        m = copy.deepcopy(model)
        cfg = PolicyOptimConfig(micro_batch_size=micro, loss_agg=agg, grad_clip=1e9, mirrorpop={"enabled": False})
        trainer = PolicyTrainer(m, cfg, tokenizer.pad_token_id)
        # plain SGD makes the update the gradient itself (Adam's first step is ~sign(g), noise-sensitive)
        trainer.backend.optimizer = torch.optim.SGD(m.parameters(), lr=1.0)
        stats = trainer.update(sequences, advantages, masks)
        assert stats["optimizer_steps"] == 1
        results.append((m, stats["loss"]))
    (a, loss_a), (b, loss_b) = results
    assert loss_a == pytest.approx(loss_b, rel=1e-4, abs=1e-6)
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert torch.allclose(pa, pb, atol=1e-5)


def test_mini_batches_make_several_optimizer_steps(tiny):
    model, tokenizer = tiny
    sequences, advantages, masks = _batch()
    cfg = PolicyOptimConfig(micro_batch_size=2, mini_batch_size=3, ppo_epochs=2, mirrorpop={"enabled": False})
    stats = PolicyTrainer(copy.deepcopy(model), cfg, tokenizer.pad_token_id).update(sequences, advantages, masks)
    assert stats["optimizer_steps"] == 4  # 2 mini-batches x 2 epochs


def test_target_kl_stops_a_steps_updates_once_the_policy_has_moved_that_far(tiny):
    """PPO's early stop: past 1.5 x target_kl from the step's old policy, the step's remaining updates are skipped
    whole — the weights are those of the updates before it, not a half-accumulated gradient's."""
    model, tokenizer = tiny
    sequences, advantages, masks = _batch()
    advantages = [a * 50 for a in advantages]  # one Adam step at lr 0.05 moves every log-prob far

    def trained(**cfg):
        m = copy.deepcopy(model)
        stats = PolicyTrainer(m, PolicyOptimConfig(micro_batch_size=3, learning_rate=0.05, mirrorpop={"enabled": False},
                                                   **cfg), tokenizer.pad_token_id).update(sequences, advantages, masks)
        return m, stats

    unbounded, every = trained(mini_batch_size=3, ppo_epochs=2)
    assert every["optimizer_steps"] == 4 and every["stopped_early"] == 0.0
    assert every["approx_kl"] > 1.5 * 1e-3  # the moves the bound below is meant to stop
    bounded, stopped = trained(mini_batch_size=3, ppo_epochs=2, target_kl=1e-3)
    assert stopped["optimizer_steps"] == 1 and stopped["stopped_early"] == 1.0
    assert stopped["approx_kl_checked"] > 1.5 * 1e-3  # what stopped it, in the step's metrics
    only_first, _ = trained(mini_batch_size=3, ppo_epochs=1, target_kl=1e-3)
    ref = copy.deepcopy(model)  # one update on the first mini-batch's rollouts, nothing after
    PolicyTrainer(ref, PolicyOptimConfig(micro_batch_size=3, learning_rate=0.05, mirrorpop={"enabled": False}),
                  tokenizer.pad_token_id).update(sequences[:3], advantages[:3], masks[:3])
    for pb, po, pr, pu in zip(bounded.parameters(), only_first.parameters(), ref.parameters(), unbounded.parameters()):
        assert torch.equal(pb, pr) and torch.equal(po, pr)  # exactly the first mini-batch's update
    assert any(not torch.equal(pu, pr) for pu, pr in zip(unbounded.parameters(), ref.parameters()))
    _, loose = trained(mini_batch_size=3, ppo_epochs=2, target_kl=1e6)
    assert loose["optimizer_steps"] == 4 and loose["stopped_early"] == 0.0
    assert 0.0 < loose["approx_kl_checked"] <= 1.5 * 1e6 and every["approx_kl_checked"] == 0.0  # no bound: unmeasured


def test_trainer_mirrorpop_drops_off_policy_sequences(tiny):
    model, tokenizer = tiny
    sequences, advantages, masks = _batch(n=4)
    trainer = PolicyTrainer(copy.deepcopy(model), PolicyOptimConfig(mirrorpop={"enabled": True, "delta": 0.5}),
                            tokenizer.pad_token_id)
    own = [torch.cat([torch.zeros(1), lp]) for lp in trainer._scored(trainer.model, sequences)]
    drifted = [lp.clone() for lp in own]
    drifted[1][1::2] += 2.0  # cancelling drift on sequence 1: +2 on odd, -2 on even positions
    drifted[1][2::2] -= 2.0
    stats = trainer.update(sequences, advantages, masks, rollout_logprobs=drifted)
    assert stats["mirrorpop_mask_rate"] == pytest.approx(1 / 4)
    stats = trainer.update(sequences, advantages, masks, rollout_logprobs=own)
    assert stats["mirrorpop_mask_rate"] == 0.0


def _verdict(passed: bool, category=None) -> Verdict:
    cat = VerdictCategory.passed if passed else (category or VerdictCategory.wrong_output)
    return Verdict(candidate_id="c", problem_id="p", compiled=True, correct=passed, legal=True,
                   pass_fraction=1.0 if passed else 0.0, category=cat, speedup_vs_eager=2.0 if passed else None,
                   detail="mismatch")


def _rollout(problem: Problem, group: int, index: int, outcomes: list[bool]) -> Rollout:
    from schemas.records import Candidate

    r = Rollout(Task(problem), group, index, [1, 2], [-1, -1], [0.0, 0.0])
    for t, ok in enumerate(outcomes):
        cand = Candidate(id=f"c{group}{index}{t}", problem_id=problem.id, source="x")
        r.turns.append(TurnRecord(cand, _verdict(ok), Generation([5], f"attempt {t}", True, [0.0])))
    return r


PROBLEM = Problem(id="p", source="test", reference="# ref")


def _group(outcomes_per_rollout):
    return [_rollout(PROBLEM, 0, i, o) for i, o in enumerate(outcomes_per_rollout)]


def test_leap_rewards_follow_the_configured_reward():
    rollouts = _group([[True], [False, True], [False, False, True], [False, False, False]])
    rank = LeapRLConfig(group_size=4, max_turns=3, reward="rank")
    rewards, ranks = leap_rewards(rollouts, rank, RewardConfig(), 1)
    assert ranks == [3, 2, 1, 0]
    assert torch.allclose(rewards[0], torch.tensor([1.0, 1 / 3, -1 / 3, -1.0]))
    scalar = LeapRLConfig(group_size=4, max_turns=3, reward="scalar", scalar_rewards={"first": 1, "later": 0.4, "fail": 0})
    assert leap_rewards(rollouts, scalar, RewardConfig(), 1)[0][0].tolist() == pytest.approx([1.0, 0.4, 0.4, 0.0])
    prime = LeapRLConfig(group_size=4, max_turns=3, reward="primeecho", primeecho={"alpha": 1.0, "beta1": 0.0, "beta2": 0.0})
    first_turn_only = leap_rewards(rollouts, prime, RewardConfig(lam=0.5, nu_max=4.0), 1)[0][0]
    assert first_turn_only.tolist() == pytest.approx([2.0, -1.0, -1.0, -1.0])  # alpha = 1: only s_1 counts
    # MURPHY's preset: the best turn's reward, correctness alone (every pass here is 2x eager: it would earn 2.0)
    murphy = LeapRLConfig(group_size=4, preset="murphy")
    assert leap_rewards(rollouts, murphy, RewardConfig(lam=0.5, nu_max=4.0), 1)[0][0].tolist() == \
        pytest.approx([1.0, 1.0, 1.0, -1.0])


def test_a_group_whose_reference_broke_while_judged_leaves_the_step_whole():
    """A verdict of None (the problem's reference broke while its candidate was judged) takes that rollout's whole
    group out, the groups left renumbered in order: rewards, the DCP gate and the step's trajectories still see
    whole groups of G, and the step's metrics count the groups that stayed."""
    from training.rl import Sampled, step_result
    from training.rollout import without_unjudgeable

    problems = [Problem(id=f"p{g}", source="test", reference="# ref") for g in range(3)]
    rollouts = [_rollout(problems[g], g, i, [g == 2 or i == 0]) for g in range(3) for i in range(2)]
    verdicts = {id(r): (None if r.group == 1 and r.index == 1 else r.turns[0].verdict) for r in rollouts}
    kept = without_unjudgeable(rollouts, verdicts)
    assert [(r.problem.id, r.group, r.index) for r in kept] == [("p0", 0, 0), ("p0", 0, 1), ("p2", 1, 0), ("p2", 1, 1)]
    assert without_unjudgeable(kept, {id(r): r.turns[0].verdict for r in kept}) == kept  # nothing None: unchanged
    config = LeapRLConfig(group_size=2, max_turns=1, reward="rank")
    rewards, ranks = leap_rewards(kept, config, RewardConfig(), len(kept) // config.group_size)
    assert rewards.shape == (2, 2)
    result = step_result(Sampled(kept, rewards, rewards - rewards.mean(-1, keepdim=True), ranks, 0.0, 0.0),
                         {"loss": 0.0}, 0.0, config, step=0, run_key="run")
    assert [tr.problem_id for tr in result.trajectories] == ["p0", "p0", "p2", "p2"]
    assert len({tr.group_id for tr in result.trajectories}) == 2
    assert result.metrics["dcp/activated_groups_pct"] == 0.0 and result.metrics["pass_rate/turn_1"] == 0.75
    # p0's group is split (one passes), p2's passed whole: one reward, no gradient from it
    assert (result.metrics["groups/all_passed"], result.metrics["groups/all_failed"],
            result.metrics["groups/one_reward"]) == (0.5, 0.0, 0.5)


def test_group_signal_metrics_count_groups_that_cannot_teach():
    """Three groups of two: split (1 of 2 passes), all failed, all passed but with different speed rewards —
    the last teaches (its rewards differ) though every rollout passed."""
    from training.rl import group_signal_metrics

    rollouts = [_rollout(PROBLEM, g, i, [ok]) for g, oks in enumerate([(True, False), (False, False), (True, True)])
                for i, ok in enumerate(oks)]
    rewards = torch.tensor([[1.0, -1.0], [-1.0, -1.0], [1.5, 1.2]])
    assert group_signal_metrics(rollouts, rewards, 2) == pytest.approx(
        {"groups/all_passed": 1 / 3, "groups/all_failed": 1 / 3, "groups/one_reward": 1 / 3})


def test_repair_buffer_is_a_bounded_fifo_fed_by_all_failed_groups():
    other = Problem(id="q", source="test", reference="# q")
    buffer = RepairBuffer(capacity=2)
    mixed = [_rollout(PROBLEM, 0, 0, [True]), _rollout(PROBLEM, 0, 1, [False])]
    dead = [_rollout(other, 1, 0, [False]), _rollout(other, 1, 1, [False, False])]
    assert buffer.push_failures(mixed + dead, group_size=2) == 1  # only the all-failed group
    assert len(buffer) == 1 and buffer.items[0]["problem_id"] == "q"
    assert "wrong_output" in buffer.items[0]["feedback"] and buffer.items[0]["completion"] == "attempt 0"
    for _ in range(3):
        buffer.push_failures(dead, group_size=2)
    assert len(buffer) == 2  # bounded
    by_id = {"p": PROBLEM, "q": other}
    tasks = buffer.draw([PROBLEM, PROBLEM, PROBLEM], p_buf=1.0, rng=random.Random(0), by_id=by_id)
    assert [t.is_repair for t in tasks] == [True, True, False] and len(buffer) == 0
    messages = tasks[0].messages("cpu")
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    saved = RepairBuffer(2)
    saved.load([{"problem_id": "q", "completion": "c", "feedback": "f"}])
    assert saved.draw([PROBLEM], 0.0, random.Random(0), by_id)[0].is_repair is False  # p_buf = 0: never drawn


@pytest.mark.skipif(importlib.util.find_spec("deepspeed") is None, reason="needs the `gpu` extra's deepspeed")
@pytest.mark.parametrize("stage", [2, 3])
def test_deepspeed_zero_accumulates_like_one_big_batch_and_resumes(tiny, stage, tmp_path):
    """ZeRO-2/3 through DeepSpeed (its CPU accelerator here, CUDA on a GPU box): micro-batches of 1 and of 6
    give the same update, and a resumed trainer (weights, then optimizer state) continues identically."""
    model, tokenizer = tiny
    sequences, advantages, masks = _batch()
    cfg = lambda micro: PolicyOptimConfig(micro_batch_size=micro, train_engine="deepspeed", zero_stage=stage,
                                          grad_clip=1e9, mirrorpop={"enabled": False})
    trainers = [PolicyTrainer(copy.deepcopy(model), cfg(micro), tokenizer.pad_token_id) for micro in (1, 6)]
    stats = [t.update(sequences, advantages, masks) for t in trainers]
    assert stats[0]["optimizer_steps"] == stats[1]["optimizer_steps"] == 1
    assert stats[0]["loss"] == pytest.approx(stats[1]["loss"], rel=1e-4, abs=1e-6)
    params = [{n: p.detach().clone() for n, p in _full_parameters(t)} for t in trainers]
    moved = max((params[0][n] - p.detach()).abs().max().item() for n, p in model.named_parameters())
    assert moved > 1e-5  # the update did something
    initial = dict(model.named_parameters())
    for name in params[0]:  # Adam's first step is ~lr * sign(g): near-zero gradients may flip; compare updates
        update = [params[k][name] - initial[name].detach() for k in (0, 1)]
        assert (update[0] - update[1]).norm() <= 0.02 * update[0].norm() + 1e-7, name
    # resume the way tasks/rl.py does: policy weights first, then a trainer, then its optimizer state
    resumed_model = copy.deepcopy(model)
    resumed_model.load_state_dict(dict(_full_parameters(trainers[1])), strict=False)  # lm_head is tied
    trainers[1].save(tmp_path / "trainer")
    resumed = PolicyTrainer(resumed_model, cfg(6), tokenizer.pad_token_id)
    resumed.load(tmp_path / "trainer")
    assert resumed.updates == 1
    batch = _batch(seed=1)
    trainers[1].update(*batch)
    resumed.update(*batch)
    for (name, p), (_, q) in zip(_full_parameters(trainers[1]), _full_parameters(resumed)):
        assert torch.allclose(p, q, atol=1e-6), name


def _full_parameters(trainer):
    """Named parameters, gathered when ZeRO-3 partitions them."""
    import deepspeed

    params = list(trainer.model.named_parameters())
    if trainer.config.zero_stage == 3:
        with deepspeed.zero.GatheredParameters([p for _, p in params]):
            return [(n, p.detach().clone()) for n, p in params]
    return params


@pytest.mark.skipif(importlib.util.find_spec("deepspeed") is not None, reason="deepspeed is installed")
def test_missing_deepspeed_is_one_clear_error(tiny):
    model, tokenizer = tiny
    with pytest.raises(RuntimeError, match=r"pip install 'kerneldojo\[gpu\]'"):
        PolicyTrainer(model, PolicyOptimConfig(train_engine="deepspeed"), tokenizer.pad_token_id)


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed")
def test_missing_vllm_is_one_clear_error(tiny):
    from training.rollout import VLLMRolloutEngine

    with pytest.raises(RuntimeError, match=r"pip install 'kerneldojo\[gpu\]'"):
        VLLMRolloutEngine("/nonexistent", tiny[1])


def test_an_rl_step_leaves_out_a_problem_whose_reference_cannot_run(tmp_path):
    """A training problem whose reference fails here (out of memory on a shared GPU, a crash) takes its group out
    of the step, said in the log and the summary; it no longer ends the stage. A step with nothing left is one
    clear error."""
    from schemas.config import load_config
    from tasks.common import stage_run
    from tasks.rl import _Steps
    from tests.kernels import REFERENCE, problem
    from training.checkpoint import RLState

    good = problem()
    bad_source = REFERENCE.replace("return torch.sigmoid(x) * self.w", "raise RuntimeError('reference broken')")
    bad = Problem(id=Problem.make_id(bad_source), source="test", reference=bad_source, name="broken")
    config = load_config(None, [f"home={tmp_path}", "warmup_rl.prompts_per_step=2", "verifier.trials=2",
                                "verifier.run_timeout_s=10"])
    with stage_run("warmup_rl", config, []) as ctx:
        tasks = _Steps("warmup_rl", ctx, [good, bad], random.Random(0), RLState(-1)).plan(0)
        assert [t.problem.id for t in tasks] == [good.id]
        assert "reference broken" in ctx.summary["left_out"]["broken"]
        with pytest.raises(RuntimeError, match="none of its 1 problems has a reference that runs here; first: .*"
                                               "reference broken"):
            _Steps("warmup_rl", ctx, [bad], random.Random(0), RLState(-1)).plan(0)


def test_frontier_prompts_come_from_what_the_policy_s_lineage_passed_sometimes(tmp_path):
    """`prompts: frontier`: the RL stage orders its training problems by the first-turn verdicts of the stages that
    sampled its policy (here an RFT run's, in the warehouse): passed sometimes (nearest half first), then never
    tried, then always passed or always failed; repair turns do not count. The steps then take them in that
    order, and the summary says how many of each there were."""
    from schemas.config import load_config
    from schemas.records import Candidate
    from tasks.common import stage_run
    from tasks.rl import _frontier
    from training.rl import sample_problems

    problems = [Problem(id=f"p{i}", source="test", reference=f"# {i}", name=f"p{i}") for i in range(6)]
    # p0: 1 of 4, p1: 2 of 4, p2: 4 of 4, p3: 0 of 4 (a later turn passed: not a first-turn pass), p4, p5: never
    outcomes = {"p0": [1, 0, 0, 0], "p1": [1, 1, 0, 0], "p2": [1, 1, 1, 1], "p3": [0, 0, 0, 0]}
    config = load_config(None, [f"home={tmp_path}", "warmup_rl.prompts=frontier", "warmup_rl.prompts_per_step=2"])
    with stage_run("rft", config, []) as rft:
        cands, verdicts = [], []
        for pid, passes in outcomes.items():
            for i, ok in enumerate(passes):
                cands.append(Candidate(id=f"{pid}-{i}", problem_id=pid, source="x", turn=0))
                verdicts.append((_verdict(bool(ok)).model_copy(update={"candidate_id": f"{pid}-{i}",
                                                                          "problem_id": pid}), 0.0))
        cands.append(Candidate(id="p3-repair", problem_id="p3", source="y", turn=1))
        verdicts.append((_verdict(True).model_copy(update={"candidate_id": "p3-repair", "problem_id": "p3"}), 1.0))
        rft.warehouse.add_candidates(rft.run_id, cands)
        rft.warehouse.add_verdicts(rft.run_id, verdicts)
    assert rft.warehouse.first_turn_passes([rft.run_id]) == {"p0": (1, 4), "p1": (2, 4), "p2": (4, 4), "p3": (0, 4)}
    with stage_run("warmup_rl", config, [rft.run_id]) as ctx:
        ordered = _frontier(ctx, problems, rft.run_id)
        names = [p.id for p in ordered]
        assert names[:2] == ["p1", "p0"] and set(names[2:4]) == {"p4", "p5"} and set(names[4:]) == {"p2", "p3"}
        assert ctx.summary["prompts"] == {"from_runs": [rft.run_id], "frontier": 2, "never_tried": 2,
                                          "always_passed": 1, "always_failed": 1}
        first_step = sample_problems(ordered, 2, 0, config.seed, shuffle=False)
        assert [p.id for p in first_step] == ["p1", "p0"]


def test_step_metrics_say_how_long_the_policy_writes_and_how_often_the_length_limit_cuts_it():
    from training.rl import _common_metrics

    rollouts = _group([[True], [False, True]])
    rollouts[1].turns[0].generation = Generation([5] * 7, "cut", False, [0.0] * 7)  # ran into max_new_tokens
    metrics = _common_metrics(rollouts, max_turns=2)
    assert metrics["response_length/mean"] == pytest.approx((1 + 7 + 1) / 3)
    assert metrics["response_length/clip_ratio"] == pytest.approx(1 / 3)
