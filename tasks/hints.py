"""Stage `hints`: torch.export shape/dtype/stride hints stored with every problem."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from operators.hints import HintError, extract_hints
from schemas.config import PipelineConfig
from tasks.common import log, progress_bar, stage_run


def run_hints(config: PipelineConfig, from_run: str, pipeline_mlflow_run_id: str | None = None,
              pipeline_run_id: str | None = None) -> str:
    with stage_run("hints", config, [from_run], pipeline_mlflow_run_id, pipeline_run_id) as ctx:
        problems = ctx.warehouse.problems(ctx.warehouse.ancestor(from_run, "synthesize").id)
        hinted, failures = [], 0
        with progress_bar("export shape hints", len(problems)) as advance:
            for problem in problems:
                try:
                    hinted.append(problem.model_copy(update={"hints": extract_hints(problem, ctx.analyser)}))
                except HintError as exc:  # keep the problem; its prompt just has no hints
                    log.warning("%s", exc)
                    hinted.append(problem)
                    failures += 1
                advance(1)
        ctx.warehouse.add_problems(ctx.run_id, hinted)
        ctx.log_problems(hinted, ctx.run_id, "produced")
        nodes = sum(len(p.hints) for p in hinted)
        ctx.mlflow.log_metrics({"problems": len(hinted), "export_failures": failures,
                                "hints_per_problem": nodes / max(len(hinted), 1)})
        ctx.summary.update(problems=len(hinted), export_failures=failures)
        return ctx.run_id


hints_task = task(run_hints, name="hints", cache_policy=NO_CACHE)
