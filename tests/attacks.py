"""Hostile candidates against the harness itself (cpu backend), one or more per class of issue 9:
the machine, the judge, the reward. Each names what it tries; `test_sandbox.py` judges it and then
checks the machine.

Two layers are attacked. `static` cases use a mechanism the static rules name (verifier/legality.py)
and must end `illegal` before anything runs. `runtime` cases hide the mechanism from the rules (a
function pointer, a path assembled by the compiler) and must be stopped by the OS walls of the sandbox
(verifier/jail.py): they end `runtime_error` because the kernel reports that its attack failed. Cases
marked `bypass_static` are judged with the static rules switched off, to test the walls alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from schemas.records import VerdictCategory as V
from tests.kernels import CORRECT_BODY, good, with_forward

@dataclass(frozen=True)
class Host:
    """What the attacks aim at on this machine (filled in by the test)."""

    secret_file: str  # a file outside the sandbox holding SECRET_TEXT
    cache_dir: str  # the verifier's cache (verdicts, builds, the HMAC secret)
    port: int  # a TCP listener on loopback
    judge_pid: int
    forkserver_pid: int
    marker_dir: str  # where a successful attack would leave files


SECRET_TEXT = "KD-TOPSECRET-0451"


@dataclass(frozen=True)
class Attack:
    source: str
    category: V | tuple[V, ...]  # what it must end as (any of them)
    rule: str | None = None
    bypass_static: bool = False  # judge with the static rules off: the OS walls alone must hold
    markers: tuple[str, ...] = ()  # files that exist only if the attack worked
    secrets: tuple[str, ...] = (SECRET_TEXT,)  # text that must never reach the feedback
    notes: str = ""
    extra: dict = field(default_factory=dict)


def native(code: str, prelude: str = "", includes: str = "") -> str:
    """The correct kernel with `code` run at the top of fwd (C++); `prelude` at namespace scope."""
    src = good(CORRECT_BODY)
    src = src.replace("#include <cmath>", "#include <cmath>\n#include <cstdio>\n#include <cstdlib>\n#include <cstring>\n"
                      "#include <string>\n" + includes + prelude)
    return src.replace("  auto xc = x.contiguous();", code + "\n  auto xc = x.contiguous();")


def refused_unless(condition: str, what: str, evidence: str = "") -> str:
    """C++ that fails the trial either way, saying whether the attack worked (the test checks the machine
    too); `evidence`, a C++ expression, goes into the message when it did."""
    shown = f", {evidence}" if evidence else ""
    return (f"if ({condition}) {{ TORCH_CHECK(false, \"ATTACK SUCCEEDED: {what} \"{shown}); }}\n"
            f"  TORCH_CHECK(false, \"attack refused: {what}\");")


def attacks(host: Host) -> dict[str, Attack]:
    m = host.marker_dir
    read_file = ("std::string got; if (FILE* f = fopen(PATH, \"rb\")) { char buf[256] = {0}; "
                 "size_t k = fread(buf, 1, sizeof buf - 1, f); got.assign(buf, k); fclose(f); }")
    cases = {
        # -- the machine ---------------------------------------------------------------------------
        "read_host_file": Attack(native(read_file.replace("PATH", f'"{host.secret_file}"') + "\n  "
                                        + refused_unless("!got.empty()", "read a host file", "got")),
                                 V.runtime_error),
        "read_cache_secret": Attack(native(read_file.replace("PATH", f'"{host.cache_dir}/secret"') + "\n  "
                                           + refused_unless("!got.empty()", "read the cache secret")),
                                    V.runtime_error),
        "write_outside": Attack(native(
            f'FILE* fa = fopen("{m}/written", "w"); FILE* fb = fopen("{host.cache_dir}/verdicts/forged.json", "w");'
            f' FILE* fc = fopen("/root/.cache/kd-attack", "w");\n  '
            + refused_unless("fa || fb || fc", "wrote outside the scratch directory")),
            V.runtime_error, markers=(f"{m}/written", f"{host.cache_dir}/verdicts/forged.json", "/root/.cache/kd-attack")),
        "spawn_through_pointer": Attack(native(
            f'int (*run)(const char*) = std::system; int rc = run("touch {m}/spawned");\n  '
            + refused_unless("rc == 0", "spawned a shell")), V.illegal, "system-api",
            markers=(f"{m}/spawned",),
            notes="system among its imports is refused when built (harness 12); the Python walls_subprocess and "
                  "walls_fork_daemon attacks reach the OS walls that refused it before"),
        "thread_outliving_the_forward": Attack(native(  # it would keep the device or the CPUs busy while others
            # are timed (the eager baseline); caught: the thread was not started
            "bool started = false;\n  try { std::thread([] { for (volatile long i = 0; ; ++i) {} }).detach(); "
            "started = true; } catch (const std::system_error&) {}\n  "
            + refused_unless("started", "started a thread"), includes="#include <thread>\n#include <system_error>\n"),
            V.runtime_error),
        "socket_through_pointer": Attack(native(
            "int (*make)(int, int, int) = socket; int fd = make(2, 1, 0);\n  "
            + refused_unless("fd >= 0", "opened a socket"), includes="extern \"C\" int socket/**/(int, int, int);\n"),
            V.runtime_error),
        "kill_everything": Attack(native(
            "int (*k)(int, int) = kill; int ka = k(-1, 9); int kb = k(" + str(host.judge_pid) + ", 9); "
            "int kc = k(" + str(host.forkserver_pid) + ", 9);\n  "
            + refused_unless("ka == 0 || kb == 0 || kc == 0", "signalled another process"),
            includes="extern \"C\" int kill/**/(int, int);\n"), V.runtime_error),
        "judge_memory_assembled_path": Attack(native(
            # the compiler joins the literals: no "/proc" in the source text
            f'FILE* f = fopen("/pr" "oc/{host.judge_pid}/mem", "r+b");\n  '
            + refused_unless("f != nullptr", "opened the judge's memory")),
            V.runtime_error),
        # the same mechanisms, named: the static rules end them before anything runs
        "system_named": Attack(native(f'std::system("touch {m}/named");'), V.illegal, "system-api",
                               markers=(f"{m}/named",)),
        "fork_named": Attack(native("if (fork() == 0) { while (true) {} }", includes="#include <unistd.h>\n"),
                             V.illegal, "system-api"),
        "proc_named": Attack(native('FILE* f = fopen("/proc/self/mem", "r+b"); (void)f;'), V.illegal, "system-api"),
        "python_c_api": Attack(native('PyRun_SimpleString("import os; os.system(\\"id\\")");',
                                      includes='extern "C" int PyRun_SimpleString(const char*);\n'),
                               V.illegal, "interpreter-api"),
        "dlsym_libc": Attack(native('void* f = dlsym((void*)0, "system"); (void)f;',
                                           includes="#include <dlfcn.h>\n"), V.illegal, "system-api"),
        "x86_timestamp_asm": Attack(native('unsigned lo, hi; asm volatile("rdtsc" : "=a"(lo), "=d"(hi));'),
                                    V.illegal, "inline-asm"),
        # -- the reward ----------------------------------------------------------------------------
        "aten_assembled_at_run_time": Attack(good().replace(
            'mod = load_inline(name="fwd", cpp_sources=src, functions=["fwd"])',
            'src = src.replace("auto out = torch::empty_like(xc);", "auto out = at::" + "cpu::sigmoid(xc) * w; '
            'return out;")\nmod = load_inline(name="fwd", cpp_sources=src, functions=["fwd"])'),
            V.illegal, "torch-compute"),
        "fallback_forced_by_flags": Attack(good().replace(
            'mod = load_inline(name="fwd", cpp_sources=src, functions=["fwd"])',
            'src = src.replace("auto out = torch::empty_like(xc);", "auto out = at::" + "native::sigmoid(xc); '
            'return out;")\nmod = load_inline(name="fwd", cpp_sources=src, functions=["fwd"], extra_ldflags=["-lm"])'),
            V.illegal, "torch-compute"),
        "compiler_plugin_flag": Attack(good().replace(
            'functions=["fwd"])', f'functions=["fwd"], extra_cflags=["-fplugin={m}/plugin.so"])'),
            V.illegal, "build-flags"),
        "linker_library_flag": Attack(good().replace('functions=["fwd"])', 'functions=["fwd"], extra_ldflags=["-lblas"])'),
                                      V.illegal, "build-flags"),
        "include_outside": Attack(good().replace('functions=["fwd"])',
                                                 'functions=["fwd"], extra_include_paths=["/etc"])'),
                                  V.illegal, "build-flags"),
        "recorder_via_sys_modules": Attack(with_forward(
            "import os\n        os.sys.modules['verifier.legality'].forbidden_ops = lambda ops: []\n"
            "        return torch.sigmoid(x) * self.w"), V.illegal, "patching"),
        "dispatch_mode_off": Attack(with_forward(
            "with torch._C._DisableTorchDispatch():\n            return torch.sigmoid(x) * self.w"),
            V.illegal, "torch-internals"),
        "private_dispatch_module": Attack(good().replace(
            "import torch\n", "import torch\nfrom torch.utils._python_dispatch import _disable_current_modes\n", 1),
            V.illegal, "torch-internals"),
        "format_string_escape": Attack(with_forward(
            "g = '{0.__globals__}'.format(self.forward)\n        return mod.fwd(x, self.w)"),
            V.illegal, "dynamic-code"),
        "own_library_from_scratch": Attack(with_forward(
            "torch.ops.load_library('/tmp/own.so')\n        return mod.fwd(x, self.w)"), V.illegal, "dynamic-code"),
        # -- the OS walls alone (static rules off): the candidate's Python does the attacking ----------
        "walls_fork_daemon": Attack(with_forward(
            "import os\n        pid = os.fork()\n        if pid == 0:\n            os.setsid()\n"
            f"            open('{m}/daemon', 'w').write('alive')\n            while True: pass\n"
            "        return mod.fwd(x, self.w)"), V.runtime_error, bypass_static=True, markers=(f"{m}/daemon",)),
        "walls_subprocess": Attack(with_forward(
            f"import subprocess\n        subprocess.run(['touch', '{m}/subprocess'])\n        return mod.fwd(x, self.w)"),
            V.runtime_error, bypass_static=True, markers=(f"{m}/subprocess",)),
        "walls_connect_loopback": Attack(with_forward(
            f"import socket\n        socket.create_connection(('127.0.0.1', {host.port}), timeout=1)\n"
            "        return mod.fwd(x, self.w)"), V.runtime_error, bypass_static=True),
        "walls_read_host_files": Attack(with_forward(
            f"raise RuntimeError('leak: ' + open('{host.secret_file}').read())"),
            V.runtime_error, bypass_static=True),
        "walls_read_cache_secret": Attack(with_forward(
            f"raise RuntimeError('leak: ' + open('{host.cache_dir}/secret', 'rb').read().hex())"),
            V.runtime_error, bypass_static=True),
        "walls_write_home_cache": Attack(with_forward(
            "import os\n        os.makedirs('/root/.cache', exist_ok=True)\n"
            "        open('/root/.cache/kd-attack', 'w').write('x')\n        return mod.fwd(x, self.w)"),
            V.runtime_error, bypass_static=True, markers=("/root/.cache/kd-attack",)),
        "walls_kill_judge_and_forkserver": Attack(with_forward(
            f"import os\n        for pid in ({host.judge_pid}, {host.forkserver_pid}, -1):\n"
            "            try:\n                os.kill(pid, 9)\n            except OSError:\n                pass\n"
            "        raise RuntimeError('no signal reached anyone')"), V.runtime_error, bypass_static=True),
        "walls_judge_memory": Attack(with_forward(
            f"open('/proc/{host.judge_pid}/mem', 'r+b')\n        return mod.fwd(x, self.w)"),
            V.runtime_error, bypass_static=True),
        "walls_load_own_library": Attack(with_forward(
            "import shutil, glob, ctypes\n        lib = glob.glob('/usr/lib/x86_64-linux-gnu/libm.so.6')[0]\n"
            "        shutil.copy(lib, 'own.so')\n        ctypes.CDLL('./own.so')\n        return mod.fwd(x, self.w)"),
            V.runtime_error, bypass_static=True, notes="writable directories are noexec"),
        "walls_patch_timer": Attack(with_forward(
            "import sys\n        sys.modules['verifier.timing'].perf_counter = lambda: 0.0\n"
            "        t = torch.empty(1)\n        for _ in range(200000): pass\n"
            "        return mod.fwd(x, self.w)"), V.passed, bypass_static=True,
            notes="passes, but the judge's clock overrules the forged timing"),
        # -- the pipeline's own faults ---------------------------------------------------------------
        "sleep_in_init": Attack(good().replace("super().__init__()", "super().__init__()\n        import time\n"
                                               "        time.sleep(60)"), V.timeout),
        # output floods the sandbox's own tmpfs log: its memory limit or its time limit ends it
        "flood_output": Attack(with_forward("while True:\n            print('x' * 65536)"),
                               (V.timeout, V.runtime_error)),
    }
    return cases
