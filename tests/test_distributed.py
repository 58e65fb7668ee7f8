"""Data-parallel training in ranks the stage starts itself (torch's elastic launcher), on the CPU's gloo backend:
two ranks train the same model as one process with the same global batch."""

from __future__ import annotations

import pytest
import torch

from schemas.config import ModelConfig
from training.distributed import DistributedError, check_world, launch
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
    with pytest.raises(DistributedError, match="one rank per GPU, and no GPU is visible"):
        check_world(0, "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(DistributedError, match="ranks on 0 visible GPU"):
            check_world(2, "cuda")
    model_examples = _examples()
    tokenizer = train_tokenizer([e.completion for e in model_examples], 300)
    model = build_model(ModelConfig(vocab_size=300, hidden_size=32, intermediate_size=64, num_attention_heads=2,
                                    num_key_value_heads=1), tokenizer, seed=0)
    with pytest.raises(DistributedError, match="a batch of 3 does not split over 2 ranks"):
        train_sft(model, tokenizer, model_examples, epochs=1, learning_rate=1e-3, batch_size=3, max_length=256,
                  processes=2)
