"""Every output format against its spec, determinism, the CLI's exit codes,
and a build failure through an injected command runner (no nvcc needed)."""
import csv
import io
import json
import os
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path
from unittest import mock

from helpers import KIT, KIT_BUILD, fake_build, labs, tmpdir
from test_score import all_tests, lab_run

from cmlgrade import cli
from cmlgrade.intake import Submission
from cmlgrade.parsers import SanitizerReport
from cmlgrade.pipeline import Options, Pipeline
from cmlgrade.report import feedback_markdown, gradebook_csv, gradescope_json, junit_xml, prairielearn_json, write_all
from cmlgrade.results import LabRun, StudentResult
from cmlgrade.sandbox import ProcResult
from cmlgrade.score import collapse, score_lab

LABS = labs()
GS_VIS = {"visible", "hidden", "after_due_date", "after_published"}


def sample_results():
    lab = LABS["04_reduction"]
    ref = lab_run(lab, all_tests(lab))
    good = lab_run(lab, all_tests(lab))
    good.sanitizers = {"memcheck": SanitizerReport("errors", "ERROR SUMMARY: 2 errors", 2, None)}
    ls = score_lab(lab, good, ref)
    other = score_lab(LABS["06_transpose"], LabRun("06_transpose", submitted=False), LabRun("06_transpose"))
    a = StudentResult("alice", "alice.zip", [ls, other], ["extra.txt ignored"], ["extra.txt"], ls.points + 0,
                      ls.max_points + other.max_points, "not sandboxed: test", "public")
    b = StudentResult("zed", "", [score_lab(lab, LabRun(lab.name, submitted=False), ref), other],
                      ["nothing submitted"], [], 0.0, 10.0, "not sandboxed: test", "public", missing=True)
    return [a, b]


class FormatTests(unittest.TestCase):
    def test_gradescope_spec(self):
        d = json.loads(gradescope_json(sample_results()[0]))
        self.assertIsInstance(d["score"], float)
        self.assertIsInstance(d["tests"], list)
        for t in d["tests"]:
            self.assertTrue({"name", "score", "max_score", "output", "visibility"} <= set(t))
            self.assertIsInstance(t["name"], str)
            self.assertIsInstance(t["score"], float)
            self.assertIsInstance(t["max_score"], float)
            self.assertIn(t["visibility"], GS_VIS)
            self.assertLessEqual(t["score"], t["max_score"] + 1e-9)
        self.assertAlmostEqual(d["score"], sum(t["score"] for t in d["tests"]), places=2)

    def test_prairielearn_spec(self):
        for r in sample_results():
            d = json.loads(prairielearn_json(r))
            self.assertIsInstance(d["gradable"], bool)
            self.assertTrue(0.0 <= d["score"] <= 1.0)
            for t in d["tests"]:
                self.assertTrue({"name", "points", "max_points", "message"} <= set(t))
                self.assertIsInstance(t["points"], float)
        self.assertFalse(json.loads(prairielearn_json(sample_results()[1]))["gradable"])

    def test_prairielearn_lists_no_after_due_date_items(self):
        lab = LABS["04_reduction"]
        ref = lab_run(lab, all_tests(lab))
        ref.tests["hidden"] = ref.tests["public"]
        run = lab_run(lab, all_tests(lab))
        run.tests["hidden"] = run.tests["public"]
        ls = score_lab(lab, run, ref)
        held = [i for i in ls.items if i.visibility != "visible"]
        self.assertTrue(held, "the hidden-data items are after_due_date in the rubric")
        res = StudentResult("alice", "a.zip", [ls], [], [], ls.points, ls.max_points, "test", "secret")
        d = json.loads(prairielearn_json(res))
        names = {t["name"] for t in d["tests"]}
        self.assertFalse([i.name for i in held if f"04_reduction: {i.name}" in names])
        self.assertIn(f"{len(held)} more checks", d["output"])
        self.assertAlmostEqual(d["score"], round(ls.points / ls.max_points, 4))

    def test_junit_parses(self):
        root = ET.fromstring(junit_xml(sample_results()))
        self.assertEqual(root.tag, "testsuites")
        suites = root.findall("testsuite")
        self.assertEqual(len(suites), 4)
        self.assertTrue(root.findall(".//testcase/failure"))
        for s in suites:
            self.assertEqual(int(s.get("tests")), len(s.findall("testcase")))

    def test_gradebook_rows_and_columns(self):
        rows = list(csv.reader(io.StringIO(gradebook_csv(sample_results(), ["04_reduction", "06_transpose"]))))
        self.assertEqual(rows[0][:4], ["student", "04_reduction", "06_transpose", "total"])
        self.assertEqual([r[0] for r in rows[1:]], ["alice", "zed"])
        self.assertEqual(rows[2][rows[0].index("status")], "no submission")

    def test_same_inputs_same_files(self):
        d = tmpdir(self)
        for run in ("a", "b"):
            write_all(d / run, sample_results(), ["04_reduction", "06_transpose"])
        fa = sorted(p.relative_to(d / "a") for p in (d / "a").rglob("*") if p.is_file())
        fb = sorted(p.relative_to(d / "b") for p in (d / "b").rglob("*") if p.is_file())
        self.assertEqual(fa, fb)
        for p in fa:
            self.assertEqual((d / "a" / p).read_bytes(), (d / "b" / p).read_bytes(), str(p))
        md = (d / "a" / "students" / "alice" / "feedback.md").read_text()
        self.assertIn("compute-sanitizer memcheck", md)
        self.assertIn("not sandboxed", md)


def no_gpu_result(lab_name="04_reduction", why="no CUDA device: this machine has no NVIDIA GPU driver"):
    """The reference graded on a machine without a GPU: its tests skipped."""
    lab = LABS[lab_name]
    skipped = {k: ("SKIPPED", why) for k in all_tests(lab)}
    ref = lab_run(lab, skipped)
    run = lab_run(lab, skipped)
    run.machine_note = why
    ls = score_lab(lab, run, ref)
    return StudentResult("reference", "solutions/", [ls], [], [], ls.points, ls.max_points, "not sandboxed: test",
                         "public", machine=why)


