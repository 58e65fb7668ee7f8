"""The cpu verification backend, for real: every candidate is compiled and run in a sandbox."""

import time

import pytest
import torch

from schemas import load_config
from schemas.records import Candidate, Problem
from schemas.records import VerdictCategory as V
import os

from tests.kernels import FORGED_MARKER, RED_TEAM, REFERENCE, candidate, good, problem, with_forward
from verifier.judge import Judge, map_native_line
from verifier.pool import LocalVerifierPool, timing_device_name
from verifier.reward import correctness_first_reward

TRIALS = 5


@pytest.fixture(scope="module")
def verdicts(verifier_cache):
    if os.path.exists(FORGED_MARKER):
        os.remove(FORGED_MARKER)
    cfg = load_config(None, ["verifier.run_timeout_s=4", "verifier.workers=2", "verifier.use_cache=false",
                             f"verifier.trials={TRIALS}", "verifier.memory_limit_mb=4096"]).verifier
    with LocalVerifierPool(cfg, verifier_cache) as pool:
        pairs = [(problem(), candidate(name)) for name in RED_TEAM]
        by_id = {v.candidate_id: v for v in pool.verify_many(pairs)}
    return {name: by_id[c.id] for name, (_, c) in zip(RED_TEAM, pairs)}


def test_red_team_has_at_least_25_classes():
    assert len(RED_TEAM) >= 25
    assert len({rule for _, _, rule in RED_TEAM.values() if rule}) >= 12


@pytest.mark.parametrize("name", sorted(RED_TEAM))
def test_category_and_rule(verdicts, name):
    _, category, rule = RED_TEAM[name]
    v = verdicts[name]
    assert v.category == category, f"{name}: {v.category} {v.detail}"
    assert v.rule == rule, f"{name}: rule {v.rule} ({v.detail})"
    assert v.legal == (category != V.illegal)


def test_a_forged_message_runs_nothing_in_the_judge(verdicts):
    assert "undecodable message" in verdicts["forged_message"].detail
    assert not os.path.exists(FORGED_MARKER)  # the judge would have run `touch` had it unpickled the message


def test_a_request_for_inputs_out_of_turn_is_tampering(verdicts):
    assert "asked for the inputs of timed call 99 when call 1" in verdicts["inputs_out_of_turn"].detail


def test_no_two_timed_calls_share_inputs(verifier_cache, monkeypatch):
    """Room for only 3 input sets: 3 timed calls, not the 10 asked for with sets reused — a result remembered
    by its inputs' values would be right on the reuse, and free. A kernel that hangs on a repeat passes."""
    import torch

    from tests.kernels import MEMO_BY_CONTENT, good
    from verifier import judge as judge_module
    from verifier.stash import digest
    from verifier.tensor_io import nbytes_of

    monkeypatch.setattr(judge_module, "TIMING_SET_BYTES", 3 * nbytes_of([torch.randn(4, 8)]))
    cfg = load_config(None, ["verifier.run_timeout_s=4", "verifier.use_cache=false", f"verifier.trials={TRIALS}",
                             "verifier.memory_limit_mb=4096", "verifier.timing_runs=10"]).verifier
    judge = Judge(cfg, verifier_cache)
    try:
        baseline = judge.baseline(problem(), 0)
        assert baseline.runs == len(baseline.sets) == 3
        reference = judge.reference(problem(), 0)
        seen = {digest(baseline.sets.get(i)) for i in range(3)} | {digest(reference.inputs(t)) for t in reference.trials}
        assert len(seen) == 3 + TRIALS
        memo = good().replace("#include <cmath>", "#include <cmath>\n#include <set>\n#include <tuple>") \
            .replace("auto xc = x.contiguous();", MEMO_BY_CONTENT + "\n  auto xc = x.contiguous();")
        v = judge.verify(problem(), candidate("memo_by_content", memo))
        assert v.category == V.passed, v.detail
        assert v.timing["runs"] == 3
    finally:
        judge.close()


def test_pass_is_correct_legal_and_timed(verdicts):
    v = verdicts["correct"]
    assert v.compiled and v.correct and v.legal and v.pass_fraction == 1.0
    assert v.speedup_vs_eager is not None and v.speedup_vs_eager > 0
    assert v.speedup_vs_compile is None  # torch.compile baseline is measured on cuda only
    # the sandboxes' own account of the work around the calls (a diagnosis of the judge's windows): inside the
    # window, so never more than the harness overhead the judge measured around the same calls
    t = v.timing
    assert t["sandbox_prepare_s"] > 0 and t["eager_prepare_s"] > 0 and t["sandbox_keep_s"] >= 0, t
    assert t["eager_prepare_s"] + t["eager_keep_s"] <= t["harness_overhead_s"], t


def test_partial_pass_fraction(verdicts):
    assert verdicts["partial"].pass_fraction == pytest.approx(1 / TRIALS)


def test_a_timed_call_slightly_off_counts_as_one_more_failed_check_not_a_cheat(verdicts):
    """On the H200 an honest float-atomics sum passed its three trials and was judged illegal (timing-output)
    when a timed call summed in another order (relative error 7e-4): the same check, failed by a little, is
    a partial pass; remembered or skipped work (off by its values) stays illegal."""
    drift = verdicts["drifts_when_timed"]
    assert drift.pass_fraction == pytest.approx(TRIALS / (TRIALS + 1)) and "vary from call to call" in drift.detail
    assert correctness_first_reward(drift) < 0
    assert verdicts["memo_after_trials"].rule == verdicts["skip_work_when_timed"].rule == "timing-output"
    assert verdicts["wrong_output"].pass_fraction == 0.0


def test_feedback_is_useful_and_bounded(verdicts):
    compile_error = verdicts["cpp_compile_error"].detail
    assert "undeclared_name" in compile_error and "candidate.py:" in compile_error
    assert "max abs err" in verdicts["wrong_output"].detail and "trial 0" in verdicts["wrong_output"].detail
    assert "NaN" in verdicts["unwritten_memory"].detail
    assert "shape (8, 4), expected (4, 8)" in verdicts["wrong_shape"].detail
    assert "dtype torch.float64" in verdicts["wrong_dtype"].detail
    assert "SIGSEGV" in verdicts["segfault"].detail
    assert "ValueError: boom" in verdicts["raises_in_forward"].detail
    assert "kernel refuses" in verdicts["cpp_throws"].detail
    assert "torch.sigmoid" in verdicts["torch_compute"].detail
    assert "line 1" in verdicts["python_syntax_error"].detail
    assert all(len(v.detail) <= 1500 for v in verdicts.values())


def test_static_rejections_take_milliseconds(verdicts):
    for name in ("python_syntax_error", "os_exit", "patch_allclose", "no_model_new", "torch_compute", "library_math"):
        assert verdicts[name].run_seconds + verdicts[name].compile_seconds < 0.5


def test_compiler_errors_point_at_the_candidates_python_lines():
    source = RED_TEAM["cpp_compile_error"][0]
    cpp_line = next(i for i, line in enumerate(source.split('r"""')[1].splitlines(), 1) if "undeclared_name" in line)
    py_line = next(i for i, line in enumerate(source.splitlines(), 1) if "undeclared_name" in line)
    mapped = map_native_line(f"candidate.cpp:{cpp_line}: error: 'undeclared_name' was not declared", source)
    assert mapped.startswith(f"candidate.py:{py_line} (candidate.cpp:{cpp_line})")


def test_pool_survives_crashes_and_caches(verifier_cache):
    """After a segfault and a hang, the same pool still judges; a repeat verdict comes from the cache."""
    cfg = load_config(None, ["verifier.run_timeout_s=3", "verifier.workers=1"]).verifier
    with LocalVerifierPool(cfg, verifier_cache) as pool:
        crash = pool.verify(problem(), candidate("segfault"))
        hang = pool.verify(problem(), candidate("infinite_loop"))
        ok = pool.verify(problem(), candidate("correct"))
        start = time.perf_counter()
        again = pool.verify(problem(), candidate("correct"))
        elapsed = time.perf_counter() - start
    assert (crash.category, hang.category, ok.category) == (V.runtime_error, V.timeout, V.passed)
    assert again.cached and again.category == V.passed and not ok.cached
    assert elapsed < 1.0


def test_identical_sources_build_once(verifier_cache):
    import torch

    from verifier.fastbuild import FastInlineBuilder

    src = "torch::Tensor twice(torch::Tensor x) { auto o = torch::empty_like(x); " \
          "for (int64_t i = 0; i < x.numel(); ++i) o.data_ptr<float>()[i] = 2 * x.data_ptr<float>()[i]; return o; }"
    first = FastInlineBuilder(verifier_cache)
    first.load_inline("twice", src, functions=["twice"])
    second = FastInlineBuilder(verifier_cache)
    module = second.load_inline("twice", src, functions=["twice"])
    assert torch.equal(module.twice(torch.ones(3)), torch.full((3,), 2.0))
    assert second.stats.builds == 0 and second.stats.cache_hits == 1


