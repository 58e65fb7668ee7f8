"""Stage `synthesize`: NNSmith graphs -> KernelBench-format problems in the warehouse."""

from __future__ import annotations

from collections import Counter

from prefect import task
from prefect.cache_policies import NO_CACHE

from operators.synthesis import synthesize_problems
from schemas.config import PipelineConfig
from tasks.common import progress_bar, stage_run
from tasks.plots import bar_chart, close


def run_synthesize(config: PipelineConfig, parent_ids: list[str] | None = None,
                   pipeline_mlflow_run_id: str | None = None, pipeline_run_id: str | None = None) -> str:
    with stage_run("synthesize", config, parent_ids or [], pipeline_mlflow_run_id, pipeline_run_id) as ctx:
        cfg = config.synthesize
        with progress_bar("synthesize problems", cfg.num_problems) as advance:
            problems, report = synthesize_problems(cfg, config.seed, ctx.home.cache, progress=advance)
        ctx.warehouse.add_problems(ctx.run_id, problems)
        families = Counter(f for p in problems for f in p.op_families)
        levels = Counter(p.difficulty for p in problems)
        splits = Counter(p.split.value for p in problems)
        ctx.mlflow.log_metrics({"problems": len(problems), "attempts": report.attempts, "duplicates": report.duplicates,
                                **{f"rejected/{k}": v for k, v in (report.rejected or {}).items()},
                                **{f"family/{k}": v for k, v in families.items()},
                                **{f"difficulty/level_{k}": v for k, v in levels.items()},
                                **{f"split/{k}": v for k, v in splits.items()}})
        for counts, name, label in ((families, "op_families.png", "op family"), (levels, "difficulty.png", "level")):
            fig = bar_chart(counts, f"{len(problems)} problems by {label}", label)
            ctx.mlflow.log_figure(fig, name)
            close(fig)
        ctx.mlflow.log_json([p.model_dump(include={"id", "name", "op_families", "difficulty", "split", "reference"})
                             for p in problems[:5]], "sample_problems.json")
        ctx.summary.update(problems=len(problems), train=splits.get("train", 0), test=splits.get("test", 0),
                           attempts=report.attempts)
        return ctx.run_id


synthesize_task = task(run_synthesize, name="synthesize", cache_policy=NO_CACHE)
