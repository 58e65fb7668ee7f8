"""One pydantic config per stage, and the pipeline config that holds them all.

Unknown keys and wrong types are errors that name the offending key, so a typo in
a YAML file never silently falls back to a default.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from schemas.records import content_hash

STAGES = ("synthesize", "hints", "distill", "sft", "rft", "warmup_rl", "leap_rl", "evaluate")
StageName = Literal["synthesize", "hints", "distill", "sft", "rft", "warmup_rl", "leap_rl", "evaluate"]  # a choice in forms
# The DAG: the stage whose run each stage reads from (its `--from-run`).
UPSTREAM = {"hints": "synthesize", "distill": "hints", "sft": "distill", "rft": "sft", "warmup_rl": "rft",
            "leap_rl": "warmup_rl", "evaluate": "leap_rl"}
POLICY_STAGES = ("sft", "rft", "warmup_rl", "leap_rl")  # the stages that leave a policy checkpoint


def accepted_parents(stage: str) -> tuple[str, ...]:
    """The stages whose runs `stage` may build on: its upstream stage; for `evaluate`, any policy stage."""
    return POLICY_STAGES if stage == "evaluate" else ((UPSTREAM[stage],) if stage in UPSTREAM else ())


class ConfigError(ValueError):
    """A config that cannot be used, with every offending key named."""


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class VerifierConfig(StrictModel):
    backend: Literal["cpu", "cuda"] = "cpu"
    pool: Literal["local", "ray"] = Field("local", description="local sandboxes, or Ray actors across a cluster")
    ray_address: str | None = Field(None, description="Ray cluster address for pool=ray; None = start a local Ray")
    workers: int = Field(0, ge=0, description="cpu: sandboxes at once (0 = one per core); cuda: GPUs used "
                         "(0 = all visible)")
    compile_workers: int = Field(0, ge=0, description="cuda: candidates in flight at once (builds are CPU work); "
                                 "0 = half the cores")
    trials: int = Field(5, ge=1, description="correctness trials, each with fresh inputs and seed")
    tolerance: Literal["default", "kernelbench"] = "default"
    compile_timeout_s: float = Field(180.0, gt=0)
    run_timeout_s: float = Field(20.0, gt=0)
    memory_limit_mb: int = Field(8192, ge=256)
    sandbox_memory_mb: int = Field(0, ge=0, description="host memory all sandboxes together may use (MB; 0 = 85 % "
                                   "of this machine's or cgroup's): a judgement starts only while its sandbox's "
                                   "memory_limit_mb fits beside those running, and their cgroups are capped to it, so "
                                   "no candidate or reference can take the judge's or the machine's memory")
    memory_admission: Literal["limit", "reference"] = Field(
        "limit", description="how much of sandbox_memory_mb one judgement takes: `limit`, memory_limit_mb; "
        "`reference`, once its problem's reference has run, what that reference's sandbox used (2x its peak + "
        "3 GiB, at most memory_limit_mb), its candidate's sandbox capped there — a candidate killed at that cap is "
        "judged again with its whole limit, so no verdict depends on the estimate; more small problems judged at "
        "once (KernelBench level 2's median trial is 0.2 GB beside level 1's 4 GB). Needs cgroups (else `limit`)")
    gpu_memory_admission: bool = Field(
        True, description="cuda: a judgement also waits until its share of the GPU's memory fits beside those "
        "running (a CUDA context per process and 3x its problem's measured inputs and outputs, plus its weights): "
        "a sandbox's cudaMalloc has no cgroup, and sandboxes stopped for a timing keep their memory, so full-size "
        "KernelBench judgements side by side ran the GPU out of memory")
    gpu_memory_mb: int = Field(0, ge=0, description="cuda: GPU memory (MB per device) judgements may be promised; "
                               "0 = 90 % of what is free on the device when the judge first uses it, less kept_gb (the judge keeps its "
                               "references' expected outputs there)")
    timing_runs: int = Field(10, ge=1)
    timing_warmup: int = Field(2, ge=0)
    compare_torch_compile: bool = Field(True, description="cuda: also time the reference under torch.compile")
    max_detail_chars: int = Field(1500, ge=200)
    use_cache: bool = True
    build_first: bool = Field(
        True, description="a candidate whose problem's reference is not kept at hand is first built, loaded and "
        "constructed (from its problem's init inputs) in a small sandbox of its own: one that fails there for its "
        "own reasons (a weak policy's most common verdicts: a compile error, an error in ModelNew's __init__) is "
        "judged without its reference running a trial (a full-size KernelBench reference: 10-60 s and tens of GB "
        "held); one that is ready is then judged in full (its builds cached)")
    fast_build: bool = Field(True, description="fast build path (precompiled header on cpu; no torch headers on "
                             "cuda) instead of plain load_inline")
    kept_problems: int = Field(128, ge=1, description="problems whose reference trials, timing sets and baselines "
                               "the judge keeps between verdicts; beyond, the least recently judged are dropped "
                               "(and made again if they come back)")
    timed: bool = Field(True, description="time passing candidates (speedups, roofline fraction); false: "
                        "correctness only — a pass earns reward 1 and has no speedup. Per stage: untimed_stages")
    untimed_stages: list[Literal["distill", "rft", "warmup_rl", "leap_rl", "evaluate"]] = Field(
        default_factory=list, description="stages whose verdicts are correctness only (timed=false there): distill "
        "and rft keep what passes, so at thousands of problems timing them is wall time spent on nothing they use")
    kept_gb: float = Field(24.0, gt=0, description="bytes (GB) of problems' data the judge keeps between verdicts "
                           "(reference trials, timing inputs, checked outputs; in memory or on its disk): beyond, "
                           "the least recently judged problems are dropped, as beyond kept_problems")
    stored_trials_gb: float = Field(4.0, gt=0, description="one problem's reference trials kept at most (GB); the "
                                    "trials beyond keep only their outputs' digest and are made again by the "
                                    "reference for each candidate (KernelBench level 1 at full size: 12.8 GB a "
                                    "trial), checked against that digest")
    min_free_disk_gb: float = Field(4.0, ge=0, description="a reference trial is kept on the judge's disk only "
                                    "while this much of that disk stays free beside it (GB); otherwise it is made "
                                    "again for each candidate, as beyond stored_trials_gb. The disk holds the "
                                    "warehouse, MLflow and the verdict store too: trials of several full-size "
                                    "KernelBench problems at once, each within stored_trials_gb, once filled it and "
                                    "ended the stage (H200, session 13)")
    candidate_threads: bool = Field(False, description="let a candidate's process start threads (std::thread, "
                                    "OpenMP); off (isolation: namespaces): refused once its CUDA context is up, "
                                    "before its code runs — a thread outlives the forward and can keep the device "
                                    "or the CPUs busy while others are timed")
    spare_sandboxes: int = Field(4, ge=0, description="sandboxes started ahead of their candidates, per device, "
                                 "so process start and CUDA context creation are off the verdict's clock")
    cache_dir: str | None = Field(None, description="build + verdict cache; default <home>/cache/verifier "
                                  "(share one across homes to build the precompiled header once)")
    isolation: Literal["namespaces", "none"] = Field(
        "namespaces", description="namespaces: every sandbox in its own user/mount/pid/net/ipc namespaces as an "
        "unprivileged uid with seccomp and cgroup limits (needs root); none: a plain process with rlimits, for "
        "trusted code only (its caches are not trustworthy either)")
    timing_noise: float = Field(0.2, ge=0, le=1, description="how far below the judge's own clock a sandbox's "
                                "timing may be before the judge's clock is believed instead (relative)")


class RewardConfig(StrictModel):
    """Constants of the correctness-first reward (MusaCoder Eq. 2)."""

    lam: float = 0.5
    nu_max: float = 4.0


# NNSmith ops the built-in template teacher can solve: the tiny default stays learnable.
TEMPLATE_TEACHER_OPS = ["Abs", "Add", "Sub", "Mul", "Neg", "ReLU", "Sigmoid", "Sin", "Cos", "Atan", "Clip",
                        "LeakyReLU", "Floor", "Ceil", "GELU", "ReduceMean", "TorchReduceSum", "Softmax"]


# `name` or `namespace/name`; anything else (absolute, ./, ~, a file suffix, deeper folders) is a local path
_HUB_DATASET = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?(?<!\.parquet)(?<!\.jsonl)(?<!\.json)")


class SynthesizeConfig(StrictModel):
    num_problems: int = Field(20, ge=0, description="NNSmith problems to synthesize (0: imports only)")
    test_fraction: float = Field(0.2, ge=0.0, lt=1.0, description="share of problems held out for evaluation; "
                                 "split by structure (no test graph is a train graph at other sizes or names)")
    validation_fraction: float = Field(0.0, ge=0.0, lt=1.0, description="share held out for choices (tuning, "
                                       "early stopping), split the same way; the test split is never for choices")
    min_nodes: int = Field(2, ge=1, description="fewest compute nodes of a graph (counted after torch.export)")
    max_nodes: int = Field(4, ge=1, description="most compute nodes of a graph (counted after torch.export); "
                           "each graph draws its count in [min_nodes, max_nodes]")
    cuda_working_set_mb: list[float] = Field(
        default_factory=lambda: [32.0, 2048.0], min_length=2, max_length=2,
        description="[low, high] MB: each graph's GPU-size working set (bytes of inputs + weights + outputs) "
        "is drawn log-uniformly from this range and its shapes solved to reach it (KernelBench levels 1-3: "
        "median ~400 MB, quartiles ~80 MB to ~4 GB)")
    cpu_scale: float = Field(1024.0, ge=1.0, description="verifier.backend=cpu: every graph is the GPU-size graph "
                             "with its working set divided by about this factor (the exact factor is recorded "
                             "on the problem and shown in its prompt); 1 = GPU size")
    max_tensor_elements: int = Field(2 ** 28, ge=1, description="most elements of any one tensor at GPU size")
    fused_fraction: float = Field(0.0, ge=0.0, le=1.0, description="share of graphs built as KernelBench-level-2-"
                                  "like fused chains (GEMM/convolution + bias + activation + norm/pool/reduction); "
                                  "needs Linear, PTMatMul, Conv1d or NCHWConv2d in `ops`")
    dtypes: list[Literal["float32", "float16", "float64"]] = ["float32"]
    ops: list[str] = Field(default_factory=lambda: list(TEMPLATE_TEACHER_OPS),
                           description="NNSmith op names; empty = every op NNSmith offers")
    max_attempts_per_problem: int = Field(20, ge=1)
    generation_timeout_ms: int = Field(2000, ge=100)
    balanced: bool = Field(False, description="draw each graph's op family first (weights below), then its ops")
    family_weights: dict[str, float] = Field(default_factory=dict, description="family -> weight for the "
                                             "balanced mix; unlisted families weigh 1, 0 leaves one out")
    kernelbench_dir: str | None = Field(None, description="also import the problems of a KernelBench checkout")
    kernelbench_levels: list[int] = Field(default_factory=list, description="levels to import; empty = all")
    hf_dataset: str | None = Field(None, description="also import PyTorch modules from a HF dataset (folder, "
                                   "parquet/json file or name)")
    hf_code_column: str = "code"
    hf_limit: int | None = Field(None, ge=1)
    decontaminate_against: str | None = Field(None, description="a KernelBench checkout: drop problems that "
                                              "match it structurally or by n-gram overlap")
    ngram_n: int = Field(13, ge=3)
    max_ngram_overlap: float = Field(0.5, gt=0, le=1)

    @model_validator(mode="after")
    def _ranges(self) -> "SynthesizeConfig":
        if self.min_nodes > self.max_nodes:
            raise ValueError(f"min_nodes ({self.min_nodes}) must be <= max_nodes ({self.max_nodes})")
        if self.test_fraction + self.validation_fraction >= 1:
            raise ValueError(f"test_fraction + validation_fraction must leave problems to train on (got "
                             f"{self.test_fraction} + {self.validation_fraction})")
        low, high = self.cuda_working_set_mb
        if not 0 < low <= high:
            raise ValueError(f"cuda_working_set_mb must be [low, high] with 0 < low <= high (got {[low, high]})")
        return self

    def check_paths(self) -> None:
        """Name the key of an import path that does not exist, before any work is done. (Not a validator:
        a config must stay loadable on a machine without the data, e.g. to list or resume runs.)
        A name that may be a Hugging Face Hub dataset cannot be checked here; loading it names the key."""
        for key in ("kernelbench_dir", "decontaminate_against"):
            value = getattr(self, key)
            if value is not None and not Path(value).is_dir():
                raise ConfigError(f"synthesize.{key}: no such directory {value}")
        if self.hf_dataset and not Path(self.hf_dataset).exists() and not _HUB_DATASET.fullmatch(self.hf_dataset):
            raise ConfigError(f"synthesize.hf_dataset: no such file or directory {self.hf_dataset} "
                              "(and not a Hugging Face Hub name)")


class HintsConfig(StrictModel):
    max_hint_lines: int = Field(40, ge=1)


SFT_TASKS = ("kernel", "reviewer", "diagnosis", "qa")


class OpenAITeacherConfig(StrictModel):
    """An OpenAI-compatible endpoint (`vllm serve`, `transformers serve`, a hosted model)."""

    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "default"
    api_key_env: str = Field("OPENAI_API_KEY", description="environment variable holding the key (never the key)")
    concurrency: int = Field(8, ge=1)
    retries: int = Field(3, ge=0)
    timeout_s: float = Field(300.0, gt=0)
    temperature: float = Field(0.2, ge=0)
    max_tokens: int = Field(4096, ge=1)


class DistillConfig(StrictModel):
    teacher: Literal["template", "openai"] = "template"
    openai: OpenAITeacherConfig = OpenAITeacherConfig()
    max_problems: int = Field(0, ge=0, description="0 = all training problems")
    mutants_per_problem: int = Field(1, ge=0, description="verified buggy variants per solved problem "
                                     "(negatives for the reviewer and diagnosis tasks)")
    qa_per_problem: int = Field(2, ge=0)
    task_mix: dict[str, float] = Field(default_factory=lambda: {t: 1.0 for t in SFT_TASKS},
                                       description="share of each task's examples kept (0 drops the task)")

    @model_validator(mode="after")
    def _known_tasks(self) -> "DistillConfig":
        unknown = sorted(set(self.task_mix) - set(SFT_TASKS))
        if unknown:
            raise ValueError(f"unknown SFT tasks {unknown}; tasks are {', '.join(SFT_TASKS)}")
        if any(not 0 <= v <= 1 for v in self.task_mix.values()):
            raise ValueError("task_mix shares must lie in [0, 1]")
        return self


class ModelConfig(StrictModel):
    """A tiny Qwen2-style causal LM, random-initialised."""

    vocab_size: int = Field(2048, ge=300)
    tokenizer: Literal["lines", "qwen"] = Field("lines", description="lines: merges span whole lines (short "
                                                "sequences); qwen: loads identically through AutoTokenizer, "
                                                "for serving the tiny model with vLLM or transformers serve")
    hidden_size: int = Field(128, ge=16)
    intermediate_size: int = Field(384, ge=16)
    num_hidden_layers: int = Field(2, ge=1)
    num_attention_heads: int = Field(4, ge=1)
    num_key_value_heads: int = Field(2, ge=1)
    max_position_embeddings: int = Field(4096, ge=128)
    init_from: str | None = Field(None, description="path of a pretrained HF model instead of a tiny one")


class DistributedConfig(StrictModel):
    """Data-parallel training: ranks started by the stage itself (training/distributed.py says why this launcher)."""
    processes: int = Field(1, ge=0, description="training ranks for sft, rft, warmup_rl and leap_rl (one per GPU on "
                                                "cuda; 0 = every visible GPU; several CPU ranks on gloo)")


class SFTConfig(StrictModel):
    model: ModelConfig = ModelConfig()
    epochs: float = Field(50, gt=0)
    learning_rate: float = Field(3e-3, gt=0)
    batch_size: int = Field(4, ge=1)
    max_length: int = Field(2048, ge=64)
    warmup_ratio: float = Field(0.05, ge=0, le=1)
    train_engine: Literal["torch", "deepspeed"] = Field("torch", description="deepspeed: HF Trainer's DeepSpeed "
                                                        "integration (the `gpu` extra), ZeRO stage `zero_stage`")
    zero_stage: Literal[2, 3] = 2


class GenerationConfig(StrictModel):
    max_new_tokens: int = Field(400, ge=1)
    temperature: float = Field(1.0, gt=0)
    top_p: float = Field(0.95, gt=0, le=1)
    batch_size: int = Field(16, ge=1)


class RFTConfig(StrictModel):
    samples_per_problem: int = Field(4, ge=1)
    max_problems: int = Field(0, ge=0, description="sample this many training problems, drawn at random with the "
                              "run's seed (0 = every training problem)")
    generation: GenerationConfig = GenerationConfig()
    max_kept_per_problem: int = Field(4, ge=1)
    keep_fastest_only: bool = False
    include_teacher_data: bool = True
    epochs: float = Field(3, gt=0)
    learning_rate: float = Field(1e-3, gt=0)
    batch_size: int = Field(4, ge=1)
    max_length: int = Field(2048, ge=64)
    train_engine: Literal["torch", "deepspeed"] = "torch"
    zero_stage: Literal[2, 3] = 2


class BDRConfig(StrictModel):
    """Buffered Dynamic Retry (MusaCoder): failed kernels of all-failed groups become repair tasks."""

    enabled: bool = False
    capacity: int = Field(64, ge=1, description="FIFO buffer size")
    p_buf: float = Field(0.25, ge=0, le=1, description="chance that a batch slot draws a buffered repair task")


class MirrorPopConfig(StrictModel):
    """MirrorPop (MusaCoder Eq. 21): drop sequences whose mean |log pi_theta - log pi_rollout| exceeds delta."""

    enabled: bool = True
    delta: float = Field(0.5, gt=0)


class PolicyOptimConfig(StrictModel):
    """Shared by the two RL stages: sampling, engines, PPO-clip surrogate, optimiser, checkpoints."""

    steps: int = Field(2, ge=1)
    prompts_per_step: int = Field(4, ge=1)
    prompts: Literal["all", "frontier"] = Field(
        "all", description="which training problems the steps take: all, round-robin over a seeded shuffle; or "
        "frontier: first those the policy's lineage passed sometimes and failed sometimes at the first turn (its "
        "RFT samples, an earlier RL stage's groups), where a group's rewards differ, then those it never tried, "
        "last those it always passed or always failed (a group with one reward has no advantage)")
    group_size: int = Field(4, ge=2)
    generation: GenerationConfig = GenerationConfig()
    rollout_engine: Literal["hf", "vllm"] = "hf"
    train_engine: Literal["torch", "deepspeed"] = "torch"
    zero_stage: Literal[2, 3] = 2
    bf16: bool = Field(True, description="bf16 autocast when training on a GPU")
    learning_rate: float = Field(1e-4, gt=0)
    clip_low: float = Field(0.2, ge=0)
    clip_high: float = Field(0.28, ge=0)
    loss_agg: Literal["seq-mean-token-mean", "token-mean"] = "seq-mean-token-mean"
    kl_coef: float = Field(0.0, ge=0)
    ppo_epochs: int = Field(1, ge=1)
    mini_batch_size: int = Field(0, ge=0, description="rollouts per optimiser step; 0 = all of the step's rollouts")
    target_kl: float = Field(0.0, ge=0, description="stop a step's updates once a mini-batch's approx_kl to the "
                             "step's old policy passes 1.5x this (PPO's early stop, as Stable-Baselines3's "
                             "target_kl); 0 = every update of ppo_epochs x mini-batches")
    micro_batch_size: int = Field(4, ge=1, description="rollouts per forward/backward (gradient accumulation)")
    grad_clip: float = Field(1.0, gt=0)
    adv_eps: float = Field(1e-6, gt=0)
    bdr: BDRConfig = BDRConfig()
    mirrorpop: MirrorPopConfig = MirrorPopConfig()
    checkpoint_every: int = Field(1, ge=1, description="steps between resumable checkpoints")
    time_budget_s: float = Field(0.0, ge=0, description="stop after the step that reaches this many wall seconds "
                                 "(0 = run every step): methods compared at equal wall time")


class WarmupRLConfig(PolicyOptimConfig):
    """Single-turn GRPO with the correctness-first reward."""


class ScalarRewardConfig(StrictModel):
    """GRPO-MT's fixed reward per outcome tier."""

    first: float = 1.0
    later: float = 0.5
    fail: float = 0.0


