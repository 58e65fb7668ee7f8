"""A saved policy comes back exactly: the same tokens for the same text, the same logits."""

import pytest
import torch

from schemas.config import GenerationConfig, ModelConfig
from training.model import build_model, load_policy, save_policy, train_tokenizer
from training.rollout import HFRolloutEngine

TEXT = "torch::Tensor forward(torch::Tensor x0) {\n  auto v0 = kd_map1<float, float>(x0, torch::kFloat32);\n  return v0;\n}\n"


def test_a_saved_policy_tokenizes_and_scores_as_it_was_trained(tmp_path):
    """The line-merging tokenizer must survive the checkpoint: loaded through AutoTokenizer it is re-split by
    Qwen2's pre-tokenizer, and the policy then reads token sequences it never trained on (its held-out
    completions were garbage until this was caught)."""
    tokenizer = train_tokenizer([TEXT] * 40 + ["hello world\n"] * 10, 400)
    model = build_model(ModelConfig(vocab_size=400, hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                                    num_attention_heads=2, num_key_value_heads=1), tokenizer, seed=0)
    loaded_model, loaded_tokenizer = load_policy(save_policy(model, tokenizer, tmp_path / "policy"))
    ids = tokenizer(TEXT)["input_ids"]
    assert loaded_tokenizer(TEXT)["input_ids"] == ids and len(ids) <= 8  # whole lines are single tokens
    assert loaded_tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False) == \
        tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False)
    with torch.no_grad():
        assert torch.equal(model(torch.tensor([ids])).logits, loaded_model(torch.tensor([ids])).logits)


def test_a_policy_crosses_the_box_wall_in_parts_and_comes_back_as_its_bfloat16_self(tmp_path):
    """benchmarks/policy_parcel: a checkpoint as parts of at most --part-mib (a device call returns 16 MiB a
    file) with bfloat16 weights, unpacked into float32 weights equal to the bfloat16 ones, scoring as the
    bfloat16-rounded policy does; a part altered or missing is one clear error and writes nothing."""
    import json

    from benchmarks.policy_parcel import ParcelError, main, pack, unpack

    tokenizer = train_tokenizer([TEXT] * 40 + ["hello world\n"] * 10, 400)
    model = build_model(ModelConfig(vocab_size=400, hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                                    num_attention_heads=2, num_key_value_heads=1), tokenizer, seed=0)
    policy = save_policy(model, tokenizer, tmp_path / "policy")
    manifest = pack(policy, tmp_path / "out", "warm", part_mib=0.02)
    spec = json.loads(manifest.read_text())
    weights = sum(p.stat().st_size for p in policy.glob("*.safetensors"))
    assert len(spec["parts"]) > 3 and all(p["bytes"] <= 0.02 * 2**20 for p in spec["parts"])
    assert spec["bytes"] < 0.6 * weights + 2**20  # half the weights' bytes, and the tokenizer
    back, _ = load_policy(unpack(manifest, tmp_path / "back"))
    packed = model.state_dict()
    for name, weight in back.state_dict().items():
        assert weight.dtype == torch.float32 and torch.equal(weight, packed[name].to(torch.bfloat16).float()), name
    ids = torch.tensor([tokenizer(TEXT)["input_ids"]])
    with torch.no_grad():
        assert torch.allclose(back(ids).logits, model(ids).logits, atol=0.02)

    last = tmp_path / "out" / spec["parts"][-1]["file"]
    last.write_bytes(last.read_bytes()[:-1] + b"x")
    with pytest.raises(ParcelError, match=f"part {last.name} is not the one packed"):
        unpack(manifest, tmp_path / "never")
    last.unlink()
    with pytest.raises(SystemExit, match=f"part {last.name} is missing"):
        main(["unpack", str(manifest), str(tmp_path / "never")])
    assert not (tmp_path / "never").exists() and not (tmp_path / "never.partial").exists()


@pytest.mark.gpu
def test_generation_on_a_gpu_leaves_it_to_the_verifier():
    """The verifier's sandboxes share the policy's GPU. A 512-sample batch's logits and KV cache, kept in torch's
    caching allocator after `generate`, held all 139 GiB of an H200 and the next reference ran out of memory
    (seed 0 of configs/mini.yaml, 2026-12-02): a batch's memory goes back to the driver when generation ends."""
    tokenizer = train_tokenizer([TEXT] * 40 + ["hello world\n"] * 10, 400)
    model = build_model(ModelConfig(vocab_size=400, hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                                    num_attention_heads=2, num_key_value_heads=1), tokenizer, seed=0).to("cuda")
    engine = HFRolloutEngine(model, tokenizer, "cuda")
    prompt = tokenizer(TEXT)["input_ids"]
    # what a one-sample generation leaves reserved is what every generation must: the weights and what the
    # libraries keep for good (cuBLAS's workspace: 32 MiB on an H200, more than the whole model here)
    engine.generate([prompt], GenerationConfig(max_new_tokens=4, temperature=1.0, top_p=1.0, batch_size=1), seed=0)
    kept = torch.cuda.memory_reserved()
    generations = engine.generate([prompt] * 256, GenerationConfig(max_new_tokens=256, temperature=1.0, top_p=1.0,
                                                                    batch_size=256), seed=0)
    assert len(generations) == 256
    # a batch's logits alone are 256 x 256 x 400 floats (100 MiB): none of them stays reserved
    assert torch.cuda.memory_reserved() < kept + 8 * 2**20, (torch.cuda.memory_reserved(), kept)
