"""Stages `warmup_rl` (single-turn GRPO, correctness-first reward) and `leap_rl` (LEAP multi-turn RL).

Both checkpoint every `checkpoint_every` steps (policy, optimiser, RNG, BDR buffer, history) and
can resume a killed run: `kerneldojo stage leap_rl --resume <stage run id>`.
"""

from __future__ import annotations

import random
import re
import tempfile
import threading
import time
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.config import PipelineConfig
from tasks.common import StageContext, progress_bar, stage_run
from tasks.plots import close, line_chart, rollout_composition
from training.checkpoint import RLState, finish_rl_checkpoint, load_rl_state, save_rl_checkpoint, staging_dir
from training.distributed import check_split, check_world, launch
from training.model import load_policy, resolve_device
from training.rl import (PolicyTrainer, RepairBuffer, StepResult, frontier_order, leap_step, merge_ppo_stats,
                         merge_sampled, sample_problems, step_result, warmup_step)
from training.rl_ranks import RLRankJob, rl_rank
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


class _Steps:
    """What the stage's process does around every step, in one process or for ranks: plan the step's tasks (problems
    round-robin, BDR repair tasks), record its result (trajectories, metrics, composition, state), say when to
    checkpoint or stop, and finish checkpoints with the run's state."""

    def __init__(self, stage: str, ctx: StageContext, problems: list, rng: random.Random, state: RLState):
        self.stage, self.ctx, self.rng, self.state = stage, ctx, rng, state
        self.cfg = getattr(ctx.config, stage)
        self.problems, self.by_id = problems, {p.id: p for p in problems}
        self.buffer = RepairBuffer(self.cfg.bdr.capacity)
        self.buffer.load(state.buffer)
        self.elapsed = _elapsed(state.history[-1]) if state.history else 0.0
        self.stopped = False

    def plan(self, step: int) -> list[Task]:
        cfg = self.cfg
        batch = sample_problems(self.problems, cfg.prompts_per_step, step, self.ctx.config.seed,
                                shuffle=cfg.prompts == "all")
        # run the step's references before its rollouts (its verdicts would wait for them anyway): one that cannot
        # run here takes its group out of the step, not the stage down
        batch = self.ctx.runnable(batch, f"{self.stage} step {step}")
        return self.buffer.draw(batch, cfg.bdr.p_buf, self.rng, self.by_id) if cfg.bdr.enabled else \
            [Task(p) for p in batch]

    def record(self, step: int, result: StepResult, seconds: float) -> tuple[bool, bool]:
        """(checkpoint now, stop now) after writing the step's trajectories and metrics."""
        cfg, ctx = self.cfg, self.ctx
        if cfg.bdr.enabled:
            result.metrics["bdr/pushed"] = self.buffer.push_failures(result.rollouts, cfg.group_size)
        result.metrics["bdr/buffer_size"] = len(self.buffer)
        ctx.warehouse.add_trajectories(ctx.run_id, result.trajectories)
        self.elapsed += seconds
        result.metrics["elapsed_seconds"] = self.elapsed  # training time so far (stage/wall_seconds: the run's)
        ctx.mlflow.log_metrics(result.metrics, step=step)
        _composition(self.state.composition, result, cfg.group_size)
        self.state = RLState(step, self.buffer.state(), self.state.history + [result.metrics], self.state.composition)
        out_of_time = bool(cfg.time_budget_s) and self.elapsed >= cfg.time_budget_s
        if out_of_time:
            print(f"{self.stage}: time budget of {cfg.time_budget_s:g} s reached after step {step} "
                  f"({self.elapsed:.1f} s)")
        checkpoint = (step + 1) % cfg.checkpoint_every == 0 or step == cfg.steps - 1 or out_of_time
        return checkpoint, out_of_time

    def checkpoint_path(self, step: int) -> Path:
        return self.ctx.artifacts / "checkpoints" / f"step-{step:05d}"

    def checkpointed(self, step: int, path: Path) -> None:
        self.ctx.warehouse.add_checkpoint(self.ctx.run_id, f"step-{step:05d}", path, step)


def _rl_stage(stage: str, config: PipelineConfig, from_run: str | None, pipeline_mlflow_run_id: str | None,
              pipeline_run_id: str | None, resume: str | None = None) -> str:
    with stage_run(stage, config, [from_run] if from_run else [], pipeline_mlflow_run_id, pipeline_run_id,
                   resume_run_id=resume) as ctx:
        config = ctx.config  # on resume: the run's recorded config
        cfg = getattr(config, stage)
        # LEAP's rank and the scalar tiers read the turn a kernel passed at, never its speed: timing passes would
        # buy nothing and cost most of the step (the GPU times one kernel at a time: ~1 verdict a second timed
        # on the H200 against ~4 untimed). PrimeEcho's turn rewards read the speedup (unless told not to, as
        # MURPHY's preset does), so it stays timed.
        ctx.untimed = stage == "leap_rl" and (cfg.reward != "primeecho" or not cfg.primeecho.reads_speed)
        device = resolve_device(config.device)
        processes = check_world(config.distributed.processes, device) if config.distributed.processes != 1 else 1
        check_split(config, stage, processes)
        parent = ctx.warehouse.stage_run(ctx.run_id).parent_ids[0]
        problems = ctx.warehouse.problems(ctx.warehouse.ancestor(parent, "hints").id, split="train")
        if cfg.prompts == "frontier":
            problems = _frontier(ctx, problems, parent)
        rng = random.Random(f"{config.seed}-{stage}")
        latest = _resume_point(ctx) if resume else None
        if latest is not None:
            rng_state, state = load_rl_state(latest)
            rng.setstate(rng_state)
            ctx.warehouse.delete_trajectories_from(ctx.run_id, state.step + 1)  # rows of the interrupted step
            policy_path, trainer_dir = latest / "policy", latest / "trainer"
        else:
            policy_path, trainer_dir, state = ctx.warehouse.checkpoint(parent), None, RLState(step=-1)
        steps = _Steps(stage, ctx, problems, rng, state)
        with progress_bar(f"{stage} steps", cfg.steps) as advance_step:
            advance_step(state.step + 1)
            if processes > 1:
                model, tokenizer = _train_in_ranks(stage, ctx, steps, processes, device, policy_path, trainer_dir,
                                                   advance_step)
            else:
                model, tokenizer = _train_here(stage, ctx, steps, device, policy_path, trainer_dir, advance_step)
        state = steps.state
        steps_done = state.step + 1
        ctx.save_policy(model, tokenizer, steps_done)
        _log_plots(ctx, stage, state)
        last = state.history[-1]
        ctx.summary.update(steps=steps_done, pass_rate_turn_1=round(last["pass_rate/turn_1"], 3),
                           train_seconds=round(_elapsed(last), 2),
                           verifier_calls=int(sum(m["verifier_calls"] for m in state.history)),
                           trajectories=ctx.warehouse.count("trajectories", ctx.run_id), resumed=bool(resume),
                           processes=processes, timed=ctx.timed)
        if stage == "leap_rl":
            ctx.summary["activated_groups_pct"] = round(last["dcp/activated_groups_pct"], 1)
        return ctx.run_id


