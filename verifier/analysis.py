"""Untrusted reference programs analysed in sandboxes, never in a stage's own process.

An imported problem (a KernelBench folder, a Hugging Face dataset) is code from outside: loading it runs
its module, and torch.export runs its `get_init_inputs`, `get_inputs` and `Model`. The stages that need
that (synthesize: structural dedup and decontamination; hints; the template teacher) ask a
`ReferenceAnalyser`, which runs the analysis in an `analyse` sandbox with the verifier's walls and
limits. A problem whose analysis fails, runs out of memory or time, or whose inputs would not fit the
verifier's memory limit is one line in the stage's report, not the stage's crash. Problems this project
generates itself (NNSmith) or defines in its own code (source `builtin`: examples, tests) are analysed in
process.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Any

from schemas.config import VerifierConfig
from schemas.records import Problem

TRUSTED_SOURCES = frozenset({"nnsmith", "builtin"})  # generated here or written in this repository (examples, tests)


class AnalysisError(RuntimeError):
    """The reference cannot be analysed (or run) within the verifier's limits; the message says why."""


def trusted(problem: Problem) -> bool:
    return problem.source in TRUSTED_SOURCES


class ReferenceAnalyser:
    """Analyses references in sandboxes (one per request, on the CPU: fake tensors need no device)."""

    def __init__(self, config: VerifierConfig, cache_dir: str | Path):
        self.config = config.model_copy(update={"spare_sandboxes": 0})
        self.cache_dir = Path(cache_dir)
        self._factory = None
        self._exports: dict[str, dict[str, Any] | AnalysisError] = {}
        self._lock = threading.Lock()

    @property
    def factory(self):
        from verifier.sandboxes import SandboxFactory

        if self._factory is None:
            self._factory = SandboxFactory(self.config, self.cache_dir, "cpu")
        return self._factory

    def _ask(self, message: tuple, what: str):
        box = self.factory.start("analyse")
        try:
            box.start({})
            box.send(message)
            reply = box.receive(self.config.run_timeout_s * 3)
        finally:
            box.close()
        if reply is None:
            raise AnalysisError(f"{what} did not finish within {self.config.run_timeout_s * 3:g} s")
        if reply[0] == "died":
            raise AnalysisError(f"{what} killed the sandbox (exit {reply[1]}; out of memory?)")
        if reply[0] == "analysis_error" and len(reply) == 2 and isinstance(reply[1], str):
            raise AnalysisError(f"{what} failed: {reply[1].strip().splitlines()[-1][:300]}")
        if reply[0] != "analysed" or len(reply) != 2 or not isinstance(reply[1], dict):
            raise AnalysisError(f"{what}: unexpected reply {str(reply)[:120]}")
        return reply[1]

    def export(self, problem: Problem) -> dict[str, Any]:
        """operators.graph.analyse_source of the problem, with its inputs checked against the memory limit."""
        with self._lock:
            cached = self._exports.get(problem.id)
        if cached is None:
            try:
                needs_hub(problem)
                cached = self._ask(("export", problem.reference), f"problem {problem.name or problem.id}")
                limit = self.config.memory_limit_mb << 20
                if not isinstance(cached.get("input_bytes"), int) or not isinstance(cached.get("signature"), str):
                    raise AnalysisError(f"problem {problem.name or problem.id}: malformed analysis")
                if cached["input_bytes"] > limit:
                    raise AnalysisError(f"problem {problem.name or problem.id}: its inputs take "
                                        f"{cached['input_bytes'] / 2**30:.1f} GiB, more than verifier.memory_limit_mb "
                                        f"({self.config.memory_limit_mb} MiB)")
            except AnalysisError as exc:
                cached = exc
            with self._lock:
                self._exports[problem.id] = cached
        if isinstance(cached, AnalysisError):
            raise cached
        return cached

    def scaled_down(self, problem: Problem, budget_bytes: int) -> Problem:
        """The problem with its sizes (operators.imports.size_constants) halved in a sandbox until its inputs,
        outputs and weights take at most `budget_bytes`; its `scale` (how many times smaller) and the sizes it
        changed (`measures["scaled_sizes"]`) recorded. Unchanged when it already fits; AnalysisError when it does
        not and none of its sizes can be halved. The sandbox only names new values for the problem's own sizes,
        each no larger than before: the source is rewritten here."""
        from operators.imports import size_constants, with_size_constants

        what = f"scaling problem {problem.name or problem.id}"
        needs_hub(problem)
        reply = self._ask(("scale", problem.reference, int(budget_bytes)), what)
        sizes, original, scaled = reply.get("sizes"), reply.get("original_bytes"), reply.get("scaled_bytes")
        own = size_constants(problem.reference)
        if not isinstance(sizes, dict) or not all(isinstance(n, str) and n in own and type(v) is int
                                                  and 1 <= v <= own[n] for n, v in sizes.items()) \
                or not all(type(b) is int and b > 0 for b in (original, scaled)):
            raise AnalysisError(f"{what}: malformed reply {str(reply)[:120]}")
        if not sizes:
            if original > budget_bytes:  # said, never silently left at a size the machine may not hold
                raise AnalysisError(f"{what}: none of its sizes can be halved, it stays at "
                                    f"{original / 2**20:.0f} MB of inputs, outputs and weights")
            return problem
        source = with_size_constants(problem.reference, sizes)
        return problem.model_copy(update={
            "id": Problem.make_id(source), "reference": source, "scale": max(1.0, original / scaled),
            "measures": {**problem.measures, "scaled_sizes": {n: [own[n], v] for n, v in sizes.items()}}})

    def teacher(self, problem: Problem, backend: str) -> dict[str, Any]:
        """The template teacher's answer for an untrusted problem: {completion} or {refusal}."""
        return self._ask(("teacher", problem.model_dump_json(), backend), f"problem {problem.name or problem.id}")

    def close(self) -> None:
        if self._factory is not None:
            self._factory.close()


_HUB_LOADS = re.compile(r"\bfrom_pretrained\s*\(|\bhf_hub_download\s*\(|\bsnapshot_download\s*\(")


def hub_cache() -> Path | None:
    """The local Hugging Face hub cache (bound read-only into sandboxes), if there is one."""
    path = Path(os.environ.get("HF_HUB_CACHE") or
                Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface")) / "hub").expanduser()
    return path if path.is_dir() else None


def needs_hub(problem: Problem) -> None:
    """AnalysisError at once for a reference that loads hub models when no local hub cache exists: sandboxes
    have no network, so it could never run (KernelBench level 4 without its models cached)."""
    if _HUB_LOADS.search(problem.reference) and hub_cache() is None:
        raise AnalysisError(f"problem {problem.name or problem.id} loads models from the Hugging Face hub; the "
                            "sandboxes have no network and no local hub cache exists (HF_HOME/hub); cache the "
                            "models on this machine to run it")


def export_analysis(problem: Problem, analyser: ReferenceAnalyser | None) -> dict[str, Any]:
    """analyse_source in this process for problems generated here, in a sandbox for everything else;
    AnalysisError when it cannot be had (untrusted with no analyser: refused, never run here)."""
    if trusted(problem):
        from operators.graph import analyse_source

        try:
            return analyse_source(problem.reference, f"analysis_{problem.id}")
        except Exception as exc:
            raise AnalysisError(f"problem {problem.name or problem.id}: {exc!r}"[:400]) from exc
    if analyser is None:
        raise AnalysisError(f"problem {problem.name or problem.id} ({problem.source}) is untrusted code and no "
                            "sandbox was given to analyse it")
    return analyser.export(problem)
