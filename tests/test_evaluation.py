"""Evaluation metrics on hand-computed cases: the unbiased pass@k estimator."""

import pytest

from training.evaluation import pass_at_k


@pytest.mark.parametrize("n, c, k, expected", [
    (5, 2, 1, 0.4),            # c/n
    (5, 2, 2, 1 - 3 / 10),     # 1 - C(3,2)/C(5,2)
    (10, 3, 5, 1 - 21 / 252),  # 1 - C(7,5)/C(10,5)
    (5, 0, 3, 0.0),
    (5, 5, 3, 1.0),
    (4, 1, 4, 1.0),            # k = n: any pass among all samples
    (4, 3, 2, 1.0),            # fewer failures than k: every draw holds a pass
])
def test_pass_at_k_matches_the_unbiased_estimator(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected)


def test_pass_at_k_refuses_impossible_counts():
    for n, c, k in [(5, 2, 0), (5, 2, 6), (5, 6, 1), (5, -1, 1)]:
        with pytest.raises(ValueError, match="pass@k needs"):
            pass_at_k(n, c, k)


def test_the_held_out_table_gives_mean_and_spread_over_seeds():
    from warehouse.reports import held_out_table

    seed = lambda acc1, acc3: [{"stage": "sft", "accuracy/turn_1": acc1, "accuracy/turn_3": acc3, "faster_rate": 0.0,
                                "problems": 4, "wall_s": 10.0}]
    text = held_out_table([seed(0.25, 0.5), seed(0.75, 1.0)], max_turns=3)
    assert text.splitlines()[2] == "| sft | 0.500 ± 0.354 | 0.750 ± 0.354 | 0.000 ± 0.000 | 4 | 10.000 ± 0.000 | <=6 |"
    assert "rft" not in text  # stages never evaluated have no row


def test_stage_changes_are_paired_by_seed_and_problem_with_their_standard_error():
    """Hand-computed: two seeds x two problems, (turn 1, by turn 3) outcomes per problem. RFT gains problem b at
    turn 1 in seed 0 and loses a's later pass in seed 1: turn-1 deltas [0, 1, 0, 0] (mean 25 points, stdev 0.5,
    s.e. 0.5 / 2), by-turn deltas [0, 1, -1, 0] (mean 0, stdev sqrt(2/3), s.e. 40.8 points)."""
    from warehouse.reports import stage_change_table

    seeds = [{"sft": {"a": (1.0, 1.0), "b": (0.0, 0.0)}, "rft": {"a": (1.0, 1.0), "b": (1.0, 1.0)}},
             {"sft": {"a": (0.0, 1.0), "b": (1.0, 1.0)}, "rft": {"a": (0.0, 0.0), "b": (1.0, 1.0)}}]
    lines = stage_change_table(seeds, turn=3).splitlines()
    assert lines[2] == "| rft vs sft | +25.0 ± 25.0 | 1 / 0 | +0.0 ± 40.8 | 1 / 1 | 4 |"
    assert len(lines) == 3  # two stages: one change, no "last vs first" row repeating it
    # a problem one evaluation lacks is not paired; a third stage adds its change and the last-vs-first row
    seeds[0]["warmup_rl"] = {"a": (0.0, 0.0)}
    lines = stage_change_table(seeds, turn=3).splitlines()
    assert [line.split(" |")[0] for line in lines[2:]] == ["| rft vs sft", "| warmup_rl vs rft", "| warmup_rl vs sft"]
    assert lines[3] == "| warmup_rl vs rft | -100.0 ± nan | 0 / 1 | -100.0 ± nan | 0 / 1 | 1 |"


def test_the_headroom_table_splits_problems_by_how_often_they_pass():
    """Hand-computed: one seed, four problems of 4 samples at turn 1 passing 0, 1/4, 3/4 and 4/4 of them: never
    0.25, sometimes 0.5, always 0.25; pass@1 = (0 + .25 + .75 + 1) / 4 = 0.5; pass@4 = 0.75; headroom 25 points.
    A stage evaluated with one sample a problem cannot tell, and says so."""
    from warehouse.reports import Outcome, headroom_table

    rft = {p: Outcome(first, first, 4) for p, first in zip("abcd", (0.0, 0.25, 0.75, 1.0))}
    sft = {p: Outcome(first, first, 1) for p, first in zip("ab", (0.0, 1.0))}
    lines = headroom_table([{"sft": sft, "rft": rft}]).splitlines()
    assert lines[2] == "| sft | 0.500 | - | - | 0.500 | - | - (one sample a problem) |"
    assert lines[3] == "| rft | 0.250 | 0.500 | 0.250 | 0.500 | 0.750 | 25.0 |"
    assert len(lines) == 4  # stages never evaluated have no row