def _frontier(ctx: StageContext, problems: list, parent: str) -> list:
    """The training problems in `frontier_order`, from the first-turn verdicts of the policy's lineage (the stages
    that sampled it: rft, warmup_rl, leap_rl); how many of each kind go in the summary (`prompts`)."""
    sampled_by = [run.id for run in ctx.warehouse.lineage(parent) if run.stage in ("rft", "warmup_rl", "leap_rl")]
    passes = ctx.warehouse.first_turn_passes(sampled_by)
    ordered = frontier_order(problems, passes, ctx.config.seed)
    known = [passes[p.id] for p in problems if p.id in passes]
    ctx.summary["prompts"] = {"from_runs": sampled_by, "frontier": sum(0 < a < b for a, b in known),
                              "never_tried": len(problems) - len(known),
                              "always_passed": sum(a == b for a, b in known),
                              "always_failed": sum(a == 0 for a, b in known)}
    return ordered


def _train_here(stage: str, ctx: StageContext, steps: _Steps, device: str, policy_path: Path,
                trainer_dir: Path | None, advance_step):
    cfg = steps.cfg
    model, tokenizer = load_policy(policy_path, device)
    trainer = PolicyTrainer(model, cfg, tokenizer.pad_token_id, device)
    if trainer_dir is not None:
        trainer.load(trainer_dir)
    engine = _engine(cfg, trainer.model, tokenizer, device, policy_path)
    for step in range(steps.state.step + 1, cfg.steps):
        started = time.perf_counter()
        tasks = steps.plan(step)
        result = _step(stage, ctx, engine, trainer, tasks, step)
        engine.sync_weights(trainer.model)
        checkpoint, stop = steps.record(step, result, time.perf_counter() - started)
        if checkpoint:
            path = save_rl_checkpoint(steps.checkpoint_path(step), trainer.model, tokenizer, trainer, steps.rng,
                                      steps.state)
            steps.checkpointed(step, path)
        advance_step(1)
        if stop:
            break
    return trainer.model, tokenizer


def _train_in_ranks(stage: str, ctx: StageContext, steps: _Steps, processes: int, device: str, policy_path: Path,
                    trainer_dir: Path | None, advance_step):
    """The step loop in `processes` ranks (training/rl_ranks.py): this process plans, verifies and records."""
    config, cfg = ctx.config, steps.cfg
    plans: dict[int, list[Task]] = {}
    started: dict[int, float] = {}
    turn = threading.Condition()

    def on_request(kind: str, payload: tuple, rank: int):
        if kind == "verify":
            return ctx.verify(payload[0], f"verify (rank {rank})")
        if kind == "plan":
            step = payload[0]
            with turn:  # a step is planned once the one before it is recorded (its BDR failures are in)
                turn.wait_for(lambda: steps.state.step >= step - 1 or steps.stopped)
                if steps.stopped:
                    return None
                if step not in plans:
                    plans[step], started[step] = steps.plan(step), time.perf_counter()
                share = len(plans[step]) // processes
                return plans[step][rank * share:(rank + 1) * share]
        if kind == "record":
            step, parts = payload
            sampled = merge_sampled([part[0] for part in parts])
            result = step_result(sampled, merge_ppo_stats([part[1] for part in parts]),
                                 max(part[2] for part in parts), cfg, step, ctx.run_id)
            plans.pop(step)
            with turn:
                checkpoint, stop = steps.record(step, result, time.perf_counter() - started.pop(step))
                steps.stopped = stop
                turn.notify_all()
            advance_step(1)
            return {"checkpoint": str(staging_dir(steps.checkpoint_path(step))) if checkpoint else None,
                    "stop": stop}
        if kind == "saved":
            step = payload[0]
            steps.checkpointed(step, finish_rl_checkpoint(steps.checkpoint_path(step), steps.rng, steps.state))
            return True
        raise ValueError(f"unknown request {kind!r}")

    with tempfile.TemporaryDirectory(prefix=f"kd-{stage}-ranks-") as tmp:
        job = RLRankJob(stage, cfg, config.reward, config.verifier.backend, device, config.seed,
                        steps.state.step + 1, str(policy_path), str(trainer_dir) if trainer_dir else None,
                        str(Path(tmp) / "final"))
        launch(rl_rank, (job,), processes, on_request=on_request)
        return load_policy(Path(tmp) / "final", device)


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
