"""A kit without solutions/ (tools/release's student edition): the student's
self-check builds no reference, counts the tests the kit's own test programs
list, and reads "not measured" for what needs the reference. Through an
injected command runner (no nvcc, no GPU)."""
import dataclasses
import json
import os
import unittest
from pathlib import Path
from unittest import mock

from helpers import KIT, fake_build, labs, tmpdir

from cmlgrade import building, gpuhold, labrun
from cmlgrade.intake import Submission
from cmlgrade.refruns import criterion_list
from cmlgrade.pipeline import Options, Pipeline
from cmlgrade.stagebase import NO_REFERENCE
from cmlgrade.sandbox import ProcResult

LAB = labs(["01_shared_banks"])["01_shared_banks"]
MODEL, GPU = LAB.targets.model_tests, LAB.targets.tests
# What the kit's test programs list: an odd number of tests per step, the
# model's steps in one program, the kernels' in the other.
LISTED = {MODEL: {f"step{s}": [f"model_case_{s}_{i}" for i in range(1 + s % 3)] for s in (1, 2, 3)},
          GPU: {f"step{s}": [f"kernel_case_{s}_{i}" for i in range(2 + s % 2)] for s in (4, 5, 6, 7)}}


def listing(binary: str) -> str:
    out = []
    for suite, names in LISTED[binary].items():
        out.append(f"{suite}: {len(names)} test{'s' if len(names) > 1 else ''}")
        out += [("└── " if i == len(names) - 1 else "├── ") + n for i, n in enumerate(names)]
    return "\n".join(out) + "\n"


class FakeKit:
    """cmake, the test programs and the runner of a student edition. `outcome`
    gives (status, messages) per (suite, test); `unbuilt` targets fail to
    compile; a *_ref target does not exist, as in a release."""

    def __init__(self, outcome, unbuilt=()):
        self.outcome, self.unbuilt, self.calls = outcome, set(unbuilt), []

    def __call__(self, argv, cwd=None, env=None, timeout=None):
        argv = [str(a) for a in argv]
        self.calls.append(argv)
        name = Path(argv[0]).name
        if name == "cmake" and "--target" in argv:
            build = Path(argv[argv.index("--build") + 1])
            for t in self.targets(argv):
                if t.endswith("_verify"):   # the lab's verifier: the kit's real one (helpers.fake_build)
                    fake_build(["cmake", "--build", str(build), "--target", t])
                    continue
                if t.endswith("_ref"):
                    return ProcResult(argv, 2, "", f"gmake: *** No rule to make target '{t}'.  Stop.\n", False, 0.1)
                if t in self.unbuilt:
                    return ProcResult(argv, 2, "", f"{cwd}/labs/{LAB.name}/bank_model.c:3:1: error: expected ';'\n",
                                      False, 0.1)
                build.mkdir(parents=True, exist_ok=True)
                (build / t).write_text("built by the fake\n")
        if name in LISTED:
            if "--list" in argv:
                return ProcResult(argv, 0, listing(name), "", False, 0.1)
            report = next(a.split("=", 1)[1] for a in argv if a.startswith("--json="))
            only = next((a.split("=", 1)[1][:-2] for a in argv if a.startswith("--filter=")), None)
            suites = [{"name": s, "tests": [{"name": t, "status": self.outcome(s, t)[0],
                                             "messages": self.outcome(s, t)[1]} for t in tests]}
                      for s, tests in LISTED[name].items() if only in (None, s)]
            Path(report).write_text(json.dumps({"test_suites": suites}))
            return ProcResult(argv, 0, "", "", False, 0.1)
        if name == "compute-sanitizer":
            return ProcResult(argv, 0, "========= ERROR SUMMARY: 0 errors\n", "", False, 0.1)
        return ProcResult(argv, 0, "", "", False, 0.1)   # configure; the runner prints no counters

    @staticmethod
    def targets(argv):
        out = []
        for a in argv[argv.index("--target") + 1:]:
            if a.startswith("-"):
                break
            out.append(a)
        return out

    def built(self):
        return [t for a in self.calls if Path(a[0]).name == "cmake" and "--target" in a for t in self.targets(a)]


def student_edition_lab():
    return dataclasses.replace(LAB, solution_dir="", mistakes=())


