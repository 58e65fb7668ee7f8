"""The same verifier workers spread over a Ray cluster.

Each Ray actor owns one `Judge` (one sandbox at a time; `num_gpus=1` per actor on cuda),
so a cluster of GPU hosts judges candidates exactly as the local pool does. The verdict
cache is checked on the driver; build caches live in each node's `cache_dir` (one path on a
shared filesystem shares them). A worker that dies mid-candidate loses no verdict: Ray restarts
its actor and runs the call again (`max_restarts`, `max_task_retries`); a candidate whose worker
dies every time is a harness error for the batch, never a verdict.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from schemas.config import VerifierConfig
from schemas.records import Candidate, Problem, Verdict
from verifier.pool import ReferenceBroken, VerifierPool, judged


def _require_ray():
    try:
        import ray
    except ImportError as exc:
        raise RuntimeError("verifier.pool=ray needs the `ray` package: pip install 'kerneldojo[cluster]'") from exc
    return ray


class _JudgeActor:
    def __init__(self, config_json: str, cache_dir: str, base_seed: int):
        from verifier.judge import Devices, Judge

        config = VerifierConfig.model_validate_json(config_json)
        self.judge = Judge(config, cache_dir, base_seed)
        # its one GPU (Ray sets CUDA_VISIBLE_DEVICES), timed alone from every other process on the machine
        self.devices = Devices.gpus([0]) if config.backend == "cuda" else None

    def verify(self, problem_json: str, candidate_json: str) -> str:
        problem = Problem.model_validate_json(problem_json)
        candidate = Candidate.model_validate_json(candidate_json)
        outcome = judged(self.judge, problem, candidate, self.devices)
        if isinstance(outcome, Verdict):
            return outcome.model_dump_json()
        return json.dumps({"reference_broken": [outcome.problem_id, outcome.candidate_id, outcome.why]})

    def reference_error(self, problem_json: str, keep: bool = True) -> str | None:
        from verifier.pool import reference_error

        return reference_error(self.judge, Problem.model_validate_json(problem_json), self.devices, keep)

    def close(self) -> None:
        self.judge.close()


TASK_RETRIES = 2  # a call whose actor died is run again on the restarted actor this many times


class RayVerifierPool(VerifierPool):
    """Judges on Ray actors, one per CPU (cpu) or GPU (cuda) unless `verifier.workers` says otherwise."""

    def __init__(self, config: VerifierConfig, cache_dir: str | Path, base_seed: int = 0,
                 address: str | None = None):
        super().__init__(config, cache_dir, base_seed)
        ray = _require_ray()
        from ray.util import ActorPool

        self._ray = ray
        if not ray.is_initialized():
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        gpu = config.backend == "cuda"
        self.workers = config.workers or max(1, int(ray.cluster_resources().get("GPU" if gpu else "CPU", 1)))
        actor = ray.remote(num_cpus=1, num_gpus=1 if gpu else 0, max_restarts=-1,
                           max_task_retries=TASK_RETRIES)(_JudgeActor)
        self._actors = [actor.remote(config.model_dump_json(), str(self.cache_dir), base_seed)
                        for _ in range(self.workers)]
        self._pool = ActorPool(self._actors)

    def _submit(self, problem: Problem, candidate: Candidate) -> None:
        self._pool.submit(lambda a, job: a.verify.remote(*job), (problem.model_dump_json(), candidate.model_dump_json()))

    def _reference_errors(self, problems: list[Problem], keep: bool) -> Iterator[tuple[str, str | None]]:
        errors = self._pool.map(lambda a, p: a.reference_error.remote(p.model_dump_json(), keep), problems)
        yield from zip((p.id for p in problems), errors)

    def _completed(self, handles: list) -> Iterator[Verdict | ReferenceBroken]:
        for _ in handles:
            try:
                payload = self._pool.get_next_unordered()
            except self._ray.exceptions.RayActorError as exc:
                raise RuntimeError(f"a verifier worker died {TASK_RETRIES + 1} times judging one candidate (the "
                                   f"verdicts before it are cached: re-running the stage keeps them): {exc}") from None
            broken = json.loads(payload).get("reference_broken")
            yield ReferenceBroken(*broken) if broken else Verdict.model_validate_json(payload)

    def close(self) -> None:
        try:  # the judges stop their spare sandboxes and remove their homes; then the actors go
            self._ray.get([actor.close.remote() for actor in self._actors], timeout=30)
        except Exception:  # a dead actor: its leftovers are removed by the next judge on that machine
            pass
        for actor in self._actors:
            self._ray.kill(actor)
        self._actors = []
