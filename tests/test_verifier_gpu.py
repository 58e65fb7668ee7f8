"""The cuda backend on a real GPU: KernelBench-format CUDA candidates, good, faulty and cheating.

Marked `gpu`: skipped where no CUDA device is visible (CI); run on a GPU box, results in docs/.
"""

import collections

import pytest

from schemas import load_config
from schemas.records import Candidate, Problem
from schemas.records import VerdictCategory as V
from tests.test_fastbuild import POLICY_MISTAKES
from verifier.examples import example_candidate, example_problem
from verifier.judge import Judge
from verifier.pool import LocalVerifierPool

pytestmark = pytest.mark.gpu

KERNEL = "v * 1.5f + 0.25f"  # the scale_shift problem


def cuda_candidate(body: str = KERNEL, forward: str | None = None, extra: str = "", replace=()) -> Candidate:
    problem = example_problem("scale_shift", "cuda")
    cand = example_candidate(problem, "cuda", body)
    source = cand.source
    if forward:
        source = source.replace("return scale_shift_ext.scale_shift_cuda(x.contiguous())", forward)
    for old, new in replace:
        assert old in source, old
        source = source.replace(old, new)
    source = extra + source
    return Candidate(id=Candidate.make_id(problem.id, source, "cuda"), problem_id=problem.id, source=source,
                     backend="cuda")


CUDA_RED_TEAM = {
    "correct": (cuda_candidate(), V.passed, None),
    "wrong_output": (cuda_candidate("v * 1.5f"), V.wrong_output, None),
    "compile_error": (cuda_candidate("v * undefined_scale"), V.compile_error, None),
    "unwritten_memory": (cuda_candidate(replace=[("if (idx < size) {", "if (idx < size && idx % 7) {")]),
                         V.wrong_output, None),
    "illegal_address": (cuda_candidate(replace=[("out[idx] = v * 1.5f + 0.25f;",
                                                 "out[idx + (1 << 30)] = v * 1.5f + 0.25f;")]),
                        V.runtime_error, None),
    # its output right, its input zeroed behind it: the sandbox's checksum of its inputs after the forward
    "writes_its_input": (cuda_candidate(replace=[("out[idx] = v * 1.5f + 0.25f;",
                                                  "out[idx] = v * 1.5f + 0.25f; ((float*)x)[idx] = 0.f;")]),
                         V.illegal, "input-mutation"),
    "kernel_never_ends": (cuda_candidate(replace=[("float v = x[idx];",
                                                   "float v = x[idx]; while (clock64() >= 0) { }")]),
                          V.timeout, None),
    "torch_compute": (cuda_candidate(forward="return x * 1.5 + 0.25"), V.illegal, "torch-compute"),
    "cublas": (cuda_candidate(replace=[("#include <cuda_runtime.h>", "#include <cuda_runtime.h>\n#include <cublas_v2.h>")]),
               V.illegal, "library-math"),
    "side_stream": (cuda_candidate(replace=[("auto out = torch::empty_like(x);",
                                             "auto out = torch::empty_like(x); cudaStream_t s; cudaStreamCreate(&s);")]),
                    V.illegal, "side-stream"),
    "aten_in_host_code": (cuda_candidate(replace=[("auto out = torch::empty_like(x);",
                                                   "auto out = torch::relu(x);")]), V.illegal, "torch-compute"),
    "no_own_kernel": (cuda_candidate(forward="return x.view(x.shape)"), V.illegal, "no-own-kernel"),
    # timing: a result remembered by the input's address once the trials are over, and work skipped then
    "memo_after_trials": (cuda_candidate(replace=[
        ("auto size = x.numel();", "static int calls = 0; static std::map<const void*, torch::Tensor> memo;\n"
         "    if (++calls > 5 && memo.count(x.data_ptr<float>())) return memo[x.data_ptr<float>()];\n"
         "    auto size = x.numel();"),
        ("    return out;\n}", "    memo[x.data_ptr<float>()] = out;\n    return out;\n}")]), V.illegal, "timing-output"),
    "skip_work_when_timed": (cuda_candidate(replace=[
        ("auto size = x.numel();", "static int calls = 0; if (++calls > 5) return torch::empty_like(x);\n"
         "    auto size = x.numel();")]), V.illegal, "timing-output"),
    # ATen's work once the trials are over, told apart by a count (the op watch sees the warm-up and timed calls):
    # from Python (a tensor's arithmetic: no static rule names it) and from the host code (torch's own build)
    "aten_when_timed": (cuda_candidate(extra="CALLS = []\n", forward="CALLS.append(1)\n        if len(CALLS) > 5:\n"
                                       "            return x * 1.5 + 0.25\n"
                                       "        return scale_shift_ext.scale_shift_cuda(x.contiguous())"),
                        V.illegal, "torch-compute"),
    "aten_when_timed_in_host_code": (cuda_candidate(replace=[
        ("auto size = x.numel();", "static int calls = 0; if (++calls > 5) return x * 1.5 + 0.25;\n"
         "    auto size = x.numel();")]), V.illegal, "torch-compute"),
    "hang_when_timed": (cuda_candidate(replace=[  # the grid stays valid: only the kernel's argument says hang
        ("auto size = x.numel();", "static int calls = 0; ++calls; auto size = x.numel();"),
        ("out.data_ptr<float>(), size);", "out.data_ptr<float>(), calls > 5 ? -1 : (int)size);"),
        ("if (idx < size) {", "while (size < 0 && clock64() >= 0) { } if (idx < size) {")]), V.timeout, None),
    # correct, but one thread spins 1.25 s of wall time a launch (the global timer, not SM cycles, whose rate
    # follows the clock): its trials fit the 2 s floor, and its timing calls (at least 12) cannot fit any budget
    # (at most the 10 s run timeout + the floor, whatever the eager window measured on a shared machine); passed
    # untimed, as the policy's one-thread sums should have been
    "too_slow_to_time": (cuda_candidate(replace=[("float v = x[idx];", "float v = x[idx]; if (idx == 0) { "
                                                  "unsigned long long t0, t; "
                                                  'asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0)); do { '
                                                  'asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); '
                                                  "} while (t - t0 < 1250000000ULL); }")]),
                         V.passed, None),
    "host_check_fails": (cuda_candidate(replace=[("auto out = torch::empty_like(x);",
                                                  "TORCH_CHECK(x.dim() == 7, \"kernel wants 7 dims\"); "
                                                  "auto out = torch::empty_like(x);")]), V.runtime_error, None),
}


