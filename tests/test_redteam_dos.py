"""Red team (denial of service): hostile candidates that try to make `Judge.verify` raise (and so end a
stage) rather than return a verdict charging them, cpu backend. Most write messages in the harness's own
framing into the sandbox's channel from native code (as tests/kernels.py's `forged_message` does), with
fields of the wrong count or type where the judge reads them: the judge must charge that to the candidate
(harness-tampering), never fail on it."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import torch

from schemas import load_config
from schemas.records import Candidate, Problem
from schemas.records import VerdictCategory as V
from tests.attacks import native
from tests.kernels import REFERENCE, FORGE_DECLARATION, _framed_message, candidate, framed_blob, good, problem
from tests.test_sandbox import sandbox_processes
from verifier.judge import Judge
from verifier.reference import ReferenceError

WRITE_EVERYWHERE = "for (int fd = 3; fd < 256; ++fd) { long w = write(fd, framed, sizeof framed); (void)w; }"


MAKE_OUTPUTS_FILE = (  # "/pr" "oc": the compiler joins the literals (no static rule sees the path)
    'char link[4096] = {0}; long k = readlink("/pr" "oc/self/fd/1", link, sizeof link - 1);\n'
    '  if (k > 0) { std::string p(link, k); p = p.substr(0, p.rfind(\'/\') + 1) + "outputs.bin";\n'
    '    if (FILE* f = std::fopen(p.c_str(), "wb")) std::fclose(f); }\n')
READLINK_DECLARATION = 'extern "C" long readlink(const char*, char*, unsigned long);'


def _framed(message) -> str:
    """A message (or bytes already encoded) as the C array the harness's framing would put in the channel."""
    return framed_blob(message) if isinstance(message, bytes) else _framed_message(message)


def forged_in_forward(message, before: str = "") -> str:
    """The correct kernel that first writes `message` into the channel (the judge awaits its trial's reply)."""
    framed = _framed(message)
    return native("  " + before + "  { " + framed + " " + WRITE_EVERYWHERE + " }",
                  includes=FORGE_DECLARATION + "\n" + READLINK_DECLARATION + "\n")


def forged_at_load(message) -> str:
    """The correct kernel whose shared object writes `message` into the channel when it is loaded (a static
    initialiser: the judge is serving the load, awaiting `loaded`/`ready`)."""
    framed = _framed(message)
    prelude = ("\nstatic int forged_at_load = [] { " + framed + " " + WRITE_EVERYWHERE
               + " return 0; }();\n")
    return native("", prelude=prelude, includes=FORGE_DECLARATION + "\n")


def _deeply_nested(kind: str, depth: int = 5000) -> bytes:
    """A message the channel decodes, (kind, [[[...]]]) nested `depth` deep: cheap to send (two bytes a level),
    but its repr (the judge quotes a malformed message in the verdict) exceeds Python's recursion limit."""
    import io
    import zipfile

    from verifier.reference import dumps

    template = zipfile.ZipFile(io.BytesIO(dumps((kind, ""))))
    name = kind.encode()
    pickled = b"\x80\x02X" + len(name).to_bytes(4, "little") + name + b"]" * depth + b"a" * (depth - 1) + b"\x86."
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        for info in template.infolist():
            archive.writestr(info, pickled if info.filename.endswith("data.pkl") else template.read(info))
    return out.getvalue()


def _hashing_bomb(kind: str, depth: int = 64) -> bytes:
    """A message the channel decodes, (kind, {T: 1}) with T = (T', T'), T' = (T'', T''), ... `depth` deep down to
    (): a thousand bytes (each level fetches the one below twice from the pickle's memo), but a dict key whose
    hash visits 2^depth tuples — in C, with the GIL held, while the judge decodes the message (torch.load)."""
    import io
    import zipfile

    from verifier.reference import dumps

    template = zipfile.ZipFile(io.BytesIO(dumps((kind, ""))))
    name = kind.encode()
    levels = b"()q\x00" + b"h\x00h\x00\x86q\x00" * depth  # MARK, (), memo 0; each level: (memo 0, memo 0)
    pickled = (b"\x80\x02X" + len(name).to_bytes(4, "little") + name + b"}" + levels + b"tK\x01s\x86.")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        for info in template.infolist():
            archive.writestr(info, pickled if info.filename.endswith("data.pkl") else template.read(info))
    return out.getvalue()


