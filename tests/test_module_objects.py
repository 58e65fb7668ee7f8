"""check_module_objects over real object files (g++ -ffunction-sections, as the judge builds torch's own load_inline):
what the candidate's code reaches from its bound functions, its initializers and finalizers, through each of its
files and through what the judge's glue calls, is judged; what only the judge's glue imports is not the candidate's."""
import shutil
import subprocess

import pytest

from tests.kernels import MANY_SECTIONS
from verifier.fastbuild import _macro_line
from verifier.legality import check_artifact_symbols, check_module_objects

pytestmark = pytest.mark.skipif(shutil.which("c++") is None, reason="needs a C++ compiler")

SYSCALL = '#include <unistd.h>\n#include <sys/syscall.h>\n'


def objects(tmp_path, **sources: str) -> dict[str, bytes]:
    """{file.o: bytes} of each C++ source, compiled as the judge compiles a fallback's files."""
    built = {}
    for name, text in sources.items():
        (tmp_path / f"{name}.cpp").write_text(text)
        subprocess.run(["c++", "-c", "-O2", "-fPIC", "-ffunction-sections", str(tmp_path / f"{name}.cpp"),
                        "-o", str(tmp_path / f"{name}.o")], check=True, capture_output=True)
        built[f"{name}.o"] = (tmp_path / f"{name}.o").read_bytes()
    return built


def test_code_reached_in_another_of_the_candidates_files_is_judged(tmp_path):
    """The bound function in one file (cuda.cu, say) calls a helper in another (main.cpp), which makes a system
    call: before, only each file's own roots were followed, and the helper's file had none."""
    built = objects(tmp_path, main=SYSCALL + "long helper(long n) { return syscall(SYS_getpid) + n; }\n",
                    cuda="long helper(long n);\nlong fwd(long n) { return helper(n) * 2; }\n")
    found = check_module_objects(built, {"fwd"})
    assert [(v.rule, "main.o" in v.message) for v in found] == [("system-api", True)], found
    honest = objects(tmp_path, main="long helper(long n) { return n + 1; }\n",
                     cuda="long helper(long n);\nlong fwd(long n) { return helper(n) * 2; }\n")
    assert check_module_objects(honest, {"fwd"}) == []


def test_the_interpreter_reached_through_another_file_is_refused(tmp_path):
    built = objects(tmp_path, main='extern "C" void* PyEval_GetBuiltins();\nvoid* helper() { return PyEval_GetBuiltins(); }\n',
                    cuda="void* helper();\nvoid* fwd() { return helper(); }\n")
    assert [v.rule for v in check_module_objects(built, {"fwd"})] == ["interpreter-api"]


def test_a_finalizer_is_code_that_runs(tmp_path):
    built = objects(tmp_path, main=SYSCALL + "__attribute__((destructor)) static void bye() { syscall(SYS_getpid); }\n"
                                             "long fwd(long n) { return n; }\n")
    assert [v.rule for v in check_module_objects(built, {"fwd"})] == ["system-api"]


def test_what_only_the_judges_glue_imports_is_not_the_candidates(tmp_path):
    """torch's headers, built by a box's toolchain, may import what a kernel may not (an H100 run: an honest
    fallback build refused for `syscall` in its shared object); the glue is the judge's code."""
    built = objects(tmp_path, main="long fwd(long n) { return n + 1; }\n",
                    glue=SYSCALL + "long fwd(long n);\nlong bind_it(long n) { return fwd(n) + syscall(SYS_getpid); }\n")
    glue = built.pop("glue.o")
    assert check_module_objects(built, {"fwd"}, glue) == []
    subprocess.run(["c++", "-shared", str(tmp_path / "main.o"), str(tmp_path / "glue.o"), "-o",
                    str(tmp_path / "module.so")], check=True, capture_output=True)
    module = (tmp_path / "module.so").read_bytes()
    assert [v.rule for v in check_artifact_symbols(module, python_module=True)] == ["system-api"]
    assert check_artifact_symbols(module, python_module=True, native=False) == []


