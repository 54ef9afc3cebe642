"""The object checks both ways (issue 22): honest code in any style is never
refused (the C and C++ standard libraries' computing functions, helpers of
the student's own under any name, templates, lambdas, printf), and what
could forge a verdict or leave the student's role is refused once, naming
the symbol, the function that uses it and what to change.

Each program is compiled here by the host compiler, as the CPU path
compiles a student's file (and the host half of the CUDA build), and read
by objcheck.check_objects; the forgeries among them are also graded in
test_adversarial (grader.adversarial.*)."""
import shutil
import subprocess
import sys
import textwrap
import unittest
from pathlib import Path

import helpers  # noqa: F401  (import path)
from helpers import labs, tmpdir
from test_adversarial import HONEST, LAB, compile_object

from cmlgrade import objcheck, trust

LABS = labs()


def report(testcase, sources: dict[str, str], lab_name="04_reduction", archive: str = "",
           nvcc: bool = False) -> objcheck.ObjectReport:
    """check_objects on the given files (name -> code) compiled in a tree
    laid out like a student build of the lab: .c as C11, .cu as C++17 (or by
    nvcc for sm_90 when nvcc=True). archive: C code of a kit archive in the
    build folder (the kit's symbols)."""
    lab = LABS[lab_name]
    root = tmpdir(testcase)
    build = root / "build"
    objs, deps, cpu = [], [], set()
    for name, code in sources.items():
        src = root / "src" / "labs" / lab.name / name
        src.parent.mkdir(parents=True, exist_ok=True)
        src.write_text(textwrap.dedent(code))
        sub = f"{lab.stem}_kernels_student" + ("" if nvcc else "_cpu")
        obj = build / "CMakeFiles" / f"{sub}.dir" / (name + ".o")
        obj.parent.mkdir(parents=True, exist_ok=True)
        if nvcc:
            argv = ["nvcc", "-c", "-arch=sm_90", str(src), "-o", str(obj), "-MD", "-MF", str(obj) + ".d"]
        else:
            cc = shutil.which("gcc" if name.endswith(".c") else "g++")
            if not cc:
                testcase.skipTest("no host compiler here")
            lang = ["-x", "c", "-std=c11"] if name.endswith(".c") else ["-x", "c++", "-std=c++17"]
            argv = [cc, *lang, "-O2", "-c", str(src), "-o", str(obj), "-MD", "-MF", str(obj) + ".d",
                    "-I", str(helpers.KIT / lab.dir)]
        r = subprocess.run(argv, capture_output=True, text=True)
        testcase.assertEqual(r.returncode, 0, r.stderr)
        objs.append(obj)
        deps.append(Path(str(obj) + ".d"))
        if not nvcc:
            cpu.add(obj)
    if archive:
        a_src = root / "kitlib.c"
        a_src.write_text(archive)
        a_obj = build / "kitlib.o"
        subprocess.run(["gcc", "-c", str(a_src), "-o", str(a_obj)], check=True)
        subprocess.run(["ar", "rcs", str(build / "libkit_host.a"), str(a_obj)], check=True)
    headers = [helpers.KIT / lab.dir / f"{lab.stem}.h"] + sorted((helpers.KIT / lab.dir).glob("*.h"))
    iface = objcheck.interface_names(list(dict.fromkeys(headers)))
    roots = []
    for d in deps:
        roots += trust.include_roots(lab, d)
    return objcheck.check_objects(objs, deps, iface, roots, cpu, host_data=False)


BANK_MODEL_IN_C = """
    #include <stdint.h>
    #include <stdio.h>
    #include <stdlib.h>
    #include <string.h>

    /* a global helper of the student's own, with a plain C name */
    int cmp_u32(const void *a, const void *b)
    {
        uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
        return (x > y) - (x < y);
    }

    unsigned distinct_words(const uint32_t *addr, int n)
    {
        uint32_t *w = malloc((size_t)n * sizeof *w);
        if (!w) { fprintf(stderr, "out of memory\\n"); abort(); }
        memcpy(w, addr, (size_t)n * sizeof *w);
        qsort(w, (size_t)n, sizeof *w, cmp_u32);
        unsigned k = 0;
        for (int i = 0; i < n; ++i) k += (i == 0 || w[i] != w[i - 1]);
        free(w);
        return k + (unsigned)__builtin_popcountll((unsigned long long)n) + (unsigned)abs(-1);
    }

    int bank_of(uint32_t byte_address) { return (int)((byte_address / 4u) % 32u); }
"""

