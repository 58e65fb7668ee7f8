"""Stage `evaluate`: KernelBench-style per-turn accuracy on held-out problems."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.config import PipelineConfig
from tasks.common import progress_bar, stage_run
from tasks.plots import close, line_chart
from training.evaluation import evaluate_policy
from training.model import load_policy, resolve_device
from training.rollout import HFRolloutEngine


def run_evaluate(config: PipelineConfig, from_run: str, pipeline_mlflow_run_id: str | None = None,
                 pipeline_run_id: str | None = None) -> str:
    """Evaluate the policy of `from_run` (any policy stage's run) on the held-out split its problems were
    synthesized with; the MLflow run is nested under the evaluated stage run, so stages compare side by side."""
    with stage_run("evaluate", config, [from_run], pipeline_mlflow_run_id, pipeline_run_id,
                   nest_under_parent=True) as ctx:
        cfg = config.evaluate
        device = resolve_device(config.device)
        evaluated = ctx.warehouse.succeeded_run(from_run)
        ctx.mlflow.set_tags({"kerneldojo.evaluates": evaluated.stage, "kerneldojo.split": cfg.split})
        model, tokenizer = load_policy(ctx.warehouse.checkpoint(evaluated.id), device)
        problems = ctx.warehouse.problems(ctx.warehouse.ancestor(from_run, "hints").id, split=cfg.split)
        if not problems:
            raise RuntimeError(f"no held-out ({cfg.split} split) problems to evaluate; raise "
                               f"synthesize.{cfg.split}_fraction")
        engine = HFRolloutEngine(model, tokenizer, device)
        with progress_bar("evaluate", None):
            summary = evaluate_policy(engine, lambda pairs: ctx.verify(pairs, "verify eval"), problems, cfg,
                                      config.verifier.backend, config.seed)
        ctx.warehouse.add_eval_results(ctx.run_id, summary.rows)
        ctx.mlflow.log_metrics(summary.metrics)
        fig = line_chart({"cumulative accuracy": [(t, summary.metrics[f"accuracy/turn_{t}"])
                                                  for t in range(1, cfg.max_turns + 1)]},
                         f"held-out accuracy by turn ({len(problems)} problems)", "turn", "accuracy")
        ctx.mlflow.log_figure(fig, "accuracy_by_turn.png")
        close(fig)
        ctx.summary.update(evaluated=f"{evaluated.stage}:{evaluated.id}", split=cfg.split, problems=len(problems),
                           **{k: round(v, 3) for k, v in summary.metrics.items()})
        return ctx.run_id


evaluate_task = task(run_evaluate, name="evaluate", cache_policy=NO_CACHE)