@pytest.fixture(scope="module")
def verdicts(verifier_cache):
    cfg = load_config(None, ["verifier.backend=cuda", "verifier.run_timeout_s=10", "verifier.use_cache=false"]).verifier
    problem = example_problem("scale_shift", "cuda")
    with LocalVerifierPool(cfg, verifier_cache) as pool:
        by_id = {v.candidate_id: v for v in pool.verify_many([(problem, c) for c, _, _ in CUDA_RED_TEAM.values()])}
    return {name: by_id[c.id] for name, (c, _, _) in CUDA_RED_TEAM.items()}


@pytest.mark.parametrize("name", sorted(CUDA_RED_TEAM))
def test_cuda_category_and_rule(verdicts, name):
    _, category, rule = CUDA_RED_TEAM[name]
    v = verdicts[name]
    assert v.category == category, f"{name}: {v.category} {v.detail}"
    assert v.rule == rule


def test_cuda_pass_is_timed_against_eager_and_torch_compile(verdicts):
    v = verdicts["correct"]
    assert v.device.startswith("NVIDIA") and v.pass_fraction == 1.0
    assert v.speedup_vs_eager and v.speedup_vs_eager > 0
    assert v.speedup_vs_compile and v.speedup_vs_compile > 0


def test_cuda_torch_compile_baseline_is_timed_every_time(verifier_cache):
    """The reference under torch.compile (compile workers forked beside it) copies each timed call's inputs
    unpinned: pinned, about half of its timings failed on the H200 ("OS call failed") and the problem had no
    torch.compile baseline. Five fresh judges, five baselines."""
    cfg = load_config(None, ["verifier.backend=cuda", "verifier.use_cache=false", "verifier.trials=2",
                             "verifier.spare_sandboxes=0"]).verifier
    problem = example_problem("scale_shift", "cuda")
    for _ in range(5):
        with Judge(cfg, verifier_cache) as judge:
            compiled = judge.baseline(problem, 0, compiled=True)
            assert compiled is not None and compiled.seconds > 0