CPP_STYLE = HONEST + """
    #include <algorithm>
    #include <array>
    #include <cstdio>
    #include <cstdlib>
    #include <iostream>
    #include <map>
    #include <memory>
    #include <string>
    #include <vector>

    template <typename T, int Block>
    static T fold(const std::vector<T> &v) { T s{}; for (auto x : v) s += x; return s * Block; }

    extern "C" int plan_blocks(int n)   // a helper with a plain C name, not in the interface
    {
        std::vector<int> sizes{n, 31, 33, 1};
        std::sort(sizes.begin(), sizes.end(), [](int a, int b) { return a > b; });
        std::array<int, 4> a{};
        std::copy(sizes.begin(), sizes.end(), a.begin());
        auto owner = std::make_unique<std::map<std::string, int>>();
        (*owner)["blocks"] = a[0] / 256 + 1;
        if (std::getenv("REDUCE_VERBOSE")) {
            std::cout << "blocks " << (*owner)["blocks"] << std::endl;
            std::printf("%s\\n", std::to_string(fold<int, 2>(sizes)).c_str());
        }
        return (*owner)["blocks"] + std::rand() % 1;
    }
"""


class BlindObjects(unittest.TestCase):
    def test_an_object_without_its_depfile_is_not_checked_and_so_not_run(self):
        """The include checks read each compile's depfile; Ninja deletes one
        once read unless told -d keepdepfile (build.native_args). An object
        without one would pass them unseen (a library's header, the
        reference's file): not checked, and the grader refuses to run it
        (building._checked: fail closed)."""
        obj, dep = compile_object(self, HONEST + "\n#include <stdio.h>\n")
        iface = objcheck.interface_names([helpers.KIT / LAB.dir / f"{LAB.stem}.h"])
        roots = trust.include_roots(LAB, dep)
        self.assertTrue(objcheck.check_objects([obj], [dep], iface, roots, {obj}, host_data=False).checked)
        dep.unlink()
        rep = objcheck.check_objects([obj], [], iface, roots, {obj}, host_data=False)
        self.assertFalse(rep.checked)
        self.assertIn("reduction.cu.o has no depfile", rep.note)


class HonestObjects(unittest.TestCase):
    """What honest students write is never refused."""

    def test_a_bank_model_with_qsort_malloc_and_popcount_is_accepted(self):
        rep = report(self, {"bank_model.c": BANK_MODEL_IN_C}, "01_shared_banks")
        self.assertTrue(rep.checked, rep.note)
        self.assertEqual(rep.refused, [])

    def test_cpp_containers_algorithms_lambdas_and_own_helpers_are_accepted(self):
        rep = report(self, {"reduction.cu": CPP_STYLE})
        self.assertTrue(rep.checked, rep.note)
        self.assertEqual(rep.refused, [])

    def test_a_helper_named_like_nothing_of_the_kit_is_accepted_beside_the_kits_archive(self):
        rep = report(self, {"reduction.cu": HONEST + 'extern "C" int red_my_helper(int x) { return x + 1; }\n'},
                     archive="int red_cpu_sum_int(const int *v, int n) { int s = 0; while (n--) s += *v++; "
                             "return s; }\n")
        self.assertEqual(rep.refused, [])


D2D = HONEST + """
    extern "C" cudaError_t cudaMemcpy(void *, const void *, size_t, int);
    extern "C" cudaError_t cudaMemcpyAsync(void *, const void *, size_t, int, void *);
    extern "C" cudaError_t reduce_helper_last(int *out, const int *partial, void *stream)
    {   // the last partial sum into the output: device to device (kind 3)
        cudaError_t e = cudaMemcpy(out, partial, sizeof(int), 3);
        return e ? e : cudaMemcpyAsync(out + 1, partial + 1, sizeof(int), 3, stream);
    }
"""


