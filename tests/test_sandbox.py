"""The sandbox against hostile candidates (tests/attacks.py), cpu backend, for real: each case is judged
on its own and followed by a check of the machine — no file outside scratch, no process left, no
connection made, judge and forkserver alive, caches intact, no leftovers."""

from __future__ import annotations

import json
import multiprocessing.forkserver
import os
import re
import shutil
import socket
import time
from pathlib import Path

import pytest

from schemas import load_config
from schemas.records import Candidate
from schemas.records import VerdictCategory as V
from tests.attacks import SECRET_TEXT, Host, attacks, native
from tests.kernels import REFERENCE, candidate, good, problem
from verifier.isolation import SANDBOX_UID_BASE
from verifier.judge import Judge
from verifier.signed_store import SignedStore, home_secret


def sandbox_processes() -> list[int]:
    """Processes on this machine running as a sandbox uid."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            uid = next(int(line.split()[1]) for line in (entry / "status").read_text().splitlines()
                       if line.startswith("Uid:"))
        except (OSError, StopIteration):
            continue
        if SANDBOX_UID_BASE <= uid < SANDBOX_UID_BASE + (1 << 24):
            found.append(int(entry.name))
    return found


def describe_processes(pids: list[int]) -> str:
    """pid, state, parent and command line of each: what a leftover was, in a failure's message."""
    lines = []
    for pid in pids:
        try:
            status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                          if ":" in line)
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            lines.append(f"{pid} {status.get('State', '?').strip()} ppid {status.get('PPid', '?').strip()} "
                         f"{cmdline[:160]}")
        except OSError:
            lines.append(f"{pid} (gone)")
    return "\n".join(lines)


