"""Supervised fine-tuning on prompt -> completion with the prompt masked out of the loss.

Used by the `sft` stage and by `rft` (fine-tuning on the diverse set of verified
samples). Training runs through `transformers.Trainer`.
"""

from __future__ import annotations

import importlib.util
import math
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import PrinterCallback, Trainer, TrainerCallback, TrainingArguments

from schemas.config import ConfigError
from training.distributed import DistributedError, RankEvents, check_world, collective_backend, launch, rank_info
from training.model import load_policy, save_policy
from verifier.device_lock import policy_on_device

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


class _DeviceHoldCallback(TrainerCallback):
    """Each optimiser step holds its GPU shared with judges' trials, never beside a kernel a judge on the
    machine times alone (verifier.device_lock): a timing waits at most one step. Nothing on the CPU."""

    def __init__(self):
        self._held = ExitStack()
        self._holding = False

    def on_step_begin(self, args, state, control, **kwargs):
        if not self._holding:  # once a step, however the Trainer calls it around accumulation
            self._held.enter_context(policy_on_device(str(args.device)))
            self._holding = True

    def on_step_end(self, args, state, control, **kwargs):
        self._held.close()
        self._holding = False

    on_train_end = on_step_end  # a step that ended without its on_step_end


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
              batch_size: int, max_length: int, warmup_ratio: float = 0.0, seed: int = 0, processes: int = 1,
              deepspeed_zero: int | None = None, on_metrics: MetricsCallback | None = None,
              on_step: Callable[[], None] | None = None) -> SFTResult:
    """Train `model` in place. `batch_size` is the global batch: with `processes` > 1 the model trains in that many
    data-parallel ranks (HF Trainer's DDP; each rank `batch_size / processes` examples a step) and comes back
    with their weights, so the same settings give the same steps at any number of ranks. `deepspeed_zero` (2 or
    3): HF Trainer's DeepSpeed integration at that ZeRO stage, always in launched ranks (a world of one included),
    whose weights come back gathered."""
    encoded = [e for e in (encode_example(tokenizer, ex, max_length) for ex in examples) if e is not None]
    if not encoded:
        raise ValueError(f"none of the {len(examples)} SFT examples fits in max_length={max_length}")
    device = next(model.parameters()).device.type
    job = dict(encoded=encoded, epochs=epochs, learning_rate=learning_rate, batch_size=batch_size,
               warmup_ratio=warmup_ratio, seed=seed, device=device, pad_token_id=tokenizer.pad_token_id,
               deepspeed_zero=deepspeed_zero)
    if processes > 1 or deepspeed_zero:
        steps, final_loss = _train_in_ranks(model, tokenizer, job, processes, on_metrics, on_step)
    else:
        steps, final_loss = _train_here(model, job, 1, on_metrics, on_step)
    return SFTResult(steps=steps, final_loss=final_loss, examples_used=len(encoded),
                     examples_skipped=len(examples) - len(encoded))


def _deepspeed_config(zero_stage: int) -> dict[str, Any]:
    """For HF Trainer's DeepSpeed integration: "auto" takes TrainingArguments' values; ZeRO-3 gathers the
    partitioned weights when the model is saved."""
    return {"zero_optimization": {"stage": zero_stage, "stage3_gather_16bit_weights_on_model_save": True},
            "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
            "train_batch_size": "auto", "gradient_clipping": "auto", "bf16": {"enabled": "auto"}}


def _train_here(model, job: dict[str, Any], world_size: int, on_metrics: MetricsCallback | None,
                on_step: Callable[[], None] | None, save_to: str | None = None) -> tuple[int, float]:
    """HF Trainer on this process; in a rank of a launched world, Trainer's DDP (or DeepSpeed) over `world_size`
    ranks. `save_to`: the trained model is saved there (by every rank together: ZeRO-3 gathers its partitions)."""
    use_cpu = job["device"] == "cpu"
    per_rank_batch = job["batch_size"] // world_size
    with tempfile.TemporaryDirectory(prefix="kd-sft-") as tmp:
        args = TrainingArguments(
            output_dir=tmp, num_train_epochs=job["epochs"], learning_rate=job["learning_rate"],
            per_device_train_batch_size=per_rank_batch, lr_scheduler_type="cosine",
            warmup_steps=int(job["warmup_ratio"] * total_steps(len(job["encoded"]), job["batch_size"], job["epochs"])),
            logging_steps=1, save_strategy="no", report_to="none", use_cpu=use_cpu, seed=job["seed"],
            dataloader_num_workers=0, disable_tqdm=True, remove_unused_columns=False, weight_decay=0.0,
            **_LENGTH_GROUPING, **({"ddp_backend": collective_backend(job["device"])} if world_size > 1 else {}),
            **({"deepspeed": _deepspeed_config(job["deepspeed_zero"])} if job.get("deepspeed_zero") else {}),
            bf16=not use_cpu and torch.cuda.is_bf16_supported(),
        )
        trainer = Trainer(model=model, args=args, train_dataset=job["encoded"],
                          data_collator=PadCollator(job["pad_token_id"]),
                          callbacks=[_ReportCallback(on_metrics, on_step), _DeviceHoldCallback()])
        trainer.remove_callback(PrinterCallback)  # metrics go to on_metrics (MLflow), not to stdout
        output = trainer.train()
        if save_to:
            trainer.save_model(save_to)
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    return output.global_step, losses[-1] if losses else math.nan


def _train_in_ranks(model, tokenizer, job: dict[str, Any], processes: int, on_metrics: MetricsCallback | None,
                    on_step: Callable[[], None] | None) -> tuple[int, float]:
    processes = check_world(processes, job["device"])
    if job["deepspeed_zero"] and importlib.util.find_spec("deepspeed") is None:
        raise DistributedError("train_engine: deepspeed needs the `deepspeed` package: pip install 'kerneldojo[gpu]'")
    if job["batch_size"] % processes:
        raise ConfigError(f"a batch of {job['batch_size']} does not split over {processes} ranks: make the batch "
                          "size a multiple of distributed.processes")

    def on_event(event: tuple) -> None:
        if event[0] == "metrics" and on_metrics:
            on_metrics(event[1], event[2])
        elif event[0] == "step" and on_step:
            on_step()

    with tempfile.TemporaryDirectory(prefix="kd-sft-ranks-") as tmp:
        start, trained = Path(tmp) / "start", Path(tmp) / "trained"
        save_policy(model, tokenizer, start)
        results = launch(_sft_rank, (job, str(start), str(trained)), processes, on_event)
        weights, _ = load_policy(trained, "cpu")
        model.load_state_dict(weights.state_dict())
    return results[0]


def _sft_rank(job: dict[str, Any], start: str, trained: str, events: RankEvents) -> tuple[int, float]:
    """One rank of `_train_in_ranks`: the starting weights, its shard of every batch (DDP averages the gradients),
    and from rank 0 the metrics (Trainer's logged loss is already the mean over ranks) and the trained weights."""
    me = rank_info()
    model, tokenizer = load_policy(start, "cpu")  # Trainer places it on this rank's device
    report = me.is_main
    steps, final_loss = _train_here(model, job, me.world_size,
                                    (lambda metrics, step: events.send("metrics", metrics, step)) if report else None,
                                    (lambda: events.send("step")) if report else None, save_to=trained)
    if me.is_main:
        tokenizer.save_pretrained(trained)
    return steps, final_loss


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
