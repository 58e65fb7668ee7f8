"""A few LEAP steps end to end on one machine, without the orchestration layer: where a step's time goes.

Builds the example problems (verifier/examples.py), distils their reference kernels into a tiny
Qwen2 policy (SFT), then runs LEAP steps (DCP gate, rank reward, per-turn advantages, PPO-clip) with
the real verification pool, printing each step's time split (generate / verify / train).

    python benchmarks/leap_steps.py --backend cuda --device cuda --steps 3
    python benchmarks/leap_steps.py --backend cpu --device cpu --steps 2
    python benchmarks/leap_steps.py --backend cuda --device cuda --train-engine deepspeed --zero-stage 3
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from schemas.config import LeapRLConfig, ModelConfig, RewardConfig, VerifierConfig
from training.model import build_model, train_tokenizer
from training.prompts import completion_text, prompt_messages
from training.rl import PolicyTrainer, leap_step
from training.rollout import HFRolloutEngine, Task
from training.sft import SFTExample, train_sft
from verifier.examples import OPS, example_candidate, example_problem
from verifier.pool import LocalVerifierPool

REASONING = ["1. Operators: one elementwise op.", "2. Shapes: one float32 tensor, contiguous.",
             "3. Strategy: one thread per element.", "4. Memory: read x once, write out once.",
             "5. Edge cases: guard the tail block.", "6. Code:"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--problems", type=int, default=8)
    parser.add_argument("--sft-epochs", type=float, default=40)
    parser.add_argument("--train-engine", choices=["torch", "deepspeed"], default="torch")
    parser.add_argument("--zero-stage", type=int, choices=[2, 3], default=2)
    args = parser.parse_args()

    problems = [example_problem(name, args.backend) for name in list(OPS)[: args.problems]]
    examples = [SFTExample(prompt_messages(p, args.backend), completion_text(REASONING, example_candidate(p, args.backend).source))
                for p in problems]
    texts = [m["content"] for e in examples for m in e.messages] + [e.completion for e in examples]
    tokenizer = train_tokenizer(texts, 2048)
    model = build_model(ModelConfig(), tokenizer, seed=0).to(args.device)
    start = time.perf_counter()
    sft = train_sft(model, tokenizer, examples, epochs=args.sft_epochs, learning_rate=3e-3, batch_size=4,
                    max_length=2048)
    print(f"sft: {sft.steps} steps, final loss {sft.final_loss:.4f}, {time.perf_counter() - start:.1f} s", flush=True)

    config = LeapRLConfig(steps=args.steps, prompts_per_step=4, group_size=4, max_turns=3,
                          generation={"max_new_tokens": 500, "batch_size": 16}, train_engine=args.train_engine,
                          zero_stage=args.zero_stage)
    cache = Path(tempfile.mkdtemp(prefix="kd-leap-"))
    trainer = PolicyTrainer(model, config, tokenizer.pad_token_id, args.device)
    engine = HFRolloutEngine(trainer.model, tokenizer, args.device)
    print(f"{'step':>4}{'generate s':>12}{'verify s':>10}{'train s':>9}{'total s':>9}{'pass@1':>8}"
          f"{'activated %':>13}{'verifier calls':>16}{'tokens':>8}", flush=True)
    with LocalVerifierPool(VerifierConfig(backend=args.backend, compare_torch_compile=False), cache) as pool:
        def verify(pairs):
            by_id = {v.candidate_id: v for v in pool.verify_many({c.id: (p, c) for p, c in pairs}.values())}
            return [by_id[c.id] for _, c in pairs]

        for step in range(args.steps):
            tasks = [Task(problems[(step * 4 + i) % len(problems)]) for i in range(4)]
            t0 = time.perf_counter()
            result = leap_step(engine, trainer, verify, tasks, config, RewardConfig(), args.backend, step,
                               seed=step, run_key="bench")
            m = result.metrics
            print(f"{step:>4}{m['time/generate']:>12.1f}{m['time/verify']:>10.1f}{m['time/train']:>9.1f}"
                  f"{time.perf_counter() - t0:>9.1f}{m['pass_rate/turn_1']:>8.2f}{m['dcp/activated_groups_pct']:>13.0f}"
                  f"{m['verifier_calls']:>16.0f}{m['generated_tokens']:>8.0f}", flush=True)


if __name__ == "__main__":
    main()
