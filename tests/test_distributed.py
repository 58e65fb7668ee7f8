"""Data-parallel training in ranks the stage starts itself (torch's elastic launcher), on the CPU's gloo backend:
two ranks train the same model as one process with the same global batch."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from schemas.config import ModelConfig
from schemas import load_config
from schemas.config import ConfigError
from training.distributed import DistributedError, check_split, check_world, launch
from training.model import build_model, train_tokenizer
from training.sft import SFTExample, train_sft


def _examples() -> list[SFTExample]:
    bodies = ["out[i] = a[i] + b[i];", "out[i] = a[i] > 0 ? a[i] : 0;", "out[i] = -a[i] * b[i] + 1.0f;",
              "float v = a[i]; out[i] = v * v;"]
    return [SFTExample([{"role": "user", "content": f"Write kernel {k}."}],
                       f"__global__ void k{k}(const float* a, const float* b, float* out) {{ {body} }}")
            for k, body in enumerate(bodies)]


def _trained(processes: int, metrics: list, steps: list):
    examples = _examples()
    tokenizer = train_tokenizer([m["content"] for e in examples for m in e.messages] + [e.completion for e in examples],
                                300)
    model = build_model(ModelConfig(vocab_size=300, hidden_size=32, intermediate_size=64, num_attention_heads=2,
                                    num_key_value_heads=1), tokenizer, seed=0)
    initial = {name: t.clone() for name, t in model.state_dict().items()}
    result = train_sft(model, tokenizer, examples, epochs=3, learning_rate=3e-3, batch_size=4, max_length=256,
                       processes=processes, on_metrics=lambda m, s: metrics.append((s, m)),
                       on_step=lambda: steps.append(1))
    return model, result, initial


def test_two_gloo_ranks_train_as_one_process_with_the_same_global_batch():
    # every step's batch is the whole set (4 examples, batch 4), so the shards' order cannot matter: the two
    # ranks' averaged gradients must move the weights exactly as one process does
    one_metrics, one_steps, two_metrics, two_steps = [], [], [], []
    one, one_result, _ = _trained(1, one_metrics, one_steps)
    two, two_result, initial = _trained(2, two_metrics, two_steps)
    assert one_result.steps == two_result.steps == 3 and len(two_steps) == 3  # progress came back from rank 0
    losses = lambda history: [m["loss"] for _, m in history if "loss" in m]  # noqa: E731
    assert len(losses(two_metrics)) == 3, two_metrics  # the loss curve came back through the event queue
    assert losses(two_metrics) == pytest.approx(losses(one_metrics), rel=1e-4)
    assert two_result.final_loss == pytest.approx(one_result.final_loss, rel=1e-4)
    moved = max((two.state_dict()[name] - before).abs().max().item() for name, before in initial.items())
    assert moved > 1e-3  # the ranks' trained weights came back into the stage's model
    for (name, a), b in zip(one.state_dict().items(), two.state_dict().values()):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, msg=name)


def _fails_on_rank_one(events):
    import os

    if os.environ["RANK"] == "1":
        raise ValueError("rank one cannot go on")
    return "done"


def test_a_failing_rank_stops_the_world_with_its_error():
    with pytest.raises(DistributedError, match=r"training rank 1 failed .*ValueError: rank one cannot go on"):
        launch(_fails_on_rank_one, (), 2)


def test_worlds_that_cannot_be_are_one_clear_error():
    with pytest.raises(ConfigError, match="one rank per GPU, and no GPU is visible"):
        check_world(0, "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="ranks on 0 visible GPU"):
            check_world(2, "cuda")
    config = load_config(None, ["distributed.processes=2", "leap_rl.prompts_per_step=3"])
    check_split(config, "warmup_rl", 2)  # 4 prompts a step: whole groups on each rank
    with pytest.raises(ConfigError, match=r"leap_rl.prompts_per_step=3 does not split over distributed.processes=2"):
        check_split(config, "leap_rl", 2)
    with pytest.raises(ConfigError, match=r"rollout_engine=vllm samples in one process"):
        check_split(load_config(None, ["warmup_rl.rollout_engine=vllm"]), "warmup_rl", 2)
    model_examples = _examples()
    tokenizer = train_tokenizer([e.completion for e in model_examples], 300)
    model = build_model(ModelConfig(vocab_size=300, hidden_size=32, intermediate_size=64, num_attention_heads=2,
                                    num_key_value_heads=1), tokenizer, seed=0)
    with pytest.raises(ConfigError, match="a batch of 3 does not split over 2 ranks"):
        train_sft(model, tokenizer, model_examples, epochs=1, learning_rate=1e-3, batch_size=3, max_length=256,
                  processes=2)


def _ppo_setup(*overrides: str):
    from schemas import load_config

    config = load_config(None, ["leap_rl.kl_coef=0.5", "leap_rl.ppo_epochs=2", "leap_rl.loss_agg=token-mean",
                                "leap_rl.micro_batch_size=2",
                                "leap_rl.mini_batch_size=0", "leap_rl.learning_rate=1e-2", *overrides]).leap_rl
    generator = torch.Generator().manual_seed(3)
    sequences = [torch.randint(1, 300, (int(n),), generator=generator).tolist() for n in (9, 14, 6, 11, 12, 7, 10, 8)]
    advantages = [torch.randn(len(s), generator=generator) for s in sequences]
    masks = [torch.arange(len(s)) >= 3 for s in sequences]  # a prompt of 3 tokens
    return config, sequences, advantages, masks


def _ppo_model():
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    return Qwen2ForCausalLM(Qwen2Config(vocab_size=300, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                        num_attention_heads=2, num_key_value_heads=1))


def _ppo_rank(overrides: tuple[str, ...], rank_0_trains_no_token: bool, events):
    from training.distributed import rank_info
    from training.rl import PolicyTrainer

    torch.distributed.init_process_group("gloo")
    me = rank_info()
    config, sequences, advantages, masks = _ppo_setup(*overrides)
    if rank_0_trains_no_token and me.rank == 0:
        masks = [torch.zeros_like(m) for m in masks]  # its own approx_kl stays 0: alone, it would never stop
    share = len(sequences) // me.world_size
    mine = slice(me.rank * share, (me.rank + 1) * share)
    trainer = PolicyTrainer(_ppo_model(), config, pad_token_id=0)
    stats = trainer.update(sequences[mine], advantages[mine], masks[mine])
    return stats, ({k: v.clone() for k, v in trainer.model.state_dict().items()} if me.is_main else None)


def test_a_ppo_update_on_two_ranks_is_one_process_update_on_the_whole_batch():
    """Each rank holds half the rollouts (of different lengths, token-mean loss, a KL term, two PPO epochs): the normaliser summed
    over ranks and DDP's averaged gradients move the weights as one process does on all of them."""
    from training.rl import PolicyTrainer, merge_ppo_stats

    config, sequences, advantages, masks = _ppo_setup()
    one = PolicyTrainer(_ppo_model(), config, pad_token_id=0)
    one_stats = one.update(sequences, advantages, masks)
    (stats0, weights), (stats1, _) = launch(_ppo_rank, ((), False), 2)
    merged = merge_ppo_stats([stats0, stats1])
    assert merged["loss"] == pytest.approx(one_stats["loss"], rel=1e-4, abs=1e-6)
    assert merged["optimizer_steps"] == one_stats["optimizer_steps"] == 2  # one per PPO epoch
    for name, tensor in one.model.state_dict().items():
        if name.endswith("k_proj.bias"):  # its gradient is zero (softmax ignores a shift) and Adam steps on the noise
            continue
        torch.testing.assert_close(weights[name], tensor, rtol=1e-4, atol=1e-6, msg=name)


