"""Rollouts: sampling engines (HF `generate`, vLLM) and the multi-turn rollout manager.

The manager keeps exact token ids: every turn continues from the previous context plus
the generated tokens plus the verifier's feedback turn, so the sequence the trainer
scores is exactly the one that was sampled. Each token is tagged with its generated turn
(or -1 for prompt, repair context and feedback tokens) and carries the rollout engine's
log-probability (MirrorPop compares it with the trainer's).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import torch

from schemas.config import GenerationConfig
from schemas.records import Candidate, Problem, Verdict
from training.prompts import extract_code, feedback_message, prompt_messages
from verifier.device_lock import policy_on_device

# a verdict per pair, in order; None where the pair's problem cannot be judged (its reference broke while the
# candidate was judged: the problem's fault, not the candidate's), and the rollouts leave that problem's group out
VerifyBatch = Callable[[list[tuple[Problem, Candidate]]], list[Verdict | None]]


@dataclass
class Generation:
    token_ids: list[int]
    text: str
    finished: bool  # stopped on the end-of-turn token rather than the length limit
    logprobs: list[float] = field(default_factory=list)  # the engine's log pi(token), one per token


class RolloutEngine(Protocol):
    tokenizer: object

    def generate(self, contexts: Sequence[list[int]], config: GenerationConfig, seed: int,
                 on_batch: Callable[[int], None] | None = None) -> list[Generation]: ...

    def sync_weights(self, model) -> None: ...


class HFRolloutEngine:
    """Sampling with `transformers` `generate` on the training model itself (no weight sync needed)."""

    def __init__(self, model, tokenizer, device: str = "cpu"):
        self.model = model
        self.tokenizer = tokenizer
        self.device = device

    def sync_weights(self, model) -> None:
        self.model = model

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
            with policy_on_device(self.device):  # never beside a kernel a judge on the machine times alone
                out = self.model.generate(
                    input_ids=ids.to(self.device), attention_mask=mask.to(self.device), do_sample=True,
                    temperature=config.temperature, top_p=config.top_p, top_k=0,
                    max_new_tokens=config.max_new_tokens, pad_token_id=pad, eos_token_id=eos, output_logits=True,
                    return_dict_in_generate=True)
                new_tokens = out.sequences[:, width:]
                # log pi of each sampled token under the raw policy (temperature 1), as the trainer scores it
                logits = torch.stack(out.logits, dim=1).float()
                token_logp = torch.log_softmax(logits, dim=-1).gather(-1, new_tokens.unsqueeze(-1)).squeeze(-1)
            for row, row_logp in zip(new_tokens.tolist(), token_logp.tolist()):
                tokens = []
                finished = False
                for t in row:
                    tokens.append(t)
                    if t == eos:
                        finished = True
                        break
                text = self.tokenizer.decode(tokens, skip_special_tokens=True)
                results.append(Generation(tokens, text, finished, row_logp[:len(tokens)]))
            del out, logits, token_logp
            if on_batch:
                on_batch(len(batch))
        if was_training:
            self.model.train()
        if torch.device(self.device).type == "cuda":
            # the verifier's sandboxes share this GPU: a batch's logits and KV cache, left in torch's cache,
            # took all 139 GiB of an H200 after a 512-sample batch and the next reference ran out of memory
            torch.cuda.empty_cache()
        return results


def generation_call_key(contexts: Sequence[list[int]], config: GenerationConfig, seed: int) -> str:
    """What a generate call's samples depend on, besides the weights: its contexts (their order and batching
    too: a batch's samples share one random stream), the sampling settings, the seed."""
    payload = json.dumps([[list(c) for c in contexts], config.model_dump(mode="json"), seed], separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


class RecordedEngine:
    """A RolloutEngine for a fixed policy (one stage run's checkpoint) whose generate calls are recorded as they
    are made (`record`), and answered from the record when made again (`recorded`): an evaluation cut short and
    run again samples nothing it sampled before, and gets exactly the same samples — on another GPU model too,
    whose bfloat16 arithmetic need not pick the same tokens (a KernelBench evaluation resumed on an H200 after an
    H100 would otherwise judge other candidates). Log-probs are not recorded (an evaluation does not train)."""

    def __init__(self, engine: RolloutEngine, recorded: Callable[[str], list[Generation] | None],
                 record: Callable[[str, list[Generation]], None]):
        self.engine = engine
        self.tokenizer = engine.tokenizer
        self._recorded, self._record = recorded, record
        self.replayed_calls = 0

    def generate(self, contexts: Sequence[list[int]], config: GenerationConfig, seed: int,
                 on_batch: Callable[[int], None] | None = None) -> list[Generation]:
        key = generation_call_key(contexts, config, seed)
        kept = self._recorded(key)
        if kept is not None and len(kept) == len(contexts):
            self.replayed_calls += 1
            if on_batch:
                on_batch(len(contexts))
            return kept
        generations = self.engine.generate(contexts, config, seed, on_batch)
        self._record(key, generations)
        return generations

    def sync_weights(self, model) -> None:
        raise RuntimeError("a RecordedEngine samples a fixed policy: its weights do not change")


def _load_weights_on_worker(worker, weights) -> None:
    """Runs inside each vLLM worker (`collective_rpc`): copy the trainer's weights into its model."""
    worker.model_runner.model.load_weights(weights=weights)


class VLLMRolloutEngine:
    """Sampling with vLLM (the `gpu` extra). The policy's weights are pushed into vLLM after every update."""

    def __init__(self, model_path: str, tokenizer, gpu_memory_utilization: float = 0.3):
        try:
            from vllm import LLM
        except ImportError as exc:
            raise RuntimeError("rollout_engine: vllm needs the `vllm` package: pip install 'kerneldojo[gpu]'") from exc
        self.tokenizer = tokenizer
        self.llm = LLM(model=str(model_path), dtype="bfloat16", gpu_memory_utilization=gpu_memory_utilization,
                       enable_prefix_caching=True)

    def sync_weights(self, model) -> None:
        weights = [(name, tensor.detach()) for name, tensor in model.state_dict().items()]
        self.llm.collective_rpc(_load_weights_on_worker, args=(weights,))

    def generate(self, contexts: Sequence[list[int]], config: GenerationConfig, seed: int,
                 on_batch: Callable[[int], None] | None = None) -> list[Generation]:
        from vllm import SamplingParams

        params = SamplingParams(temperature=config.temperature, top_p=config.top_p, max_tokens=config.max_new_tokens,
                                seed=seed, logprobs=0, stop_token_ids=[self.tokenizer.eos_token_id])
        with policy_on_device("cuda"):  # vLLM's GPU: never beside a kernel a judge on the machine times alone
            outputs = self.llm.generate([{"prompt_token_ids": list(c)} for c in contexts], params, use_tqdm=False)
        results = []
        for out in outputs:
            choice = out.outputs[0]
            tokens = list(choice.token_ids)
            logprobs = [entry[t].logprob for t, entry in zip(tokens, choice.logprobs or [])]
            finished = bool(tokens) and tokens[-1] == self.tokenizer.eos_token_id
            results.append(Generation(tokens, self.tokenizer.decode(tokens, skip_special_tokens=True), finished,
                                      logprobs))
        if on_batch:
            on_batch(len(contexts))
        return results


@dataclass
class Task:
    """What a rollout group starts from: a problem, or a repair task (BDR) that adds an earlier failed
    attempt and its feedback to the conversation (MusaCoder's x' = Compose(x, c-, f-))."""

    problem: Problem
    failed_completion: str | None = None
    feedback: str | None = None

    @property
    def is_repair(self) -> bool:
        return self.failed_completion is not None

    def messages(self, backend: str) -> list[dict[str, str]]:
        messages = prompt_messages(self.problem, backend)
        if self.is_repair:
            messages += [{"role": "assistant", "content": self.failed_completion},
                         {"role": "user", "content": self.feedback}]
        return messages


@dataclass
class TurnRecord:
    candidate: Candidate
    verdict: Verdict
    generation: Generation
    feedback: str = ""


@dataclass
class Rollout:
    """One trajectory: the token sequence, its per-token turn tags and engine log-probs, and the judged turns."""

    task: Task
    group: int
    index: int  # within the group
    tokens: list[int]
    turn_ids: list[int]
    rollout_logprobs: list[float]
    turns: list[TurnRecord] = field(default_factory=list)
    gated: bool = False

    @property
    def problem(self) -> Problem:
        return self.task.problem

    @property
    def passed_turn(self) -> int:
        """1-based turn of the first pass, 0 if never passed."""
        return next((t + 1 for t, turn in enumerate(self.turns) if turn.verdict.passed), 0)

    @property
    def last_failed(self) -> bool:
        return bool(self.turns) and not self.turns[-1].verdict.passed


def without_unjudgeable(rollouts: list[Rollout], verdicts: dict[int, Verdict | None]) -> list[Rollout]:
    """`rollouts` without every group in which a rollout's latest candidate got no verdict (`verdicts`: id(rollout)
    -> its verdict this turn), the groups left numbered 0, 1, ... in their order: a problem whose reference breaks
    is left out whole, so each group that stays still has all its G rollouts for its advantage and its gate."""
    lost = {r.group for r in rollouts if id(r) in verdicts and verdicts[id(r)] is None}
    if not lost:
        return rollouts
    kept = [r for r in rollouts if r.group not in lost]
    renumbered = {g: i for i, g in enumerate(dict.fromkeys(r.group for r in kept))}
    for r in kept:
        r.group = renumbered[r.group]
    return kept


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


def task_tokens(tokenizer, task: Task, backend: str) -> list[int]:
    text = tokenizer.apply_chat_template(task.messages(backend), tokenize=False, add_generation_prompt=True)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


class ChatPolicy(Protocol):
    """A policy that answers conversations with text (a model behind an endpoint, a teacher): it can be
    evaluated like a trained policy, but has no tokens or log-probs to train on."""

    name: str

    def complete(self, requests: list[tuple[Problem, list[dict[str, str]], int]], config: GenerationConfig) \
            -> list[str]: ...  # (problem, conversation, sampling seed) -> the answer's text


def chat_rollouts(policy: ChatPolicy, verify: VerifyBatch, problems: list[Problem], samples: int, max_turns: int,
                  generation: GenerationConfig, backend: str, seed: int, origin: str) -> list[Rollout]:
    """`multi_turn_rollouts` for a text policy: the same prompts, the same feedback turns (every failed sample may
    try again, up to `max_turns`), the conversation kept as messages instead of token ids."""
    rollouts = [Rollout(Task(p), g, i, [], [], []) for g, p in enumerate(problems) for i in range(samples)]
    conversations = {id(r): r.task.messages(backend) for r in rollouts}
    active = list(rollouts)
    for turn in range(max_turns):
        # the sample's index in its seed: n samples of one conversation are n draws, not one answer n times
        texts = policy.complete([(r.problem, conversations[id(r)], (seed * 1000 + turn) * 1000 + r.index)
                                 for r in active], generation)
        gens = [Generation([], text, True) for text in texts]
        cands = [_candidate(r.problem, gen, backend, turn, r.turns[-1].candidate.id if r.turns else None, origin)
                 for r, gen in zip(active, gens)]
        verdicts = verify([(r.problem, c) for r, c in zip(active, cands)])
        by_rollout = {id(r): v for r, v in zip(active, verdicts)}
        for r, gen, cand, verdict in zip(active, gens, cands, verdicts):
            if verdict is not None:
                r.turns.append(TurnRecord(cand, verdict, gen))
            r.gated = True
        rollouts = without_unjudgeable(rollouts, by_rollout)
        kept = {id(r) for r in rollouts}
        active = [r for r in active if id(r) in kept and r.last_failed]
        if not active or turn == max_turns - 1:
            break
        for r in active:
            r.turns[-1].feedback = feedback_message(r.turns[-1].verdict)
            conversations[id(r)] += [{"role": "assistant", "content": r.turns[-1].generation.text},
                                     {"role": "user", "content": r.turns[-1].feedback}]
    return rollouts


def multi_turn_rollouts(engine: RolloutEngine, verify: VerifyBatch, tasks: list[Task | Problem], group_size: int,
                        max_turns: int, generation: GenerationConfig, backend: str, seed: int, origin: str,
                        gate: Callable[[torch.Tensor], torch.Tensor] | None = None,
                        on_progress: Callable[[str, int], None] | None = None) -> list[Rollout]:
    """G rollouts per task; verify the first turn; groups the `gate` opens (all, if None) let each
    failed rollout read its feedback and try again, up to `max_turns` turns.

    gate: (n_groups, G) bool first-turn failures -> (n_groups,) bool, e.g. the DCP gate.
    """
    tok = engine.tokenizer
    tasks = [t if isinstance(t, Task) else Task(t) for t in tasks]
    rollouts = []
    for g, task in enumerate(tasks):
        base = task_tokens(tok, task, backend)
        for i in range(group_size):
            rollouts.append(Rollout(task, g, i, list(base), [-1] * len(base), [0.0] * len(base)))
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
            r.rollout_logprobs += gen.logprobs or [0.0] * len(gen.token_ids)
            if verdict is not None:
                r.turns.append(TurnRecord(cand, verdict, gen))
        rollouts = without_unjudgeable(rollouts, {id(r): v for r, v in zip(active, verdicts)})
        if turn == 0:
            groups = len(rollouts) // group_size
            failed = torch.tensor([[not r.turns[0].verdict.passed for r in rollouts[g * group_size:(g + 1) * group_size]]
                                   for g in range(groups)], dtype=torch.bool).view(groups, group_size)
            opened = gate(failed) if gate is not None else torch.ones(groups, dtype=torch.bool)
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
            r.rollout_logprobs += [0.0] * len(ids)
    return rollouts