def open_fds() -> set[tuple[int, str]]:
    """This process's open file descriptors, with what each names."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            found.add((int(fd), os.readlink(f"/proc/self/fd/{fd}")))
        except OSError:  # the listing's own descriptor, closed by now
            pass
    return found


def children_of(pid: int) -> list[int]:
    kids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    kids.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                pass
    return kids


@pytest.fixture(scope="module")
def setting(tmp_path_factory, verifier_cache):
    root = tmp_path_factory.mktemp("attacks")
    secret = root / "secret.txt"
    secret.write_text(SECRET_TEXT)
    secret.chmod(0o644)  # readable by anyone: only the sandbox's view may keep it out
    markers = root / "markers"
    markers.mkdir()
    markers.chmod(0o777)  # writable by anyone: idem
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    cfg = load_config(None, ["verifier.run_timeout_s=4", "verifier.use_cache=false", "verifier.spare_sandboxes=0",
                             "verifier.memory_limit_mb=4096", "verifier.trials=2", "verifier.timing_runs=5"]).verifier
    judge = Judge(cfg, verifier_cache)
    assert judge.verify(problem(), candidate("correct")).category == V.passed  # builds the bridge, starts the forkserver
    host = Host(secret_file=str(secret), cache_dir=str(verifier_cache), port=listener.getsockname()[1],
                judge_pid=os.getpid(), forkserver_pid=multiprocessing.forkserver._forkserver._forkserver_pid,
                marker_dir=str(markers))
    yield judge, host, listener
    judge.close()
    listener.close()


def test_the_isolation_in_use_is_the_real_one(setting):
    judge, _, _ = setting
    assert judge.isolation.startswith("namespaces + seccomp")


@pytest.mark.parametrize("name", sorted(attacks(Host("/x", "/x", 1, 1, 1, "/x"))))
def test_attack_fails_and_leaves_the_machine_as_it_was(setting, name):
    judge, host, listener = setting
    attack = attacks(host)[name]
    p = problem()
    cand = Candidate(id=Candidate.make_id(p.id, attack.source, "cpu"), problem_id=p.id, source=attack.source,
                     origin=name)
    store = SignedStore(Path(host.cache_dir) / "builds", home_secret(host.cache_dir))
    judge_fds = open_fds()
    v = judge.verify(p, cand, static_rules=not attack.bypass_static)

    expected = attack.category if isinstance(attack.category, tuple) else (attack.category,)
    assert v.category in expected, f"{name}: {v.category.value} ({v.rule}) {v.detail}"
    if attack.rule:
        assert v.rule == attack.rule, f"{name}: {v.rule} {v.detail}"
    assert "ATTACK SUCCEEDED" not in v.detail, v.detail
    assert not any(secret in v.detail for secret in attack.secrets), v.detail
    # the machine, after the verdict
    for marker in attack.markers:
        assert not os.path.exists(marker), f"{name} left {marker}"
    assert sandbox_processes() == [], f"{name}: sandbox processes survive the verdict"
    assert children_of(host.forkserver_pid) == [], f"{name}: a sandbox's keeper survives the verdict"
    os.kill(host.forkserver_pid, 0)  # the forkserver lives
    with pytest.raises(BlockingIOError):
        listener.accept()  # no connection ever reached the listener
    entries = [e for e in store.root.iterdir() if not e.name.startswith(".")]
    assert all(store.get(e.name) is not None for e in entries), f"{name}: a build entry fails authentication"
    assert not (Path(host.cache_dir) / "verdicts" / "forged.json").exists()
    tag = judge.sandboxes.isolation.tag  # (other processes sharing the cache may have live sandboxes of their own)
    assert list(judge.sandboxes.isolation.scratch_root.glob(f"{tag}-*")) == []
    assert list(judge.sandboxes.isolation.io_root.glob(f"kd-io-{tag}-*")) == []
    cgroups = judge.sandboxes.isolation.cgroups
    for parent in (cgroups.parents.values() if cgroups else ()):  # a group left behind keeps its tmpfs pages charged
        assert list(parent.glob(f"{tag}-*")) == [], f"{name} left its cgroup"
    after = open_fds()  # counted: a descriptor may be replaced (a new forkserver's socket), never added
    assert len(after) <= len(judge_fds), f"{name}: the judge holds {sorted(after - judge_fds)} after the verdict"
    if name == "walls_patch_timer":  # a pass, but the timing the sandbox forged was overruled by the judge's clock
        assert v.timing["overruled"] == 1.0 and v.timing["claimed_s"] < 1e-6, v.timing
        assert v.speedup_vs_eager < 1.0, v.speedup_vs_eager


def test_the_judge_still_judges_after_every_attack(setting):
    judge, _, _ = setting
    assert judge.verify(problem(), candidate("correct")).category == V.passed
    assert judge.verify(problem(), candidate("wrong_output")).category == V.wrong_output


def test_a_killed_forkserver_costs_at_most_one_verdict(setting):
    judge, _, _ = setting
    server = multiprocessing.forkserver._forkserver._forkserver_pid
    os.kill(server, 9)
    time.sleep(0.2)
    results = []
    for _ in range(2):
        try:
            results.append(judge.verify(problem(), candidate("correct")).category)
        except Exception as exc:  # the one verdict the kill may cost is a harness error, never a wrong verdict
            results.append(type(exc).__name__)
    assert results[-1] == V.passed and all(r in (V.passed, "SandboxStartError") for r in results), results
    assert multiprocessing.forkserver._forkserver._forkserver_pid != server


def test_a_reference_that_needs_100_gb_is_one_problems_error(setting):
    from schemas.records import Problem
    from verifier.reference import ReferenceError

    judge, _, _ = setting
    huge = REFERENCE.replace("return [torch.randn(4, 8)]", "return [torch.randn(4, 8), bytearray(100 << 30)]")
    bad = Problem(id=Problem.make_id(huge), source="kernelbench", reference=huge, name="hundred_gb")
    cand = candidate("correct")
    with pytest.raises(ReferenceError, match="hundred_gb"):
        judge.verify(bad, cand.model_copy(update={"problem_id": bad.id}))
    assert sandbox_processes() == []
    assert judge.verify(problem(), candidate("correct")).category == V.passed


def test_leftovers_of_a_killed_judge_are_removed_by_the_next(tmp_path):
    """Scratch, tmpfs and cgroups named after a judge process that is gone are cleaned on the next start."""
    from verifier.isolation import Isolation

    first = Isolation("namespaces", tmp_path, readonly=[])
    live_tag, first.tag = first.tag, "999999999-1"  # its sandboxes named as a dead judge's would be
    home = first.allocate(256, 64)
    leftovers = [home.root, home.io_in, home.io_out]
    assert all(p.exists() for p in leftovers) and os.path.ismount(home.io_out) and os.path.ismount(home.work)
    second = Isolation("namespaces", tmp_path, readonly=[])
    assert not any(p.exists() for p in leftovers)  # its own tmpfs mounts too: a mountpoint is never removed
    assert not any(str(home.io_out) in line or str(home.work) in line for line in open("/proc/mounts"))
    first.release(home)
    first.tag = live_tag
    assert second.tag == first.tag  # the same (live) process: its own sandboxes are never taken for leftovers


def test_a_forged_or_edited_cached_verdict_is_refused_and_judged_again(tmp_path):
    """The verdict cache is the judge's: an entry written without its secret, edited, or signed by another
    home is refused (and the candidate judged again), never a cached pass."""
    from verifier.pool import LocalVerifierPool
    from verifier.signed_store import SignedStore

    cfg = load_config(None, ["verifier.spare_sandboxes=0", "verifier.run_timeout_s=4"]).verifier
    cand = candidate("wrong_output")
    with LocalVerifierPool(cfg, tmp_path) as pool:
        first = pool.verify(problem(), cand)
        assert first.category == V.wrong_output and pool.verify(problem(), cand).cached
        path = pool.cache.store.path(f"{pool.cache.key(problem(), cand, cfg, 0, pool.timing_device())}.json")
        assert path.exists()
        # where a verdict kept before verdicts were keyed by their device is looked for too
        legacy = pool.cache.store.path(f"{pool.cache.key(problem(), cand, cfg, 0)}.json")
        forged = first.model_copy(update={"category": V.passed, "correct": True, "pass_fraction": 1.0,
                                          "speedup_vs_eager": 50.0}).model_dump_json().encode()
        other_home = SignedStore(tmp_path / "elsewhere", b"another home's secret, 32 bytes!")
        signed = path.read_bytes()
        for attempt in (forged,  # unsigned
                        signed.replace(b'"wrong_output"', b'"pass"'),  # signed, then edited
                        other_home.sign(path.name, forged)):  # signed under another secret
            path.write_bytes(attempt)
            again = pool.verify(problem(), cand)
            assert again.category == V.wrong_output and not again.cached, again
        assert pool.cache.store.refused == 3
        path.unlink()
        for attempt in (forged, other_home.sign(legacy.name, forged)):
            legacy.write_bytes(attempt)
            again = pool.verify(problem(), cand)
            assert again.category == V.wrong_output and not again.cached, again
            path.unlink()
        assert pool.cache.store.refused == 5


def test_verdicts_move_to_another_home_only_through_an_export_that_home_imports(tmp_path):
    """A stage cut short on one box goes on from its verdicts on the next: `export_verdicts` writes the authentic
    entries unsigned (no secret travels, a forged entry stays behind), `import_verdicts` signs them with the new
    home's secret, so its pool answers them cached; a file holding anything but verdicts is refused whole."""
    import json
    import lzma
    import subprocess
    import sys

    from verifier.pool import HARNESS_VERSION, LocalVerifierPool, export_verdicts, import_verdicts
    from verifier.signed_store import VerdictImportError

    cfg = load_config(None, ["verifier.spare_sandboxes=0", "verifier.run_timeout_s=4"]).verifier
    cand = candidate("wrong_output")
    box, here = tmp_path / "box", tmp_path / "here"
    with LocalVerifierPool(cfg, box) as pool:
        judged = pool.verify(problem(), cand)
        assert judged.harness == HARNESS_VERSION  # which harness judged it, as judged and as stored
        forged = judged.model_copy(update={"category": V.passed, "correct": True}).model_dump_json().encode()
        (pool.cache.store.root / f"{'0' * 24}.json").write_bytes(forged)  # unsigned: must not travel
    exported = tmp_path / "verdicts.jsonl.xz"
    assert export_verdicts(box, exported) == 2  # the verdict and its reference's mark (it ran), not the forgery
    assert sorted(json.loads(line)["key"].startswith("reference-") for line in lzma.open(exported, "rt")) == \
        [False, True]
    assert (box / "secret").read_bytes() not in lzma.open(exported).read()
    assert import_verdicts(here, exported) == 2
    with LocalVerifierPool(cfg, here) as pool:
        again = pool.verify(problem(), cand)
        assert again.cached and again.category == V.wrong_output and pool.cache.store.refused == 0

    rows = [json.loads(line) for line in lzma.open(exported, "rt")]
    bad_files = {"a pass claimed in a reference mark": [{"key": "reference-" + "1" * 24 + ".json", "payload": "pass"}],
                 "not a verdict": [*rows, {"key": "2" * 24 + ".json", "payload": '{"passed": true}'}],
                 "a path for a key": [{"key": "../secret", "payload": rows[0]["payload"]}]}
    elsewhere = tmp_path / "elsewhere"
    for why, lines in bad_files.items():
        path = tmp_path / "bad.jsonl.xz"
        with lzma.open(path, "wt") as f:
            f.writelines(json.dumps(row) + "\n" for row in lines)
        with pytest.raises(VerdictImportError, match="nothing imported"):
            import_verdicts(elsewhere, path)
        assert not list((elsewhere / "verdicts").glob("*")), why  # refused whole: not even the good rows
    (tmp_path / "plain.txt").write_text("not xz")
    cli = subprocess.run([sys.executable, "-m", "flows.cli", "verdicts", "import", str(tmp_path / "plain.txt"),
                          "--set", f"verifier.cache_dir={elsewhere}"], capture_output=True, text=True)
    assert cli.returncode == 2 and "not an exported verdict store" in cli.stderr and "Traceback" not in cli.stderr


