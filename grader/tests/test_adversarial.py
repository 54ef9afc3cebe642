"""The adversarial suite (issue 12): each forgery an adversarial review
found, as a fixture, and what the grader does with it. Every fixture must
score no more than the honest untouched skeleton and carry the refusal
reason in its feedback.

Layers (each runs without a GPU):
- objects: each forgery's code compiled by the host compiler (what the CPU
  path builds, and the host half of the CUDA build) and read by the object
  checks (objcheck.py), then scored;
- processes: what a student process can do to the grader while it runs
  (detached children, floods of output, rewriting the gradebook later);
- checker: forged harness outputs against the kit-only checker;
- intake: archives (test_intake.py has the archive forgeries; repeated here
  by name so the suite lists them all);
- sandbox: the seed in an ancestor's command line, other checkouts
  (test_sandbox.py, with bubblewrap).
The end-to-end grading of the references and mistakes on the CPU path is
the kit's own CTest (label cpu) and test_real_build.py."""
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import unittest
import unittest.mock
from pathlib import Path

import helpers  # noqa: F401  (import path)
from helpers import labs, tmpdir

from cmlgrade import checker, checkprofile, kitchecks, objcheck, trust
from cmlgrade.results import LabRun, StudentResult
from cmlgrade.sandbox import Executor, Sandbox, become_subreaper, run_process
from cmlgrade.score import score_lab
from cmlgrade.static import run_static

LABS = labs()
LAB = LABS.get("04_reduction")   # None in a kit without lab 04 (tools/tests' throwaway kits): its fixtures skip
become_subreaper()   # as the grader does: detached leftovers of the processes below come back to be killed

# What every fixture starts from: the interface, as a skeleton defines it.
HONEST = """
#include <stddef.h>
typedef int cudaError_t;
extern "C" cudaError_t reduce_sum_int(int step, const int *in, size_t n, int *out, int *scratch)
{ (void)step; (void)in; (void)n; (void)out; (void)scratch; return (cudaError_t)0; }
extern "C" cudaError_t reduce_sum_float(int step, const float *in, size_t n, float *out, float *scratch)
{ (void)step; (void)in; (void)n; (void)out; (void)scratch; return (cudaError_t)0; }
"""

# name -> (code added to the honest file, a word the refusal must hold)
FORGERIES = {
    "reporter_override": ("""
        extern "C" void criterion_send_assert(void *a) { (void)a; }
        extern "C" int cr_assert_impl(void *a) { (void)a; return 1; }""", "Criterion"),
    "destructor_rewrites_json": ("""
        #include <stdio.h>
        __attribute__((destructor)) static void rewrite(void) {
            FILE *f = fopen("report.json", "r+"); if (f) { fputs("PASSED", f); fclose(f); } }""", ".fini_array"),
    "weak_main": ("""
        #include <stdio.h>
        extern "C" __attribute__((weak)) int main(void) { puts("{\\"passed\\": 32}"); return 0; }""", "main"),
    "constructor_prints_counters": ("""
        #include <stdio.h>
        __attribute__((constructor)) static void fake(void) {
            printf("step 3 transpose_kernel_tile l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum 0\\n"); }""",
                                    "constructor"),
    "destructor_prints_timing_json": ("""
        #include <stdio.h>
        static struct Fake { ~Fake() { puts("{\\"steps\\": [{\\"step\\": 8, \\"median_ms\\": 0.0001}]}"); } } fake;""",
                                      "program start"),
    "proc_cmdline_seed_read": ("""
        #include <stdio.h>
        static int seed_from_parent(void) { FILE *f = fopen("/proc/1/cmdline", "r"); int c = f ? fgetc(f) : 0;
            if (f) fclose(f); return c; }
        extern "C" int reduce_helper_seed(void) { return seed_from_parent(); }""", "fopen"),
    "detached_process_rewrites_gradebook": ("""
        #include <unistd.h>
        extern "C" int reduce_helper_detach(void) { if (fork() == 0) { setsid(); sleep(5); } return 0; }""", "fork"),
    "dlopen_cublas": ("""
        #include <dlfcn.h>
        static char name[] = {'l','i','b','c','u','b','l','a','s','.','s','o',0};
        extern "C" void *reduce_helper_lib(void) { return dlsym(dlopen(name, 2), "cublasSasum_v2"); }""", "dl"),
    "kit_cub_wrapper": ("""
        extern "C" cudaError_t red_cub_sum_int(void *, size_t *, const int *, size_t, int *);
        extern "C" cudaError_t reduce_helper_cub(const int *in, size_t n, int *out) {
            size_t b = 0; return red_cub_sum_int(0, &b, in, n, out); }""", "red_cub_sum_int"),
    # lab 03's harness links the kit's cuBLAS anchor for its library ceiling (harness.h HN_LIBRARY_STEP): a
    # launcher that calls it would hand in cuBLAS's answers and times
    "kit_cublas_anchor": ("""
        typedef struct mm_cublas mm_cublas;
        extern "C" mm_cublas *mm_cublas_create(char *, size_t);
        extern "C" cudaError_t mm_cublas_sgemm(mm_cublas *, const float *, const float *, float *, int, int, int);
        extern "C" cudaError_t reduce_helper_gemm(const float *a, float *c) {
            char why[64]; return mm_cublas_sgemm(mm_cublas_create(why, 64), a, a, c, 1, 1, 1); }""", "mm_cublas"),
    "interposes_cuda_runtime": ("""
        extern "C" int cudaGetLastError(void) { return 0; }""", "cudaGetLastError"),
    # the CPU path's alignment check reports through the runtime's handler (common/cpu): one of the student's
    # own would let a misaligned int4 load pass there as if it were legal
    "interposes_the_alignment_handler": ("""
        extern "C" void __ubsan_handle_type_mismatch_v1_abort(void *data, unsigned long p) { (void)data; (void)p; }""",
        "__ubsan_handle_type_mismatch_v1_abort"),
    "exit_handler": ("""
        #include <stdlib.h>
        static void later(void) {}
        extern "C" int reduce_helper_atexit(void) { return atexit(later); }""", "exit handler"),
    "exit_zero_in_a_launcher": ("""
        #include <stdlib.h>
        extern "C" void reduce_helper_quit(void) { exit(0); }""", "exit"),
    "sum_on_the_host": ("""
        extern "C" cudaError_t cudaMemcpy(void *, const void *, size_t, int);
        extern "C" cudaError_t reduce_helper_host(const int *in, size_t n, int *out) {
            static int h[1024]; cudaMemcpy(h, in, (n < 1024 ? n : 1024) * 4, 2); int s = 0;
            for (size_t i = 0; i < n && i < 1024; ++i) s += h[i]; return cudaMemcpy(out, &s, 4, 1); }""", "moves data to or from the host"),
    "raw_syscall": ("""
        extern "C" long reduce_helper_sys(void) { long r; __asm__ volatile("syscall" : "=a"(r) : "a"(39L)); return r; }""",
                    "system calls"),
    # host work through memory the host can read: on the CPU path cuda_runtime.h makes __managed__ this section
    # (test_objcheck compiles the same with the real header, and with nvcc)
    "managed_global_host_sum": ("""
        __attribute__((section(".cml_cpu_managed"), used)) int box[1 << 16];
        extern "C" int reduce_helper_host_sum(int n) { int s = 0; for (int i = 0; i < n; ++i) s += box[i]; return s; }""",
                                "__managed__"),
    "replaces_qsort": ("""
        #include <stdlib.h>
        extern "C" void qsort(void *b, size_t n, size_t w, int (*c)(const void *, const void *)) {
            (void)b; (void)n; (void)w; (void)c; }""", "defines qsort"),
    "ofstream_writes_a_report": ("""
        #include <fstream>
        extern "C" void reduce_helper_report(void) { std::ofstream f("report.json"); f << "PASSED"; }""",
                                 "file access"),
    "thread_outlives_the_launch": ("""
        #include <thread>
        extern "C" void reduce_helper_later(int *p) { std::thread([p] { *p = 0; }).detach(); }""", "std::thread"),
    "setenv_turns_off_a_check": ("""
        #include <stdlib.h>
        extern "C" void reduce_helper_env(void) { setenv("CML_CPU_CHECK", "none", 1); }""", "environment"),
    # host work through a __device__ global: `__device__ int box[1 << 16];` as labtool cpu-translate writes it, with
    # the CPU path's own header (HONEST declares cudaError_t itself, so the header's is renamed); the launcher copies
    # it to the host with the symbol API, refused as in nvcc's object. (A direct host read of the variable, closed to
    # host code, ends the run: common/cpu/tests/test_host_access.c, device_vars.)
    "device_global_host_sum": (f"""
        #define cudaError_t cml_fixture_cuda_error_t
        #include "{helpers.KIT}/common/cpu/include/cuda_runtime.h"
        #undef cudaError_t
        static cml_cpu_symbol<int[1 << 16]> cml_cpu_sym_box; CML_CPU_SYMBOL(box, "__device__ int box[1 << 16]");
        extern "C" int reduce_helper_device_sum(int n) {{
            static int h[1 << 16]; cudaMemcpyFromSymbol(h, box, (size_t)n * sizeof(int)); int s = 0;
            for (int i = 0; i < n; ++i) s += h[i]; return (int)cudaMemcpyToSymbol(box, &s, sizeof s); }}""",
                               "cudaMemcpyFromSymbol"),
}


def compile_object(testcase, code: str, extra_flags=(), name="reduction.cu") -> tuple[Path, Path]:
    """The fixture compiled as the CPU path compiles a student file (C++,
    -O2), in a tree laid out like the kit's, with its dependency file."""
    cxx = shutil.which("g++") or shutil.which("c++")
    if not cxx or not shutil.which("readelf") or not shutil.which("objdump"):
        testcase.skipTest("no C++ compiler or binutils here")
    root = tmpdir(testcase)
    src = root / "src" / "labs" / LAB.name / name
    src.parent.mkdir(parents=True)
    src.write_text(textwrap.dedent(code))
    obj = root / "build" / "CMakeFiles" / f"{LAB.stem}_kernels_student_cpu.dir" / (name + ".o")
    obj.parent.mkdir(parents=True)
    r = subprocess.run([cxx, "-x", "c++", "-std=c++17", "-O2", "-c", str(src), "-o", str(obj), "-MD", "-MF",
                        str(obj) + ".d", *extra_flags], capture_output=True, text=True)
    testcase.assertEqual(r.returncode, 0, r.stderr)
    return obj, Path(str(obj) + ".d")


def object_report(testcase, code: str, extra_flags=()) -> objcheck.ObjectReport:
    obj, dep = compile_object(testcase, code, extra_flags)
    iface = objcheck.interface_names([helpers.KIT / LAB.dir / f"{LAB.stem}.h"])
    return objcheck.check_objects([obj], [dep], iface, trust.include_roots(LAB, dep), {obj}, host_data=False)


def graded(run: LabRun) -> float:
    """The lab's score of a run whose tests all pass (the best a forgery
    could hope for) against the reference's."""
    ref = LabRun(LAB.name, build_ok={t: True for t in LAB.student_targets()})
    return score_lab(LAB, run, ref).points


def skeleton_points() -> float:
    from test_score import all_tests, lab_run
    return score_lab(LAB, lab_run(LAB, all_tests(LAB, "FAILED")), lab_run(LAB, all_tests(LAB))).points


