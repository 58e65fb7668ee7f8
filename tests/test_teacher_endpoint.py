"""The OpenAI-compatible teacher against a real server on loopback (`transformers serve`) serving a tiny
model that was taught the example kernels; every answer it gives is verified."""

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from schemas import load_config
from schemas.config import ModelConfig
from training.model import build_model, save_policy, train_tokenizer
from training.prompts import completion_text, extract_code, prompt_messages
from training.sft import SFTExample, train_sft
from training.teacher import OpenAITeacher
from verifier.examples import example_candidate, example_problem
from verifier.pool import LocalVerifierPool
from schemas.records import Candidate

PROBLEMS = [example_problem(name, "cpu") for name in ("relu", "square")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    examples = [SFTExample(prompt_messages(p, "cpu"), completion_text(["1. Operators: one elementwise op."],
                                                                       example_candidate(p, "cpu").source))
                for p in PROBLEMS]
    texts = [m["content"] for e in examples for m in e.messages] + [e.completion for e in examples]
    tokenizer = train_tokenizer(texts, 1024, pretokenizer="qwen")  # what AutoTokenizer will load it as
    model = build_model(ModelConfig(vocab_size=1024), tokenizer, seed=0)
    train_sft(model, tokenizer, examples * 4, epochs=100, learning_rate=3e-3, batch_size=4, max_length=2048)
    path = save_policy(model, tokenizer, tmp_path_factory.mktemp("served") / "policy")
    port = _free_port()
    cli = Path(sys.executable).with_name("transformers")
    proc = subprocess.Popen([str(cli), "serve", str(path), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, "transformers serve exited"
            time.sleep(0.5)
        yield f"{url}/v1", str(path)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_endpoint_teacher_answers_are_verified_and_cached(server, tmp_path, verifier_cache):
    url, model = server
    teacher = OpenAITeacher(url, model, concurrency=2, temperature=0.0, max_tokens=800, cache_dir=str(tmp_path))
    outputs = teacher.solve_many(PROBLEMS, "cpu")
    assert all(o.completion for o in outputs), [o.refusal for o in outputs]
    assert teacher.requests_sent == 2
    pairs = []
    for p, o in zip(PROBLEMS, outputs):
        source = extract_code(o.completion)
        pairs.append((p, Candidate(id=Candidate.make_id(p.id, source, "cpu"), problem_id=p.id, source=source)))
    config = load_config(None, ["verifier.use_cache=false"]).verifier
    with LocalVerifierPool(config, verifier_cache) as pool:
        verdicts = list(pool.verify_many(pairs))
    # the served model learned the kernels: its answers pass the same verifier as any candidate
    assert any(v.passed for v in verdicts), [v.detail for v in verdicts]
    again = teacher.solve_many(PROBLEMS, "cpu")  # from the response cache: no new request
    assert [o.completion for o in again] == [o.completion for o in outputs] and teacher.requests_sent == 2


def test_unreachable_endpoint_is_retried_then_refused(tmp_path):
    teacher = OpenAITeacher(f"http://127.0.0.1:{_free_port()}/v1", "m", retries=2, cache_dir=str(tmp_path))
    out = teacher.solve(PROBLEMS[0], "cpu")
    assert out.completion is None and "endpoint failed" in out.refusal
    assert teacher.requests_sent == 3


def test_an_endpoint_is_evaluated_with_the_kernelbench_protocol(server, tmp_path, verifier_cache):
    """`evaluate.policy=endpoint` on a KernelBench-format folder: each sample is its own request (its own seed,
    its own cache entry), every answer is judged, and a re-run is served from the cache with the same verdicts."""
    from flows.stages import stage
    from tasks.common import Home
    from warehouse.store import Warehouse

    url, model = server
    kernelbench = tmp_path / "KernelBench" / "level1"
    kernelbench.mkdir(parents=True)
    for i, problem in enumerate(PROBLEMS):
        (kernelbench / f"{i + 1}_{problem.name}.py").write_text(problem.reference)
    overrides = [f"home={tmp_path / 'home'}", f"verifier.cache_dir={verifier_cache}", "evaluate.policy=endpoint",
                 f"evaluate.endpoint.base_url={url}", f"evaluate.endpoint.model={model}",
                 "evaluate.problems=kernelbench", f"evaluate.kernelbench_dir={kernelbench.parent}",
                 "evaluate.levels=[1]", "evaluate.max_turns=1", "evaluate.samples_per_problem=2",
                 "evaluate.pass_k=[1,2]", "evaluate.generation.max_new_tokens=800", "verifier.timing_runs=2"]
    first = stage(name="evaluate", overrides=overrides)
    wh = Warehouse(Home.of(load_config(None, overrides)).warehouse_path)
    summary = wh.summary(first)
    assert summary["evaluated"] == f"endpoint:{model}" and summary["problems"] == 2
    assert {"pass_at_2/turn_1", "level1/fast_0/eager/turn_1"} <= set(summary["metrics"])
    cached = sorted((tmp_path / "home" / "cache" / "endpoint").glob("*.json"))
    assert len(cached) == 4  # 2 problems x 2 samples, each drawn with its own seed
    rows = sorted((r["problem_id"], r["sample"], r["category"]) for r in wh.eval_rows(first))
    assert len(rows) == 4
    again = stage(name="evaluate", overrides=overrides)
    assert sorted((tmp_path / "home" / "cache" / "endpoint").glob("*.json")) == cached
    assert sorted((r["problem_id"], r["sample"], r["category"]) for r in wh.eval_rows(again)) == rows
