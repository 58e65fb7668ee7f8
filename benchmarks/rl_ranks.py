"""The RL update in N data-parallel ranks against one process on the whole batch, measured in the same run: the
loss curve (it must be the same, within bf16 noise on a GPU) and the seconds per update (it should shrink).

Each step draws a batch of synthetic rollouts (token sequences of kernel-like lengths, turn masks, advantages) from
a fixed seed; one process updates on all of it, the ranks on equal shares (training/rl.py normalises the loss over
all ranks). The policy is configs/mini.yaml's (~25 M parameters) unless --small.

    python benchmarks/rl_ranks.py --device cuda --ranks 2 --engine torch
    python benchmarks/rl_ranks.py --device cuda --ranks 2 --engine deepspeed --zero-stage 3
    python benchmarks/rl_ranks.py --device cpu --ranks 2 --small            # gloo, a smoke run
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402


def _config(args):
    from schemas.config import LeapRLConfig

    return LeapRLConfig(micro_batch_size=args.micro_batch, mini_batch_size=0, ppo_epochs=1, learning_rate=1e-4,
                        train_engine=args.engine, zero_stage=args.zero_stage, bf16=True,
                        mirrorpop={"enabled": False})


def _model(args):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    size = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2) if args.small else \
        dict(hidden_size=512, intermediate_size=1536, num_hidden_layers=8, num_attention_heads=8,
             num_key_value_heads=4)
    return Qwen2ForCausalLM(Qwen2Config(vocab_size=4096, max_position_embeddings=4096, **size))


def _batch(args, step: int):
    """`--rollouts` sequences: a prompt of 300-500 tokens and 1-3 turns of 200-900 generated tokens."""
    generator = torch.Generator().manual_seed(1000 + step)
    sequences, advantages, masks = [], [], []
    for _ in range(args.rollouts):
        prompt = int(torch.randint(300, 500, (1,), generator=generator))
        generated = int(torch.randint(200, 900, (1,), generator=generator)) * int(torch.randint(1, 4, (1,), generator=generator))
        length = min(prompt + generated, 3000) if not args.small else min(prompt + generated, 3000) // 10
        sequences.append(torch.randint(1, 4096, (length,), generator=generator).tolist())
        advantages.append(torch.full((length,), float(torch.randn(1, generator=generator))))
        masks.append(torch.arange(length) >= (prompt if not args.small else prompt // 10))
    return sequences, advantages, masks


def _updates(args, ranked: bool) -> tuple[list[float], list[float]]:
    """(loss per step, seconds per step) of `args.steps` updates, on this rank's share when `ranked`."""
    from training.distributed import rank_info
    from training.rl import PolicyTrainer

    me = rank_info()
    device = args.device
    if device == "cuda":
        torch.cuda.set_device(me.local_rank)
        device = f"cuda:{me.local_rank}"
    trainer = PolicyTrainer(_model(args).to(device), _config(args), pad_token_id=0, device=device)
    losses, seconds = [], []
    for step in range(args.steps):
        sequences, advantages, masks = _batch(args, step)
        if ranked:
            share = len(sequences) // me.world_size
            mine = slice(me.rank * share, (me.rank + 1) * share)
            sequences, advantages, masks = sequences[mine], advantages[mine], masks[mine]
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        started = time.perf_counter()
        stats = trainer.update(sequences, advantages, masks)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        seconds.append(time.perf_counter() - started)
        losses.append(stats["loss"])
    return losses, seconds


def _rank(args, events):
    import torch.distributed as dist

    from training.distributed import collective_backend

    if args.engine == "torch" and not dist.is_initialized():
        dist.init_process_group(collective_backend(args.device))
    return _updates(args, ranked=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--engine", choices=["torch", "deepspeed"], default="torch")
    parser.add_argument("--zero-stage", type=int, choices=[2, 3], default=2)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--rollouts", type=int, default=32, help="rollouts per step (all ranks together)")
    parser.add_argument("--micro-batch", type=int, default=4)
    parser.add_argument("--small", action="store_true", help="a tiny policy and short sequences (CPU smoke run)")
    args = parser.parse_args()
    if args.rollouts % args.ranks:
        parser.error("--rollouts must be a multiple of --ranks")

    from training.distributed import launch

    one_loss, one_seconds = _updates(args, ranked=False)
    results = launch(_rank, (args,), args.ranks)
    ranks_loss = [sum(r[0][step] for r in results) for step in range(args.steps)]  # each rank: its share
    ranks_seconds = [max(r[1][step] for r in results) for step in range(args.steps)]
    print(f"{args.engine}{' ZeRO-' + str(args.zero_stage) if args.engine == 'deepspeed' else ''} on {args.device}, "
          f"{args.rollouts} rollouts a step, micro-batch {args.micro_batch}")
    print(f"{'step':>4}  {'loss, 1 process':>16}  {f'loss, {args.ranks} ranks':>16}  {'|diff|':>9}  "
          f"{'s, 1 process':>12}  {f's, {args.ranks} ranks':>12}")
    for step in range(args.steps):
        print(f"{step:>4}  {one_loss[step]:>16.6f}  {ranks_loss[step]:>16.6f}  "
              f"{abs(one_loss[step] - ranks_loss[step]):>9.2e}  {one_seconds[step]:>12.3f}  {ranks_seconds[step]:>12.3f}")
    warm = slice(1, None) if args.steps > 1 else slice(None)  # step 0 pays for kernels' first launches
    speedup = statistics.median(one_seconds[warm]) / statistics.median(ranks_seconds[warm])
    worst = max(abs(a - b) / max(abs(a), 1e-9) for a, b in zip(one_loss, ranks_loss))
    print(f"update speedup with {args.ranks} ranks: {speedup:.2f}x (median of warm steps); "
          f"largest relative loss difference: {worst:.2e}")


if __name__ == "__main__":
    main()
