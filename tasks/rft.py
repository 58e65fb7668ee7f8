"""Stage `rft`: sample k candidates per problem, verify, keep a diverse correct set, fine-tune on it."""

from __future__ import annotations

import random

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.config import PipelineConfig
from tasks.common import lm_metrics, progress_bar, stage_run
from training.model import load_policy, resolve_device
from training.prompts import prompt_messages
from training.rft import Sample, select_diverse
from training.rollout import HFRolloutEngine, multi_turn_rollouts
from training.sft import SFTExample, as_examples, total_steps, train_sft


def run_rft(config: PipelineConfig, from_run: str, pipeline_mlflow_run_id: str | None = None,
            pipeline_run_id: str | None = None) -> str:
    with stage_run("rft", config, [from_run], pipeline_mlflow_run_id, pipeline_run_id) as ctx:
        cfg, backend = config.rft, config.verifier.backend
        sft_run = ctx.warehouse.succeeded_run(from_run)
        device = resolve_device(config.device)
        model, tokenizer = load_policy(ctx.warehouse.checkpoint(sft_run.id), device)
        problems = ctx.warehouse.problems(ctx.warehouse.ancestor(from_run, "hints").id, split="train")
        if cfg.max_problems and cfg.max_problems < len(problems):
            problems = random.Random(config.seed).sample(problems, cfg.max_problems)
        problems = ctx.runnable(problems, "rft")  # a broken reference is left out (and said), not the stage's end
        engine = HFRolloutEngine(model, tokenizer, device)
        with progress_bar("sample candidates", len(problems) * cfg.samples_per_problem) as advance:
            rollouts = multi_turn_rollouts(engine, lambda pairs: ctx.verify(pairs, "verify samples"), problems,
                                           cfg.samples_per_problem, 1, cfg.generation, backend, config.seed,
                                           origin="rft", on_progress=lambda _, n: advance(n))
        samples = [Sample(r.problem.id, r.turns[0].candidate.source, r.turns[0].generation.text, r.turns[0].verdict)
                   for r in rollouts]
        kept = select_diverse(samples, cfg.max_kept_per_problem, cfg.keep_fastest_only)
        by_id = {p.id: p for p in problems}
        rft_rows = [{"id": f"rft-{i}-{s.verdict.candidate_id}", "problem_id": s.problem_id, "task": "rft",
                     "candidate_id": s.verdict.candidate_id,
                     "messages": prompt_messages(by_id[s.problem_id], backend, config.hints.max_hint_lines),
                     "completion": s.completion} for i, s in enumerate(kept)]
        ctx.warehouse.add_sft_examples(ctx.run_id, rft_rows)
        train_rows = list(rft_rows)
        if cfg.include_teacher_data:
            train_rows += ctx.warehouse.sft_examples(ctx.warehouse.ancestor(from_run, "distill").id)
        examples: list[SFTExample] = as_examples(train_rows)
        with progress_bar("rft steps", total_steps(len(examples), cfg.batch_size, cfg.epochs)) as advance:
            result = train_sft(model, tokenizer, examples, epochs=cfg.epochs, learning_rate=cfg.learning_rate,
                               batch_size=cfg.batch_size, max_length=cfg.max_length, seed=config.seed,
                               processes=config.distributed.processes,
                               deepspeed_zero=cfg.zero_stage if cfg.train_engine == "deepspeed" else None,
                               on_metrics=lambda m, s: ctx.mlflow.log_metrics(lm_metrics(m), s),
                               on_step=advance)
        ctx.save_policy(model, tokenizer, result.steps)
        passed = sum(s.verdict.passed for s in samples)
        metrics = {"samples": len(samples), "sample_pass_rate": passed / max(len(samples), 1),
                   "kept": len(kept), "problems_with_kept": len({s.problem_id for s in kept}),
                   "train_examples": result.examples_used, "final_loss": result.final_loss}
        ctx.mlflow.log_metrics(metrics)
        ctx.summary.update(samples=len(samples), passed=passed, kept=len(kept), train_examples=result.examples_used)
        return ctx.run_id


rft_task = task(run_rft, name="rft", cache_policy=NO_CACHE)