class NewUserTests(unittest.TestCase):
    """What a new user met (issue 10, items 4, 6 and 11)."""

    def test_a_skeletons_failures_are_said_once_in_the_feedback(self):
        """The untouched reduction skeleton's real report (CPU path): its 48
        failing tests each say 'Likely cause: a race' (three messages each);
        feedback.md says, per step, that it is not started, once, and names
        no mistake."""
        from helpers import FIXTURES
        from cmlgrade.parsers import parse_criterion_json
        lab = LABS["04_reduction"]
        outs = parse_criterion_json((FIXTURES / "mistakes" / "skeleton.reduction_cpu.json").read_text())
        steps = [s.num for s in lab.steps]
        ref = lab_run(lab, {k: "PASSED" for k in outs})
        run = lab_run(lab, {k: (o.status, *o.messages) for k, o in outs.items()}, not_started=steps)
        self.assertGreater(sum("Likely cause" in m for o in outs.values() for m in o.messages), 100)
        ls = score_lab(lab, run, ref)
        res = StudentResult("kim", "kim.zip", [ls], [], [], ls.points, ls.max_points, "not sandboxed: test", "public")
        md = feedback_markdown(res)
        self.assertEqual(md.count("Likely cause"), 0, md)
        self.assertEqual(md.count("is not started yet"), len(steps), md)
        self.assertEqual(md.count("6 of 6 tests fail"), len(steps), "the count is said once per step")
        self.assertNotIn("Likely mistake", md)

    def test_an_untouched_file_is_said_once_per_step_too(self):
        """The same report as the pipeline marks an untouched file: the file
        listed as untouched and no step marked not started (the TODO blocks
        are compared only in an edited file). feedback.md read 'Likely
        cause: a race' 16 times (issue 24), now once per step that it is not
        started."""
        from helpers import FIXTURES
        from cmlgrade.parsers import parse_criterion_json
        lab = LABS["04_reduction"]
        outs = parse_criterion_json((FIXTURES / "mistakes" / "skeleton.reduction_cpu.json").read_text())
        ref = lab_run(lab, {k: "PASSED" for k in outs})
        run = lab_run(lab, {k: (o.status, *o.messages) for k, o in outs.items()}, untouched=["reduction.cu"])
        ls = score_lab(lab, run, ref)
        res = StudentResult("kim", "kim.zip", [ls], [], [], ls.points, ls.max_points, "not sandboxed: test", "public")
        md = feedback_markdown(res)
        self.assertEqual(md.count("Likely cause"), 0, md)
        self.assertEqual(md.count("is not started yet"), len(lab.steps), md)
        self.assertIn("untouched skeleton (no change from the kit): reduction.cu", md)
        self.assertNotIn("Likely mistake", md)

    def test_self_check_without_a_gpu_is_not_measured_not_failed(self):
        res = no_gpu_result()
        statuses = {it.name: it.status for it in res.labs[0].items}
        self.assertEqual(statuses["static tree_steps_reduce_in_shared_memory"], "not_measured")
        self.assertFalse([n for n, st in statuses.items() if st == "failed"])
        with mock.patch("sys.stderr", new=io.StringIO()) as err:
            self.assertEqual(cli.self_check_verdict(res, False), cli.EXIT_OK)
        self.assertIn("not measured: 04_reduction", err.getvalue())
        self.assertNotIn("FAILED", err.getvalue())

    def test_self_check_fails_when_the_reference_fails_its_own_tests(self):
        """A test the reference fails is not counted for anyone (students are
        not docked for it); the self-check must not pass over it. Seen on an
        H200: lab 09's reference failed its step 2 tests and the self-check
        said 'passed for what could be measured'."""
        lab = LABS["04_reduction"]
        ref_outcomes = {f"step{s.num}::t": "PASSED" for s in lab.steps}
        ref_outcomes["step2::t"] = "FAILED"
        ref = lab_run(lab, ref_outcomes)
        ls = score_lab(lab, lab_run(lab, ref_outcomes), ref)
        self.assertEqual(ls.points, ls.max_points)   # the failed test is out of the score
        self.assertTrue(any("the reference's result is FAILED" in n for n in ls.not_counted), ls.not_counted)
        res = StudentResult("reference", "kit", [ls], [], [], ls.points, ls.max_points, "", "public")
        with mock.patch("sys.stderr", new=io.StringIO()) as err:
            self.assertEqual(cli.self_check_verdict(res, False), cli.EXIT_GRADER)
        self.assertIn("self-check FAILED: the reference solutions fail their own tests here", err.getvalue())
        self.assertIn("04_reduction: step2::t", err.getvalue())

    def test_the_no_gpu_reason_is_said_once(self):
        res = no_gpu_result()
        why = res.machine
        md = feedback_markdown(res)
        self.assertEqual(md.count(why), 1, md)
        self.assertEqual(md.count("no usable GPU on this machine"), 1, md)  # one line for all its checks
        self.assertEqual(gradescope_json(res).count(why), 1)
        self.assertEqual(res.labs[0].not_counted, [])   # skipped for want of a GPU: said by the items

    def test_not_measured_is_never_passed_in_gradescope(self):
        d = json.loads(gradescope_json(no_gpu_result()))
        nm = [t for t in d["tests"] if "not measured" in t["name"]]
        self.assertTrue(nm)
        for t in nm:
            self.assertNotIn("status", t)
            self.assertTrue(t["output"].startswith("NOT MEASURED"), t)

    def test_nothing_gradable_is_the_same_everywhere(self):
        lab = LABS["04_reduction"]
        ref = lab_run(lab, all_tests(lab))
        junk = StudentResult("junk", "junk.zip", [score_lab(lab, LabRun(lab.name, submitted=False), ref)],
                             ["no lab file found (expected one of: reduction.cu): nothing graded"], [], 0.0, 10.0,
                             "not sandboxed: test", "public")
        rows = list(csv.reader(io.StringIO(gradebook_csv([junk], [lab.name]))))
        self.assertEqual(rows[1][rows[0].index("status")], "nothing graded")
        self.assertFalse(json.loads(prairielearn_json(junk))["gradable"])
        self.assertIn("Nothing could be graded", json.loads(gradescope_json(junk))["output"])
        self.assertIn("Nothing could be graded", feedback_markdown(junk))

    def test_no_submission_gets_no_word_about_sandbox_or_seeds(self):
        zed = sample_results()[1]
        for text in (feedback_markdown(zed), json.loads(gradescope_json(zed))["output"]):
            self.assertNotIn("sandbox", text)
            self.assertNotIn("seed", text)
        self.assertIn("Nothing was submitted", feedback_markdown(zed))

    def test_the_not_counted_list_says_what_it_leaves_out(self):
        res = sample_results()[0]
        res.labs[0].not_counted = [f"step1::t{i}: not counted, reason {i}" for i in range(27)]
        md = feedback_markdown(res)
        self.assertIn("reason 19", md)
        self.assertNotIn("reason 20", md)
        self.assertIn("and 7 more", md)

    def test_many_tests_with_one_reason_make_one_line(self):
        lines = collapse([(f"step{i}::t", "the reference's result is FAILED") for i in range(9)] + [("a::b", "x")])
        self.assertEqual(len(lines), 2)
        self.assertIn("9 tests", lines[0])