class DeviceToDeviceCopies(unittest.TestCase):
    """A launcher may copy on the device (cudaMemcpy with
    cudaMemcpyDeviceToDevice): only copies to or from the host are refused."""

    def test_a_device_to_device_copy_is_accepted(self):
        self.assertEqual(report(self, {"reduction.cu": D2D}).refused, [])

    @unittest.skipUnless(shutil.which("nvcc"), "needs nvcc (the CUDA build's host object)")
    def test_a_device_to_device_copy_is_accepted_in_the_cuda_build(self):
        code = D2D.replace(HONEST, "").replace('extern "C" cudaError_t cudaMemcpy(void *, const void *, size_t, int);\n', "")
        code = code.replace('extern "C" cudaError_t cudaMemcpyAsync(void *, const void *, size_t, int, void *);\n', "")
        code = code.replace(", 3)", ", cudaMemcpyDeviceToDevice)").replace(", 3, stream)", ", cudaMemcpyDeviceToDevice, (cudaStream_t)stream)")
        self.assertEqual(report(self, {"reduction.cu": code}, nvcc=True).refused, [])

    def test_a_copy_to_the_host_or_of_an_unknown_kind_is_refused(self):
        for kind, why in (("2", "device to host"), ("4", "cudaMemcpyDefault"), ("k", "a kind from a variable")):
            with self.subTest(kind=why):
                code = D2D.replace("sizeof(int), 3)", f"sizeof(int), {kind})").replace(
                    "reduce_helper_last(int *out", "reduce_helper_last(int k, int *out")
                rep = report(self, {"reduction.cu": code})
                self.assertEqual(len(rep.refused), 1, rep.refused)
                self.assertIn("calls cudaMemcpy in reduce_helper_last (moves data to or from the host", rep.refused[0])


