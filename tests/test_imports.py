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


def test_kernelbench_problems_come_in_kernelbench_order(tmp_path):
    """`--limit N` evaluates problems 1..N of each level, as KernelBench numbers them (not by file-name length)."""
    level = tmp_path / "level2"
    level.mkdir()
    for name in ["100_Gemm.py", "2_Conv2d_ReLU_BiasAdd_Scaling.py", "10_Gemm.py", "1_Conv2D_ReLU_BiasAdd.py", "9_Mm.py"]:
        (level / name).write_text(GEMM.replace("12_Gemm", name))
    problems, _ = load_kernelbench(tmp_path)
    assert [p.name for p in problems] == ["level2/1_Conv2D_ReLU_BiasAdd", "level2/2_Conv2d_ReLU_BiasAdd_Scaling",
                                          "level2/9_Mm", "level2/10_Gemm", "level2/100_Gemm"]


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
    # a resized copy: the size-agnostic dataflow pattern catches it before its n-grams are looked at
    assert reasons["copied_gemm"] == ("structure", "level2/12_Gemm_LeakyReLU")
    assert report.counts() == {"structure": 2}
    text_only = Problem(id="t", source="t", name="copied_text", reference=GEMM.replace("self.act(self.gemm(x) * 2.0)",
                                                                                     "self.act(self.gemm(x) * 2.0) + 1"))
    kept, report = decontaminate([text_only], benchmark, ngram_n=8, max_overlap=0.5, analyser=analyser)
    assert [(d.name, d.reason) for d in report.dropped] == [("copied_text", "ngram")]  # a different graph, copied text


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


# -- decontamination that means it: a labelled set ------------------------------------------------------
LABELLED_BASES = {
    "relu": BIG_RELU,
    "gemm_leakyrelu": GEMM,
    "softmax": textwrap.dedent('''
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def __init__(self):
                super().__init__()

            def forward(self, x):
                return torch.softmax(x, dim=1)


        batch_size = 64
        features = 1024


        def get_inputs():
            return [torch.randn(batch_size, features)]


        def get_init_inputs():
            return []
    '''),
    "conv_relu": textwrap.dedent('''
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def __init__(self, in_channels, out_channels, kernel_size):
                super().__init__()
                self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)

            def forward(self, x):
                return torch.relu(self.conv(x))


        def get_inputs():
            return [torch.randn(16, 3, 64, 64)]


        def get_init_inputs():
            return [3, 16, 3]
    '''),
    "sum_rows": textwrap.dedent('''
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.dim = dim

            def forward(self, x):
                return torch.sum(x, dim=self.dim, keepdim=True)


        def get_inputs():
            return [torch.randn(128, 4096)]


        def get_init_inputs():
            return [1]
    '''),
}
RESIZES = {"4096": "2048", "393216": "100000", "1024": "512", "8192": "4096", "64, 64": "32, 32", "16, 3": "8, 3",
           "128": "256", "64\n": "32\n"}


def _rename(source: str) -> str:
    import re

    for old, new in (("x", "inp"), ("batch_size", "BATCH"), ("features", "WIDTH"), ("dim", "axis"), ("conv", "filt"),
                     ("gemm", "dense"), ("act", "nonlin"), ("slope", "alpha")):
        source = re.sub(rf"(?<![\w.]){old}(?![\w=])|(?<=self\.){old}(?!\w)", new, source)
    return source


def _resize(source: str) -> str:
    for old, new in RESIZES.items():
        source = source.replace(old, new)
    return source


