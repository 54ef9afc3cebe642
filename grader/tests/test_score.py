"""Score arithmetic on synthetic facts (no build, no GPU)."""
import unittest
from pathlib import Path

from helpers import labs

from cmlgrade.parsers import CounterReport, SanitizerFinding, SanitizerReport, TestOutcome
from cmlgrade.results import BinaryRun, LabRun, PerfResult, StaticResult
from cmlgrade.score import perf_credit, score_lab
from cmlgrade.static import run_static, strip_source

LABS = labs()


def outcomes(spec):
    """{"step3::a": "PASSED", ...} -> BinaryRun outcomes."""
    out = {}
    for key, st in spec.items():
        suite, name = key.split("::")
        status, *msg = st if isinstance(st, tuple) else (st,)
        out[key] = TestOutcome(suite, name, status, list(msg))
    return out


def lab_run(lab, spec, binary=None, **kw):
    r = LabRun(lab.name, build_ok={t: True for t in lab.student_targets()}, **kw)
    r.tests["public"] = {binary or lab.test_binaries()[0]: BinaryRun("b", True, outcomes(spec))}
    r.static = [StaticResult(s.name, True) for s in lab.rubric.static]
    return r


def all_tests(lab, status="PASSED"):
    return {f"step{s.num}::t{i}": status for s in lab.steps for i in range(2)}


def item(ls, name):
    return next(i for i in ls.items if i.name == name)


