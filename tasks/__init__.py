"""Prefect tasks, one module per stage; `STAGE_FUNCTIONS` maps a stage name to its body."""

from tasks.distill import distill_task, run_distill
from tasks.evaluate import evaluate_task, run_evaluate
from tasks.hints import hints_task, run_hints
from tasks.rft import rft_task, run_rft
from tasks.rl import leap_rl_task, run_leap_rl, run_warmup_rl, warmup_rl_task
from tasks.sft import run_sft, sft_task
from tasks.synthesize import run_synthesize, synthesize_task

STAGE_TASKS = {
    "synthesize": synthesize_task, "hints": hints_task, "distill": distill_task, "sft": sft_task,
    "rft": rft_task, "warmup_rl": warmup_rl_task, "leap_rl": leap_rl_task, "evaluate": evaluate_task,
}
TRAINING_STAGES = ("sft", "rft", "warmup_rl", "leap_rl", "evaluate")  # the policy on `device`
VERIFYING_STAGES = ("distill", "rft", "warmup_rl", "leap_rl", "evaluate")  # candidates on `verifier.backend`


def stage_tags(config, stage: str) -> list[str]:
    """Prefect tags of a stage's task run: `kerneldojo`, `stage:<name>`, and `gpu` when it trains or judges on a
    GPU, so a concurrency limit on `gpu` (`prefect concurrency-limit create gpu 1`) runs one GPU stage at a time."""
    gpu = (stage in TRAINING_STAGES and config.device in ("cuda", "auto")) or \
        (stage in VERIFYING_STAGES and config.verifier.backend == "cuda")
    return ["kerneldojo", f"stage:{stage}", *(["gpu"] if gpu else [])]


def run_stage_task(stage: str, config, *args, **kwargs) -> str:
    """The stage's Prefect task, tagged (see `stage_tags`)."""
    from prefect import tags

    with tags(*stage_tags(config, stage)):
        return STAGE_TASKS[stage](config, *args, **kwargs)


STAGE_FUNCTIONS = {
    "synthesize": run_synthesize, "hints": run_hints, "distill": run_distill, "sft": run_sft, "rft": run_rft,
    "warmup_rl": run_warmup_rl, "leap_rl": run_leap_rl, "evaluate": run_evaluate,
}