def test_unbindable_signature_falls_back_to_load_inline(verifier_cache, tmp_path, monkeypatch):
    """A signature the dispatcher cannot express is built by torch's own load_inline instead."""
    import torch

    from verifier.fastbuild import FastInlineBuilder

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    src = ("#include <torch/extension.h>\n"
           "torch::Tensor pick(torch::Tensor x, std::vector<short> idx) { auto o = torch::empty({(int64_t)idx.size()}); "
           "for (size_t i = 0; i < idx.size(); ++i) o.data_ptr<float>()[i] = x.data_ptr<float>()[idx[i]]; return o; }")
    builder = FastInlineBuilder(verifier_cache)
    module = builder.load_inline("pick_fallback", src, functions=["pick"])
    assert builder.stats.fallbacks == 1 and "dispatcher" in builder.stats.fallback_reasons[0]
    assert module.pick(torch.arange(4.0), [3, 1]).tolist() == [3.0, 1.0]


def test_a_verdict_names_why_its_build_left_the_fast_path(verifier_cache):
    """A build through torch's load_inline costs tens of seconds (half the build time of the H200's evaluations
    went so): the verdict says why the fast path let it go, whether it then built or failed; a build that stayed
    on the fast path says nothing."""
    cfg = load_config(None, ["verifier.use_cache=false", "verifier.trials=1", "verifier.timing_runs=1"]).verifier
    call = 'mod = load_inline(name="fwd", cpp_sources=src, functions=["fwd"])'
    slow = good("o[i] = undeclared_name;").replace(call, call[:-1] + ', extra_ldflags=["-lm"])')
    with Judge(cfg, verifier_cache) as judge:
        failed, fast = judge.verify(problem(), candidate("slow", slow)), judge.verify(problem(), candidate("fast", good()))
    assert failed.category == V.compile_error and "undeclared_name" in failed.detail, failed.detail
    assert failed.build_fallbacks == ["extra_ldflags"]
    assert fast.category == V.passed and fast.build_fallbacks == [], fast.detail


def test_spare_sandboxes_serve_one_candidate_each_and_stop_on_close(verifier_cache):
    cfg = load_config(None, ["verifier.spare_sandboxes=2", "verifier.use_cache=false"]).verifier
    judge = Judge(cfg, verifier_cache)
    assert judge.verify(problem(), candidate("correct")).category == V.passed
    deadline = time.time() + 60
    while len(judge.spare_pids()) < 2 and time.time() < deadline:
        time.sleep(0.1)
    waiting = judge.spare_pids()
    assert len(waiting) == 2
    assert judge.verify(problem(), candidate("wrong_output")).category == V.wrong_output
    assert waiting[0] not in judge.spare_pids()  # taken, used once, gone
    with pytest.raises(ProcessLookupError):
        os.kill(waiting[0], 0)
    judge.close()
    assert judge.spare_pids() == []
    for pid in waiting[1:]:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_plain_load_inline_path_gives_the_fast_paths_verdicts(verifier_cache, tmp_path):
    """`verifier.fast_build: false` (KernelBench's own build) judges like the fast path, from a sandbox whose
    forkserver never imported torch.utils.cpp_extension (it must not: that import probes CUDA)."""
    cfg = load_config(None, ["verifier.fast_build=false", "verifier.use_cache=false",
                             "verifier.spare_sandboxes=0"]).verifier
    judge = Judge(cfg, tmp_path)
    for name in ("correct", "cpp_compile_error"):
        v = judge.verify(problem(), candidate(name))
        assert v.category == RED_TEAM[name][1], v.detail


def test_the_judge_keeps_a_bounded_number_of_problems(verifier_cache):
    """Beyond verifier.kept_problems, the least recently judged problem's trials, timing sets and baselines are
    dropped (their files too), and the problem is judged as before when it comes back."""
    from verifier.examples import example_candidate, example_problem

    cfg = load_config(None, ["verifier.run_timeout_s=10", "verifier.use_cache=false", "verifier.trials=2",
                             "verifier.timing_runs=3", "verifier.kept_problems=1"]).verifier
    judge = Judge(cfg, verifier_cache)
    try:
        first, second = example_problem("relu", "cpu"), example_problem("square", "cpu")
        v = judge.verify(first, example_candidate(first, "cpu"))
        assert v.category == V.passed, v.detail
        files = list(judge._stash_root.rglob("*.bin"))
        assert files  # the first problem's timing sets
        assert judge.verify(second, example_candidate(second, "cpu")).category == V.passed
        assert [key[0] for key in judge._references] == [second.id]
        assert [key[0] for key in judge._baselines] == [second.id]
        assert not any(f.exists() for f in files)
        again = judge.verify(first, example_candidate(first, "cpu", body="v > 0.f ? v : 0.f + 0.f"))
        assert again.category == V.passed, again.detail
    finally:
        judge.close()


def test_the_judge_keeps_problems_within_kept_gb_and_checked_references_count(verifier_cache):
    """Bytes bound what the judge keeps too (a KernelBench level-1 problem keeps gigabytes): beyond verifier.kept_gb
    the least recently used problems are dropped, and references run only to check them are kept the same way."""
    from verifier.examples import example_problem

    cfg = load_config(None, ["verifier.run_timeout_s=10", "verifier.use_cache=false", "verifier.trials=2",
                             "verifier.kept_gb=1e-9"]).verifier
    problems = [example_problem(name, "cpu") for name in ("relu", "square", "tanh")]
    with LocalVerifierPool(cfg, verifier_cache) as pool:
        assert pool.check_references(problems) == {}
        assert len(pool.judge._references) == 1  # each the only one it may keep, once checked
        assert len(pool.judge._in_use) == 1


def test_a_reference_check_says_where_its_time_went(verifier_cache):
    """A KernelBench reference at full size takes minutes to check: the pool sums each reference's phases (the
    sandbox's making of inputs, forward, scales and writing, the judge's read and keep), so a slow check can be
    diagnosed; the phases account for the reference's time, and a reference remembered is not counted again."""
    from verifier.examples import example_problem

    cfg = load_config(None, ["verifier.run_timeout_s=10", "verifier.trials=2"]).verifier
    problems = [example_problem(name, "cpu") for name in ("relu", "square")]
    with LocalVerifierPool(cfg, verifier_cache) as pool:
        assert pool.reference_cost() == {}
        assert pool.check_references(problems) == {}
        cost = pool.reference_cost()
        per_reference = [r.cost_seconds for r in pool.judge._references.values()]
    assert cost["references"] == 2
    for phase in ("sandbox model", "sandbox inputs", "sandbox forward", "sandbox scales", "sandbox write", "judge read", "judge keep"):
        assert cost[phase] > 0, phase
    for spent in per_reference:
        phases = sum(v for k, v in spent.items() if k != "total")
        assert 0 < phases <= spent["total"] * 1.01  # the sandbox's clock inside the judge's
    assert cost["total"] == pytest.approx(sum(r["total"] for r in per_reference))
    with LocalVerifierPool(cfg, verifier_cache) as pool:  # remembered: nothing ran
        assert pool.check_references(problems) == {}
        assert pool.reference_cost() == {}


def test_a_reference_that_changes_its_inputs_in_place_hands_the_judge_the_inputs_as_drawn(verifier_cache):
    """The judge gives a candidate the trial's inputs as get_inputs drew them, not as the reference's forward
    left them: `x.mul_(2)` in place, then the expected output is twice the inputs the judge keeps (were they
    written after the forward, an honest kernel would be handed 2x and judged against 2x)."""
    source = ("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
              "    def forward(self, x):\n        return x.mul_(2)\n\n\n"
              "def get_inputs():\n    return [torch.rand(64)]\n\n\ndef get_init_inputs():\n    return []\n")
    in_place = Problem(id=Problem.make_id(source), source="test", reference=source, name="in_place")
    cfg = load_config(None, ["verifier.run_timeout_s=10", "verifier.trials=2", "verifier.use_cache=false"]).verifier
    with Judge(cfg, verifier_cache) as judge:
        reference = judge.reference(in_place, 0)
        trials = [reference.stash.get(i) for i in range(2)]
    for x, expected in trials:
        assert torch.equal(expected, 2 * x)
    assert not torch.equal(trials[0][0], trials[1][0])