class ScoreTests(unittest.TestCase):
    lab = LABS["04_reduction"]

    def clean(self, run):
        run.sanitizers = {t: SanitizerReport("clean", "ERROR SUMMARY: 0 errors", 0, None)
                          for t in self.lab.rubric.sanitizers.points}
        run.perf = {s: PerfResult(s, 1.0, 1.0, True, samples_student=[1.0], samples_ref=[1.0])
                    for s in self.lab.rubric.performance.steps}
        return run

    def test_reference_against_itself_is_full_marks(self):
        ref = lab_run(self.lab, all_tests(self.lab))
        ls = score_lab(self.lab, self.clean(lab_run(self.lab, all_tests(self.lab))), ref)
        self.assertEqual(ls.points, ls.max_points)
        self.assertEqual(ls.max_points, self.lab.max_points(hidden=False))

    def test_sanitizer_and_static_credit_need_a_passing_step(self):
        ref = lab_run(self.lab, all_tests(self.lab))
        ls = score_lab(self.lab, self.clean(lab_run(self.lab, all_tests(self.lab, "FAILED"))), ref)
        self.assertEqual(ls.points, 0.0, "an untouched skeleton is clean and calls no library: no credit")
        san = item(ls, "compute-sanitizer memcheck")
        self.assertEqual(san.status, "failed")
        self.assertIn("passes no step's tests yet", san.feedback[0])
        one = dict(all_tests(self.lab, "FAILED"), **{"step1::t0": "PASSED", "step1::t1": "PASSED"})
        ls = score_lab(self.lab, self.clean(lab_run(self.lab, one)), ref)
        san = item(ls, "compute-sanitizer memcheck")
        self.assertEqual((san.status, san.points), ("partial", round(self.lab.rubric.sanitizers.points["memcheck"] / 8, 2)),
                         "one step of eight earns an eighth of the sanitizer credit")
        self.assertIn("1 of 8", san.feedback[-1])
        static = [i for i in ls.items if i.category == "static"]
        self.assertTrue(static and all(i.points < i.max_points for i in static), "static credit scales too")

    def test_a_test_the_reference_fails_is_not_counted(self):
        spec = all_tests(self.lab)
        ref_spec = dict(spec, **{"step3::t1": ("FAILED", "flaky")})
        stud_spec = dict(spec, **{"step3::t1": ("FAILED", "flaky")})
        ls = score_lab(self.lab, self.clean(lab_run(self.lab, stud_spec)), lab_run(self.lab, ref_spec))
        self.assertEqual(item(ls, "step 3 sequential").status, "passed")
        self.assertEqual(item(ls, "step 3 sequential").points, 10)
        self.assertTrue(any("step3::t1" in n and "not counted" in n for n in ls.not_counted))

    def test_partial_step_and_mistake_line(self):
        spec = dict(all_tests(self.lab), **{"step3::t0": ("FAILED", "/k/tests/gpu.c:9: n = 33: expected 5, got "
                                                                   "33554437. Likely cause: off by a multiple of 2^24, the "
                                                                   "value of the guard cells around the input: the kernel "
                                                                   "reads past the end of the array")})
        ls = score_lab(self.lab, self.clean(lab_run(self.lab, spec)), lab_run(self.lab, all_tests(self.lab)))
        it = item(ls, "step 3 sequential")
        self.assertEqual((it.status, it.points), ("partial", 5.0))
        self.assertTrue(any("no_bounds_check_on_load" in f for f in it.feedback), it.feedback)
        self.assertTrue(any(d.startswith("step3::t0 failed: n = 33") for d in it.details), it.details)

    def test_a_test_of_no_steps_suite_named_after_a_step_counts_for_that_step(self):
        # lab 04's past_2_pow_31::step<N>_...: one step on 2^31 + 2^20 + 7 ints, a case the checker lacks;
        # an index of 32 bits fails only there, and costs that step its share (it once cost nothing)
        past = {f"past_2_pow_31::step{s.num}_sums": "PASSED" for s in self.lab.steps}
        ref = lab_run(self.lab, dict(all_tests(self.lab), **past))
        wrong = {**all_tests(self.lab), **past, "past_2_pow_31::step7_sums": (
            "FAILED", "step 7, 2^31 + 2^20 + 7 ints: got 1048583, expected 1051301")}
        ls = score_lab(self.lab, self.clean(lab_run(self.lab, wrong)), ref)
        it = item(ls, "step 7 many_per_thread")
        self.assertEqual((it.status, it.points), ("partial", round(10 * 2 / 3, 2)),
                         "2 of step 7's 3 tests pass: its two and the one past 2^31 that fails")
        self.assertTrue(any(d.startswith("past_2_pow_31::step7_sums failed") for d in it.details), it.details)
        self.assertEqual(item(ls, "step 6 complete_unroll").points, 10, "the other steps keep their points")
        self.assertLess(ls.points, ls.max_points)

    def test_skipped_everywhere_is_not_measured(self):
        spec = {k: ("SKIPPED", "no CUDA device: none") for k in all_tests(self.lab)}
        ls = score_lab(self.lab, lab_run(self.lab, spec), lab_run(self.lab, spec))
        it = item(ls, "step 1 interleaved")
        self.assertEqual(it.status, "not_measured")
        self.assertIn("no CUDA device", it.feedback[0])
        self.assertFalse(it.counted)

    def test_perf_credit_curve(self):
        self.assertEqual(perf_credit(1.2, 1.0, 1.2, True), 1.0)
        self.assertEqual(perf_credit(0.5, 1.0, 1.2, True), 1.0)
        self.assertAlmostEqual(perf_credit(2.4, 1.0, 1.2, True), 0.5)
        self.assertEqual(perf_credit(1.0, 1.0, 1.2, False), 0.0)
        self.assertEqual(perf_credit(None, 1.0, 1.2, True), 0.0)

    def test_perf_needs_a_right_answer(self):
        run = self.clean(lab_run(self.lab, dict(all_tests(self.lab), **{"step8::t0": "FAILED"})))
        run.perf[7] = PerfResult(7, 2.4, 1.0, True, samples_student=[2.4], samples_ref=[1.0])
        ls = score_lab(self.lab, run, lab_run(self.lab, all_tests(self.lab)))
        self.assertEqual(item(ls, "performance step 8 shuffle_vec4").points, 0)
        self.assertIn("wrong answer", item(ls, "performance step 8 shuffle_vec4").feedback[0])
        p7 = item(ls, "performance step 7 many_per_thread")
        self.assertEqual((p7.status, p7.points), ("partial", 2.5))

    def test_sanitizer_failure_names_kernel_line_and_mistake(self):
        run = self.clean(lab_run(self.lab, all_tests(self.lab)))
        run.sanitizers["racecheck"] = SanitizerReport(
            "errors", "RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)", 1,
            SanitizerFinding("Error: Race reported between Write access", "reduce_kernel3", "reduction.cu:134"),
            "Error: Race reported between Write access at void reduce_kernel3<int>(...)")
        ls = score_lab(self.lab, run, lab_run(self.lab, all_tests(self.lab)))
        it = item(ls, "compute-sanitizer racecheck")
        self.assertEqual(it.points, 0)
        self.assertIn("in kernel reduce_kernel3 at reduction.cu:134", it.details[0])
        self.assertTrue(any("no_barrier_in_tree_loop" in f for f in it.feedback))
        self.assertFalse(any("last_warp_without_syncwarp" in f for f in it.feedback))

    @staticmethod
    def clean_06(run):
        lab = LABS["06_transpose"]
        run.sanitizers = {t: SanitizerReport("clean", "ERROR SUMMARY: 0 errors", 0, None)
                          for t in lab.rubric.sanitizers.points}
        return run

    def test_a_race_that_fails_the_tests_is_explained_on_the_step(self):
        lab = LABS["06_transpose"]
        spec = dict(all_tests(lab), **{"step3::t0": ("FAILED", "/k/tests/gpu.c:40: out[5,7] = 0, expected 12")})
        run = self.clean_06(lab_run(lab, spec))
        race = SanitizerReport("errors", "RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)", 2,
                               SanitizerFinding("Error: Race reported between Write access", "transpose_kernel3",
                                                "transpose.cu:88"),
                               "Error: Race reported between Write access at void transpose_kernel3(...)")
        run.diagnoses["racecheck"] = ([3], race)
        ls = score_lab(lab, run, lab_run(lab, all_tests(lab)))
        it = item(ls, "step 3 " + lab.step(3).ident)
        self.assertEqual(it.status, "partial")
        self.assertTrue(any("no_barrier_between_tile_write_and_read" in f for f in it.feedback), it.feedback)
        self.assertTrue(any("racecheck on step 3" in d and "transpose.cu:88" in d for d in it.details), it.details)
        other = item(ls, "step 4 " + lab.step(4).ident)
        self.assertEqual(other.feedback, [], "the diagnosis belongs to the step it ran on")
        san = item(ls, "compute-sanitizer racecheck")
        self.assertEqual((san.status, san.points), ("failed", 0.0), "a race the tool found is not clean")
        self.assertTrue(any("steps that fail their tests" in d for d in san.details), san.details)
        clean = self.clean_06(lab_run(lab, spec))
        self.assertAlmostEqual(score_lab(lab, clean, lab_run(lab, all_tests(lab))).points - ls.points,
                               lab.rubric.sanitizers.points["racecheck"] * 5 / 6, places=1,
                               msg="the race costs the racecheck points only (scaled to 5 of 6 steps passing)")
        run.diagnoses["racecheck"] = ([3], SanitizerReport("clean", "RACECHECK SUMMARY: 0 hazards", 0, None))
        it = item(score_lab(lab, run, lab_run(lab, all_tests(lab))), "step 3 " + lab.step(3).ident)
        self.assertFalse(any("Likely mistake" in f for f in it.feedback), "a clean diagnosis names no mistake")

    def test_a_race_in_a_device_helper_names_the_mistake_of_its_step(self):
        """Races in __device__ helpers are reported at the helper (warp_tail),
        not at the kernel: the rubric's kernel regex names the helper too."""
        spec = dict(all_tests(self.lab), **{"step5::t0": ("FAILED", "n = 255: expected 7530, got 2703")})
        run = self.clean(lab_run(self.lab, spec))
        text = ("========= Warning: Race reported between Read access at void warp_tail<int>(T1 *, unsigned int)+0x370 "
                "in reduction.cu:183\n=========     and Write access at void warp_tail<int>(T1 *, unsigned int)+0x390 "
                "in reduction.cu:183 [8 hazards]\n")
        run.diagnoses["racecheck"] = ([5], SanitizerReport(
            "errors", "RACECHECK SUMMARY: 2 hazards displayed (0 errors, 2 warnings)", 2,
            SanitizerFinding("Warning: Race reported between Read access", "warp_tail", "reduction.cu:183"), text))
        fb = item(score_lab(self.lab, run, lab_run(self.lab, all_tests(self.lab))), "step 5 last_warp").feedback
        self.assertTrue(any("last_warp_without_syncwarp" in f for f in fb), fb)
        self.assertFalse(any("no_barrier_in_tree_loop" in f for f in fb), fb)

    def test_a_tree_loop_race_into_the_warp_tail_is_not_the_warp_tails_mistake(self):
        """Without the tree loop's barrier, racecheck also reports Errors at
        warp_tail (it reads what other warps wrote). Those are races across
        warps, not the last warp's own Warning: only no_barrier_in_tree_loop
        is named, and never on a step before the mistake's own."""
        spec = dict(all_tests(self.lab), **{"step3::t0": ("FAILED", "n = 255: expected 7530, got 2703"),
                                            "step5::t0": ("FAILED", "n = 255: expected 7530, got 2703")})
        run = self.clean(lab_run(self.lab, spec))
        text = ("========= Error: Race reported between Write access at void tree_down_to<int>(T1 *, unsigned int, "
                "unsigned int)+0x1f0 in reduction.cu:118\n=========     and Read access at void tree_down_to<int>"
                "(T1 *, unsigned int, unsigned int)+0x1d0 in reduction.cu:118 [64 hazards]\n=========\n"
                "========= Error: Race reported between Write access at void tree_down_to<int>(T1 *, unsigned int, "
                "unsigned int)+0x1f0 in reduction.cu:118\n=========     and Read access at void warp_tail<int>"
                "(T1 *, unsigned int)+0x370 in reduction.cu:183 [32 hazards]\n")
        run.diagnoses["racecheck"] = ([3, 5], SanitizerReport(
            "errors", "RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)", 2,
            SanitizerFinding("Error: Race reported between Write access", "tree_down_to", "reduction.cu:118"), text))
        ls = score_lab(self.lab, run, lab_run(self.lab, all_tests(self.lab)))
        for name in ("step 3 sequential", "step 5 last_warp", "compute-sanitizer racecheck"):
            fb = item(ls, name).feedback
            self.assertTrue(any("no_barrier_in_tree_loop" in f for f in fb), (name, fb))
            self.assertFalse(any("last_warp_without_syncwarp" in f for f in fb), (name, fb))
        run.diagnoses["racecheck"] = ([3, 5], SanitizerReport(
            "errors", "RACECHECK SUMMARY: 3 hazards displayed (2 errors, 1 warnings)", 3, None,
            text + "========= Warning: Race reported between Read access at void warp_tail<int>(T1 *, unsigned int)"
                   "+0x370 in reduction.cu:183\n=========     and Write access at void warp_tail<int>(T1 *, "
                   "unsigned int)+0x390 in reduction.cu:183 [8 hazards]\n"))
        ls = score_lab(self.lab, run, lab_run(self.lab, all_tests(self.lab)))
        self.assertTrue(any("last_warp_without_syncwarp" in f for f in item(ls, "step 5 last_warp").feedback))
        self.assertFalse(any("last_warp_without_syncwarp" in f for f in item(ls, "step 3 sequential").feedback),
                         "a step-5 mistake does not explain step 3, which does not call warp_tail")

    def test_not_submitted_and_compile_error(self):
        ref = lab_run(self.lab, all_tests(self.lab))
        ls = score_lab(self.lab, LabRun(self.lab.name, submitted=False), ref)
        self.assertEqual(ls.points, 0)
        self.assertEqual(ls.notes, ["not submitted"], "nothing submitted reaches outside the lab")
        self.assertGreater(ls.max_points, 0)
        run = lab_run(self.lab, {})
        run.build_ok = {t: False for t in self.lab.student_targets()}
        run.tests["public"] = {"test_reduction": BinaryRun("test_reduction", False, problem="not built")}
        run.build_errors = ["labs/04_reduction/reduction.cu(12): error: expected a \";\""]
        ls = score_lab(self.lab, run, ref)
        self.assertEqual(ls.points, sum(i.points for i in ls.items if i.category == "static"))
        self.assertTrue(any("does not compile" in n for n in ls.notes))

    def test_a_timed_out_timing_run_is_not_a_wrong_answer(self):
        run = self.clean(lab_run(self.lab, all_tests(self.lab)))
        s = self.lab.rubric.performance.steps[0]
        run.perf[s] = PerfResult(s, None, None, False, note="timed out")
        ls = score_lab(self.lab, run, lab_run(self.lab, all_tests(self.lab)))
        it = next(i for i in ls.items if i.category == "performance" and i.name.startswith(f"performance step {s} "))
        self.assertEqual(it.points, 0)
        self.assertIn("timed out", it.feedback[0])
        self.assertNotIn("wrong answer", " ".join(it.feedback))

    def test_refused_object_scores_zero_and_says_why(self):
        run = self.clean(lab_run(self.lab, all_tests(self.lab)))
        run.refused = ["reduction.cu.o: defines main", "reduction.cu.o: calls dlopen (loads other code)"]
        ls = score_lab(self.lab, run, lab_run(self.lab, all_tests(self.lab)))
        self.assertEqual(ls.points, 0)
        self.assertIn("refused by the object checks", ls.notes[0])
        self.assertIn("defines main", ls.notes[0])
        self.assertTrue(all(i.feedback and "refused" in i.feedback[0] for i in ls.items if i.counted))