def labelled_cases() -> list[tuple[str, str, str | None]]:
    """(name, source, the base it copies or None when genuinely different)."""
    cases = []
    for base, source in LABELLED_BASES.items():
        cases += [(f"{base}/renamed", _rename(source), base), (f"{base}/resized", _resize(source), base),
                  (f"{base}/renamed+resized", _resize(_rename(source)), base)]
    different = {
        "relu->gelu": BIG_RELU.replace("torch.relu(x)", "torch.nn.functional.gelu(x)"),
        "gemm_leakyrelu->gemm_relu": GEMM.replace("nn.LeakyReLU(slope)", "nn.ReLU()"),
        "softmax dim 1->0": LABELLED_BASES["softmax"].replace("dim=1", "dim=0"),
        "softmax->log_softmax": LABELLED_BASES["softmax"].replace("torch.softmax", "torch.log_softmax"),
        "conv_relu->conv_sigmoid": LABELLED_BASES["conv_relu"].replace("torch.relu", "torch.sigmoid"),
        "sum->mean": LABELLED_BASES["sum_rows"].replace("torch.sum", "torch.mean"),
        "sum over columns": LABELLED_BASES["sum_rows"].replace("return [1]", "return [0]"),
        "relu of a symmetric input": BIG_RELU.replace("return [torch.rand(batch_size, dim)]",
                                                      "a = torch.rand(dim, dim)\n    return [(a + a.T) / 2]"),
    }
    return cases + [(name, source, None) for name, source in different.items()]


def test_decontamination_catches_renamed_and_resized_copies_and_keeps_different_problems():
    """Labelled set: 15 copies (renamed, resized, both) of 5 benchmark problems and 8 genuinely different
    problems. Structure alone (n-grams off): every copy dropped, every different problem kept."""
    benchmark = [Problem(id=f"b{i}", source="builtin", name=name, reference=src)
                 for i, (name, src) in enumerate(LABELLED_BASES.items())]
    cases = labelled_cases()
    assert len(cases) >= 20
    problems = [Problem(id=f"c{i}", source="builtin", name=name, reference=src) for i, (name, src, _) in enumerate(cases)]
    kept, report = decontaminate(problems, benchmark, ngram_n=13, max_overlap=1.0)  # 1.0: n-grams never drop
    dropped = {d.name: d.matched for d in report.dropped}
    truth = {name: base for name, _, base in cases}
    true_positives = sum(1 for name, base in truth.items() if base and dropped.get(name) == base)
    false_positives = [name for name in dropped if truth[name] is None]
    missed = [name for name, base in truth.items() if base and name not in dropped]
    assert (missed, false_positives) == ([], []), (missed, false_positives, dropped)
    assert true_positives == 15 and len(kept) == 8


def test_dedup_keeps_variants_whose_outputs_or_inputs_differ():
    """LSTM-style problems that return different tensors, and a matmul of symmetric matrices against the
    plain one, are different problems; a renamed copy is not."""
    import re

    lstm = textwrap.dedent('''
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = nn.LSTM(16, 32, num_layers=2, batch_first=True)

            def forward(self, x, h0, c0):
                out, state = self.lstm(x, (h0, c0))
                return state[0]


        def get_inputs():
            return [torch.randn(4, 8, 16), torch.randn(2, 4, 32), torch.randn(2, 4, 32)]


        def get_init_inputs():
            return []
    ''')
    matmul = textwrap.dedent('''
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def forward(self, a, b):
                return torch.matmul(a, b)


        def get_inputs():
            a = torch.randn(256, 256)
            b = torch.randn(256, 256)
            return [a, b]


        def get_init_inputs():
            return []
    ''')
    variants = {"lstm_h": lstm, "lstm_c": lstm.replace("state[0]", "state[1]"),
                "lstm_out": lstm.replace("return state[0]", "return out"),
                "matmul": matmul, "matmul_symmetric": matmul.replace("return [a, b]", "return [(a + a.T) / 2, (b + b.T) / 2]"),
                "matmul_renamed": re.sub(r"\ba\b", "lhs", re.sub(r"\bb\b", "rhs", matmul))}
    problems = [Problem(id=name, source="builtin", name=name, reference=src) for name, src in variants.items()]
    kept, report = deduplicate(problems)
    assert [p.name for p in kept] == ["lstm_h", "lstm_c", "lstm_out", "matmul", "matmul_symmetric"]
    assert [(d.name, d.matched) for d in report.dropped] == [("matmul_renamed", "matmul")]