def test_what_the_glue_calls_or_the_candidate_takes_over_from_it_is_the_candidates(tmp_path):
    """The glue's calls into a candidate's file are roots, and so is a strong definition of the candidate's that
    takes the place of the glue's own weak instance of a name (the linker keeps the strong one)."""
    glue_src = ("long fwd(long n);\nlong kd_step(long n);\n"
                "template <typename T> __attribute__((noinline)) T kd_twice(T n) { return n * 2; }\n"
                "long bind_it(long n) { return kd_twice(fwd(n)) + kd_step(n); }\n")
    calls = objects(tmp_path, main=SYSCALL + "long fwd(long n) { return n; }\n"
                                            "long kd_step(long n) { return syscall(SYS_getpid) + n; }\n",
                    glue=glue_src)
    glue = calls.pop("glue.o")
    assert [v.rule for v in check_module_objects(calls, {"fwd"}, glue)] == ["system-api"]
    takes_over = objects(tmp_path, main=SYSCALL + "long fwd(long n) { return n; }\nlong kd_step(long n) { return n; }\n"
                                                 "template <typename T> T kd_twice(T n);\n"
                                                 "template <> long kd_twice<long>(long n) { return syscall(SYS_getpid); }\n",
                         glue=glue_src)
    glue = takes_over.pop("glue.o")
    assert [v.rule for v in check_module_objects(takes_over, {"fwd"}, glue)] == ["system-api"]


def test_a_candidates_macros_are_its_own_files_lines():
    assert _macro_line("-DBLOCK=256") == "#define BLOCK 256\n"
    assert _macro_line("-DUSE_FAST") == "#define USE_FAST 1\n"
    assert _macro_line("-DEMPTY=") == "#define EMPTY \n"
    assert _macro_line("-UNDEBUG") == "#undef NDEBUG\n"


# -- red team (session 24): what the analysis followed, and what the linker and the loader do besides ------------------

def test_an_object_of_more_than_65280_sections_is_read_whole(tmp_path):
    """An object of more than 65,280 sections (ELF's extended numbering: e_shnum 0, the count in section 0's
    sh_size) read as one of no sections at all: no symbol, no relocation, nothing reached — a bound function that
    makes a system call (or calls BLAS, or the interpreter) passed as having reached nothing."""
    built = objects(tmp_path, main=MANY_SECTIONS + SYSCALL + "long fwd(long n) { return syscall(SYS_getpid) + n; }\n")
    assert [v.rule for v in check_module_objects(built, {"fwd"})] == ["system-api"]
    honest = objects(tmp_path, main=MANY_SECTIONS + "long fwd(long n) { return n + 1; }\n")
    assert check_module_objects(honest, {"fwd"}) == []


def test_an_ifunc_resolver_is_code_the_loader_runs(tmp_path):
    """An ifunc's resolver runs when the module is loaded (an R_X86_64_IRELATIVE relocation, here made by a table of
    data that holds the ifunc's address): code no bound function, initializer or finalizer reaches."""
    resolver = ("static long kd_honest(long n) { return n + 1; }\n"
                'extern "C" void* kd_resolve() { BODY return (void*)&kd_honest; }\n'
                'static long kd_pick(long) __attribute__((ifunc("kd_resolve")));\n'
                "long (*volatile kd_table[])(long) = {kd_pick};\nlong fwd(long n) { return n * 2; }\n")
    built = objects(tmp_path, main=SYSCALL + resolver.replace("BODY", "syscall(SYS_getpid);"))
    assert [v.rule for v in check_module_objects(built, {"fwd"})] == ["system-api"]
    honest = objects(tmp_path, main=resolver.replace("BODY", ""))
    assert check_module_objects(honest, {"fwd"}) == []


def test_a_versioned_reference_is_read_by_its_name(tmp_path):
    """`.symver kd_sc, syscall@GLIBC_2.2.5` (the assembler directive assembled by a macro): the object's undefined
    symbol is `syscall@GLIBC_2.2.5`, which no rule over names knew; the linker makes it libc's syscall (likewise
    dlsym@GLIBC_2.34, then anything by name)."""
    source = ('#define KD_ID(x) x\nKD_ID(__asm__)(".symver kd_sc, syscall@GLIBC_2.2.5");\n'
              'extern "C" long kd_sc(long, ...);\nlong fwd(long n) { return kd_sc(39) + n; }\n')
    built = objects(tmp_path, main=source)
    assert [v.rule for v in check_module_objects(built, {"fwd"})] == ["system-api"]