def test_cuda_references_draw_their_inputs_on_the_device(verifier_cache):
    """A full-size KernelBench input drawn by torch's serial CPU generator took 11-18 s a trial on the H200's host:
    the reference's get_inputs runs with the device as torch's default, for its trials and its timing sets, and
    every sandbox of the machine draws the same values from the judge's seed (a trial made again matches)."""
    source = ("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
              "    def forward(self, x, made_on_device):\n        return x * made_on_device\n\n\n"
              "def get_inputs():\n    x = torch.rand(1 << 20)\n"
              "    return [x, torch.full((1,), float(x.is_cuda))]\n\n\ndef get_init_inputs():\n    return []\n")
    problem = Problem(id=Problem.make_id(source), source="test", reference=source, name="drawn_where")
    cfg = load_config(None, ["verifier.backend=cuda", "verifier.use_cache=false", "verifier.trials=2",
                             "verifier.spare_sandboxes=0"]).verifier
    with Judge(cfg, verifier_cache) as judge:
        reference = judge.reference(problem, 0)
        trials = [reference.stash.get(i) for i in range(2)]
        eager = judge.baseline(problem, 0)
        assert eager is not None and len(reference.sets) > 0
        timing_set = reference.sets.get(0)
        again = judge.reference(problem, 0)  # the same reference: its trials as the judge keeps them
        assert again is reference
    for x, flag, expected in trials:
        assert float(flag) == 1.0 and expected.cpu().equal(x.cpu())
    assert float(timing_set[1]) == 1.0
    assert not trials[0][0].cpu().equal(trials[1][0].cpu())  # each trial its own seed
    with Judge(cfg, verifier_cache) as fresh:  # another judge, other sandboxes: the same draws
        assert fresh.reference(problem, 0).stash.get(0)[0].cpu().equal(trials[0][0].cpu())
        # a get_inputs with its own CPU generator cannot draw on the device: it draws on the host, as it did
        own = source.replace("x = torch.rand(1 << 20)", "x = torch.rand(1 << 20, generator=torch.Generator())")
        on_host = Problem(id=Problem.make_id(own), source="test", reference=own, name="own_generator")
        x, flag, expected = fresh.reference(on_host, 0).stash.get(0)
        assert float(flag) == 0.0 and not expected.cpu().any()


def test_cuda_kernel_too_slow_to_time_passes_untimed(verdicts):
    v = verdicts["too_slow_to_time"]
    assert v.timing.get("not_timed") == 1.0 and 0 < v.speedup_vs_eager < 0.02, v.detail


def test_cuda_host_check_reaches_the_feedback(verdicts):
    assert "kernel wants 7 dims" in verdicts["host_check_fails"].detail


def test_cuda_compile_error_points_at_the_candidates_python_line(verdicts):
    detail = verdicts["compile_error"].detail
    assert "undefined_scale" in detail and "candidate.py:" in detail


def test_fast_path_builds_in_seconds_and_matches_torch_load_inline(verifier_cache, tmp_path):
    """The kd_shim path (nvcc without torch headers) and torch's load_inline give the same verdict."""
    problem = example_problem("swish", "cuda")
    cand = example_candidate(problem, "cuda")
    with Judge(load_config(None, ["verifier.backend=cuda", "verifier.use_cache=false"]).verifier,
               tmp_path / "fast") as fast:
        fast.verify(problem, cand)  # builds the precompiled prelude once
    with Judge(fast.config, tmp_path / "fast") as again:
        v_fast = again.verify(problem, example_candidate(problem, "cuda", "(v / (1.f + expf(-v))) + 0.f"))
    with Judge(load_config(None, ["verifier.backend=cuda", "verifier.use_cache=false",
                                  "verifier.fast_build=false"]).verifier, tmp_path / "slow") as slow:
        v_slow = slow.verify(problem, cand)
    assert v_fast.category == v_slow.category == V.passed, (v_fast.detail, v_slow.detail)
    assert v_fast.compile_seconds < 10 < v_slow.compile_seconds


def test_the_policys_common_compile_errors_get_the_same_verdict_on_both_paths(tmp_path):
    """What tests/test_fastbuild.py now ends on the fast path (an unwritten helper, a tensor for a vector, two
    tensors for one, a declared function never defined) is a compile error through torch's load_inline too."""
    problem = example_problem("scale_shift", "cuda")
    candidates = []
    for name, (cpp, cuda, _) in sorted(POLICY_MISTAKES.items()):
        source = (f"import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n"
                  f"ext = load_inline(name={name!r}, cpp_sources={cpp!r}, cuda_sources={cuda!r}, functions=['forward'],"
                  f" extra_cuda_cflags=['--extended-lambda'])\n"
                  f"class ModelNew(nn.Module):\n    def forward(self, x):\n        return ext.forward(x)\n")
        candidates.append(Candidate(id=Candidate.make_id(problem.id, source, "cuda"), problem_id=problem.id,
                                    source=source, backend="cuda"))
    verdicts = {}
    for fast in ("true", "false"):
        cfg = load_config(None, ["verifier.backend=cuda", "verifier.use_cache=false",
                                 f"verifier.fast_build={fast}"]).verifier
        with LocalVerifierPool(cfg, tmp_path / fast) as pool:
            # verify_many yields lazily, in completion order: drain it while the pool is open, match by id
            verdicts[fast] = {v.candidate_id: v for v in pool.verify_many([(problem, c) for c in candidates])}
    assert len(verdicts["true"]) == len(verdicts["false"]) == len(POLICY_MISTAKES)
    for candidate in candidates:
        fast_verdict, torch_verdict = verdicts["true"][candidate.id], verdicts["false"][candidate.id]
        assert fast_verdict.category == torch_verdict.category == V.compile_error, (fast_verdict.detail,
                                                                                     torch_verdict.detail)
        # ended on the fast path: no fallback to torch's build (its time is no evidence on a loaded machine)
        assert fast_verdict.build_fallbacks == [], (fast_verdict.build_fallbacks, fast_verdict.detail)


