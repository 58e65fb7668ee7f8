"""Stages `warmup_rl` (single-turn GRPO, correctness-first reward) and `leap_rl` (LEAP multi-turn RL).

Both checkpoint every `checkpoint_every` steps (policy, optimiser, RNG, BDR buffer, history) and
can resume a killed run: `kerneldojo stage leap_rl --resume <stage run id>`.
"""

from __future__ import annotations

import random
import re
import time
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.config import PipelineConfig
from tasks.common import StageContext, progress_bar, stage_run
from tasks.plots import close, line_chart, rollout_composition
from training.checkpoint import RLState, load_rl_checkpoint, save_rl_checkpoint
from training.model import load_policy, resolve_device
from training.rl import PolicyTrainer, RepairBuffer, StepResult, leap_step, sample_problems, warmup_step
from training.rollout import HFRolloutEngine, Task, VLLMRolloutEngine


def _engine(cfg, model, tokenizer, device: str, policy_path: Path):
    if cfg.rollout_engine == "vllm":
        return VLLMRolloutEngine(policy_path, tokenizer)
    return HFRolloutEngine(model, tokenizer, device)


def _composition(counts: dict[str, int], result: StepResult, group_size: int) -> None:
    """Accumulate LEAP Fig. 4 counts: outcome type x advantage sign, by the group's observed pass rate."""
    for g in range(0, len(result.rollouts), group_size):
        group = result.rollouts[g:g + group_size]
        rate = sum(r.passed_turn > 0 for r in group) / len(group)
        bucket = f"{min(int(rate * 4), 3) * 25}-{min(int(rate * 4), 3) * 25 + 25}%"
        for r, adv in zip(group, result.advantages[g:g + group_size]):
            if abs(adv) < 1e-9:
                continue
            outcome = "first-turn pass" if r.passed_turn == 1 else "debug-assisted pass" if r.passed_turn else "failure"
            key = f"{bucket}|{outcome}|{'+' if adv > 0 else '-'}"
            counts[key] = counts.get(key, 0) + 1


def _rl_stage(stage: str, config: PipelineConfig, from_run: str | None, pipeline_mlflow_run_id: str | None,
              pipeline_run_id: str | None, resume: str | None = None) -> str:
    with stage_run(stage, config, [from_run] if from_run else [], pipeline_mlflow_run_id, pipeline_run_id,
                   resume_run_id=resume) as ctx:
        config = ctx.config  # on resume: the run's recorded config
        cfg = getattr(config, stage)
        device = resolve_device(config.device)
        parent = ctx.warehouse.stage_run(ctx.run_id).parent_ids[0]
        problems = ctx.warehouse.problems(ctx.warehouse.ancestor(parent, "hints").id, split="train")
        by_id = {p.id: p for p in problems}
        rng = random.Random(f"{config.seed}-{stage}")
        latest = _resume_point(ctx) if resume else None
        if latest is not None:
            model, tokenizer, trainer_dir, rng_state, state = load_rl_checkpoint(latest, device)
            rng.setstate(rng_state)
            ctx.warehouse.delete_trajectories_from(ctx.run_id, state.step + 1)  # rows of the interrupted step
            policy_path = latest / "policy"
        else:
            policy_path = ctx.warehouse.checkpoint(parent)
            model, tokenizer = load_policy(policy_path, device)
            trainer_dir, state = None, RLState(step=-1)
        trainer = PolicyTrainer(model, cfg, tokenizer.pad_token_id, device)
        if trainer_dir is not None:
            trainer.load(trainer_dir)
        engine = _engine(cfg, trainer.model, tokenizer, device, policy_path)
        buffer = RepairBuffer(cfg.bdr.capacity)
        buffer.load(state.buffer)
        elapsed = _elapsed(state.history[-1]) if state.history else 0.0
        with progress_bar(f"{stage} steps", cfg.steps) as advance_step:
            advance_step(state.step + 1)
            for step in range(state.step + 1, cfg.steps):
                started = time.perf_counter()
                batch = sample_problems(problems, cfg.prompts_per_step, step, config.seed)
                tasks = buffer.draw(batch, cfg.bdr.p_buf, rng, by_id) if cfg.bdr.enabled else [Task(p) for p in batch]
                result = _step(stage, ctx, engine, trainer, tasks, step)
                engine.sync_weights(trainer.model)
                if cfg.bdr.enabled:
                    result.metrics["bdr/pushed"] = buffer.push_failures(result.rollouts, cfg.group_size)
                result.metrics["bdr/buffer_size"] = len(buffer)
                ctx.warehouse.add_trajectories(ctx.run_id, result.trajectories)
                elapsed += time.perf_counter() - started
                result.metrics["elapsed_seconds"] = elapsed  # training time so far (stage/wall_seconds: the run's)
                ctx.mlflow.log_metrics(result.metrics, step=step)
                _composition(state.composition, result, cfg.group_size)
                state = RLState(step, buffer.state(), state.history + [result.metrics], state.composition)
                out_of_time = bool(cfg.time_budget_s) and elapsed >= cfg.time_budget_s
                if (step + 1) % cfg.checkpoint_every == 0 or step == cfg.steps - 1 or out_of_time:
                    path = save_rl_checkpoint(ctx.artifacts / "checkpoints" / f"step-{step:05d}", trainer.model,
                                              tokenizer, trainer, rng, state)
                    ctx.warehouse.add_checkpoint(ctx.run_id, f"step-{step:05d}", path, step)
                advance_step(1)
                if out_of_time:
                    print(f"{stage}: time budget of {cfg.time_budget_s:g} s reached after step {step} "
                          f"({elapsed:.1f} s)")
                    break
        steps_done = state.step + 1
        ctx.save_policy(trainer.model, tokenizer, steps_done)
        _log_plots(ctx, stage, state)
        last = state.history[-1]
        ctx.summary.update(steps=steps_done, pass_rate_turn_1=round(last["pass_rate/turn_1"], 3),
                           train_seconds=round(_elapsed(last), 2),
                           verifier_calls=int(sum(m["verifier_calls"] for m in state.history)),
                           trajectories=ctx.warehouse.count("trajectories", ctx.run_id), resumed=bool(resume))
        if stage == "leap_rl":
            ctx.summary["activated_groups_pct"] = round(last["dcp/activated_groups_pct"], 1)
        return ctx.run_id