class MistakeLineTests(unittest.TestCase):
    def test_mistakes_the_results_cannot_tell_apart_share_one_line(self):
        from cmlgrade.score import _mistake_lines
        lab = labs(["01_shared_banks"])["01_shared_banks"]
        run = lab_run(lab, all_tests(lab))
        failing = [TestOutcome("step7", k.split("::")[1], "FAILED",
                               ["step 7, batch 1: C[y][x] is the sum over k of A[y][k] * B[x][k ^ x], so the swizzle "
                                "is applied on one side only (C cannot tell which)"])
                   for k in all_tests(lab) if k.startswith("step7::")]
        lines = _mistake_lines(lab, run, "tests", 7, failing)
        self.assertEqual(len(lines), 1, lines)
        self.assertIn("swizzle_not_undone_on_read or swizzle_read_from_a_plain_tile", lines[0])


# lab 04's tests of a step, as its tests/gpu.c names them
RED_TESTS = ("sums_ints_exactly_at_sizes_that_are_not_multiples_of_the_block",
             "sums_integer_valued_floats_exactly_at_awkward_sizes", "sums_random_floats_within_the_rounding_bound",
             "sums_ints_whose_partial_sums_pass_2_pow_24", "sums_positive_reals_within_a_bound_one_dropped_element_breaks",
             "sums_2_pow_20_plus_1_ints_exactly")