def test_unsupported_host_api_falls_back_and_still_passes(verifier_cache):
    """Host code beyond the shim (`c10::irange`) is rebuilt with torch's headers: slower, same verdict."""
    cand = cuda_candidate(replace=[
        ("auto out = torch::empty_like(x);",
         "auto out = torch::empty_like(x);\n    for (int64_t d : c10::irange(x.dim())) TORCH_CHECK(x.size(d) > 0);")])
    cfg = load_config(None, ["verifier.backend=cuda", "verifier.use_cache=false"]).verifier
    with Judge(cfg, verifier_cache) as judge:
        v = judge.verify(example_problem("scale_shift", "cuda"), cand)
    assert v.category == V.passed, v.detail


def test_cuda_template_teacher_solutions_pass_on_the_gpu(verifier_cache):
    """The template teacher's cuda kernels (elementwise, reductions, softmax, linear, matmul, views) pass."""
    from schemas.records import Problem
    from tests.kernels import LINEAR_AND_MATMUL, TRANSPOSED
    from training.prompts import extract_code
    from training.teacher import TemplateTeacher

    teacher = TemplateTeacher()
    problems = [Problem(id=Problem.make_id(r), source="builtin", reference=r)  # our own: analysed in-process
                for r in (LINEAR_AND_MATMUL, TRANSPOSED, TRANSPOSED.replace("torch.relu(x.t())",
                                                                            "torch.sum(torch.sigmoid(x) * x, dim=1)"))]
    pairs = []
    for p in problems:
        code = extract_code(teacher.solve(p, "cuda").completion)
        pairs.append((p, Candidate(id=Candidate.make_id(p.id, code, "cuda"), problem_id=p.id, source=code,
                                   backend="cuda")))
    cfg = load_config(None, ["verifier.backend=cuda", "verifier.use_cache=false"]).verifier
    with LocalVerifierPool(cfg, verifier_cache) as pool:
        verdicts = list(pool.verify_many(pairs))
    assert all(v.passed for v in verdicts), [v.detail for v in verdicts]


def test_cuda_template_teacher_reduces_to_few_outputs_at_the_devices_pace(verifier_cache):
    """Reductions of 16 M elements to one or a few thousand outputs (tests.kernels.reductions): the template once
    folded each output in one thread (a full sum: one thread over 16 M elements, far slower than eager; the
    H200 miniature's timeouts, copied by the policy). Blocks share them out now: correct, and timed at a pace
    of the same order as eager's."""
    from schemas.records import Problem
    from tests.kernels import reductions
    from training.prompts import extract_code
    from training.teacher import TemplateTeacher

    reference = reductions(4096, 4096)
    problem = Problem(id=Problem.make_id(reference), source="builtin", reference=reference)
    code = extract_code(TemplateTeacher().solve(problem, "cuda").completion)
    candidate = Candidate(id=Candidate.make_id(problem.id, code, "cuda"), problem_id=problem.id, source=code,
                          backend="cuda")
    cfg = load_config(None, ["verifier.backend=cuda", "verifier.use_cache=false"]).verifier
    with LocalVerifierPool(cfg, verifier_cache) as pool:
        verdict = pool.verify(problem, candidate)
    assert verdict.passed and verdict.pass_fraction == 1.0, verdict.detail
    # a string, not the dict: pytest cuts a long repr short, and the H200's failure needs every figure read
    assert "not_timed" not in verdict.timing and verdict.speedup_vs_eager > 0.1, \
        f"{verdict.detail}; timing {sorted(verdict.timing.items())}; phases {sorted(verdict.phases.items())}"


# -- the sandbox on the GPU: hostile cuda candidates, then a check of the machine ----------------------------
SECRET = "KD-GPU-SECRET-1187"


