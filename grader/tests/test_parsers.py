"""Criterion JSON, compute-sanitizer reports, counter lines, runner JSON."""
import unittest

from helpers import fixture, labs

from cmlgrade.parsers import (ReportError, TestOutcome, ncu_number, parse_counters, parse_criterion_json,
                              parse_runner_json, parse_sanitizer)
from cmlgrade.results import BinaryRun
from cmlgrade.run import failing_steps, passing_steps


class CriterionTests(unittest.TestCase):
    def test_statuses_and_messages(self):
        o = parse_criterion_json(fixture("criterion_mixed.json"))
        self.assertEqual(o["step3::sums_ints_exactly"].status, "PASSED")
        f = o["step3::sums_floats"]
        self.assertEqual(f.status, "FAILED")
        self.assertIn("reads past the end", f.messages[0])
        self.assertIn("\\path", f.messages[1])          # unescaped backslash tolerated
        self.assertEqual(o["step3::sums_2_pow_28"].status, "TIMEOUT")
        self.assertEqual(o["step3::sums_awkward"].status, "CRASHED")
        self.assertEqual(o["step4::sums_ints_exactly"].status, "SKIPPED")
        self.assertEqual(o["step4::sums_ints_exactly"].suite, "step4")

    def test_malformed_reports(self):
        for bad in ("", "{", '{"test_suites": 3}', '{"test_suites": [{"name": "s", "tests": [{"name": "t"}]}]}',
                    '{"test_suites": [{"name": "s", "tests": [{"name": "t", "status": "GREAT"}]}]}'):
            with self.assertRaises(ReportError):
                parse_criterion_json(bad)


class SanitizerTests(unittest.TestCase):
    def test_memcheck_finding(self):
        r = parse_sanitizer(fixture("memcheck_errors.txt"), 99)
        self.assertEqual(r.state, "errors")
        self.assertEqual(r.errors, 48)
        self.assertEqual(r.summary, "ERROR SUMMARY: 48 errors")
        self.assertEqual(r.first.kernel, "reduce_kernel3")
        self.assertEqual(r.first.location, "reduction.cu:131")
        self.assertIn("Invalid __shared__ write", r.first.what)

    def test_past_the_print_limit(self):
        text = fixture("memcheck_errors.txt").replace(
            "========= ERROR SUMMARY: 48 errors",
            "========= ERROR SUMMARY: 28 errors were not printed. Use --print-limit option to adjust the number of "
            "printed errors\n========= ERROR SUMMARY: 48 errors")
        r = parse_sanitizer(text, 99)
        self.assertEqual((r.summary, r.errors), ("ERROR SUMMARY: 48 errors", 48))

    def test_racecheck_both_formats(self):
        r = parse_sanitizer(fixture("racecheck_errors.txt"), 99)
        self.assertEqual((r.state, r.errors, r.first.kernel, r.first.location),
                         ("errors", 1, "reduce_kernel5", "reduction.cu:212"))
        r = parse_sanitizer(fixture("racecheck_old_format.txt"), 99)
        self.assertEqual((r.first.kernel, r.first.location), ("transpose_kernel3", "transpose.cu:190"))

    def test_clean_wrong_result_no_gpu_and_incomplete(self):
        self.assertEqual(parse_sanitizer(fixture("sanitizer_clean.txt"), 0).state, "clean")
        self.assertEqual(parse_sanitizer(fixture("sanitizer_clean.txt"), 1).state, "clean")
        self.assertEqual(parse_sanitizer("reduction_run: no CUDA device: x\n", 77).state, "unavailable")
        r = parse_sanitizer("========= Target application returned an error\n", -11)
        self.assertEqual(r.state, "incomplete")
        self.assertIn("exit -11", r.summary)


