"""Stages `warmup_rl` (single-turn GRPO, correctness-first reward) and `leap_rl` (LEAP multi-turn RL)."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.config import PipelineConfig
from tasks.common import StageContext, progress_bar, stage_run
from tasks.plots import close, line_chart
from training.model import load_policy, resolve_device
from training.rl import PolicyTrainer, StepResult, leap_step, sample_problems, warmup_step
from training.rollout import HFRolloutEngine


def _rl_stage(stage: str, config: PipelineConfig, from_run: str, pipeline_mlflow_run_id: str | None,
              pipeline_run_id: str | None) -> str:
    with stage_run(stage, config, [from_run], pipeline_mlflow_run_id, pipeline_run_id) as ctx:
        cfg = getattr(config, stage)
        backend = config.verifier.backend
        device = resolve_device(config.device)
        model, tokenizer = load_policy(ctx.warehouse.checkpoint(ctx.warehouse.succeeded_run(from_run).id), device)
        problems = ctx.warehouse.problems(ctx.warehouse.ancestor(from_run, "hints").id, split="train")
        engine = HFRolloutEngine(model, tokenizer, device)
        trainer = PolicyTrainer(model, cfg, tokenizer.pad_token_id, device)
        history: list[dict[str, float]] = []
        with progress_bar(f"{stage} steps", cfg.steps) as advance_step:
            for step in range(cfg.steps):
                batch = sample_problems(problems, cfg.prompts_per_step, step, config.seed)
                result = _step(stage, ctx, engine, trainer, batch, step)
                ctx.warehouse.add_trajectories(ctx.run_id, result.trajectories)
                ctx.mlflow.log_metrics(result.metrics, step=step)
                history.append(result.metrics)
                advance_step(1)
        ctx.save_policy(model, tokenizer, cfg.steps)
        fig = line_chart({"first-turn pass rate": [(i, m["pass_rate/turn_1"]) for i, m in enumerate(history)],
                          "mean reward": [(i, m["reward/mean"]) for i, m in enumerate(history)]},
                         f"{stage}", "step", "value")
        ctx.mlflow.log_figure(fig, f"{stage}_progress.png")
        close(fig)
        last = history[-1]
        ctx.summary.update(steps=cfg.steps, pass_rate_turn_1=round(last["pass_rate/turn_1"], 3),
                           trajectories=ctx.warehouse.count("trajectories", ctx.run_id))
        if stage == "leap_rl":
            ctx.summary["activated_groups_pct"] = round(last["dcp/activated_groups_pct"], 1)
        return ctx.run_id


def _step(stage: str, ctx: StageContext, engine, trainer, batch, step: int) -> StepResult:
    config = ctx.config
    cfg = getattr(config, stage)
    verify = lambda pairs: ctx.verify(pairs, f"verify step {step}")  # noqa: E731
    seed = config.seed * 7919 + step
    if stage == "warmup_rl":
        return warmup_step(engine, trainer, verify, batch, cfg, config.reward, config.verifier.backend, step, seed,
                           run_key=ctx.run_id)
    return leap_step(engine, trainer, verify, batch, cfg, config.verifier.backend, step, seed, run_key=ctx.run_id)


def run_warmup_rl(config: PipelineConfig, from_run: str, pipeline_mlflow_run_id: str | None = None,
                  pipeline_run_id: str | None = None) -> str:
    return _rl_stage("warmup_rl", config, from_run, pipeline_mlflow_run_id, pipeline_run_id)


def run_leap_rl(config: PipelineConfig, from_run: str, pipeline_mlflow_run_id: str | None = None,
                pipeline_run_id: str | None = None) -> str:
    return _rl_stage("leap_rl", config, from_run, pipeline_mlflow_run_id, pipeline_run_id)


warmup_rl_task = task(run_warmup_rl, name="warmup_rl", cache_policy=NO_CACHE)
leap_rl_task = task(run_leap_rl, name="leap_rl", cache_policy=NO_CACHE)