def _verdict(category="pass", eager=None, compile_=None):
    from schemas.records import Verdict, VerdictCategory

    return Verdict(candidate_id="c", problem_id="p", compiled=category != "compile_error", correct=category == "pass",
                   legal=category != "illegal", pass_fraction=1.0 if category == "pass" else 0.0,
                   category=VerdictCategory(category), speedup_vs_eager=eager, speedup_vs_compile=compile_)


def test_fast_p_counts_correct_kernels_faster_than_p_over_all_samples():
    """KernelBench's fast_p: correct and speedup > p, over every sample (failures count in the denominator);
    fast_0 is correctness, a correct kernel without a compile baseline is never 'faster than compile'."""
    from training.evaluation import fast_p, geomean_speedup

    kernels = [_verdict(eager=0.5, compile_=0.4), _verdict(eager=1.2, compile_=0.9), _verdict(eager=3.0, compile_=None),
               _verdict("wrong_output", eager=9.0), None]
    assert fast_p(kernels, 0) == pytest.approx(3 / 5)
    assert fast_p(kernels, 1) == pytest.approx(2 / 5)
    assert fast_p(kernels, 1.5) == pytest.approx(1 / 5)
    assert fast_p(kernels, 2, "compile") == 0.0
    assert fast_p(kernels, 0, "compile") == pytest.approx(3 / 5)
    assert fast_p(kernels, 0.5, "compile") == pytest.approx(1 / 5)
    assert fast_p([], 1) == 0.0
    assert geomean_speedup(kernels) == pytest.approx((0.5 * 1.2 * 3.0) ** (1 / 3))
    assert geomean_speedup(kernels, "compile") == pytest.approx((0.4 * 0.9) ** 0.5)
    assert geomean_speedup([None, _verdict("compile_error")]) == 0.0


def test_evaluation_metrics_by_turn_pass_at_k_avg_at_k_and_the_verdict_mix():
    """Two problems x two samples, up to 3 turns with feedback, computed by hand."""
    from training.evaluation import Outcome, evaluation_metrics

    fail = lambda cat="wrong_output": _verdict(cat)  # noqa: E731
    outcomes = [
        Outcome("a", "level1", [_verdict(eager=2.0, compile_=1.0)]),                 # turn 1, 2x eager
        Outcome("a", "level1", [fail("compile_error"), _verdict(eager=0.5)]),       # turn 2
        Outcome("b", "level2", [fail(), fail(), fail()]),                           # never
        Outcome("b", "level2", [fail("illegal"), fail(), _verdict(eager=1.6)]),    # turn 3
    ]
    m = evaluation_metrics(outcomes, max_turns=3, samples=2, pass_k=[1, 2, 5])
    assert [m[f"accuracy/turn_{t}"] for t in (1, 2, 3)] == [0.25, 0.5, 0.75]
    assert m["fast_0/eager/turn_1"] == 0.25 and m["fast_1/eager/turn_1"] == 0.25
    assert m["fast_0/eager"] == 0.75                   # the kernel each sample ends with
    assert m["fast_1.5/eager"] == 0.5 and m["fast_2/eager"] == 0.0  # 2.0 and 1.6 beat 1.5; nothing beats 2 strictly
    assert m["fast_1/compile"] == 0.0                  # 1.0 is not faster than 1
    assert m["speedup/geomean_eager"] == pytest.approx((2.0 * 0.5 * 1.6) ** (1 / 3))
    assert m["pass_at_1/turn_1"] == pytest.approx((0.5 + 0.0) / 2)
    assert m["pass_at_2/turn_1"] == pytest.approx((1.0 + 0.0) / 2)
    assert "pass_at_5/turn_1" not in m                 # more than the samples drawn
    assert m["avg_at_2/turn_1"] == pytest.approx(0.25)
    assert m["turns_per_pass"] == pytest.approx((1 + 2 + 3) / 3)
    assert m["category/turn_1/wrong_output"] == 0.25 and m["category/turn_1/illegal"] == 0.25
    assert m["category/turn_1/compile_error"] == 0.25 and m["category/turn_1/pass"] == 0.25
    assert m["faster_rate"] == pytest.approx(2 / 4)    # first passes above 1.1x eager: 2.0 and 1.6
    # torch.compile not timed (the cpu backend): its metrics are left out, never read as "not faster"
    without = evaluation_metrics(outcomes, max_turns=3, samples=2, pass_k=[1], compiled=False)
    assert not [k for k in without if "compile" in k.replace("compile_error", "")]
    assert without["fast_1.5/eager"] == 0.5 and "speedup/geomean_eager" in without