def grade(test, fake, gpu: bool, public_tests: str = "all", checks=None, per_gpu: int = 0):
    lab = student_edition_lab()
    # a student's self-check: the files graded are the kit's own labs/ files
    files = {lab.name: {f: (KIT / lab.dir / f).read_bytes() for f in lab.files}}
    probed = []

    def probe(runner, device):
        probed.append(Path(runner))
        return (True, "") if gpu else (False, "no CUDA device: the test machine has none")

    patches = [mock.patch.dict(os.environ, {"CUDA_VISIBLE_DEVICES": "0" if gpu else ""}),
               mock.patch("cmlgrade.run.probe_gpu", probe),
               mock.patch("cmlgrade.run.find_tool", lambda name: name)]
    # the kit-only checker runs real harness programs (test_checker.py tests it on the CPU path); here
    # only that the pipeline calls it where there is a GPU, and leaves the tests' outcomes as they are
    checked = []

    def kit_checks(*a, **k):
        checked.append(a[1].name)
        if checks is not None:   # the checker's verdict per step (public)
            a[2].checks["public"] = {s.num: checks(s.num) for s in a[1].steps}
    patches.append(mock.patch.object(labrun, "run_kit_checks", kit_checks))
    test.checked = checked
    if hasattr(building, "check_lab"):   # the object checks read real objects: here, none
        from cmlgrade.objcheck import ObjectReport
        patches.append(mock.patch.object(building, "check_lab", lambda *a: ObjectReport(checked=True)))
    for p in patches:
        p.start()
        test.addCleanup(p.stop)
    p = Pipeline(Options(kit=KIT, work=tmpdir(test) / "work", sandbox=False, jobs=2, cpu_path=False,
                         public_tests=public_tests, per_gpu=per_gpu), [lab], runner=fake)
    p.prepare()
    results, errors = p.grade([Submission("kim", "labs/", files)])
    p.cleanup()
    test.assertEqual(errors, [])
    return p, results[0].labs[0], probed


class StudentEditionTests(unittest.TestCase):
    def items(self, ls):
        return {it.name: it for it in ls.items}

    def test_no_gpu_counts_the_listed_tests_and_builds_no_reference(self):
        def outcome(suite, test):
            if suite in ("step4", "step5", "step6", "step7"):
                return "SKIPPED", ["no usable GPU: the test machine has none"]
            if suite == "step3" or test == "model_case_2_1":
                return "FAILED", [f"tests/model.c:12: {test} is wrong"]
            return "PASSED", []

        fake = FakeKit(outcome)
        p, ls, probed = grade(self, fake, gpu=False)
        self.assertEqual(self.checked, [])   # no GPU and no CPU path in this lab: nothing to run a harness on
        self.assertFalse([t for t in fake.built() if t.endswith("_ref")], "a reference target was built")
        self.assertEqual(probed, [p.work / "reference" / "build" / LAB.runner])   # the kit's own runner
        self.assertTrue(p.notes[0].startswith("self-check of a student edition"), p.notes)
        # labs/ is the only copy of the skeletons: an edited file would compare equal to itself
        self.assertFalse([n for n in ls.notes if "untouched" in n], ls.notes)
        items = self.items(ls)
        self.assertEqual(items["step 1 bank_of"].status, "passed")
        self.assertEqual(items["step 1 bank_of"].points, items["step 1 bank_of"].max_points)
        self.assertGreater(items["step 1 bank_of"].points, 0)
        step2 = items["step 2 degree_4byte"]
        self.assertEqual(step2.status, "partial")   # 1 of the 3 listed tests fails
        self.assertAlmostEqual(step2.points, step2.max_points * 2 / 3, places=1)
        self.assertEqual(items["step 3 degree_wide"].status, "failed")
        for s in LAB.steps[3:]:   # the kernels' tests skipped themselves: no GPU here
            it = items[f"step {s.num} {s.ident}"]
            self.assertEqual((it.status, it.points), ("not_measured", 0.0), it.name)
        for it in ls.items:   # no GPU here, and no reference to compare with: none of these is measured
            if it.category in ("sanitizer", "counters", "performance"):
                self.assertEqual((it.status, it.points), ("not_measured", 0.0), it.name)
        # each listed test program ran once with all its steps (run.run_tests_by_step), none a step on its own
        runs = [a for a in fake.calls if Path(a[0]).name in LISTED and any(x.startswith("--json=") for x in a)]
        self.assertEqual(sorted(Path(a[0]).name for a in runs), sorted(LISTED))
        self.assertFalse([a for a in runs if any(x.startswith("--filter=") for x in a)], runs)
        unmeasured = sum(it.max_points for it in ls.items if it.status == "not_measured")
        self.assertGreater(unmeasured, 0)
        self.assertLessEqual(ls.max_points + unmeasured, LAB.max_points(False))   # left out of the maximum

    def test_with_a_gpu_timing_is_not_measured_and_an_unbuilt_program_fails_its_steps(self):
        fake = FakeKit(lambda suite, test: ("PASSED", []), unbuilt={MODEL})
        p, ls, _ = grade(self, fake, gpu=True)
        items = self.items(ls)
        for s in LAB.steps[:3]:   # their test program did not compile: failed, not unmeasured
            it = items[f"step {s.num} {s.ident}"]
            self.assertEqual((it.status, it.points), ("failed", 0.0), it.name)
            self.assertTrue(any("not built" in d for d in it.details), it.details)
        for s in LAB.steps[3:]:
            self.assertEqual(items[f"step {s.num} {s.ident}"].status, "passed")
        self.assertEqual(self.checked, [LAB.name])   # a GPU: the kit-only checker judged the steps
        perf = [it for it in ls.items if it.category == "performance"]
        self.assertEqual(len(perf), len(LAB.rubric.performance.steps))
        for it in perf:
            self.assertEqual((it.status, it.points), ("not_measured", 0.0), it.name)
            self.assertEqual(it.feedback, [f"not measured: {NO_REFERENCE}"])
        timed = [a for a in fake.calls if Path(a[0]).name == LAB.runner and "--json" in a]
        self.assertEqual(timed, [])   # nothing to time it against
        self.assertNotIn(f"{LAB.runner}_ref", {Path(a[0]).name for a in fake.calls})