class KitCheckTests(unittest.TestCase):
    """The kit-only checker's verdict against Criterion's report
    (trust.run_kit_checks, then score_lab): each test's line says what that
    test saw, partial credit follows the tests that pass up to the checker's
    share of right cases, the checker's failing cases are a line of their
    own, and a forged report earns no more than the checker supports."""
    lab = LABS["04_reduction"]

    def spec_of(self, status="PASSED", fail=()):
        """Every step's six tests; fail: {key: message} of those that fail."""
        spec = {f"step{s.num}::{t}": status for s in self.lab.steps for t in RED_TESTS}
        spec.update({k: ("FAILED", m) for k, m in dict(fail).items()})
        return spec

    def graded(self, spec, verdicts, hidden=None, **kw):
        """score_lab after run_kit_checks with these checker verdicts (step ->
        (failed, total), missing steps right): the harness is not run."""
        from unittest import mock
        from cmlgrade import kitchecks, trust
        from cmlgrade.checker import StepVerdict
        from cmlgrade.run import Deadline

        def verdict(step, table):
            failed, total = table.get(step, (0, 20))
            msgs = [f"step {step}, n = {33 + i} int: got 0, expected {7 + i}" for i in range(min(failed, 3))]
            return StepVerdict(failed == 0, failed, total, msgs)

        def check_step(exe, harness, lab, step, seed, out, limit, env, readable, cpu, kind):
            return verdict(step, hidden if kind == "hidden" else verdicts)

        ref = lab_run(self.lab, self.spec_of())
        run = lab_run(self.lab, spec, **kw)
        seeds = [("public", None)]
        if hidden is not None:
            ref.tests["hidden"] = {"b": BinaryRun("b", True, outcomes(self.spec_of()))}
            seeds.append(("hidden", 12345))
        with mock.patch("cmlgrade.checker.check_step", check_step), mock.patch.object(kitchecks, "_technique"):
            trust.run_kit_checks(None, self.lab, run, ref, Path("/nonexistent"), seeds, 1, Path("/nonexistent"), 60,
                                 Deadline(600), {}, [], True)
        return run, score_lab(self.lab, run, ref)

    def test_partial_credit_follows_the_tests_that_pass(self):
        key = f"step3::{RED_TESTS[0]}"
        run, ls = self.graded(self.spec_of(fail={key: "n = 257: expected 1234, got 1000 (the last partial block "
                                                    "is dropped)"}), {3: (3, 20)})
        it = item(ls, "step 3 sequential")
        self.assertEqual((it.status, it.points), ("partial", round(10 * 5 / 6, 2)),
                         "5 of 6 tests pass and 17 of 20 cases are right: the tests' share")
        self.assertEqual([d for d in it.details if d.startswith("step3::")],
                         [f"{key} failed: n = 257: expected 1234, got 1000 (the last partial block is dropped)"],
                         "only the test that failed is reported failed, with its own message")
        self.assertTrue(any(d.startswith("kit-only check: 3 of 20 cases wrong") for d in it.details), it.details)
        outcomes_ = run.outcomes("public")
        self.assertEqual(sum(o.status == "PASSED" for k, o in outcomes_.items() if k.startswith("step3::")), 5,
                         "the checker turns no passing test into a failure")
        from cmlgrade.run import passing_steps
        self.assertNotIn(3, passing_steps(run.tests["public"], self.lab.step_of_test),
                         "a step the checker fails is not a passing step (no sanitizer or timing credit)")
        self.assertEqual(item(ls, "step 2 strided_index").status, "passed")

    def test_the_checkers_failing_case_is_its_own_line_when_every_test_passes(self):
        run, ls = self.graded(self.spec_of(), {5: (1, 25)})
        it = item(ls, "step 5 last_warp")
        self.assertEqual((it.status, it.points), ("partial", 9.6), "24 of 25 cases right")
        self.assertEqual(it.feedback, ["credit capped by the kit-only check: 24 of 25 cases right, though 6 of 6 "
                                       "tests pass"])
        self.assertEqual([d for d in it.details if d.startswith("step5::")], [], "no test is reported failed")
        self.assertIn("kit-only check: 1 of 25 cases wrong; step 5, n = 33 int: got 0, expected 7", it.details)

    def test_a_forged_all_passed_report_stays_at_the_skeletons_score(self):
        """The untouched skeleton's real verdicts (CPU path, public seed):
        18 of 20 cases wrong at every step but step 7 (20 of 20)."""
        skeleton = {s.num: (18, 20) for s in self.lab.steps}
        skeleton[7] = (20, 20)
        _, honest = self.graded(self.spec_of("FAILED"), skeleton)
        _, forged = self.graded(self.spec_of("PASSED"), skeleton)
        tests_points = lambda ls: sum(i.points for i in ls.items if i.category == "tests")  # noqa: E731
        self.assertEqual(tests_points(honest), 0.0)
        self.assertEqual(tests_points(forged), tests_points(honest))
        self.assertLessEqual(forged.points, honest.points)
        it = item(forged, "step 1 interleaved")
        self.assertEqual(it.feedback, ["no credit: the kit-only check finds 18 of 20 cases wrong (partial credit needs "
                                       "more than half of them right), though 6 of 6 tests pass"])

    def test_the_skeletons_right_cases_of_the_other_labs_earn_nothing(self):
        """The shares of right cases the untouched skeletons get (CPU path,
        public seed, measured with the kit's cases: lab 01 steps 4-7, the
        argument checks that must return an error, 3 of 11 and 2 of 7; lab 05
        2 or 3 of 15-19; lab 04 the two one-element sums of 20; none in labs
        02, 03 and 06) are under checker_share's floor."""
        from cmlgrade.checker import StepVerdict
        from cmlgrade.score import checker_share
        for failed, total in ((8, 11), (5, 7), (13, 15), (15, 17), (16, 19), (18, 20)):
            self.assertEqual(checker_share(StepVerdict(False, failed, total)), 0.0, (failed, total))
        self.assertEqual(checker_share(StepVerdict(False, 1, 25)), 0.96)

    def test_right_answers_without_the_steps_technique_earn_nothing(self):
        """_technique takes a step's verdict (ok False) while every case is
        right (failed 0): no share of right cases earns anything then."""
        from unittest import mock
        from cmlgrade import kitchecks, trust
        from cmlgrade.checker import StepVerdict
        from cmlgrade.run import Deadline

        def check_step(exe, harness, lab, step, seed, out, limit, env, readable, cpu, kind):
            return StepVerdict(True, 0, 20, [])

        def technique(exe, lab, run, *a, **k):
            w = run.checks["public"][3]
            w.ok = False
            w.messages.insert(0, "step 3 must stage its data in shared memory, but its launches made 0 shared-memory "
                                 "loads and 0 stores")
        ref = lab_run(self.lab, self.spec_of())
        run = lab_run(self.lab, self.spec_of())
        with mock.patch("cmlgrade.checker.check_step", check_step), mock.patch.object(kitchecks, "_technique", technique):
            trust.run_kit_checks(None, self.lab, run, ref, Path("/nonexistent"), [("public", None)], 1,
                                 Path("/nonexistent"), 60, Deadline(600), {}, [], True)
        it = item(score_lab(self.lab, run, ref), "step 3 sequential")
        self.assertEqual((it.status, it.points), ("failed", 0.0))
        self.assertIn("not by the step's technique", it.feedback[0])
        self.assertTrue(any("0 shared-memory loads" in d for d in it.details), it.details)

    def test_a_step_the_checker_could_not_judge_earns_nothing_and_says_why(self):
        from cmlgrade.checker import StepVerdict
        from cmlgrade.score import _cap_line
        v = StepVerdict(False, note="not run: the lab's time limit ran out")
        self.assertEqual(_cap_line(v, 1.0, 0.0, 6, 6, False),
                         "no credit: the kit-only check judged no case (not run: the lab's time limit ran out)")

    def test_hidden_data_earns_the_checkers_share_and_says_it_once(self):
        _, ls = self.graded(self.spec_of(), {}, hidden={4: (2, 20), 6: (15, 20)})
        it = item(ls, "step 4 first_add (hidden data)")
        self.assertEqual((it.status, it.points), ("partial", round(10 * 0.3 * 0.9, 2)))
        self.assertEqual(len(it.details), 1, it.details)
        self.assertEqual(item(ls, "step 6 complete_unroll (hidden data)").points, 0.0)
        self.assertEqual(item(ls, "step 5 last_warp (hidden data)").status, "passed")

    def test_a_step_not_started_says_so_once(self):
        race = "n = 33: expected 528, got 0. Likely cause: a race between threads of the block"
        spec = self.spec_of(fail={f"step6::{t}": (race + f" at n = {i}") for i, t in enumerate(RED_TESTS)})
        spec = {k: (("FAILED", race, race, race) if k.startswith("step6::") else v) for k, v in spec.items()}
        _, ls = self.graded(spec, {6: (20, 20)}, not_started=[6])
        it = item(ls, "step 6 complete_unroll")
        text = "\n".join(it.feedback + it.details)
        self.assertEqual(text.count("Likely cause"), 0, "unfinished work has no cause to name: " + text)
        self.assertEqual(text.count("not started yet"), 1, text)
        self.assertIn("e.g. step6::sums_2_pow_20_plus_1_ints_exactly: n = 33: expected 528, "
                      "got 0\n", text + "\n")
        self.assertFalse(any("Likely mistake" in f for f in it.feedback))

    def test_a_file_left_as_the_skeleton_says_each_step_is_not_started_once(self):
        """An untouched file (the pipeline lists it as untouched and marks
        none of its steps not started): each failing step says once that it
        is not started, with no likely cause and no kit-only check lines
        (issue 24: 'Likely cause: a race' under every step)."""
        race = "n = 33: expected 528, got 0. Likely cause: a race between threads of the block"
        spec = {k: ("FAILED", race, race) for k in self.spec_of()}
        _, ls = self.graded(spec, {s: (18, 20) for s in range(1, 9)}, untouched=["reduction.cu"])
        for step in self.lab.steps:
            it = item(ls, f"step {step.num} {step.ident}")
            text = "\n".join(it.feedback + it.details)
            self.assertEqual(it.points, 0.0)
            self.assertEqual(text.count("Likely cause"), 0, text)
            self.assertEqual(text.count("not started yet"), 1, text)
            self.assertNotIn("kit-only check", text)

    def test_a_likely_cause_is_said_once_per_line(self):
        race = "n = 33: expected 528, got 0. Likely cause: a race between threads of the block"
        spec = self.spec_of(fail={f"step6::{t}": race for t in RED_TESTS[:4]})
        spec = {k: (("FAILED", race, race) if v != "PASSED" else v) for k, v in spec.items()}
        _, ls = self.graded(spec, {6: (20, 20)})
        text = "\n".join(item(ls, "step 6 complete_unroll").details)
        self.assertEqual(text.count("Likely cause"), 1, text)
        self.assertIn("... and 1 more failing tests", text)


