"""Imports (KernelBench checkouts, HF datasets), exports, dedup and decontamination."""

import json
import textwrap
from pathlib import Path

import pytest

from operators.dedup import decontaminate, deduplicate, normalized_source
from operators.hints import HintError, extract_hints
from operators.imports import ImportErrorReport, export_problems, load_hf_problems, load_kernelbench
from schemas.records import Problem

BIG_RELU = textwrap.dedent('''
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        """Applies ReLU."""

        def __init__(self):
            super(Model, self).__init__()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(x)


    batch_size = 4096
    dim = 393216


    def get_inputs(**kwargs):
        return [torch.rand(batch_size, dim)]  # 6 GB: never allocated by the import or the hints


    def get_init_inputs():
        return []
''')
GEMM = textwrap.dedent('''
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self, in_features, out_features, slope):
            super().__init__()
            self.gemm = nn.Linear(in_features, out_features)
            self.act = nn.LeakyReLU(slope)

        def forward(self, x):
            return self.act(self.gemm(x) * 2.0)


    def get_inputs():
        return [torch.rand(1024, 8192)]


    def get_init_inputs():
        return [8192, 8192, 0.1]
''')


@pytest.fixture
def checkout(tmp_path):
    root = tmp_path / "KernelBench" / "KernelBench"
    (root / "level1").mkdir(parents=True)
    (root / "level2").mkdir()
    (root / "level1" / "19_ReLU.py").write_text(BIG_RELU)
    (root / "level1" / "2_Broken.py").write_text("import torch\n\nclass Model:\n    pass\n")
    (root / "level2" / "12_Gemm_LeakyReLU.py").write_text(GEMM)
    return tmp_path / "KernelBench"


def test_kernelbench_checkout_loads_by_level_without_running_anything(checkout):
    problems, report = load_kernelbench(checkout)
    assert [(p.name, p.difficulty) for p in problems] == [("level1/19_ReLU", 1), ("level2/12_Gemm_LeakyReLU", 2)]
    assert report.skipped == {"KernelBench/level1/2_Broken.py": "lacks get_inputs, get_init_inputs"}
    assert problems[1].op_families == ["elementwise-binary", "elementwise-unary", "matmul"]
    only2, _ = load_kernelbench(checkout, levels=[2])
    assert [p.name for p in only2] == ["level2/12_Gemm_LeakyReLU"]
    with pytest.raises(ImportErrorReport, match="no KernelBench checkout"):
        load_kernelbench(checkout.parent / "nowhere")
    (checkout.parent / "empty").mkdir()
    with pytest.raises(ImportErrorReport, match="no level"):
        load_kernelbench(checkout.parent / "empty")


def test_hints_of_a_multi_gigabyte_problem_come_from_fake_tensors(checkout, analyser):
    problems, _ = load_kernelbench(checkout)
    with pytest.raises(HintError, match="untrusted code"):  # an import is never run in this process
        extract_hints(problems[0])
    hints = extract_hints(problems[0], analyser)
    assert [(h.op, h.shape) for h in hints] == [("input", [4096, 393216]), ("aten.relu", [4096, 393216])]


def test_hf_dataset_round_trip_and_import(tmp_path, checkout):
    problems, _ = load_kernelbench(checkout)
    out = export_problems(problems, tmp_path / "export")
    assert (out / "data.parquet").exists() and (out / "dataset" / "dataset_info.json").exists()
    again, report = load_hf_problems(str(out / "dataset"), code_column="reference", name_column="name", source="kb")
    assert [p.id for p in again] == [p.id for p in problems] and report.imported == 2
    from_parquet, _ = load_hf_problems(str(out / "data.parquet"), code_column="reference")
    assert len(from_parquet) == 2
    with pytest.raises(ImportErrorReport, match="no column 'code'"):
        load_hf_problems(str(out / "data.parquet"))


def test_dedup_exact_and_structural(analyser):
    relu = Problem(id="a", source="t", name="relu", reference=BIG_RELU)
    reformatted = Problem(id="b", source="t", name="relu_comments",
                          reference=BIG_RELU.replace('"""Applies ReLU."""', '"""Another docstring."""  # hi'))
    renamed = Problem(id="c", source="t", name="relu_renamed",
                      reference=BIG_RELU.replace("x: torch.Tensor", "inp: torch.Tensor").replace("relu(x)", "relu(inp)"))
    gemm = Problem(id="d", source="t", name="gemm", reference=GEMM)
    assert normalized_source(relu.reference) == normalized_source(reformatted.reference)
    kept, report = deduplicate([relu, reformatted, renamed, gemm], analyser=analyser)
    assert [p.name for p in kept] == ["relu", "gemm"]
    assert [(d.name, d.reason, d.matched) for d in report.dropped] == [
        ("relu_comments", "exact", "relu"), ("relu_renamed", "structure", "relu")]


def test_decontamination_by_structure_and_ngrams(checkout, analyser):
    benchmark, _ = load_kernelbench(checkout)
    same_graph = Problem(id="s", source="t", name="my_relu", reference=BIG_RELU.replace("4096", "2048 * 2"))
    copied_text = Problem(id="n", source="t", name="copied_gemm",
                          reference=GEMM.replace("torch.rand(1024, 8192)", "torch.rand(512, 8192)"))
    unrelated = Problem(id="u", source="t", name="tanh", reference=textwrap.dedent('''
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.w0 = nn.Parameter(torch.randn(16), requires_grad=False)

            def forward(self, x0):
                v0 = torch.tanh(x0)
                return torch.add(v0, self.w0)


        def get_inputs():
            return [torch.randn(4, 16)]


        def get_init_inputs():
            return []
    '''))
    kept, report = decontaminate([same_graph, copied_text, unrelated], benchmark, ngram_n=8, max_overlap=0.5,
                                 analyser=analyser)
    assert [p.name for p in kept] == ["tanh"]
    reasons = {d.name: (d.reason, d.matched) for d in report.dropped}
    assert reasons["my_relu"] == ("structure", "level1/19_ReLU")
    assert reasons["copied_gemm"] == ("ngram", "level2/12_Gemm_LeakyReLU")
    assert report.counts() == {"structure": 1, "ngram": 1}


