"""Synthesis at realistic sizes and with real structure (issue 11): sizes solved from a working-set budget per
backend, graphs built around their drawn family, fused chains, difficulty from measured properties."""

import pytest

from operators.graph import export_reference
from operators.measures import GraphMeasures, difficulty, measure_graph
from operators.synthesis import (NNSmithSession, _skeleton, family_opsets, synthesize_problems,
                                 validate_reference)
from schemas.config import ConfigError, SynthesizeConfig, load_config
from schemas.records import Problem
from training.prompts import user_prompt
from verifier.reference import load_reference_module

MB = 2 ** 20


@pytest.fixture(scope="module")
def every_op(session_dir):
    """One NNSmith session over every op it offers (opening one probes them all)."""
    return NNSmithSession.open(session_dir / "synth-all" / "nnsmith", [], ["float32"])


def _measured(source: str) -> GraphMeasures:
    """Measures of a reference from its source alone, under fake tensors (GPU sizes are never allocated)."""
    return measure_graph(export_reference(load_reference_module(source)))


def test_every_drawn_family_is_really_present(every_op, session_dir):
    families = [mix.family for mix in family_opsets(every_op.opset, {})]
    assert {"matmul", "convolution", "pooling", "normalization", "softmax", "reduction"} <= set(families)
    for family in families:
        weights = {f: (1.0 if f == family else 0.0) for f in families}
        cfg = SynthesizeConfig(num_problems=1, test_fraction=0, ops=[], balanced=True, family_weights=weights,
                               max_nodes=5, cuda_working_set_mb=[8, 16], max_attempts_per_problem=30)
        (problem,), report = synthesize_problems(cfg, seed=11, cache_dir=session_dir, session=every_op)
        assert problem.drawn_family == family and family in problem.op_families, (family, problem.op_families)
        assert report.drawn == report.present == {family: 1} and report.attempted[family] >= 1
        # present in what the reference really computes, not only in the record
        assert family in _measured(problem.reference).families


def test_node_counts_stay_in_range(every_op, session_dir):
    cfg = SynthesizeConfig(num_problems=6, test_fraction=0, ops=[], min_nodes=3, max_nodes=7,
                           cuda_working_set_mb=[8, 16])
    problems, _ = synthesize_problems(cfg, seed=5, cache_dir=session_dir, session=every_op)
    counts = [_measured(p.reference).nodes for p in problems]
    assert all(3 <= n <= 7 for n in counts), counts
    assert [p.measures["nodes"] for p in problems] == counts


def test_cuda_size_reaches_its_working_set_and_cpu_size_records_its_factor(session_dir):
    cfg = SynthesizeConfig(num_problems=4, test_fraction=0, cuda_working_set_mb=[64, 128], cpu_scale=512)
    cuda, _ = synthesize_problems(cfg, seed=2, cache_dir=session_dir / "synth", backend="cuda")
    cpu, report = synthesize_problems(cfg, seed=2, cache_dir=session_dir / "synth", backend="cpu")
    for big, small in zip(cuda, cpu):
        full = _measured(big.reference)  # exported under fake tensors: hundreds of MB never allocated
        assert 32 * MB <= full.total_bytes <= 256 * MB, full.total_bytes / MB
        assert big.scale == 1.0 and big.cuda_working_set_bytes == full.total_bytes
        here = _measured(small.reference)
        assert here.total_bytes <= full.total_bytes / 100  # scaled down: a CPU-size working set
        assert small.scale == pytest.approx(full.total_bytes / here.total_bytes, rel=1e-3)
        assert 512 / 4 <= small.scale <= 512 * 4 and small.cuda_working_set_bytes == full.total_bytes
        # the same graph: same ops on the same operands, only the sizes differ
        assert _skeleton(export_reference(load_reference_module(small.reference))) == \
            _skeleton(export_reference(load_reference_module(big.reference)))
        assert validate_reference(small.reference) is None
        assert f"scaled down {small.scale:.0f}x" in user_prompt(small, "cpu")
        assert "scaled down" not in user_prompt(big, "cuda")
    assert report.scale["min"] >= 512 / 4