def test_a_definition_the_linker_takes_from_another_file_is_followed(tmp_path):
    """The bound function calls a weak helper of its own file, followed there; another of the candidate's files
    defines the same name strongly, and the linker keeps that one. Likewise an inline function (a COMDAT group) in two
    files with different bodies: the linker keeps the first file's, never reached from the other's bound function."""
    weak = objects(tmp_path, main="__attribute__((weak)) long helper(long n) { return n; }\n"
                                   "long fwd(long n) { return helper(n) * 2; }\n",
                   cuda=SYSCALL + "long helper(long n) { return syscall(SYS_getpid) + n; }\n")
    assert [v.rule for v in check_module_objects(weak, {"fwd"})] == ["system-api"]
    comdat = objects(tmp_path, main=SYSCALL + "__attribute__((noinline)) inline long helper(long n) { "
                                              "return syscall(SYS_getpid) + n; }\nlong keep(long n) { return helper(n); }\n",
                     cuda="__attribute__((noinline)) inline long helper(long n) { return n; }\n"
                          "long fwd(long n) { return helper(n) * 2; }\n")
    assert [v.rule for v in check_module_objects(comdat, {"fwd"})] == ["system-api"]
    honest = objects(tmp_path, main="__attribute__((noinline)) inline long helper(long n) { return n; }\n"
                                    "long keep(long n) { return helper(n); }\n",
                     cuda="__attribute__((noinline)) inline long helper(long n) { return n; }\n"
                          "long fwd(long n) { return helper(n) * 2; }\n")
    assert check_module_objects(honest, {"fwd"}) == []


# The judge's glue instantiates pybind11's inline functions (in a real glue.o: pybind11::detail::accessor<str_attr>::
# get_cache, the getattr behind `.attr("x")`; pybind11::str::str(const char*); get_cached_module...), each a weak
# definition in a COMDAT group, and the glue is linked first: its instance is the one the module keeps.
GLUE_WITH_GETATTR = ('extern "C" void* PyObject_GetAttrString(void*, const char*);\n'
                     "long fwd(long n);\n"
                     '__attribute__((noinline)) inline void* kd_getattr(void* o, const char* k) { '
                     "return PyObject_GetAttrString(o, k); }\n"
                     'long bind_it(long n) { return fwd(n) + (kd_getattr(nullptr, "x") != nullptr); }\n')


def test_code_of_the_glue_that_the_candidate_calls_is_the_candidates(tmp_path):
    """The candidate calls the glue's instance of an inline function by its name, declared only (its own file defines
    none): the call reached an undefined name that is no rule's, and the glue's code behind it, which reaches the
    interpreter, was never read. Or it defines its own instance of that name with another body (a -D macro line
    before torch/extension.h changes what pybind11's headers compile to in its file alone): its instance was read,
    the glue's runs."""
    declared = objects(tmp_path, main='void* kd_getattr(void* o, const char* k);\n'
                                      'long fwd(long n) { return n + (kd_getattr((void*)n, "__class__") != nullptr); }\n',
                       glue=GLUE_WITH_GETATTR)
    glue = declared.pop("glue.o")
    assert [v.rule for v in check_module_objects(declared, {"fwd"}, glue)] == ["interpreter-api"]
    own_copy = objects(tmp_path, main='__attribute__((noinline, noipa)) inline void* kd_getattr(void* o, const char* k) { '
                                      "return (char*)o + k[0]; }\n"
                                      'long fwd(long n) { return n + (kd_getattr((void*)n, "__class__") != nullptr); }\n',
                       glue=GLUE_WITH_GETATTR)
    glue = own_copy.pop("glue.o")
    assert [v.rule for v in check_module_objects(own_copy, {"fwd"}, glue)] == ["interpreter-api"]
    honest = objects(tmp_path, main="long fwd(long n) { return n + 1; }\n", glue=GLUE_WITH_GETATTR)
    glue = honest.pop("glue.o")
    assert check_module_objects(honest, {"fwd"}, glue) == []