# Caught by the tests, but no test says so: their failures show only a catch-all diagnosis that other bugs
# give too (lab 02 step 3: "wrong entries summed: check the walk ... and that the kernel reads the right table"),
# so the grader names no mistake for them until a test diagnoses them. Lab 09 step 3: "the split is not where the
# merge path crosses the diagonal ...", what any wrong split prints.
UNDIAGNOSED = ("global_steps_read_the_constant_table", "merge_path_search_not_clamped_to_the_second_run")


class MistakeSignatureTests(unittest.TestCase):
    """A catalogued mistake is named only when the failure's signature is
    that mistake's: the real reports of every mistake the tests catch (CPU
    path, public seed; fixtures/mistakes/<lab>.<mistake>.json, each
    failing test's first four messages) name that mistake and no other, and
    the untouched skeletons' reports (skeleton.<target>.json, even with no
    step marked not started) name none."""
    FIX = Path(__file__).resolve().parent / "fixtures" / "mistakes"

    def named(self, lab, report, step=None, **kw):
        from cmlgrade.parsers import parse_criterion_json
        from cmlgrade.score import _mistake_lines
        outs = parse_criterion_json(report.read_text(encoding="utf-8"))
        run = LabRun(lab.name, **kw)
        got = {}
        for s in lab.steps:
            failing = [o for k, o in sorted(outs.items()) if lab.step_of_test(o) == s.num
                       and o.status not in ("PASSED", "SKIPPED")]
            lines = _mistake_lines(lab, run, "tests", s.num, failing)
            if lines and (step is None or s.num == step):
                got[s.num] = lines
        return got

    def test_each_caught_mistake_gets_its_own_line_and_no_other(self):
        for lab in LABS.values():
            for m in (m for m in lab.mistakes if m.caught_by == "tests"):
                with self.subTest(lab=lab.name, mistake=m.name):
                    report = self.FIX / f"{lab.name}.{m.name}.json"
                    self.assertTrue(report.is_file(), f"no real report of {m.name} in {self.FIX.name}/: write it "
                                    f"with grader/tools/mistake_reports --lab {lab.name}")
                    got = self.named(lab, report)
                    if not (m.tests or m.message) and m.name in UNDIAGNOSED:
                        self.assertEqual(got, {}, "no signature: never named, and the report names nothing else")
                        continue
                    self.assertTrue(m.tests and m.message, "a caught-by-tests mistake needs its signature "
                                                           "(feedback.toml tests and message)")
                    lines = [x for v in got.values() for x in v]
                    self.assertEqual(len(lines), 1, got)
                    self.assertEqual(list(got), [m.step], got)
                    names = lines[0].removeprefix("Likely mistake (").partition("): ")[0].split(" or ")
                    self.assertIn(m.name, names)
                    twins = [x for x in lab.mistakes if x.name in names]
                    self.assertTrue(all((x.tests, x.message) == (m.tests, m.message) for x in twins),
                                    "a shared line only for mistakes whose failures look the same")

    def test_the_skeletons_failures_name_no_mistake(self):
        reports = sorted(self.FIX.glob("skeleton.*.json"))
        # one a CPU-path test program of each lab's skeleton (lab 01: its model's too)
        self.assertEqual({r.name for r in reports},
                         {f"skeleton.{b.removeprefix('test_')}.json" for lab in LABS.values()
                          for b in ([lab.targets.model_tests] if lab.targets.model_tests else [])
                          + [lab.targets.tests + "_cpu"]})
        stems = {lab.stem: lab for lab in LABS.values()}
        for report in reports:
            lab = stems[report.stem.split(".")[1].removesuffix("_cpu").removesuffix("_model")]
            with self.subTest(report=report.name):
                self.assertEqual(self.named(lab, report), {})

    def test_a_hints_words_never_name_a_mistake(self):
        """The issue's case: a model that reads a window of the address calls
        words 16 KiB apart one word; the failing test's hint says 'not a
        broadcast', which is no evidence of counting broadcasts as conflicts."""
        from cmlgrade.score import _mistake_lines
        lab = LABS["01_shared_banks"]
        window = TestOutcome("step2", "words_16_kib_apart_in_one_bank_are_different_words", "FAILED", [
            "half the warp on byte 0, half on byte 16384 (16 KiB), 4-byte access: expected 2 wavefronts, got 1 "
            "(two different words of bank 0, 16 KiB apart: not a broadcast)"])
        self.assertEqual(_mistake_lines(lab, LabRun(lab.name), "tests", 2, [window]), [])
        # the skeleton's zero on the broadcast test is no broadcast counted as a conflict either
        zero = TestOutcome("step2", "lanes_on_the_same_word_share_one_read", "FAILED", [
            "every lane on word 7, 4-byte access: expected 1 wavefront, got 0 (broadcast: one word read once serves "
            "every lane)"])
        self.assertEqual(_mistake_lines(lab, LabRun(lab.name), "tests", 2, [zero]), [])
        # lab 03's NaN hint lists 'a missing __syncthreads()' among causes: no race is named from it
        mm = LABS["03_tiled_matmul"]
        nan = TestOutcome("step3", "multiplies_matrices_of_many_tiles", "FAILED", [
            "C(0, 0) expected 1.5, got nan. Likely cause: NaN in C: a load read past the end of A or B, whose guard "
            "zones hold NaN (a tile loaded without a bounds check: check both A's and B's loads against M, N and "
            "K), or shared memory read before it was written (a missing __syncthreads())"])
        self.assertEqual(_mistake_lines(mm, LabRun(mm.name), "tests", 3, [nan]), [])

    def test_the_line_shows_under_the_graded_step(self):
        from cmlgrade.parsers import parse_criterion_json
        lab = LABS["05_stencil"]
        outs = parse_criterion_json((self.FIX / "05_stencil.halo_loaded_by_too_few_threads.json").read_text())
        ref = {k: "PASSED" for k in outs}
        ls = score_lab(lab, lab_run(lab, {k: (o.status, *o.messages) for k, o in outs.items()}), lab_run(lab, ref))
        it = next(i for i in ls.items if i.name.startswith("step 1 "))
        self.assertEqual([f for f in it.feedback if f.startswith("Likely mistake")],
                         [f"Likely mistake (halo_loaded_by_too_few_threads): "
                          f"{next(m.feedback for m in lab.mistakes if m.name == 'halo_loaded_by_too_few_threads')}"])


