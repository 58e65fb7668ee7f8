"""Multi-task SFT corpora: labels come from the verifier and from torch.export, prompts mask the context."""

import random

from operators.hints import extract_hints
from schemas.records import Problem, Verdict, VerdictCategory
from tests.kernels import TRANSPOSED
from training.corpora import diagnosis_example, mutate_kernel, qa_examples, reviewer_example
from training.model import train_tokenizer
from training.sft import IGNORE_INDEX, SFTExample, encode_example

PROBLEM = Problem(id="t", source="builtin", reference=TRANSPOSED)


def _verdict(category):
    return Verdict(candidate_id="c", problem_id="t", compiled=True, correct=category == VerdictCategory.passed,
                   legal=True, pass_fraction=1.0 if category == VerdictCategory.passed else 0.0, category=category,
                   detail="output mismatch: 3/24 elements outside atol=0.0001")


def test_mutations_change_the_kernel_in_a_named_way():
    code = "auto v0 = kd_map1<float, float>(x0, torch::kFloat32, [](float v) { return v * 1.5f + 0.25f; });"
    seen = set()
    rng = random.Random(0)
    for _ in range(20):
        mutated, kind = mutate_kernel(code, rng)
        assert mutated != code
        seen.add(kind)
    assert {"operator", "constant"} <= seen
    assert mutate_kernel("no kernel here", rng) is None


def test_reviewer_labels_follow_the_verdict():
    good = reviewer_example(PROBLEM, "class ModelNew: ...", _verdict(VerdictCategory.passed), "cpu")
    bad = reviewer_example(PROBLEM, "class ModelNew: ...", _verdict(VerdictCategory.wrong_output), "cpu")
    assert good["completion"].startswith("VERDICT: CORRECT") and bad["completion"].startswith("VERDICT: INCORRECT")
    assert "wrong_output" in bad["completion"] and "VERDICT: CORRECT" in good["messages"][-1]["content"]


def test_diagnosis_masks_the_failed_kernel_and_the_feedback():
    example = diagnosis_example(PROBLEM, "```python\nbroken\n```", _verdict(VerdictCategory.wrong_output),
                                "```python\nfixed\n```", "cpu")
    assert [m["role"] for m in example["messages"]] == ["system", "user", "assistant", "user"]
    assert "wrong_output" in example["messages"][-1]["content"]
    tok = train_tokenizer([m["content"] for m in example["messages"]] + [example["completion"]], 400)
    enc = encode_example(tok, SFTExample(example["messages"], example["completion"]), 4096)
    trained = tok.decode([t for t, l in zip(enc["input_ids"], enc["labels"]) if l != IGNORE_INDEX])
    assert "fixed" in trained and "broken" not in trained and "wrong_output" not in trained


def test_qa_answers_come_from_the_hints():
    problem = PROBLEM.model_copy(update={"hints": extract_hints(PROBLEM)})
    examples = qa_examples(problem, limit=3)
    answers = " ".join(e["completion"] for e in examples)
    assert "shape [6, 4] and strides [1, 6]" in answers and "not contiguous" in answers
    assert "24 elements of float32: 96 bytes" in answers


def test_diverse_rft_keeps_distinct_correct_kernels_and_the_ablation_keeps_one():
    from training.rft import Sample, select_diverse

    def sample(pid, source, passed=True, speedup=1.0):
        v = _verdict(VerdictCategory.passed if passed else VerdictCategory.wrong_output)
        return Sample(pid, source, f"```python\n{source}\n```", v.model_copy(update={"speedup_vs_eager": speedup}))

    samples = [
        sample("p", "for (i = 0; i < n; ++i) o[i] = a[i];", speedup=1.0),
        sample("p", "for (i = 0;  i < n;  ++i)   o[i] = a[i];  // same kernel, reformatted", speedup=3.0),
        sample("p", "parallel_for(0, n, [&](i) { o[i] = a[i]; });", speedup=2.0),
        sample("p", "o = broken", passed=False, speedup=9.0),
        sample("q", "kernel_q", speedup=1.0),
    ]
    kept = select_diverse(samples, max_per_problem=4)
    assert [(s.problem_id, s.verdict.speedup_vs_eager) for s in kept] == [("p", 3.0), ("p", 2.0), ("q", 1.0)]
    fastest = select_diverse(samples, max_per_problem=4, keep_fastest_only=True)
    assert [(s.problem_id, s.verdict.speedup_vs_eager) for s in fastest] == [("p", 3.0), ("q", 1.0)]


def test_generation_budgets_that_would_cut_most_trained_kernels_short_are_named():
    """The template teacher's kernels run ~1000 tokens at vocab 2048: a 400-token rollout budget cuts almost every
    one short (nothing compiles, RL learns nothing), and the SFT stage says so for each stage that would."""
    from training.sft import short_generation_budgets

    kernels = [900 + i for i in range(100)]  # p90: 990
    lines = short_generation_budgets(kernels, {"rft.generation.max_new_tokens": 400,
                                               "evaluate.generation.max_new_tokens": 1024})
    assert len(lines) == 1 and lines[0].startswith("rft.generation.max_new_tokens=400 is below") and "990" in lines[0]
    assert short_generation_budgets([], {"rft.generation.max_new_tokens": 1}) == []
