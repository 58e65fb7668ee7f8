from pathlib import Path

import pytest

from schemas.config import ConfigError, PipelineConfig, load_config

ROOT = Path(__file__).resolve().parents[1]


def test_tiny_yaml_is_the_embedded_default():
    assert load_config(ROOT / "configs" / "tiny.yaml") == load_config(None) == PipelineConfig()


def test_unknown_key_is_one_error_naming_the_key(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("sft:\n  epocs: 3\nverifier:\n  trials: 3\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert "sft.epocs: unknown key" in str(err.value)


def test_wrong_type_names_the_key(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("leap_rl:\n  group_size: many\n")
    with pytest.raises(ConfigError, match=r"leap_rl\.group_size"):
        load_config(path)


def test_malformed_yaml_and_missing_file(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("sft: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(path)
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml")


def test_overrides_apply_and_validate():
    cfg = load_config(None, ["sft.epochs=2", "verifier.trials=5", "synthesize.ops=[Add, Mul]"])
    assert cfg.sft.epochs == 2 and cfg.verifier.trials == 5 and cfg.synthesize.ops == ["Add", "Mul"]
    with pytest.raises(ConfigError, match="leap_rl"):
        load_config(None, ["leap_rl.tau_min=4", "leap_rl.tau_max=1"])
    with pytest.raises(ConfigError, match="key.sub=value"):
        load_config(None, ["sft.epochs"])


def test_stage_config_holds_the_stage_and_shared_sections():
    cfg = PipelineConfig()
    resolved = cfg.stage_config("rft")
    assert set(resolved) == {"rft", "seed", "device", "distributed", "verifier", "reward"}
    with pytest.raises(ConfigError, match="unknown stage"):
        cfg.stage_config("pretrain")


def test_prefect_yaml_declares_the_pipeline_and_every_stage():
    import importlib
    import inspect

    import yaml

    from schemas.config import STAGES

    spec = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    deployments = spec["deployments"]
    pipeline = [d for d in deployments if d["entrypoint"] == "flows/pipeline.py:pipeline"]
    assert [d["name"] for d in pipeline if d.get("schedules")] == ["pipeline-nightly"]
    assert pipeline[0]["schedules"][0]["cron"]
    staged = {d["parameters"]["name"] for d in deployments
              if d["entrypoint"] == "flows/stages.py:stage" and d["name"].startswith("stage-")}
    assert staged == set(STAGES)
    assert spec["pull"] == [{"flows.worker_steps.enter_code_dir": {}}]  # the worker's checkout, not the deployer's
    gpu = [d for d in deployments if d["name"].startswith("gpu-")]
    assert gpu and all(d["work_pool"]["name"] == "gpu-h200" and "gpu" in d["tags"] for d in gpu)
    assert all("CUDA_VISIBLE_DEVICES" not in d["work_pool"]["job_variables"]["env"] for d in gpu)  # the worker's
    for d in deployments:  # every deployment's config loads, and its flow takes its parameters
        load_config(ROOT / d["parameters"]["config_path"])
        path, name = d["entrypoint"].split(":")
        flow = getattr(importlib.import_module(path.removesuffix(".py").replace("/", ".")), name)
        inspect.signature(flow.fn).bind(**d["parameters"])
    assert any(d["entrypoint"] == "flows/evaluation.py:evaluate_flow" for d in deployments)


def test_leap_presets_set_the_paper_baselines_and_explicit_keys_win():
    expected = {"leap": ("dcp", "rank", 3), "grpo": ("dcp", "scalar", 1), "grpo_mt": ("all", "scalar", 3),
                "full": ("all", "rank", 3), "murphy": ("all", "primeecho", 3)}
    for preset, (gate, reward, turns) in expected.items():
        cfg = load_config(None, [f"leap_rl.preset={preset}"]).leap_rl
        assert (cfg.gate, cfg.reward, cfg.max_turns) == (gate, reward, turns), preset
    murphy = load_config(None, ["leap_rl.preset=murphy", "leap_rl.primeecho.beta1=0.3"]).leap_rl
    assert (murphy.primeecho.alpha, murphy.primeecho.beta1, murphy.primeecho.reads_speed) == (0.0, 0.3, False)
    assert load_config(None, ["leap_rl.preset=full", "leap_rl.reward=scalar"]).leap_rl.reward == "scalar"
    with pytest.raises(ConfigError, match="preset"):
        load_config(None, ["leap_rl.preset=ppo"])


def test_a_set_value_that_is_not_yaml_is_one_line_naming_the_override():
    with pytest.raises(ConfigError) as err:
        load_config(None, ["k=[1"])
    assert str(err.value) == "--set 'k=[1': not valid YAML: expected ',' or ']', but got '<stream end>' at column 3"


def test_validation_errors_are_one_line_naming_every_key():
    with pytest.raises(ConfigError) as err:
        load_config(None, ["sft.epocs=3", "leap_rl.group_size=many"])
    message = str(err.value)
    assert "\n" not in message and "sft.epocs: unknown key" in message and "leap_rl.group_size:" in message


@pytest.mark.parametrize("key", ["kernelbench_dir", "decontaminate_against"])
def test_a_missing_kernelbench_folder_is_named_by_its_key(tmp_path, key):
    cfg = load_config(None, [f"synthesize.{key}={tmp_path / 'nowhere'}"])
    with pytest.raises(ConfigError, match=rf"^synthesize\.{key}: no such directory .*nowhere$"):
        cfg.check_paths()
    load_config(None, [f"synthesize.{key}={tmp_path}"]).check_paths()  # an existing folder passes
    cfg.check_paths(["sft"])  # only the stages asked about are checked


@pytest.mark.parametrize("location", ["{tmp}/missing.parquet", "{tmp}/missing", "./missing/data", "a/b/c"])
def test_a_missing_local_hf_dataset_is_named_by_its_key(tmp_path, location):
    cfg = load_config(None, [f"synthesize.hf_dataset={location.format(tmp=tmp_path)}"])
    with pytest.raises(ConfigError, match=r"^synthesize\.hf_dataset: no such file or directory"):
        cfg.check_paths()


@pytest.mark.parametrize("name", ["nosuchorg/nosuchdataset", "squad", "my-org/data.v2"])
def test_a_hub_dataset_name_is_left_to_the_load(name):
    load_config(None, [f"synthesize.hf_dataset={name}"]).check_paths()  # cannot be checked offline


def test_prefect_run_forms_offer_the_stages_and_describe_every_parameter():
    """What the Prefect UI's run form shows: `name` as a choice of stages, a description under every field."""
    from prefect.utilities.callables import parameter_schema

    from flows.evaluation import evaluate_flow
    from flows.pipeline import pipeline
    from flows.stages import stage
    from schemas.config import STAGES

    assert parameter_schema(stage.fn).properties["name"]["enum"] == list(STAGES)
    for flow in (stage, pipeline, evaluate_flow):
        undescribed = [name for name, spec in parameter_schema(flow.fn).properties.items()
                       if not spec.get("description")]
        assert undescribed == [], (flow.name, undescribed)


def test_stages_that_use_a_gpu_carry_the_gpu_tag_for_prefect_concurrency_limits():
    from schemas.config import STAGES as STAGES_
    from tasks import stage_tags

    cpu = load_config(None)
    gpu_training = load_config(None, ["device=cuda"])
    gpu_judging = load_config(None, ["verifier.backend=cuda"])
    assert all("gpu" not in stage_tags(cpu, s) for s in STAGES_)
    assert [s for s in STAGES_ if "gpu" in stage_tags(gpu_training, s)] == ["sft", "rft", "warmup_rl", "leap_rl",
                                                                            "evaluate"]
    assert [s for s in STAGES_ if "gpu" in stage_tags(gpu_judging, s)] == ["distill", "rft", "warmup_rl", "leap_rl",
                                                                           "evaluate"]
    assert stage_tags(cpu, "hints") == ["kerneldojo", "stage:hints"]