def cuda_attacks(secret_file: str, cache_dir: str) -> dict[str, tuple[Candidate, V, str | None, bool]]:
    """name -> (candidate, expected category, rule, static rules on)."""
    host = lambda code: [("auto out = torch::empty_like(x);", code + "\n    auto out = torch::empty_like(x);")]
    read = ('std::string got; if (FILE* f = fopen("PATH", "rb")) { char buf[128] = {0}; got.assign(buf, fread(buf, 1, 127, f)); '
            'fclose(f); } TORCH_CHECK(got.empty(), "ATTACK SUCCEEDED: ", got); TORCH_CHECK(false, "attack refused");')
    return {
        "read_host_file": (cuda_candidate(extra="", replace=host(read.replace("PATH", secret_file))), V.runtime_error, None, True),
        "read_cache_secret": (cuda_candidate(replace=host(read.replace("PATH", f"{cache_dir}/secret"))), V.runtime_error,
                              None, True),
        "spawn_through_pointer": (cuda_candidate(replace=host(
            'int (*run)(const char*) = std::system; TORCH_CHECK(run("true") != 0, "ATTACK SUCCEEDED: spawned"); '
            'TORCH_CHECK(false, "attack refused");')), V.illegal, "system-api", True),  # system among its imports
        "inet_socket_through_pointer": (cuda_candidate(extra="", replace=[
            ("#include <cuda_runtime.h>", '#include <cuda_runtime.h>\nextern "C" int socket/**/(int, int, int);')] + host(
            'int (*make)(int, int, int) = socket; TORCH_CHECK(make(2, 1, 0) < 0, "ATTACK SUCCEEDED: socket"); '
            'TORCH_CHECK(false, "attack refused");')), V.runtime_error, None, True),
        "x86_asm_in_host_code": (cuda_candidate(replace=host('unsigned lo, hi; asm volatile("rdtsc" : "=a"(lo), "=d"(hi));')),
                                 V.illegal, "inline-asm", True),
        # the view from inside (static rules off): which device nodes, which processes
        "device_nodes_and_processes": (cuda_candidate(forward=(
            "import os\n        raise RuntimeError('VIEW ' + ' '.join(sorted(os.listdir('/dev'))) + ' PIDS ' + "
            "' '.join(p for p in os.listdir('/proc') if p.isdigit()))")), V.runtime_error, None, False),
    }


# Module code that takes all the GPU memory it can get and keeps it while judged, less 64 MB for its own trials
# (scale_shift: 16 MB in, 16 MB out): nothing limits one process's device memory (97 % of what was free left the
# H200 4 GB, enough for a reference beside it: the attack never happened).
HOLD_THE_GPU = """import torch
_held = []
while True:
    try:
        _held.append(torch.empty(32 << 20, dtype=torch.uint8, device="cuda"))
    except torch.OutOfMemoryError:
        break
del _held[-2:]
torch.cuda.empty_cache()
"""


def test_cuda_a_candidate_that_holds_the_gpus_memory_fails_no_neighbour(verifier_cache):
    """A correct kernel whose module takes the GPU's memory and sleeps on it: an honest candidate judged meanwhile
    cannot start its CUDA context or move its inputs, and that runtime error would be its verdict (in an RL group,
    the hog's advantage rises with every sibling it fails). Failing beside another judgement, it is judged again
    alone, and passes; the hog's own judgement ends in a verdict, not an exception in the judge."""
    import threading
    import time

    import torch

    cfg = load_config(None, ["verifier.backend=cuda", "verifier.run_timeout_s=30", "verifier.use_cache=false",
                             "verifier.trials=2", "verifier.spare_sandboxes=0"]).verifier
    hog = cuda_candidate(extra=HOLD_THE_GPU + "import time\ntime.sleep(8)\n")
    judge = Judge(cfg, verifier_cache)
    problem = example_problem("scale_shift", "cuda")
    try:
        judge.baseline(problem, 0)  # the judge's own context, the reference and its baseline before the hog
        verdicts = {}
        hogging = threading.Thread(target=lambda: verdicts.update(hog=judge.verify(problem, hog, static_rules=False)))
        hogging.start()
        deadline = time.monotonic() + 60
        while torch.cuda.mem_get_info()[0] > 1 << 30 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert torch.cuda.mem_get_info()[0] < 1 << 30, "the hog did not take the GPU's memory"
        honest = judge.verify(problem, cuda_candidate())
        hogging.join(120)
        assert honest.category == V.passed and "wait_alone" in honest.phases, (honest.detail, honest.phases)
        assert "hog" in verdicts, "the hog's judgement raised in the judge"
    finally:
        judge.close()


def test_cuda_judgements_are_admitted_by_their_share_of_the_gpus_memory(verifier_cache):
    """verifier.gpu_memory_admission: two judgements whose GPU shares do not fit the device's promise together run
    one after the other, both pass; with gpu_memory_mb unset the promise is what the device has free."""
    import torch

    problem = example_problem("scale_shift", "cuda")
    large = problem.model_copy(update={"measures": {**problem.measures, "input_bytes": 500 << 20,
                                                    "output_bytes": 500 << 20}})
    share = 2048 + 3 * 1000  # contexts, and three times a trial's 1000 MB
    cfg = load_config(None, ["verifier.backend=cuda", "verifier.run_timeout_s=30", "verifier.use_cache=false",
                             "verifier.trials=2", f"verifier.gpu_memory_mb={share + share // 2}",
                             "verifier.sandbox_memory_mb=60001"]).verifier  # a budget of its own in this process
    candidates = [cuda_candidate(), cuda_candidate(extra="# the same kernel, another candidate\n")]
    with LocalVerifierPool(cfg, verifier_cache) as pool:
        verdicts = list(pool.verify_many([(large, c) for c in candidates]))
        budget = pool.judge.sandboxes.memory_budget
        assert [v.category for v in verdicts] == [V.passed, V.passed], [v.detail for v in verdicts]
        assert budget.gpu_capacity_mb[0] == share + share // 2 and budget.gpu_peak_mb[0] == share
        assert "GPU 0 memory promised" in pool.activity()
    measured = load_config(None, ["verifier.backend=cuda", "verifier.sandbox_memory_mb=60002"]).verifier
    with Judge(measured, verifier_cache) as judge:
        assert judge.judgement_gpu_mb(problem) == 2048
        assert 0 < judge.sandboxes.memory_budget.gpu_capacity_mb[0] << 20 <= torch.cuda.mem_get_info(0)[1]