def test_a_verdict_of_torchs_own_build_answers_only_under_the_harness_that_stored_it(tmp_path):
    """A harness change only to how torch's own builds are judged (VERDICT_KEY_VERSION left behind) keeps the cached
    verdicts whose builds stayed on the fast path, and judges again every one that took the fallback: stored by an
    older harness (or by one before verdicts were stamped), it does not answer, whatever it says."""
    from schemas.records import Verdict
    from verifier.pool import HARNESS_VERSION, VERDICT_KEY_VERSION, VerdictCache

    assert int(VERDICT_KEY_VERSION) <= int(HARNESS_VERSION)
    cache = VerdictCache.of_home(tmp_path)
    fast = Verdict(candidate_id="c1", problem_id="p", compiled=True, correct=True, legal=True, pass_fraction=1.0,
                   category=V.passed)
    fallback = fast.model_copy(update={"candidate_id": "c2", "build_fallbacks": ["explicit pybind11"]})
    cache.put("a" * 24, fast)
    cache.put("b" * 24, fallback)
    assert cache.get("a" * 24).harness == cache.get("b" * 24).harness == HARNESS_VERSION  # stamped when stored
    older = str(int(HARNESS_VERSION) - 1)
    for key, verdict in (("a" * 24, fast), ("b" * 24, fallback)):
        for stamp in (older, ""):  # an older harness's, and one stored before verdicts were stamped
            cache.store.put(f"{key}.json", verdict.model_copy(update={"harness": stamp}).model_dump_json().encode())
            answer = cache.get(key)
            if verdict.build_fallbacks:
                assert answer is None, stamp
            else:
                assert answer is not None and answer.passed, stamp
    # harness 14: the op watch read a freed name as an op ("aten::"), so an older torch-compute verdict may be false
    illegal = fast.model_copy(update={"category": V.illegal, "legal": False, "correct": False, "rule": "torch-compute"})
    for stamp, answers in (("13", False), ("", False), ("14", True), (HARNESS_VERSION, True)):
        cache.store.put(f"{'c' * 24}.json", illegal.model_copy(update={"harness": stamp}).model_dump_json().encode())
        assert (cache.get("c" * 24) is not None) == answers, stamp
    wrong = fast.model_copy(update={"category": V.wrong_output, "correct": False, "harness": "13"})
    cache.store.put(f"{'d' * 24}.json", wrong.model_dump_json().encode())
    assert cache.get("d" * 24) is not None  # no other verdict could change: it still answers



