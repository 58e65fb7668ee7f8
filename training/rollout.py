"""Rollouts: an HF `generate` engine and the multi-turn rollout manager.

The manager keeps exact token ids: every turn continues from the previous
context plus the generated tokens plus the verifier's feedback turn, so the
sequence the trainer scores is exactly the one that was sampled. Each token is
tagged with its generated turn (or -1 for prompt and feedback tokens).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from schemas.config import GenerationConfig
from schemas.records import Candidate, Problem, Verdict
from training.prompts import extract_code, feedback_message, prompt_messages

VerifyBatch = Callable[[list[tuple[Problem, Candidate]]], list[Verdict]]


@dataclass
class Generation:
    token_ids: list[int]
    text: str
    finished: bool  # stopped on the end-of-turn token rather than the length limit


class HFRolloutEngine:
    """Sampling with `transformers` `generate`; the default engine (vLLM plugs in behind the same method)."""

    def __init__(self, model, tokenizer, device: str = "cpu"):
        self.model = model
        self.tokenizer = tokenizer
        self.device = device

    @torch.no_grad()
    def generate(self, contexts: Sequence[list[int]], config: GenerationConfig, seed: int,
                 on_batch: Callable[[int], None] | None = None) -> list[Generation]:
        was_training = self.model.training
        self.model.eval()
        torch.manual_seed(seed)
        pad, eos = self.tokenizer.pad_token_id, self.tokenizer.eos_token_id
        results: list[Generation] = []
        for start in range(0, len(contexts), config.batch_size):
            batch = contexts[start:start + config.batch_size]
            width = max(len(c) for c in batch)
            ids = torch.full((len(batch), width), pad, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for i, c in enumerate(batch):  # left padding: generation continues at the right edge
                ids[i, width - len(c):] = torch.tensor(c)
                mask[i, width - len(c):] = 1
            out = self.model.generate(
                input_ids=ids.to(self.device), attention_mask=mask.to(self.device), do_sample=True,
                temperature=config.temperature, top_p=config.top_p, top_k=0, max_new_tokens=config.max_new_tokens,
                pad_token_id=pad, eos_token_id=eos)
            for row in out[:, width:].tolist():
                tokens = []
                finished = False
                for t in row:
                    tokens.append(t)
                    if t == eos:
                        finished = True
                        break
                text = self.tokenizer.decode(tokens, skip_special_tokens=True)
                results.append(Generation(tokens, text, finished))
            if on_batch:
                on_batch(len(batch))
        if was_training:
            self.model.train()
        return results


@dataclass
class TurnRecord:
    candidate: Candidate
    verdict: Verdict
    generation: Generation
    feedback: str = ""


@dataclass
class Rollout:
    """One trajectory: the token sequence, its per-token turn tags, and the judged turns."""

    problem: Problem
    group: int
    index: int  # within the group
    tokens: list[int]
    turn_ids: list[int]
    turns: list[TurnRecord] = field(default_factory=list)
    gated: bool = False

    @property
    def passed_turn(self) -> int:
        """1-based turn of the first pass, 0 if never passed."""
        return next((t + 1 for t, turn in enumerate(self.turns) if turn.verdict.passed), 0)

    @property
    def last_failed(self) -> bool:
        return bool(self.turns) and not self.turns[-1].verdict.passed


def _candidate(problem: Problem, generation: Generation, backend: str, turn: int, parent: str | None,
               origin: str) -> Candidate:
    source = extract_code(generation.text) or generation.text
    return Candidate(id=Candidate.make_id(problem.id, source, backend), problem_id=problem.id, source=source,
                     backend=backend, turn=turn, parent_id=parent, origin=origin)


def feedback_tokens(tokenizer, generation: Generation, verdict: Verdict) -> tuple[list[int], str]:
    """Tokens of the user turn that carries feedback, closing the assistant turn first if it was cut off."""
    text = feedback_message(verdict)
    closing = "" if generation.finished else "<|im_end|>"
    turn = f"{closing}\n<|im_start|>user\n{text}<|im_end|>\n<|im_start|>assistant\n"
    return tokenizer(turn, add_special_tokens=False)["input_ids"], text


def prompt_tokens(tokenizer, problem: Problem, backend: str, max_hint_lines: int = 40) -> list[int]:
    text = tokenizer.apply_chat_template(prompt_messages(problem, backend, max_hint_lines), tokenize=False,
                                         add_generation_prompt=True)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def multi_turn_rollouts(engine: HFRolloutEngine, verify: VerifyBatch, problems: list[Problem], group_size: int,
                        max_turns: int, generation: GenerationConfig, backend: str, seed: int, origin: str,
                        gate: Callable[[torch.Tensor], torch.Tensor] | None = None,
                        on_progress: Callable[[str, int], None] | None = None) -> list[Rollout]:
    """G rollouts per problem; verify the first turn; groups the `gate` opens (all, if None)
    let each failed rollout read its feedback and try again, up to `max_turns` turns.

    gate: (n_groups, G) bool first-turn failures -> (n_groups,) bool, e.g. the DCP gate.
    """
    tok = engine.tokenizer
    rollouts = []
    for g, problem in enumerate(problems):
        base = prompt_tokens(tok, problem, backend)
        for i in range(group_size):
            rollouts.append(Rollout(problem, g, i, list(base), [-1] * len(base)))
    active = list(rollouts)
    for turn in range(max_turns):
        gens = engine.generate([r.tokens for r in active], generation, seed=seed * 1000 + turn,
                               on_batch=(lambda n: on_progress("generate", n)) if on_progress else None)
        cands = [_candidate(r.problem, gen, backend, turn, r.turns[-1].candidate.id if r.turns else None, origin)
                 for r, gen in zip(active, gens)]
        verdicts = verify([(r.problem, c) for r, c in zip(active, cands)])
        for r, gen, cand, verdict in zip(active, gens, cands, verdicts):
            r.tokens += gen.token_ids
            r.turn_ids += [turn] * len(gen.token_ids)
            r.turns.append(TurnRecord(cand, verdict, gen))
        if turn == 0:
            failed = torch.tensor([[not r.turns[0].verdict.passed for r in rollouts[g * group_size:(g + 1) * group_size]]
                                   for g in range(len(problems))], dtype=torch.bool)
            opened = gate(failed) if gate is not None else torch.ones(len(problems), dtype=torch.bool)
            for r in rollouts:
                r.gated = bool(opened[r.group])
        active = [r for r in rollouts if r.gated and r.last_failed]
        if not active or turn == max_turns - 1:
            break
        for r in active:
            ids, text = feedback_tokens(tok, r.turns[-1].generation, r.turns[-1].verdict)
            r.turns[-1].feedback = text
            r.tokens += ids
            r.turn_ids += [-1] * len(ids)
    return rollouts