def test_the_judge_compares_a_large_output_without_holding_it_on_the_gpu(verifier_cache):
    """A 2 GiB output is compared a slice at a time (compare_outputs), its expected values kept on the host: the
    judge's own GPU memory stays below one output's size. Whole, a comparison took ~10x the output there (float64
    copies, the difference, the bound), and the judge's allocator kept it from the sandboxes beside it."""
    import torch

    small = example_problem("scale_shift", "cuda")
    source = small.reference.replace("4096, 1024", "32768, 16384")  # 2 GiB in, 2 GiB out
    assert source != small.reference
    large = small.model_copy(update={"id": Problem.make_id(source), "reference": source})
    candidate = example_candidate(large, "cuda")
    cfg = load_config(None, ["verifier.backend=cuda", "verifier.run_timeout_s=120", "verifier.use_cache=false",
                             "verifier.trials=2", "verifier.sandbox_memory_mb=60003"]).verifier
    with LocalVerifierPool(cfg, verifier_cache) as pool:
        torch.cuda.reset_peak_memory_stats(0)
        [verdict] = list(pool.verify_many([(large, candidate)]))
        assert verdict.category == V.passed, verdict.detail
        assert torch.cuda.max_memory_allocated(0) < 1 << 31, torch.cuda.max_memory_allocated(0)
        assert "the judge's GPU memory 0:" in pool.activity()


MATMUL_REFERENCE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x @ x


def get_inputs():
    return [torch.randn(8192, 8192)]


def get_init_inputs():
    return []
