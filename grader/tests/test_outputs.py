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

from helpers import KIT, labs, tmpdir
from test_score import all_tests, lab_run

from cmlgrade import cli
from cmlgrade.intake import Submission
from cmlgrade.parsers import SanitizerReport
from cmlgrade.pipeline import Options, Pipeline
from cmlgrade.report import gradebook_csv, gradescope_json, junit_xml, prairielearn_json, write_all
from cmlgrade.results import LabRun, StudentResult
from cmlgrade.sandbox import ProcResult
from cmlgrade.score import score_lab

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
        self.assertEqual(self.run_cli(str(d), "--lab", "99_nothing")[0], cli.EXIT_GRADER)
        with self.assertRaises(SystemExit) as cm, mock.patch("sys.stderr", new=io.StringIO()):
            cli.main(["--jobs", "many"])
        self.assertEqual(cm.exception.code, 2)


class FakeBuildTests(unittest.TestCase):
    """A compile error through an injected runner: no nvcc, no GPU."""

    def test_compile_error_costs_only_what_needs_the_file(self):
        d = tmpdir(self)
        calls = []

        def fake(argv, cwd=None, env=None, timeout=None):
            calls.append(argv)
            if "--target" in argv and argv[argv.index("--target") + 1] == "test_banks_model":
                return ProcResult(argv, 2, "", f"{cwd}/labs/01_shared_banks/bank_model.c:7:5: error: expected ';' "
                                               "before 'return'\ngmake[2]: *** [x] Error 1\n", False, 0.1)
            return ProcResult(argv, 0, "", "", False, 0.1)

        lab = LABS["01_shared_banks"]
        sub = Submission("kim", "kim.zip", {lab.name: {"bank_model.c": b"int bank_of(unsigned a) { return 0 }\n",
                                                        "banks.cu": b"__global__ void k() { __shared__ int s; }\n"}})
        with mock.patch.dict(os.environ, {"CUDA_VISIBLE_DEVICES": ""}):
            p = Pipeline(Options(kit=KIT, work=d / "work", sandbox=False, jobs=2), [lab], runner=fake)
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
        self.assertIn("error: expected ';'", (d / "out" / "students" / "kim" / "feedback.md").read_text())


if __name__ == "__main__":
    unittest.main()