def test_an_edited_shared_object_is_refused_and_rebuilt(tmp_path):
    import torch

    from verifier.fastbuild import FastInlineBuilder

    src = "torch::Tensor twice(torch::Tensor x) { auto o = torch::empty_like(x); " \
          "for (int64_t i = 0; i < x.numel(); ++i) o.data_ptr<float>()[i] = 2 * x.data_ptr<float>()[i]; return o; }"
    FastInlineBuilder(tmp_path).load_inline("twice", src, functions=["twice"])
    store_root = tmp_path / "builds"
    (entry,) = [p for p in store_root.iterdir() if "." not in p.name]  # the shared object (no gap marker)
    blob = bytearray(entry.read_bytes())
    blob[len(blob) // 2] ^= 0xFF  # one byte of the library changed by someone without the secret
    entry.write_bytes(bytes(blob))
    again = FastInlineBuilder(tmp_path)
    module = again.load_inline("twice_again", src, functions=["twice"])
    assert again.store.refused == 1 and again.stats.builds == 1 and again.stats.cache_hits == 0
    assert torch.equal(module.twice(torch.ones(3)), torch.full((3,), 2.0))


def test_a_sandbox_may_write_a_file_as_large_as_its_memory_holds_not_more():
    """KernelBench level 1 at full size: a reference trial writes 12.8 GB of tensors into the sandbox's tmpfs
    (charged to its memory), past the old flat 8 GiB file limit; what bounds a file is the memory it would take."""
    from verifier.jail import file_size_limit

    assert file_size_limit(4096) == 8 << 30  # the floor: small sandboxes keep the old limit
    assert file_size_limit(32768) == 32 << 30 > 12_884_901_888


def test_sandbox_starts_racing_each_other_leave_multiprocessing_as_they_found_it():
    """Sandboxes start from many verifier threads at once. A thread that read multiprocessing's preparation hook
    while another held the start lock put the other's wrapper back when it finished, one layer deeper each race,
    until a warmup RL run on the CPU died of RecursionError after ten steps."""
    import multiprocessing.spawn as mp_spawn
    import threading

    from verifier.sandboxes import _without_main_module

    original = mp_spawn.get_preparation_data
    waiting = threading.Event()

    def second():
        waiting.set()
        with _without_main_module():
            pass

    with _without_main_module():
        racer = threading.Thread(target=second)
        racer.start()
        waiting.wait()
        time.sleep(0.2)  # the racer is at the lock now
    racer.join(timeout=10)
    assert mp_spawn.get_preparation_data is original


def test_an_interrupted_pool_ends_its_judgements_at_once(tmp_path):
    """Ctrl-C (or Prefect's cancel, or a failed stage) inside a pool's `with`: the judgements in flight are cut
    short, not waited for — a timeout of the H200's distill ran 30 s past its SIGTERM, waiting on candidates still
    inside their time limits — and nothing of theirs is left on the machine."""
    from verifier.pool import LocalVerifierPool

    cfg = load_config(None, ["verifier.run_timeout_s=120", "verifier.use_cache=false", "verifier.spare_sandboxes=1",
                             "verifier.workers=2"]).verifier
    sleeper = candidate("sleeps_in_init", good().replace(
        "super().__init__()", "super().__init__()\n        import time\n        time.sleep(120)"))
    with pytest.raises(KeyboardInterrupt):
        with LocalVerifierPool(cfg, tmp_path / "cache") as pool:
            verdicts = pool.verify_many([(problem(), candidate("correct")), (problem(), sleeper)])
            assert next(verdicts).category == V.passed  # the sleeper is in its sandbox now, for two minutes
            interrupted = time.monotonic()
            raise KeyboardInterrupt
    assert time.monotonic() - interrupted < 15
    assert sandbox_processes() == []


def test_an_aborted_judge_s_waits_for_memory_end_at_once(tmp_path):
    """A stage cut by `timeout -k` on the H200 was SIGKILLed: its pool's closing waited for 12 judgements still
    waiting for their memory share (the shares behind the judgements whose closing removed GBs of kept trials).
    Aborted, a judge's waits for memory end at once — the ordinary one and the one that waits to run alone."""
    import threading

    from verifier.sandboxes import SandboxFactory, SandboxStartError

    cfg = load_config(None, ["verifier.spare_sandboxes=0", "verifier.memory_limit_mb=1024",
                             "verifier.sandbox_memory_mb=1031"]).verifier
    factory = SandboxFactory(cfg, tmp_path / "cache", "cpu")
    budget = factory.memory_budget
    held = factory.reserve()  # a judgement running: no other share fits beside it
    outcomes: dict[bool, object] = {}

    def judgement(alone: bool) -> None:
        try:
            with factory.reserve(alone=alone):
                outcomes[alone] = "reserved"
        except SandboxStartError as exc:
            outcomes[alone] = exc

    threads = [threading.Thread(target=judgement, args=(alone,), daemon=True) for alone in (False, True)]
    try:
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 10
        while not (budget._waiting and budget._alone_since) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert budget._waiting and budget._alone_since  # both wait for the share the running one holds
        aborted = time.monotonic()
        factory.abort()
        for thread in threads:
            thread.join(5)
        assert time.monotonic() - aborted < 2
        assert all(isinstance(outcomes.get(alone), SandboxStartError) for alone in (False, True)), outcomes
        assert not budget._waiting and not budget._alone_since
    finally:
        held.release()
        factory.close()
    assert budget.used_mb == 0


def test_a_judge_nobody_closed_stops_its_spares_when_collected(tmp_path):
    """A judge dropped without close() (a one-line `Judge(cfg, cache).verify(...)`) kept its spare sandboxes alive
    until the interpreter exited: processes of sandbox uids that the next red-team check found (seen on the H200).
    Collected, their pipes closed and they exited, but their homes, cgroups and shared-memory folders stayed."""
    import gc

    from verifier.judge import Judge

    cfg = load_config(None, ["verifier.spare_sandboxes=2"]).verifier
    judge = Judge(cfg, tmp_path / "cache")
    judge.sandboxes.take("run").close()  # its refill starts two spares
    deadline = time.monotonic() + 60
    # a spare counts once its keeper runs; its jailed process drops to a sandbox uid a moment later
    while (len(judge.spare_pids()) < 2 or judge.sandboxes._refills or len(sandbox_processes()) < 2) \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(judge.spare_pids()) == 2 and len(sandbox_processes()) >= 2  # the spares' jailed processes
    isolation = judge.sandboxes.isolation
    def homes() -> list[str]:
        return [p.name for root in (isolation.io_root, isolation.scratch_root) if root.is_dir()
                for p in root.iterdir() if isolation.tag in p.name]
    assert len(homes()) >= 2
    del judge
    gc.collect()
    assert sandbox_processes() == []
    assert homes() == []


def test_closing_a_factory_leaves_no_spare_being_started(tmp_path):
    """A spare's refill runs in its own thread: closed while that thread was still starting a sandbox, the factory
    returned and the sandbox lived on until the thread noticed; the next verdict then found a stranger's process
    (seen on the H200 right after a pool of spares had closed)."""
    import threading

    from verifier.sandboxes import SandboxFactory

    class SlowStarts(SandboxFactory):  # a start as slow as one with a CUDA context on a loaded machine
        def start(self, role, device_index=0, processes=None):
            box = super().start(role, device_index, processes)
            if threading.current_thread() is not threading.main_thread():
                time.sleep(1.0)
            return box

    cfg = load_config(None, ["verifier.spare_sandboxes=2"]).verifier
    factory = SlowStarts(cfg, tmp_path / "cache", "cpu")
    factory.take("run").close()  # starts the refill of two spares behind it
    factory.close()
    assert sandbox_processes() == []


def test_a_large_share_that_has_waited_long_goes_before_small_ones_asked_for_after_it(monkeypatch):
    """Small shares that keep fitting beside the running ones would never leave a large one room (a 16 GB
    reference check waited 7 minutes behind 5 GB ones on a 20 GB budget): once it has waited STARVING_S,
    later ones wait behind it; before that they may pass."""
    import threading

    from verifier import isolation

    monkeypatch.setattr(isolation, "STARVING_S", 0.3)
    budget = isolation.MemoryBudget(10)
    running = budget.reserve(4)
    order, entered = [], {name: threading.Event() for name in ("large", "early small", "late small")}

    def judgement(name, mb):
        with budget.reserve(mb):
            order.append(name)
            entered[name].set()

    threads = [threading.Thread(target=judgement, args=("large", 8))]
    threads[0].start()
    time.sleep(0.05)
    threads.append(threading.Thread(target=judgement, args=("early small", 2)))
    threads[1].start()
    assert entered["early small"].wait(5)  # fits beside the 4 running, and the large share is not starving yet
    time.sleep(0.4)
    threads.append(threading.Thread(target=judgement, args=("late small", 2)))
    threads[2].start()
    assert not entered["late small"].wait(0.3)  # it fits beside the 4 running, but the large one waits longer
    running.release()
    for thread in threads:
        thread.join(5)
    assert order == ["early small", "large", "late small"] and budget.used_mb == 0


def test_the_judge_s_own_copies_are_promised_beside_a_judgement_s_sandboxes_and_never_their_limit():
    """A full-size KernelBench judgement: its sandboxes' share caps its candidate's cgroup; the 25 GB the judge
    holds for it (a trial loaded, inputs handed over, outputs read back) is taken from the budget beside it."""
    import threading

    from verifier.isolation import MemoryBudget

    budget = MemoryBudget(10)
    big = budget.reserve(4, judge_mb=3)
    assert big.memory_mb == 4 and budget.used_mb == 7  # the sandboxes' share; the budget holds both
    started = threading.Event()

    def neighbour():
        with budget.reserve(4):  # fits beside 4 of sandboxes, not beside 4 + 3
            started.set()

    waiter = threading.Thread(target=neighbour)
    waiter.start()
    assert not started.wait(0.3)
    big.release()
    assert started.wait(5)
    waiter.join()
    with budget.reserve(8, judge_mb=8) as whole:  # more than the budget: all of it, the sandboxes' share kept
        assert budget.used_mb == 10 and whole.memory_mb == 8
    assert budget.used_mb == 0


def test_a_judgement_promises_the_judge_s_copies_of_a_full_size_trial():
    from schemas.records import Problem
    from verifier.judge import judge_copies_mb

    full = Problem(id="p", source="test", reference="x",
                   measures={"input_bytes": 6_400_000_000, "output_bytes": 6_400_000_000})
    # a trial loaded and the candidate's inputs written: 18 GiB (its outputs are the candidate's own memory file)
    assert judge_copies_mb(full) == (3 * 6_400_000_000) >> 20
    assert judge_copies_mb(Problem(id="q", source="test", reference="x")) == 0  # unmeasured


def test_judgements_on_a_gpu_wait_for_their_share_of_its_memory_too():
    """On a GPU the host budget is not the wall: full-size judgements side by side ran the H200 out of memory (a
    sandbox's cudaMalloc has no cgroup). A tracked device admits a judgement only while its GPU share fits too:
    one that fits on the host but not on the GPU waits, one on another device or an untracked one does not, a
    thread's own sandboxes take nothing more (re-entrant), and alone it has the GPU to itself."""
    import threading

    from verifier.isolation import MemoryBudget

    budget = MemoryBudget(100)
    budget.track_gpu(0, 10)
    budget.track_gpu(0, 99)  # the first capacity stands: every judge of the process shares one device
    first = budget.reserve(10, gpu_mb=8, device_index=0)
    with budget.reserve(10, gpu_mb=50, device_index=0):  # re-entrant: this thread's judgement holds its share
        assert budget.gpu_used_mb[0] == 8 and budget.used_mb == 10
    started = {name: threading.Event() for name in ("gpu 0", "untracked gpu 1", "alone")}

    def judgement(name, **share):
        with budget.reserve(10, **share):
            started[name].set()

    waiting = threading.Thread(target=judgement, args=("gpu 0",), kwargs={"gpu_mb": 4, "device_index": 0})
    waiting.start()
    other = threading.Thread(target=judgement, args=("untracked gpu 1",), kwargs={"gpu_mb": 400, "device_index": 1})
    other.start()
    assert started["untracked gpu 1"].wait(5)
    assert not started["gpu 0"].wait(0.3)  # 20 MB of 100 on the host, but 8 + 4 GPU MB of 10
    first.release()
    assert started["gpu 0"].wait(5)
    for thread in (waiting, other):
        thread.join(5)
    assert budget.gpu_used_mb[0] == 0 and budget.used_mb == 0
    held = budget.reserve(10, gpu_mb=1, device_index=0)
    lone = threading.Thread(target=judgement, args=("alone",), kwargs={"alone": True})
    lone.start()
    assert not started["alone"].wait(0.3)  # a GPU share alone is a judgement running: alone waits for it
    held.release()
    assert started["alone"].wait(5)
    lone.join(5)
    with budget.reserve(10, gpu_mb=25, device_index=0):  # more than the device: all of it
        assert budget.gpu_used_mb[0] == 10
    assert budget.gpu_used_mb[0] == 0


def test_a_judgements_gpu_share_is_estimated_from_its_problems_measured_sizes():
    from schemas.records import Problem
    from verifier.judge import gpu_memory_capacity_mb, gpu_memory_estimate_mb

    level1 = Problem(id="p", source="test", reference="x",
                     measures={"input_bytes": 6_442_450_944, "output_bytes": 6_442_450_944, "weight_bytes": 1 << 30})
    # two processes' CUDA contexts, three trials' worth of inputs and outputs (alternating timed sets, outputs,
    # the judge's copies), the weights once: 41 GB, three at once on an H200
    assert gpu_memory_estimate_mb(level1) == 2 * 1024 + 3 * 2 * 6144 + 1024
    assert gpu_memory_estimate_mb(Problem(id="q", source="test", reference="x")) == 2048  # unmeasured: contexts
    # an H200 with 140 GB free and the judge keeping 16 GB of expected outputs there: two such at once, not three
    assert gpu_memory_capacity_mb(140 * 1024, 16) == int(140 * 1024 * 0.9) - 16 * 1024
    assert gpu_memory_capacity_mb(20 * 1024, 16) == 10 * 1024  # never below half of what is free


def test_judgements_start_only_while_their_memory_limits_fit_beside_those_running():
    """The memory budget (verifier.sandbox_memory_mb): a judgement holds its sandbox's limit while it runs and the
    next waits for room; its own build and reference sandboxes draw on its share (re-entrant: no deadlock); a
    limit larger than the whole budget still runs, alone."""
    import threading

    from verifier.isolation import MemoryBudget

    budget = MemoryBudget(10)
    first = budget.reserve(6)
    inner = budget.reserve(6)  # the same thread (its build sandbox): no wait, nothing more reserved
    assert budget.used_mb == 6
    started = threading.Event()

    def second():
        with budget.reserve(6):
            started.set()

    waiter = threading.Thread(target=second)
    waiter.start()
    assert not started.wait(0.3)  # 6 + 6 > 10
    inner.release()
    assert not started.wait(0.3)  # the first judgement still holds its sandbox
    first.release()
    first.release()  # twice is once
    assert started.wait(5)
    waiter.join()
    assert budget.used_mb == 0 and budget.peak_mb == 6
    with budget.reserve(50):
        assert budget.used_mb == 10  # larger than the budget: the whole of it



def test_a_judgement_to_run_alone_lets_later_ones_start_for_a_while_then_none(monkeypatch):
    """A judgement made again alone (its sandbox starved, a failure a neighbour can cause) waits for every one
    running to end. For ALONE_PATIENCE_S later ones still start (the rest of the batch runs, and the machine
    empties when the batch does: holding it back at once idled it behind the slowest, once per rerun); after
    that none starts before it. Alone, it has the whole budget."""
    import threading

    from verifier import isolation

    monkeypatch.setattr(isolation, "ALONE_PATIENCE_S", 0.5)
    budget = isolation.MemoryBudget(10)
    running = budget.reserve(2)
    order = []

    def judge(name, **alone):
        with budget.reserve(2, **alone):
            order.append((name, budget.used_mb))
            time.sleep(0.05)

    rerun = threading.Thread(target=judge, args=("alone",), kwargs={"alone": True})
    rerun.start()
    time.sleep(0.1)
    patient = threading.Thread(target=judge, args=("while it is patient",))
    patient.start()
    patient.join(5)
    assert order == [("while it is patient", 4)]  # started beside the running one, the rerun still waiting
    time.sleep(0.6)
    later = threading.Thread(target=judge, args=("later",))
    later.start()
    time.sleep(0.2)
    assert order == [("while it is patient", 4)]  # 2 of 10 in use: it would fit, but waits behind the rerun now
    running.release()
    rerun.join(5)
    later.join(5)
    assert order[1:] == [("alone", 10), ("later", 2)]


def test_timing_stops_every_other_candidate_sandbox_on_its_device(tmp_path):
    """others_paused (a GPU pool's timing): every other run sandbox of the device is stopped (SIGSTOP: nothing in
    it runs, no thread, no kernel launch), one started meanwhile too, the timed one and reference sandboxes not;
    all run again after, and the time stopped is not theirs (paused_seconds; Sandbox.clock)."""
    from verifier.sandboxes import SandboxFactory, _children

    def states(box):
        found = set()
        for pid in [box.proc.pid, *_children(box.proc.pid)]:
            try:
                found.add(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0])
            except OSError:
                pass
        return found

    cfg = load_config(None, ["verifier.spare_sandboxes=0"]).verifier
    factory = SandboxFactory(cfg, tmp_path / "cache", "cpu")
    timed, other, reference = factory.start("run"), factory.start("run"), factory.start("reference")
    boxes = [timed, other, reference]
    try:
        time.sleep(0.5)  # each waits for its job
        with factory.others_paused(0, timed):
            late = factory.start("run")
            boxes.append(late)
            time.sleep(0.3)
            assert states(other) == {"T"} and states(late) == {"T"}, (states(other), states(late))
            assert "T" not in states(timed) and "T" not in states(reference)
            clock, wall = other.clock(), time.monotonic()
            time.sleep(0.2)
            assert other.clock() - clock < 0.05 and time.monotonic() - wall >= 0.2  # stopped time is not its own
        assert not {"T"} & (states(other) | states(late)), (states(other), states(late))
        assert other.paused_seconds() >= 0.5 and late.paused_seconds() >= 0.5 and timed.paused_seconds() == 0
    finally:
        for box in boxes:
            box.close()
        factory.close()