def _elapsed(step_metrics: dict[str, float]) -> float:
    """Training seconds up to that step (checkpoints written before the rename say `wall_seconds`)."""
    return step_metrics.get("elapsed_seconds", step_metrics.get("wall_seconds", 0.0))


def _resume_point(ctx: StageContext) -> Path | None:
    """The run's last checkpoint. Each appears on disk by one atomic rename, then is recorded in the
    warehouse; a kill between the two leaves a complete checkpoint unrecorded, so record it now."""
    for path in sorted((ctx.artifacts / "checkpoints").glob("step-*")):
        if re.fullmatch(r"step-\d+", path.name):  # not a `.partial` left by a kill mid-save
            ctx.warehouse.add_checkpoint(ctx.run_id, path.name, path, int(path.name.removeprefix("step-")))
    return ctx.warehouse.latest_checkpoint(ctx.run_id, prefix="step-")


def _log_plots(ctx: StageContext, stage: str, state: RLState) -> None:
    history = state.history
    fig = line_chart({"first-turn pass rate": [(_elapsed(m), m["pass_rate/turn_1"]) for m in history]},
                     f"{stage}: first-turn accuracy against wall time", "wall seconds", "pass rate")
    ctx.mlflow.log_figure(fig, f"{stage}_accuracy_vs_time.png")
    close(fig)
    fig = line_chart({"mean reward": [(i, m["reward/mean"]) for i, m in enumerate(history)],
                      "first-turn pass rate": [(i, m["pass_rate/turn_1"]) for i, m in enumerate(history)]},
                     f"{stage} progress", "step", "value")
    ctx.mlflow.log_figure(fig, f"{stage}_progress.png")
    close(fig)
    if state.composition:
        fig = rollout_composition(state.composition, f"{stage}: rollout composition")
        ctx.mlflow.log_figure(fig, f"{stage}_rollout_composition.png")
        close(fig)
        ctx.mlflow.log_json(state.composition, f"{stage}_rollout_composition.json")


def _step(stage: str, ctx: StageContext, engine, trainer, tasks, step: int) -> StepResult:
    config = ctx.config
    cfg = getattr(config, stage)
    verify = lambda pairs: ctx.verify(pairs, f"verify step {step}")  # noqa: E731
    seed = config.seed * 7919 + step
    if stage == "warmup_rl":
        return warmup_step(engine, trainer, verify, tasks, cfg, config.reward, config.verifier.backend, step, seed,
                           run_key=ctx.run_id)
    return leap_step(engine, trainer, verify, tasks, cfg, config.reward, config.verifier.backend, step, seed,
                     run_key=ctx.run_id)


def run_warmup_rl(config: PipelineConfig, from_run: str | None = None, pipeline_mlflow_run_id: str | None = None,
                  pipeline_run_id: str | None = None, resume: str | None = None) -> str:
    return _rl_stage("warmup_rl", config, from_run, pipeline_mlflow_run_id, pipeline_run_id, resume)


def run_leap_rl(config: PipelineConfig, from_run: str | None = None, pipeline_mlflow_run_id: str | None = None,
                pipeline_run_id: str | None = None, resume: str | None = None) -> str:
    return _rl_stage("leap_rl", config, from_run, pipeline_mlflow_run_id, pipeline_run_id, resume)


warmup_rl_task = task(run_warmup_rl, name="warmup_rl", cache_policy=NO_CACHE)
leap_rl_task = task(run_leap_rl, name="leap_rl", cache_policy=NO_CACHE)