def test_ranks_stop_a_steps_updates_at_the_same_mini_batch_on_their_mean_kl():
    """target_kl on two ranks: each sees its own rollouts' approx_kl, the mean over ranks decides, and both stop
    at the same mini-batch (one going on alone would wait in DDP's all-reduce forever)."""
    from training.rl import merge_ppo_stats

    # 2 mini-batches x 2 epochs; rank 1's policy moves, rank 0's tokens are all prompt (its own approx_kl is 0)
    stop = ("leap_rl.mini_batch_size=4", "leap_rl.target_kl=1e-9")
    (stats0, _), (stats1, _) = launch(_ppo_rank, (stop, True), 2)
    assert stats0["optimizer_steps"] == stats1["optimizer_steps"] == 1
    assert stats0["stopped_early"] == stats1["stopped_early"] == 1.0
    (stats0, _), (stats1, _) = launch(_ppo_rank, (("leap_rl.mini_batch_size=4", "leap_rl.target_kl=1e9"), False), 2)
    assert merge_ppo_stats([stats0, stats1])["optimizer_steps"] == 4


def _ppo_rank_deepspeed(zero_stage: int, events):  # launched with its stage as an argument
    import deepspeed

    from training.distributed import rank_info
    from training.rl import PolicyTrainer

    config, sequences, advantages, masks = _ppo_setup()
    config = config.model_copy(update={"train_engine": "deepspeed", "zero_stage": zero_stage})
    me = rank_info()
    share = len(sequences) // me.world_size
    mine = slice(me.rank * share, (me.rank + 1) * share)
    trainer = PolicyTrainer(_ppo_model(), config, pad_token_id=0)
    stats = trainer.update(sequences[mine], advantages[mine], masks[mine])
    params = list(trainer.model.named_parameters())
    with deepspeed.zero.GatheredParameters([p for _, p in params], enabled=zero_stage == 3):
        weights = {name: p.detach().clone() for name, p in params}
    return stats, weights if me.is_main else None