def test_torchs_python_bindings_are_the_interpreter(tmp_path):
    """libtorch_python's exports are torch's Python glue: THPVariable_Wrap makes a tensor's Python object (and every
    object from there, read as memory), THPVariableClass is torch.Tensor, pybind11's type_caster<at::Tensor>::cast is
    `pybind11::cast(x)`, torch::handle_torch_function_no_python_arg_parser calls Python objects. None is a name of the
    C API's (Py...), so code of the candidate's that called one was read as reaching no interpreter."""
    wraps = objects(tmp_path, main="namespace at { struct TensorBase; }\nvoid* THPVariable_Wrap(const at::TensorBase&);\n"
                                   "void* fwd(const at::TensorBase& x) { return THPVariable_Wrap(x); }\n")
    assert [v.rule for v in check_module_objects(wraps, {"fwd"})] == ["interpreter-api"]
    tensor_class = objects(tmp_path, main='extern "C" void* THPVariableClass;\nvoid* fwd() { return THPVariableClass; }\n')
    assert [v.rule for v in check_module_objects(tensor_class, {"fwd"})] == ["interpreter-api"]


def test_a_fallback_build_stored_under_older_rules_is_judged_again(tmp_path, monkeypatch):
    """A fallback's shared object is stored only once check_module_objects passed it, and a stored one is served
    without being judged again: its key named a fixed string, so a build that passed the rules before a fix (any of
    the above) was still served after it. The key now names the rules' text."""
    from verifier import fastbuild
    from verifier.fastbuild import BuildRequest, FastInlineBuilder

    class Runner:
        """torch's build, faked: the candidate's main.o (g++, no torch) and a shared object beside it."""
        builds = 0

        def __init__(self):
            self.inbox = self.outbox = tmp_path

        def torch_build(self, kwargs, timeout_s):
            Runner.builds += 1
            objects(tmp_path, main="long fwd(long n) { return n + 1; }\n")
            subprocess.run(["c++", "-shared", str(tmp_path / "main.o"), "-o", str(tmp_path / "ext.so")], check=True)
            return tmp_path / "ext.so"

    builder = FastInlineBuilder(tmp_path / "cache", fast=False, secret=b"k" * 32)
    request = BuildRequest(name="ext", cpp="long fwd(long n);", cuda="", functions=("fwd",), docstrings=(),
                           is_python_module=False)
    builder.build(request, Runner())
    builder.build(request, Runner())
    assert Runner.builds == 1  # stored: the same rules need no second build
    monkeypatch.setattr(fastbuild, "_rules_signature", lambda: "other rules")
    builder.build(request, Runner())
    assert Runner.builds == 2


@pytest.mark.parametrize("name", ["dl_iterate_phdr", "_dl_find_object", "dladdr", "posix_spawn", "system"])
def test_the_loader_and_processes_by_other_names_are_refused_among_the_imports(tmp_path, name):
    """dlsym was refused among a built object's imports, dl_iterate_phdr was not: it hands over every loaded object's
    dynamic symbol table, and a walk of it finds PyRun_SimpleString or cblas_sgemm by name (dlsym by hand), as dladdr's
    base address of an object does (its ELF headers, mapped, lead to its symbols; no compiler emits a call to it); likewise
    posix_spawn and system beside fork and execve."""
    (tmp_path / "k.cpp").write_text(f'extern "C" int {name}();\nint fwd() {{ return {name}(); }}\n')
    subprocess.run(["c++", "-shared", "-fPIC", str(tmp_path / "k.cpp"), "-o", str(tmp_path / "k.so")], check=True,
                   capture_output=True)
    found = check_artifact_symbols((tmp_path / "k.so").read_bytes(), python_module=False)
    assert [v.rule for v in found] == ["system-api"]


MACHINE_CODE = {  # name: (source, what the verdict says); every one imports nothing a rule over imports names
    "asm_by_macro": ("#define KD_ID(x) x\nlong fwd(long n) { long r; KD_ID(__asm__) volatile(\".byte 0x0f, 0x05\" : "
                     "\"=a\"(r) : \"a\"(39L) : \"rcx\", \"r11\", \"memory\"); return r + n; }\n", "`syscall`"),
    # the system call's bytes inside a mov's immediate, reached by a jump past the mov's first byte
    "hidden_in_an_instruction": ("#define KD_ID(x) x\nlong fwd(long n) { long r; KD_ID(__asm__) volatile(\"jmp 1f+1\\n"
                                 "1: .byte 0xb8, 0x0f, 0x05, 0x90, 0x90\\n\" : \"=a\"(r) : \"a\"(39L) : \"rcx\", "
                                 "\"r11\", \"memory\"); return r + n; }\n", "into the middle of an instruction"),
    "code_as_data": ("__attribute__((section(\".text.kd\"))) const unsigned char code[] = {0xb8, 0x27, 0, 0, 0, 0x0f, "
                     "0x05, 0xc3};\nlong fwd(long n) { return ((long (*)())code)() + n; }\n", "places data"),
    # a section's flags written into its name (the assembler reads the rest as a comment): writable code
    "writable_code": ("__attribute__((section(\".text.kd,\\\"awx\\\",@progbits#\"))) unsigned char code[64] = {0xc3};\n"
                      "long fwd(long n) { code[0] = 0xc3; return ((long (*)())code)() + n; }\n", "executable section"),
    "executable_stack": ("long fwd(long n) { return n; }\n"
                         "__asm__(\".section .note.GNU-stack,\\\"x\\\",@progbits\\n.previous\");\n", "executable stack"),
}