"""

# A correct, naive matmul whose native thread, started at its first forward, launches kernels of ~5 ms that fill the
# GPU whenever the candidate has not been called for 50 ms: while the judge times others (its eager baseline), never
# while it is called itself. (Kernels that long slow eager whether the GPU time-slices contexts or runs their kernels
# in turn.) Its first version spun from its second call to its third and did not slow eager on the H200
# (2026-12-04: 3.10 ms beside it, 3.15-3.20 ms alone); this one does not depend on how often the judge calls it.
SPINNING_MATMUL = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <thread>
#include <atomic>
#include <chrono>

static std::atomic<int> calls{0};
static std::atomic<long long> last_call_ns{0};
static long long now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::steady_clock::now().time_since_epoch()).count();
}
__global__ void spin_kernel(long long cycles) { long long start = clock64(); while (clock64() - start < cycles) { } }
static void spin() {
    for (;;) {
        if (now_ns() - last_call_ns.load() > 50000000LL) { spin_kernel<<<264, 1024>>>(10000000LL); cudaDeviceSynchronize(); }
        else std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

__global__ void matmul_kernel(const float* a, float* out, int n) {
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row < n && col < n) {
        float sum = 0.f;
        for (int k = 0; k < n; ++k) sum += a[row * n + k] * a[k * n + col];
        out[row * n + col] = sum;
    }
}

torch::Tensor matmul_cuda(torch::Tensor a) {
    last_call_ns.store(now_ns());
    if (SPIN && calls.fetch_add(1) == 0) std::thread(spin).detach();
    int n = a.size(0);
    auto out = torch::empty_like(a);
    matmul_kernel<<<dim3((n + 15) / 16, (n + 15) / 16), dim3(16, 16)>>>(a.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""

ext = load_inline(name="matmul_ext", cpp_sources="torch::Tensor matmul_cuda(torch::Tensor a);",
                  cuda_sources=source, functions=["matmul_cuda"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.matmul_cuda(x.contiguous())
'''


def test_cuda_a_thread_that_keeps_the_gpu_busy_beside_the_baseline_gains_nothing(verifier_cache):
    """A correct kernel whose native thread keeps the GPU busy from its last trial to its own timing, when the
    eager baseline it is measured against is timed: beside it, eager looks slower and the candidate's speedup
    larger. Its thread is refused (the first wall); with threads let, a GPU pool that times exclusively stops
    every other candidate's sandbox meanwhile (the second wall): eager is timed as if alone. The reference is
    a matmul of ~22 ms on an H200 (its time is the GPU's, not the harness's), longer than the scheduler's time
    slice between two processes: a 3 ms one mostly ran within one slice, so the spinner slowed its events by
    chance, 1.0-1.9x (benchmarks/spinner_probe.py). Eager's time is compared, not speedups (the candidate's own
    time is not what the attack moves). Control: without the stop, the attack works."""
    from verifier.judge import Devices

    problem = Problem(id=Problem.make_id(MATMUL_REFERENCE), source="builtin", reference=MATMUL_REFERENCE,
                      name="matmul_8192", op_families=["matmul"])

    def candidate(spin: bool) -> Candidate:
        source = SPINNING_MATMUL.replace("SPIN &&", "true &&" if spin else "false &&")
        return Candidate(id=Candidate.make_id(problem.id, source, "cuda"), problem_id=problem.id, source=source,
                         backend="cuda")

    base = ["verifier.backend=cuda", "verifier.run_timeout_s=30", "verifier.use_cache=false", "verifier.trials=2",
            "verifier.spare_sandboxes=0", "verifier.compare_torch_compile=false"]
    with Judge(load_config(None, base).verifier, verifier_cache) as judge:  # the first wall: it starts no thread
        refused = judge.verify(problem, candidate(True), static_rules=False)
    assert refused.category == V.runtime_error and "not permitted" in refused.detail.lower(), refused.detail

    cfg = load_config(None, [*base, "verifier.candidate_threads=true"]).verifier  # the second wall, alone

    def eager_seconds(spin: bool, exclusive: bool) -> float:
        with Judge(cfg, verifier_cache) as judge:  # each its own eager baseline, timed beside the candidate
            verdict = judge.verify(problem, candidate(spin), Devices([0], exclusive_timing=exclusive),
                                   static_rules=False)
        assert verdict.category == V.passed, (spin, exclusive, verdict.detail)
        assert (verdict.phases.get("paused", 0) > 0) == exclusive, verdict.phases
        timings[(spin, exclusive)].append(verdict.timing)
        return verdict.timing["eager_s"]

    timings = collections.defaultdict(list)
    honest = [eager_seconds(False, True) for _ in range(2)]
    beside = eager_seconds(True, False)
    stopped = [eager_seconds(True, True) for _ in range(2)]
    seen = {"honest": honest, "spinner, not stopped": beside, "spinner, stopped": stopped, "timings": dict(timings)}
    assert beside > 1.5 * max(honest), seen  # the attack is real
    assert min(stopped) < 1.25 * max(honest), seen  # and stopped


def test_cuda_attacks_that_break_the_reference_beside_them_are_their_own_failure(verifier_cache):
    """A candidate that holds the GPU's memory, so that the reference's trial made again beside it (trials too
    large to keep: KernelBench at full size) runs out of memory: before, that was a ReferenceError (the stage
    failed; then, the problem left out: a candidate could make its problem vanish, no penalty and a smaller
    denominator). Now the reference is run again alone, runs, and the candidate gets a failing verdict of its
    own; the problem still judges an honest candidate."""
    cfg = load_config(None, ["verifier.backend=cuda", "verifier.run_timeout_s=20", "verifier.use_cache=false",
                             "verifier.stored_trials_gb=1e-9", "verifier.trials=2", "verifier.spare_sandboxes=0"]
                      ).verifier
    hog = cuda_candidate(extra=HOLD_THE_GPU)
    judge = Judge(cfg, verifier_cache)
    problem = example_problem("scale_shift", "cuda")
    try:
        verdict = judge.verify(problem, hog, static_rules=False)  # no ReferenceError: the candidate's verdict
        assert verdict.category == V.runtime_error and "alone" in verdict.detail, verdict.detail
        assert judge.verify(problem, cuda_candidate()).category == V.passed
    finally:
        judge.close()


# What runs as the harness reads a forward's outputs, after the forward and out of the op watch's window: a tensor
# subclass whose __torch_function__ computes with ATen when the output is sealed (.detach()), and a list subclass whose
# second iteration does (the kernel called for show, on a slice). Both passed on the cpu backend before harness 10;
# judged with the static rules off, the sandbox's strict reading of outputs alone must hold.
SUBCLASS_OUTPUT = ("import torch\n\n\nclass Lazy(torch.Tensor):\n    @classmethod\n"
                   "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
                   "        with torch._C.DisableTorchFunctionSubclass():\n"
                   "            if func is torch.Tensor.detach and args and type(args[0]) is Lazy:\n"
                   "                return args[0].kd_x * 1.5 + 0.25\n"
                   "            return func(*args, **(kwargs or {}))\n\n\n")
FILLS_WHEN_READ = ("import torch\n\n\nclass Twice(list):\n    def __iter__(self):\n"
                   "        self.kd_seen = getattr(self, 'kd_seen', 0) + 1\n"
                   "        if self.kd_seen == 2:\n            return iter([self.kd_x * 1.5 + 0.25])\n"
                   "        return super().__iter__()\n\n\n")
READ_ATTACKS = {
    "subclass_output": cuda_candidate(extra=SUBCLASS_OUTPUT, forward=(
        "scale_shift_ext.scale_shift_cuda(x[:1].contiguous())\n        out = torch.empty_like(x).as_subclass(Lazy)\n"
        "        out.kd_x = x\n        return out")),
    "fills_when_read": cuda_candidate(extra=FILLS_WHEN_READ, forward=(
        "scale_shift_ext.scale_shift_cuda(x[:1].contiguous())\n        out = Twice([torch.zeros_like(x)])\n"
        "        out.kd_x = x\n        return out")),
}


@pytest.mark.parametrize("name", sorted(READ_ATTACKS))
def test_cuda_attacks_on_the_reading_of_outputs_compute_nothing(verifier_cache, name):
    cfg = load_config(None, ["verifier.backend=cuda", "verifier.run_timeout_s=10", "verifier.use_cache=false",
                             "verifier.spare_sandboxes=0", "verifier.trials=2"]).verifier
    with Judge(cfg, verifier_cache) as judge:
        verdict = judge.verify(example_problem("scale_shift", "cuda"), READ_ATTACKS[name], static_rules=False)
    assert verdict.category == V.runtime_error and verdict.speedup_vs_eager is None, verdict.detail
    assert {"subclass_output": "Lazy", "fills_when_read": "Twice"}[name] in verdict.detail, verdict.detail


def test_cuda_attacks_fail_and_leave_the_machine_as_it_was(tmp_path):
    from tests.test_sandbox import describe_processes, sandbox_processes

    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    secret.chmod(0o644)
    cache = tmp_path / "cache"
    cfg = load_config(None, ["verifier.backend=cuda", "verifier.run_timeout_s=10", "verifier.use_cache=false",
                             "verifier.spare_sandboxes=0"]).verifier
    judge = Judge(cfg, cache)
    problem = example_problem("scale_shift", "cuda")
    try:
        for name, (cand, category, rule, static) in cuda_attacks(str(secret), str(cache)).items():
            cand = Candidate(id=Candidate.make_id(problem.id, cand.source, "cuda"), problem_id=problem.id,
                             source=cand.source, backend="cuda")
            v = judge.verify(problem, cand, static_rules=static)
            assert v.category == category and v.rule == rule, f"{name}: {v.category} {v.rule} {v.detail}"
            assert "ATTACK SUCCEEDED" not in v.detail and SECRET not in v.detail, f"{name}: {v.detail}"
            left = sandbox_processes()
            assert left == [], f"{name} left:\n{describe_processes(left)}"
            if name == "device_nodes_and_processes":
                view = v.detail.split("VIEW ", 1)[1].split(" PIDS ")
                nodes = set(view[0].split())
                assert nodes <= {"fd", "full", "null", "random", "shm", "stderr", "stdin", "stdout", "urandom", "zero",
                                 "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"} | {f"nvidia{i}" for i in range(16)}
                assert len([n for n in nodes if n[6:].isdigit() and n.startswith("nvidia")]) == 1, nodes
                assert view[1].split()[0] == "1" and len(view[1].split()) == 1, view[1]  # it sees only itself
        assert judge.verify(problem, Candidate(id="ok", problem_id=problem.id, source=cuda_candidate().source,
                                               backend="cuda")).category == V.passed
    finally:
        judge.close()


def test_cuda_a_candidate_that_pins_more_host_memory_than_its_estimate_is_judged_with_its_whole_limit(tmp_path):
    """verifier.memory_admission: reference on the GPU: a candidate's sandbox capped at its problem's estimate
    whose page-locked host buffer (the driver's allocation, which may fail rather than fault at the cap) passes it
    is judged again with its whole limit, and passes."""
    cfg = load_config(None, ["verifier.backend=cuda", "verifier.memory_limit_mb=16384",
                             "verifier.memory_admission=reference", "verifier.use_cache=false", "verifier.trials=2",
                             "verifier.spare_sandboxes=0", "verifier.timed=false"]).verifier
    problem = example_problem("scale_shift", "cuda")
    with Judge(cfg, tmp_path / "cache") as judge:
        if not judge.sandboxes.isolation.cgroups:
            pytest.skip("no usable cgroup memory controller here")
        assert judge.verify(problem, cuda_candidate()).category == V.passed
        estimate = judge.judgement_memory_mb(problem)
        assert estimate is not None and estimate < 16384, estimate
        pinning = cuda_candidate(extra=f"import torch\n_held = torch.empty(({estimate} + 1024) << 20, "
                                       "dtype=torch.uint8, pin_memory=True).fill_(1)\n")
        verdict = judge.verify(problem, pinning, static_rules=False)
        assert verdict.category == V.passed, verdict.detail
        assert judge.estimates_outgrown == 1