class CounterScoreTests(unittest.TestCase):
    lab = LABS["06_transpose"]

    def run_with(self, counters, spec=None):
        run = lab_run(self.lab, spec or all_tests(self.lab))
        run.counters = counters
        return score_lab(self.lab, run, lab_run(self.lab, all_tests(self.lab)))

    def test_unavailable_counters_are_not_measured(self):
        ls = self.run_with(CounterReport(False, "ERR_NVGPUCTRPERM"))
        it = item(ls, "bank conflicts step 4 padded")
        self.assertEqual(it.status, "not_measured")
        self.assertEqual(it.feedback, ["not measured: counters unavailable (ERR_NVGPUCTRPERM)"])
        full = self.run_with(CounterReport(True, "", {3: 9.0, 4: 0.0, 5: 0.0, 6: 0.0}))
        self.assertEqual(full.max_points - ls.max_points, sum(c.points for c in self.lab.counter_checks))

    def test_conflicts_where_none_belong_and_the_mistake_line(self):
        ls = self.run_with(CounterReport(True, "", {3: 9.0, 4: 261888.0, 5: 0.0, 6: 0.0}))
        it = item(ls, "bank conflicts step 4 padded")
        self.assertEqual(it.status, "failed")
        self.assertTrue(any("padded_tile_indexed_without_the_padding" in f for f in it.feedback))
        # one more line names the manifest's picture of the step (the CPU path draws the student's access)
        pic = next(p for p in self.lab.pictures if p.step == 4)
        want = f"./build/transpose_run_cpu --step 4 --picture step4.svg {pic.args} (the reference's picture: {pic.shows})"
        lines = [f for f in it.feedback if "--picture" in f]
        self.assertEqual(len(lines), 1, it.feedback)
        self.assertTrue(lines[0].endswith(want), lines[0])
        # a passing check names none
        ok = item(ls, "bank conflicts step 5 swizzled")
        self.assertEqual(ok.status, "passed")
        self.assertFalse(any("--picture" in f for f in ok.feedback), ok.feedback)

    def test_a_step_without_a_picture_names_none(self):
        lab = LABS["09_shared_sort"]   # pictures of step 1 only; its counters check steps 1 and 2
        self.assertTrue(lab.picture_command(1).endswith(
            f"--step 1 --picture step1.svg {next(p.args for p in lab.pictures if p.step == 1)}"))
        self.assertEqual(lab.picture_command(2), "")

    def with_reference(self, mine: dict, theirs: dict):
        run = lab_run(self.lab, all_tests(self.lab))
        run.counters = CounterReport(True, "", mine)
        ref = lab_run(self.lab, all_tests(self.lab))
        ref.counters = CounterReport(True, "", theirs)
        return score_lab(self.lab, run, ref)

    def test_a_few_conflicts_of_a_conflict_free_layout_are_no_conflict(self):
        # an honest 32 x 65 tile read 8 conflicts on an H200 (ncu counts wavefronts beyond the fewest);
        # the reference's plain tile had 261,888 in the same run
        ref = {3: 261888.0, 4: 0.0, 5: 0.0, 6: 0.0}
        ls = self.with_reference({3: 261888.0, 4: 0.0, 5: 0.0, 6: 8.0}, ref)
        it = item(ls, "bank conflicts step 6 many_per_thread")
        self.assertEqual(it.status, "passed", it)
        self.assertTrue(any("at most 262" in d for d in it.details), it.details)
        # a 2-way conflict (about 1/31 of the 32-way plain tile's) is a conflict
        ls = self.with_reference({3: 261888.0, 4: 0.0, 5: 0.0, 6: 8448.0}, ref)
        self.assertEqual(item(ls, "bank conflicts step 6 many_per_thread").status, "failed")
        # and the plain tile's step must show real conflicts, not a few counted ones
        ls = self.with_reference({3: 8.0, 4: 0.0, 5: 0.0, 6: 0.0}, ref)
        self.assertEqual(item(ls, "bank conflicts step 3 tile").status, "failed")

    def test_no_credit_when_the_step_is_wrong(self):
        spec = dict(all_tests(self.lab), **{"step5::t0": "FAILED"})
        ls = self.run_with(CounterReport(True, "", {3: 9.0, 4: 0.0, 5: 0.0, 6: 0.0}), spec)
        self.assertEqual(item(ls, "bank conflicts step 5 swizzled").points, 0)