class CpuPathLabels(unittest.TestCase):
    """On the CPU path the CPU runtime's bounds reports and race check
    (CML_CPU_CHECK=race) stand in for memcheck and racecheck: every output
    names the check that ran, not compute-sanitizer (issue 24: feedback.md
    read 'compute-sanitizer memcheck' for them), and says how to repeat it."""

    def graded(self, cpu: bool):
        import dataclasses
        from cmlgrade.parsers import SanitizerFinding
        lab = dataclasses.replace(LABS["04_reduction"], cpu=cpu)
        ref = lab_run(lab, all_tests(lab))
        ref.sanitizers = {t: SanitizerReport("clean", "no finding", 0, None) for t in ("memcheck", "racecheck")}
        run = lab_run(lab, all_tests(lab))
        race = SanitizerFinding("Race reported between write at reduction.cu:88 and read at reduction.cu:91",
                                "", "reduction.cu:88")
        run.sanitizers = {"memcheck": SanitizerReport("clean", "the CPU path's checks: no finding", 0, None),
                          "racecheck": SanitizerReport("errors", "CPU race check: 2 hazards", 2, race)}
        run.sanitizer_configs = {"racecheck": "--step 1,2,3 --type int --n 1000003"}
        why = "the CPU path (no GPU here)"
        run.machine_note = ref.machine_note = why
        ls = score_lab(lab, run, ref)
        res = StudentResult("kim", "kim.zip", [ls], [], [], ls.points, ls.max_points, "not sandboxed: test",
                            "public", machine=why)
        out = tmpdir(self) / "out"
        write_all(out, [res], [lab.name])
        return ls, {p.relative_to(out).as_posix(): p.read_text() for p in out.rglob("*") if p.is_file()}

    def test_every_output_names_the_cpu_paths_checks(self):
        ls, files = self.graded(cpu=True)
        names = [it.name for it in ls.items if it.category == "sanitizer"]
        self.assertIn("CPU path bounds check (for memcheck)", names)
        self.assertIn("CPU path race check (for racecheck)", names)
        for f in ("students/kim/feedback.md", "students/kim/result.json", "students/kim/gradescope/results.json",
                  "students/kim/prairielearn/results.json", "junit.xml"):
            self.assertNotIn("compute-sanitizer memcheck", files[f], f)
            self.assertNotIn("compute-sanitizer racecheck", files[f], f)
            self.assertIn("CPU path race check (for racecheck)", files[f], f)
        md = files["students/kim/feedback.md"]
        self.assertIn("CPU path race check (for racecheck) is not clean: CPU race check: 2 hazards", md)
        from cmlgrade.stagebase import CPU_PATH
        self.assertIn("bounds and race checks ran on the CPU", CPU_PATH)   # the run's note says they ran
        self.assertIn("run it: CML_CPU_CHECK=race reduction_run_cpu --step 1,2,3 --type int --n 1000003 "
                      "--check-only", md)
        self.assertIn("| CPU path bounds check (for memcheck) | PASS |", md)

    def test_on_a_gpu_they_are_compute_sanitizers(self):
        ls, files = self.graded(cpu=False)
        md = files["students/kim/feedback.md"]
        self.assertIn("compute-sanitizer racecheck is not clean: CPU race check: 2 hazards", md)
        self.assertIn("run it: compute-sanitizer --tool racecheck reduction_run --step 1,2,3 --type int --n 1000003 "
                      "--check-only", md)
        self.assertNotIn("CPU path race check", md)


class ProgressTests(unittest.TestCase):
    def test_the_reference_build_says_what_it_does(self):
        """--progress: the minute or two of the reference build is not silent."""
        def fake(argv, cwd=None, env=None, timeout=None):
            fake_build(argv)
            return ProcResult(argv, 0, "", "", False, 0.1)

        lab = LABS["04_reduction"]
        with mock.patch.dict(os.environ, {"CUDA_VISIBLE_DEVICES": ""}), \
                mock.patch("sys.stderr", new=io.StringIO()) as err:
            p = Pipeline(Options(kit=KIT, work=tmpdir(self) / "work", sandbox=False, jobs=2, progress=True, cpu_path=False), [lab],
                         runner=fake)
            p.prepare()
        text = err.getvalue()
        self.assertIn("building the reference solutions", text)
        self.assertIn("configuring the kit", text)
        for t in lab.ref_targets():
            self.assertIn(f"reference: building {t}", text)
        self.assertIn("probing for a GPU", text)


class GpusWithoutNvcc(unittest.TestCase):
    """GPUs listed (a Slurm task's CUDA_VISIBLE_DEVICES) where the kit
    configures without a CUDA compiler (the cpu preset's machine, no nvcc):
    the labs' CUDA targets do not exist in that tree, so the reference was
    asked for 'test_banks_ref' and stopped ("No rule to make target");
    grader.slurm failed there. The CPU path is taken instead, and every
    report says why; with nvcc the GPU path stays."""

    def prepare(self, cuda_compiler: str):
        built = []

        def fake(argv, cwd=None, env=None, timeout=None):

            fake_build(argv)
            if "-S" in argv:   # configure: the cache a kit configured here has
                build = Path(argv[argv.index("-B") + 1])
                build.mkdir(parents=True, exist_ok=True)
                (build / "CMakeCache.txt").write_text(f"CMAKE_CUDA_COMPILER:FILEPATH={cuda_compiler}\n"
                                                      "KIT_CPU:BOOL=ON\n")
            elif "--target" in argv:
                built.append(argv[argv.index("--target") + 1])
            return ProcResult(argv, 0, "", "", False, 0.1)

        lab = LABS["01_shared_banks"]
        with mock.patch.dict(os.environ, {"CUDA_VISIBLE_DEVICES": "0"}):
            p = Pipeline(Options(kit=KIT, work=tmpdir(self) / "work", sandbox=False, jobs=2), [lab], runner=fake)
            p.prepare()
        return p, built

    def test_no_cuda_compiler_grades_on_the_cpu_path(self):
        p, built = self.prepare("CMAKE_CUDA_COMPILER-NOTFOUND")
        self.assertTrue(p.cpu_path)
        self.assertNotIn("test_banks_ref", built)
        self.assertIn("test_banks_ref_cpu", built)
        self.assertIn("banks_run_ref_cpu", built)
        self.assertFalse(p.gpu_ok)
        self.assertIn("no CUDA compiler (nvcc)", p.no_gpu_reason)

    def test_with_nvcc_the_gpus_are_used(self):
        p, built = self.prepare("/usr/local/cuda/bin/nvcc")
        self.assertFalse(p.cpu_path)
        self.assertIn("test_banks_ref", built)
        self.assertNotIn("test_banks_ref_cpu", built)


class CliTests(unittest.TestCase):
    def run_cli(self, *argv):
        with mock.patch("sys.stderr", new=io.StringIO()) as err:
            rc = cli.main(list(argv))
        return rc, err.getvalue()

    def test_exit_codes_for_grader_problems(self):
        d = tmpdir(self)
        self.assertEqual(self.run_cli()[0], cli.EXIT_USAGE)
        self.assertEqual(self.run_cli(str(d / "nope"))[0], cli.EXIT_USAGE)
        rc, err = self.run_cli(str(d), "--kit", str(d))
        self.assertEqual(rc, cli.EXIT_GRADER)
        self.assertIn("has no", err)
        bad = d / "o.toml"
        bad.write_text("[04_reduction.tests]\nvisibility = 'secret'\n")
        rc, err = self.run_cli(str(d), "--rubric-override", str(bad))
        self.assertEqual(rc, cli.EXIT_GRADER)
        self.assertIn("tests.visibility", err)
        self.assertEqual(self.run_cli(str(d), "--secret-seed", "banana")[0], cli.EXIT_GRADER)
        self.assertEqual(self.run_cli(str(d), "--lab", "99_nothing")[0], cli.EXIT_USAGE)  # a bad option
        with self.assertRaises(SystemExit) as cm, mock.patch("sys.stderr", new=io.StringIO()):
            cli.main(["--jobs", "many"])
        self.assertEqual(cm.exception.code, 2)