def _trial_out(inputs_mutated) -> tuple:
    return ("trial_out", 0, {"outputs": [], "inputs_mutated": inputs_mutated, "ops": {}, "own_calls": 1,
                             "seconds": 0.0})


FORGED = {
    # the harness's own report that *it* failed (said instead of its hello): after the hello, a forgery
    "load_harness_error": forged_at_load(("load_error", {"kind": "harness", "message": "forged", "log": ""})),
    # "died" is the judge's own word for a dead sandbox; sent by a live one, without or with a non-int code
    "load_died_without_code": forged_at_load(("died",)),
    "load_died_with_text_code": forged_at_load(("died", "x")),
    "load_garbled_without_reason": forged_at_load(("garbled",)),
    # a build request whose arguments no load_inline stub sends (a tensor where a flag goes)
    "load_build_with_tensor_flag": forged_at_load(
        ("build", ["fwd2", "int f() { return 0; }"], {"functions": ["f"], "is_python_module": torch.ones(3)})),
    # a malformed message too deeply nested to quote: RecursionError where the judge calls str() on it
    "load_deeply_nested": forged_at_load(_deeply_nested("load_error")),
    "trial_deeply_nested": forged_in_forward(_deeply_nested("trial_out")),
    # a dict key whose hash never ends (2^64 tuples, shared through the pickle's memo): decoding it froze the
    # whole judge, every thread (the hash runs in C with the GIL held), and no timeout could end it
    "trial_hashing_bomb": forged_in_forward(_hashing_bomb("trial_out")),
    "trial_error_without_text": forged_in_forward(("trial_error", 0)),
    "trial_died_without_code": forged_in_forward(("died",)),
    "trial_died_with_text_code": forged_in_forward(("died", "x")),
    # the account of which inputs the forward changed naming a plain value where an input's index goes (the
    # outputs file it names had to exist when outputs came as a file: the candidate makes it, next to its log,
    # whose path its stdout's link says; they come as a sealed memory file now, and the report is refused before
    # any). With honest outputs handed over beside it: test_a_forged_hand_over_of_a_trials_outputs_...
    "trial_inputs_mutated_a_value": forged_in_forward(_trial_out([{"value": 5}]), before=MAKE_OUTPUTS_FILE),
}


@pytest.fixture(scope="module")
def judge(tmp_path_factory):
    cfg = load_config(None, ["verifier.memory_limit_mb=2048", "verifier.use_cache=false",
                             "verifier.spare_sandboxes=0", "verifier.trials=2", "verifier.timed=false",
                             "verifier.run_timeout_s=10"]).verifier
    with Judge(cfg, tmp_path_factory.mktemp("dos") / "cache") as j:
        yield j


@pytest.mark.parametrize("name", sorted(FORGED))
def test_a_forged_channel_message_is_the_candidates_verdict_not_the_judges_exception(judge, name):
    start = time.monotonic()
    verdict = judge.verify(problem(), candidate(name, FORGED[name]))  # must not raise
    assert verdict.category in (V.illegal, V.runtime_error, V.compile_error), verdict.detail
    assert time.monotonic() - start < 60
    assert sandbox_processes() == []


def test_a_forged_death_while_being_timed_is_the_candidates_verdict(tmp_path):
    """The same in the timing handshake (`_time_candidate`): honest in its two trials, then, in the warm-up's
    first call, a ("died", "x") whose exit code death_detail compares with 0."""
    cfg = load_config(None, ["verifier.memory_limit_mb=2048", "verifier.use_cache=false",
                             "verifier.spare_sandboxes=0", "verifier.trials=2", "verifier.timing_runs=5",
                             "verifier.run_timeout_s=10"]).verifier
    source = native("  static int calls = 0;\n  if (++calls == 3) { " + _framed_message(("died", "x")) + " "
                    + WRITE_EVERYWHERE + " }", includes=FORGE_DECLARATION + "\n")
    with Judge(cfg, tmp_path / "cache") as judge:
        verdict = judge.verify(problem(), candidate("died_while_timed", source))  # must not raise
    assert verdict.category in (V.illegal, V.runtime_error), verdict.detail
    assert sandbox_processes() == []