class StaticTests(unittest.TestCase):
    def test_comments_and_strings(self):
        src = 'int a; // __shared__\n/* __shared__\n */ const char *s = "__shared__"; int b;\n'
        self.assertNotIn("__shared__", strip_source(src))
        self.assertEqual(strip_source(src).count("\n"), src.count("\n"))
        self.assertIn("__shared__", strip_source(src, strip_strings=False))

    def test_sass_checks_read_the_compiled_instructions(self):
        from cmlgrade.static import run_sass_checks
        lab = LABS["04_reduction"]
        line = "        /*{:04x}*/                   {} ;   /* 0x0000000404047981 */"
        def fn(*ins):
            return "\n".join(line.format(16 * i, x) for i, x in enumerate(ins))
        tree = fn("LDG.E R2, desc[UR4][R2.64]", "STS [R5], R2", "BAR.SYNC.DEFER_BLOCKING 0x0", "LDS R3, [R5+0x4]")
        sass = {f"_Z14reduce_kernel{k}IiEvPKT_PS0_m": tree for k in range(1, 8)}
        sass["_Z14reduce_kernel8ILj512EiEvPKT0_PS0_m"] = fn("LDG.E.128.CONSTANT R4, desc[UR4][R4.64]",
                                                          "SHFL.DOWN PT, R3, R2, 0x10, 0x1f")
        # each step's kernels are those its trace saw launched (the CPU runtime's names)
        launched = {s: [f"reduce_kernel{s}<int>"] for s in range(1, 8)}
        launched[8] = ["reduce_kernel8<512u,int>"]
        r = {x.name: x for x in run_sass_checks(lab.rubric.static, sass, "", launched)}
        self.assertTrue(all(x.ok and x.measured for x in r.values()), r)
        # before the trace: not measured, never passed
        r0 = run_sass_checks(lab.rubric.static, sass, "")
        self.assertTrue(r0 and all(not x.ok and not x.measured for x in r0), r0)
        # an unused __shared__ declaration compiles to no shared load: the check fails
        sass["_Z14reduce_kernel3IiEvPKT_PS0_m"] = fn("LDG.E R2, desc[UR4][R2.64]", "REDG.E.ADD.STRONG.GPU [R4], R2")
        r = {x.name: x for x in run_sass_checks(lab.rubric.static, sass, "", launched)}
        self.assertFalse(r["tree_steps_reduce_in_shared_memory"].ok)
        self.assertIn("reduce_kernel3", r["tree_steps_reduce_in_shared_memory"].detail)
        # a comment never counts: only instructions are read
        sass["_Z14reduce_kernel3IiEvPKT_PS0_m"] = "// LDS STS\n" + fn("LDG.E R2, desc[UR4][R2.64]")
        self.assertFalse(run_sass_checks(lab.rubric.static, sass, "", launched)[0].ok)
        # without SASS (the CPU path): not checked, never passed
        r = run_sass_checks(lab.rubric.static, {}, "not checked (no CUDA build)")
        self.assertTrue(all(not x.measured and not x.ok and "no CUDA build" in x.detail for x in r))


