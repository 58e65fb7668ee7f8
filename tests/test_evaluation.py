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
    assert text.splitlines()[2] == "| sft | 0.500 ± 0.354 | 0.750 ± 0.354 | 0.000 ± 0.000 | 4 | 10.000 ± 0.000 |"
    assert "rft" not in text  # stages never evaluated have no row