FORGING_REFERENCE = REFERENCE.replace("def get_inputs():\n", '''def get_inputs():
    import io, os
    blob = io.BytesIO()
    torch.save(("trial_out", torch.ones(3), {}), blob)  # a tensor where the trial's number goes
    framed = len(blob.getvalue()).to_bytes(4, "big") + blob.getvalue()
    for fd in range(3, 256):
        try:
            os.write(fd, framed)
        except OSError:
            pass
''')


def test_a_reference_that_forges_its_replies_is_its_problems_failure_not_the_stages(judge):
    """References are untrusted code too (imported problems): one whose trial reply the judge cannot read (a
    tensor where the trial's number goes: comparing it raised RuntimeError) loses its problem, with the
    ReferenceError the pool reports per problem — never another exception, which would end the stage."""
    assert "def get_inputs():\n    import io, os" in FORGING_REFERENCE
    forged = Problem(id=Problem.make_id(FORGING_REFERENCE), source="test", reference=FORGING_REFERENCE,
                     name="forging_reference")
    with pytest.raises(ReferenceError, match="forging_reference"):
        judge.verify(forged, candidate("good", good()))
    assert sandbox_processes() == []


FORGING_LAYOUT = FORGING_REFERENCE.replace(
    'torch.save(("trial_out", torch.ones(3), {}), blob)  # a tensor where the trial\'s number goes',
    'torch.save(("trial_out", 0, {"inputs": [{"dtype": "float32", "shape": [1 << 40], "stride": [1], "offset": 0}], '
    '"expected": [], "forward_seconds": 0.1}), blob)  # a terabyte described, nothing written')


@pytest.mark.parametrize("forger", ["number", "layout"])
def test_a_check_that_keeps_nothing_refuses_a_forged_reply_as_its_problems_failure(tmp_path, forger):
    """An evaluation's checks after its verdicts keep nothing and move no bytes (check_reference(keep=False)): the
    judge reads the trial's descriptions alone. A reference that forges its reply — a tensor for the trial's
    number, or a terabyte of inputs described — loses its problem (ReferenceError), as in a kept check. One
    trial: the forged reply is the only one the judge reads."""
    cfg = load_config(None, ["verifier.use_cache=false", "verifier.spare_sandboxes=0", "verifier.trials=1",
                             "verifier.run_timeout_s=10"]).verifier
    source = FORGING_REFERENCE if forger == "number" else FORGING_LAYOUT
    assert source.count("torch.save(") == 1 and ("1 << 40" in source) == (forger == "layout")
    forged = Problem(id=Problem.make_id(source), source="test", reference=source, name=f"forging_{forger}")
    with Judge(cfg, tmp_path / "cache") as judge:
        with pytest.raises(ReferenceError, match=f"forging_{forger}: unreadable reference output"
                           if forger == "layout" else f"forging_{forger}"):
            judge.check_reference(forged, keep=False)
        assert not judge.reference_ran(forged.id)
    assert sandbox_processes() == []


TWO_OUTPUTS = REFERENCE.replace("return torch.sigmoid(x) * self.w", "return torch.sigmoid(x) * self.w, x * 2")
assert TWO_OUTPUTS != REFERENCE

