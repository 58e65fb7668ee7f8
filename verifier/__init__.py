"""The verification pool: compile, run, compare, check legality, time -> Verdict and reward.

Names are imported lazily: the sandbox's forkserver imports `verifier.sandbox`, and must not
import `torch.utils.cpp_extension` on the way (it probes CUDA, after which forked sandboxes
cannot use the GPU).
"""

_EXPORTS = {
    "Judge": "verifier.judge", "LocalVerifierPool": "verifier.pool", "VerifierPool": "verifier.pool",
    "make_pool": "verifier.pool", "correctness_first_reward": "verifier.reward",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'verifier' has no attribute {name!r}")