@unittest.skipIf(LAB is None, "the kit has no lab 04_reduction, which the object fixtures are written for")
class ObjectForgeries(unittest.TestCase):
    """Forgeries in the code: refused on the compiled object, before any of
    it runs; the lab scores 0 (the skeleton's score or less) and says why."""

    def forgery_is_refused_with_its_reason(self, name: str):
        """One fixture of FORGERIES (a test method per fixture, below, so
        that CTest lists each: grader.adversarial.<name>)."""
        from test_score import all_tests, lab_run
        floor = skeleton_points()
        code, word = FORGERIES[name]
        rep = object_report(self, HONEST + code)
        self.assertTrue(rep.refused, f"{name} was not refused")
        self.assertIn(word.lower(), rep.summary().lower(), rep.refused)
        run = lab_run(LAB, all_tests(LAB))   # even a report of every test passed
        run.refused = rep.refused
        ls = score_lab(LAB, run, lab_run(LAB, all_tests(LAB)))
        self.assertLessEqual(ls.points, floor)
        self.assertTrue(any("refused" in n and word.lower() in n.lower() for n in ls.notes), ls.notes)
        self.assertTrue(all("refused" in i.feedback[0] for i in ls.items if i.counted))
        print(f"\nfixture {name}: {ls.points:g} of {LAB.max_points(False):g} points (untouched skeleton: {floor:g}); "
              f"{next(r for r in rep.refused if word.lower() in r.lower())}", file=sys.stderr)

    def test_the_honest_file_and_solutions_in_a_comment_are_not_refused(self):
        rep = object_report(self, HONEST + "\n// see solutions/04_reduction for nothing: \"solutions\" in a string\n"
                                           "static const char *where = \"/dev/null solutions\";\n"
                                           "const char *reduce_where(int k) { return where + k; }\n")
        self.assertEqual(rep.refused, [])
        text = {"reduction.cu": "// solutions/ ../../solutions/04_reduction/reduction.cu\n__shared__ int s;\n"}
        self.assertTrue(all(r.ok for r in run_static(LAB.rubric.static, text)), "a comment decided a check")

    def test_the_host_stub_of_a_device_function_is_not_an_exit_call(self):
        """nvcc gives a __device__ function a host body that calls exit(1);
        with -fcf-protection (Ubuntu's default) it opens with endbr64 (lab
        06's reference was refused on the H100 host for this)."""
        stub = ["endbr64", "sub    $0x18,%rsp", "movl   $0x1,0xc(%rsp)", "mov    0xc(%rsp),%edi", "call   869 <f+0x19>"]
        self.assertTrue(objcheck._device_stub(stub))
        self.assertTrue(objcheck._device_stub(stub[1:]))
        self.assertFalse(objcheck._device_stub(stub[:-1] + ["call   10 <g>", "call   20 <exit>"]))
        self.assertFalse(objcheck._device_stub(["mov    $0x0,%edi", "call   20 <exit>"]))

    def test_host_copies_only_in_a_labs_upload_functions(self):
        """Lab 02: its uploads take host tables and may call cudaMemcpy (a
        catalogued mistake is exactly that, and must fail as a test); a
        launcher that copies to the host is refused."""
        code = """
            typedef int cudaError_t;
            extern "C" cudaError_t cudaMemcpy(void *, const void *, unsigned long, int);
            static float h[16];
            extern "C" cudaError_t constmem_upload_tables(const float *t, const float *b) {
                (void)b; return cudaMemcpy(h, t, 64, 1); }
            extern "C" cudaError_t constmem_lookup(int step, const void *job) {
                (void)step; return cudaMemcpy(h, job, 64, 2); }
            """
        obj, dep = compile_object(self, code, name="constmem.cu")
        lab = LABS["02_constant_memory"]
        iface = objcheck.interface_names([helpers.KIT / lab.dir / f"{lab.stem}.h"])
        chk = checker.CHECKERS[lab.name]
        rep = objcheck.check_objects([obj], [dep], iface, trust.include_roots(lab, dep), {obj}, host_data=False,
                                     host_copies_in=frozenset(chk.host_copies_in))
        calls = [r for r in rep.refused if "calls" in r]   # (the fixture's tree is lab 04's: its include is refused too)
        self.assertEqual(len(calls), 1, rep.refused)
        self.assertIn("cudaMemcpy in constmem_lookup", calls[0])
        self.assertNotIn("in constmem_upload_tables", calls[0])

    def test_includes_of_the_reference_are_refused(self):
        root = tmpdir(self)
        secret = root / "elsewhere" / "solutions" / "04_reduction" / "reduction.cu"
        secret.parent.mkdir(parents=True)
        secret.write_text("extern \"C\" int the_reference(void) { return 42; }\n")
        for name, code in {
            "absolute_path_include": f'#include "{secret}"\n',
            "macro_built_include": f'#define STR2(x) #x\n#define STR(x) STR2(x)\n#define WHERE {secret}\n'
                                   f'#include STR(WHERE)\n',
        }.items():
            with self.subTest(forgery=name):
                rep = object_report(self, HONEST + code)
                self.assertTrue(any("includes" in r and "solutions" in r for r in rep.refused), rep.refused)

    def test_cub_through_a_macro_include_is_refused(self):
        cpu_inc = helpers.KIT / "common" / "cpu" / "include"
        if not (cpu_inc / "cub" / "device" / "device_reduce.cuh").is_file():
            self.skipTest("the CPU path's CUB stand-in is not in this kit")
        code = HONEST.replace("typedef int cudaError_t;", "#include <cuda_runtime.h>") + """
            #define LIBRARY <cub/device/device_reduce.cuh>
            #include LIBRARY
            using namespace cub;
            extern "C" int reduce_helper(void *t, size_t *b, const int *in, int *out, size_t n) {
                return DeviceReduce::Sum(t, *b, in, out, n); }"""
        tree_inc = tmpdir(self) / "src" / "common" / "cpu" / "include"   # where a student tree has it
        shutil.copytree(cpu_inc, tree_inc)
        rep = object_report(self, code, ["-I", str(tree_inc)])
        self.assertTrue(any("library's header" in r or "CUB" in r for r in rep.refused), rep.refused)

    @unittest.skipUnless(shutil.which("nvcc") and objcheck.find_cuobjdump(), "needs nvcc and cuobjdump")
    def test_an_unused_shared_declaration_does_not_pass_the_shared_memory_check(self):
        from cmlgrade.static import run_sass_checks
        d = tmpdir(self)
        src = d / "k.cu"
        src.write_text("template <int N> __global__ void reduce_kernel3(const int *in, int *out) {\n"
                       "  __shared__ int unused[256];\n  (void)unused;\n  atomicAdd(out, in[threadIdx.x]); }\n"
                       "template __global__ void reduce_kernel3<1>(const int *, int *);\n")
        obj = d / "k.o"
        r = subprocess.run(["nvcc", "-c", "-arch=sm_90", str(src), "-o", str(obj)], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        sass = objcheck.read_sass(objcheck.find_cuobjdump(), obj)
        res = {x.name: x for x in run_sass_checks(LAB.rubric.static, sass, "", {3: ["reduce_kernel3<1>"]})}
        self.assertTrue(res["tree_steps_reduce_in_shared_memory"].measured, res)
        self.assertFalse(res["tree_steps_reduce_in_shared_memory"].ok, res)


for _name in FORGERIES:
    setattr(ObjectForgeries, f"test_{_name}", lambda self, n=_name: self.forgery_is_refused_with_its_reason(n))


class ProcessForgeries(unittest.TestCase):
    """What a running student process can do to the grader itself."""

    @classmethod
    def setUpClass(cls):
        become_subreaper()

    def test_a_detached_child_holding_stdout_does_not_stall_the_grader(self):
        # the child sleeps 600.5 s: a grader that waited for it takes at least that long; one that did not, a
        # second or two (half of it: however loaded the machine, no margin to guess)
        t0 = time.monotonic()
        r = run_process(["bash", "-c", "echo started; (setsid sleep 600.5 &); exit 0"], timeout=5)
        self.assertLess(time.monotonic() - t0, 300, "the grader waited for the detached child")
        self.assertEqual(r.rc, 0)
        self.assertIn("started", r.stdout)
        t0 = time.monotonic()
        r = run_process(["bash", "-c", "(setsid sleep 600.5 &); sleep 600.5"], timeout=1)
        self.assertTrue(r.timed_out)
        self.assertLess(time.monotonic() - t0, 300, "a time limit of 1 s waited for a 600.5 s child")
        left = subprocess.run(["pgrep", "-f", "sleep 600.5"], capture_output=True, text=True).stdout.split()
        self.assertEqual(left, [], "a detached child outlived its run")

    def test_huge_output_is_read_into_a_bounded_buffer(self):
        """400 MB on stdout: 64 KiB of it kept, and never more than a few MiB
        held at once (Python's allocations traced: no clock to guess)."""
        import tracemalloc
        tracemalloc.start()
        try:
            r = run_process(["bash", "-c", "head -c 400000000 /dev/zero | tr '\\0' x"], timeout=600,
                            max_output=1 << 16)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        self.assertFalse(r.timed_out)
        self.assertEqual(len(r.stdout), 1 << 16)
        self.assertLess(peak, 16 << 20, f"{peak} bytes held at once for 400 MB of output")

    def test_a_detached_process_cannot_rewrite_the_gradebook_later(self):
        from cmlgrade.report import write_all
        out = tmpdir(self)
        victim, pid = out / "gradebook.csv", out / "pid"
        # the leftover says it is there (its pid) and waits to rewrite the gradebook once it is written; the
        # run ends only after that, so no sleep decides the outcome on a loaded machine
        later = f"echo $$ > {pid}.tmp && mv {pid}.tmp {pid} && while [ ! -e {victim} ]; do sleep 0.01; done; " \
                f"echo alice,32 > {victim}"
        script = f"(setsid bash -c '{later}' &); while [ ! -e {pid} ]; do sleep 0.01; done; exit 0"
        run_process(["bash", "-c", script], timeout=120)
        res = StudentResult("alice", "a.zip", [], [], [], 0.0, 0.0, "test", "public")
        write_all(out, [res], [])
        left = int(pid.read_text())
        try:   # swept when the run ended: gone (or a zombie), so it can never write
            state = Path(f"/proc/{left}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            state = "gone"
        if state not in ("gone", "Z", "X"):
            os.kill(left, 9)
        self.assertIn(state, ("gone", "Z", "X"), "a detached leftover outlived its run")
        self.assertNotIn("32", victim.read_text(), "a leftover process rewrote the gradebook")

    def test_the_secret_seed_never_reaches_a_student_process(self):
        secret = 918273645
        for files in ({"reduction.cu": b"a"}, {"reduction.cu": b"b"}):
            s = trust.student_seed(secret, secret, "alice", LAB.name, files)
            self.assertNotEqual(s, secret)
            self.assertNotIn(str(secret), str(s))
        self.assertNotEqual(trust.student_seed(secret, secret, "alice", LAB.name, {"reduction.cu": b"a"}),
                            trust.student_seed(secret, secret, "bob", LAB.name, {"reduction.cu": b"a"}),
                            "one student's printed seed would serve another")
        self.assertIsNone(trust.student_seed(secret, None, "alice", LAB.name, {}), "the public run: public seed")
        from cmlgrade.parsers import TestOutcome
        from cmlgrade.results import BinaryRun
        derived = trust.student_seed(secret, secret, "alice", LAB.name, {"reduction.cu": b"a"})
        br = BinaryRun("test_banks", True, {"step2::t": TestOutcome("step2", "t", "FAILED", [
            f"n = 33 (seed {secret}): got 1", f"seed {derived:#x} and {derived}"])})
        trust.scrub_outcomes(br, [secret, derived])
        text = " ".join(br.outcomes["step2::t"].messages)
        self.assertNotIn(str(secret), text)
        self.assertNotIn(str(derived), text)
        self.assertNotIn(f"{derived:x}", text)


class CpuPathChecks(unittest.TestCase):
    """The CPU path's stand-ins for memcheck and racecheck read the
    runtime's reports; a clean result is their absence and exit 0."""

    def fake_runner(self, stderr: str, rc: int) -> Path:
        p = tmpdir(self) / "runner"
        p.write_text(f"#!/bin/sh\ncat >&2 <<'END'\n{stderr}END\nexit {rc}\n")
        p.chmod(0o755)
        return p

    def check(self, tool, runner):
        from cmlgrade import run as R
        return R.run_cpu_check(Executor(Sandbox(None, "")), tool, runner, ["--n 33"], R.Deadline(60), 30,
                               tmpdir(self), {}, [], "3")[0]

    def test_reports_are_findings_and_silence_is_clean(self):
        race = ("cml-cpu racecheck: Race reported between write at reduction.cu:131 (thread 5) and read at "
                "reduction.cu:133 (thread 37)\ncml-cpu racecheck: 1 hazards\n")
        rep = self.check("racecheck", self.fake_runner(race, 86))
        self.assertEqual((rep.state, rep.errors), ("errors", 1))
        self.assertEqual(rep.first.location, "reduction.cu:131")
        fault = ("cml-cpu: out-of-bounds read of 4 bytes, 4 bytes past the allocation\n"
                 "  in kernel reduce_kernel3 (launched at reduction.cu:300), block 0 thread 12\n"
                 "  at reduction.cu:140\n")
        rep = self.check("memcheck", self.fake_runner(fault, 1))
        self.assertEqual(rep.state, "errors")
        self.assertEqual((rep.first.kernel, rep.first.location), ("reduce_kernel3", "reduction.cu:140"))
        self.assertEqual(self.check("racecheck", self.fake_runner("", 0)).state, "clean")
        # printing "clean" lines does not hide a report, and a report printed by the student only adds findings
        self.assertEqual(self.check("racecheck", self.fake_runner("ERROR SUMMARY: 0 errors\n" + race, 0)).state,
                         "errors")

    def test_memcheck_runs_on_buffers_of_exactly_their_size(self):
        # a read past an input's end lands in a guard zone inside the allocation unless the runner's buffers
        # are exact (CML_EXACT_BUFFERS=1, cml_buffer.h): the memcheck stand-in asks for them, the race check not
        p = tmpdir(self) / "runner"
        p.write_text("#!/bin/sh\n[ \"$CML_EXACT_BUFFERS\" = 1 ] || exit 0\n"
                     "echo 'cml-cpu: out-of-bounds global access at 0x1000: 0 bytes past the end of a 4096-byte "
                     "cudaMalloc allocation at 0x0' >&2\n"
                     "echo '  in kernel abt_padded_kernel (launched at banks.cu:187), block (0,0,0), thread (0,31,0)' >&2\n"
                     "echo '  at banks.cu:124' >&2\nexit 1\n")
        p.chmod(0o755)
        rep = self.check("memcheck", p)
        self.assertEqual((rep.state, rep.first.kernel), ("errors", "abt_padded_kernel"))
        self.assertEqual(self.check("racecheck", p).state, "clean")


class CheckerForgeries(unittest.TestCase):
    """A harness that does not do the work cannot make the kit-only checker
    pass, whatever it prints, exits with or writes."""

    def fake(self, body: str) -> Path:
        d = tmpdir(self)
        p = d / "harness"
        p.write_text("#!/usr/bin/env python3\nimport sys, struct, os\ninp, outp = sys.argv[1], sys.argv[2]\n"
                     + textwrap.dedent(body))
        p.chmod(0o755)
        return p

    def verdict(self, harness: Path, lab="04_reduction", timeout=20):
        return checker.check_step(Executor(Sandbox(None, "")), harness, lab, 3, 12345, tmpdir(self), timeout, {},
                                  [], True, "hidden")

    def test_forged_harnesses_fail(self):
        echo_input = """
            data = open(inp, 'rb').read()
            n = struct.unpack('<I', data[8:12])[0]
            out = open(outp, 'wb'); out.write(b'CMLO' + struct.pack('<II', 2, n)); p = 12
            for _ in range(n):
                step, kind, a, b, count, fill, reps, seed = struct.unpack('<IIQQQIIQ', data[p:p+48]); p += 48
                payload = data[p:p+4*count]; p += 4*count
                out.write(struct.pack('<iQ', 0, 4) + payload[:4].ljust(4, b'\\0') + struct.pack('<Q', 4*count) + payload
                          + struct.pack('<Ii', 0, 0))
            """
        cases = {
            "prints_passed": "print('PASSED 32/32'); sys.exit(0)\n",
            "says_no_device": "sys.exit(77)\n",
            "writes_zeros": "open(outp, 'wb').write(b'CMLO' + struct.pack('<II', 2, 20) + bytes(1 << 20))\n",
            "echoes_the_first_element": echo_input,
            "floods_its_output_file": "f = open(outp, 'wb'); f.write(b'CMLO' + struct.pack('<II', 2, 20))\n"
                                      "f.write(struct.pack('<iQ', 0, 1 << 40)); f.write(os.urandom(1 << 24))\n",
            "detaches_and_hangs": "import subprocess; subprocess.Popen(['setsid', 'sleep', '600']); import time; "
                                  "time.sleep(600)\n",
        }
        for name, body in cases.items():
            with self.subTest(forgery=name):
                t0 = time.monotonic()
                v = self.verdict(self.fake(body), timeout=3)
                self.assertIs(v.ok, False, (name, v))
                self.assertLess(time.monotonic() - t0, 300, "waited for the forgery's 600 s")
                self.assertTrue(v.messages or v.note)
                self.assertFalse(any("12345" in m for m in v.messages), "a verdict message shows the seed")


def harness_output(path: Path, cases, outs) -> None:
    """A harness's output file (harness.h) in which case k answered outs[k]
    and left its input as it was."""
    import struct
    with path.open("wb") as f:
        f.write(b"CMLO" + struct.pack("<II", 2, len(cases)))
        for c, out in zip(cases, outs):
            f.write(struct.pack("<iQ", 0, len(out)) + out + struct.pack("<Q", len(c.data)) + c.data
                    + struct.pack("<Ii", 0, 0))


def exact_product(c):
    """C of a lab 03 case of integer A and B (spec.c: a = M, b = N, kind =
    K; data A then B), exactly, fast enough for 1025 x 1031 x 1021 (a
    billion multiply-adds; seconds): B's row k packed into one integer, a
    32-bit field per column, so that row i of C is sum_k A(i, k) x packed
    row k. Each field is offset by 2^31 to read it back without borrows
    (|C(i, j)| < 2^24). The test's own oracle, apart from the verifier's."""
    from array import array
    from operator import mul
    m, n, k = c.a, c.b, c.kind
    arr = array("f")
    arr.frombytes(c.data)
    vals = [int(v) for v in arr]
    packed = []
    for r in range(k):
        row = array("i", vals[m * k + r * n:m * k + (r + 1) * n])
        packed.append(int.from_bytes(row.tobytes(), "little", signed=False)
                      - (sum(1 << (32 * j) for j, v in enumerate(row) if v < 0) << 32))
    offset = int.from_bytes(b"\x00\x00\x00\x80" * n, "little")
    want = array("f")
    for i in range(m):
        total = sum(map(mul, vals[i * k:(i + 1) * k], packed)) + offset
        fields = array("I")
        fields.frombytes(total.to_bytes(4 * n, "little"))
        want.extend([f - (1 << 31) for f in fields])
    return want


def dot_product(c):
    """C of any lab 03 case in double, rounded to float once (within the bound of any order)."""
    from array import array
    from operator import mul
    m, n, k = c.a, c.b, c.kind
    arr = array("f")
    arr.frombytes(c.data)
    vals = arr.tolist()
    rows = [vals[i * k:(i + 1) * k] for i in range(m)]
    cols = [vals[m * k + j::n] for j in range(n)]
    return array("f", [sum(map(mul, r, col)) for r in rows for col in cols])


class ManyTileRace(unittest.TestCase):
    """Lab 03's no_barrier_before_the_tiles_are_refilled (a tile refilled
    before every warp has read it) garbled thousands of elements of C on an
    H200 only on the public tests' 1025 x 1031 x 1021 matrices: the
    kit-only checker, whose largest cases had been smaller, found the step
    right while its public test failed. The lab's spec now gives the
    grader that case on a GPU, judged exactly by its verifier."""

    def judge(self, ck, cases, outs, step=3):
        from array import array
        from cmlgrade.specs import SpecChecker
        self.assertIsInstance(ck, SpecChecker)
        path = tmpdir(self) / "output.bin"
        guards = [b"\xff" * (ck.out_bytes(c) - 4 * c.a * c.b) for c in cases]
        harness_output(path, cases, [array("f", o).tobytes() + g for o, g in zip(outs, guards)])
        return ck.judge_file(path, [step] * len(cases), cases)

    def test_the_gpu_cases_hold_the_many_tile_matrices_and_judge_a_garbled_element(self):
        ck = checker.CHECKERS["03_tiled_matmul"]
        big = [c for c in ck.make(5, False) if (c.a, c.b, c.kind) == (1025, 1031, 1021)]
        self.assertEqual(len(big), 1)
        self.assertTrue(big[0].limit, "checked, not traced")
        self.assertFalse([c for c in ck.make(5, True) if (c.a, c.b, c.kind) == (1025, 1031, 1021)],
                         "the CPU path stays quick")
        want = exact_product(big[0])
        bad = want[:]
        bad[1031 * 700 + 512] += 1.0     # one element of a tile read after it was refilled
        right, wrong = self.judge(ck, big * 2, [want, bad])
        self.assertEqual(right, "right")
        self.assertTrue(wrong.startswith("wrong\t1 of 1056775 elements of C"), wrong)
        self.assertIn("C(700, 512)", wrong)

    def test_every_kind_of_data_is_judged_right_and_one_changed_element_wrong(self):
        ck = checker.CHECKERS["03_tiled_matmul"]
        cases = [c for c in ck.make(11, True) if c.a * c.b * c.kind <= 400000 and c.group in ("exact", "reals", "distinct")]
        self.assertEqual({c.group for c in cases}, {"exact", "reals", "distinct"})
        wants = [dot_product(c) for c in cases]
        self.assertEqual(self.judge(ck, cases, wants), ["right"] * len(cases))
        for c, w in zip(cases, wants):   # one element off by one: wrong, integers or reals of [1, 2)
            w[len(w) // 2] += 1.0
        got = self.judge(ck, cases, wants)
        self.assertEqual([g.split("\t")[0] for g in got], ["wrong"] * len(cases), got)


class PrecomputedUploadForgeries(unittest.TestCase):
    """A step's work happens in the step's kernel: lab 02's upload function
    may read its host tables, so a student could compute a step's answers
    there (row sums for step 1, prefix sums for steps 2 and 5, or read the
    __constant__ copy in a step that must read global memory) and let the
    kernel do one or two loads a pass. The harness uploads first and only
    then puts on the device the tables steps 3 and 4 read (other tables than
    the upload got) and gives every step the walk's signs (read k of every
    pass subtracted where bit k is set), drawn for each case
    (common/labs/02_constant_memory/harness.c): answers made from what the upload
    saw lose the steps. Here a fake harness answers exactly as such an upload
    would: it hands the reference's own harness (the CPU path's, built with
    the kit) the uploaded tables in place of the global ones, and no signs
    (the upload never sees them), and passes on its answers; and, as the
    control that shows the cases can tell, the tables and signs the step is
    given."""

    FAKE = """
        import subprocess
        d = bytearray(open(inp, 'rb').read()); n = struct.unpack_from('<I', d, 8)[0]; p = 12; data_at = []
        for _ in range(n):   # the case's tables: the uploaded ones, the global ones, then the walk's signs
            step, kind, a, b, count, fill, reps, seed = struct.unpack_from('<IIQQQIIQ', d, p); p += 48
            data = bytes(d[p:p + 4 * count]); data_at.append((p, data))
            tables, signs = data[:-4], data[-4:]
            half = len(tables) // 2
            seen = tables[:half] if {from_upload} else tables[half:]   # the tables the answers are made from
            signs = signs if {signs_known} else bytes(4)   # an upload's sums: every read added
            d[p:p + 4 * count] = seen * 2 + signs
            p += 4 * count
        open(inp + '.seen', 'wb').write(d)
        subprocess.run([{reference!r}, inp + '.seen', outp + '.ref'], check=True)
        r = open(outp + '.ref', 'rb').read(); q = 12
        out = open(outp, 'wb'); out.write(r[:12])
        for _, data in data_at:   # the reference's answers, the input as it came
            nb = struct.unpack_from('<Q', r, q + 4)[0]
            out.write(r[q:q + 12 + nb] + struct.pack('<Q', len(data)) + data + struct.pack('<Ii', 0, 0))
            q += 12 + nb; q += 8 + struct.unpack_from('<Q', r, q)[0] + 8
        """

    def verdict(self, step: int, from_upload: bool, signs_known: bool = True):
        reference = helpers.KIT_BUILD / "constmem_harness_ref_cpu"
        if not reference.is_file():
            self.fail(f"{reference} is not built (the kit's build with the grader's tests builds it)")
        harness = CheckerForgeries.fake(self, self.FAKE.format(reference=str(reference), from_upload=from_upload,
                                                               signs_known=signs_known))
        return checker.check_step(Executor(Sandbox(None, "")), harness, "02_constant_memory", step, 777,
                                  tmpdir(self), 120, {}, [], True, "hidden")

    def setUp(self):
        if "02_constant_memory" not in LABS:
            self.skipTest("no lab 02 in this kit")

    def test_answers_from_the_uploaded_tables_lose_the_global_steps(self):
        # step 3 (step 4 runs the same cases)
        self.assertIs(self.verdict(3, False).ok, True)   # the control: the tables the step is given
        v = self.verdict(3, True)
        self.assertIs(v.ok, False, v)
        self.assertEqual(v.failed, v.total, v)   # every case: no table is both
        self.assertIn("sums wrong", v.messages[0])

    def test_sums_made_in_the_upload_lose_the_constant_steps(self):
        # steps 1, 2 and 5 read the uploaded tables: right with the case's signs, wrong without them
        for step in (1, 2, 5):
            with self.subTest(step=step):
                self.assertIs(self.verdict(step, True).ok, True)   # the control
                v = self.verdict(step, True, signs_known=False)
                self.assertIs(v.ok, False, v)
                # every case but the one whose signs are 0 (steps 1 and 2: one case, to show the plain sum)
                self.assertGreaterEqual(v.failed, v.total - 1, v)
                self.assertGreater(v.total, 5, v)
                self.assertIn("sums wrong", v.messages[0])


class TimingForgeries(unittest.TestCase):
    """Timing by the kit-only harness (checker.run_timed): a launcher that
    caches its answer, or a harness whose repeats do not compute, gets no
    timing credit whatever times it reports."""

    def fake(self, body: str) -> Path:
        d = tmpdir(self)
        p = d / "harness"
        p.write_text("#!/usr/bin/env python3\nimport sys, struct\ninp, outp = sys.argv[1], sys.argv[2]\n"
                     "d = open(inp, 'rb').read(); reps = struct.unpack_from('<I', d, 12 + 36)[0]\n"
                     "f = open(outp, 'wb'); f.write(b'CMLO' + struct.pack('<II', 2, 1) + struct.pack('<iQQI', 0, 0, 0, reps))\n"
                     + textwrap.dedent(body) + "f.write(struct.pack('<i', 0))\n")
        p.chmod(0o755)
        return p

    def timed(self, harness: Path):
        from cmlgrade.checkbase import FILL_INTS, Case
        c = Case(0, 1 << 20, 0, b"", "timed", fill=FILL_INTS, repeats=5, seed=99, words=1 << 20)
        return c, checker.run_timed(Executor(Sandbox(None, "")), harness, c, 8, tmpdir(self), 20, {}, [])

    # each repeat's samples: 32 (word, value); the reference's values change with the changed input word
    REF = "for r in range(reps):\n    f.write(struct.pack('<f', 2.0) + b''.join(struct.pack('<QI', k, 1000 + r) for k in range(32)))\n"

    def test_a_cached_answer_loses_the_timing(self):
        c, ref = self.timed(self.fake(self.REF))
        self.assertEqual(ref.note, "")
        _, same = self.timed(self.fake(self.REF))
        self.assertIsNone(checker.same_answers("04_reduction", c, 8, same, ref))
        cached = "for r in range(reps):\n    f.write(struct.pack('<f', 0.001) + b''.join(struct.pack('<QI', k, 1000) for k in range(32)))\n"
        _, mine = self.timed(self.fake(cached))
        self.assertEqual(mine.note, "")
        why = checker.same_answers("04_reduction", c, 8, mine, ref)
        self.assertIsNotNone(why)
        self.assertIn("timed repeat 2 gave a wrong answer", why)

    def test_incomplete_or_zero_timings_are_no_timing(self):
        for body in ("pass\n",   # says 5 repeats, writes none
                     "for r in range(reps):\n    f.write(struct.pack('<f', 0.0) + bytes(12 * 32))\n"):
            with self.subTest(body=body):
                _, t = self.timed(self.fake(body))
                self.assertNotEqual(t.note, "")
                self.assertEqual(t.times, [])


# A stand-in for a lab's harness (harness.h's file formats): every timed case, the device-copy case (step 0)
# included, gets FAKE_MS[step] ms a repeat and the same samples as any other harness; each run appends its side
# ("reference" or "student") and its steps to FAKE_LOG, and its cases' seeds to FAKE_LOG.seeds. With a gate
# (a third argument) it says "<side> waits" in FAKE_LOG.gates, then waits there as harness.h does: 'g' goes on,
# anything else ends it with status 3.
FAKE_HARNESS = """#!/usr/bin/env python3
import json, os, struct, sys
d = open(sys.argv[1], 'rb').read()
n = struct.unpack_from('<I', d, 8)[0]
at, cases = 12, []
for _ in range(n):
    step, kind, a, b, count, fill, reps, seed = struct.unpack_from('<IIQQQIIQ', d, at)
    at += 48 + (0 if fill else 4 * count)
    cases.append((step, reps, seed))
ms = json.loads(os.environ['FAKE_MS'])
if len(sys.argv) > 3:
    with open(os.environ['FAKE_LOG'] + '.gates', 'a') as log:
        log.write(os.environ['FAKE_SIDE'] + ' waits\\n')
    with open(sys.argv[3], 'rb') as g:
        if g.read(1) != b'g':
            sys.exit(3)
with open(os.environ['FAKE_LOG'], 'a') as log:
    log.write(os.environ['FAKE_SIDE'] + ' ' + ','.join(str(c[0]) for c in cases) + '\\n')
with open(os.environ['FAKE_LOG'] + '.seeds', 'a') as log:
    log.write(os.environ['FAKE_SIDE'] + ' ' + ' '.join(f'{c[0]}:{c[2]}' for c in cases) + '\\n')
f = open(sys.argv[2], 'wb')
f.write(b'CMLO' + struct.pack('<II', 2, n))
for step, reps, _ in cases:
    f.write(struct.pack('<iQQI', 0, 0, 0, reps))
    for r in range(reps):
        f.write(struct.pack('<f', ms[str(step)]) + b''.join(struct.pack('<QI', k, (1000 + r + step) & 0xFFFFFFFF) for k in range(32)))
    f.write(struct.pack('<i', 0))
"""


class ImpossibleTimes(unittest.TestCase):
    """reftime.perf_lab / LabTiming: the reference, the student, the
    reference (R S R), every timed step in one harness run each, and the device's
    copy bandwidth measured in the reference's runs: a student time that
    implies moving the step's data faster than the copy bandwidth allows
    is flagged impossible and earns nothing; a reference that seems
    impossible itself means the ceiling is not used."""
    lab = "04_reduction"

    def sides(self, student_ms, ref_ms, n=1 << 28, cases=None):
        """The two sides (executors of one fake harness, each told its side
        and times), the harness, and the cases (seeds 12 and 13)."""
        from cmlgrade.checkbase import FILL_INTS, Case
        self.dir = d = tmpdir(self)
        harness = d / "harness"
        harness.write_text(FAKE_HARNESS)
        harness.chmod(0o755)
        self.log = log = d / "log"
        cases = cases or {s: Case(0, n, 0, b"", f"n = {n} int (timed)", fill=FILL_INTS, repeats=20, seed=5 + s,
                                  words=n) for s in (7, 8)}

        class Side(Executor):   # the same fake harness, told which side it plays and its times
            def __init__(self, side, ms):
                super().__init__(Sandbox(None, ""))
                self.side, self.ms = side, ms

            def run(self, argv, **kw):
                kw["env"] = dict(kw.get("env") or {}, FAKE_SIDE=self.side, FAKE_LOG=str(log),
                                 FAKE_MS=json.dumps({str(k): v for k, v in self.ms.items()}))
                return super().run(argv, **kw)
        return Side("student", student_ms), Side("reference", ref_ms), harness, cases

    def timing(self, student_ms, ref_ms, copy_ms, n=1 << 28, cases=None, lab=None):
        from cmlgrade.reftime import perf_lab
        from cmlgrade.run import Deadline
        student, ref, harness, cases = self.sides(student_ms, {**ref_ms, 0: copy_ms}, n, cases)
        got = perf_lab(student, ref, harness, harness, lab or self.lab, cases, Deadline(600), 60, self.dir, {}, [])
        return got, self.log.read_text().splitlines()

    def test_the_student_runs_between_the_references_runs_every_step_in_one_run(self):
        got, log = self.timing({7: 40.0, 8: 30.0}, {7: 40.0, 8: 30.0}, copy_ms=1.0)
        self.assertEqual(log, ["reference 0,7,8", "student 7,8,7,8", "reference 0,7,8"])
        for s in (7, 8):
            self.assertTrue(got[s].correct, got[s].note)
            self.assertEqual(len(got[s].samples_student), 20)   # 10 a round, two rounds
            self.assertEqual(len(got[s].samples_ref), 20)
            self.assertFalse(got[s].impossible)
            self.assertIn("copy bandwidth", got[s].ceiling)

    def test_each_round_has_data_of_its_own(self):
        """The student's run times round 1's cases then round 2's; each
        reference run one round's. Round 2's seeds are not round 1's: a
        launcher that keeps its first answers has nothing to replay."""
        self.timing({7: 40.0, 8: 30.0}, {7: 40.0, 8: 30.0}, copy_ms=1.0)
        seeds = {}
        for line in (self.log.parent / "log.seeds").read_text().splitlines():
            side, *cases = line.split()
            seeds.setdefault(side, []).append([c for c in cases if not c.startswith("0:")])   # not the copy's
        (first, second), (student,) = seeds["reference"], seeds["student"]
        self.assertEqual(student, first + second)
        self.assertEqual([c.split(":")[0] for c in first], ["7", "8"])
        self.assertFalse(set(first) & set(second), "round 2 reuses round 1's data")
        self.assertEqual(first, ["7:12", "8:13"])   # round 1: each step's own seed, as the caller gave it

    def test_the_references_runs_start_before_the_gpu_is_held_and_the_students_never(self):
        """start() (before the GPU is held alone): both reference runs make
        their contexts and wait at their gates; nothing is timed until
        run(). The student's harness gets no gate: its code never runs
        beside the reference's timing."""
        from cmlgrade.reftime import LabTiming
        from cmlgrade.run import Deadline
        student, ref, harness, cases = self.sides({7: 40.0, 8: 30.0}, {7: 40.0, 8: 30.0, 0: 1.0})
        t = LabTiming(student, ref, harness, harness, self.lab, cases, Deadline(600), 60, self.dir, {}, [])
        self.addCleanup(t.close)
        t.start()
        gates = self.log.parent / "log.gates"
        for _ in range(6000):
            if gates.is_file() and gates.read_text().count("waits") == 2:
                break
            time.sleep(0.01)
        self.assertEqual(gates.read_text().splitlines(), ["reference waits", "reference waits"])
        self.assertFalse(self.log.exists(), "something was timed before run()")
        got = t.run()
        self.assertEqual(self.log.read_text().splitlines(), ["reference 0,7,8", "student 7,8,7,8", "reference 0,7,8"])
        self.assertEqual(gates.read_text().count("waits"), 2)   # the student's run had no gate
        self.assertTrue(all(got[s].correct and got[s].student_ms == got[s].ref_ms for s in (7, 8)))

    def test_without_a_gate_the_references_runs_start_in_their_turn(self):
        """A file system that cannot hold the gate (no FIFOs): the same
        timing, each reference run started when its turn comes."""
        from cmlgrade import harnessio
        with unittest.mock.patch.object(harnessio.os, "mkfifo", side_effect=OSError(1, "Operation not permitted")):
            got, log = self.timing({7: 40.0, 8: 30.0}, {7: 40.0, 8: 30.0}, copy_ms=1.0)
        self.assertEqual(log, ["reference 0,7,8", "student 7,8,7,8", "reference 0,7,8"])
        self.assertFalse((self.dir / "log.gates").exists())
        self.assertTrue(all(got[s].correct and len(got[s].samples_ref) == 20 for s in (7, 8)))

    def test_a_reference_run_that_ends_at_its_gate_is_no_timing_not_an_error(self):
        """The run ends between opening its gate and reading it (the write
        then fails, EPIPE): the reference could not be timed, said so; the
        grader goes on."""
        from cmlgrade import harnessio
        real_write = os.write

        def write(fd, data):
            if data in (b"g", b"s"):
                raise BrokenPipeError(32, "Broken pipe")
            return real_write(fd, data)
        with unittest.mock.patch.object(harnessio.os, "write", write):
            got, log = self.timing({7: 40.0, 8: 30.0}, {7: 40.0, 8: 30.0}, copy_ms=1.0)
        self.assertEqual(log, ["student 7,8,7,8"])   # the reference's runs ended at their gates (EOF): status 3
        for s in (7, 8):
            self.assertIn("the reference could not be timed", got[s].note)
            self.assertIsNone(got[s].student_ms)

    def test_runs_never_let_go_end_without_timing_anything(self):
        """A lab whose time runs out, or an error before run(): close() ends
        the waiting reference runs (status 3), nothing timed, no files left."""
        from cmlgrade.reftime import LabTiming
        from cmlgrade.run import Deadline
        student, ref, harness, cases = self.sides({7: 40.0, 8: 30.0}, {7: 40.0, 8: 30.0, 0: 1.0})
        t = LabTiming(student, ref, harness, harness, self.lab, cases, Deadline(600), 60, self.dir, {}, [])
        t.start()
        t.close()
        self.assertFalse(self.log.exists())
        self.assertEqual([g.result.rc for g in t.refs], [3, 3])
        self.assertEqual(sorted(p.name for p in (self.dir / "timed").rglob("*") if p.is_file()), [])

    def test_a_matmul_faster_than_cublas_allows_earns_nothing(self):
        # lab 03: the reference's runs also time cuBLAS SGEMM on the first timed step's case (LIBRARY_STEP); a
        # 4096^3 product (137 GFLOP) that cuBLAS does in 2 ms takes any kernel at least 2 ms / 1.25 = 1.6 ms, far
        # above what moving its matrices takes (0.75 ms at the copy bandwidth here)
        from cmlgrade.checkbase import LIBRARY_STEP
        chk = checker.CHECKERS["03_tiled_matmul"]
        cases = {s: chk.timing_case(s, 20, 11 + s) for s in (3, 6)}
        got, log = self.timing({3: 1.5, 6: 1.7}, {3: 4.0, 6: 4.0, LIBRARY_STEP: 2.0}, copy_ms=1.0, cases=cases,
                               lab="03_tiled_matmul")
        self.assertEqual(log[0], f"reference 0,{LIBRARY_STEP},3,6")   # the ceilings in the reference's runs only
        self.assertEqual(log[1], "student 3,6,3,6")
        self.assertTrue(got[3].impossible, got[3].ceiling)   # 1.5 ms < 1.6 ms
        self.assertEqual(got[3].bound, "do the step's work")
        self.assertIn("cuBLAS measured in the same run", got[3].ceiling)
        self.assertFalse(got[6].impossible, got[6].ceiling)  # 1.7 ms: within the margin
        run = LabRun("03_tiled_matmul", build_ok={t: True for t in labs()["03_tiled_matmul"].student_targets()},
                     submitted=True)
        run.perf = got
        ls = score_lab(labs()["03_tiled_matmul"], run, LabRun("03_tiled_matmul"))
        line = next(i for i in ls.items if i.name.startswith("performance step 3"))
        self.assertEqual(line.points, 0.0)
        self.assertIn("faster than this GPU can do the step's work", " ".join(line.feedback))
        # a library that could not be timed leaves the copy bound alone, and says so
        got, _ = self.timing({3: 1.5, 6: 1.7}, {3: 4.0, 6: 4.0, LIBRARY_STEP: 0.0}, copy_ms=1.0, cases=cases,
                             lab="03_tiled_matmul")
        self.assertFalse(got[3].impossible, got[3].ceiling)
        self.assertIn("the library's rate could not be measured", got[3].ceiling)

    def test_a_time_faster_than_the_copy_bandwidth_allows_earns_nothing(self):
        # 1 GiB of ints, copied (2 GiB moved) in 1 ms: 2147 GB/s; reading the ints takes at least 0.5 ms
        got, _ = self.timing({7: 0.3, 8: 0.45}, {7: 0.6, 8: 0.6}, copy_ms=1.0)
        self.assertTrue(got[7].impossible, got[7].ceiling)   # 0.3 ms < 0.5 ms / 1.25
        self.assertFalse(got[8].impossible, got[8].ceiling)  # 0.45 ms: within the margin
        run = LabRun(self.lab, build_ok={t: True for t in labs()[self.lab].student_targets()}, submitted=True)
        run.perf = got
        ls = score_lab(labs()[self.lab], run, LabRun(self.lab))
        line = next(i for i in ls.items if i.name.startswith("performance step 7"))
        self.assertEqual(line.points, 0.0)
        self.assertIn("faster than this GPU can move", " ".join(line.feedback))
        self.assertTrue(any("flagged for the instructor" in n and "step 7" in n for n in ls.notes), ls.notes)
        line8 = next(i for i in ls.items if i.name.startswith("performance step 8"))
        self.assertGreater(line8.points, 0.0)

    def test_a_reference_below_the_ceiling_turns_it_off(self):
        got, _ = self.timing({7: 0.1, 8: 0.1}, {7: 0.2, 8: 0.2}, copy_ms=1.0)
        for s in (7, 8):
            self.assertFalse(got[s].impossible)
            self.assertIn("no time is judged against it", got[s].ceiling)


class TimedAgain(unittest.TestCase):
    """A step that loses timing credit is timed again (labmeasure._tries,
    reftime.try_again and best_of_tries): on a busy GPU another process
    the grader cannot hold off (a kit test's sanitizer, another user's
    job) slowed the reference's own lab 03 step 3 by a fifth in one of a
    self-check's tries (2 x H200, 2026-11-30), which docked it. Such a
    process only slows a try, so the try with the least ratio counts; a
    step that is slow in two tries that agree stays slow; a wrong answer
    or an impossible time in any try stands."""
    lab = "04_reduction"

    def tries(self, student_runs, ref_ms, copy_ms=1.0, lab_seconds=3600):
        """The first try (perf_lab) and the tries after it (_tries); the
        student's k-th harness run gets student_runs[k] (the last one from
        then on)."""
        import types
        from cmlgrade.labmeasure import MeasureStage
        from cmlgrade.reftime import perf_lab
        from cmlgrade.run import Deadline
        student, ref, harness, cases = ImpossibleTimes.sides(self, student_runs[0], {**ref_ms, 0: copy_ms})
        t = self
        runs = iter(student_runs)
        real_run = type(student).run

        def run(argv, **kw):   # the student's next times, then its run
            student.ms = next(runs, student.ms)
            return real_run(student, argv, **kw)
        student.run = run
        first = perf_lab(student, ref, harness, harness, self.lab, cases, Deadline(600), 60, t.dir, {}, [])
        build = t.dir / "build"
        build.mkdir()
        lab = types.SimpleNamespace(name=self.lab, stem="reduction", harness="reduction_harness",
                                    rubric=labs()[self.lab].rubric)
        shutil.copy2(harness, build / lab.harness)
        shutil.copy2(harness, t.dir / "reduction_harness_ref")
        stage = types.SimpleNamespace(student_exe=student, trusted=ref, ref_build=t.dir)
        job = types.SimpleNamespace(lab=lab, build_dir=build)
        got = MeasureStage._tries(stage, job, first, cases, Deadline(lab_seconds), t.dir / "out", {}, [])
        return got, self.log.read_text().splitlines()

    def line(self, perf, step):
        run = LabRun(self.lab, build_ok={t: True for t in labs()[self.lab].student_targets()}, submitted=True)
        run.perf = perf
        ls = score_lab(labs()[self.lab], run, LabRun(self.lab))
        return next(i for i in ls.items if i.name.startswith(f"performance step {step}"))

    def test_a_try_slowed_by_another_process_is_timed_again_and_the_best_try_counts(self):
        got, log = self.tries([{7: 60.0, 8: 30.0}, {7: 40.0, 8: 30.0}], {7: 40.0, 8: 30.0})
        # step 7 lost credit (1.5x the reference's time): R S R again for it alone, fresh processes
        self.assertEqual(log, ["reference 0,7,8", "student 7,8,7,8", "reference 0,7,8",
                               "reference 0,7", "student 7,7", "reference 0,7"])
        self.assertEqual((got[7].tries, got[7].student_ms, got[7].ref_ms), (2, 40.0, 40.0))
        self.assertEqual((got[8].tries, got[8].student_ms), (1, 30.0))
        line = self.line(got, 7)
        self.assertEqual(line.status, "passed")
        self.assertEqual(line.points, line.max_points)
        self.assertIn("timed 2 times", " ".join(line.details))
        self.assertNotIn("timed", " ".join(self.line(got, 8).details).replace("(20 runs", ""))

    def test_a_step_slow_in_two_tries_that_agree_is_not_timed_a_third_time(self):
        got, log = self.tries([{7: 60.0, 8: 30.0}], {7: 40.0, 8: 30.0})
        self.assertEqual(len(log), 6)   # two tries of step 7, each R S R
        self.assertEqual(got[7].tries, 2)
        line = self.line(got, 7)
        self.assertEqual(line.status, "partial")
        self.assertAlmostEqual(line.points, line.max_points * 1.2 * 40 / 60, places=2)

    def test_tries_that_disagree_go_on_to_three_and_the_least_ratio_counts(self):
        got, log = self.tries([{7: 80.0, 8: 30.0}, {7: 60.0, 8: 30.0}, {7: 70.0, 8: 30.0}], {7: 40.0, 8: 30.0})
        self.assertEqual(len(log), 9)
        self.assertEqual((got[7].tries, got[7].student_ms), (3, 60.0))

    def test_a_step_with_full_credit_is_timed_once(self):
        got, log = self.tries([{7: 47.0, 8: 30.0}], {7: 40.0, 8: 30.0})   # 1.175x: within 1.2x
        self.assertEqual(len(log), 3)
        self.assertEqual(got[7].tries, 1)

    def test_no_try_the_labs_time_left_could_cut_short(self):
        # lab 04's timing runs may take 300 s each (its rubric): with less than two of them left, no more tries
        got, log = self.tries([{7: 60.0, 8: 30.0}, {7: 40.0, 8: 30.0}], {7: 40.0, 8: 30.0}, lab_seconds=590)
        self.assertEqual(len(log), 3)
        self.assertEqual((got[7].tries, got[7].student_ms), (1, 60.0))

    def test_a_later_try_that_timed_out_counts_for_nothing(self):
        from cmlgrade.labmeasure import MeasureStage
        from cmlgrade.reftime import LabTiming
        from cmlgrade.results import PerfResult
        import types
        slow = {7: PerfResult(7, 60.0, 40.0, True)}
        hung = {7: PerfResult(7, None, None, False, note="timed out after 300 s")}
        lab = types.SimpleNamespace(name=self.lab, stem="reduction", harness="h", rubric=labs()[self.lab].rubric)
        job = types.SimpleNamespace(lab=lab, build_dir=tmpdir(self))
        stage = types.SimpleNamespace(student_exe=None, trusted=None, ref_build=tmpdir(self))
        from cmlgrade.run import Deadline
        with unittest.mock.patch.object(LabTiming, "run", return_value=hung) as run, \
                unittest.mock.patch.object(LabTiming, "__init__", return_value=None), \
                unittest.mock.patch.object(LabTiming, "close"):
            got = MeasureStage._tries(stage, job, slow, {7: object()}, Deadline(3600), tmpdir(self), {}, [])
        self.assertEqual(run.call_count, 1)   # and no more tries after it
        self.assertTrue(got[7].correct)
        self.assertEqual((got[7].student_ms, got[7].tries), (60.0, 1))

    def test_a_wrong_answer_or_an_impossible_time_in_any_try_stands(self):
        from cmlgrade.reftime import best_of_tries, try_again
        from cmlgrade.results import PerfResult
        slow = PerfResult(7, 60.0, 40.0, True)
        fast = PerfResult(7, 40.0, 40.0, True)
        wrong = PerfResult(7, None, None, False, note="sample 3 differs")
        forged = PerfResult(7, 0.1, 40.0, True, impossible=True)
        self.assertTrue(try_again([slow], 1.2))
        for stands in (wrong, forged):
            self.assertFalse(try_again([stands], 1.2))
            self.assertIs(best_of_tries([slow, stands, fast]), stands)
            self.assertIs(best_of_tries([fast, stands]), stands)
        self.assertIs(best_of_tries([slow, fast]), fast)
        # a try the lab's time cut short (no time) never beats a timed one
        untimed = PerfResult(7, None, None, True, note="the reference could not be timed: the lab's time limit ran out")
        self.assertFalse(try_again([slow, untimed], 1.2))
        self.assertIs(best_of_tries([slow, untimed]), slow)
        self.assertEqual(slow.tries, 2)
        # at most three tries; two that agree within 5% end it
        self.assertFalse(try_again([slow, PerfResult(7, 62.0, 40.0, True)], 1.2))
        self.assertTrue(try_again([slow, PerfResult(7, 70.0, 40.0, True)], 1.2))
        self.assertFalse(try_again([slow, PerfResult(7, 80.0, 40.0, True), PerfResult(7, 70.0, 40.0, True)], 1.2))


class CounterForgeries(unittest.TestCase):
    """Counters come from the grader's own Nsight Compute run on the harness,
    read from the CSV file ncu writes (checker.counters_step): what the
    student's process prints is not read at all."""
    METRIC = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
    CSV = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
           '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n'
           '"0","7","h","x","transpose_tile_kernel(const float *, float *, int, int)","1","7","(32, 8, 1)","(2, 3, 1)",'
           '"0","9.0","Command line profiler metrics","{m}","","1,024"\n'
           '"1","7","h","x","transpose_tile_kernel(const float *, float *, int, int)","1","7","(32, 8, 1)","(2, 3, 1)",'
           '"0","9.0","Command line profiler metrics","{m}","","31"\n')

    def test_the_csv_is_summed_over_launches(self):
        self.assertEqual(checker.parse_ncu_csv(self.CSV.format(m=self.METRIC), self.METRIC), (1055.0, 2))
        prof = "==PROF== Connected to process 7 (/x/harness)\n==PROF== Profiling \"k\": 0%....100% - 1 pass\n"
        self.assertEqual(checker.parse_ncu_csv(prof + self.CSV.format(m=self.METRIC), self.METRIC), (1055.0, 2))
        self.assertEqual(checker.parse_ncu_csv(self.CSV.format(m="other__metric.sum"), self.METRIC), (0.0, 0))
        self.assertEqual(checker.parse_ncu_csv("step 3 tile: shared-load bank conflicts 0\n", self.METRIC), (0.0, 0))

    def test_printed_counter_lines_count_for_nothing(self):
        d = tmpdir(self)
        # an ncu that runs the program and profiles nothing (as for a step with no kernel of the lab)
        (d / "ncu").write_text('#!/bin/sh\nwhile [ "$1" != "--metrics" ]; do shift; done\nshift 2\nexec "$@"\n')
        (d / "ncu").chmod(0o755)
        harness = d / "harness"
        harness.write_text("#!/bin/sh\necho 'step 3 transpose_tile_kernel: shared-load bank conflicts 0'\n"
                           f"echo '{self.CSV.format(m=self.METRIC)}'\n")
        harness.chmod(0o755)
        with unittest.mock.patch.dict(os.environ, {"PATH": f"{d}:{os.environ.get('PATH', '')}"}):
            v, why = checker.counters_step(Executor(Sandbox(None, "")), harness, "06_transpose", 3, 1, self.METRIC,
                                           tmpdir(self), 20, {}, [], "student")
        self.assertIsNone(v)
        self.assertIn("no kernel", why)


class MarkedTraceTests(unittest.TestCase):
    """One Nsight Compute run traces every step (checker.trace_steps): the
    kit's marks (hn_mark.cu) say where each step's launches begin. A step
    whose part of the run fails, or marks that are not exactly the
    grader's, leave the verdict to a run of that step alone. Here a
    stand-in ncu runs no program: it reads the harness's input and writes
    the output records and the CSV a real run would, kernel k<step> making
    10 x step shared loads a launch."""

    NCU = textwrap.dedent("""\
        #!/usr/bin/env python3
        import os, struct, sys
        a = sys.argv[1:]
        log = a[a.index('--log-file') + 1]
        gate = None
        if a[-1] == 'warm':   # profrun.py's gated run: the warm-up launch, then the gate
            gate, a = a[-2], a[:-2]
        inp, outp = a[-2], a[-1]
        open(os.environ['CML_FAKE_NCU_CALLS'], 'a').write(' '.join(a[-3:]) + '\\n')
        d = open(inp, 'rb').read(); n = struct.unpack_from('<I', d, 8)[0]; p = 12
        out = open(outp, 'wb'); out.write(b'CMLO' + struct.pack('<II', 2, n))
        rows = ['"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
                '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"']
        fail = int(os.environ.get('CML_FAKE_FAIL_STEP', '0'))
        # CML_FAKE_NAN_STEP's launches read "nan" in this run's CSV, over the first CML_FAKE_NAN_RUNS runs
        run_no = len(open(os.environ['CML_FAKE_NCU_CALLS']).read().splitlines())
        nan = int(os.environ.get('CML_FAKE_NAN_STEP', '0')) if run_no <= int(os.environ.get('CML_FAKE_NAN_RUNS', '99')) \
            else 0
        metrics = a[a.index('--metrics') + 1].split(',')
        ident = 0
        def launch(name, ld, st):
            global ident
            for m in metrics:
                v = ld if m.endswith('_ld.sum') else st
                rows.append(f'"{ident}","7","h","x","{name}","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","m","{m}","",'
                            f'"{v}"')
            ident += 1
        if gate:
            if not os.environ.get('CML_FAKE_NO_WARM'):
                launch('cml_hn_warm', 0, 0)
            with open(gate, 'rb') as g:
                if g.read(1) != b'g':
                    sys.exit(3)
        if os.environ.get('CML_FAKE_FORGED_MARK'):
            launch('cml_hn_mark', 0, 0)
        for _ in range(n):
            step, kind, a_, b_, count, fill, reps, seed = struct.unpack_from('<IIQQQIIQ', d, p); p += 48
            p += 0 if fill else 4 * count
            if step == 0xFFFFFFFF:
                launch('cml_hn_mark', 0, 0)
                out.write(struct.pack('<iQQIi', 0, 0, 0, 0, 0))
                continue
            launch(f'k{step}', *(('nan', 'nan') if step == nan else (10 * step, 1)))
            err = 700 if step == fail else 0
            out.write(struct.pack('<iQ', err, 4) + b'\\0' * 4 + struct.pack('<Q', 4 * count) + d[p - 4 * count:p]
                      + struct.pack('<Ii', 0, 0))
        open(log, 'w').write('==PROF== Disconnected\\n' + '\\n'.join(rows) + '\\n')
        """)

    def fake(self, **env):
        d = tmpdir(self)
        (d / "ncu").write_text(self.NCU)
        (d / "ncu").chmod(0o755)
        harness = d / "harness"
        harness.write_text("#!/bin/sh\nexit 1\n")   # never run: the stand-in ncu answers for it
        harness.chmod(0o755)
        calls = d / "calls.txt"
        calls.write_text("")
        return harness, calls, {"PATH": f"{d}:{os.environ.get('PATH', '')}", "CML_FAKE_NCU_CALLS": str(calls), **env}

    def test_the_counters_of_every_step_come_from_one_run(self):
        lab = LABS["06_transpose"]
        steps = [c.step for c in lab.counter_checks]
        self.assertGreater(len(steps), 1)
        harness, calls, env = self.fake(CML_FAKE_FAIL_STEP=str(steps[1]))
        with unittest.mock.patch.dict(os.environ, env):
            rep = checker.counters_report(Executor(Sandbox(None, "")), harness, lab, steps, 5, tmpdir(self), 60,
                                          dict(os.environ), [], "student")
        # one run for them all, and the step whose cases failed in it measured alone
        self.assertEqual(len(calls.read_text().splitlines()), 2)
        ck = checker.CHECKERS[lab.name]
        every = checker.make_cases(lab.name, 5, False)
        self.assertEqual(rep.conflicts, {s: 10.0 * s * len(ck.counter_cases(ck.step_cases(every, s), s))
                                         for s in steps})

    def profile(self, traced, counted, **env):
        harness, calls, env = self.fake(**env)
        with unittest.mock.patch.dict(os.environ, env):
            got = checkprofile.lab_profile(Executor(Sandbox(None, "")), harness, LABS["06_transpose"], traced, counted,
                                           5, tmpdir(self), 60, 60, dict(os.environ), [], "student")
        return got, calls.read_text().splitlines()

    def counted(self, steps):
        """What the stand-in counts for 06's counter steps: 10 x step a launch, a launch a case."""
        ck = checker.CHECKERS["06_transpose"]
        every = checker.make_cases("06_transpose", 5, False)
        return {s: 10.0 * s * len(ck.counter_cases(ck.step_cases(every, s), s)) for s in steps}

    def test_a_labs_traces_and_counters_come_from_one_profiled_run(self):
        # issue 23: one Nsight Compute run a lab reads every counter (the technique's and the bank conflicts')
        (traces, rep), calls = self.profile([3, 4, 5, 6], [3, 4, 5, 6])
        self.assertEqual(len(calls), 1, calls)
        self.assertEqual(self.loads(traces), {s: {f"k{s}": (2, 20.0 * s)} for s in (3, 4, 5, 6)})
        self.assertTrue(rep.available)
        self.assertEqual(rep.conflicts, self.counted([3, 4, 5, 6]))
        self.assertEqual(rep.missing, {})

    def test_a_step_that_fails_in_the_labs_profile_is_measured_alone_and_costs_the_others_nothing(self):
        (traces, rep), calls = self.profile([3, 4, 5], [4, 6], CML_FAKE_FAIL_STEP="4")
        # the run of all, then step 4's trace alone and its counters alone
        self.assertEqual(len(calls), 3, calls)
        self.assertEqual(self.loads(traces), {s: {f"k{s}": (2, 20.0 * s)} for s in (3, 4, 5)})
        self.assertEqual(rep.conflicts, self.counted([4, 6]))

    def test_a_profile_with_nothing_to_count_is_the_traces_alone(self):
        (traces, rep), calls = self.profile([3, 5], [])
        self.assertEqual(len(calls), 1, calls)
        self.assertIsNone(rep)
        self.assertEqual(self.loads(traces), {3: {"k3": (2, 60.0)}, 5: {"k5": (2, 100.0)}})

    def test_forged_marks_leave_every_value_to_a_run_of_its_own(self):
        # a mark before the grader's first: the profile is not believed, each trace and count is measured alone
        (traces, rep), calls = self.profile([3], [4], CML_FAKE_FORGED_MARK="1")
        self.assertEqual(len(calls), 3, calls)
        self.assertEqual(self.loads(traces), {3: {"cml_hn_mark": (1, 0.0), "k3": (2, 60.0)}})
        self.assertEqual(rep.conflicts, {4: self.counted([4])[4]})

    def test_the_kit_checks_count_the_right_steps_and_the_counters_stage_runs_no_ncu_of_its_own(self):
        from types import SimpleNamespace
        from cmlgrade.labmeasure import MeasureStage
        from cmlgrade.runbase import Deadline
        import dataclasses
        lab = dataclasses.replace(LABS["06_transpose"], harness="transpose_harness")   # as the pipeline sets it
        harness, calls, env = self.fake()
        run = LabRun(lab.name)
        run.checks["public"] = {s.num: checker.StepVerdict(s.num != 5, 0 if s.num != 5 else 1, 3) for s in lab.steps}
        out = tmpdir(self)
        with unittest.mock.patch.dict(os.environ, env):
            kitchecks._technique(Executor(Sandbox(None, "")), lab, run, harness, 5, out, 60, Deadline(600),
                                 dict(os.environ), [], False)
            self.assertEqual(len(calls.read_text().splitlines()), 1)   # the technique's trace and the counters
            self.assertEqual(run.counters.conflicts, self.counted([3, 4, 6]))   # step 5's outputs are wrong
            self.assertEqual(sorted(run.technique), [3, 4, 6])
            at = SimpleNamespace(job=SimpleNamespace(lab=lab, run=run), bdir=harness.parent, deadline=Deadline(600),
                                 out=out, env=dict(os.environ), readable=[], say=lambda what: None)
            stage = SimpleNamespace(_counted_by_harness=MeasureStage._counted_by_harness,
                                    student_exe=Executor(Sandbox(None, "")))
            MeasureStage._counters(stage, at, [3, 4, 6])
            self.assertEqual(len(calls.read_text().splitlines()), 1)   # nothing left to count: no run of its own
            self.assertEqual(run.counters.conflicts, self.counted([3, 4, 6]))

    def test_a_step_the_profile_left_out_that_cannot_be_counted_costs_the_others_nothing(self):
        # the counters stage counts a passing step the kit-only checks' profile did not; where that fails, the
        # profile's values stay and only that step is "not measured"
        import dataclasses
        from types import SimpleNamespace
        from cmlgrade.labmeasure import MeasureStage
        from cmlgrade.parsers import CounterReport
        from cmlgrade.runbase import Deadline
        lab = dataclasses.replace(LABS["06_transpose"], harness="transpose_harness")
        d = tmpdir(self)
        (d / "ncu").write_text("#!/bin/sh\nexit 1\n")   # profiles nothing
        (d / "ncu").chmod(0o755)
        run = LabRun(lab.name)
        run.counters = CounterReport(True, "", {3: 640.0})
        at = SimpleNamespace(job=SimpleNamespace(lab=lab, run=run), bdir=d, deadline=Deadline(600), out=tmpdir(self),
                             env={}, readable=[], say=lambda what: None)
        stage = SimpleNamespace(_counted_by_harness=MeasureStage._counted_by_harness,
                                student_exe=Executor(Sandbox(None, "")))
        with unittest.mock.patch.dict(os.environ, {"PATH": f"{d}:{os.environ.get('PATH', '')}"}):
            MeasureStage._counters(stage, at, [3, 4])
        self.assertTrue(run.counters.available)
        self.assertEqual(run.counters.conflicts, {3: 640.0})
        self.assertEqual(list(run.counters.missing), [4])

    def trace(self, steps, **env):
        harness, calls, env = self.fake(**env)
        with unittest.mock.patch.dict(os.environ, env):
            got = checker.trace_steps(Executor(Sandbox(None, "")), harness, "04_reduction", steps, 5, tmpdir(self),
                                      60, dict(os.environ), [], False)
        return got, calls.read_text().splitlines()

    def loads(self, got):
        return {s: (tr.kernels and {k: (u.launches, u.loads) for k, u in tr.kernels.items()}) for s, (tr, _) in
                got.items()}

    def test_one_run_gives_each_step_its_own_launches(self):
        got, calls = self.trace([3, 5, 8])
        self.assertEqual(len(calls), 1, calls)
        self.assertEqual(self.loads(got), {3: {"k3": (2, 60.0)}, 5: {"k5": (2, 100.0)}, 8: {"k8": (2, 160.0)}})

    def test_a_step_that_fails_in_the_run_is_traced_alone_and_costs_the_others_nothing(self):
        got, calls = self.trace([3, 5, 8], CML_FAKE_FAIL_STEP="5")
        self.assertEqual(len(calls), 2, calls)   # the run of all, then step 5 alone
        self.assertEqual(self.loads(got), {3: {"k3": (2, 60.0)}, 5: {"k5": (2, 100.0)}, 8: {"k8": (2, 160.0)}})

    def test_a_counter_ncu_gave_as_nan_is_measured_again_never_taken_for_none(self):
        # seen on an H200 beside other GPU work: one step's SASS counters read "nan" in the lab's profile, and
        # the reference lost that step as "not by the step's technique" (nan shared-memory loads)
        got, calls = self.trace([3, 5, 8], CML_FAKE_NAN_STEP="5", CML_FAKE_NAN_RUNS="1")
        self.assertEqual(len(calls), 2, calls)   # the run of all, then step 5 alone
        self.assertEqual(self.loads(got), {3: {"k3": (2, 60.0)}, 5: {"k5": (2, 100.0)}, 8: {"k8": (2, 160.0)}})
        (traces, rep), calls = self.profile([3, 5], [4, 5], CML_FAKE_NAN_STEP="5", CML_FAKE_NAN_RUNS="1")
        self.assertEqual(len(calls), 3, calls)   # the profile, then step 5's trace alone and its counters alone
        self.assertEqual(self.loads(traces), {3: {"k3": (2, 60.0)}, 5: {"k5": (2, 100.0)}})
        self.assertEqual(rep.conflicts, self.counted([4, 5]))

    def test_a_counter_that_stays_nan_leaves_the_step_unchecked_with_the_reason(self):
        got, calls = self.trace([3, 5], CML_FAKE_NAN_STEP="5")
        self.assertEqual(len(calls), 2, calls)
        tr, why = got[5]
        self.assertIsNone(tr)
        self.assertIn("Nsight Compute gave no number for a counter ('nan' for smsp__sass_inst_executed_op_shared_", why)
        self.assertIn("of k5)", why)
        self.assertEqual(self.loads({3: got[3]}), {3: {"k3": (2, 60.0)}})
        (traces, rep), calls = self.profile([], [4, 5], CML_FAKE_NAN_STEP="5")
        self.assertEqual(rep.conflicts, self.counted([4]))
        self.assertIn("'nan' for", rep.missing[5])
        # in the kit-only checks: the step keeps its verdict, its technique is "not checked" and says why
        import dataclasses
        from cmlgrade.runbase import Deadline
        lab = dataclasses.replace(LABS["06_transpose"], harness="transpose_harness")
        harness, calls, env = self.fake(CML_FAKE_NAN_STEP="5")
        run = LabRun(lab.name)
        run.checks["public"] = {s.num: checker.StepVerdict(True, 0, 3) for s in lab.steps}
        with unittest.mock.patch.dict(os.environ, env):
            kitchecks._technique(Executor(Sandbox(None, "")), lab, run, harness, 5, tmpdir(self), 60, Deadline(600),
                                 dict(os.environ), [], False)
        self.assertTrue(run.checks["public"][5].ok)
        self.assertTrue(run.technique[5].startswith("not checked (Nsight Compute gave no number"), run.technique)
        self.assertNotIn("nan", run.technique[3])

    def test_parsers_read_no_number_as_unread(self):
        head = '"ID","Kernel Name","Metric Name","Metric Value"\n'
        row = '"{i}","k","smsp__sass_inst_executed_op_shared_ld.sum","{v}"\n'
        for cell in ("nan", "-nan", "inf", "n/a", ""):
            text = head + row.format(i=0, v="1,024") + row.format(i=1, v=cell)
            unread: list[str] = []
            self.assertIsNone(checker.parse_ncu_launches(text, unread), cell)
            self.assertEqual(len(unread), 1)
            total, n = checker.parse_ncu_csv(text, "smsp__sass_inst_executed_op_shared_ld.sum")
            self.assertEqual((total, n), (None, 2), cell)
        text = head + row.format(i=0, v="1,024") + row.format(i=1, v="0")
        self.assertEqual(checker.parse_ncu_launches(text)["k"].loads, 1024.0)
        self.assertEqual(checker.parse_ncu_csv(text, "smsp__sass_inst_executed_op_shared_ld.sum"), (1024.0, 2))

    def test_marks_that_are_not_the_graders_are_not_believed(self):
        # a mark before the grader's first (a launch of the kit's kernel the object checks would have refused):
        # every step is traced again alone, and the mark counts as a launch of no shared loads there
        got, calls = self.trace([3, 5], CML_FAKE_FORGED_MARK="1")
        self.assertEqual(len(calls), 3, calls)
        self.assertEqual(self.loads(got), {3: {"cml_hn_mark": (1, 0.0), "k3": (2, 60.0)},
                                           5: {"cml_hn_mark": (1, 0.0), "k5": (2, 100.0)}})

    def test_the_split_needs_one_mark_per_step_before_any_launch(self):
        head = ('"ID","Kernel Name","Metric Name","Metric Value"\n')
        row = '"{i}","{k}","smsp__sass_inst_executed_op_shared_ld.sum","{v}"\n'
        ok = head + "".join(row.format(i=i, k=k, v=v) for i, (k, v) in
                            enumerate([("cml_hn_mark", 0), ("a", 4), ("a", 4), ("cml_hn_mark", 0), ("b", 7)]))
        split = {s: checker.parse_ncu_launches(t) for s, t in checker.split_ncu_by_marks(ok, [2, 6]).items()}
        self.assertEqual({s: {k: (u.launches, u.loads) for k, u in v.items()} for s, v in split.items()},
                         {2: {"a": (2, 8.0)}, 6: {"b": (1, 7.0)}})
        self.assertIsNone(checker.split_ncu_by_marks(ok, [2, 6, 7]))       # a mark missing
        self.assertIsNone(checker.split_ncu_by_marks(ok, [2]))             # one too many
        early = head + row.format(i=0, k="a", v=4) + ok.split("\n", 1)[1]
        self.assertIsNone(checker.split_ncu_by_marks(early, [2, 6]))       # a launch before the first mark


class TechniqueForgeries(unittest.TestCase):
    """Right answers by the wrong technique: a "tile" step done without
    shared memory (here a harness that transposes in Python, so no launch
    at all) keeps its outputs right but loses the step's verdict."""

    PY_TRANSPOSE = """
        import array
        d = open(inp, 'rb').read(); n = struct.unpack_from('<I', d, 8)[0]; p = 12
        out = open(outp, 'wb'); out.write(b'CMLO' + struct.pack('<II', 2, n))
        for _ in range(n):
            step, kind, rows, cols, count, fill, reps, seed = struct.unpack_from('<IIQQQIIQ', d, p); p += 48
            a = array.array('f'); a.frombytes(d[p:p + 4 * count]); p += 4 * count
            t = array.array('f', [a[r * cols + c] for c in range(cols) for r in range(rows)])
            out.write(struct.pack('<iQ', 0, 4 * count) + t.tobytes() + struct.pack('<Q', 4 * count) + a.tobytes()
                      + struct.pack('<Ii', 0, 0))
        """

    def test_a_tile_step_without_shared_memory_loses_its_verdict(self):
        from cmlgrade.results import LabRun
        from cmlgrade.trust import _technique
        from cmlgrade.run import Deadline
        lab = LABS["06_transpose"]
        self.assertIn(3, lab.rubric.technique.shared_steps)
        harness = CheckerForgeries.fake(self, self.PY_TRANSPOSE)
        exe = Executor(Sandbox(None, ""))
        v = checker.check_step(exe, harness, lab.name, 3, 4242, tmpdir(self), 60, {}, [], True, "public")
        self.assertIs(v.ok, True, v)   # the answers are right
        run = LabRun(lab.name)
        run.checks = {"public": {3: v}}
        _technique(exe, lab, run, harness, 4242, tmpdir(self), 60, Deadline(600), {}, [], True)
        self.assertIs(v.ok, False)
        self.assertIn("must stage its data in shared memory", v.messages[0])
        self.assertIn("0 shared-memory loads", run.technique[3])


class OneHarnessProcess(unittest.TestCase):
    """Every step's kit-only verdicts, public and hidden, from one harness
    process (checker.check_together); what that run does not settle, a step
    a process. A stand-in harness (Python) transposes like lab 06's kernels
    and logs the steps of each run."""

    HARNESS = """
        import array, time
        d = open(inp, 'rb').read(); n = struct.unpack_from('<I', d, 8)[0]; p = 12
        cases = []
        for _ in range(n):
            step, kind, rows, cols, count, fill, reps, seed = struct.unpack_from('<IIQQQIIQ', d, p); p += 48
            cases.append((step, rows, cols, d[p:p + 4 * count])); p += 4 * count
        steps = sorted({c[0] for c in cases})
        with open(LOG, 'a') as log:
            log.write(','.join(map(str, steps)) + '\\n')
        if MODE == 'hang' and len(steps) > 1:
            time.sleep(600)
        out = open(outp, 'wb'); out.write(b'CMLO' + struct.pack('<II', 2, n))
        for step, rows, cols, raw in cases:
            a = array.array('f'); a.frombytes(raw)
            if MODE == 'error' and len(steps) > 1 and step >= 4:   # e.g. out of memory after a leak
                out.write(struct.pack('<iQ', 2, 0) + struct.pack('<Q', len(raw)) + raw + struct.pack('<Ii', 0, 0))
                continue
            if step == 1 or (step == 5 and (MODE == 'wrong5' or (MODE == 'wrong5_shared' and len(steps) > 1))):
                t = a
            else:
                t = array.array('f', bytes(len(raw)))
                for r in range(rows):
                    t[r::rows] = a[r * cols:(r + 1) * cols]
            out.write(struct.pack('<iQ', 0, len(raw)) + t.tobytes() + struct.pack('<Q', len(raw)) + raw
                      + struct.pack('<Ii', 0, 0))
        """

    def grade(self, mode: str, step_limit: float = 120, cpu: bool = True, per_gpu: int = 1):
        from cmlgrade.run import Deadline
        lab = LABS["06_transpose"]
        log = tmpdir(self) / "runs.log"
        harness = CheckerForgeries.fake(self, f"LOG = {str(log)!r}\nMODE = {mode!r}\n"
                                        + textwrap.dedent(self.HARNESS))
        run, ref = LabRun(lab.name), LabRun(lab.name)
        cases = checker.make_cases   # the CPU path's sizes either way: the stand-in transposes in Python
        self.out = tmpdir(self)
        with unittest.mock.patch.object(kitchecks, "_technique"), \
                unittest.mock.patch.object(checker, "make_cases", lambda name, seed, _: cases(name, seed, True)):
            trust.run_kit_checks(Executor(Sandbox(None, "")), lab, run, ref, harness,
                                 [("public", None), ("hidden", 777)], 4242, self.out, step_limit,
                                 Deadline(600), {}, [], cpu, per_gpu)
        runs = [line.split(",") for line in log.read_text().split()]
        verdicts = {(kind, s): v.ok for kind, per in run.checks.items() for s, v in per.items()}
        return lab, runs, verdicts

    def test_every_step_of_both_seeds_runs_in_one_process(self):
        lab, runs, verdicts = self.grade("right")
        nums = [str(s.num) for s in lab.steps]
        self.assertEqual(runs, [nums])
        self.assertEqual(verdicts, {(k, s.num): True for k in ("public", "hidden") for s in lab.steps})

    def test_on_a_gpu_the_steps_are_shared_among_four_processes_side_by_side(self):
        from cmlgrade.run import GPU_SIDE_BY_SIDE
        lab, runs, verdicts = self.grade("right", cpu=False)
        self.assertEqual(len(runs), GPU_SIDE_BY_SIDE)
        # every step's cases of both seeds in one of them, none twice
        keys = [(k, s.num) for k in ("public", "hidden") for s in lab.steps]
        parts = checker.together_parts(lab.name, [(k, 4242 if k == "public" else 777, s) for k, s in keys], True,
                                       GPU_SIDE_BY_SIDE)
        self.assertEqual(sorted((k, s) for p in parts for k, _, s in p), sorted(keys))
        self.assertEqual(sorted(sorted(r) for r in runs), sorted(sorted({str(s) for _, _, s in p}) for p in parts))
        self.assertEqual(verdicts, {key: True for key in keys})

    def test_with_several_submissions_a_gpu_a_lab_makes_fewer_processes(self):
        """--per-gpu N: the other submissions run beside a lab's checks, and
        each process makes a CUDA context: GPU_SIDE_BY_SIDE / N processes a
        lab (at least one), the same verdicts."""
        from cmlgrade.run import GPU_SIDE_BY_SIDE
        for per_gpu, want in ((2, GPU_SIDE_BY_SIDE // 2), (GPU_SIDE_BY_SIDE, 1), (16, 1)):
            with self.subTest(per_gpu=per_gpu):
                lab, runs, verdicts = self.grade("right", cpu=False, per_gpu=per_gpu)
                self.assertEqual(len(runs), want)
                self.assertEqual(sorted({s for r in runs for s in r}, key=int), [str(s.num) for s in lab.steps])
                self.assertEqual(verdicts, {(k, s.num): True for k in ("public", "hidden") for s in lab.steps})

    def test_a_wrong_step_fails_alone_and_only_its_own_process_fails_it(self):
        # wrong in the shared run: checked again a step a process (a step is never failed for what another
        # step of the same process left behind), where it is wrong too; the other steps keep the shared run's
        lab, runs, verdicts = self.grade("wrong5")
        self.assertEqual(runs, [[str(s.num) for s in lab.steps], ["5"], ["5"]])
        self.assertEqual({key for key, ok in verdicts.items() if not ok}, {("public", 5), ("hidden", 5)})
        # why it ran again, in the grader's record of the shared run
        why = (self.out / "check-together-public-step1" / "not-settled.txt").read_text().splitlines()
        self.assertEqual([w.split(":")[0] for w in why], ["public step 5", "hidden step 5"])
        self.assertIn("cases wrong", why[0])

    def test_a_step_wrong_only_beside_the_others_is_not_failed(self):
        # step 5 is wrong only in a process that ran other steps before it (state one step leaves to the next):
        # its own process decides, and it is right there
        lab, runs, verdicts = self.grade("wrong5_shared")
        self.assertEqual(runs, [[str(s.num) for s in lab.steps], ["5"], ["5"]])
        self.assertTrue(all(verdicts.values()), verdicts)

    def test_a_cuda_error_in_the_shared_run_costs_no_step_its_verdict(self):
        # from step 4 on the shared run answers with errors (a leak of an earlier step starving a later one):
        # steps 1-3 keep that run's verdicts, step 4 on are run a step a process, where they are right
        lab, runs, verdicts = self.grade("error")
        self.assertEqual(runs[0], [str(s.num) for s in lab.steps])
        self.assertEqual(sorted(r[0] for r in runs[1:]), sorted([str(s.num) for s in lab.steps if s.num >= 4] * 2))
        self.assertTrue(all(verdicts.values()), verdicts)
        why = (self.out / "check-together-public-step1" / "not-settled.txt").read_text().splitlines()
        self.assertTrue(why[0].startswith("public step 4: case 1 ("), why)
        self.assertIn("CUDA error", why[0])
        self.assertEqual(len(why), 2 * len([s for s in lab.steps if s.num >= 4]))   # every later step: after it

    def test_a_shared_run_that_hangs_costs_one_steps_limit_and_no_verdict(self):
        t0 = time.monotonic()
        lab, runs, verdicts = self.grade("hang", step_limit=3)
        self.assertEqual(len(runs), 1 + 2 * len(lab.steps))   # the shared run, then each step alone
        self.assertTrue(all(verdicts.values()), verdicts)
        self.assertLess(time.monotonic() - t0, 300, "waited for the shared run's 600 s")


class StepTechniqueForgeries(unittest.TestCase):
    """Right answers by the wrong technique, found on what the step
    launched (test_static.py's helpers; it holds the honest variants that
    keep every point): a tiled step that stages each result once in shared
    memory, and lab 02's global-memory steps reading the __constant__ copy
    instead (tests/fixtures/static/kernels.cu, compiled with nvcc)."""

    def test_a_result_bounced_once_through_shared_memory_loses_the_step(self):
        import test_static
        share = test_static.ShareTests("test_no_shared_memory_at_all_says_so")
        share.setUp()
        v, run = test_static.technique(self, share.lab, 3, [("naive_bounce", share.outputs, share.outputs)],
                                       ref=share.ref)
        self.assertIs(v.ok, False)
        self.assertIn("a result staged once in shared memory is not a tile", v.messages[0])
        self.assertIn("the reference's step 6", run.technique[3])

    @unittest.skipUnless(shutil.which("nvcc") and objcheck.find_cuobjdump(), "needs nvcc and cuobjdump")
    def test_a_global_step_that_reads_the_constant_copy_loses_its_step(self):
        import test_static
        test_static.CompiledKernelTests.setUpClass()
        self.addCleanup(test_static.CompiledKernelTests.tearDownClass)
        sass = test_static.CompiledKernelTests.sass
        lab = LABS["02_constant_memory"]
        for step, honest, forged in ((3, "walk_through_ldg", "walk_reads_the_constant_copy"),
                                     (7, "conv<global_filter,3>", "conv<constant_filter,3>")):
            shared = 1000 if step in lab.rubric.technique.shared_steps else 0   # step 7's tile
            v, _ = test_static.technique(self, lab, step, [(honest, shared, shared)], sass)
            self.assertIs(v.ok, True, (step, v))
            v, _ = test_static.technique(self, lab, step, [(forged, shared, shared)], sass)
            self.assertIs(v.ok, False, step)
            self.assertIn(f"step {step} must read the table or filter from global memory", v.messages[0])
            self.assertTrue(any(m.endswith("has c\\[0x3\\]") for m in v.messages), v.messages)

if __name__ == "__main__":
    if sys.argv[1:] == ["--list"]:   # grader/CMakeLists.txt: one CTest test per fixture (grader.adversarial.*)
        for t in unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__]):
            for case in t:
                print(case.id().split(".", 1)[1])
        raise SystemExit(0)
    unittest.main()