HAND_OVER_ATTACK = '''
import gc
import multiprocessing.connection
import os
import socket
import time

import torch
import torch.nn as nn

from verifier.reference import dumps
from verifier.tensor_io import HANDED_OVER, describe_tensors, write_sealed, write_tensors

ATTACK = "{attack}"
MUTATED = {mutated}


def _channel():
    for thing in gc.get_objects():  # the harness's own end of the channel
        if isinstance(thing, multiprocessing.connection.Connection) and not thing.closed:
            return thing
    raise RuntimeError("no channel")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8))

    def forward(self, x):
        # right: what the judge expects (the second output: TWO_OUTPUTS's only)
        outputs = [torch.sigmoid(x) * self.w, x * 2]
        metas = describe_tensors(outputs)
        count = 2 if ATTACK == "overlapping" else 1
        if ATTACK == "unsealed":  # the right bytes, in a memory file it could still change once mapped
            fds = [os.memfd_create("forged")]
            metas = write_tensors(f"/proc/self/fd/{{fds[0]}}", outputs)
        elif ATTACK == "pipe":
            fds = [os.pipe()[0]]
        elif ATTACK == "short":  # sealed, but shorter than described (a mapping past its end: SIGBUS)
            fds = [write_sealed([torch.ones(1)])[0]]
        elif ATTACK == "two":
            fds = [write_sealed(outputs)[0], write_sealed(outputs)[0]]
        elif ATTACK == "overlapping":  # both outputs over the same bytes
            fd, metas = write_sealed(outputs)
            fds, metas = [fd], [metas[0], {{**metas[1], "offset": metas[0]["offset"]}}]
        elif ATTACK == "bare":  # the byte without a descriptor
            fds = []
        elif ATTACK == "bomb":  # the right outputs, described with a dtype whose text is 2^64 lists long: a list
            fds = [write_sealed(outputs[:1])[0]]  # of itself, twice, 64 deep (the pickle's memo keeps it tiny)
            bomb = []
            for _ in range(64):
                bomb = [bomb, bomb]
            metas = [{{**metas[0], "dtype": bomb}}]
        else:  # the right outputs, rightly handed over, beside a malformed account of which inputs it changed
            fds = [write_sealed(outputs[:1])[0]]
        channel = _channel()
        channel.send_bytes(dumps(("trial_out", 0, {{"outputs": metas[:count], "inputs_mutated": MUTATED, "ops": {{}},
                                                   "own_calls": 1, "seconds": 0.001}})))
        with socket.socket(fileno=os.dup(channel.fileno())) as sock:
            socket.send_fds(sock, [HANDED_OVER], fds)
        time.sleep(60)  # the harness's own report never comes
'''


def _memory_files_held() -> list[str]:
    """This process's descriptors of memory files (a handed-over one the judge failed to close)."""
    fds = Path("/proc/self/fd")
    links = []
    for fd in fds.iterdir():
        try:
            links.append(os.readlink(fd))
        except OSError:
            pass
    return [link for link in links if link.startswith("/memfd:")]


# which inputs the forward changed, told as anything but the ascending indices of its input tensors (the
# problem's one): a value where an index goes, a bool for an int, an input it has not, one twice, a negative one
MALFORMED_ACCOUNTS = {"mutated_a_value": [{"value": 5}], "mutated_a_bool": [True], "mutated_out_of_range": [1],
                      "mutated_twice": [0, 0], "mutated_negative": [-1]}


@pytest.mark.parametrize("attack", ["unsealed", "pipe", "short", "two", "overlapping", "bare", "bomb",
                                    *MALFORMED_ACCOUNTS])