def test_fused_chains_are_gemm_or_conv_chains(every_op, session_dir):
    cfg = SynthesizeConfig(num_problems=3, test_fraction=0, ops=[], fused_fraction=1.0, max_nodes=8,
                           cuda_working_set_mb=[64, 256])
    problems, report = synthesize_problems(cfg, seed=4, cache_dir=session_dir, session=every_op)
    assert report.fused == 3
    for p in problems:
        measures = _measured(p.reference)
        assert {"matmul", "convolution"} & set(measures.families), measures.families
        assert measures.nodes >= 2 and p.measures["kind"] == "fused" and p.difficulty >= 2
    cuda = [p.measures["cuda"] for p in problems]
    assert any(m["compute_bound"] for m in cuda)  # GEMMs and convolutions at GPU size


def test_impossible_or_malformed_synthesis_config_is_one_clear_error(session_dir):
    # what the opset cannot satisfy is a config error too (the CLI prints those in one line)
    with pytest.raises(ConfigError, match="synthesize.fused_fraction"):  # the default ops hold no GEMM/conv
        synthesize_problems(SynthesizeConfig(num_problems=1, fused_fraction=0.5), 0, session_dir / "synth")
    with pytest.raises(ConfigError, match="synthesize.family_weights"):
        synthesize_problems(SynthesizeConfig(num_problems=1, balanced=True, family_weights={"nope": 1}), 0,
                            session_dir / "synth")
    with pytest.raises(ConfigError, match="min_nodes"):
        load_config(None, ["synthesize.min_nodes=5", "synthesize.max_nodes=3"])
    with pytest.raises(ConfigError, match="cuda_working_set_mb"):
        load_config(None, ["synthesize.cuda_working_set_mb=[64, 8]"])
    with pytest.raises(ConfigError, match="cpu_scale"):
        load_config(None, ["synthesize.cpu_scale=0.5"])
    with pytest.raises(ConfigError, match="max_elements: unknown key"):  # renamed: max_tensor_elements
        load_config(None, ["synthesize.max_elements=1024"])


def _m(**kw) -> GraphMeasures:
    base = dict(nodes=1, families=("elementwise-unary",), largest_elements=1 << 20, total_bytes=8 << 20,
                flops=1 << 20)
    return GraphMeasures(**{**base, **kw})


def test_difficulty_is_monotone_in_measured_properties():
    relu = _m()
    assert difficulty(relu) == 1
    steps = [  # each grows one property of the one before
        _m(nodes=3),
        _m(nodes=3, families=("elementwise-binary", "elementwise-unary")),
        _m(nodes=3, families=("elementwise-binary", "elementwise-unary", "reduction")),
        _m(nodes=3, families=("elementwise-binary", "elementwise-unary", "reduction"), flops=80 << 20),
        _m(nodes=3, families=("elementwise-binary", "elementwise-unary", "reduction"), flops=1 << 30),
        _m(nodes=6, families=("elementwise-binary", "elementwise-unary", "reduction"), flops=1 << 30),
        _m(nodes=6, families=("elementwise-binary", "elementwise-unary", "matmul", "reduction"), flops=1 << 30),
        _m(nodes=10, families=("elementwise-binary", "elementwise-unary", "matmul", "normalization", "reduction",
                               "softmax"), flops=1 << 30),
    ]
    levels = [difficulty(m) for m in [relu, *steps]]
    assert levels == sorted(levels) and levels[-1] == 3, levels
    assert not relu.compute_bound and steps[-1].compute_bound
    # views and casts do not make a graph harder
    assert difficulty(_m(nodes=3, families=("elementwise-unary", "layout"))) == difficulty(_m(nodes=3))