class PrimeEchoConfig(StrictModel):
    """MusaCoder Eq. 9 constants, and whether its turn rewards s_k read the kernel's speed."""

    alpha: float = Field(0.7, ge=0, le=1)
    beta1: float = 0.2
    beta2: float = 0.1
    reads_speed: bool = Field(True, description="s_k is MusaCoder Eq. 2 with its speed term (reward.lam): passes "
                              "are timed; off, a pass earns 1 whatever its speed and the stage is judged untimed")


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        merged[key] = _deep_merge(merged[key], value) if isinstance(value, dict) and isinstance(merged.get(key), dict) else value
    return merged


# The papers' baselines as named settings of gate, reward and turns (LEAP Tables 1 and 5).
LEAP_PRESETS: dict[str, dict[str, Any]] = {
    "leap": {"gate": "dcp", "reward": "rank"},
    "grpo": {"max_turns": 1, "reward": "scalar"},
    "grpo_mt": {"gate": "all", "reward": "scalar"},
    "full": {"gate": "all", "reward": "rank"},
    # MURPHY (Ekbote et al. 2025): every failure may debug, a trajectory earns its best turn's execution reward —
    # correctness alone, as its test-pass reward and as the other arms' rewards (a timed arm pays for its timing
    # in steps at equal wall time)
    "murphy": {"gate": "all", "reward": "primeecho",
               "primeecho": {"alpha": 0.0, "beta1": 0.0, "beta2": 0.0, "reads_speed": False}},
}


