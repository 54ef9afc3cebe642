"""One real end-to-end run of lab 01 (needs cmake, nvcc and Criterion; no
GPU): the reference's files get full model-test points, the untouched
skeleton none, a syntax error a compile-error feedback with the compiler's
message, a destructor forgery and a library's header refused; the reference and the syntax error
graded again for determinism, the forgery again without bubblewrap. It
grades from a copy of the kit whose labs/ holds a student's finished work (a
student grading their own clone): the skeleton still comes from the
solutions. Skipped, with the reason, when the tools are missing. It prints
its progress (several minutes on two cores)."""
import os
import shutil
import subprocess
import sys
import unittest
from pathlib import Path
from unittest import mock

from helpers import KIT, labs, tmpdir

from cmlgrade.intake import Submission
from cmlgrade.pipeline import Options, Pipeline
from cmlgrade.report import write_all


def missing_tools() -> str:
    for tool in ("cmake", "nvcc"):
        if not shutil.which(tool) and not (tool == "nvcc" and Path("/usr/local/cuda/bin/nvcc").exists()):
            return f"{tool} not found"
    pc = shutil.which("pkg-config")
    if pc and subprocess.run([pc, "--exists", "criterion"]).returncode != 0:
        return "Criterion not found (pkg-config criterion)"
    return ""


WHY = missing_tools()


