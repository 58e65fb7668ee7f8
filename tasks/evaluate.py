"""Stage `evaluate`: the KernelBench protocol for any policy on held-out or KernelBench problems.

Who is evaluated (`evaluate.policy`): the policy of a stage run (`--from-run`), a HF model folder, a model behind
an OpenAI-compatible endpoint, or the template teacher (a floor). On what (`evaluate.problems`): the held-out split
of the evaluated run's problems, or the problems of a KernelBench checkout (`kernelbench_dir`, `levels`). A
problem whose reference cannot run here (it needs the network, it crashes) is reported with the reason and left
out; it never stops the evaluation.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from operators.hints import HintError, extract_hints
from operators.imports import load_kernelbench
from schemas.config import EvaluateConfig, PipelineConfig
from schemas.records import Problem
from tasks.common import StageContext, log, progress_bar, reason_in_brief, stage_run
from tasks.plots import close, line_chart
from training.evaluation import FAST_P, EvalSummary, evaluate_policy, level_of, summarize_evaluation
from training.model import load_policy, resolve_device
from training.policies import TeacherPolicy
from training.rollout import Generation, HFRolloutEngine, RecordedEngine
from verifier.analysis import AnalysisError

HEADLINE = ("accuracy/turn_1", "fast_1/eager/turn_1", "fast_1/compile/turn_1", "speedup/geomean_eager",
            "faster_rate", "turns_per_pass")


def run_evaluate(config: PipelineConfig, from_run: str | None, pipeline_mlflow_run_id: str | None = None,
                 pipeline_run_id: str | None = None) -> str:
    """Evaluate a policy; a stage run's policy is nested under that run in MLflow, so stages compare side by
    side, and every evaluation is one stage run whose metrics `kerneldojo compare` reads back."""
    cfg = config.evaluate
    if from_run is None and cfg.needs_upstream_run:
        raise ValueError("evaluate needs --from-run: the stage run whose policy (evaluate.policy=run) or whose "
                         "held-out split (evaluate.problems=split) is evaluated")
    parents = [from_run] if from_run else []
    with stage_run("evaluate", config, parents, pipeline_mlflow_run_id, pipeline_run_id,
                   nest_under_parent=cfg.policy == "run") as ctx:
        policy, who = _policy(ctx, cfg, from_run, config)
        # an evaluation of a stage in untimed_after judges correctness only (set before the pool is first used)
        ctx.untimed = cfg.policy == "run" and who.split(":")[0] in cfg.untimed_after
        problems = _problems(ctx, cfg, from_run)
        compiled = config.verifier.backend == "cuda" and config.verifier.compare_torch_compile  # a baseline timed
        # evaluates: the stage (sft, ..., leap_rl) or the kind of policy (model, endpoint, template); policy: which
        ctx.mlflow.set_tags({"kerneldojo.evaluates": who.split(":")[0] if cfg.policy == "run" else cfg.policy,
                             "kerneldojo.policy": who, "kerneldojo.problems": _problems_tag(cfg),
                             "kerneldojo.timed": str(ctx.timed).lower()})
        if isinstance(policy, TeacherPolicy):
            _prepare_teacher(ctx, policy, problems, config.verifier.backend)
        with progress_bar("evaluate: turns", cfg.max_turns) as turn_done:
            def verify_turn(pairs):  # one call per turn, every sample still failing: its own bar counts verdicts
                verdicts = ctx.verify(pairs, f"verify eval ({len(pairs)} samples)")
                turn_done(1)
                return verdicts

            summary = evaluate_policy(policy, verify_turn, problems, cfg, config.verifier.backend, config.seed,
                                      timed=ctx.timed, compiled=compiled)
        if isinstance(policy, RecordedEngine):  # > 0: a run again of an evaluation cut short, its samples replayed
            ctx.summary["generate_calls_replayed"] = policy.replayed_calls
        # The references are checked after the judging, not before: each ran as its problem's first candidate was
        # judged (a KernelBench level-1 reference at full size is GBs of trials, which the judge had dropped again
        # long before the candidates came when every reference was checked first: each ran twice), so only those
        # no candidate reached (compile errors, refusals) run now, and which problems are left out does not
        # depend on the policy. A reference that broke while judged, or fails its check, is left out, not scored.
        # No verdict follows these checks: their trials keep nothing, and their bytes never leave the sandboxes.
        broken = {**ctx.pool.broken, **ctx.references_broken([p for p in problems if p.id not in ctx.pool.broken],
                                                             keep=False)}
        runnable = [p for p in problems if p.id not in broken]
        if not runnable:
            hint = " (KernelBench at full size needs tens of GB a problem: on the cpu backend, scale it down with " \
                "--set evaluate.scale_to_mb=64)" if cfg.problems == "kernelbench" and not cfg.scale_to_mb and \
                config.verifier.backend == "cpu" else ""
            raise RuntimeError(f"none of the {len(problems)} problems has a reference that runs here{hint}; first: "
                               f"{reason_in_brief(next(iter(broken.values()), ''))}")
        ctx.log_problems(runnable, ctx.run_id if cfg.problems == "kernelbench" else
                         ctx.warehouse.ancestor(from_run, "hints").id, "evaluation")
        summary = summarize_evaluation([r for r in summary.rollouts if r.problem.id not in broken], cfg, ctx.timed,
                                       compiled)
        ctx.warehouse.add_eval_results(ctx.run_id, summary.rows)
        metrics = {**summary.metrics, "problems": len(runnable), "problems/reference_broken": len(broken)}
        ctx.mlflow.log_metrics(metrics)
        _log_tables_and_plots(ctx, cfg, summary, problems, broken, compiled)
        ctx.summary.update(evaluated=who, problems_from=_problems_tag(cfg), problems=len(runnable),
                           reference_broken=len(broken), timed=ctx.timed, compared_to_torch_compile=compiled,
                           **{k: round(v, 3) for k, v in summary.metrics.items() if "/" not in k or
                              k.startswith(("accuracy/", "pass_at_", "avg_at_")) or k in HEADLINE},
                           metrics={k: round(v, 4) for k, v in metrics.items()})
        return ctx.run_id


def _policy(ctx: StageContext, cfg: EvaluateConfig, from_run: str | None, config: PipelineConfig):
    """(the policy, who it is: `<stage>:<run>`, `model:<folder>`, `endpoint:<model>`, `teacher:template`)."""
    from training.policies import EndpointPolicy
    from training.teacher import OpenAITeacher, TemplateTeacher

    if cfg.policy == "template":
        policy = TeacherPolicy(TemplateTeacher(analyser=ctx.analyser), config.verifier.backend)
        return policy, policy.name
    if cfg.policy == "endpoint":
        e = cfg.endpoint
        client = OpenAITeacher(e.base_url, e.model, api_key=os.environ.get(e.api_key_env), concurrency=e.concurrency,
                               retries=e.retries, timeout_s=e.timeout_s, max_tokens=e.max_tokens,
                               cache_dir=str(ctx.home.cache / "endpoint"))
        policy = EndpointPolicy(client)
        return policy, policy.name
    device = resolve_device(config.device)
    if cfg.policy == "model":
        model, tokenizer = load_policy(cfg.model_dir, device)
        return HFRolloutEngine(model, tokenizer, device), f"model:{Path(cfg.model_dir).resolve()}"
    evaluated = ctx.warehouse.succeeded_run(from_run)
    model, tokenizer = load_policy(ctx.warehouse.checkpoint(evaluated.id), device)
    who = f"{evaluated.stage}:{evaluated.id}"
    return _recorded(ctx, HFRolloutEngine(model, tokenizer, device), who), who


def _recorded(ctx: StageContext, engine: HFRolloutEngine, policy: str) -> RecordedEngine:
    """`engine`, its generate calls recorded in the warehouse as they are made and replayed when made again (a
    stage run's checkpoint never changes): an evaluation cut short and run again, on any GPU, judges the same
    candidates, most of them from the verdict cache."""
    def recorded(key: str) -> list[Generation] | None:
        rows = ctx.warehouse.recorded_generations(policy, key)
        return None if rows is None else [Generation(r["token_ids"], r["text"], r["finished"]) for r in rows]

    def record(key: str, generations: list[Generation]) -> None:
        ctx.warehouse.add_generations(ctx.run_id, policy, key, [
            {"token_ids": g.token_ids, "text": g.text, "finished": g.finished} for g in generations])

    return RecordedEngine(engine, recorded, record)


def _prepare_teacher(ctx: StageContext, policy: TeacherPolicy, problems: list[Problem], backend: str) -> None:
    """A teacher's one answer a problem, before any judging, with its progress; a deterministic teacher's answers
    are kept in the warehouse (by its code's version), so an evaluation cut short and run again — KernelBench on
    a GPU box, call after call — asks for none of them again (200 sandboxed answers: ~3 minutes of each call)."""
    ids = [p.id for p in problems]
    known = ctx.warehouse.known_teacher_answers(policy.name, policy.version, backend, ids) if policy.version else {}
    policy.remember(known)
    with progress_bar(f"{policy.name}: answers", len(problems)) as advance:
        advance(len([p for p in problems if p.id in known]))
        policy.prepare([p for p in problems if p.id not in known], advance)
    if policy.version:
        ctx.warehouse.add_teacher_answers(ctx.run_id, policy.name, policy.version, backend,
                                          policy.answers([i for i in ids if i not in known]))


def _problems_tag(cfg: EvaluateConfig) -> str:
    if cfg.problems == "split":
        return f"{cfg.split} split"
    return f"kernelbench levels {','.join(map(str, cfg.levels))}"


def _problems(ctx: StageContext, cfg: EvaluateConfig, from_run: str | None) -> list[Problem]:
    if cfg.problems == "split":
        problems = ctx.warehouse.problems(ctx.warehouse.ancestor(from_run, "hints").id, split=cfg.split)
        if not problems:
            raise RuntimeError(f"no held-out ({cfg.split} split) problems to evaluate; raise "
                               f"synthesize.{cfg.split}_fraction")
        return problems
    found, report = load_kernelbench(cfg.kernelbench_dir, cfg.levels)
    for name, why in report.skipped.items():
        log.warning("not a KernelBench problem, skipped: %s (%s)", name, why)
    if cfg.limit_per_level:  # the first N of each level, in KernelBench's own order
        found = [p for level in sorted({p.difficulty for p in found})
                 for p in [q for q in found if q.difficulty == level][:cfg.limit_per_level]]
    if not found:
        raise RuntimeError(f"no problems of levels {cfg.levels} under {cfg.kernelbench_dir}")

    if cfg.scale_to_mb:
        found = _scaled_down(ctx, found, int(cfg.scale_to_mb * 2**20))

    known = ctx.warehouse.known_hints(p.id for p in found)
    # the sizes a judgement's memory estimate starts from (verifier.memory_admission: reference), from the same
    # export as the hints: recorded with the problem, so a later evaluation of it exports nothing again
    sized = ctx.warehouse.known_sizes(p.id for p in found)
    wants_sizes = ctx.config.verifier.memory_admission == "reference"

    def hinted(problem: Problem) -> Problem:  # torch.export runs the reference: in a sandbox
        if problem.id in known and (problem.id in sized or not wants_sizes):
            return problem.model_copy(update={"hints": known[problem.id],
                                              "measures": {**problem.measures, **sized.get(problem.id, {})}})
        try:
            hints = extract_hints(problem, ctx.analyser)
            export = ctx.analyser.export(problem)  # the analysis extract_hints made (kept by the analyser)
        except HintError:  # the prompt goes without hints; whether the reference runs is checked next
            return problem
        except AnalysisError:  # hints without sizes: its judgements take memory_limit_mb until its reference ran
            return problem.model_copy(update={"hints": hints})
        sizes = {k: export[k] for k in ("input_bytes", "output_bytes", "weight_bytes")
                 if isinstance(export.get(k), int)}
        return problem.model_copy(update={"hints": hints, "measures": {**problem.measures, **sizes}})

    with progress_bar("shape hints (sandboxed)", len(found)) as advance, \
            ThreadPoolExecutor(max_workers=max(1, min(8, len(os.sched_getaffinity(0))))) as threads:
        problems = []
        for problem in threads.map(hinted, found):
            problems.append(problem)
            advance(1)
    ctx.warehouse.add_problems(ctx.run_id, problems)
    return problems


def _scaled_down(ctx: StageContext, problems: list[Problem], budget_bytes: int) -> list[Problem]:
    """Each problem at most `budget_bytes` of inputs and outputs (evaluate.scale_to_mb), said per problem: never
    silently smaller. One that cannot be analysed stays as it is (its reference check reports why it cannot run)."""
    def scaled(problem: Problem) -> Problem:
        try:
            return ctx.analyser.scaled_down(problem, budget_bytes)
        except AnalysisError as exc:
            log.warning("not scaled down: %s", reason_in_brief(str(exc)))
            return problem

    with progress_bar("scaling sizes down (sandboxed)", len(problems)) as advance, \
            ThreadPoolExecutor(max_workers=max(1, min(8, len(os.sched_getaffinity(0))))) as threads:
        out = []
        for problem in threads.map(scaled, problems):
            out.append(problem)
            advance(1)
    for problem in out:
        if problem.scale > 1:
            sizes = ", ".join(f"{n} {a}->{b}" for n, (a, b) in problem.measures["scaled_sizes"].items())
            log.info("%s scaled down %.0fx: %s", problem.name, problem.scale, sizes)
    return out


def _log_tables_and_plots(ctx: StageContext, cfg: EvaluateConfig, summary: EvalSummary, problems: list[Problem],
                          broken: dict[str, str], compiled: bool) -> None:
    """problems.parquet (one row per problem and sample, the left-out problems with their reason), and plots:
    accuracy by turn and fast_p against p, per level."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = []
    for r in summary.rollouts:
        first, final = r.turns[0].verdict, r.turns[r.passed_turn - 1].verdict if r.passed_turn else None
        table.append({"problem_id": r.problem.id, "name": r.problem.name, "level": level_of(r.problem),
                      "scale": r.problem.scale,
                      "sample": r.index, "turns": len(r.turns), "passed_turn": r.passed_turn or None,
                      "category_turn_1": first.category.value, "category_last": r.turns[-1].verdict.category.value,
                      "speedup_vs_eager": final.speedup_vs_eager if final else None,
                      "speedup_vs_compile": final.speedup_vs_compile if final else None,
                      "roofline_fraction": final.roofline_fraction if final else None,
                      "detail_turn_1": first.detail[:500], "left_out": None})
    for p in problems:
        if p.id in broken:
            table.append({"problem_id": p.id, "name": p.name, "level": level_of(p), "scale": p.scale,
                          "sample": None, "turns": 0,
                          "passed_turn": None, "category_turn_1": None, "category_last": None,
                          "speedup_vs_eager": None, "speedup_vs_compile": None, "roofline_fraction": None,
                          "detail_turn_1": None, "left_out": broken[p.id][:1000]})
    path = ctx.artifacts / "problems.parquet"
    pq.write_table(pa.Table.from_pylist(table), path)
    ctx.mlflow.log_artifact(path)

    ctx.mlflow.log_text(timing_protocol(ctx.config) if ctx.timed else "Not timed: this evaluation judged "
                        "correctness only (evaluate.untimed_after, verifier.untimed_stages).\n", "timing_protocol.md")
    m = summary.metrics
    levels = sorted({level_of(r.problem) for r in summary.rollouts if level_of(r.problem)})
    prefixes = [f"{level}/" for level in levels] or [""]
    label = lambda prefix: prefix.rstrip("/") or "all"  # noqa: E731
    fig = line_chart({label(pre): [(t, m[f"{pre}accuracy/turn_{t}"]) for t in range(1, cfg.max_turns + 1)]
                      for pre in prefixes}, "accuracy by turn, with the verifier's feedback", "turn", "accuracy")
    ctx.mlflow.log_figure(fig, "accuracy_by_turn.png")
    close(fig)
    if not ctx.timed:  # correctness only: no fast_p beyond fast_0 to plot
        return
    fig = line_chart({f"{label(pre)} vs {base}": [(p, m[f"{pre}fast_{p:g}/{base}/turn_1"]) for p in FAST_P]
                      for pre in prefixes for base in (("eager", "compile") if compiled else ("eager",))},
                     "fast_p against p (turn 1)", "p (speedup threshold)", "fast_p")
    ctx.mlflow.log_figure(fig, "fast_p.png")
    close(fig)


def timing_protocol(config: PipelineConfig) -> str:
    """How the speedups of this evaluation were measured, to be read next to them."""
    v = config.verifier
    drawn = "drawn on the GPU by the reference's get_inputs" if v.backend == "cuda" else "drawn by get_inputs"
    return (f"# Timing protocol\n\nbackend {v.backend}; {v.trials} correctness trials (fresh seed and inputs each, "
            f"{drawn}; tolerance `{v.tolerance}`); speed: {v.timing_warmup} warm-up calls, then at least {v.timing_runs} "
            "timed calls (more for short calls, towards 20 ms of timed work, at most 100), the median reported; "
            "CUDA events with the L2 cache flushed before every call on cuda, the judge's own clock around the "
            "timed calls; every timed call gets its own input set (rotated through judge-made sets, never "
            "reused), outputs of timed calls checked against the reference; the reference is timed the same "
            "way in its own sandbox, eager and under torch.compile"
            f"{'' if v.compare_torch_compile else ' (torch.compile baseline off)'}. fast_p counts a kernel that is "
            "correct and more than p times faster than the baseline, over all samples.\n")


evaluate_task = task(run_evaluate, name="evaluate", cache_policy=NO_CACHE)
