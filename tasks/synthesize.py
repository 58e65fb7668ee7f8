"""Stage `synthesize`: NNSmith graphs and imported problems (KernelBench, HF datasets), deduplicated and
decontaminated, into the warehouse."""

from __future__ import annotations

import os
import statistics
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from prefect import task
from prefect.cache_policies import NO_CACHE

from operators.dedup import deduplicate, decontaminate, structure_pattern
from operators.imports import load_hf_problems, load_kernelbench
from operators.measures import kernelbench_reference
from operators.synthesis import assign_splits, synthesize_problems
from schemas.config import ConfigError, PipelineConfig
from tasks.common import StageContext, progress_bar, stage_run
from tasks.plots import bar_chart, close, size_histograms


@contextmanager
def _loading(key: str, location: str) -> Iterator[None]:
    """A failed import names the config key that asked for it."""
    try:
        yield
    except Exception as exc:
        raise ConfigError(f"synthesize.{key}: cannot load {location!r}: {exc}") from exc


def _imported(ctx: StageContext) -> list:
    cfg = ctx.config.synthesize
    problems = []
    if cfg.kernelbench_dir:
        with _loading("kernelbench_dir", cfg.kernelbench_dir):
            found, report = load_kernelbench(cfg.kernelbench_dir, cfg.kernelbench_levels or None)
        problems += found
        ctx.mlflow.log_metrics({"import/kernelbench": report.imported, "import/kernelbench_skipped": len(report.skipped)})
        if report.skipped:
            ctx.mlflow.log_json(report.skipped, "import_kernelbench_skipped.json")
    if cfg.hf_dataset:
        with _loading("hf_dataset", cfg.hf_dataset):
            found, report = load_hf_problems(cfg.hf_dataset, cfg.hf_code_column, limit=cfg.hf_limit)
        problems += found
        ctx.mlflow.log_metrics({"import/hf": report.imported, "import/hf_skipped": len(report.skipped)})
        if report.skipped:
            ctx.mlflow.log_json(report.skipped, "import_hf_skipped.json")
    return problems


def _runnable(ctx: StageContext, imported: list) -> tuple[list, list[dict]]:
    """Imported problems whose reference loads, exports and fits the verifier's memory, each analysed in a
    sandbox (it is someone else's code); the others as drops with the reason, one line each."""
    if not imported:
        return [], []
    from concurrent.futures import ThreadPoolExecutor

    from verifier.analysis import AnalysisError

    def analyse(problem):
        try:
            pattern = ctx.analyser.export(problem)["pattern"]
        except AnalysisError as exc:
            return problem, str(exc)
        return problem.model_copy(update={"pattern": structure_pattern(pattern, problem.reference)}), None

    kept, dropped = [], []
    with progress_bar("analyse imported problems (sandboxed)", len(imported)) as advance, \
            ThreadPoolExecutor(max_workers=max(1, min(8, len(os.sched_getaffinity(0))))) as threads:
        for problem, error in threads.map(analyse, imported):
            advance(1)
            if error is None:
                kept.append(problem)
            else:
                dropped.append({"problem_id": problem.id, "name": problem.name, "reason": "unrunnable",
                                "matched": error, "score": 1.0})
    ctx.mlflow.log_metrics({"import/unrunnable": len(dropped)})
    return kept, dropped


def _log_sizes(ctx: StageContext, problems: list) -> None:
    """sizes.png: this run's measured problems at GPU size next to KernelBench levels 1-3 (largest tensor,
    bytes, FLOPs), plus their medians as metrics. A scaled-down (cpu) problem is plotted at the GPU size its
    graph was solved for; its own sizes are that over `scale`."""
    measured = [p.measures.get("cuda", p.measures) for p in problems if p.measures]
    if not measured:
        return
    series = {"this run (GPU size)": measured}
    kernelbench = kernelbench_reference()
    if kernelbench:
        series["KernelBench L1-3"] = kernelbench
    scaled = [p for p in problems if p.scale > 1]
    note = f"; cpu references scaled down ~{statistics.median(p.scale for p in scaled):.0f}x" if scaled else ""
    fig = size_histograms(series, f"problem sizes{note}")
    ctx.mlflow.log_figure(fig, "sizes.png")
    close(fig)
    for key in ("largest_elements", "total_bytes", "flops"):
        ctx.mlflow.log_metrics({f"size/median_{key}": statistics.median(m[key] for m in measured)})
    bound = sum(bool(m["compute_bound"]) for m in measured) / len(measured)
    ctx.mlflow.log_metrics({"size/compute_bound_share": bound})