def test_a_sandbox_says_what_it_and_the_machine_hold(tmp_path):
    """`resources()` (a note for a failure no code explains: torch.compile's baseline failing its first copy on a
    busy GPU box) reads the kernel's counts of the sandbox's own cgroup — its memory at its configured limit — and
    the machine's available memory."""
    from verifier.isolation import Cgroups
    from verifier.sandboxes import SandboxFactory

    cfg = load_config(None, ["verifier.spare_sandboxes=0", "verifier.memory_limit_mb=3072"]).verifier
    factory = SandboxFactory(cfg, tmp_path / "cache", "cpu")
    box = factory.start("reference")
    try:
        time.sleep(0.5)  # waits for its job, its interpreter loaded
        note = box.resources()
        available = int(re.search(r"machine available (\d+) MB", note).group(1))
        assert available > 0
        if Cgroups.detect() is not None:
            assert "limit 3072 MB" in note, note
            assert int(re.search(r"memory (\d+) MB", note).group(1)) > 0, note  # an interpreter holds memory
            assert re.search(r"memory events (max=\d+,oom=\d+,)?oom_kill=0", note), note
            assert re.search(r"tasks [1-9]", note), note
            assert re.search(r"threads [1-9]\d* \(RLIMIT_NPROC 256\)", note), note  # a reference sandbox's
    finally:
        box.close()
        factory.close()