class LabsGoOnAsTheyAreBuilt(unittest.TestCase):
    """A submission's lab goes to the GPU workers as soon as it is built and
    checked (pipeline.grade, building._build_in_slot), not once all its
    labs are: a self-check's or a student's nine labs waited for nine
    builds before the first ran."""

    def test_the_first_lab_runs_while_the_next_one_builds(self):
        import threading
        a, b = LABS["01_shared_banks"], LABS["08_occupancy"]
        events, lock, ran_a = [], threading.Lock(), threading.Event()

        def fake(argv, cwd=None, env=None, timeout=None):
            fake_build(argv)
            if "--build" in argv and "--target" in argv:   # what a build makes (the verifiers: fake_build's)
                build, i, targets = Path(argv[argv.index("--build") + 1]), argv.index("--target") + 1, []
                while i < len(argv) and not str(argv[i]).startswith("-"):
                    targets.append(argv[i])
                    i += 1
                for t in targets:
                    if not t.endswith("_verify"):
                        (build / t).parent.mkdir(parents=True, exist_ok=True)
                        (build / t).write_text("")
                if targets and all(t in b.student_targets() for t in targets):   # lab 08's own build, not the kit's
                    # lab 08's build waits for lab 01's run (a hang guard only: it comes at once)
                    self.assertTrue(ran_a.wait(600), "lab 01 did not run before lab 08 was built")
                    with lock:
                        events.append("build 08")
            return ProcResult(argv, 0, "", "", False, 0.1)

        def run_lab(job, gpu, progress):
            with lock:
                events.append(f"run {job.lab.name[:2]}")
            if job.lab.name == a.name:
                ran_a.set()
            progress.say(job.sub.student, job.lab.name, "graded", finished=True)

        sub = Submission("kim", "kim.zip", {a.name: {}, b.name: {}})
        with mock.patch.dict(os.environ, {"CUDA_VISIBLE_DEVICES": ""}):
            p = Pipeline(Options(kit=KIT, work=tmpdir(self) / "work", sandbox=False, jobs=2, cpu_path=True), [a, b],
                         runner=fake)
            p.prepare()
            with mock.patch.object(p, "_run_lab", run_lab), mock.patch.object(p, "_score"):
                _, errors = p.grade([sub])
        self.assertEqual(errors, [])
        self.assertEqual(events, ["run 01", "build 08", "run 08"])


class FakeBuildTests(unittest.TestCase):
    """A compile error through an injected runner: no nvcc, no GPU."""

    def test_compile_error_costs_only_what_needs_the_file(self):
        d = tmpdir(self)
        calls = []

        def fake(argv, cwd=None, env=None, timeout=None):

            fake_build(argv)
            calls.append(argv)
            if "--target" in argv and argv[argv.index("--target") + 1] == "test_banks_model":
                return ProcResult(argv, 2, "", f"{cwd}/labs/01_shared_banks/bank_model.c:7:5: error: expected ';' "
                                               "before 'return'\ngmake[2]: *** [x] Error 1\n", False, 0.1)
            return ProcResult(argv, 0, "", "", False, 0.1)

        lab = LABS["01_shared_banks"]
        sub = Submission("kim", "kim.zip", {lab.name: {"bank_model.c": b"int bank_of(unsigned a) { return 0 }\n",
                                                        "banks.cu": b"__global__ void k() { __shared__ int s; }\n"}})
        with mock.patch.dict(os.environ, {"CUDA_VISIBLE_DEVICES": ""}):
            p = Pipeline(Options(kit=KIT, work=d / "work", sandbox=False, jobs=2, cpu_path=False), [lab], runner=fake)
            p.prepare()
            results, errors = p.grade([sub])
        self.assertEqual(errors, [])
        ls = results[0].labs[0]
        self.assertTrue(any("bank_model.c:7:5: error: expected ';'" in e for e in ls.build_errors), ls.build_errors)
        self.assertTrue(any("does not compile" in n for n in ls.notes))
        self.assertFalse(any("/work/" in e for e in ls.build_errors))  # paths shown relative to the kit
        built = [a[a.index("--target") + 1] for a in calls if "--target" in a]
        self.assertIn("banks_run", built)  # the other targets were still built
        write_all(d / "out", results, [lab.name])
        out = d / "out" / "students" / "kim"
        self.assertIn("error: expected ';'", (out / "feedback.md").read_text())
        # ... and in every platform's file, not only feedback.md
        gs = json.loads((out / "gradescope" / "results.json").read_text())
        self.assertIn("error: expected ';'", gs["output"])
        self.assertTrue(any("error: expected ';'" in t["output"] for t in gs["tests"]))
        pl = json.loads((out / "prairielearn" / "results.json").read_text())
        self.assertIn("error: expected ';'", pl["output"])
        self.assertTrue(any("error: expected ';'" in t["output"] for t in pl["tests"]))
        self.assertIn("error: expected ';'", (d / "out" / "junit.xml").read_text())


if __name__ == "__main__":
    unittest.main()