class OneSanitizerProcessTests(unittest.TestCase):
    """compute-sanitizer runs once a tool over a runner that checks every
    sanitize config in turn (`--then`), and the feedback still names the
    config whose run the first finding came from."""

    CONFIGS = ["--type int --n 1000003", "--type float --n 70001", "--type int --n 33"]

    def run_with(self, output: str, rc: int, timed_out: bool = False):
        from pathlib import Path
        from unittest import mock
        from cmlgrade import run as R
        from cmlgrade.sandbox import ProcResult
        calls = []

        class Exe:
            def run(self, argv, **kw):
                calls.append((argv, kw))
                return ProcResult(argv, None if timed_out else rc, output, "", timed_out, 1.0)

        with mock.patch.object(R, "find_tool", lambda name: "/cuda/bin/compute-sanitizer"):
            rep, cfg = R.run_sanitizer(Exe(), "memcheck", Path("/b/reduction_run"), self.CONFIGS,
                                       R.Deadline(1000), 100, Path("/w"), {}, [], "1,2")
        return rep, cfg, calls

    def test_one_process_every_config(self):
        rep, cfg, calls = self.run_with("".join(f"run {k} of 3: ...\nstep 1 first ok\n" for k in (1, 2, 3))
                                        + fixture("sanitizer_clean.txt"), 0)
        self.assertEqual(len(calls), 1, "one compute-sanitizer process for the tool")
        argv, kw = calls[0]
        self.assertEqual(argv, ["/cuda/bin/compute-sanitizer", "--tool", "memcheck", "--padding", "1048576",
                                "--error-exitcode", "99",
                                "--print-limit", "20", "/b/reduction_run",
                                "--step", "1,2", "--type", "int", "--n", "1000003", "--check-only", "--then",
                                "--step", "1,2", "--type", "float", "--n", "70001", "--check-only", "--then",
                                "--step", "1,2", "--type", "int", "--n", "33", "--check-only"])
        self.assertEqual(kw["timeout"], 300, "each config's own limit, added up")
        self.assertEqual((rep.state, cfg), ("clean", ""))

    def test_the_finding_names_its_config(self):
        text = ("run 1 of 3: ...\nstep 1 first ok\nrun 2 of 3: ...\n" + fixture("memcheck_errors.txt")
                + "run 3 of 3: ...\n")
        rep, cfg, _ = self.run_with(text, 99)
        self.assertEqual(rep.state, "errors")
        self.assertEqual(cfg, "--step 1,2 --type float --n 70001")

    def test_a_run_that_hangs_names_the_config_it_was_in(self):
        rep, cfg, _ = self.run_with("run 1 of 3: ...\nrun 2 of 3: ...\nrun 3 of 3: ...\n", 0, timed_out=True)
        self.assertEqual((rep.state, cfg), ("incomplete", "--step 1,2 --type int --n 33"))


class SanitizerOptionsTests(unittest.TestCase):
    def test_the_kits_sanitizer_tests_run_each_tool_as_the_grader_does(self):
        """cmake/KitCriterionJson.cmake's kit_sanitizer_tool (the kit's
        sanitizer and mistake tests) and run.py's EXACT_BUFFERS and
        TOOL_OPTIONS (the grader) say the same: a mistake the kit's test
        catches is one the grader catches."""
        import re
        from helpers import KIT
        from cmlgrade import run as R
        text = (KIT / "cmake" / "KitCriterionJson.cmake").read_text(encoding="utf-8")
        body = text[text.index("function(kit_sanitizer_tool"):]
        body = body[:body.index("endfunction()")]
        memcheck = body[:body.index("else()")]
        env = re.search(r"set\(\$\{env_var\} (.*) PARENT_SCOPE\)", memcheck).group(1).split()
        options = re.search(r"set\(\$\{options_var\} (.*) PARENT_SCOPE\)", memcheck).group(1).split()
        self.assertEqual(R.EXACT_BUFFERS_FOR, ("memcheck",))
        self.assertEqual(env, [f"{k}={v}" for k, v in R.EXACT_BUFFERS.items()])
        self.assertEqual(options, R.TOOL_OPTIONS["memcheck"])
        self.assertEqual(set(R.TOOL_OPTIONS), {"memcheck"})   # the other tools: none, as the cmake's else()


class CounterTests(unittest.TestCase):
    def test_lines_with_separators_and_missing_values(self):
        c = parse_counters(fixture("counters_banks.txt"))
        self.assertTrue(c.available)
        self.assertEqual(c.conflicts, {5: 261888.0, 6: 0.0})
        self.assertIn(7, c.missing)

    def test_not_available(self):
        c = parse_counters("counters not available: ncu: ERR_NVGPUCTRPERM: no permission\n")
        self.assertFalse(c.available)
        self.assertIn("ERR_NVGPUCTRPERM", c.reason)
        self.assertFalse(parse_counters("").available)

    def test_ncu_numbers(self):
        self.assertEqual(ncu_number('"4,063,232"'), 4063232.0)
        self.assertEqual(ncu_number("n/a"), -1.0)
        for cell in ("nan", "-nan", "inf"):   # float() takes them: never a count
            self.assertEqual(ncu_number(cell), -1.0)
        c = parse_counters("step 5 k: shared-load bank conflicts nan\nstep 6 k: shared-load bank conflicts 0\n")
        self.assertEqual(c.conflicts, {6: 0.0})

    def test_a_probe_pattern_without_a_value_leaves_its_step_unmeasured(self):
        # lab 01's runner: one line a probe pattern, all step 4; one pattern's
        # launch unread makes the whole step's sum unknown, not the others' sum
        c = parse_counters("step 4 probe stride_1: shared-load bank conflicts 0 (1.00 wavefronts per load)\n"
                           "step 4 probe stride_2: counters not available: ncu gave no value\n"
                           "step 4 probe stride_32: shared-load bank conflicts 31744 (32.00 wavefronts per load)\n"
                           "step 5 abt_naive: counters not available: ncu gave no value\n"
                           "step 6 abt_padded: shared-load bank conflicts 0 (4 matrices, one wave of blocks)\n")
        self.assertTrue(c.available)
        self.assertEqual(c.missing, {4: "ncu gave no value", 5: "ncu gave no value"})
        self.assertEqual(c.conflicts[6], 0.0)
        self.assertNotIn(5, c.conflicts)


