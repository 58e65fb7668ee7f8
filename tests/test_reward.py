import pytest

from schemas.records import Verdict, VerdictCategory
from verifier.reward import correctness_first_reward


def verdict(category, q=0.0, speedup=None, compiled=True, legal=True):
    return Verdict(candidate_id="c", problem_id="p", compiled=compiled, correct=category == VerdictCategory.passed,
                   legal=legal, pass_fraction=q, category=category, speedup_vs_eager=speedup)


@pytest.mark.parametrize("category,compiled,legal", [
    (VerdictCategory.compile_error, False, True), (VerdictCategory.runtime_error, True, True),
    (VerdictCategory.timeout, True, True), (VerdictCategory.illegal, True, False),
    (VerdictCategory.wrong_output, True, True),
])
def test_floor_cases(category, compiled, legal):
    assert correctness_first_reward(verdict(category, compiled=compiled, legal=legal)) == -1.0


def test_partial_and_full():
    assert correctness_first_reward(verdict(VerdictCategory.partial, q=0.75)) == pytest.approx(-0.125)
    assert correctness_first_reward(verdict(VerdictCategory.passed, q=1.0, speedup=2.0), lam=0.5) == pytest.approx(2.0)
    # the speedup bonus is clipped at nu_max
    assert correctness_first_reward(verdict(VerdictCategory.passed, q=1.0, speedup=10.0), lam=0.5, nu_max=4.0) == 3.0
    assert correctness_first_reward(verdict(VerdictCategory.passed, q=1.0, speedup=None)) == 1.0
    # an illegal kernel scores like a crash even if its outputs were right
    assert correctness_first_reward(verdict(VerdictCategory.illegal, q=1.0, speedup=3.0, legal=False)) == -1.0