@pytest.mark.parametrize("name", sorted(MACHINE_CODE))
def test_machine_code_no_compiler_writes_is_inline_assembly_however_it_was_spelt(tmp_path, name):
    from verifier.legality import check_machine_code, check_native_source

    source, said = MACHINE_CODE[name]
    (tmp_path / "k.cpp").write_text(source)
    subprocess.run(["c++", "-O2", "-fPIC", "-shared", str(tmp_path / "k.cpp"), "-o", str(tmp_path / "k.so")],
                   check=True, capture_output=True)
    assert check_native_source(source, cuda=False) == [] or name == "executable_stack"  # the text hides it
    found = check_machine_code((tmp_path / "k.so").read_bytes())
    assert [v.rule for v in found] == ["inline-asm"] and said in found[0].message, found


def test_what_a_compiler_writes_is_not_inline_assembly(tmp_path):
    """Jump tables, library calls through the PLT, lambdas, templates, exceptions, OpenMP: an honest object's
    machine code passes, as the judge's own bridge and op watch do."""
    from verifier.legality import check_machine_code

    (tmp_path / "k.cpp").write_text(
        "#include <vector>\n#include <algorithm>\n#include <cmath>\n#include <stdexcept>\n"
        "long fwd(long n) {\n  std::vector<float> v(n);\n  #pragma omp parallel for\n"
        "  for (long i = 0; i < n; ++i) v[i] = std::tanh(i * 0.5f);\n"
        "  std::sort(v.begin(), v.end(), [](float a, float b) { return a > b; });\n"
        "  if (n < 0) throw std::runtime_error(\"negative\");\n"
        "  switch (n % 7) { case 0: return 1; case 1: return 3; case 2: return 9; case 3: return 4;\n"
        "    case 4: return 11; case 5: return 2; default: return (long)v[0]; }\n}\n")
    subprocess.run(["c++", "-O3", "-fopenmp", "-march=native", "-fPIC", "-shared", str(tmp_path / "k.cpp"), "-o",
                    str(tmp_path / "k.so")], check=True, capture_output=True)
    assert check_machine_code((tmp_path / "k.so").read_bytes()) == []


# -- red team (session 25): names the toolchain's startup files call --------------------------------------------------
# crti.o's _init calls __gmon_start__ when the module defines it; crtbeginS.o's frame_dummy calls
# _ITM_registerTMCloneTable (when the module's .tm_clone_table is not empty: a section attribute fills it), and its
# __do_global_dtors_aux calls __cxa_finalize (a hidden definition is the module's own, not libc's). Each ran at load or
# unload (dlopen, then exit) though no bound function, initializer, finalizer or call of the glue's reaches it.
STARTUP_HOOKS = {
    "gmon_start": 'extern "C" void __gmon_start__() { BODY }\n',
    "tm_clone_table": ('extern "C" void _ITM_registerTMCloneTable(void*, unsigned long) { BODY }\n'
                       '__attribute__((section(".tm_clone_table"), used)) static void* kd_tm[2] = {nullptr, nullptr};\n'),
    "cxa_finalize": 'extern "C" __attribute__((visibility("hidden"))) void __cxa_finalize(void*) { BODY }\n',
}


