"""check_module_objects over real object files (g++ -ffunction-sections, as the judge builds torch's own load_inline):
what the candidate's code reaches from its bound functions, its initializers and finalizers, through each of its
files and through what the judge's glue calls, is judged; what only the judge's glue imports is not the candidate's."""
import shutil
import subprocess

import pytest

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