def run_synthesize(config: PipelineConfig, parent_ids: list[str] | None = None,
                   pipeline_mlflow_run_id: str | None = None, pipeline_run_id: str | None = None) -> str:
    config.synthesize.check_paths()
    with stage_run("synthesize", config, parent_ids or [], pipeline_mlflow_run_id, pipeline_run_id) as ctx:
        cfg = config.synthesize
        # imports first: a bad import path or dataset fails in seconds, not after the NNSmith graphs
        imported = _imported(ctx)
        benchmark = []
        if cfg.decontaminate_against:
            with _loading("decontaminate_against", cfg.decontaminate_against):
                benchmark, _ = load_kernelbench(cfg.decontaminate_against)
        with progress_bar("synthesize problems", cfg.num_problems) as advance:
            problems, report = synthesize_problems(cfg, config.seed, ctx.home.cache, progress=advance,
                                                   backend=config.verifier.backend)
        imported, unrunnable = _runnable(ctx, imported)
        # NNSmith problems are structurally distinct already; imports are checked against everything
        problems, dedup_report = deduplicate(problems + imported, structural=bool(imported), analyser=ctx.analyser)
        dropped = unrunnable + [d.__dict__ for d in dedup_report.dropped]
        if cfg.decontaminate_against:
            problems, decon_report = decontaminate(problems, benchmark, cfg.ngram_n, cfg.max_ngram_overlap,
                                                   analyser=ctx.analyser)
            dropped += [d.__dict__ for d in decon_report.dropped]
            ctx.mlflow.log_metrics({f"decontaminated/{k}": v for k, v in decon_report.counts().items()})
        if not problems:
            raise RuntimeError("no problems: set synthesize.num_problems or an import (kernelbench_dir, hf_dataset)")
        # one split over everything kept, by structure: an import and a graph of the same shape go together
        problems = assign_splits(problems, cfg.test_fraction, config.seed, cfg.validation_fraction)
        ctx.warehouse.add_problems(ctx.run_id, problems)
        ctx.log_problems(problems, ctx.run_id, "produced")
        if dropped:
            ctx.mlflow.log_json(dropped, "dropped_problems.json")
        families = Counter(f for p in problems for f in p.op_families)
        levels = Counter(p.difficulty for p in problems)
        splits = Counter(p.split.value for p in problems)
        sources = Counter(p.source for p in problems)
        ctx.mlflow.log_metrics({"problems": len(problems), "attempts": report.attempts, "duplicates": report.duplicates,
                                "dropped": len(dropped), **{f"source/{k}": v for k, v in sources.items()},
                                **{f"rejected/{k}": v for k, v in (report.rejected or {}).items()},
                                **{f"drawn/{k}": v for k, v in (report.drawn or {}).items()},
                                **{f"present/{k}": v for k, v in (report.present or {}).items()},
                                **{f"absent/{k}": v for k, v in (report.absent or {}).items()},
                                **{f"cpu_scale/{k}": v for k, v in (report.scale or {}).items()},
                                "fused": report.fused,
                                **{f"family/{k}": v for k, v in families.items()},
                                **{f"difficulty/level_{k}": v for k, v in levels.items()},
                                **{f"split/{k}": v for k, v in splits.items()}})
        charts = [(families, "op_families.png", "op family"), (levels, "difficulty.png", "level")]
        if report.drawn:
            charts.append((Counter(report.drawn), "drawn_families.png", "family drawn (balanced mix)"))
        for counts, name, label in charts:
            fig = bar_chart(counts, f"{len(problems)} problems by {label}", label)
            ctx.mlflow.log_figure(fig, name)
            close(fig)
        _log_sizes(ctx, problems)
        ctx.mlflow.log_json([p.model_dump(include={"id", "name", "op_families", "difficulty", "split", "reference",
                                                   "scale", "cuda_working_set_bytes", "drawn_family"})
                             for p in problems[:5]], "sample_problems.json")
        ctx.summary.update(problems=len(problems), train=splits.get("train", 0), test=splits.get("test", 0),
                           validation=splits.get("validation", 0),
                           attempts=report.attempts, dropped=len(dropped))
        return ctx.run_id


synthesize_task = task(run_synthesize, name="synthesize", cache_policy=NO_CACHE)