def test_synthesize_stage_imports_decontaminates_and_exports(tmp_path, checkout, verifier_cache):
    from mlflow.tracking import MlflowClient
    from typer.testing import CliRunner

    from flows.cli import app
    from flows.stages import stage
    from schemas.config import load_config
    from tasks.common import Home
    from warehouse.store import Warehouse
    from warehouse.tracking import default_tracking_uri

    hostile = checkout / "KernelBench" / "level1"
    (hostile / "90_HundredGigabytes.py").write_text(BIG_RELU.replace(
        "return [torch.rand(batch_size, dim)]", "return [torch.rand(4, 4), bytearray(100 << 30)]"))
    (hostile / "91_FakeHundredGigabytes.py").write_text(BIG_RELU.replace("dim = 393216", "dim = 393216 * 16"))
    (hostile / "92_TouchesTheHost.py").write_text(BIG_RELU.replace(
        "def get_inputs(**kwargs):", f"def get_inputs(**kwargs):\n    open('{tmp_path}/pwned', 'w').write('x')"))
    overrides = [f"home={tmp_path / 'home'}", "synthesize.num_problems=4", f"synthesize.kernelbench_dir={checkout}",
                 f"synthesize.decontaminate_against={checkout / 'KernelBench' / 'level2'}"]
    run_id = stage(name="synthesize", overrides=overrides)
    config = load_config(None, overrides)
    wh = Warehouse(Home.of(config).warehouse_path)
    names = sorted(p.name for p in wh.problems(run_id))
    assert "level1/19_ReLU" in names and "level2/12_Gemm_LeakyReLU" not in names  # decontaminated
    assert sum(p.source == "nnsmith" for p in wh.problems(run_id)) == 4
    mlflow_run = MlflowClient(default_tracking_uri(Home.of(config).root)).get_run(wh.stage_run(run_id).mlflow_run_id)
    assert mlflow_run.data.metrics["decontaminated/structure"] == 1
    # someone else's code ran only in sandboxes: each problem that would not load or fit is one line
    assert mlflow_run.data.metrics["import/unrunnable"] == 3
    dropped = {d["name"]: d for d in json.loads(Path(MlflowClient(default_tracking_uri(Home.of(config).root))
                                                    .download_artifacts(mlflow_run.info.run_id,
                                                                        "dropped_problems.json")).read_text())}
    assert dropped["level1/90_HundredGigabytes"]["reason"] == "unrunnable"
    assert "GiB" in dropped["level1/91_FakeHundredGigabytes"]["matched"]
    assert "92_TouchesTheHost" not in " ".join(names) and not (tmp_path / "pwned").exists()
    hints = stage(name="hints", from_run=run_id, overrides=overrides)
    assert all(p.hints for p in wh.problems(hints))
    out = tmp_path / "exported"
    result = CliRunner().invoke(app, ["export", run_id, str(out), "--config", _yaml(tmp_path, overrides)])
    assert result.exit_code == 0, result.output
    exported, _ = load_hf_problems(str(out / "dataset"), code_column="reference")
    assert len(exported) == len(names)


def _yaml(tmp_path, overrides):
    import yaml

    from schemas.config import load_config

    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(load_config(None, overrides).model_dump()))
    return str(path)


def test_a_problem_that_needs_the_network_is_unrunnable_in_seconds(tmp_path, analyser, verifier_cache, monkeypatch):
    """KernelBench level 4 loads hub models: with no local hub cache that is one clear line at once; with one
    (bound read-only into the sandbox, which has no network) the model must be in it, or the sandbox's
    offline mode fails it in seconds, not half a minute of retries."""
    import time

    from schemas.config import VerifierConfig
    from verifier.analysis import AnalysisError, ReferenceAnalyser

    source = textwrap.dedent('''
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM


        class Model(torch.nn.Module):
            def __init__(self, model_name, config):
                super().__init__()
                self.model = AutoModelForCausalLM.from_pretrained(model_name, config=config)

            def forward(self, x):
                return self.model(x).logits


        model_name = "google/electra-small-discriminator"
        config = AutoConfig.from_pretrained(model_name)


        def get_inputs():
            return [torch.randint(0, config.vocab_size, (32, 256))]


        def get_init_inputs():
            return [model_name, config]
    ''')
    problem = Problem(id=Problem.make_id(source), source="kernelbench", name="level4/electra", reference=source,
                      difficulty=4)
    monkeypatch.delenv("HF_HOME", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "no-hub-cache"))
    start = time.perf_counter()
    with pytest.raises(AnalysisError, match="no network and no local hub cache"):
        analyser.export(problem)
    assert time.perf_counter() - start < 0.5
    (tmp_path / "hub").mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))  # a cache without this model
    with_cache = ReferenceAnalyser(VerifierConfig(), verifier_cache)
    start = time.perf_counter()
    try:
        with pytest.raises(AnalysisError, match="connect|offline|Offline|cached files"):
            with_cache.export(problem)
    finally:
        with_cache.close()
    assert time.perf_counter() - start < 15.0
