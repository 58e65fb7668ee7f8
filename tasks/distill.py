"""Stage `distill`: a teacher writes solutions; only verified ones become SFT data. Verified mutants of
them feed the reviewer and error-diagnosis tasks, and the hints feed graph Q&A (MusaCoder's corpora)."""

from __future__ import annotations

import random
from collections import Counter

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.config import PipelineConfig
from schemas.records import Candidate
from tasks.common import progress_bar, stage_run
from training.corpora import diagnosis_example, mutants, qa_examples, reviewer_example
from training.prompts import extract_code, prompt_messages
from training.teacher import make_teacher


def _candidate(problem, completion: str, backend: str, origin: str) -> Candidate:
    source = extract_code(completion) or ""
    return Candidate(id=Candidate.make_id(problem.id, source, backend), problem_id=problem.id, source=source,
                     backend=backend, origin=origin)


def _teacher(config: PipelineConfig, cache, analyser):
    import os

    cfg = config.distill
    if cfg.teacher == "openai":
        o = cfg.openai
        return make_teacher("openai", base_url=o.base_url, model=o.model, api_key=os.environ.get(o.api_key_env),
                            concurrency=o.concurrency, retries=o.retries, timeout_s=o.timeout_s,
                            temperature=o.temperature, max_tokens=o.max_tokens, cache_dir=str(cache / "teacher"))
    return make_teacher(cfg.teacher, analyser=analyser)


def run_distill(config: PipelineConfig, from_run: str, pipeline_mlflow_run_id: str | None = None,
                pipeline_run_id: str | None = None) -> str:
    with stage_run("distill", config, [from_run], pipeline_mlflow_run_id, pipeline_run_id) as ctx:
        cfg, backend = config.distill, config.verifier.backend
        problems = ctx.warehouse.problems(ctx.warehouse.ancestor(from_run, "hints").id, split="train")
        if cfg.max_problems:
            problems = problems[: cfg.max_problems]
        teacher = _teacher(config, ctx.home.cache, ctx.analyser)
        solved, refusals = [], Counter()
        with progress_bar(f"{teacher.name} teacher", len(problems)) as advance:
            outputs = teacher.solve_many(problems, backend)
            advance(len(problems))
        for problem, out in zip(problems, outputs):
            if out.completion:
                solved.append((problem, _candidate(problem, out.completion, backend, f"teacher:{teacher.name}"),
                               out.completion))
            else:
                refusals[(out.refusal or "unknown").split(" (")[0][:80]] += 1
        # Mutants of every solved kernel, judged in one pass with the kernels, block by block: a block's kernels,
        # then its mutants, while the judge still keeps the block's references (trials made once, not twice as
        # when all mutants came after all kernels; a mutant right beside its kernel waited for the kernel's
        # reference instead of running). A mutant whose kernel fails is dropped below.
        bugs = mutants([(p, completion) for p, _, completion in solved], cfg.mutants_per_problem, config.seed)
        bug_candidates = [_candidate(p, mutated, backend, f"mutant:{kind}") for p, _, mutated, kind in bugs]
        bugs_of: dict[str, list[Candidate]] = {}
        for (p, *_), c in zip(bugs, bug_candidates):
            bugs_of.setdefault(p.id, []).append(c)
        block, pairs = max(1, config.verifier.kept_problems // 2), []
        for start in range(0, len(solved), block):
            chunk = solved[start:start + block]
            pairs += [(p, kernel) for p, kernel, _ in chunk]
            pairs += [(p, bug) for p, _, _ in chunk for bug in bugs_of.get(p.id, [])]
        by_id = {c.id: v for (_, c), v in zip(pairs, ctx.verify(pairs, "verify teacher kernels and mutants"))}
        broken = {p.id for p, c in pairs if by_id[c.id] is None}  # a reference that broke: its problem left out
        solved = [s for s in solved if s[0].id not in broken]
        verdicts = [by_id[c.id] for _, c, _ in solved]
        verified = [(p, c, completion) for (p, c, completion), v in zip(solved, verdicts) if v.passed]
        rows = {"kernel": [{"id": c.id, "problem_id": p.id, "task": "kernel", "candidate_id": c.id,
                            "messages": prompt_messages(p, backend, config.hints.max_hint_lines),
                            "completion": completion} for p, c, completion in verified],
                "reviewer": [reviewer_example(p, c.source, v, backend) for (p, c, _), v in zip(solved, verdicts)],
                "diagnosis": [], "qa": [ex for p in problems for ex in qa_examples(p, cfg.qa_per_problem)]}
        passed = {p.id for p, _, _ in verified}
        kept_bugs = [(bug, cand) for bug, cand in zip(bugs, bug_candidates) if bug[0].id in passed]  # verified fixes
        for (problem, fixed, mutated, _), cand in kept_bugs:
            verdict = by_id[cand.id]
            rows["reviewer"].append(reviewer_example(problem, cand.source, verdict, backend))
            if not verdict.passed:
                rows["diagnosis"].append(diagnosis_example(problem, mutated, verdict, fixed, backend))
        rng = random.Random(config.seed)
        examples = []
        for task_name, task_rows in rows.items():
            share = cfg.task_mix.get(task_name, 0.0)
            keep = sorted(rng.sample(range(len(task_rows)), round(share * len(task_rows)))) if task_rows else []
            examples += [task_rows[i] for i in keep]
        ctx.warehouse.add_sft_examples(ctx.run_id, examples)
        ctx.log_examples(examples, ctx.run_id, "produced")
        tasks_kept = Counter(e["task"] for e in examples)
        categories = Counter(v.category.value for v in verdicts)
        ctx.mlflow.log_metrics({"problems": len(problems), "teacher_solved": len(solved), "verified": len(verified),
                                "coverage": len(verified) / max(len(problems), 1), "mutants": len(kept_bugs),
                                **{f"verdict/{k}": n for k, n in categories.items()},
                                **{f"refusal/{k}": n for k, n in refusals.items()},
                                **{f"task/{k}": tasks_kept.get(k, 0) for k in rows}})
        ctx.mlflow.log_json({t: r[:2] for t, r in rows.items()}, "sample_sft_examples.json")
        if not verified:
            raise RuntimeError(f"the teacher produced no verified solution for {len(problems)} problems "
                               f"(refusals: {dict(refusals)}, verdicts: {dict(categories)})")
        ctx.summary.update(problems=len(problems), verified=len(verified), refused=sum(refusals.values()),
                           **{f"sft_{k}": tasks_kept.get(k, 0) for k in rows})
        return ctx.run_id


distill_task = task(run_distill, name="distill", cache_policy=NO_CACHE)