class RunnerJsonTests(unittest.TestCase):
    def test_rows_after_student_output(self):
        rows = parse_runner_json(fixture("runner_reduction.json"))
        self.assertEqual(sorted(rows), [7, 8])
        self.assertEqual(rows[8].median_ms, 0.38)
        self.assertTrue(rows[8].correct)
        self.assertFalse(rows[7].correct)
        self.assertIsNone(rows[7].median_ms)
        with self.assertRaises(ReportError):
            parse_runner_json("no json here")


class StepSelectionTests(unittest.TestCase):
    """Which steps get the credited sanitizer runs (all tests pass) and which
    a diagnosis (a failure a tool can explain; not a hang)."""

    def test_passing_and_failing_steps(self):
        o = parse_criterion_json(fixture("criterion_mixed.json"))
        br = BinaryRun("gpu_tests", True, o)
        other = BinaryRun("model_tests", True, {
            "step1::a": TestOutcome("step1", "a", "PASSED", []),
            "step2::a": TestOutcome("step2", "a", "FAILED", ["wrong"]),
            "step5::a": TestOutcome("step5", "a", "CRASHED", []),
            "helpers::a": TestOutcome("helpers", "a", "FAILED", []),
        })
        runs = {"gpu_tests": br, "model_tests": other}
        step_of = labs(["04_reduction"])["04_reduction"].step_of_test   # the manifest's suite pattern
        self.assertEqual(passing_steps(runs, step_of), [1])
        # step 3 has a TIMEOUT (a sanitizer would hang too); step 4 was skipped
        self.assertEqual(failing_steps(runs, step_of), [2, 5])
        # a suite of no step: a test named step<num>_ counts for that step (lab 04's past_2_pow_31), others for none
        past = BinaryRun("past", True, {
            "past_2_pow_31::step1_sums": TestOutcome("past_2_pow_31", "step1_sums", "FAILED", ["got 3"]),
            "past_2_pow_31::step6_sums": TestOutcome("past_2_pow_31", "step6_sums", "FAILED", ["got 3"]),
            "past_2_pow_31::steps_all": TestOutcome("past_2_pow_31", "steps_all", "FAILED", []),
        })
        self.assertEqual(passing_steps({**runs, "past": past}, step_of), [],
                         "step 1 fails its test past 2^31: no longer a passing step")
        self.assertEqual(failing_steps({**runs, "past": past}, step_of), [1, 2, 5, 6])


if __name__ == "__main__":
    unittest.main()


class CudaErrorNameTests(unittest.TestCase):
    """A checker line names a harness's CUDA error, not only its number."""

    def test_codes_are_named_from_the_headers(self):
        from cmlgrade.checker import cuda_error
        self.assertEqual(cuda_error(700), "CUDA error 700 (cudaErrorIllegalAddress)")
        self.assertEqual(cuda_error(2), "CUDA error 2 (cudaErrorMemoryAllocation)")
        self.assertEqual(cuda_error(9), "CUDA error 9 (cudaErrorInvalidConfiguration)")

    def test_an_unknown_code_keeps_its_number(self):
        from cmlgrade.checker import cuda_error
        self.assertEqual(cuda_error(123456), "CUDA error 123456")


class GpuProbeTests(unittest.TestCase):
    """A runner's --probe: 77 is "no GPU" (the CPU path may stand in); any
    other failure is a GPU that is there and failed, which the grader must
    not read as "no GPU" (pipeline raises GraderError on GPU_FAILED)."""

    def probe(self, rc: int, line: str):
        import tempfile
        from pathlib import Path
        from cmlgrade.run import probe_gpu
        d = Path(tempfile.mkdtemp())
        self.addCleanup(__import__("shutil").rmtree, d, True)
        runner = d / "fake_run"
        runner.write_text(f"#!/bin/sh\necho '{line}'\nexit {rc}\n")
        runner.chmod(0o755)
        return probe_gpu(runner, None)

    def test_no_gpu_and_a_failing_gpu_are_told_apart(self):
        from cmlgrade.run import GPU_FAILED
        self.assertEqual(self.probe(0, ""), (True, ""))
        ok, why = self.probe(77, "no CUDA device: the driver sees no GPU")
        self.assertEqual((ok, why), (False, "no CUDA device: the driver sees no GPU"))
        oom = "the GPU is not usable: cudaMalloc failed: cudaErrorMemoryAllocation (out of memory)"
        self.assertEqual(self.probe(1, oom), (False, oom))
        ok, why = self.probe(139, "Segmentation fault")
        self.assertFalse(ok)
        self.assertTrue(why.startswith(GPU_FAILED), why)
