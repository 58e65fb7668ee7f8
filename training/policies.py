"""Policies that answer with text rather than tokens, so that anything can be evaluated like a trained policy:
a model behind an OpenAI-compatible endpoint (through the endpoint teacher's client: concurrency, retries, cache)
and a teacher itself (the template teacher is the floor a trained policy should clear)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from schemas.config import GenerationConfig
from schemas.records import Problem
from training.teacher import OpenAITeacher, Teacher, TeacherUnavailable


class EndpointPolicy:
    """Samples from `/v1/chat/completions`; each sample has its own seed, so n samples are n draws (and each is
    cached under its own request). An endpoint that stays down after its retries answers with the reason, which
    the verifier then judges as a candidate without code: the evaluation goes on and the failure is on record."""

    def __init__(self, client: OpenAITeacher):
        self.client = client
        self.name = f"endpoint:{client.model}"

    def complete(self, requests: list[tuple[Problem, list[dict[str, str]], int]], config: GenerationConfig) \
            -> list[str]:
        def one(request):
            _, messages, seed = request
            try:
                return self.client.chat(messages, temperature=config.temperature, top_p=config.top_p,
                                        max_tokens=config.max_new_tokens, seed=seed)
            except TeacherUnavailable as exc:
                return f"(the endpoint failed: {exc})"

        with ThreadPoolExecutor(max_workers=self.client.concurrency) as pool:
            return list(pool.map(one, requests))


class TeacherPolicy:
    """A teacher as a policy: its one answer per problem, at every sample and every turn (it reads no feedback)."""

    def __init__(self, teacher: Teacher, backend: str):
        self.teacher = teacher
        self.backend = backend
        self.name = f"teacher:{teacher.name}"
        self._answers: dict[str, str] = {}
        self._passing: set[str] = set()  # answers the machine decided (TeacherOutput.lasting False): never kept

    @property
    def version(self) -> str | None:
        """Its teacher's code version where its answers are a function of the problem (the template teacher):
        answers that may be kept across runs; None for a teacher that samples."""
        return getattr(self.teacher, "version", None)

    def remember(self, answers: dict[str, str]) -> None:
        """Answers given in an earlier run (`version` the same), asked for no more."""
        self._answers.update(answers)

    def answers(self, problem_ids: list[str]) -> dict[str, str]:
        """Its answers to these problems that the next run would get again (for keeping)."""
        return {pid: self._answers[pid] for pid in problem_ids if pid in self._answers and pid not in self._passing}

    def prepare(self, problems: list[Problem], advance: Callable[[int], None] | None = None, chunk: int = 32) -> None:
        """Answer every problem now, `chunk` at a time, so that a caller can show progress: a sandboxed teacher's
        answers for KernelBench's 200 problems take a minute or more before the first candidate is judged."""
        todo = list({p.id: p for p in problems if p.id not in self._answers}.values())
        for start in range(0, len(todo), chunk):
            part = todo[start:start + chunk]
            self.complete([(p, [], 0) for p in part], None)
            if advance is not None:
                advance(len(part))

    def complete(self, requests: list[tuple[Problem, list[dict[str, str]], int]], config: GenerationConfig) \
            -> list[str]:
        todo = list({p.id: p for p, _, _ in requests if p.id not in self._answers}.values())
        for problem, out in zip(todo, self.teacher.solve_many(todo, self.backend)):
            self._answers[problem.id] = out.completion or f"(the {self.teacher.name} teacher refused: {out.refusal})"
            if not out.lasting:
                self._passing.add(problem.id)
        return [self._answers[p.id] for p, _, _ in requests]
