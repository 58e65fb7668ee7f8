"""The Ray pool on a local Ray with the cpu backend: same verdicts as the local pool."""

import pytest

from schemas import load_config
from schemas.records import VerdictCategory as V
from tests.kernels import RED_TEAM, candidate, problem
from verifier.pool import make_pool

ray = pytest.importorskip("ray")

NAMES = ["correct", "wrong_output", "segfault", "torch_compute", "cpp_compile_error"]


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_pool_judges_like_the_local_pool(local_ray, verifier_cache, tmp_path):
    cfg = load_config(None, ["verifier.pool=ray", "verifier.workers=2", "verifier.run_timeout_s=5",
                             f"verifier.cache_dir={verifier_cache}"]).verifier
    with make_pool(cfg, verifier_cache, base_seed=11) as pool:
        assert type(pool).__name__ == "RayVerifierPool" and pool.workers == 2
        pairs = [(problem(), candidate(name)) for name in NAMES]
        verdicts = {v.candidate_id: v for v in pool.verify_many(pairs)}
        for name, (_, cand) in zip(NAMES, pairs):
            assert verdicts[cand.id].category == RED_TEAM[name][1], name
        again = pool.verify(problem(), candidate("correct"))  # served from the verdict cache
    assert again.cached and again.category == V.passed and pool.calls == len(NAMES) + 1


def test_missing_ray_is_one_clear_error(monkeypatch, verifier_cache):
    import builtins

    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray" or name.startswith("ray."):
            raise ImportError("No module named 'ray'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    cfg = load_config(None, ["verifier.pool=ray"]).verifier
    with pytest.raises(RuntimeError, match=r"pip install 'kerneldojo\[cluster\]'"):
        make_pool(cfg, verifier_cache)