class BenchProjection(unittest.TestCase):
    """grader/tools/bench's summary: the GPU stage per submission-lab and
    the class of 300 x 6 projected on 1, 4 and 8 GPUs from the class's
    measured wall time (not from the stage divided by --per-gpu: sharing a
    GPU overlaps only as much as it really does)."""

    def test_the_gpu_stage_and_the_projection(self):
        from types import SimpleNamespace
        from cmlgrade.bench import projection, summarize
        results = [SimpleNamespace(timings={"04_reduction": {"build": 4.0, "tests": 20.0, "gpu": 30.0},
                                            "06_transpose": {"build": 2.0, "tests": 10.0, "gpu": 10.0}})]
        s = summarize(results, 10.0, {"reference build and skeletons": 12.0})
        self.assertEqual((s["submission_labs"], s["gpu_stage_s"], s["phases"]["build"]["mean"]), (2, 20.0, 3.0))
        line = projection(s, 2, 4)   # 10 s of class on 4 GPUs for 2 submission-labs: 20 GPU-seconds each
        self.assertIn("20.0 GPU wall seconds per submission-lab", line)
        self.assertIn("GPU stage alone: 20.0 s", line)
        self.assertIn("1 GPU: 10.0 h  4 GPUs: 2.5 h  8 GPUs: 1.2 h", line)   # 1800 x 20 s = 10 h on one GPU
        self.assertIn("builds 1.5 CPU-hours", line)
        # the seconds its labs waited for the GPU alone, said beside the table
        import io
        from cmlgrade.benchreport import print_table
        results[0].timings["04_reduction"]["waiting alone"] = 3.0
        s = summarize(results, 10.0, {"reference build and skeletons": 12.0})
        self.assertEqual(s["waiting_alone_s"], 1.5)
        out = io.StringIO()
        print_table({"checker-first": s}, out)
        self.assertIn("checker-first: of those seconds, 1.50 a submission-lab (mean) waited for the GPU alone",
                      out.getvalue())

    def test_a_run_cut_short_prints_what_it_graded(self):
        # SIGTERM (a batch job's time limit) or Ctrl-C in the middle of a mode: the submission-labs graded so
        # far keep their phase table and --json, and the bench exits 1 at once (a stand-in pipeline grades
        # two of them, then the signal comes while it would go on for 30 s)
        import subprocess
        import sys
        import tempfile
        grader = Path(__file__).resolve().parent.parent
        script = '''
import os, signal, sys, time
from types import SimpleNamespace
sys.path.insert(0, sys.argv[1])
from cmlgrade import bench

class StandIn:
    def __init__(self, opts, labs):
        self.gpu_ok, self.no_gpu_reason, self.per_gpu, self.per_gpu_note = False, "stand-in", 1, ""
        self.cpu_path = True
        self.sandbox, self.notes, self.slots, self.on_lab_done = SimpleNamespace(note="none"), [], None, None
    def prepare(self):
        pass
    def _labtool(self):
        return None
    def grade(self, subs):
        for build in (2.0, 4.0):
            self.on_lab_done(SimpleNamespace(run=SimpleNamespace(seconds={"build": build, "tests": 6.0})))
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)
        print("not cut short")
        return [], []

bench.Pipeline = StandIn
bench.list_gpus = lambda: []
bench.make_class = lambda kit, labs, labtool, size, out, alone=False, cpu=False: [
    SimpleNamespace(student=f"s{i}", files={lab.name: [] for lab in labs}) for i in range(size)]
sys.exit(bench.main(["--class", "3", "--lab", "01_shared_banks", "--lab", "05_stencil", "--modes",
                     "checker-first", "--json", sys.argv[2], "--work", sys.argv[3]]))
'''
        with tempfile.TemporaryDirectory() as tmp:
            got = subprocess.run([sys.executable, "-c", script, str(grader), f"{tmp}/b.json", f"{tmp}/w"],
                                 capture_output=True, text=True, timeout=300)
            self.assertEqual(got.returncode, 1, got.stdout + got.stderr)
            self.assertNotIn("not cut short", got.stdout)
            self.assertIn("bench: cut short", got.stdout)
            self.assertIn("into mode 'checker-first': 2 of 6 submission-labs graded", got.stdout)
            row = next(line for line in got.stdout.splitlines() if line.startswith("checker-first "))
            self.assertEqual(row.split()[1:4], ["2", "3.00", "/"])   # 2 graded, build mean 3.00 (2 and 4)
            data = json.loads(Path(f"{tmp}/b.json").read_text())
            self.assertTrue(data["cut_short"])
            self.assertEqual((data["graded"], data["submission_labs"]), (2, 6))
            self.assertEqual(data["modes"]["checker-first"]["phases"]["tests"]["mean"], 6.0)

    def test_the_figures_are_labelled_with_the_gpus_model(self):
        # an H100's figures and an H200's never share a table: the bench names the model and the count
        from unittest import mock
        from cmlgrade import bench, gpuhold
        listed = [("0", "GPU-aa", "NVIDIA H200"), ("1", "GPU-bb", "NVIDIA H200"), ("2", "GPU-cc", "NVIDIA H100 80GB HBM3")]
        with mock.patch.object(gpuhold, "_smi_gpus", return_value=listed):
            with mock.patch.object(bench, "list_gpus", return_value=["0", "1"]):
                self.assertEqual(bench.gpus_named(), "2 x NVIDIA H200")
            with mock.patch.object(bench, "list_gpus", return_value=["0", "2", "1"]):
                self.assertEqual(bench.gpus_named(), "2 x NVIDIA H200, 1 x NVIDIA H100 80GB HBM3")
            with mock.patch.object(bench, "list_gpus", return_value=["GPU-0/1/0"]):   # a MIG instance: no model
                self.assertEqual(bench.gpus_named(), "1 x GPU GPU-0/1/0 (model not told)")
            with mock.patch.object(bench, "list_gpus", return_value=[]):
                self.assertEqual(bench.gpus_named(), "")

    def test_the_steady_state_leaves_the_batchs_start_out_once(self):
        # a class of a few submissions spends most of its wall time before its first lab run (the slots'
        # pristine builds): that is paid once a batch, not once a submission-lab
        from types import SimpleNamespace
        from cmlgrade.benchreport import steady_projection, summarize
        t = {"build": 1.0, "gpu": 5.0}
        results = [SimpleNamespace(timings={"04_reduction": dict(t, began=100.0, ended=110.0),
                                            "06_transpose": dict(t, began=104.0, ended=118.0)}),
                   SimpleNamespace(timings={"04_reduction": dict(t, began=109.0, ended=120.0),
                                            "06_transpose": dict(t, began=50.0, ended=60.0, cached=1.0)})]
        s = summarize(results, 120.0, {"reference build and skeletons": 30.0})
        self.assertEqual((s["runs_span_s"], s["runs_began_s"], s["runs_counted"]), (20.0, 100.0, 3))
        line = steady_projection(s, 2)   # 20 s x 2 GPUs / 3 runs; 100 s + 30 s once
        self.assertIn("13.3 GPU wall seconds per submission-lab", line)
        self.assertIn("130 s before it once", line)
        self.assertIn("1 GPU: 6.7 h  4 GPUs: 1.7 h  8 GPUs: 0.9 h", line)   # (130 + 1800 x 13.33) / g
        # without the runs' times (every lab cached): nothing to say
        self.assertIsNone(steady_projection(summarize([SimpleNamespace(timings={"04_reduction": dict(t)})], 1.0,
                                                      {}), 1))


    def test_the_verdicts_are_checked_against_what_each_submission_is(self):
        """A lab left as the reference must be at full marks, the lab a
        catalogued mistake was made in must lose points: each miss named."""
        import io
        from types import SimpleNamespace as NS
        from cmlgrade.bench import print_verdicts, verdicts

        def sub(student, **pts):   # None: not submitted (--mistakes-alone)
            return NS(student=student, labs=[NS(lab=lab, points=p or 0.0, max_points=10.0, submitted=p is not None)
                                             for lab, p in pts.items()])
        results = [sub("s000_reference", **{"01_shared_banks": 10.0, "03_tiled_matmul": 10.0}),
                   sub("s001_01_no_padding", **{"01_shared_banks": 7.0, "03_tiled_matmul": 10.0}),
                   sub("s002_03_wrong_tile", **{"01_shared_banks": 9.5, "03_tiled_matmul": 10.0}),
                   sub("s003_03_alone", **{"01_shared_banks": None, "03_tiled_matmul": 4.0})]
        v = verdicts(results)
        self.assertEqual((v["reference_labs"], v["mistake_labs"]), (4, 3))   # a lab not submitted: neither
        self.assertEqual(v["reference_docked"], ["s002_03_wrong_tile 01_shared_banks: 9.5/10"])
        self.assertEqual(v["mistakes_not_caught"], ["s002_03_wrong_tile 03_tiled_matmul: 10/10"])
        out = io.StringIO()
        print_verdicts("prebuilt", v, out)
        self.assertIn("3 of 4 labs left as the reference at full marks; 2 of 3 labs with a catalogued mistake "
                      "lose points", out.getvalue())


    def test_a_class_of_mistakes_alone_holds_each_mistakes_lab_only(self):
        from cmlgrade.bench import make_class
        labtool = KIT_BUILD / "tools" / "labtool" / "labtool"
        if not labtool.is_file():
            self.skipTest(f"no {labtool}: build the kit first")
        ls = [LABS["04_reduction"], LABS["06_transpose"]]
        n = 1 + sum(len(lab.mistakes) for lab in ls)
        mixed = make_class(KIT, ls, labtool, n, tmpdir(self))
        alone = make_class(KIT, ls, labtool, n, tmpdir(self), alone=True)
        self.assertEqual([s.student for s in mixed], [s.student for s in alone])
        self.assertEqual(sorted(alone[0].files), ["04_reduction", "06_transpose"])   # the reference: every lab
        for m, a in zip(mixed[1:], alone[1:]):
            lab = next(lab.name for lab in ls if m.student.split("_", 1)[1].startswith(lab.name[:2] + "_"))
            self.assertEqual(sorted(m.files), ["04_reduction", "06_transpose"])
            self.assertEqual(list(a.files), [lab], a.student)
            self.assertEqual(a.files[lab], m.files[lab])
            ref = alone[0].files[lab]
            self.assertNotEqual(a.files[lab], ref, f"{a.student}: the mistake was made")
        gpu_only = {f"{lab.name[:2]}_{m.name}" for lab in ls for m in lab.mistakes if m.gpu_only}
        self.assertTrue(gpu_only, "lab 04 has a mistake only a GPU can catch (past 2^31 elements)")
        self.assertTrue(gpu_only <= {s.student.split("_", 1)[1] for s in mixed})
        on_cpu = make_class(KIT, ls, labtool, n, tmpdir(self), cpu=True)
        self.assertFalse(gpu_only & {s.student.split("_", 1)[1] for s in on_cpu},
                         "on the CPU path a class leaves out what only a GPU catches: it would count as missed")

    def test_the_modes_verdicts_are_compared_item_by_item_but_the_timed_ones(self):
        from cmlgrade.bench import compare_verdicts

        def write(root, perf_points, step_points, got="0.5", errors=324):
            d = root / "students" / "kim"
            d.mkdir(parents=True)
            items = [{"name": "step 1 x", "category": "tests", "points": step_points, "status": "passed",
                      "details": [f"step1::edge failed: out[3] expected 1, got {got}"]},
                     {"name": "compute-sanitizer memcheck", "category": "sanitizer", "points": 0.0,
                      "status": "failed", "feedback": [f"compute-sanitizer memcheck is not clean: ERROR SUMMARY: "
                                                       f"{errors} errors"]},
                     {"name": "performance step 1 x", "category": "performance", "points": perf_points,
                      "feedback": [f"{perf_points} ms"]}]
            (d / "result.json").write_text(json.dumps({"student": "kim", "labs": [
                {"lab": "05_stencil", "items": items, "build_errors": [], "not_counted": []}]}))
        root = tmpdir(self)
        write(root / "a", 3.0, 10.0)
        write(root / "b", 2.5, 10.0)   # another run's times: the same verdicts
        write(root / "c", 3.0, 7.5)
        write(root / "d", 3.0, 10.0, got="-7.25")   # a value read from memory nobody wrote: not a verdict
        write(root / "e", 3.0, 10.0, errors=196)   # memcheck counted other errors in another run
        self.assertEqual(compare_verdicts(root / "a", root / "b"), (4, [], []))
        self.assertEqual(compare_verdicts(root / "a", root / "d"), (4, [], []))
        # the same test crashing in one run and failing in the other (memory written out of bounds): not one either
        r = root / "d" / "students" / "kim" / "result.json"
        r.write_text(r.read_text().replace("step1::edge failed:", "step1::edge crashed:"))
        self.assertEqual(compare_verdicts(root / "a", root / "d"), (4, [], []))
        self.assertEqual(compare_verdicts(root / "a", root / "c"), (4, ["kim / 05_stencil / step 1 x"], []))
        # a count in the feedback only: said apart, not a difference
        self.assertEqual(compare_verdicts(root / "a", root / "e"),
                         (4, [], ["kim / 05_stencil / compute-sanitizer memcheck"]))
        # racecheck's first finding in another kernel and line: a race's, said apart too
        for run, where in (("a", "stencil_kernel5 at stencil.cu:402"), ("e", "load_plane at stencil.cu:362")):
            r = root / run / "students" / "kim" / "result.json"
            r.write_text(r.read_text().replace('"feedback": ["compute-sanitizer',
                                               f'"details": ["first finding in kernel {where}: Error: Race '
                                               f'reported"], "feedback": ["compute-sanitizer'))
        self.assertEqual(compare_verdicts(root / "a", root / "e"),
                         (4, [], ["kim / 05_stencil / compute-sanitizer memcheck"]))
        # a point more is a difference whatever the counts
        r = root / "e" / "students" / "kim" / "result.json"
        r.write_text(r.read_text().replace('"points": 0.0', '"points": 4.0'))
        self.assertEqual(compare_verdicts(root / "a", root / "e"),
                         (4, ["kim / 05_stencil / compute-sanitizer memcheck"], []))

    def test_files_a_race_changes_differ_in_numbers_only(self):
        """On the CPU path the bench compares the modes' files byte for byte:
        a race (lab 01's tile_read_before_it_is_loaded: 67043967 elements
        wrong in one run, 67043986 in the other, each test failing in both)
        changes numbers only, which is no difference; a changed word is."""
        from cmlgrade.benchcompare import unexplained
        root = tmpdir(self)
        for run, n, word in (("a", "67043967", "failed"), ("b", "67043986", "failed"), ("c", "67043967", "passed")):
            (root / run).mkdir()
            (root / run / "feedback.md").write_text(f"step5::product {word}: {n} of 67109888 elements of C wrong\n")
        self.assertEqual(unexplained(root / "a", root / "b", ["feedback.md"]), [])
        self.assertEqual(unexplained(root / "a", root / "c", ["feedback.md"]), ["feedback.md"])
        self.assertEqual(unexplained(root / "a", root / "b", ["only_in_a.md"]), ["only_in_a.md"])

    def test_two_benches_each_in_one_mode_are_compared_by_compare(self):
        """bench --compare A B: two benches run apart (a mode a GPU) judged as
        the two modes of one run are; a work folder stands for its one
        out-MODE folder; a folder of no outputs is an error, not 'the same'."""
        import io
        from contextlib import redirect_stderr
        from cmlgrade.bench import compare_runs

        def write(d, points):
            s = d / "students" / "kim"
            s.mkdir(parents=True)
            (s / "result.json").write_text(json.dumps({"student": "kim", "labs": [
                {"lab": "01_shared_banks", "build_errors": [], "not_counted": [], "items": [
                    {"name": "step 2 x", "category": "tests", "points": points, "status": "passed"}]}]}))
        root = tmpdir(self)
        write(root / "wa" / "out-prebuilt", 10.0)
        write(root / "wb" / "out-checker-first", 10.0)
        write(root / "c", 7.5)
        out = io.StringIO()
        self.assertEqual(compare_runs(root / "wa", root / "wb", out), 0)
        self.assertIn("3 items, the same", out.getvalue())
        out = io.StringIO()
        self.assertEqual(compare_runs(root / "wa" / "out-prebuilt", root / "c", out), 1)
        self.assertIn("1 differ: kim / 01_shared_banks / step 2 x", out.getvalue())
        (root / "empty").mkdir()
        err = io.StringIO()
        with redirect_stderr(err):
            self.assertEqual(compare_runs(root / "wa", root / "empty", io.StringIO()), 3)
        self.assertIn("not a bench's outputs", err.getvalue())