class PerGpuTests(unittest.TestCase):
    """--per-gpu auto (Options.per_gpu 0, the default) is settled when the
    run is prepared, from the usable GPUs' free memory; a count given is
    kept as given; with no usable GPU nothing is asked and it is 1."""

    def test_auto_asks_the_gpus_a_count_given_is_kept_and_no_gpu_is_one(self):
        passing = lambda suite, test: ("PASSED", [])   # noqa: E731
        for gpu, given, want in ((True, 0, 3), (True, 2, 2), (False, 0, 1)):
            with self.subTest(gpu=gpu, given=given), \
                    mock.patch.object(gpuhold, "auto_per_gpu", return_value=(3, "--per-gpu auto: a test")) as auto:
                p, _, _ = grade(self, FakeKit(passing), gpu=gpu, per_gpu=given)
                self.assertEqual(p.per_gpu, want)
                if gpu and not given:
                    auto.assert_called_once_with(["0"])
                    self.assertEqual(p.per_gpu_note, "--per-gpu auto: a test")
                else:
                    auto.assert_not_called()
                    self.assertEqual(p.per_gpu_note, "")


class ListParserTests(unittest.TestCase):
    def test_both_glyph_styles_and_disabled_tests(self):
        text = ("step1: 2 tests\n├── a_b\n└── c\nstep12: 1 test\n`-- d (skipped)\n"
                "stepx: 2 tests\n|-- e\n`-- f\nnot a test line\n")
        got = {k: o.status for k, o in criterion_list(text).items()}
        self.assertEqual(got, {"step1::a_b": "PASSED", "step1::c": "PASSED", "step12::d": "SKIPPED",
                               "stepx::e": "PASSED", "stepx::f": "PASSED"})
        self.assertEqual(criterion_list("no tests here\n"), {})


if __name__ == "__main__":
    unittest.main()


class ChecksFirstTests(unittest.TestCase):
    """--public-tests failing (labrun.LabStage._tests; the default): the kit-only checks
    first, then Criterion only on the public tests of the steps they do not
    find right; a step they find right has its tests take that verdict."""

    @staticmethod
    def verdict(step: int):
        from cmlgrade.checker import StepVerdict
        return StepVerdict(step != 5, 1 if step == 5 else 0, 4)

    @staticmethod
    def outcome(suite, test):
        if suite == "step5" and test.endswith("_0"):
            return "FAILED", ["tests/gpu.c:40: step 5, 3 x 3: wrong"]
        return "PASSED", []

    def runs(self, fake):
        return [(Path(a[0]).name, next((x for x in a if x.startswith("--filter=")), ""))
                for a in fake.calls if Path(a[0]).name in LISTED and any(x.startswith("--json=") for x in a)]

    def test_only_the_steps_the_checker_fails_run_their_tests_and_the_verdicts_stay(self):
        fake_all, fake_first = FakeKit(self.outcome), FakeKit(self.outcome)
        _, every, _ = grade(self, fake_all, gpu=True, checks=self.verdict)
        _, first, _ = grade(self, fake_first, gpu=True, public_tests="failing", checks=self.verdict)
        self.assertEqual(sorted(self.runs(fake_all)), sorted([(MODEL, ""), (GPU, "")]))
        self.assertEqual(self.runs(fake_first), [(GPU, "--filter=step5/*")])   # the model's steps 1-3 are right
        self.assertEqual(first.items, every.items)   # the same verdicts, details and feedback, item for item
        items = {it.name: it for it in first.items}
        self.assertEqual(items["step 5 " + LAB.steps[4].ident].status, "partial")
        self.assertEqual(items["step 4 " + LAB.steps[3].ident].status, "passed")

    def test_a_test_only_criterion_fails_is_the_difference_the_bench_must_rule_out(self):
        # Criterion stricter than the checker on step 6: --public-tests all docks it, checks-first (the default)
        # takes the checker's verdict. grader/tools/bench --modes prebuilt,checker-first shows whether any
        # catalogued mistake, reference or fixture is such a case (none was, docs/grading.md §9).
        def outcome(suite, test):
            return ("FAILED", ["tests/gpu.c:50: only Criterion sees this"]) if suite == "step6" else ("PASSED", [])
        _, every, _ = grade(self, FakeKit(outcome), gpu=True, checks=lambda s: self.verdict(0))
        _, first, _ = grade(self, FakeKit(outcome), gpu=True, public_tests="failing", checks=lambda s: self.verdict(0))
        name = "step 6 " + LAB.steps[5].ident
        self.assertEqual(({it.name: it for it in every.items}[name].status,
                          {it.name: it for it in first.items}[name].status), ("failed", "passed"))