@pytest.mark.skipif(importlib.util.find_spec("deepspeed") is None, reason="needs the `gpu` extra's deepspeed")
@pytest.mark.parametrize("zero_stage", [2, 3])
def test_deepspeed_zero_on_two_ranks_updates_like_one_process(zero_stage):
    """ZeRO-2/3 over 2 gloo ranks (DeepSpeed's CPU accelerator; NCCL on GPUs), each with half the rollouts, against
    one process on the whole batch: the same loss and the same update."""
    from training.rl import PolicyTrainer, merge_ppo_stats

    config, sequences, advantages, masks = _ppo_setup()
    model = _ppo_model()
    initial = {name: p.detach().clone() for name, p in model.named_parameters()}
    one = PolicyTrainer(model, config, pad_token_id=0)
    one_stats = one.update(sequences, advantages, masks)
    (stats0, weights), (stats1, _) = launch(_ppo_rank_deepspeed, (zero_stage,), 2)
    assert merge_ppo_stats([stats0, stats1])["loss"] == pytest.approx(one_stats["loss"], rel=1e-4, abs=1e-6)
    for name, p in one.model.named_parameters():
        if name.endswith("k_proj.bias"):  # a zero gradient: Adam steps on the noise
            continue
        update = [weights[name] - initial[name], p.detach() - initial[name]]
        assert (update[0] - update[1]).norm() <= 0.02 * update[1].norm() + 1e-7, name


@pytest.mark.skipif(importlib.util.find_spec("deepspeed") is None, reason="needs the `gpu` extra's deepspeed")
@pytest.mark.parametrize("zero_stage", [2, 3])
def test_sft_with_deepspeed_zero_on_two_ranks_trains_like_one_process(zero_stage):
    """HF Trainer's DeepSpeed integration at ZeRO-2/3 over 2 gloo ranks: the same loss curve as one plain process
    (the whole batch each step, so the shards' order cannot matter), and the trained weights come back whole."""
    one_metrics, two_metrics = [], []
    one, one_result, _ = _trained(1, one_metrics, [])
    examples = _examples()
    tokenizer = train_tokenizer([m["content"] for e in examples for m in e.messages] + [e.completion for e in examples],
                                300)
    model = build_model(ModelConfig(vocab_size=300, hidden_size=32, intermediate_size=64, num_attention_heads=2,
                                    num_key_value_heads=1), tokenizer, seed=0)
    result = train_sft(model, tokenizer, examples, epochs=3, learning_rate=3e-3, batch_size=4, max_length=256,
                       processes=2, deepspeed_zero=zero_stage, on_metrics=lambda m, s: two_metrics.append((s, m)))
    losses = lambda history: [m["loss"] for _, m in history if "loss" in m]  # noqa: E731
    assert result.steps == one_result.steps == 3
    assert losses(two_metrics) == pytest.approx(losses(one_metrics), rel=1e-3)
    for (name, a), b in zip(one.state_dict().items(), model.state_dict().values()):
        if name.endswith("k_proj.bias"):  # a zero gradient: Adam steps on the noise
            continue
        assert b.shape == a.shape, name  # gathered, not a ZeRO-3 partition
        torch.testing.assert_close(b, a, rtol=1e-3, atol=1e-4, msg=name)


def _sleeps(events):
    import time

    time.sleep(60)


class _Stopped(Exception):
    pass


def test_a_signal_during_training_reaches_the_process_own_handler_and_stops_the_ranks():
    """torch's launcher swaps in its own SIGTERM handler while ranks run; the process's (the CLI's: an orderly stop,
    the stage marked killed) must still get the signal, and be in place afterwards."""
    import os
    import signal
    import threading

    import psutil

    def stop(signum, frame):
        raise _Stopped(signum)

    before = signal.signal(signal.SIGTERM, stop)
    try:
        me = psutil.Process()
        timer = threading.Timer(8.0, lambda: os.kill(os.getpid(), signal.SIGTERM))
        timer.start()
        with pytest.raises(_Stopped):
            launch(_sleeps, (), 2)
        assert signal.getsignal(signal.SIGTERM) is stop
        children = [c for c in me.children(recursive=True) if "spawn" in " ".join(c.cmdline())
                    and "resource_tracker" not in " ".join(c.cmdline())]
        assert not any(c.is_running() and c.status() != psutil.STATUS_ZOMBIE for c in children)
    finally:
        signal.signal(signal.SIGTERM, before)
