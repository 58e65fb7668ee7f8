"""`kerneldojo eval` as a Prefect flow: evaluate anything that writes kernels with the KernelBench protocol.
A thin layer over the `evaluate` stage (one stage run, lineage to the evaluated run when there is one)."""

from __future__ import annotations

from prefect import flow

from schemas.config import ConfigError, load_config
from tasks import STAGE_TASKS


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
    """Evaluate the policy of a stage run (`from_run`), a HF model folder (`model_dir`), an OpenAI-compatible
    endpoint (`endpoint`, `endpoint_model`) or the template teacher (`template`), on a KernelBench checkout
    (`kernelbench_dir`, `levels`, `limit_per_level`) or on `from_run`'s held-out split. `overrides` (KEY=VALUE)
    win over the rest. Returns the evaluate stage run id."""
    chosen = eval_overrides(from_run, model_dir, endpoint, endpoint_model, template, kernelbench_dir, levels,
                            limit_per_level)
    config = load_config(config_path, [*chosen, *(overrides or [])])
    config.check_paths(["evaluate"])
    return STAGE_TASKS["evaluate"](config, from_run)