def test_a_forged_hand_over_of_a_trials_outputs_is_harness_tampering(judge, attack):
    """A trial's outputs come as a sealed memory file the judge maps without a copy (`map_sealed`). A candidate
    that forges the report and hands over its own descriptor — a memory file it can still write (it would change
    the bytes after the judge checked them), a pipe, a sealed file shorter than described (a SIGBUS in the
    judge), two files at once, tensors over the same bytes, or no descriptor at all — or that hands over the right
    outputs beside a malformed account of which inputs its forward changed, or describes them with a field whose
    text never ends (2^64 lists: the judge's str() of a malformed description took all its memory), is charged
    with harness-tampering at once: the judge neither raises nor keeps any descriptor it was sent."""
    assert not _memory_files_held()
    started = time.monotonic()
    source = HAND_OVER_ATTACK.format(attack=attack, mutated=MALFORMED_ACCOUNTS.get(attack, []))
    # two outputs over the same bytes need a problem of two outputs (one of another layout is never mapped)
    target = Problem(id=Problem.make_id(TWO_OUTPUTS), source="test", reference=TWO_OUTPUTS, name="two_outputs") \
        if attack == "overlapping" else problem()
    forger = Candidate(id=Candidate.make_id(target.id, source, "cpu"), problem_id=target.id, source=source,
                       origin=f"hand_over_{attack}")
    verdict = judge.verify(target, forger, static_rules=False)
    assert verdict.category == V.illegal and verdict.rule == "harness-tampering", verdict.detail
    assert time.monotonic() - started < 20  # not the hand-over's 30 s wait: refused as soon as it is read
    assert not _memory_files_held()
    assert sandbox_processes() == []


def test_an_honest_trials_outputs_are_mapped_and_no_descriptor_stays(judge):
    """The honest harness's hand-over: a correct kernel passes, and nothing of its memory files stays open in
    the judge."""
    verdict = judge.verify(problem(), candidate("good", good()))
    assert verdict.category == V.passed, verdict.detail
    assert not _memory_files_held()


HANDING_OVER_REFERENCE = REFERENCE.replace("def get_inputs():\n", '''def get_inputs():
    import gc, multiprocessing.connection, os, socket
    from verifier.reference import dumps
    from verifier.tensor_io import HANDED_OVER, write_tensors
    tensors = [torch.randn(4, 8), torch.randn(4, 8)]
    memory_file = os.memfd_create("forged")  # never sealed: it could change after the judge checked it
    metas = write_tensors(f"/proc/self/fd/{memory_file}", tensors)
    channel = next(c for c in gc.get_objects() if isinstance(c, multiprocessing.connection.Connection))
    channel.send_bytes(dumps(("trial_out", 0, {"inputs": metas[:1], "expected": metas[1:], "forward_seconds": 0.1,
                                               "scales": [None], "phases": {}})))
    with socket.socket(fileno=os.dup(channel.fileno())) as sock:
        socket.send_fds(sock, [HANDED_OVER], [memory_file])
''')


def test_a_reference_that_hands_over_an_unsealed_memory_file_loses_its_problem(tmp_path):
    """A reference's trial comes as a sealed memory file the judge maps (no copy), and references are untrusted
    code too: one that forges its report and hands over a memory file it can still write is refused
    (ReferenceError: its problem is left out), never mapped, never an exception that ends the stage."""
    cfg = load_config(None, ["verifier.use_cache=false", "verifier.spare_sandboxes=0", "verifier.trials=1",
                             "verifier.run_timeout_s=10"]).verifier
    assert HANDING_OVER_REFERENCE.count("os.memfd_create") == 1
    forged = Problem(id=Problem.make_id(HANDING_OVER_REFERENCE), source="test", reference=HANDING_OVER_REFERENCE,
                     name="handing_over_unsealed")
    with Judge(cfg, tmp_path / "cache") as judge:
        with pytest.raises(ReferenceError, match="handing_over_unsealed: unreadable reference output .*not sealed"):
            judge.check_reference(forged)
    assert not _memory_files_held()
    assert sandbox_processes() == []


SHUT_CHANNEL = ("import gc, os, socket, multiprocessing.connection\n"
                "        channel = next(o for o in gc.get_objects() if isinstance(o, multiprocessing.connection.Connection))\n"
                "        sock = socket.socket(fileno=os.dup(channel.fileno()))\n"
                "        sock.shutdown(socket.SHUT_RD)  # the judge's next write to the channel fails with EPIPE\n"
                "        sock.close()\n")


