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