CHAIN = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(64, 128, 3)
        self.bias = nn.Parameter(torch.randn(128, 1, 1))

    def forward(self, x):
        return torch.max_pool2d(torch.relu(self.conv(x) + self.bias), 2)


def get_inputs():
    return [torch.randn(32, 64, 130, 130)]


def get_init_inputs():
    return []
'''


def test_measures_of_hand_made_references():
    chain = _measured(CHAIN)  # 32 x 64 x 130^2 input, never allocated
    conv_flops = 2 * (32 * 128 * 128 * 128) * (64 * 9)
    assert conv_flops <= chain.flops <= conv_flops * 1.01
    assert chain.largest_elements == 32 * 128 * 128 * 128 and chain.compute_bound
    assert chain.total_bytes == 4 * (32 * 64 * 130 * 130 + 128 * 64 * 9 + 128 + 128 + 32 * 128 * 64 * 64)
    single = _measured(CHAIN.replace("torch.max_pool2d(torch.relu(self.conv(x) + self.bias), 2)", "torch.relu(x)"))
    assert single.nodes == 1 and not single.compute_bound
    assert difficulty(single) == 1 < difficulty(chain)
    # torch.max of two tensors (aten.max.other) is elementwise, of one along a dim a reduction
    binary = _measured(CHAIN.replace("torch.max_pool2d(torch.relu(self.conv(x) + self.bias), 2)", "torch.max(x, -x)"))
    reduced = _measured(CHAIN.replace("torch.max_pool2d(torch.relu(self.conv(x) + self.bias), 2)", "x.amax(1)"))
    assert "elementwise-binary" in binary.families and "reduction" not in binary.families
    assert reduced.families == ("reduction",)


def test_warehouse_keeps_sizes_and_reads_older_problem_tables(tmp_path):
    import duckdb

    from warehouse.store import Warehouse

    path = tmp_path / "w.duckdb"
    con = duckdb.connect(str(path))  # problems as they were before sizes were recorded
    con.execute("CREATE TABLE problems (stage_run_id VARCHAR NOT NULL, id VARCHAR NOT NULL, source VARCHAR, "
                "name VARCHAR, reference VARCHAR NOT NULL, op_families VARCHAR, difficulty INTEGER, split VARCHAR, "
                "hints VARCHAR, PRIMARY KEY (stage_run_id, id))")
    con.execute("INSERT INTO problems VALUES ('old', 'p0', 'nnsmith', 'n', 'ref', '[]', 1, 'train', '[]')")
    con.close()
    wh = Warehouse(path)
    (old,) = wh.problems("old")
    assert old.scale == 1.0 and old.cuda_working_set_bytes is None and old.measures == {}
    sized = Problem(id="p1", source="nnsmith", reference="ref", scale=812.5, cuda_working_set_bytes=3 << 30,
                    measures={"nodes": 4, "cuda": {"flops": 1 << 40}}, drawn_family="pooling")
    wh.add_problems("new", [sized])
    assert wh.problems("new") == [sized]


def test_a_sigint_during_a_z3_check_reaches_python():
    """z3's own handler would cancel the check and swallow the signal (synthesis going on after Ctrl-C); with
    operators.sizing imported the interrupt arrives as soon as the check ends."""
    import os
    import signal
    import threading
    import time

    import z3

    import operators.sizing  # noqa: F401  (turns z3's handler off)

    x, y = z3.BitVecs("x y", 128)
    solver = z3.Solver()
    solver.set("timeout", 3000)
    semiprime = 1000000007 * 998244353 * 1000000009 * 999999937  # factoring it keeps z3 busy past the timeout
    solver.add(z3.UGT(x, 1), z3.UGT(y, 1), z3.ULT(x, 2 ** 64), z3.ULT(y, 2 ** 64), x * y == semiprime)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # also where the runner started ignoring it
    try:
        threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            solver.check()
            time.sleep(10)  # a swallowed interrupt never comes
        assert time.monotonic() - started < 8
    finally:
        signal.signal(signal.SIGINT, previous)
