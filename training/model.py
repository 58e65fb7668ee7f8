"""The policy: a tiny Qwen2-style causal LM with a tokenizer trained on the corpus.

No hub access: the tokenizer is a byte-level BPE trained on the SFT corpus (so
any text encodes), with ChatML special tokens and chat template; the model is a
random-initialised `Qwen2ForCausalLM`. A pretrained HF model can be used instead
through `sft.model.init_from`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import (AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerFast, Qwen2Config,
                          Qwen2ForCausalLM)
from transformers.utils import logging as hf_logging

hf_logging.disable_progress_bar()  # checkpoint load/save bars would interleave with the stage bars

from schemas.config import ModelConfig

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


# Qwen2's pre-tokenizer. `AutoTokenizer` (and so `transformers serve` and vLLM) loads any tokenizer saved
# with a qwen2 model as Qwen2Tokenizer with this pre-tokenizer, whatever it was trained with.
QWEN_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
              r"\s*[\r\n]+|\s+(?!\S)|\s+")


def train_tokenizer(texts: Iterable[str], vocab_size: int, pretokenizer: str = "lines") -> PreTrainedTokenizerFast:
    """Byte-level BPE. `lines`: merges may span a whole line (kernel code repeats whole lines a lot, so
    sequences are ~3x shorter); `qwen`: Qwen2's pre-tokenizer, for models served through AutoTokenizer."""
    tokenizer = Tokenizer(models.BPE())
    if pretokenizer == "qwen":
        from tokenizers import Regex, normalizers

        tokenizer.normalizer = normalizers.NFC()
        split = pre_tokenizers.Split(Regex(QWEN_SPLIT), behavior="isolated")
    elif pretokenizer == "lines":
        split = pre_tokenizers.Split("\n", behavior="merged_with_previous")
    else:
        raise ValueError(f"unknown pretokenizer {pretokenizer!r}: lines or qwen")
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        split, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), max_token_length=48)
    tokenizer.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token=None, eos_token="<|im_end|>",
                                   pad_token="<|endoftext|>", unk_token=None)
    fast.chat_template = CHAT_TEMPLATE
    fast.padding_side = "left"  # generation pads on the left
    return fast


def build_model(config: ModelConfig, tokenizer: PreTrainedTokenizerFast, seed: int) -> Qwen2ForCausalLM:
    torch.manual_seed(seed)
    qwen = Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=config.hidden_size, intermediate_size=config.intermediate_size,
        num_hidden_layers=config.num_hidden_layers, num_attention_heads=config.num_attention_heads,
        num_key_value_heads=config.num_key_value_heads, max_position_embeddings=config.max_position_embeddings,
        tie_word_embeddings=True, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    return Qwen2ForCausalLM(qwen)


def save_policy(model, tokenizer, path: str | Path) -> Path:
    path = Path(path)
    tmp = path.with_name(path.name + ".partial")
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    if path.exists():
        import shutil

        shutil.rmtree(path)
    os.replace(tmp, path)  # a crash mid-save never leaves a half-written checkpoint under `path`
    return path


def load_policy(path: str | Path, device: str = "cpu"):
    """Model and tokenizer from a checkpoint folder (PreTrainedTokenizerFast: see CHAT_TEMPLATE)."""
    path = Path(path)
    if not (path / "config.json").exists():
        raise FileNotFoundError(f"no model checkpoint at {path}")
    if (path / "tokenizer.json").exists():  # exactly the saved tokenizer (AutoTokenizer would re-split ours)
        tokenizer = PreTrainedTokenizerFast.from_pretrained(path)
    else:  # a pretrained model's slow tokenizer
        tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.chat_template = tokenizer.chat_template or CHAT_TEMPLATE  # feedback turns are ChatML either way
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(path).to(device)
    return model, tokenizer


def resolve_device(device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("config asks for device=cuda but no CUDA device is visible")
    return device