@pytest.mark.parametrize("name", sorted(STARTUP_HOOKS))
def test_a_definition_the_toolchains_startup_files_call_is_code_that_runs(tmp_path, name):
    hook = STARTUP_HOOKS[name]
    built = objects(tmp_path, main=SYSCALL + hook.replace("BODY", "syscall(SYS_getpid);") + "long fwd(long n) { return n; }\n")
    assert [v.rule for v in check_module_objects(built, {"fwd"})] == ["system-api"]
    python = objects(tmp_path, main='extern "C" void* PyEval_GetBuiltins();\nvoid* volatile kd_sink;\n'
                                    + hook.replace("BODY", "kd_sink = PyEval_GetBuiltins();")
                                    + "long fwd(long n) { return n; }\n")
    assert [v.rule for v in check_module_objects(python, {"fwd"})] == ["interpreter-api"]
    honest = objects(tmp_path, main="long kd_count;\n" + hook.replace("BODY", "++kd_count;") + "long fwd(long n) { return n; }\n")
    assert check_module_objects(honest, {"fwd"}) == []


def test_the_startup_files_call_the_hooks_they_are_judged_for(tmp_path):
    """The loader's side of the test above, on this machine's toolchain: each hook runs when its module is loaded or
    unloaded (a process that dlopens it and exits)."""
    for name, hook in STARTUP_HOOKS.items():
        (tmp_path / f"{name}.cpp").write_text('#include <cstdio>\n' + hook.replace(
            "BODY", f'fputs("KD-HOOK-{name}\\n", stderr);') + "long fwd(long n) { return n; }\n")
        subprocess.run(["c++", "-O2", "-fPIC", "-shared", str(tmp_path / f"{name}.cpp"), "-o",
                        str(tmp_path / f"{name}.so")], check=True, capture_output=True)
    import sys

    probe = "import ctypes, sys\nfor path in sys.argv[1:]:\n    ctypes.CDLL(path)\n"
    ran = subprocess.run([sys.executable, "-c", probe, *(str(tmp_path / f"{n}.so") for n in STARTUP_HOOKS)],
                         check=True, capture_output=True, text=True).stderr
    assert all(f"KD-HOOK-{name}" in ran for name in STARTUP_HOOKS), ran


# A personality routine (the unwinder calls it for each frame an exception passes through): named in the frame's CIE in
# .eh_frame (`.cfi_personality`, assembled by a macro), referenced from nowhere else — no bound function, initializer or
# glue call reaches it, and it ran when the bound function's callee threw.
PERSONALITY = ("#define KD_ID(x) x\n"
               'extern "C" __attribute__((used)) int kd_pers(int, int, unsigned long, void*, void*) { BODY return 8; }\n'
               'extern "C" __attribute__((noinline, used)) void kd_raise() { throw 1; }\n'
               'KD_ID(__asm__)(".text\\n.globl kd_thrower\\n.type kd_thrower,@function\\nkd_thrower:\\n.cfi_startproc\\n"\n'
               '               ".cfi_personality 0x1b, kd_pers_local\\nsub $8, %rsp\\n.cfi_adjust_cfa_offset 8\\n"\n'
               '               "call kd_raise\\nadd $8, %rsp\\n.cfi_adjust_cfa_offset -8\\nret\\n.cfi_endproc\\n"\n'
               '               ".size kd_thrower, .-kd_thrower\\n.set kd_pers_local, kd_pers\\n");\n'
               'extern "C" void kd_thrower();\n'
               "long fwd(long n) { try { kd_thrower(); } catch (...) { return n + 1; } return n; }\n")


def test_a_personality_routine_is_code_that_runs(tmp_path):
    built = objects(tmp_path, main=SYSCALL + PERSONALITY.replace("BODY", "syscall(SYS_getpid);"))
    assert [v.rule for v in check_module_objects(built, {"fwd"})] == ["system-api"]
    python = objects(tmp_path, main='extern "C" void* PyEval_GetBuiltins();\nvoid* volatile kd_sink;\n'
                                    + PERSONALITY.replace("BODY", "kd_sink = PyEval_GetBuiltins();"))
    assert [v.rule for v in check_module_objects(python, {"fwd"})] == ["interpreter-api"]
    honest = objects(tmp_path, main=PERSONALITY.replace("BODY", ""))
    assert check_module_objects(honest, {"fwd"}) == []
    # and C++'s own exceptions (every CIE names __gxx_personality_v0 through DW.ref.__gxx_personality_v0) pass
    plain = objects(tmp_path, main="#include <stdexcept>\nlong fwd(long n) { try { if (n < 0) throw std::runtime_error"
                                   "(\"n\"); } catch (const std::exception&) { return 0; } return n; }\n")
    assert check_module_objects(plain, {"fwd"}) == []