class BenchProcessLog(unittest.TestCase):
    """benchlog: the process log (CMLGRADE_PROCESS_LOG) read back: each
    process by kind, the contexts the harnesses' traces report, and a gated
    reference run's wait at its gate kept out of the timing's seconds."""

    LOG = """\
    6.00 s  rc 0  /w/slots/0/src: cmake --build /w/slots/0/build --target test_x x_run x_harness -j 1
    2.00 s  rc 1  /w/results/s/04/check-together-public-step1: /w/students/s/build/x_harness in out
          harness:    0.500 s  case 0: started
          harness:    0.700 s  case 0: the CUDA context made
          harness:    1.900 s  case 3: written, torn down
    9.00 s  rc 0  /w/results/s/04/timed/reference-1: /w/reference/build/x_harness_ref in out gate
          harness:    0.000 s  case 0: started
          harness:    0.400 s  case 0: the CUDA context made
          harness:    7.400 s  case 0: let go
          harness:    8.900 s  case 2: written, torn down
    3.00 s  rc 0  /w/results/s/04/timed/student: /w/students/s/build/x_harness in out
          harness:    0.000 s  case 0: started
          harness:    1.200 s  case 0: the CUDA context made
    4.00 s  rc 0  /w/results/s/04/counters-student-steps: /usr/local/cuda/bin/ncu --csv --log-file f x_harness in
          harness:    0.000 s  case 0: the CUDA context made
    1.50 s  rc 0  /w/results/s/04: /opt/cuda/bin/compute-sanitizer --tool memcheck x_run --step 1
    5.00 s  rc 0  /w/reference/results/04-gpu0: /w/reference/build/test_x_ref --json=x.json
    0.20 s  rc 0  /w/reference/build: /w/reference/build/x_verify describe 1
harness: not under a process line
"""

    def test_processes_by_kind_contexts_and_gate_waits(self):
        from cmlgrade import benchlog
        s = benchlog.summarize(self.LOG)
        self.assertEqual(s["kinds"], {
            "build": {"n": 1, "seconds": 6.0}, "harness: checks": {"n": 1, "seconds": 2.0},
            "harness: timing": {"n": 2, "seconds": 5.0},   # 9 s less 7 s at the gate, and 3 s
            "Nsight Compute": {"n": 1, "seconds": 4.0}, "compute-sanitizer": {"n": 1, "seconds": 1.5},
            "test program": {"n": 1, "seconds": 5.0}, "verifier": {"n": 1, "seconds": 0.2}})
        self.assertEqual(s["contexts"], [0.7, 0.4, 1.2, 0.0])
        self.assertEqual(s["gate_wait_s"], 7.0)
        text = "\n".join(benchlog.lines(s, 2))
        self.assertIn("harness: timing           2       5.0         2.50", text)
        self.assertIn("CUDA contexts the harnesses made: 4, median 0.55 s, max 1.20 s, 2.3 s in all", text)
        self.assertIn("waited 7.0 s in all at their gates", text)

    def test_a_profiled_runs_wait_at_its_gate_counts_from_its_warm_up(self):
        # profrun.py: the context made, the profiler's warm-up launched (work), then the wait for the GPU alone
        from cmlgrade import benchlog
        s = benchlog.summarize("""\
    6.00 s  rc 0  /w/results/s/01/profile-student-steps: /cuda/bin/ncu --csv x_harness in out gate warm
          harness:    0.000 s  case 0: started
          harness:    0.500 s  case 0: the CUDA context made
          harness:    1.250 s  case 0: the profiler's warm-up launched
          harness:    4.250 s  case 0: let go
          harness:    5.500 s  case 9: written, torn down
""")
        self.assertEqual(s["kinds"], {"Nsight Compute": {"n": 1, "seconds": 3.0}})   # 6 s less 3 s at the gate
        self.assertEqual(s["contexts"], [0.5])
        self.assertEqual(s["gate_wait_s"], 3.0)

    def test_the_processes_by_lab(self):
        # a student's folder, the reference's, and a slot's build of several labs (no lab of its own); a student
        # named after a mistake (s001_01_...) is not a lab
        from cmlgrade import benchlog
        log = """\
    6.00 s  rc 0  /w/grade/slots/0/src: cmake --build /w/slots/0/build --target test_x x_run -j 1
    7.50 s  rc 0  /w/grade/results/s001_01_padding_forgotten/01_shared_banks: /cuda/bin/compute-sanitizer --tool racecheck r
    2.50 s  rc 0  /w/grade/results/s001_01_padding_forgotten/01_shared_banks/profile-student-steps: /cuda/bin/ncu --csv x
    4.00 s  rc 0  /w/grade/reference/results/01_shared_banks-gpu1: /w/reference/build/test_banks_ref --json=x.json
    9.00 s  rc 0  /w/grade/results/s000_reference/04_reduction/timed/reference-1: /w/reference/build/reduction_harness_ref i o g
          harness:    0.400 s  case 0: the CUDA context made
          harness:    7.400 s  case 0: let go
"""
        s = benchlog.summarize(log)
        self.assertEqual(s["labs"], {"": {"build": 6.0},
                                     "01_shared_banks": {"compute-sanitizer": 7.5, "Nsight Compute": 2.5,
                                                         "test program": 4.0},
                                     "04_reduction": {"harness: timing": 2.0}})   # 9 s less 7 s at the gate
        text = "\n".join(benchlog.lines(s, 2))
        self.assertIn("01_shared_banks          14.0 s: compute-sanitizer 7.5 s, test program 4.0 s", text)
        self.assertIn("04_reduction              2.0 s: harness: timing 2.0 s", text)
        self.assertNotIn("s001_01", text)
        self.assertEqual(benchlog.summarize("")["kinds"], {})
        self.assertEqual(benchlog.read(tmpdir(self) / "none")["contexts"], [])


