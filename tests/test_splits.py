"""Held-out problems that test generalisation (issue 12): train, validation and test are split by structure,
so no held-out graph is a training graph at other sizes or under other names."""

from collections import defaultdict

from operators.dedup import contamination_pattern
from operators.synthesis import assign_splits, synthesize_problems
from schemas.config import ConfigError, SynthesizeConfig, load_config
from schemas.records import Problem, Split

import pytest


def _problem(i: int, pattern: str | None) -> Problem:
    return Problem(id=f"p{i:03d}", source="nnsmith", reference=f"ref {i}", pattern=pattern)


def test_a_structure_never_spans_two_splits():
    problems = [_problem(i, f"graph {i % 7}") for i in range(70)]  # 7 graphs at 10 sizes each
    split = assign_splits(problems, 0.3, seed=1, validation_fraction=0.15)
    splits_of = defaultdict(set)
    for p in split:
        splits_of[p.pattern].add(p.split)
    assert all(len(s) == 1 for s in splits_of.values()), splits_of
    count = lambda which: sum(p.split == which for p in split)
    # whole groups until each share is reached: test >= 21 of 70 (3 graphs), validation >= 10 (1 graph)
    assert count(Split.test) == 30 and count(Split.validation) == 10 and count(Split.train) == 30
    assert split == assign_splits(problems, 0.3, seed=1, validation_fraction=0.15)  # deterministic
    tests = lambda seed: {p.pattern for p in assign_splits(problems, 0.3, seed) if p.split == Split.test}
    assert len({frozenset(tests(seed)) for seed in range(6)}) > 1  # the seed chooses which graphs


def test_problems_without_a_pattern_are_their_own_group_and_training_keeps_one():
    problems = [_problem(i, None) for i in range(10)]
    split = assign_splits(problems, 0.2, seed=0)
    assert sum(p.split == Split.test for p in split) == 2 and Split.validation not in {p.split for p in split}
    one_graph = [_problem(i, "same") for i in range(5)]  # nothing to hold out without emptying train
    assert {p.split for p in assign_splits(one_graph, 0.5, seed=0, validation_fraction=0.2)} == {Split.train}


def test_held_out_fractions_must_leave_training_problems():
    with pytest.raises(ConfigError, match="test_fraction \\+ validation_fraction"):
        load_config(None, ["synthesize.test_fraction=0.6", "synthesize.validation_fraction=0.4"])
    assert SynthesizeConfig(test_fraction=0.2, validation_fraction=0.1).validation_fraction == 0.1


def test_synthesized_graphs_carry_the_pattern_decontamination_computes_at_every_size(session_dir):
    """The pattern recorded at synthesis is the one decontamination computes from the source alone, and the
    same graph emitted at its CPU and its GPU size has one pattern (two sources, two ids)."""
    cfg = SynthesizeConfig(num_problems=3, test_fraction=0, cuda_working_set_mb=[8, 16])
    small, _ = synthesize_problems(cfg, seed=3, cache_dir=session_dir / "split-cpu", backend="cpu")
    large, _ = synthesize_problems(cfg, seed=3, cache_dir=session_dir / "split-cuda", backend="cuda")
    for p in small:
        assert p.pattern and p.pattern == contamination_pattern(p)
    assert [p.pattern for p in small] == [p.pattern for p in large]
    assert not {p.id for p in small} & {p.id for p in large}
