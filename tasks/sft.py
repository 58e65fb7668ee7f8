"""Stage `sft`: a tiny Qwen2-style model and its tokenizer, trained on the verified corpus."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.config import PipelineConfig
from schemas.records import Verdict, VerdictCategory
from tasks.common import lm_metrics, log, progress_bar, stage_run
from tasks.plots import close, line_chart
from training.model import build_model, load_policy, resolve_device, train_tokenizer
from training.prompts import feedback_message
from training.sft import as_examples, short_generation_budgets, total_steps, train_sft


def _feedback_samples() -> list[str]:
    """Feedback turns the policy will read in RL, so the tokenizer learns their phrasing too."""
    return [feedback_message(Verdict(candidate_id="", problem_id="", compiled=c != VerdictCategory.compile_error,
                                     correct=False, legal=True, pass_fraction=0.0, category=c, detail=""))
            for c in VerdictCategory]


def run_sft(config: PipelineConfig, from_run: str, pipeline_mlflow_run_id: str | None = None,
            pipeline_run_id: str | None = None) -> str:
    with stage_run("sft", config, [from_run], pipeline_mlflow_run_id, pipeline_run_id) as ctx:
        cfg = config.sft
        corpus = ctx.warehouse.ancestor(from_run, "distill").id
        rows = ctx.warehouse.sft_examples(corpus)
        ctx.log_examples(rows, corpus, "training")
        examples = as_examples(rows)
        device = resolve_device(config.device)
        if cfg.model.init_from:
            model, tokenizer = load_policy(cfg.model.init_from, device)
        else:
            corpus = [m["content"] for e in examples for m in e.messages] + [e.completion for e in examples]
            tokenizer = train_tokenizer(corpus + _feedback_samples(), cfg.model.vocab_size, cfg.model.tokenizer)
            model = build_model(cfg.model, tokenizer, config.seed).to(device)
        losses: list[tuple[float, float]] = []

        def on_metrics(metrics: dict[str, float], step: int) -> None:
            ctx.mlflow.log_metrics(lm_metrics(metrics), step=step)
            if "loss" in metrics:
                losses.append((step, metrics["loss"]))

        with progress_bar("sft steps", total_steps(len(examples), cfg.batch_size, cfg.epochs)) as advance:
            result = train_sft(model, tokenizer, examples, epochs=cfg.epochs, learning_rate=cfg.learning_rate,
                               batch_size=cfg.batch_size, max_length=cfg.max_length, warmup_ratio=cfg.warmup_ratio,
                               seed=config.seed, processes=config.distributed.processes,
                               deepspeed_zero=cfg.zero_stage if cfg.train_engine == "deepspeed" else None,
                               on_metrics=on_metrics, on_step=advance)
        ctx.save_policy(model, tokenizer, result.steps)
        _check_generation_budgets(ctx, config, tokenizer, rows)
        fig = line_chart({"loss": losses}, "SFT loss", "step", "loss")
        ctx.mlflow.log_figure(fig, "sft_loss.png")
        close(fig)
        params = sum(p.numel() for p in model.parameters())
        ctx.mlflow.log_metrics({"examples": result.examples_used, "examples_skipped": result.examples_skipped,
                                "final_loss": result.final_loss, "parameters": params, "vocab_size": len(tokenizer)})
        ctx.summary.update(examples=result.examples_used, steps=result.steps, final_loss=round(result.final_loss, 4),
                           parameters=params)
        return ctx.run_id


def _check_generation_budgets(ctx, config: PipelineConfig, tokenizer, rows: list[dict]) -> None:
    """Kernel completions' lengths in this tokenizer's tokens (MLflow), and a warning for every later stage whose
    generation budget would cut most of them short."""
    lengths = sorted(len(tokenizer(r["completion"], add_special_tokens=False)["input_ids"]) + 1
                     for r in rows if r.get("task") == "kernel")
    if not lengths:
        return
    ctx.mlflow.log_metrics({"kernel_tokens/p50": lengths[len(lengths) // 2],
                            "kernel_tokens/p90": lengths[int(0.9 * (len(lengths) - 1))], "kernel_tokens/max": lengths[-1]})
    budgets = {f"{stage}.generation.max_new_tokens": getattr(config, stage).generation.max_new_tokens
               for stage in ("rft", "warmup_rl", "leap_rl", "evaluate")}
    for line in short_generation_budgets(lengths, budgets):
        log.warning(line)
    ctx.summary.update(kernel_tokens_p50=lengths[len(lengths) // 2])


sft_task = task(run_sft, name="sft", cache_policy=NO_CACHE)