class LeapRLConfig(PolicyOptimConfig):
    """Multi-turn GRPO: DCP gate, rank-based tournament reward, discounted per-turn advantages (LEAP),
    with MusaCoder's PrimeEcho, BDR and MirrorPop as switches. `preset` fills in a paper baseline."""

    preset: Literal["leap", "grpo", "grpo_mt", "full", "murphy"] | None = None
    max_turns: int = Field(3, ge=1)
    gate: Literal["dcp", "all"] = Field("dcp", description="dcp: LEAP's gate; all: every group may debug")
    tau_min: int = Field(1, ge=0)
    tau_max: int = Field(3, ge=0)
    gamma: float = Field(0.9, gt=0, le=1)
    reward: Literal["rank", "scalar", "primeecho"] = "rank"
    scalar_rewards: ScalarRewardConfig = ScalarRewardConfig()
    primeecho: PrimeEchoConfig = PrimeEchoConfig()
    bdr: BDRConfig = BDRConfig(enabled=True)

    @model_validator(mode="before")
    @classmethod
    def _apply_preset(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("preset"):
            preset = LEAP_PRESETS.get(data["preset"])
            if preset is not None:  # unknown names are reported by the Literal check
                data = _deep_merge(preset, data)  # keys given explicitly win over the preset
        return data

    @model_validator(mode="after")
    def _tau_order(self) -> "LeapRLConfig":
        if self.tau_min > self.tau_max:
            raise ValueError(f"tau_min ({self.tau_min}) must be <= tau_max ({self.tau_max})")
        return self


class EvaluateConfig(StrictModel):
    max_turns: int = Field(3, ge=1)
    samples_per_problem: int = Field(1, ge=1)
    pass_k: list[int] = Field(default_factory=lambda: [1, 5, 10], description="k of the pass@k metrics (unbiased "
                              "estimator, turn 1); those above samples_per_problem are left out")
    generation: GenerationConfig = GenerationConfig(temperature=0.7)
    faster_threshold: float = Field(1.1, gt=0)
    split: Literal["test", "validation"] = Field("test", description="held-out problems to evaluate on; "
                                                 "`validation` for choices, `test` for the numbers you report")
    after: list[Literal["sft", "rft", "warmup_rl"]] = Field(
        default_factory=list, description="the pipeline also evaluates the policy after these stages (the last "
        "stage is always evaluated), each evaluation an MLflow run nested under the stage run it evaluates")
    untimed_after: list[Literal["sft", "rft", "warmup_rl", "leap_rl"]] = Field(
        default_factory=list, description="evaluations of these stages' policies judge correctness only: passes "
        "are not timed (on one GPU, where timing takes the device alone, ~3x faster) and speed metrics are left "
        "out; accuracy by turn and pass@k are the same")
    problems: Literal["split", "kernelbench"] = Field(
        "split", description="split: the held-out split of the evaluated run's problems; kernelbench: the problems "
        "of a KernelBench checkout (kernelbench_dir, levels)")
    kernelbench_dir: str | None = Field(None, description="a KernelBench checkout (its level<N>/ folders)")
    levels: list[int] = Field(default_factory=lambda: [1, 2], description="KernelBench levels to evaluate on")
    limit_per_level: int = Field(0, ge=0, description="first N problems of each level (0 = all)")
    scale_to_mb: float | None = Field(None, gt=0, description="KernelBench problems: halve each one's module-level "
                                      "sizes (batch_size, dim, ...) until its inputs, outputs and weights take at most this "
                                      "many MB, recording the factor per problem; for the cpu backend, where full "
                                      "size (tens of GB) cannot run. null: full size, as KernelBench reports")
    policy: Literal["run", "model", "endpoint", "template"] = Field(
        "run", description="who is evaluated: run: the policy of the stage run given (--from-run); model: a HF "
        "model folder (model_dir); endpoint: an OpenAI-compatible endpoint (endpoint.*); template: the template "
        "teacher, a floor")
    model_dir: str | None = Field(None, description="policy=model: a HF causal-LM folder with its tokenizer")
    endpoint: OpenAITeacherConfig = OpenAITeacherConfig()

    @model_validator(mode="after")
    def _sources_given(self) -> "EvaluateConfig":
        if self.problems == "kernelbench" and not self.kernelbench_dir:
            raise ValueError("evaluate.problems=kernelbench needs evaluate.kernelbench_dir (a KernelBench checkout)")
        if self.policy == "model" and not self.model_dir:
            raise ValueError("evaluate.policy=model needs evaluate.model_dir (a HF model folder)")
        return self

    @property
    def needs_upstream_run(self) -> bool:
        """Whether this evaluation reads a stage run: its policy, or the held-out split of its problems."""
        return self.policy == "run" or self.problems == "split"


class PipelineConfig(StrictModel):
    name: str = "kerneldojo"
    home: str = Field(".kerneldojo", description="warehouse, MLflow store, caches and artifacts")
    seed: int = 0
    device: Literal["cpu", "cuda", "auto"] = "cpu"
    distributed: DistributedConfig = DistributedConfig()
    verifier: VerifierConfig = VerifierConfig()
    reward: RewardConfig = RewardConfig()
    synthesize: SynthesizeConfig = SynthesizeConfig()
    hints: HintsConfig = HintsConfig()
    distill: DistillConfig = DistillConfig()
    sft: SFTConfig = SFTConfig()
    rft: RFTConfig = RFTConfig()
    warmup_rl: WarmupRLConfig = WarmupRLConfig()
    leap_rl: LeapRLConfig = LeapRLConfig()
    evaluate: EvaluateConfig = EvaluateConfig()

    def check_paths(self, stages: Iterable[str] = STAGES) -> None:
        """Fail on a configured input path of these stages that does not exist, naming its key."""
        if "synthesize" in stages:
            self.synthesize.check_paths()
        if "evaluate" in stages:
            e = self.evaluate
            if e.problems == "kernelbench" and not Path(e.kernelbench_dir).is_dir():
                raise ConfigError(f"evaluate.kernelbench_dir: no such directory {e.kernelbench_dir}")
            if e.policy == "model" and not (Path(e.model_dir) / "config.json").is_file():
                raise ConfigError(f"evaluate.model_dir: no HF model folder (config.json) at {e.model_dir}")

    def stage_config(self, stage: str) -> dict[str, Any]:
        """What a stage run records as its config: its own section plus the shared sections."""
        if stage not in STAGES:
            raise ConfigError(f"unknown stage {stage!r}; stages are {', '.join(STAGES)}")
        shared = {"seed": self.seed, "device": self.device, "distributed": self.distributed.model_dump(), "verifier": self.verifier.model_dump(),
                  "reward": self.reward.model_dump()}
        return {stage: getattr(self, stage).model_dump(), **shared}


def config_hash(config: dict[str, Any]) -> str:
    return content_hash(json.dumps(config, sort_keys=True, default=str))


def _format_validation_error(err: ValidationError, origin: str) -> str:
    """One line naming every offending key."""
    problems = []
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"]) or "<root>"
        if e["type"] == "extra_forbidden":
            problems.append(f"{key}: unknown key")
        else:
            problems.append(f"{key}: {e['msg']} (got {e.get('input')!r})")
    return f"invalid config ({origin}): " + "; ".join(problems)


def _apply_override(data: dict[str, Any], override: str) -> None:
    if "=" not in override:
        raise ConfigError(f"override {override!r} must look like key.sub=value")
    key, raw = override.split("=", 1)
    node = data
    parts = key.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"override {override!r}: {part!r} is not a section")
    try:
        node[parts[-1]] = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise ConfigError(f"--set {override!r}: not valid YAML: {_yaml_problem(exc)}") from None


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """PyYAML's message without its multi-line excerpt of the text."""
    problem = getattr(exc, "problem", None)
    mark = getattr(exc, "problem_mark", None)
    if problem is None:
        return " ".join(str(exc).split())
    return f"{problem} at column {mark.column + 1}" if mark is not None else problem


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> PipelineConfig:
    """Read a YAML pipeline config (None = the embedded tiny defaults) and apply key=value overrides."""
    origin = str(path) if path else "embedded defaults"
    data: dict[str, Any] = {}
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"config file not found: {path}")
        try:
            loaded = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" (line {mark.line + 1})" if mark is not None else ""
            raise ConfigError(f"config file {path} is not valid YAML{where}: {_yaml_problem(exc)}") from exc
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"config file {path} must hold a mapping at the top level")
        data = loaded or {}
    for override in overrides or []:
        _apply_override(data, override)
    try:
        return PipelineConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(_format_validation_error(err, origin)) from None
