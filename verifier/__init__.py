"""The verification pool: compile, run, compare, check legality, time -> Verdict and reward."""

from verifier.judge import Judge
from verifier.pool import LocalVerifierPool, VerifierPool, make_pool
from verifier.reward import correctness_first_reward

__all__ = ["Judge", "LocalVerifierPool", "VerifierPool", "correctness_first_reward", "make_pool"]