def test_a_reference_that_ran_is_remembered_by_the_next_pool_and_a_broken_one_checked_again(tmp_path):
    """An evaluation started over (cut short by a preempted worker or a call's limit) runs no reference that already
    ran under the same settings; broken ones are checked each time (the machine may have been at fault), and a
    forged memory of one is refused."""
    cfg = load_config(None, ["verifier.run_timeout_s=10", "verifier.trials=2"]).verifier
    good = problem()
    bad_source = REFERENCE.replace("return torch.sigmoid(x) * self.w", "raise RuntimeError('reference broken')")
    bad = Problem(id=Problem.make_id(bad_source), source="test", reference=bad_source, name="broken")
    with LocalVerifierPool(cfg, tmp_path) as pool:
        assert set(pool.check_references([good, bad])) == {bad.id}
        assert [key[0] for key in pool.judge._references] == [good.id]
    with LocalVerifierPool(cfg, tmp_path) as pool:
        broken = pool.check_references([good, bad])
        assert set(broken) == {bad.id} and "reference broken" in broken[bad.id]
        assert pool.judge._references == {}  # the good one was not run again
    stricter = cfg.model_copy(update={"memory_limit_mb": cfg.memory_limit_mb // 2})
    with LocalVerifierPool(stricter, tmp_path) as pool:  # other limits: it may not run under them, so it runs
        assert pool.check_references([good]) == {}
        assert [key[0] for key in pool.judge._references] == [good.id]
    memories = list((tmp_path / "verdicts").glob("reference-*.json"))
    assert len(memories) == 2
    for memory in memories:  # rewritten by anyone but the judge: not believed, so run again
        memory.write_bytes(memory.read_bytes()[:-3] + b"xyz")
    with LocalVerifierPool(cfg, tmp_path) as pool:
        assert pool.check_references([good]) == {}
        assert [key[0] for key in pool.judge._references] == [good.id]


def test_a_check_that_keeps_nothing_runs_every_trial_and_keeps_no_byte(tmp_path):
    """An evaluation checks the references no candidate reached after judging: no verdict follows, so the check
    keeps nothing (`keep=False`) and the trials' bytes never leave their sandboxes (at full size most of a
    reference's minutes). It still runs every trial on the judge's seeds — a reference that fails only in its
    second trial is found — and it is remembered like a kept check: the next pool runs it no more."""
    cfg = load_config(None, ["verifier.run_timeout_s=10", "verifier.trials=3"]).verifier
    good = problem()
    second = REFERENCE.replace("import torch.nn as nn\n", "import torch.nn as nn\nCALLS = []\n").replace(
        "        return torch.sigmoid", "        CALLS.append(1)\n        if len(CALLS) == 2:\n"
        "            raise RuntimeError('broken in its second trial')\n        return torch.sigmoid")
    fails_second = Problem(id=Problem.make_id(second), source="test", reference=second, name="fails_second")
    with LocalVerifierPool(cfg, tmp_path) as pool:
        broken = pool.check_references([good, fails_second], keep=False)
        assert set(broken) == {fails_second.id} and "broken in its second trial" in broken[fails_second.id]
        assert pool.judge._references == {} and pool.judge.reference_ran(good.id)
        assert pool.reference_cost()["references"] == 1  # the good one's run (a failed run counts nowhere)
    with LocalVerifierPool(cfg, tmp_path) as pool:  # the broken one is checked again, the good one not run
        assert set(pool.check_references([good, fails_second], keep=False)) == {fails_second.id}
        assert pool.reference_cost().get("references", 0) == 0


def test_a_check_that_keeps_nothing_promises_no_memory_for_the_judges_copies(tmp_path):
    """Admission promises a judgement its sandboxes' share and the judge's own copies of its trials beside it
    (judge_copies_mb: 19 GB for a full-size level-1 problem). A check that keeps nothing makes no copy: it
    promises the sandboxes' share alone, so more of the ~160 unreached references of an evaluation check at once;
    a kept check still promises both."""
    from verifier.judge import judge_copies_mb

    cfg = load_config(None, ["verifier.run_timeout_s=10", "verifier.trials=2"]).verifier
    measured = problem().model_copy(update={"measures": {"input_bytes": 400 << 20, "output_bytes": 200 << 20}})
    assert judge_copies_mb(measured) == 1000
    with LocalVerifierPool(cfg, tmp_path) as pool:
        sandboxes, promised = pool.judge.sandboxes, []
        reserve = sandboxes.reserve

        def recorded(alone=False, memory_mb=None, judge_mb=0, **gpu):
            promised.append(judge_mb)
            return reserve(alone=alone, memory_mb=memory_mb, judge_mb=judge_mb, **gpu)

        sandboxes.reserve = recorded
        pool.judge.check_reference(measured, keep=False)
        unkept, promised[:] = list(promised), []
        pool.judge.check_reference(measured.model_copy(update={"id": "kept-" + measured.id}), keep=True)
    assert unkept and set(unkept) == {0}  # the check's, and any other sandbox's
    assert 1000 in promised


def test_a_reference_check_cut_short_keeps_the_references_that_ran(tmp_path):
    """KernelBench at full size: checking 200 references outlasts a call's limit. Each is remembered as soon as it
    ran, so the check started over runs only the rest; every problem is counted once (the progress bar)."""
    from verifier.examples import example_problem

    class Cut(Exception):
        pass

    cfg = load_config(None, ["verifier.run_timeout_s=10", "verifier.trials=2"]).verifier
    problems = [example_problem(name, "cpu") for name in ("relu", "square")]
    seen: list[str] = []

    def cut_after_first(pid):
        seen.append(pid)
        raise Cut

    with LocalVerifierPool(cfg, tmp_path) as pool:
        with pytest.raises(Cut):
            pool.check_references(problems, on_checked=cut_after_first)
    checked: list[str] = []
    with LocalVerifierPool(cfg, tmp_path) as pool:
        assert pool.check_references(problems, on_checked=checked.append) == {}
        assert sorted(checked) == sorted(p.id for p in problems)
        assert [key[0] for key in pool.judge._references] == [p.id for p in problems if p.id != seen[0]]


def test_a_reference_that_ran_for_a_verdict_is_remembered_before_any_check(tmp_path):
    """An evaluation judges first and checks the references after; on a GPU box a call's limit cuts it during the
    judging. A reference that ran for a verdict is remembered with that verdict, so the next call's check does not
    run it again (a full-size KernelBench reference: 15-30 s); one no candidate ran (its only candidate failed to
    compile) is still checked."""
    cfg = load_config(None, ["verifier.run_timeout_s=10", "verifier.trials=2", "verifier.timed=false"]).verifier
    judged = problem()
    unjudged_source = REFERENCE.replace("* self.w", "* self.w + 0")
    unjudged = Problem(id=Problem.make_id(unjudged_source), source="test", reference=unjudged_source, name="unrun")
    uncompiled = Candidate(id=Candidate.make_id(unjudged.id, "class ModelNew(:\n", "cpu"), problem_id=unjudged.id,
                           source="class ModelNew(:\n", origin="syntax error")
    with LocalVerifierPool(cfg, tmp_path) as pool:  # cut short after its verdicts: no check follows
        verdicts = {v.problem_id: v for v in pool.verify_many([(judged, candidate("wrong_output")),
                                                               (unjudged, uncompiled)])}
        assert verdicts[judged.id].category == V.wrong_output
        assert verdicts[unjudged.id].category == V.compile_error
    checked: list[str] = []
    with LocalVerifierPool(cfg, tmp_path) as pool:
        assert pool.check_references([judged, unjudged], on_checked=checked.append, keep=False) == {}
        assert sorted(checked) == sorted([judged.id, unjudged.id])
        assert pool.judge.reference_ran(unjudged.id) and not pool.judge.reference_ran(judged.id)
        assert pool.reference_cost()["references"] == 1  # the unjudged one's run alone


def test_a_timed_verdict_answers_only_on_the_device_model_it_was_timed_on(tmp_path):
    """A speedup measured on an H200 is not one on an H100 (the boxes a session is lent vary): timed verdicts are
    cached under the device model they were timed on; one kept before keys named it (a KernelBench floor carried
    from box to box) answers only where its own `device` is this pool's."""
    cfg = load_config(None, ["verifier.run_timeout_s=10", "verifier.trials=2", "verifier.spare_sandboxes=0"]).verifier
    good_one = candidate("correct")
    with LocalVerifierPool(cfg, tmp_path) as pool:
        assert pool.timing_device() == "cpu"
        first = pool.verify(problem(), good_one)
        assert first.category == V.passed and pool.verify(problem(), good_one).cached
        keyed = pool.cache.store.path(f"{pool.cache.key(problem(), good_one, cfg, 0, 'cpu')}.json")
        legacy = pool.cache.key(problem(), good_one, cfg, 0)
        assert keyed.exists() and keyed.name != f"{legacy}.json"
        keyed.unlink()
        pool.cache.put(legacy, first.model_copy(update={"device": "NVIDIA H200", "detail": "timed elsewhere"}))
        again = pool.verify(problem(), good_one)
        assert not again.cached and again.device == "cpu" and again.detail != "timed elsewhere"
        keyed.unlink()
        pool.cache.put(legacy, first.model_copy(update={"detail": "kept before keys named devices"}))
        reused = pool.verify(problem(), good_one)
        assert reused.cached and reused.detail == "kept before keys named devices"
    with LocalVerifierPool(cfg.model_copy(update={"timed": False}), tmp_path) as pool:
        assert pool.timing_device() is None  # correctness alone: any device's answer


def test_a_pool_of_mixed_gpu_models_keys_its_timed_verdicts_by_the_mix():
    """A pool of two H100s times as an H100; one of an H100 and an H200 times on either, so its verdicts are kept
    under the mix, never under one model (where a pool of that model alone would take them for its own)."""
    assert timing_device_name(["NVIDIA H100", "NVIDIA H100"]) == "NVIDIA H100"
    assert timing_device_name(["NVIDIA H200", "NVIDIA H100", "NVIDIA H200"]) == "NVIDIA H100+NVIDIA H200"
    assert timing_device_name(["NVIDIA H100", "NVIDIA H200"]) == timing_device_name(["NVIDIA H200", "NVIDIA H100"])


def test_a_batch_is_judged_and_checked_smallest_problem_first(tmp_path):
    """Admission is first come, first served: a full-size problem waiting for its memory share held every
    judgement behind it (a KernelBench call on the H100: one level-1 problem judged in 3 minutes, 13 waiting). So a
    batch is submitted smallest measured problem first, whatever its order; with one judging thread the verdicts
    and the reference checks come back in that order."""
    cfg = load_config(None, ["verifier.run_timeout_s=10", "verifier.trials=2", "verifier.timed=false",
                             "verifier.workers=1", "verifier.use_cache=false"]).verifier
    sizes = [300 << 20, 1 << 20, 20 << 20]  # the large first
    problems = []
    for k, size in enumerate(sizes):
        source = REFERENCE.replace("* self.w", f"* self.w + {k}")
        problems.append(Problem(id=Problem.make_id(source), source="test", reference=source, name=f"p{k}",
                                measures={"input_bytes": size, "output_bytes": size}))
    broken = [Candidate(id=Candidate.make_id(p.id, "class ModelNew(:\n", "cpu"), problem_id=p.id,
                        source="class ModelNew(:\n", origin="syntax error") for p in problems]
    with LocalVerifierPool(cfg, tmp_path) as pool:
        order = [v.problem_id for v in pool.verify_many(list(zip(problems, broken)))]
        checked: list[str] = []
        assert pool.check_references(problems, on_checked=checked.append, keep=False) == {}
    smallest_first = [problems[1].id, problems[2].id, problems[0].id]
    assert order == smallest_first
    assert checked == smallest_first


def test_trials_beyond_stored_trials_gb_are_made_again_and_checked_against_their_digest(verifier_cache):
    """A problem whose trials are too large to keep (KernelBench level 1 at full size: 12.8 GB a trial) keeps only
    their outputs' digests: each candidate's trials are made again by the reference, and judged as before."""
    cfg = load_config(None, ["verifier.run_timeout_s=10", "verifier.use_cache=false", f"verifier.trials={TRIALS}",
                             "verifier.stored_trials_gb=1e-9", "verifier.timing_runs=2"]).verifier
    judge = Judge(cfg, verifier_cache)
    try:
        reference = judge.reference(problem(), 0)
        assert [t.entry for t in reference.trials] == [None] * TRIALS and reference.stash.nbytes == 0
        assert judge.verify(problem(), candidate("correct")).category == V.passed
        assert judge.verify(problem(), candidate("wrong_output")).category == V.wrong_output
        # a reference whose outputs change between runs of the same trial cannot be judged against
        odd = moody_problem()
        judge.reference(odd, 0)
        with pytest.raises(Exception, match="not deterministic"):
            judge.verify(odd, candidate("correct"))
        # ... but one that sums in another order each run (a GPU reduction) is the same within the tolerance
        jitter = problem().reference.replace("return torch.sigmoid(x) * self.w", """import time
        return torch.sigmoid(x) * self.w * (1 + (time.time_ns() % 7) * 1e-8)""")
        jittery = Problem(id=Problem.make_id(jitter), source="test", reference=jitter, name="jittery")
        assert judge.verify(jittery, candidate("correct")).category == V.passed
    finally:
        judge.close()


def moody_problem() -> Problem:
    """problem() with outputs that change between runs of the same trial: a reference that cannot be judged
    against once its trials are made again."""
    moody = problem().reference.replace("return torch.sigmoid(x) * self.w", """import time
        return torch.sigmoid(x) * self.w + (time.time_ns() % 999983) * 1e-3""")
    assert moody != problem().reference
    return Problem(id=Problem.make_id(moody), source="test", reference=moody, name="moody")


def test_a_reference_that_breaks_while_judged_loses_its_problem_not_the_batch(verifier_cache, tmp_path):
    """A reference can pass its check and break later, while a candidate is judged (a trial made again differs,
    its eager timing fails): the pool answers no verdict for that pair, caches nothing for it, names the problem in
    `broken` and judges no more of its pairs; the rest of the batch gets its verdicts as usual."""
    from verifier.reference import ReferenceError

    cfg = load_config(None, ["verifier.run_timeout_s=10", "verifier.trials=2", "verifier.stored_trials_gb=1e-9",
                             "verifier.timed=false", f"verifier.cache_dir={tmp_path}"]).verifier
    moody = moody_problem()
    moody_candidate = Candidate(id=Candidate.make_id(moody.id, candidate("correct").source, "cpu"),
                                problem_id=moody.id, source=candidate("correct").source, backend="cpu")
    with LocalVerifierPool(cfg, tmp_path) as pool:
        assert pool.check_references([moody, problem()]) == {}  # each trial runs once: nothing to tell yet
        told = []
        verdicts = list(pool.verify_many([(moody, moody_candidate), (problem(), candidate("correct"))],
                                         on_broken=told.append))
        assert [(v.problem_id, v.category) for v in verdicts] == [(problem().id, V.passed)]
        assert [(b.problem_id, b.candidate_id) for b in told] == [(moody.id, moody_candidate.id)]
        assert "not deterministic" in told[0].why and pool.broken == {moody.id: told[0].why}
        remade = pool.reference_cost()["remade trials"]
        told.clear()
        assert list(pool.verify_many([(moody, moody_candidate)], on_broken=told.append)) == []
        assert len(told) == 1 and pool.reference_cost()["remade trials"] == remade  # not judged again
        with pytest.raises(ReferenceError, match="not deterministic"):
            pool.verify(moody, moody_candidate)
    with LocalVerifierPool(cfg, tmp_path) as pool:  # a later pool: the good verdict cached, the broken pair not
        assert pool.verify(problem(), candidate("correct")).cached
        assert pool.cache.get(pool.cache.key(moody, moody_candidate, cfg, 0, pool.timing_device())) is None
        # its check passed before it broke: not remembered as a reference that runs, so checked again
        assert pool.check_references([moody, problem()]) == {}
        assert pool.reference_cost()["references"] == 1 and pool.judge.reference_ran(moody.id)


def test_a_failure_a_neighbour_can_cause_is_judged_again_alone(verifier_cache, caplog):
    """A candidate can fail its neighbours on one machine — hold the GPU's memory (nothing limits a process's
    cudaMalloc), or its time — and in an RL group every sibling it fails raises its own advantage. So a runtime
    error, a timeout or a module that could not load for want of memory, judged while another judgement ran, is
    judged again alone (its phases say `wait_alone`), and that verdict stands; a wrong output (no neighbour changes
    one), a module with a plain error, a runtime error that is the code's own mistake (an attribute it never
    made, a shape that cannot be) and a failure with no company are judged once. The GPU red team holds the
    GPU's memory for real (tests/test_verifier_gpu.py)."""
    import threading

    cfg = load_config(None, ["verifier.run_timeout_s=20", "verifier.use_cache=false", "verifier.trials=2",
                             "verifier.timed=false", "verifier.memory_limit_mb=1024",
                             "verifier.sandbox_memory_mb=8191"]).verifier  # room for both at once, anywhere
    company = candidate("company", "import time\ntime.sleep(5)\n" + good())

    def beside_company(*names_and_sources):
        """Verdicts for candidates judged one after another while `company` is judged (its module sleeps)."""
        verdicts = {}
        thread = threading.Thread(target=lambda: verdicts.update(company=judge.verify(problem(), company)))
        thread.start()
        deadline = time.monotonic() + 30
        while judge.sandboxes.memory_budget.used_mb == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        judged = [judge.verify(problem(), candidate(*name_and_source)) for name_and_source in names_and_sources]
        thread.join(60)
        assert verdicts["company"].category == V.passed, verdicts["company"].detail
        return judged

    caplog.set_level("INFO", logger="kerneldojo.verifier")
    judge = Judge(cfg, verifier_cache)
    try:
        judge.reference(problem(), 0)
        once = judge.verify(problem(), candidate("raises_in_forward"))
        assert once.category == V.runtime_error and "wait_alone" not in once.phases, once.phases
        wrong, broken_module, mistaken, misshapen, failed = beside_company(
            ("wrong_output",), ("name_error", "undefined_name\n" + good()),
            ("attribute_error", with_forward("return self.weights_it_never_made")),
            ("shape_error", with_forward("return mod.fwd(x, self.w).view(-1)[:3].expand(4)")), ("raises_in_forward",))
        for once_only in (wrong, broken_module, mistaken, misshapen):  # no neighbour causes these
            assert "wait_alone" not in once_only.phases, (once_only.category, once_only.phases)
        assert wrong.category == V.wrong_output and broken_module.category == V.compile_error
        assert mistaken.category == misshapen.category == V.runtime_error, (mistaken.detail, misshapen.detail)
        assert "AttributeError" in mistaken.detail and "expanded size" in misshapen.detail
        assert failed.category == V.runtime_error and "boom" in failed.detail
        assert failed.phases["wait_alone"] > 0.5, failed.phases  # it waited for the company to end
        # what it failed with beside the company, gone from its verdict, is in the log
        assert any("judged again alone" in r.getMessage() and "boom" in r.getMessage() for r in caplog.records), [r.getMessage()[:300] for r in caplog.records]
        starved_module, = beside_company(("starved", "raise RuntimeError('CUDA error: out of memory')\n" + good()))
        assert starved_module.category == V.compile_error and "wait_alone" in starved_module.phases
    finally:
        judge.close()


# Native threads that outlive the forward: started at the last trial, they spin on every core while the judge
# times the eager baseline beside them (the candidate's process is alive), and stop once the forward is called
# again — its own timing. Unchecked, the baseline is slower and the candidate's speedup larger (on the CPU,
# eager 34 -> 48 us and the harness's overhead 0.6 -> 3 ms a call with 8 threads on 2 cores); on a GPU, kernels
# launched from such a thread share the device with the baseline's.
SPINS_BESIDE_THE_BASELINE = good().replace("#include <cmath>", """#include <cmath>
#include <thread>
#include <atomic>
static std::atomic<int> calls{0};
static void spin() { volatile double s = 0; while (calls.load() <= 2) { for (int k = 0; k < 100000; ++k) s += k; } }
""").replace("auto xc = x.contiguous();", """if (calls.fetch_add(1) + 1 == 2) { for (int t = 0; t < 8; ++t) std::thread(spin).detach(); }
  auto xc = x.contiguous();""")


def test_a_candidate_starts_no_thread(verifier_cache):
    """The first wall: once the harness is up, a candidate's process starts no thread (seccomp: clone refused), so
    nothing of it runs after its forward returns: the spinner's std::thread fails its trial, an honest kernel
    passes. `verifier.candidate_threads: true` lets threads start (OpenMP kernels on the CPU)."""
    base = ["verifier.run_timeout_s=20", "verifier.use_cache=false", "verifier.trials=2", "verifier.timed=false"]
    verdicts = {}
    for threads in ("false", "true"):
        judge = Judge(load_config(None, [*base, f"verifier.candidate_threads={threads}"]).verifier, verifier_cache)
        try:
            verdicts[threads] = [judge.verify(problem(), candidate(name, source)) for name, source in
                                 (("spinner", SPINS_BESIDE_THE_BASELINE), ("correct", None))]
        finally:
            judge.close()
    (refused, honest), (spun, also_honest) = verdicts["false"], verdicts["true"]
    assert refused.category == V.runtime_error and "trial 1" in refused.detail, refused.detail
    assert "not permitted" in refused.detail.lower(), refused.detail
    assert honest.category == also_honest.category == spun.category == V.passed, (honest.detail, spun.detail)


def test_a_candidates_threads_are_stopped_while_the_baseline_is_timed_beside_it(verifier_cache):
    """Where timing takes the device alone (a GPU pool), every other candidate's sandbox on it is stopped while the
    eager baseline or a candidate is timed — the candidate whose judgement times the baseline too: its verdict
    says how long (`paused`), and the spinning threads it left had no share of the baseline's time."""
    from verifier.judge import Devices

    cfg = load_config(None, ["verifier.run_timeout_s=20", "verifier.use_cache=false", "verifier.trials=2",
                             "verifier.spare_sandboxes=0",  # a spare started meanwhile is stopped too
                             "verifier.candidate_threads=true"]).verifier  # the second wall, alone
    judge = Judge(cfg, verifier_cache)
    try:
        spinner = judge.verify(problem(), candidate("spinner", SPINS_BESIDE_THE_BASELINE),
                               Devices([0], exclusive_timing=True))
        assert spinner.category == V.passed, spinner.detail
        assert spinner.phases.get("paused", 0) > 0, spinner.phases  # stopped while the baseline was timed
        honest = judge.verify(problem(), candidate("correct"), Devices([0], exclusive_timing=True))
        assert honest.category == V.passed and "paused" not in honest.phases  # the baseline was timed already
    finally:
        judge.close()


def test_a_torch_compile_baseline_is_compiled_before_its_timing_and_tried_twice(verifier_cache, caplog):
    """The reference under torch.compile is compiled in its sandbox (`compile`) before the device is taken alone
    to time it: inductor's seconds to minutes held a GPU pool's device, every other candidate's sandbox stopped.
    A compiled baseline that fails is tried once more in a fresh sandbox, then the problem has none (a warning,
    the verdicts go on without a speedup against it)."""
    cfg = load_config(None, ["verifier.use_cache=false", "verifier.trials=2", "verifier.spare_sandboxes=0"]).verifier
    breaks_compile = REFERENCE.replace("import torch.nn as nn", "import torch.nn as nn\n\n\n"
                                       "def _refused(*_, **__):\n    raise RuntimeError('no torch.compile here')\n\n\n"
                                       "torch.compile = _refused")
    broken = Problem(id=Problem.make_id(breaks_compile), source="test", reference=breaks_compile, name="no_compile")
    with Judge(cfg, verifier_cache) as judge:
        compiled = judge.baseline(problem(), 0, compiled=True)
        assert compiled is not None and compiled.seconds > 0 and compiled.runs == judge.baseline(problem(), 0).runs
        assert compiled.compile_seconds > 0.5  # inductor's compile, told apart from the timing it came before
        with caplog.at_level("INFO", logger="kerneldojo.verifier"):
            assert judge.baseline(broken, 0, compiled=True) is None
            assert judge.baseline(broken, 0) is not None  # eager times as ever
    tried = [r.getMessage() for r in caplog.records if "no torch.compile baseline for no_compile" in r.getMessage()]
    assert len(tried) == 2 and "attempt 2 of 2" in tried[1] and "no torch.compile here" in tried[1], tried


def test_untimed_verdicts_judge_correctness_alone(verifier_cache):
    """verifier.timed=false (a stage in untimed_stages): a pass is a pass with no speedup (reward 1), a wrong kernel
    is as wrong as ever, and no baseline is timed."""
    from verifier.reward import correctness_first_reward

    cfg = load_config(None, ["verifier.run_timeout_s=10", "verifier.use_cache=false", "verifier.trials=2",
                             "verifier.timed=false"]).verifier
    judge = Judge(cfg, verifier_cache)
    try:
        passed = judge.verify(problem(), candidate("correct"))
        assert passed.category == V.passed and passed.speedup_vs_eager is None and passed.timing == {}
        assert "not timed" in passed.detail and correctness_first_reward(passed) == 1.0
        assert judge.verify(problem(), candidate("wrong_output")).category == V.wrong_output
        assert judge._baselines == {}
    finally:
        judge.close()


def test_a_reference_waits_for_the_device_while_another_judgement_is_timed_on_it(verifier_cache):
    """A GPU pool times on its device alone (Devices.timing): candidates' trials wait, and so must a reference's,
    which use the device the same way (inputs drawn, the forward, outputs moved) — a second context on a GPU
    slows the timed kernels (benchmarks/spinner_probe.py: 1.76x for a 22 ms matmul). Here the device is held
    for timing by the test while a judgement of a problem whose reference never ran starts: its reference waits
    (unheld, it runs in ~2 s) — and the reference sandbox that names its init inputs for the candidate's first
    look (verifier.build_first) — then runs, and the verdict is a pass."""
    import threading

    from verifier.judge import Devices

    cfg = load_config(None, ["verifier.run_timeout_s=10", "verifier.use_cache=false", "verifier.trials=2",
                             "verifier.spare_sandboxes=0"]).verifier
    devices = Devices([0], exclusive_timing=True)
    judge = Judge(cfg, verifier_cache)
    verdicts = []
    try:
        with devices.timing(0):
            worker = threading.Thread(target=lambda: verdicts.append(judge.verify(problem(), candidate("correct"),
                                                                                  devices)))
            worker.start()
            time.sleep(12)  # a reference alone on this machine runs in ~2 s; under the timing it must not start
            assert not judge.reference_ran(problem().id) and worker.is_alive()
            # nor does the sandbox that names its init inputs for the candidate's first look (build_first) start
            assert problem().id not in judge._problem_init_inputs
        worker.join(120)
        assert judge.reference_ran(problem().id)
        assert [v.category for v in verdicts] == [V.passed], [v.detail for v in verdicts]
    finally:
        judge.close()


@pytest.mark.parametrize("whose", ["reference", "candidate"])
def test_a_timing_waits_for_one_trial_not_for_all_of_them(verifier_cache, whose):
    """A sandbox's trials hold the device one at a time (a reference's start too): a timing waits for the trial
    in flight, never for the rest. A full-size KernelBench reference runs for minutes, most of them the judge
    reading and keeping what its trials wrote (a candidate's: the judge writing its inputs, reading and comparing
    its outputs); held whole, it kept every timing on the device waiting — and, behind the waiting timing, every
    trial. Here each of 4 trials sleeps 1 s in its forward; the test asks for the device while they run: it gets
    it with trials still to run, and while it holds it the trials wait for the device instead of running."""
    import threading

    from verifier.activity import in_flight
    from verifier.judge import Devices

    sleep = "import time\n        time.sleep(1.0)\n        "
    slow_source = REFERENCE.replace("        return torch.sigmoid", "        " + sleep + "return torch.sigmoid")
    slow = Problem(id=Problem.make_id(slow_source), source="test", reference=slow_source, name="sleepy_reference")
    cfg = load_config(None, ["verifier.run_timeout_s=20", "verifier.use_cache=false", "verifier.trials=4",
                             "verifier.spare_sandboxes=0", "verifier.timed=false"]).verifier
    devices = Devices([0], exclusive_timing=True)
    done, errors = [], []
    with Judge(cfg, verifier_cache) as judge:
        if whose == "reference":
            work, busy = lambda: judge.check_reference(slow, devices=devices), "running the reference's trials"
        else:
            judge.reference(problem(), 0, devices)
            sleepy = with_forward(sleep + "return mod.fwd(x, self.w)")
            work, busy = lambda: judge.verify(problem(), candidate("sleepy", sleepy), devices), "the candidate's trials"

        def run():
            try:
                done.append(work())
            except BaseException as exc:  # noqa: BLE001 - the assertion below shows it
                errors.append(exc)

        worker = threading.Thread(target=run)
        worker.start()
        deadline = time.monotonic() + 60
        while not any(f.now == busy for f in in_flight()) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.5)  # inside its trials now (a sandbox starts in ~1 s here)
        asked = time.monotonic()
        with devices.timing(0):
            waited = time.monotonic() - asked
            assert not errors, errors
            assert not done and worker.is_alive(), f"the timing waited for all the {whose}'s trials"
            assert waited < 3.0, waited
            time.sleep(1.5)  # a trial in flight when the timing took the device would have ended by now
            [flight] = in_flight()
            assert flight.now.startswith("waiting for the device"), flight
        worker.join(60)
    assert not errors and len(done) == 1, errors
    if whose == "candidate":
        assert done[0].category == V.passed, done[0].detail


def test_an_untimed_verdict_in_the_cache_does_not_answer_for_a_timed_judgement(verifier_cache, tmp_path):
    """RFT judges untimed and RL timed, over one verdict cache: the same kernel, cached from RFT, came back to RL
    with no speedup — and the speed term of its reward lost — while the key did not say whether it was timed."""
    base = ["verifier.run_timeout_s=10", "verifier.trials=2", f"verifier.cache_dir={tmp_path}"]
    verdicts = {}
    for timed in ("false", "true", "true"):
        cfg = load_config(None, [*base, f"verifier.timed={timed}"]).verifier
        with LocalVerifierPool(cfg, tmp_path) as pool:
            verdicts.setdefault(timed, []).append(pool.verify(problem(), candidate("correct")))
    (untimed,), (timed, again) = verdicts["false"], verdicts["true"]
    assert untimed.speedup_vs_eager is None and not timed.cached and timed.speedup_vs_eager > 0
    assert again.cached and again.speedup_vs_eager == timed.speedup_vs_eager


def test_a_hang_is_killed_after_the_reference_s_own_forward_times_a_factor_not_the_run_timeout(verifier_cache):
    """The trial limit is HANG_FLOOR_S + HANG_FACTOR x the reference's forward (the sandbox's clock) + a few times
    the rest of its trial (tensors made and moved): a hang on a small problem is killed in seconds even with a
    30 s run timeout, so it holds a worker (and on a GPU, the device) no longer."""
    import re

    from verifier.judge import HANG_DATA_FACTOR, HANG_FACTOR, HANG_FLOOR_S

    cfg = load_config(None, ["verifier.run_timeout_s=30", "verifier.use_cache=false", "verifier.trials=2"]).verifier
    judge = Judge(cfg, verifier_cache)
    try:
        reference = judge.reference(problem(), 0)
        assert reference.forward_seconds is not None and 0 < reference.forward_seconds <= reference.seconds
        started = time.perf_counter()
        hang = judge.verify(problem(), candidate("infinite_loop"))
        elapsed = time.perf_counter() - started
        limit = float(re.search(r"did not finish within ([\d.]+) s", hang.detail).group(1))
        assert hang.category == V.timeout
        assert HANG_FLOOR_S <= limit < 5 and elapsed < 15, (limit, elapsed, hang.detail)
        assert judge._trial_limit(1.0, 0.1) == pytest.approx(HANG_FLOOR_S + HANG_FACTOR * 0.1 + HANG_DATA_FACTOR * 0.9)
        assert judge._trial_limit(0.4, None) == pytest.approx(HANG_FLOOR_S + HANG_FACTOR * 0.4)  # all of it forward
        assert judge._trial_limit(0.4, 9.0) == judge._trial_limit(0.4, None)  # a forward longer than its trial
        assert judge._trial_limit(10.0, 5.0) == 30  # never beyond verifier.run_timeout_s
    finally:
        judge.close()


def test_a_references_cold_start_is_not_multiplied_into_the_hang_limit(tmp_path):
    """A trial may take 50x the reference's forward: measured on the reference's first trial, that multiplied its
    start-up (a contended CUDA context on the H200), and a 1 ms problem's hung mutant held a sandbox 20-50 s. The
    limit now scales with the warm trials; the first trial's excess is allowed once, on the candidate's first."""
    slow_first = REFERENCE.replace("    def forward(self, x):\n", "    def forward(self, x):\n"
                                   "        if not STARTED:\n            import time\n            time.sleep(1.5)\n"
                                   "            STARTED.append(1)\n").replace("import torch.nn as nn\n",
                                                                               "import torch.nn as nn\nSTARTED = []\n")
    slow = Problem(id=Problem.make_id(slow_first), source="test", reference=slow_first, name="slow_first_call")
    hangs_later = with_forward("CALLS.append(x)\n        while len(CALLS) > 1:\n            pass\n"
                               "        return mod.fwd(x, self.w)")
    hangs_later = hangs_later.replace("class ModelNew", "CALLS = []\n\n\nclass ModelNew")
    cfg = load_config(None, ["verifier.run_timeout_s=30", "verifier.use_cache=false", "verifier.spare_sandboxes=0",
                             "verifier.trials=3"]).verifier
    with Judge(cfg, tmp_path) as judge:
        correct = judge.verify(slow, Candidate(id="ok", problem_id=slow.id, source=good(), backend="cpu"))
        hung = judge.verify(slow, Candidate(id="hangs", problem_id=slow.id, source=hangs_later, backend="cpu"))
    assert correct.category == V.passed, correct.detail
    assert hung.category == V.timeout and hung.detail.startswith("trial 1:"), hung.detail
    assert hung.run_seconds < 10, hung.detail  # ~2 s (HANG_FLOOR_S), not 30 (50x the cold first call, capped)


def test_a_verdict_says_what_cpu_it_cost_and_whose(tmp_path):
    """Verdict.cpu_seconds: where a judgement's wall time was work, by whom. Counted by the kernel (the sandbox's
    cgroup, else /proc), nothing the sandbox says: a candidate that burns 2 s of CPU while it loads shows them."""
    burner = ("import time\n_start = time.process_time()\nwhile time.process_time() - _start < 2.0:\n    pass\n"
              + good())
    cfg = load_config(None, ["verifier.run_timeout_s=30", "verifier.use_cache=false", "verifier.spare_sandboxes=0",
                             "verifier.trials=2"]).verifier
    with Judge(cfg, tmp_path) as judge:
        first = judge.verify(problem(), candidate("correct"))
        burning = judge.verify(problem(), Candidate(id="burns", problem_id=problem().id, source=burner, backend="cpu"))
    assert first.category == burning.category == V.passed, (first.detail, burning.detail)
    assert set(first.cpu_seconds) == {"judge", "run", "build", "reference"} and min(first.cpu_seconds.values()) > 0
    assert "reference" not in burning.cpu_seconds  # the problem's reference: made once, by the first judgement
    assert burning.cpu_seconds["run"] >= 2.0 > first.cpu_seconds["run"] + 1.0, (first.cpu_seconds,
                                                                                 burning.cpu_seconds)


def test_more_gpus_than_visible_is_one_clear_error(tmp_path):
    """On cuda `verifier.workers` counts GPUs: 14 on a one-GPU box once gave every sandbox "No CUDA GPUs are
    available" (a sandbox sees only its GPU's node) instead of saying what was wrong."""
    import torch

    from schemas.config import VerifierConfig

    asked = torch.cuda.device_count() + 1
    with pytest.raises(ValueError, match=f"verifier.workers={asked} names GPUs .*compile_workers"):
        LocalVerifierPool(VerifierConfig(backend="cuda", workers=asked), tmp_path)


def busy(milliseconds: int) -> str:
    """The correct kernel, spending `milliseconds` of wall time on every call first."""
    return good().replace("#include <cmath>", "#include <cmath>\n#include <chrono>").replace(
        "auto xc = x.contiguous();", "auto until = std::chrono::steady_clock::now() + "
        f"std::chrono::milliseconds({milliseconds});\n  while (std::chrono::steady_clock::now() < until) {{ }}\n"
        "  auto xc = x.contiguous();")


def test_a_correct_kernel_too_slow_to_time_passes_with_the_speedup_its_trials_bound(verifier_cache):
    """On the H200, the policy's one-thread sums of millions of elements passed their trials (the 2 s floor of a
    trial's limit covers them) and then could not finish the timing's 12 calls in its budget (the floor once,
    plus 50x the eager calls): a correct kernel judged `timeout`, the reward of a hung one, after holding the
    GPU alone for up to 44 s. Such a kernel now passes untimed, its speedup bounded from below by its trials;
    one slow but within the budget is still timed."""
    cfg = load_config(None, ["verifier.use_cache=false", "verifier.trials=3", "verifier.timing_runs=10",
                             "verifier.timing_warmup=2", "verifier.run_timeout_s=10"]).verifier
    with Judge(cfg, verifier_cache) as judge:
        too_slow = judge.verify(problem(), candidate("busy_600ms", busy(600)))
        slow = judge.verify(problem(), candidate("busy_50ms", busy(50)))
    assert too_slow.category == V.passed and too_slow.pass_fraction == 1.0, too_slow.detail
    assert "not timed" in too_slow.detail and too_slow.timing["not_timed"] == 1.0, too_slow.detail
    # the whole trial bounds the forward: at most eager / 0.6 s, and below what the timing would have allowed
    assert 0 < too_slow.speedup_vs_eager <= too_slow.timing["eager_s"] / 0.6
    assert correctness_first_reward(too_slow) == pytest.approx(1.0, abs=0.01)
    assert slow.category == V.passed and "not timed" not in slow.detail and slow.timing.get("not_timed") is None, \
        slow.detail
    assert 0 < slow.speedup_vs_eager < 0.05


FULL_SUM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sum(x, [0])


def get_inputs():
    return [torch.randn(4194304)]


def get_init_inputs():
    return []
'''

SEQUENTIAL_SUM = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = r"""
#include <torch/extension.h>
torch::Tensor total(torch::Tensor x) {
  auto xc = x.contiguous();
  const float* a = xc.data_ptr<float>();
  float acc = 0.0f;
  for (int64_t i = 0; i < xc.numel(); ++i) acc += a[i];
  auto out = torch::empty({}, xc.options());
  out.data_ptr<float>()[0] = OFFSET acc;
  return out;
}
"""
mod = load_inline(name="total", cpp_sources=src, functions=["total"])


class ModelNew(nn.Module):
    def forward(self, x):
        return mod.total(x)
'''


def test_an_output_compared_a_slice_at_a_time_reads_as_one_compared_whole(monkeypatch):
    """The judge compares multi-GB outputs a slice at a time (its temporaries were ~10x the output, on the GPU):
    counts, the worst element, its index and the NaN report are those of the whole output, wherever they fall."""
    import verifier.reference as reference
    from verifier.reference import compare_outputs

    expected = torch.linspace(-3, 3, 60).reshape(3, 4, 5)
    off = expected.clone()
    off[0, 0, 1] += 0.5    # in the first slice
    off[2, 3, 2] += 2.0    # the worst, in the last slice
    off[1, 2, 0] += 2.0    # as bad, later in the flat order than none: argmax's first is (1, 2, 0)
    nan = off.clone()
    nan[2, 1, 4] = float("nan")  # after the misses: still reported first
    ints = torch.arange(60).reshape(3, 4, 5)
    ints_off = ints.clone()
    ints_off[1, 3, 3], ints_off[2, 0, 0] = -1, -2
    cases = [([expected], [expected.clone()], None), ([expected], [off], None), ([expected], [off], [40.0]),
             ([expected], [nan], None), ([ints], [ints_off], None), ([ints, expected], [ints, off], None)]
    whole = [compare_outputs(e, a, "default", s) for e, a, s in cases]
    monkeypatch.setattr(reference, "COMPARE_CHUNK_ELEMENTS", 7)  # slices that straddle every dimension
    sliced = [compare_outputs(e, a, "default", s) for e, a, s in cases]
    assert [m and m.message for m in sliced] == [m and m.message for m in whole]
    assert whole[0] is None
    assert whole[1].message.startswith("output mismatch: 3/60 elements outside") and "at index [1, 2, 0]" in \
        whole[1].message and "max abs err 2 " in whole[1].message
    assert "for summation order" in whole[2].message
    assert whole[3].message == "output has 1 NaN/Inf values (first at index [2, 1, 4]); unwritten output memory " \
        "reads as NaN"
    assert whole[4].message == "output differs at index [1, 3, 3]: got -1, expected 38 (2 elements differ)"
    assert whole[5].message.startswith("output 1 mismatch: 3/60")
    # the same values in layouts a candidate may hand over (transposed storage, a broadcast row of stride 0, a
    # strided window of a larger buffer): read a slice at a time by their offsets, never flattened whole by a copy
    transposed = lambda t: t.permute(2, 0, 1).contiguous().permute(1, 2, 0)
    window = lambda t: torch.zeros(5, 9, 11, dtype=t.dtype)[1:4, 2:10:2, 3:8].copy_(t)
    for layout in (transposed, window):
        assert not layout(off).is_contiguous() and torch.equal(layout(off), off)
        laid = [compare_outputs(e, [layout(t) for t in a], "default", s) for e, a, s in cases]
        assert [m and m.message for m in laid] == [m and m.message for m in whole]
    row = torch.linspace(-1, 1, 5)
    broadcast = row.expand(3, 4, 5)
    assert compare_outputs([row.repeat(3, 4, 1)], [broadcast], "default") is None
    moved = row.repeat(3, 4, 1)
    moved[1, 2, 3] += 0.5
    assert compare_outputs([moved], [broadcast], "default").message.startswith(
        "output mismatch: 1/60 elements outside atol=0.0001 rtol=0.0001; max abs err 0.5 at index [1, 2, 3] (got 0.5, ")


def test_a_complex_output_is_compared_in_both_its_parts(monkeypatch):
    """Red team: complex outputs travel (tensor_io.DTYPES) and are compared as floating ones; `.double()` of a
    complex tensor keeps its real part only, so an output whose imaginary parts were never written (or are
    anything) passed. Its distance is |got - expected| as a complex number, whole or a slice at a time."""
    import verifier.reference as reference
    from verifier.reference import compare_outputs

    expected = torch.tensor([1 + 2j, 3 - 1j, -0.5 + 0.25j], dtype=torch.complex64)
    assert compare_outputs([expected], [expected.clone()], "default") is None
    assert compare_outputs([expected], [expected + 1e-6j], "default") is None  # within the bound
    wrong_imaginary = torch.complex(expected.real, torch.full((3,), 7.0))
    assert compare_outputs([expected], [wrong_imaginary], "default") is not None
    assert compare_outputs([expected], [expected.real.to(torch.complex64)], "kernelbench") is not None
    monkeypatch.setattr(reference, "COMPARE_CHUNK_ELEMENTS", 2)
    found = compare_outputs([expected.to(torch.complex128)],
                            [wrong_imaginary.to(torch.complex128)], "default", [10.0])
    assert found is not None and found.message.startswith("output mismatch: 3/3 elements outside"), found


def test_the_bound_widens_by_one_roundoff_of_the_summed_magnitudes_and_never_past_kernelbench():
    import torch

    from verifier.reference import compare_outputs, reassociation_scales

    expected = [torch.tensor(-431.6329), torch.tensor([2.0, 3.0])]
    scales = [2.5e6, 10.0]  # a sum of 3 M normal values (its terms add up to 2.5 M); an elementwise output
    assert compare_outputs(expected, [torch.tensor(-431.70), expected[1]], "default") is not None
    assert compare_outputs(expected, [torch.tensor(-431.70), expected[1]], "default", scales) is None  # 0.07 < 0.3
    off = compare_outputs(expected, [torch.tensor(-432.2), expected[1]], "default", scales)  # 0.57: a lost term
    assert off is not None and "for summation order" in off.message
    assert compare_outputs(expected, [expected[0], torch.tensor([2.0, 3.001])], "default", scales) is not None
    # a huge scale widens to KernelBench's bound (1e-2 + 1e-2 |x|) and no further
    assert compare_outputs([torch.tensor(5.0)], [torch.tensor(5.05)], "default", [1e9]) is None
    assert compare_outputs([torch.tensor(5.0)], [torch.tensor(5.07)], "default", [1e9]) is not None
    assert compare_outputs([torch.tensor(5.0)], [torch.tensor(5.05)], "default", [None]) is not None

    class Reduce(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.tensor([-2.0, 1.0]))

        def forward(self, x):
            return (x * self.w).sum(), torch.exp(x) * float("inf")

    x = torch.tensor([[1.0, -3.0], [-1.0, 2.0]])
    # |w| . |x| summed: 2 + 3 + 2 + 2 = 9; an output that is not finite on magnitudes gets no widening
    assert reassociation_scales(Reduce(), [x], list(Reduce()(x))) == [9.0, None]


def test_an_honest_sum_in_another_order_passes(verifier_cache):
    """On the H200 a policy's sums of 1-3 M normal values failed trials by 2-7 x 10^-4 relative (rel to a result
    near zero, from terms adding up to millions): one float accumulator in sequence differs from torch's
    pairwise sum by up to ~0.1 on 4 M values. It passes; an accumulator off by a few units does not. (The bound
    is 0.4 for summation order plus 1e-4 of the result, ~±2,000: an offset of 1 passed the trials whose sum the
    home's secret seeds drew beyond ~5,000 — 1.5 % of draws — so the test's own offset is 4, beyond any draw.)"""
    cfg = load_config(None, ["verifier.use_cache=false", "verifier.trials=3", "verifier.timing_runs=2",
                             "verifier.run_timeout_s=20"]).verifier
    full_sum = Problem(id=Problem.make_id(FULL_SUM), source="test", reference=FULL_SUM, name="full_sum")
    honest = SEQUENTIAL_SUM.replace("OFFSET ", "")
    off = SEQUENTIAL_SUM.replace("OFFSET ", "4.0f + ")
    with Judge(cfg, verifier_cache) as judge:
        verdicts = {name: judge.verify(full_sum, Candidate(id=Candidate.make_id(full_sum.id, src, "cpu"),
                                                            problem_id=full_sum.id, source=src))
                    for name, src in [("honest", honest), ("off", off)]}
    assert verdicts["honest"].category == V.passed, verdicts["honest"].detail
    assert verdicts["off"].category == V.wrong_output and "for summation order" in verdicts["off"].detail


def test_activity_names_each_threads_judgement_and_what_it_does_now():
    """A thread's outermost `doing` names its judgement, the innermost what it does now; a `waiting_for` is
    waiting only until what it waits for is entered; a thread that left its judgement is gone from the view."""
    import threading

    from verifier.activity import describe, doing, in_flight, waiting_for

    lock = threading.Lock()
    lock.acquire()
    inside, leave = threading.Event(), threading.Event()

    def judgement() -> None:
        with doing("level1/4_Matrix_vector"):
            with waiting_for("memory (9000 MB)", lock):
                with doing("running the reference's trials"):
                    inside.set()
                    leave.wait(10)

    worker = threading.Thread(target=judgement)
    worker.start()
    try:
        deadline = time.monotonic() + 5
        while not in_flight() and time.monotonic() < deadline:
            time.sleep(0.01)
        [flight] = in_flight()
        assert (flight.judgement, flight.now, flight.waiting) == ("level1/4_Matrix_vector", "waiting for memory (9000 MB)", True)
        assert describe([flight]).startswith("1 in flight, 1 waiting: level1/4_Matrix_vector ")
        lock.release()
        assert inside.wait(5)
        [flight] = in_flight()
        assert (flight.now, flight.waiting) == ("running the reference's trials", False)
        assert flight.judgement_s >= flight.now_s
    finally:
        leave.set()
        worker.join(10)
    assert in_flight() == []
    assert describe([]) == "no judgement in flight"


def test_a_judgement_waiting_for_the_device_says_so_in_the_pools_activity(verifier_cache):
    """The heartbeat's view of a real judgement: held back by a timing on its device (the test holds it), the
    judgement's thread reads "waiting for the device" under its problem's name, in the pool's activity line and
    in the stage's heartbeat log line; released, it passes, and nothing is left in flight."""
    import logging

    from verifier.activity import in_flight
    from verifier.judge import Devices

    cfg = load_config(None, ["verifier.run_timeout_s=10", "verifier.use_cache=false", "verifier.trials=2",
                             "verifier.spare_sandboxes=0", "verifier.workers=1"]).verifier
    devices = Devices([0], exclusive_timing=True)
    verdicts, beats = [], []
    handler = logging.Handler(logging.INFO)
    handler.emit = lambda record: beats.append(record.getMessage())  # (Prefect's logging setup drops caplog's)
    logger = logging.getLogger("kerneldojo")
    logger.addHandler(handler)
    level, logger.level = logger.level, logging.INFO
    try:
        _wait_for_the_device_under_a_heartbeat(cfg, verifier_cache, devices, verdicts)
    finally:
        logger.removeHandler(handler)
        logger.level = level
    assert [v.category for v in verdicts] == [V.passed], [v.detail for v in verdicts]
    beats = [b for b in beats if b.startswith("verify test: 0 of 1 done in ")]
    assert beats and "waiting for the device" in beats[0], beats
    assert in_flight() == []


def _wait_for_the_device_under_a_heartbeat(cfg, verifier_cache, devices, verdicts) -> None:
    import threading

    from tasks.common import heartbeat
    from verifier.activity import in_flight

    with LocalVerifierPool(cfg, verifier_cache) as pool:
        with devices.timing(0), heartbeat(pool, "verify test", 1, every_s=0.2):
            worker = threading.Thread(target=lambda: verdicts.append(
                pool.judge.verify(problem(), candidate("correct"), devices)))
            worker.start()
            deadline = time.monotonic() + 30
            while not any(f.waiting for f in in_flight()) and time.monotonic() < deadline:
                time.sleep(0.05)
            [flight] = in_flight()
            assert flight.judgement.startswith("sigmoid_scale (") and flight.now.startswith("waiting for the device")
            line = pool.activity()
            assert "1 in flight, 1 waiting: sigmoid_scale" in line, line
            assert "memory promised (sandboxes, the judge's copies)" in line and "judge resident" in line, line
            resident = float(line.split("judge resident ")[1].split(" GB")[0])
            assert 0.1 < resident < 24, line  # this process: torch, the pool, its kept tensors
            time.sleep(0.5)  # the heartbeat speaks at least once meanwhile
        worker.join(120)


def test_a_judgement_waiting_for_its_memory_share_says_how_much():
    """The memory budget labels its own wait: a judgement whose share does not fit beside another's reads
    "waiting for memory (N MB)" until the other releases, then holds its share."""
    import threading

    from verifier.activity import doing, in_flight
    from verifier.isolation import MemoryBudget

    budget = MemoryBudget(1000)
    first = budget.reserve(800)
    reserved = threading.Event()

    def judgement() -> None:
        with doing("level2/1_Conv2D"), budget.reserve(400):
            reserved.set()

    worker = threading.Thread(target=judgement)
    worker.start()
    try:
        deadline = time.monotonic() + 5
        while not any(f.waiting for f in in_flight()) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [(f.judgement, f.now) for f in in_flight()] == [("level2/1_Conv2D", "waiting for memory (400 MB)")]
        assert not reserved.is_set()
    finally:
        first.release()
        worker.join(10)
    assert reserved.is_set() and in_flight() == []


def test_a_candidate_that_cannot_build_is_judged_without_running_its_reference(verifier_cache):
    """verifier.build_first. At full size a KernelBench reference's trials take 10-60 s and tens of GB (a
    judgement waits for memory admitting them), and most of a weak policy's candidates fail before their first
    trial (178 of 190 of the miniature's SFT policy's on levels 1-2, on an H100: 149 compile errors, 29 errors in
    ModelNew's __init__): their verdict comes from a first look at the candidate alone. Here the problem's
    reference raises in its forward, so a judgement that ran a trial would end in ReferenceError: the candidate
    that fails to compile gets its compile error, the one whose __init__ raises its runtime error, and no trial
    of the reference ran; without build_first the same candidate waits for that reference and fails on it. A
    candidate that is ready is judged in full (its first look in its phases); once its problem's reference is
    kept at hand, no first look."""
    from verifier.reference import ReferenceError

    broken_source = REFERENCE.replace("return torch.sigmoid(x) * self.w", "raise RuntimeError('reference broken')")
    broken = Problem(id=Problem.make_id(broken_source), source="test", reference=broken_source, name="broken")

    def for_broken(source: str) -> Candidate:
        return Candidate(id=Candidate.make_id(broken.id, source, "cpu"), problem_id=broken.id, source=source)

    cpp_error = RED_TEAM["cpp_compile_error"][0]
    cfg = load_config(None, ["verifier.run_timeout_s=10", "verifier.use_cache=false", "verifier.trials=2",
                             "verifier.memory_limit_mb=4096"]).verifier
    judge = Judge(cfg, verifier_cache)
    try:
        v = judge.verify(broken, for_broken(cpp_error))
        assert v.category == V.compile_error and "undeclared_name" in v.detail, v.detail
        assert "reference" not in v.phases and not judge.reference_ran(broken.id), v.phases
        bad_init = good().replace("super().__init__()", "super().__init__()\n        self.size = len(None)")
        v = judge.verify(broken, for_broken(bad_init))
        assert v.category == V.runtime_error and "constructing ModelNew" in v.detail and "TypeError" in v.detail
        assert "reference" not in v.phases and not judge.reference_ran(broken.id), v.phases
        with pytest.raises(ReferenceError, match="reference broken"):  # one that loads needs the reference
            judge.verify(broken, for_broken(good()))
        first, again = (judge.verify(problem(), candidate("correct")) for _ in range(2))
        assert first.category == again.category == V.passed, (first.detail, again.detail)
        assert "load_first" in first.phases and "reference" in first.phases, first.phases
        assert "load_first" not in again.phases, again.phases  # its reference kept: nothing to spare it
    finally:
        judge.close()
    whole = Judge(cfg.model_copy(update={"build_first": False}), verifier_cache)
    try:
        with pytest.raises(ReferenceError, match="reference broken"):
            whole.verify(broken, for_broken(cpp_error))
    finally:
        whole.close()


def test_a_candidate_that_hangs_while_constructed_alone_pays_its_limit_once(verifier_cache):
    """verifier.build_first: a ModelNew whose __init__ never returns times out in its first look. A timeout is
    a failure a neighbour can cause (the CPUs or the GPU shared), so it went on to the whole judgement — its
    reference's trials (10-60 s at full size), then the same hang and the same limit again. Judged with no other
    judgement beside it, the look's timeout is its own verdict: here the problem's reference raises in its
    forward, so a judgement that went on would end in ReferenceError instead; the verdict comes within about one
    limit, and no trial of the reference ran."""
    broken_source = REFERENCE.replace("return torch.sigmoid(x) * self.w", "raise RuntimeError('reference broken')")
    broken = Problem(id=Problem.make_id(broken_source), source="test", reference=broken_source, name="broken")
    hanging = good().replace("super().__init__()", "super().__init__()\n        while True:\n            pass")
    assert hanging.count("while True:") == 1
    entrant = Candidate(id=Candidate.make_id(broken.id, hanging, "cpu"), problem_id=broken.id, source=hanging)
    cfg = load_config(None, ["verifier.run_timeout_s=3", "verifier.use_cache=false", "verifier.trials=2",
                             "verifier.memory_limit_mb=4096"]).verifier
    with Judge(cfg, verifier_cache) as judge:
        started = time.monotonic()
        v = judge.verify(broken, entrant)
        took = time.monotonic() - started
        assert v.category == V.timeout and "constructing ModelNew" in v.detail, v.detail
        assert "reference" not in v.phases and not judge.reference_ran(broken.id), v.phases
        assert took < 2 * cfg.run_timeout_s + 5, took
