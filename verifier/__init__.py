"""The verification pool: compile, run, compare, check legality, time -> Verdict and reward."""

from verifier.judge import Judge
from verifier.pool import LocalVerifierPool
from verifier.reward import correctness_first_reward

__all__ = ["Judge", "LocalVerifierPool", "correctness_first_reward"]
