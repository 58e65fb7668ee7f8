"""Supervised fine-tuning on prompt -> completion with the prompt masked out of the loss.

Used by the `sft` stage and by `rft` (fine-tuning on the diverse set of verified
samples). Training runs through `transformers.Trainer`.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from transformers import PrinterCallback, Trainer, TrainerCallback, TrainingArguments

IGNORE_INDEX = -100
MetricsCallback = Callable[[dict[str, float], int], None]


@dataclass
class SFTExample:
    messages: list[dict[str, str]]  # the context: system, user (and for repairs earlier turns)
    completion: str  # the assistant turn that is trained


def encode_example(tokenizer, example: SFTExample, max_length: int) -> dict[str, list[int]] | None:
    """Token ids and labels; labels are IGNORE_INDEX on every context token. None if it does not fit."""
    prompt = tokenizer.apply_chat_template(example.messages, tokenize=False, add_generation_prompt=True)
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    completion_ids = tokenizer(example.completion, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    if len(prompt_ids) + len(completion_ids) > max_length:
        return None
    return {"input_ids": prompt_ids + completion_ids,
            "labels": [IGNORE_INDEX] * len(prompt_ids) + completion_ids}


class PadCollator:
    """Right-pads a batch; padding is masked out of attention and loss."""

    def __init__(self, pad_token_id: int):
        self.pad_token_id = pad_token_id

    def __call__(self, features: list[dict[str, list[int]]]) -> dict[str, torch.Tensor]:
        width = max(len(f["input_ids"]) for f in features)
        ids = torch.full((len(features), width), self.pad_token_id, dtype=torch.long)
        labels = torch.full((len(features), width), IGNORE_INDEX, dtype=torch.long)
        mask = torch.zeros((len(features), width), dtype=torch.long)
        for i, f in enumerate(features):
            n = len(f["input_ids"])
            ids[i, :n] = torch.tensor(f["input_ids"])
            labels[i, :n] = torch.tensor(f["labels"])
            mask[i, :n] = 1
        return {"input_ids": ids, "labels": labels, "attention_mask": mask}


class _ReportCallback(TrainerCallback):
    def __init__(self, on_metrics: MetricsCallback | None, on_step: Callable[[], None] | None):
        self.on_metrics = on_metrics
        self.on_step = on_step

    def on_log(self, args, state, control, logs=None, **kwargs):
        if self.on_metrics and logs:
            numeric = {k: float(v) for k, v in logs.items() if isinstance(v, (int, float))}
            self.on_metrics(numeric, state.global_step)

    def on_step_end(self, args, state, control, **kwargs):
        if self.on_step:
            self.on_step()


# Batches of similar lengths: multi-task corpora mix one-line reviewer answers with whole kernels, and
# padding every batch to its longest member cost 30 % of the tiny demo's SFT time (156 s -> 109 s).
_LENGTH_GROUPING = ({"train_sampling_strategy": "group_by_length"}
                    if "train_sampling_strategy" in TrainingArguments.__dataclass_fields__ else {"group_by_length": True})


@dataclass
class SFTResult:
    steps: int
    final_loss: float
    examples_used: int
    examples_skipped: int


def train_sft(model, tokenizer, examples: list[SFTExample], *, epochs: float, learning_rate: float,
              batch_size: int, max_length: int, warmup_ratio: float = 0.0, seed: int = 0,
              on_metrics: MetricsCallback | None = None, on_step: Callable[[], None] | None = None) -> SFTResult:
    encoded = [e for e in (encode_example(tokenizer, ex, max_length) for ex in examples) if e is not None]
    if not encoded:
        raise ValueError(f"none of the {len(examples)} SFT examples fits in max_length={max_length}")
    use_cpu = next(model.parameters()).device.type == "cpu"
    with tempfile.TemporaryDirectory(prefix="kd-sft-") as tmp:
        args = TrainingArguments(
            output_dir=tmp, num_train_epochs=epochs, learning_rate=learning_rate,
            per_device_train_batch_size=batch_size, lr_scheduler_type="cosine",
            warmup_steps=int(warmup_ratio * total_steps(len(encoded), batch_size, epochs)),
            logging_steps=1, save_strategy="no", report_to="none", use_cpu=use_cpu, seed=seed,
            dataloader_num_workers=0, disable_tqdm=True, remove_unused_columns=False, weight_decay=0.0,
            **_LENGTH_GROUPING,
            bf16=not use_cpu and torch.cuda.is_bf16_supported(),
        )
        trainer = Trainer(model=model, args=args, train_dataset=encoded,
                          data_collator=PadCollator(tokenizer.pad_token_id),
                          callbacks=[_ReportCallback(on_metrics, on_step)])
        trainer.remove_callback(PrinterCallback)  # metrics go to on_metrics (MLflow), not to stdout
        output = trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    return SFTResult(steps=output.global_step, final_loss=losses[-1] if losses else math.nan,
                     examples_used=len(encoded), examples_skipped=len(examples) - len(encoded))


def total_steps(n_examples: int, batch_size: int, epochs: float) -> int:
    return max(1, math.ceil(math.ceil(n_examples / batch_size) * epochs))


def short_generation_budgets(kernel_tokens: list[int], budgets: dict[str, int], share: float = 0.9) -> list[str]:
    """The generation budgets (`<stage>.generation.max_new_tokens` -> tokens) below the `share` quantile of the
    kernel completions the policy was trained on, each said in a line: such rollouts are mostly cut short, so they
    neither compile nor teach anything."""
    if not kernel_tokens:
        return []
    ordered = sorted(kernel_tokens)
    needed = ordered[min(len(ordered) - 1, int(share * len(ordered)))]
    return [f"{name}={budget} is below what {share:.0%} of the trained kernels need ({needed} tokens with this "
            f"tokenizer): raise it, or the vocabulary (sft.model.vocab_size) to shorten them"
            for name, budget in budgets.items() if budget < needed]


def as_examples(rows: list[dict[str, Any]]) -> list[SFTExample]:
    return [SFTExample(messages=r["messages"], completion=r["completion"]) for r in rows]