class RefusedObjects(unittest.TestCase):
    """What could forge a verdict or leave the student's role: refused once,
    with the symbol, the place and what to change."""

    def refused(self, sources, lab="04_reduction", **kw) -> list[str]:
        rep = report(self, sources, lab, **kw)
        self.assertTrue(rep.refused, "not refused")
        return rep.refused

    def test_replacing_a_c_library_function_is_refused(self):
        why = self.refused({"bank_model.c": BANK_MODEL_IN_C + """
            void qsort(void *b, size_t n, size_t w, int (*c)(const void *, const void *))
            { (void)b; (void)n; (void)w; (void)c; }"""}, "01_shared_banks")
        self.assertEqual(len(why), 1, why)
        self.assertIn("bank_model.c: defines qsort, a function of the C or C++ library", why[0])
        self.assertIn("rename it or make it static", why[0])

    def test_defining_or_calling_a_kit_function_is_refused(self):
        kit = "int red_cpu_sum_int(const int *v, int n) { int s = 0; while (n--) s += *v++; return s; }\n"
        why = self.refused({"reduction.cu": HONEST + """
            extern "C" int red_cpu_sum_int(const int *v, int n) { (void)v; return n; }"""}, archive=kit)
        self.assertIn("defines red_cpu_sum_int, a symbol of the kit", why[0])
        why = self.refused({"reduction.cu": HONEST + """
            extern "C" int red_cpu_sum_int(const int *v, int n);
            extern "C" int reduce_helper(const int *v, int n) { return red_cpu_sum_int(v, n); }"""}, archive=kit)
        self.assertIn("calls red_cpu_sum_int in reduce_helper (the kit's own code)", why[0])

    def test_launching_the_harness_step_mark_is_refused(self):
        # the kit's mark (grader/harness/hn_mark.cu) says where a step's launches begin in one traced run: a
        # student's launch of it could move launches between steps
        why = self.refused({"reduction.cu": HONEST + """
            extern "C" cudaError_t cml_hn_mark_step(unsigned step);
            extern "C" cudaError_t reduce_helper(void) { return cml_hn_mark_step(5); }"""})
        self.assertIn("calls cml_hn_mark_step in reduce_helper (the kit's own code)", why[0])

    def test_cpp_file_streams_and_threads_are_refused(self):
        why = self.refused({"reduction.cu": HONEST + """
            #include <fstream>
            #include <thread>
            extern "C" void reduce_helper_log(int v) { std::ofstream f("grades.csv"); f << v; }
            extern "C" void reduce_helper_bg(void) { std::thread t([] {}); t.detach(); }"""})
        text = "\n".join(why)
        self.assertIn("file access", text)
        self.assertIn("in reduce_helper_log", text)
        self.assertIn("std::thread", text)

    def test_environment_sockets_and_exit_are_refused_with_what_to_change(self):
        cases = {
            "setenv": ('#include <stdlib.h>\nextern "C" void reduce_helper(void) { setenv("CML_CPU_CHECK", "", 1); }',
                       "changes the environment"),
            "socket": ('#include <sys/socket.h>\nextern "C" int reduce_helper(void) { return socket(2, 1, 0); }',
                       "network access"),
            "_exit": ('#include <unistd.h>\nextern "C" void reduce_helper(void) { _exit(0); }', "leaves the program"),
            "write": ('#include <unistd.h>\nextern "C" long reduce_helper(void) { return write(3, "x", 1); }',
                      "file or shared-memory access"),
        }
        for sym, (code, what) in cases.items():
            with self.subTest(call=sym):
                why = self.refused({"reduction.cu": HONEST + code})
                self.assertEqual(len(why), 1, why)
                self.assertIn(f"calls {sym} in reduce_helper ({what}): ", why[0])

    def test_managed_memory_on_the_cpu_path_is_refused(self):
        inc = helpers.KIT / "common" / "cpu" / "include"
        code = HONEST.replace("typedef int cudaError_t;", f'#include "{inc}/cuda_runtime.h"') + """
            __managed__ int box[1024];
            extern "C" int reduce_helper_peek(void) { return box[0]; }"""
        rep = report(self, {"reduction.cu": code})
        self.assertTrue(any("declares __managed__ memory" in r for r in rep.refused), rep.refused)

    def test_opening_device_memory_to_host_code_on_the_cpu_path_is_refused(self):
        # the runtime's own door (cml_cpu.h), called from host code: a __device__ global read on the host
        inc = helpers.KIT / "common" / "cpu" / "include"
        code = HONEST.replace("typedef int cudaError_t;", f'#include "{inc}/cuda_runtime.h"') + """
            extern "C" void cml_cpu_device_open(const void *p);
            extern "C" void cml_cpu_device_close(const void *p);
            static int box[1024];
            extern "C" int reduce_helper_peek(void) {
                cml_cpu_device_open(box); int v = box[0]; cml_cpu_device_close(box); return v; }"""
        rep = report(self, {"reduction.cu": code})
        self.assertTrue(any("calls cml_cpu_device_open in reduce_helper_peek (opens device memory to host code"
                            in r for r in rep.refused), rep.refused)

    def test_answering_with_the_cpu_runtimes_bank_model_is_refused(self):
        # lab 01's steps 1-3 are the model: on the CPU path the runtime has one of its own (cml_cpu.h)
        why = self.refused({"bank_model.c": BANK_MODEL_IN_C + """
            int cml_cpu_conflict_degree(const uint32_t byte_address[32], int access_bytes);
            int conflict_degree(const uint32_t byte_address[32], int access_bytes)
            { return cml_cpu_conflict_degree(byte_address, access_bytes); }"""}, "01_shared_banks")
        self.assertIn("calls cml_cpu_conflict_degree in conflict_degree (the kit's own code)", why[0])

    @unittest.skipUnless(shutil.which("nvcc"), "needs nvcc (the CUDA build's host object)")
    def test_managed_memory_in_the_cuda_build_is_refused(self):
        rep = report(self, {"reduction.cu": """
            __managed__ int box[1024];
            __global__ void stash(const int *in) { box[threadIdx.x] = in[threadIdx.x]; }
            int peek(void) { return box[0]; }"""}, nvcc=True)
        self.assertTrue(any("declares __managed__ memory" in r for r in rep.refused), rep.refused)

    def test_a_refusal_is_said_once_for_both_builds_of_a_file(self):
        """The CPU path's translation (reduction_<hash>.cpp.o) and the CUDA
        build's object (reduction.cu.o) of one file give one line."""
        code = HONEST + '#include <stdio.h>\nextern "C" void reduce_helper(void) { fclose(fopen("x", "w")); }'
        lab = LABS["04_reduction"]
        root = tmpdir(self)
        objs = []
        for sub, name in ((f"{lab.stem}_kernels_student.dir", "reduction.cu.o"),
                          (f"{lab.stem}_kernels_student_cpu.dir", "reduction_0a1b2c3d.cpp.o")):
            src = root / "src" / "labs" / lab.name / "reduction.cu"
            src.parent.mkdir(parents=True, exist_ok=True)
            src.write_text(code)
            obj = root / "build" / "CMakeFiles" / sub / name
            obj.parent.mkdir(parents=True)
            subprocess.run(["g++", "-x", "c++", "-O2", "-c", str(src), "-o", str(obj), "-MD", "-MF", f"{obj}.d"],
                           check=True)
            objs.append(obj)
        rep = objcheck.check_objects(objs, [Path(f"{o}.d") for o in objs], {"reduce_sum_int", "reduce_sum_float"},
                                     [Path("/")], set(objs), host_data=False)
        self.assertEqual(rep.refused, ["reduction.cu: calls fopen in reduce_helper (file or shared-memory access): "
                                       "student code reads its inputs from the arguments and leaves its results "
                                       "in device memory; print with printf to see values"])


if __name__ == "__main__":
    unittest.main()