class BuildTool(unittest.TestCase):
    """The grader's trees are built with Ninja where it is installed, make
    elsewhere (build.generator); a student's compiler messages are the
    same either way."""

    NINJA_LOG = (
        "[0/2] Re-checking globbed directories...\n"
        "[1/6] Building CUDA object CMakeFiles/transpose_kernels_student.dir/labs/06_transpose/transpose.cu.o\n"
        "FAILED: CMakeFiles/transpose_kernels_student.dir/labs/06_transpose/transpose.cu.o \n"
        "/usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler -I{root}/labs/06_transpose -O3 -Werror-like "
        "-c {root}/labs/06_transpose/transpose.cu -o CMakeFiles/x.o\n"
        "{root}/labs/06_transpose/transpose.cu(144): error: expected an expression\n"
        "  int oops = ; \n"
        "             ^\n"
        "\n"
        "1 error detected in the compilation of \"{root}/labs/06_transpose/transpose.cu\".\n"
        "ninja: build stopped: subcommand failed.\n")
    MAKE_LOG = (
        "[ 75%] Building CUDA object CMakeFiles/transpose_kernels_student.dir/labs/06_transpose/transpose.cu.o\n"
        "{root}/labs/06_transpose/transpose.cu(144): error: expected an expression\n"
        "  int oops = ; \n"
        "             ^\n"
        "\n"
        "1 error detected in the compilation of \"{root}/labs/06_transpose/transpose.cu\".\n"
        "gmake[3]: *** [CMakeFiles/transpose_kernels_student.dir/build.make:77: x.o] Error 2\n"
        "gmake: *** [Makefile:863: test_transpose] Error 2\n")

    def test_compiler_messages_are_the_same_from_ninja_and_make(self):
        from cmlgrade.build import compiler_errors
        root = Path("/w/src")
        ninja = compiler_errors(self.NINJA_LOG.format(root=root), root)
        self.assertEqual(ninja, compiler_errors(self.MAKE_LOG.format(root=root), root))
        self.assertEqual(ninja[0], "labs/06_transpose/transpose.cu(144): error: expected an expression")
        self.assertFalse(any("nvcc" in ln or "FAILED" in ln or "ninja" in ln for ln in ninja), ninja)

    def test_ninja_where_installed_make_where_not_or_asked(self):
        from cmlgrade import build
        with mock.patch.object(build.shutil, "which", return_value="/usr/bin/ninja"), \
                mock.patch.dict(os.environ, {"CMLGRADE_GENERATOR": ""}):
            self.assertEqual(build.generator(), "Ninja")
            with mock.patch.dict(os.environ, {"CMLGRADE_GENERATOR": "make"}):
                self.assertEqual(build.generator(), "Unix Makefiles")
        with mock.patch.object(build.shutil, "which", return_value=None):
            self.assertEqual(build.generator(), "Unix Makefiles")

    def test_a_folder_of_the_other_tool_is_made_again_and_ninja_keeps_depfiles(self):
        from cmlgrade import build
        src, folder = tmpdir(self) / "src", tmpdir(self) / "build"
        src.mkdir()
        folder.mkdir()
        (folder / "CMakeCache.txt").write_text(f"CMAKE_HOME_DIRECTORY:INTERNAL={src}\n"
                                               "CMAKE_GENERATOR:INTERNAL=Unix Makefiles\n")
        self.assertEqual(build.native_args(folder), [])
        calls = []

        class Exe:
            def run(self, argv, **kw):
                calls.append(argv)
                return ProcResult(argv, 0, "", "", False, 0.1)
        with mock.patch.object(build, "generator", return_value="Ninja"):
            build.configure(Exe(), src, folder, "90", 60, [])
        self.assertFalse(folder.exists())   # make's folder: cmake would refuse -G Ninja there
        self.assertEqual(calls[0][calls[0].index("-G") + 1], "Ninja")
        folder.mkdir()
        (folder / "CMakeCache.txt").write_text(f"CMAKE_HOME_DIRECTORY:INTERNAL={src}\n"
                                               "CMAKE_GENERATOR:INTERNAL=Ninja\n")
        self.assertEqual(build.native_args(folder), ["--", "-d", "keepdepfile"])
        build.build_target(Exe(), src, folder, ["a", "b"], 1, 60, [])
        self.assertEqual(calls[-1][-3:], ["--", "-d", "keepdepfile"])
        with mock.patch.object(build, "generator", return_value="Ninja"):
            build.configure(Exe(), src, folder, "90", 60, [])
        self.assertTrue(folder.exists())   # the same tool and source: kept