@pytest.mark.parametrize("whose", ["candidate", "reference"])
def test_a_sandbox_that_stops_reading_its_channel_gets_a_verdict_not_a_broken_pipe(tmp_path, whose):
    """A sandbox's code can shut its end of the channel for reading: the judge's next message (the next trial)
    then fails with EPIPE, which ended `Judge.verify` — and the stage — with BrokenPipeError. Now the judge's
    writes raise nothing and its next read says what happened: the candidate's own failing verdict, or the
    reference's failure (its problem left out)."""
    cfg = load_config(None, ["verifier.use_cache=false", "verifier.spare_sandboxes=0", "verifier.trials=3",
                             "verifier.run_timeout_s=10", "verifier.timed=false"]).verifier
    with Judge(cfg, tmp_path / "cache") as judge:
        if whose == "candidate":
            from tests.kernels import with_forward

            verdict = judge.verify(problem(), candidate("shut", with_forward(SHUT_CHANNEL + "        return "
                                                                             "mod.fwd(x, self.w)")),
                                   static_rules=False)
            assert verdict.category in (V.runtime_error, V.illegal) and "trial 1" in verdict.detail, verdict.detail
        else:
            source = REFERENCE.replace("        return torch.sigmoid", "        " + SHUT_CHANNEL
                                       + "        return torch.sigmoid")
            shut = Problem(id=Problem.make_id(source), source="test", reference=source, name="shut_reference")
            with pytest.raises(ReferenceError, match="shut_reference"):
                judge.check_reference(shut)
    assert sandbox_processes() == []


GROWING_TIMING_INPUTS = REFERENCE.replace(  # its outputs stay the trials' size: only the inputs grow
    "return torch.sigmoid(x) * self.w", "return torch.sigmoid(x[:4]) * self.w").replace(
    "def get_inputs():\n    return [torch.randn(4, 8)]", '''def get_inputs():
    import sys
    frame, timing = sys._getframe(1), False
    while frame is not None:  # the harness's own frames say which message it serves
        timing = timing or frame.f_locals.get("kind") == "timing_set"
        frame = frame.f_back
    return [torch.randn(1 << 20, 8) if timing else torch.randn(4, 8)]''')


def test_a_reference_whose_timing_inputs_outgrow_its_trials_loses_its_problem(tmp_path):
    """A timing set comes from the same get_inputs as the trials, and the judge writes each to its own disk:
    a reference that tells the two apart (here by reading the harness's frames) and makes its timing inputs
    far larger than its trials' (32 MiB against 128 bytes, its outputs the same; at full size, gigabytes a set,
    each accepted up to verifier.memory_limit_mb) could fill the
    judge's disk and end the stage (JudgeDiskFull). Each set is bounded by the trials' own inputs: beyond, the
    reference's failure (ReferenceError: its problem is left out), with no set of it kept."""
    cfg = load_config(None, ["verifier.use_cache=false", "verifier.spare_sandboxes=0", "verifier.trials=2",
                             "verifier.run_timeout_s=20", "verifier.timed=true",
                             "verifier.compare_torch_compile=false"]).verifier
    assert "randn(1 << 20, 8) if timing" in GROWING_TIMING_INPUTS and "sigmoid(x[:4])" in GROWING_TIMING_INPUTS
    growing = Problem(id=Problem.make_id(GROWING_TIMING_INPUTS), source="test", reference=GROWING_TIMING_INPUTS,
                      name="growing_timing_inputs")
    source = good()
    entrant = Candidate(id=Candidate.make_id(growing.id, source, "cpu"), problem_id=growing.id, source=source,
                        origin="good")
    with Judge(cfg, tmp_path / "cache") as judge:
        with pytest.raises(ReferenceError, match="growing_timing_inputs: unreadable timing inputs .*at most"):
            judge.verify(growing, entrant)
        # the same judge times an honest problem as before: the bound is the hostile reference's alone
        verdict = judge.verify(problem(), candidate("good", good()))
        assert verdict.category == V.passed and verdict.speedup_vs_eager is not None, verdict.detail
    leftovers = [p for p in (tmp_path / "cache").rglob("*") if p.is_file() and p.stat().st_size > 1 << 20]
    assert leftovers == [], leftovers
    assert sandbox_processes() == []