@unittest.skipIf(WHY, f"real build test skipped: {WHY}")
class RealBuildTests(unittest.TestCase):
    def test_lab01_model_reference_skeleton_and_syntax_error(self):
        lab = labs(["01_shared_banks"])["01_shared_banks"]
        sol = {f: (KIT / "solutions" / lab.name / f).read_bytes() for f in lab.files}
        skel = {f: (KIT / "labs" / lab.name / f).read_bytes() for f in lab.files}
        broken = dict(sol, **{"bank_model.c": sol["bank_model.c"] + b"\nint oops_a_typo = ;\n"})
        # a forgery (issue 12): the finished model plus a destructor that would rewrite the test report
        forged = dict(sol, **{"bank_model.c": sol["bank_model.c"] + b"\n#include <stdio.h>\n"
                              b"__attribute__((destructor)) static void rewrite(void) { puts(\"PASSED\"); }\n"})
        # a library's header: the object checks read it from the compile's depfile (Ninja deletes a depfile once
        # read unless told -d keepdepfile: without it this one would pass unseen)
        library = dict(sol, **{"bank_model.c": sol["bank_model.c"] + b"\n#include <cublas_v2.h>\n"
                               b"int library_handle_size(void);\nint library_handle_size(void) "
                               b"{ return (int)sizeof(cublasHandle_t); }\n"})
        subs = [Submission("ref", "", {lab.name: sol}), Submission("skeleton", "", {lab.name: skel}),
                Submission("typo", "", {lab.name: broken}), Submission("forger", "", {lab.name: forged}),
                Submission("library", "", {lab.name: library})]
        work = Path(os.environ.get("CMLGRADE_TEST_BUILD_DIR") or tmpdir(self) / "work")
        if work.exists():
            shutil.rmtree(work / "students", ignore_errors=True)
        # the student's clone: same place every run (the reference build there is reused)
        clone = work.parent / (work.name + "-clone")
        skip = shutil.ignore_patterns(".git", "build*", "__pycache__", "gpu-out", "grader-out")
        clone.mkdir(parents=True, exist_ok=True)
        for src in sorted(KIT.iterdir()):
            if skip(str(KIT), [src.name]):
                continue
            if src.is_dir():
                shutil.copytree(src, clone / src.name, dirs_exist_ok=True, ignore=skip)
            elif src.is_file():
                shutil.copy2(src, clone / src.name)
        (clone / "labs" / lab.name / "bank_model.c").write_bytes(sol["bank_model.c"])  # finished in the clone
        print(f"\n[test_real_build] grading lab 01 for real from {clone} (cmake, nvcc, Criterion): "
              f"several minutes", file=sys.stderr, flush=True)
        env = {"CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", "")}
        with mock.patch.dict(os.environ, env):
            p = Pipeline(Options(kit=clone, work=work, keep_work=True, arch="90", jobs=os.cpu_count() or 2,
                                 progress=True), [lab])
            p.prepare()
            results, errors = p.grade(subs)
        self.assertEqual(errors, [])
        by = {r.student: r.labs[0] for r in results}
        # the clone's labs/ holds the finished model: still not the skeleton
        self.assertFalse(any("untouched" in n for n in by["ref"].notes), by["ref"].notes)
        self.assertIn("labtool skeleton", p.skeletons.source[(lab.name, "bank_model.c")])
        model_steps = [f"step {s.num} {s.ident}" for s in lab.steps if s.where == lab.model_file]

        def items(ls):
            return {i.name: i for i in ls.items}

        ref = items(by["ref"])
        for name in model_steps:
            self.assertEqual(ref[name].status, "passed", ref[name])
            self.assertEqual(ref[name].points, ref[name].max_points)
        if not p.gpu_ok:  # without a GPU: every counted point is earned, the GPU checks are "not measured"
            self.assertEqual(by["ref"].points, by["ref"].max_points)
        sk = items(by["skeleton"])
        self.assertEqual(sum(sk[n].points for n in model_steps), 0)
        self.assertTrue(any("untouched skeleton" in n for n in by["skeleton"].notes))
        typo = by["typo"]
        self.assertTrue(any("does not compile" in n for n in typo.notes))
        self.assertTrue(any("bank_model.c" in e and "error" in e for e in typo.build_errors), typo.build_errors)
        self.assertEqual(sum(items(typo)[n].points for n in model_steps), 0)
        # determinism: the whole grading stage again (builds, runs, checks, scores) gives the same files, for the
        # reference's files and the syntax error (the untouched skeleton and the forgery take the time of a
        # reference's build and earn nothing either way)
        with mock.patch.dict(os.environ, env):
            again, errors2 = p.grade([subs[0], subs[2]])
        self.assertEqual(errors2, [])
        first, second = tmpdir(self), tmpdir(self)
        write_all(first, [r for r in results if r.student in ("ref", "typo")], [lab.name])
        write_all(second, again, [lab.name])
        files = sorted(q.relative_to(first) for q in first.rglob("*") if q.is_file())
        self.assertEqual(files, sorted(q.relative_to(second) for q in second.rglob("*") if q.is_file()))
        differ = [q for q in files if (first / q).read_bytes() != (second / q).read_bytes()]
        if differ:   # say what differs, line by line (a point lost in one run names its reason there)
            import difflib
            diff = "".join(line for q in differ for line in difflib.unified_diff(
                (first / q).read_text(errors="replace").splitlines(True),
                (second / q).read_text(errors="replace").splitlines(True), f"first/{q}", f"second/{q}", n=1))
            self.fail(f"{', '.join(map(str, differ))} differ between two runs:\n{diff[:8000]}")
        # the grader's trees are built with Ninja where it is installed (build.generator), make elsewhere
        from cmlgrade.build import generator
        slot_build = work / "slots" / "0" / "build"
        self.assertEqual((slot_build / "build.ninja").is_file(), generator() == "Ninja", generator())
        lib = by["library"]
        self.assertTrue(any("library's header" in n and "cublas" in n for n in lib.notes), lib.notes)
        self.assertLessEqual(lib.points, by["skeleton"].points, "a library's header scored more than the skeleton")
        forger = by["forger"]
        self.assertLessEqual(forger.points, by["skeleton"].points, "a forgery scored more than the skeleton")
        self.assertTrue(any("refused" in n and ".fini_array" in n for n in forger.notes), forger.notes)
        out = tmpdir(self)
        write_all(out, results, [lab.name])
        self.assertIn("oops_a_typo", (out / "students" / "typo" / "feedback.md").read_text())
        # the same forgery without bubblewrap (--unsafe-no-sandbox): refused all the same, and the report says
        # that nothing was isolated
        with mock.patch.dict(os.environ, env):
            unsafe = Pipeline(Options(kit=clone, work=work, keep_work=True, arch="90", jobs=os.cpu_count() or 2,
                                      sandbox=False), [lab])
            unsafe.prepare()
            # the reference's runs of this kit, build and seed, as the first pipeline made them (a batch makes
            # them once; here they would cost lab 01's emulated test run again, half a minute, for the same lists)
            unsafe.refs.update(p.refs)
            bare, errors3 = unsafe.grade([subs[3]])
        self.assertEqual(errors3, [])
        bare_by = {r.student: r.labs[0] for r in bare}
        self.assertLessEqual(bare_by["forger"].points, by["skeleton"].points, "unsandboxed, a forgery won")
        self.assertTrue(any("refused" in n and ".fini_array" in n for n in bare_by["forger"].notes))
        out = tmpdir(self)
        write_all(out, bare, [lab.name])
        self.assertIn("NOT ISOLATED (--unsafe-no-sandbox)", (out / "students" / "forger" / "feedback.md").read_text())
        print(f"\n[test_real_build] fixture destructor forgery, lab 01, with bubblewrap: {forger.points:g}, without: "
              f"{bare_by['forger'].points:g} (untouched skeleton: {by['skeleton'].points:g})", file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
