"""`kerneldojo eval` as a Prefect flow: evaluate anything that writes kernels with the KernelBench protocol.
A thin layer over the `evaluate` stage (one stage run, lineage to the evaluated run when there is one)."""

from __future__ import annotations

from prefect import flow

from schemas.config import ConfigError, load_config
from tasks import run_stage_task


def eval_overrides(from_run: str | None = None, model_dir: str | None = None, endpoint: str | None = None,
                   endpoint_model: str = "default", template: bool = False, kernelbench_dir: str | None = None,
                   levels: list[int] | None = None, limit_per_level: int = 0) -> list[str]:
    """The `evaluate.*` config overrides for who is evaluated on what; one clear error for a wrong choice."""
    chosen = [name for name, given in (("from_run", from_run and not (model_dir or endpoint or template)),
                                       ("model_dir", model_dir), ("endpoint", endpoint), ("template", template))
              if given]
    if len(chosen) != 1:
        raise ConfigError("say who is evaluated: one of --from-run, --model, --endpoint, --template "
                          "(--from-run may come with the others to name the run whose held-out split is used)")
    overrides = {"from_run": ["evaluate.policy=run"],
                 "model_dir": ["evaluate.policy=model", f"evaluate.model_dir={model_dir}"],
                 "endpoint": ["evaluate.policy=endpoint", f"evaluate.endpoint.base_url={endpoint}",
                              f"evaluate.endpoint.model={endpoint_model}"],
                 "template": ["evaluate.policy=template"]}[chosen[0]]
    if kernelbench_dir:
        overrides += ["evaluate.problems=kernelbench", f"evaluate.kernelbench_dir={kernelbench_dir}"]
        if levels:
            overrides.append("evaluate.levels=[" + ",".join(map(str, levels)) + "]")
        if limit_per_level:
            overrides.append(f"evaluate.limit_per_level={limit_per_level}")
    elif levels or limit_per_level:
        raise ConfigError("--level and --limit choose KernelBench problems: give --kernelbench too")
    elif from_run is None:
        raise ConfigError("the held-out split belongs to a run: give --from-run <run> or --kernelbench <checkout>")
    return overrides


@flow(name="kerneldojo-eval", log_prints=True)
def evaluate_flow(from_run: str | None = None, model_dir: str | None = None, endpoint: str | None = None,
                  endpoint_model: str = "default", template: bool = False, kernelbench_dir: str | None = None,
                  levels: list[int] | None = None, limit_per_level: int = 0, config_path: str | None = None,
                  overrides: list[str] | None = None) -> str:
    """Evaluate a policy, a model or an endpoint with the KernelBench protocol. Returns the evaluate stage run id.

    Args:
        from_run: A policy stage run (sft, rft, warmup_rl, leap_rl) to evaluate; with another policy given, the run
            whose held-out split is used.
        model_dir: A HF causal-LM folder to evaluate instead.
        endpoint: An OpenAI-compatible endpoint to evaluate instead (e.g. http://127.0.0.1:8000/v1).
        endpoint_model: The model name the endpoint serves.
        template: Evaluate the template teacher (a floor for trained policies).
        kernelbench_dir: A KernelBench checkout on the worker; empty: the held-out split of `from_run`.
        levels: KernelBench levels (default 1 and 2).
        limit_per_level: The first N problems of each level (0 = all).
        config_path: A pipeline YAML on the worker (empty: the embedded tiny config).
        overrides: Config overrides, KEY=VALUE each; they win over the rest.
    """
    chosen = eval_overrides(from_run, model_dir, endpoint, endpoint_model, template, kernelbench_dir, levels,
                            limit_per_level)
    config = load_config(config_path, [*chosen, *(overrides or [])])
    config.check_paths(["evaluate"])
    return run_stage_task("evaluate", config, from_run)
