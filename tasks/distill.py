"""Stage `distill`: a teacher writes solutions; only verified ones become SFT data."""

from __future__ import annotations

from collections import Counter

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.config import PipelineConfig
from schemas.records import Candidate
from tasks.common import progress_bar, stage_run
from training.prompts import extract_code, prompt_messages
from training.teacher import make_teacher


def run_distill(config: PipelineConfig, from_run: str, pipeline_mlflow_run_id: str | None = None,
                pipeline_run_id: str | None = None) -> str:
    with stage_run("distill", config, [from_run], pipeline_mlflow_run_id, pipeline_run_id) as ctx:
        cfg, backend = config.distill, config.verifier.backend
        problems = ctx.warehouse.problems(ctx.warehouse.ancestor(from_run, "hints").id, split="train")
        if cfg.max_problems:
            problems = problems[: cfg.max_problems]
        teacher = make_teacher(cfg.teacher)
        solved, refusals = [], Counter()
        with progress_bar(f"{teacher.name} teacher", len(problems)) as advance:
            for problem in problems:
                out = teacher.solve(problem, backend)
                if out.completion:
                    source = extract_code(out.completion) or ""
                    cand = Candidate(id=Candidate.make_id(problem.id, source, backend), problem_id=problem.id,
                                     source=source, backend=backend, origin=f"teacher:{teacher.name}")
                    solved.append((problem, cand, out.completion))
                else:
                    refusals[(out.refusal or "unknown").split(" (")[0][:80]] += 1
                advance(1)
        verdicts = ctx.verify([(p, c) for p, c, _ in solved], "verify teacher kernels")
        examples = [{"id": c.id, "problem_id": p.id, "task": "kernel", "candidate_id": c.id,
                     "messages": prompt_messages(p, backend, config.hints.max_hint_lines), "completion": completion}
                    for (p, c, completion), v in zip(solved, verdicts) if v.passed]
        ctx.warehouse.add_sft_examples(ctx.run_id, examples)
        categories = Counter(v.category.value for v in verdicts)
        ctx.mlflow.log_metrics({"problems": len(problems), "teacher_solved": len(solved),
                                "verified": len(examples), "coverage": len(examples) / max(len(problems), 1),
                                **{f"verdict/{k}": n for k, n in categories.items()},
                                **{f"refusal/{k}": n for k, n in refusals.items()}})
        if not examples:
            raise RuntimeError(f"the teacher produced no verified solution for {len(problems)} problems "
                               f"(refusals: {dict(refusals)}, verdicts: {dict(categories)})")
        ctx.summary.update(problems=len(problems), verified=len(examples), refused=sum(refusals.values()))
        return ctx.run_id


distill_task = task(run_distill, name="distill", cache_policy=NO_CACHE)