class CudaArch(unittest.TestCase):
    """What the grader compiles for: --cuda-arch, else the GPU grading, else
    sm_90; never the shell's CUDAARCHS (a student's export for their own
    builds, e.g. 75 from self-study, whose sm_75 has no __reduce_add_sync
    and would make honest code "not compile")."""

    def test_the_architecture_is_given_or_the_gpu_or_sm90(self):
        from unittest import mock
        from cmlgrade.cli import parser
        from cmlgrade.stagebase import cuda_arch
        from cmlgrade.sandbox import scrubbed_env
        with mock.patch.dict(os.environ, {"CUDAARCHS": "75"}):
            self.assertEqual(parser().parse_args(["x"]).cuda_arch, "")
            self.assertNotIn("CUDAARCHS", scrubbed_env())   # the kit's CMake never sees it in the grader's builds
        self.assertEqual(cuda_arch("", []), "90")
        self.assertEqual(cuda_arch("", ["0"]), "")   # the kit's CMake builds for the visible GPU
        self.assertEqual(cuda_arch("86", []), "86")


class StoppedRun(unittest.TestCase):
    """grade.py stopped (kill, Ctrl-C, a closed terminal) removes its
    temporary build folder and says so, instead of leaving cmlgrade-* in
    $TMPDIR (a class of reruns filled /tmp)."""

    def test_sigterm_removes_the_temporary_folder(self):
        import signal
        import subprocess
        import sys
        import time
        tmp = tmpdir(self)
        sub = tmp / "sub"
        sub.mkdir()
        for f in ("banks.cu", "bank_model.c"):
            (sub / f).write_bytes((KIT / "solutions" / "01_shared_banks" / f).read_bytes())
        p = subprocess.Popen([sys.executable, str(KIT / "grader" / "grade.py"), str(sub), "--lab", "01_shared_banks",
                              "--out", str(tmp / "out"), "--no-cache"],
                             env=dict(os.environ, TMPDIR=str(tmp)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        self.addCleanup(lambda: p.poll() is None and p.kill())
        while not list(tmp.glob("cmlgrade-*/*")):   # readiness: the run has its folder and works in it
            self.assertIsNone(p.poll(), "grade.py ended before it made its temporary folder")
            time.sleep(0.05)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate()
        self.assertEqual(p.returncode, 128 + signal.SIGTERM, err)
        self.assertIn("stopped (SIGTERM); its temporary build folder is removed", err)
        self.assertEqual(list(tmp.glob("cmlgrade-*")), [], err)


class Heartbeat(unittest.TestCase):
    """The progress lines: where no line came for a while, one says what is
    still running and for how long (on a terminal or not), and none once the
    run is idle."""

    def test_a_long_stage_is_never_silent(self):
        import contextlib
        import time
        from cmlgrade.progress import Progress
        err = io.StringIO()
        with mock.patch.object(Progress, "HEARTBEAT_S", 0.3), contextlib.redirect_stderr(err):
            p = Progress(True, 2)
            self.addCleanup(p.close)
            p.say("alice", "04_reduction", "testing on the CPU path")
            while "still running" not in err.getvalue():   # readiness: CTest's timeout bounds a hang
                time.sleep(0.05)
            p.say("alice", "04_reduction", "done", finished=True)
            p.idle()
            seen = err.getvalue()
            time.sleep(1.0)
            after = err.getvalue()
        self.assertIn("[0/2] still running: alice 04_reduction: testing on the CPU path (", seen)
        self.assertEqual(after, seen, "a heartbeat with nothing running")

    def test_a_built_lab_waiting_for_a_gpu_does_not_read_as_building(self):
        """A self-check on 2 GPUs said "reference 08_occupancy: building
        (318 s)" of a lab built minutes before and waiting for a GPU: the
        heartbeat counts the waiting labs apart, and a lab that starts
        leaves the count (its stage named, with no line of its own)."""
        import contextlib
        import time
        from cmlgrade.progress import Progress
        err = io.StringIO()
        with mock.patch.object(Progress, "HEARTBEAT_S", 0.3), contextlib.redirect_stderr(err):
            p = Progress(True, 3)
            self.addCleanup(p.close)
            for lab in ("07_vectorized", "08_occupancy", "09_shared_sort"):
                p.say("ref", lab, "building")
            p.queued("ref", "08_occupancy", "waiting for a GPU")
            p.queued("ref", "09_shared_sort", "waiting for a GPU")
            p.say("ref", "07_vectorized", "testing on GPU 1")
            while "still running" not in err.getvalue():   # readiness: CTest's timeout bounds a hang
                time.sleep(0.05)
            first = err.getvalue()
            n = first.count("\n")
            p.say("ref", "08_occupancy", "started on GPU 0", line=False)
            self.assertEqual(err.getvalue().count("\n"), n, "a stage said with line=False printed a line")
            while err.getvalue().count("still running") < 2:
                time.sleep(0.05)
            second = err.getvalue()[len(first):]
        beat = [ln for ln in first.splitlines() if "still running" in ln][0]
        self.assertIn("ref 07_vectorized: testing on GPU 1 (", beat)
        self.assertNotIn("building", beat)
        self.assertTrue(beat.endswith("; 2 labs built, waiting for a GPU"), beat)
        self.assertIn("ref 08_occupancy: started on GPU 0 (", second)
        self.assertIn("; 1 lab built, waiting for a GPU", second)
        p.idle()
        self.assertEqual(p.waiting, {})