def test_a_judgement_knows_whether_another_ran_beside_it():
    """`accompanied`: another judgement held a share at some moment while this one did (either began first), the
    answer for whether a failure a neighbour can cause was this judgement's own; its own re-entrant holds (its
    build, its reference), judgements before or after it and one that ran alone are no company."""
    import threading

    from verifier.isolation import MemoryBudget

    budget = MemoryBudget(10)
    with budget.reserve(2) as first, budget.reserve(2) as its_build:
        assert not first.accompanied and not its_build.accompanied
    with budget.reserve(2) as later:
        assert not later.accompanied and not first.accompanied

    holds = {}
    entered, leave = threading.Event(), threading.Event()

    def neighbour():
        with budget.reserve(2) as hold:
            holds["neighbour"] = hold
            entered.set()
            leave.wait(5)

    with budget.reserve(2) as mine:
        thread = threading.Thread(target=neighbour)
        thread.start()
        assert entered.wait(5)
        assert mine.accompanied and holds["neighbour"].accompanied
        leave.set()
        thread.join(5)
    assert mine.accompanied  # it stays said after the neighbour left, and after this one ended
    with budget.reserve(2, alone=True) as alone:
        pass
    assert not alone.accompanied


def _hog(leaves: tuple[str, ...], megabytes: int):
    """A process holding `megabytes` in the given cgroups, out of the OOM killer's reach where the kernel lets
    root say so (oom_score_adj -1000); elsewhere it is still smaller than a sandbox that holds more, so it lives."""
    import subprocess
    import sys

    hog = subprocess.Popen(
        ["sh", "-c", 'for g in "$@"; do echo $$ > "$g/cgroup.procs"; done; (echo -1000 > /proc/self/oom_score_adj) 2>/dev/null; '
         f'exec {sys.executable} -c "import sys; b = b\'x\' * ({megabytes} << 20); print(1, flush=True); '
         'sys.stdin.read()"', "sh", *leaves], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert hog.stdout.readline().strip() == b"1"
    return hog


def test_a_sandbox_the_machines_memory_killed_is_judged_again_never_charged(tmp_path):
    """14 KernelBench judgements at 32 GB each on the 128 GB H200 had the kernel's OOM killer kill sandboxes
    within their own limits, and the judge itself. Now the sandboxes' parent cgroup is capped
    (verifier.sandbox_memory_mb) and a sandbox killed for want of the machine's memory, not its own limit, is no
    verdict on its code: the judgement is made again, alone, and fails loudly (an infrastructure error, no
    verdict) when the pressure comes from outside the sandboxes and stays; once the memory is back, the same
    candidate is judged on its merits."""
    from verifier.isolation import Cgroups
    from verifier.sandboxes import SandboxStarved

    if Cgroups.detect() is None:
        pytest.skip("no usable cgroup memory controller here")
    cfg = load_config(None, ["verifier.memory_limit_mb=3072", "verifier.sandbox_memory_mb=3072",
                             "verifier.use_cache=false", "verifier.spare_sandboxes=0", "verifier.trials=2",
                             "verifier.timed=false"]).verifier
    greedy = candidate("holds_1700_mb", good().replace(  # within its own 3,072 MB (address space: torch's ~700 MB)
        "super().__init__()", "super().__init__()\n        self.held = b'x' * (1700 << 20)"))
    cgroups = Cgroups.detect()
    caps = {parent / name: (parent / name).read_text() for parent in cgroups.parents.values()
            for name in ("memory.max", "memory.limit_in_bytes") if (parent / name).exists()}
    judge = Judge(cfg, tmp_path / "cache")  # caps its sandboxes at 3,072 MB together
    neighbour = cgroups.create(f"kd-test-neighbour-{os.getpid()}", 2 << 30, 64)
    try:
        hog = _hog(neighbour, 1500)  # 1,500 MB of the sandboxes' 3,072 taken by a smaller neighbour
        try:
            with pytest.raises(SandboxStarved, match="even judged alone.*lower verifier.memory_limit_mb"):
                judge.verify(problem(), greedy)
        finally:
            hog.kill()
            hog.wait()
        assert sandbox_processes() == []
        verdict = judge.verify(problem(), greedy)  # alone now: within its limit, judged as any other
        assert verdict.category == V.passed, verdict.detail
    finally:
        Cgroups.destroy(neighbour)
        judge.close()
        for path, cap in caps.items():  # the cap is the process's: leave it as the judges still open expect
            path.write_text(cap)


# Past its own memory limit two ways: in its address space (on the cpu backend the address-space limit comes
# first), and in its output (its log, a file of its tmpfs, which no address-space limit sees) and then memory
# within its address space: only its cgroup stops that, with the kernel's OOM killer
GLUTTONS = {
    "holds_2500_mb": good().replace("super().__init__()", "super().__init__()\n        self.held = b'x' * (2500 << 20)"),
    "output_then_memory_2500_mb": native(
        '  std::string block(1 << 20, \'x\');\n'  # its output goes to its log, a file of its tmpfs
        '  for (int i = 0; i < 1500; ++i) std::fwrite(block.data(), 1, block.size(), stdout);\n'
        '  std::fflush(stdout);\n'
        '  std::string held(1000u << 20, \'y\');\n'
        '  TORCH_CHECK(false, "2,500 MB held beyond a 2,048 MB limit", held.size());').replace(
        # in ModelNew's __init__, within run_timeout_s: a trial's limit (2 s here) may end its 1.5 GB of output
        # first on a busy machine, a timeout that would leave the limit untested
        "self.w = nn.Parameter(torch.randn(8))", "self.w = nn.Parameter(torch.randn(8))\n        mod.fwd(torch.zeros(4, 8), self.w)"),
}


@pytest.mark.parametrize("name", sorted(GLUTTONS))
def test_a_sandbox_over_its_own_limit_is_the_candidates_out_of_memory(tmp_path, name):
    """The other side of the line: a candidate that outgrows its own verifier.memory_limit_mb is stopped by its
    own limits and that is its verdict, a runtime error, judged once and not made again — never taken for a
    starved sandbox, which would be judged again alone and then fail the whole stage as the machine's fault (on
    cgroup v1 with swap accounting, kernel 6.18, hitting the limit counts in neither failcnt nor memsw.failcnt:
    every candidate killed at its own limit there once looked starved, 2026-12-03)."""
    from verifier.isolation import Cgroups

    if Cgroups.detect() is None:
        pytest.skip("no usable cgroup memory controller here")
    cfg = load_config(None, ["verifier.memory_limit_mb=2048", "verifier.use_cache=false", "verifier.spare_sandboxes=0",
                             "verifier.trials=2", "verifier.timed=false"]).verifier
    glutton = candidate(name, GLUTTONS[name])
    with Judge(cfg, tmp_path / "cache") as judge:
        start = time.monotonic()
        verdict = judge.verify(problem(), glutton)
    assert verdict.category == V.runtime_error and ("MemoryError" in verdict.detail or "SIGKILL" in verdict.detail), \
        verdict.detail
    assert time.monotonic() - start < 30
    assert sandbox_processes() == []


FLOODER = good().replace("super().__init__()", '''super().__init__()
        import errno, json, os

        def flood(directory, most=100_000):  # empty files until the filesystem says no
            made = 0
            try:
                while made < most:
                    os.close(os.open(os.path.join(directory, f"f{made}"), os.O_CREAT | os.O_WRONLY, 0o600))
                    made += 1
                return [made, "no limit"]
            except OSError as exc:
                return [made, errno.errorcode.get(exc.errno, str(exc.errno))]

        data_plane = os.path.dirname(os.readlink("/proc/self/fd/1"))  # its log, in its data-plane directory
        found = {name: flood(path) + [os.statvfs(path).f_blocks * os.statvfs(path).f_frsize] for name, path in
                 (("work", os.getcwd()), ("data plane", data_plane), ("tmp", "/tmp"), ("shm", "/dev/shm"))}
        raise RuntimeError("FLOODED " + json.dumps(found))''')


def test_a_sandbox_that_floods_its_directories_with_files_runs_out_of_its_own_inodes(tmp_path):
    """Empty files cost no bytes, so no size limit stops them, only an inode count. Its working directory was on
    the host's disk and its data-plane directory in the host's /dev/shm: 3 million empty files (30 s of creat)
    there would leave the machine's /dev/shm without an inode for anyone (semaphores, the other sandboxes' files), and
    files of 8 GiB each (RLIMIT_FSIZE) in its working directory could fill the disk the warehouse is on. Every
    directory it may write to is now a tmpfs of its own: an inode count it runs out of, bytes no more than its
    memory (and charged to it)."""
    from verifier.jail import DATA_PLANE_INODES, SCRATCH_INODES, SHM_INODES

    cfg = load_config(None, ["verifier.use_cache=false", "verifier.spare_sandboxes=0", "verifier.trials=1",
                             "verifier.timed=false", "verifier.run_timeout_s=60"]).verifier
    with Judge(cfg, tmp_path / "cache") as judge:
        if not judge.isolation.startswith("namespaces"):
            pytest.skip("no namespaces here: the sandbox's directories are plain host directories")
        verdict = judge.verify(problem(), candidate("flooder", FLOODER), static_rules=False)
    assert verdict.category == V.runtime_error and "FLOODED" in verdict.detail, verdict.detail
    found = json.loads(verdict.detail.split("FLOODED ", 1)[1].splitlines()[0])
    caps = {"work": SCRATCH_INODES, "data plane": DATA_PLANE_INODES, "tmp": SCRATCH_INODES, "shm": SHM_INODES}
    for name, cap in caps.items():
        made, why, size = found[name]
        assert why == "ENOSPC" and made < cap and size <= cfg.memory_limit_mb << 20, (name, found)
    assert sandbox_processes() == []


def test_a_judgement_takes_its_problems_memory_estimate_and_one_that_outgrows_it_gets_its_whole_limit(tmp_path):
    """verifier.memory_admission: reference. Once a problem's reference has run, a judgement of it takes about
    what that reference's sandbox used (twice its peak and 3 GiB), not a sandbox's whole limit, and its
    candidate's sandbox is capped there — so small problems are judged many at once. A candidate that needs
    more (within its own limit) is killed at the cap and judged again with its whole limit: it passes, and no
    verdict depends on the estimate."""
    import threading

    from verifier.isolation import Cgroups

    if Cgroups.detect() is None:
        pytest.skip("no usable cgroup memory controller here")
    cfg = load_config(None, ["verifier.memory_limit_mb=8192", "verifier.memory_admission=reference",
                             "verifier.use_cache=false", "verifier.spare_sandboxes=0", "verifier.trials=2",
                             "verifier.timed=false"]).verifier
    with Judge(cfg, tmp_path / "cache") as judge:
        assert judge.judgement_memory_mb(problem()) is None  # nothing measured yet: the whole limit
        assert judge.verify(problem(), candidate("good", good())).category == V.passed
        estimate = judge.judgement_memory_mb(problem())
        assert estimate is not None and 3072 < estimate < 8192, estimate
        # a judgement now holds the estimate, not the limit (watched while its candidate sleeps in __init__)
        sleeper = candidate("sleeps", good().replace("super().__init__()",
                                                     "super().__init__()\n        import time; time.sleep(3)"))
        held, done = [], threading.Event()

        def watch():
            while not done.is_set():
                held.append(judge.sandboxes.memory_budget.used_mb)
                time.sleep(0.05)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            assert judge.verify(problem(), sleeper).category == V.passed
        finally:
            done.set()
            watcher.join()
        assert max(held) == estimate, (max(held), estimate)
        # one that holds 1 GiB more than the estimate, well within its own 8 GiB: killed at the cap, then judged
        # with its whole limit
        hungry = candidate("holds_more_than_estimated", good().replace(
            "super().__init__()", f"super().__init__()\n        self.held = b'x' * ({estimate + 1024} << 20)"))
        verdict = judge.verify(problem(), hungry)
        assert verdict.category == V.passed, verdict.detail
        assert judge.estimates_outgrown == 1
        # one whose write to a file of its own tmpfs fails at the cap (an error it raises, where the kernel refuses
        # the page rather than killing): the same
        writer = candidate("writes_more_than_estimated", native(
            '  static bool written = false;\n'
            '  if (!written) {\n'
            '    written = true;\n'
            '    FILE* f = std::fopen("big.bin", "wb");\n'
            '    std::string block(1 << 20, \'x\');\n'
            f'    for (int i = 0; i < {estimate + 1024}; ++i)\n'
            '      TORCH_CHECK(f && std::fwrite(block.data(), 1, block.size(), f) == block.size() && std::fflush(f) == 0,'
            ' "write failed at ", i, " MB");\n'
            '    std::fclose(f);\n'
            '    std::remove("big.bin");\n'
            '  }').replace(  # in ModelNew's __init__ (within run_timeout_s), not in a trial's 2 s
            "self.w = nn.Parameter(torch.randn(8))", "self.w = nn.Parameter(torch.randn(8))\n"
                                                     "        mod.fwd(torch.zeros(4, 8), self.w)"))
        verdict = judge.verify(problem(), writer, static_rules=False)
        assert verdict.category == V.passed, verdict.detail
        assert judge.estimates_outgrown == 2
    assert sandbox_processes() == []


def test_a_problems_memory_estimate_before_its_reference_runs_comes_from_its_measured_sizes():
    from schemas.records import Problem
    from verifier.judge import measured_reference_peak, memory_estimate_mb

    sized = Problem(id="p", source="test", reference="x", measures={"input_bytes": 1 << 30, "output_bytes": 1 << 29,
                                                     "cuda": {"input_bytes": 2 << 30, "output_bytes": 1 << 29}})
    # the larger of its recorded sizes: 2 x (2 GiB in + 0.5 GiB out) + 1 GiB of the sandbox's own
    assert measured_reference_peak(sized) == 6 << 30
    assert memory_estimate_mb(6 << 30, limit_mb=32768) == 2 * 6144 + 3072
    assert memory_estimate_mb(6 << 30, limit_mb=8192) == 8192  # never past a sandbox's own limit
    assert measured_reference_peak(Problem(id="q", source="test", reference="x")) is None  # nothing measured


def test_the_gpus_memory_is_told_by_whose_sandbox_holds_it():
    """The heartbeat's account of GPU memory (a full-size timing ran out of it beside stopped sandboxes): each
    process nvidia-smi lists is counted for the sandbox it is, or runs in (its cgroup: a compiled reference's
    workers), by kind; the rest is not the sandboxes'. Read from this process's own cgroup."""
    from verifier.sandboxes import cgroup_leaf, describe_gpu_memory, nvidia_smi_memory

    me = os.getpid()
    leaf = cgroup_leaf(me)
    assert cgroup_leaf(2**22 + 1) is None  # no such process
    boxes = [(11, (), "reference"), (12, (), "run stopped"), (13, (leaf or "no-cgroup",), "run")]
    apps = [(11, 10240), (12, 4096), (12_345_678, 2048), *([(me, 1024)] if leaf else [])]
    line = describe_gpu_memory(apps, [(0, 20480, 143360)], boxes, cgroup_leaf)
    assert line.startswith("GPU memory 20.0 of 140.0 GB used")
    assert "reference 1 (10.0 GB)" in line and "run stopped 1 (4.0 GB)" in line
    if leaf:  # a process in a sandbox's cgroup counts for it
        assert "sandboxes' 15.0 GB" in line and "run 1 (1.0 GB)" in line
    assert "1 other processes 2.0 GB" in line
    if shutil.which("nvidia-smi") is None:
        assert nvidia_smi_memory() == ([], [])  # no GPU: nothing to tell, and no error