if __name__ == "__main__":
    unittest.main()


class CpuPathCannotRun(unittest.TestCase):
    """A file that uses what the CPU path cannot run (its headers stop the
    build saying so) is graded on a GPU: on the CPU path it is not measured
    and flagged, never scored 0 as a compile error (issue 22, item 2)."""
    lab = LABS["04_reduction"]

    def test_the_cpu_paths_refusal_to_compile_is_not_a_compile_error(self):
        from cmlgrade.build import TargetBuild, TreeBuild
        from cmlgrade.building import _note_build
        said = ('labs/04_reduction/reduction.cu:40:5: error: static assertion failed: cml-cpu: the CPU path cannot '
                'run grid.sync() (a cooperative launch): grade this file on a GPU')
        tb = TreeBuild(True, targets={t: TargetBuild(t, not t.endswith("_cpu"), 1.0,
                                                      [said] if t.endswith("_cpu") else [])
                                      for t in ("test_reduction_cpu", "reduction_harness")})
        run = LabRun(self.lab.name)
        _note_build(run, tb)
        self.assertEqual(run.cpu_unsupported, "the CPU path cannot run grid.sync() (a cooperative launch): grade "
                                              "this file on a GPU")
        ls = score_lab(self.lab, run, lab_run(self.lab, all_tests(self.lab)))
        self.assertEqual((ls.points, ls.max_points), (0, 0))
        self.assertTrue(all(i.status in ("not_measured", "excluded") for i in ls.items))
        self.assertTrue(any("not graded on the CPU path (the CPU path cannot run grid.sync()" in n and
                            "flagged for the instructor" in n for n in ls.notes), ls.notes)
        self.assertFalse(any("does not compile" in n for n in ls.notes), ls.notes)

    def test_an_ordinary_compile_error_still_scores_zero(self):
        from cmlgrade.build import TargetBuild, TreeBuild
        from cmlgrade.building import _note_build
        tb = TreeBuild(True, targets={"test_reduction_cpu": TargetBuild(
            "test_reduction_cpu", False, 1.0, ["reduction.cu:3:1: error: expected ';' before '}' token"])})
        run = LabRun(self.lab.name)
        _note_build(run, tb)
        self.assertEqual(run.cpu_unsupported, "")
        ls = score_lab(self.lab, run, lab_run(self.lab, all_tests(self.lab)))
        self.assertEqual(ls.points, 0)
        self.assertGreater(ls.max_points, 0)
        self.assertTrue(any("does not compile" in n for n in ls.notes), ls.notes)
