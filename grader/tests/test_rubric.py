"""Rubric loading, override merging, validation; step tables from headers."""
import tomllib
import unittest
from pathlib import Path

from helpers import GRADER, KIT, labs, tmpdir

from cmlgrade.labs import LabError, load_labs, parse_step_table
from cmlgrade.rubric import RubricError, build_rubric, load_override, load_rubric, merge


def base(name="04_reduction"):
    with (GRADER / "rubrics" / f"{name}.toml").open("rb") as f:
        return tomllib.load(f)


class StepTableTests(unittest.TestCase):
    def test_three_and_four_field_tables(self):
        three = '#define T_STEPS(X) \\\n    X(1, a, "first, with a comma") \\\n    X(2, b, "second " "joined")\n'
        s = parse_step_table(three, "T_STEPS")
        self.assertEqual([(x.num, x.ident, x.what) for x in s], [(1, "a", "first, with a comma"), (2, "b", "second joined")])
        four = '#define B_STEPS(X) X(1, m, "model.c", "the \\"model\\"") X(2, k, "k.cu", "kernel")'
        s = parse_step_table(four, "B_STEPS")
        self.assertEqual((s[0].where, s[0].what, s[1].where), ("model.c", 'the "model"', "k.cu"))

    def test_bad_tables(self):
        with self.assertRaises(LabError):
            parse_step_table("#define OTHER(X) X(1, a, \"x\")", "T_STEPS")
        with self.assertRaises(LabError):
            parse_step_table('#define T_STEPS(X) X(1, a, "x") X(3, c, "y")', "T_STEPS")

    def test_the_kits_labs_come_from_data(self):
        ls = labs()
        self.assertEqual(sorted(ls), ["01_shared_banks", "04_reduction", "06_transpose"])
        self.assertEqual(len(ls["04_reduction"].steps), 8)
        self.assertEqual(len(ls["06_transpose"].steps), 6)
        banks = ls["01_shared_banks"]
        self.assertEqual([s.where for s in banks.steps[:3]], ["bank_model.c"] * 3)
        self.assertEqual(banks.student_targets(), ["test_banks_model", "test_banks", "banks_run"])
        for lab in ls.values():  # every cataloged mistake has a feedback line
            self.assertEqual(sorted(m.name for m in lab.mistakes), sorted(lab.rubric.mistakes))
            self.assertEqual(lab.rubric.sanitizers.points.keys(), {"memcheck", "racecheck", "synccheck", "initcheck"})

    def test_sanitizer_args_match_the_cmake_lab_lines(self):
        cm = (KIT / "CMakeLists.txt").read_text()
        for lab in labs().values():
            for a in lab.rubric.sanitizers.runner_args:
                self.assertIn(f'"{a}"', cm, f"{lab.name}: {a} is not a SANITIZE string")


class RubricTests(unittest.TestCase):
    def test_override_merges_key_by_key(self):
        d = tmpdir(self)
        o = d / "o.toml"
        o.write_text('[04_reduction.performance]\npoints_per_step = 10\n[04_reduction.tests.points]\n"1" = 2\n')
        ov = load_override(o)
        r = load_rubric(GRADER / "rubrics" / "04_reduction.toml", ov["04_reduction"])
        self.assertEqual(r.performance.points_per_step, 10)
        self.assertEqual(r.performance.full_credit_ratio, 1.2)   # kept
        self.assertEqual(r.tests.step_points(1), 2)
        self.assertEqual(r.tests.step_points(8), 12)              # kept from the default
        ls = {l.name: l for l in load_labs(KIT, override=ov)}
        self.assertEqual(ls["04_reduction"].rubric.performance.points_per_step, 10)

    def test_merge_replaces_lists(self):
        self.assertEqual(merge({"a": [1, 2], "t": {"x": 1, "y": 2}}, {"a": [3], "t": {"y": 5}}),
                         {"a": [3], "t": {"x": 1, "y": 5}})

    def test_validation_errors_name_the_key(self):
        cases = [
            (("tests", "visibility"), "secret", "tests.visibility"),
            (("sanitizers", "points"), {"memchek": 1}, "sanitizers.points.memchek"),
            (("performance", "full_credit_ratio"), 0.5, "performance.full_credit_ratio"),
            (("lab", "files"), [], "lab.files"),
            (("performance", "steps"), ["7"], "performance.steps"),
        ]
        for (table, key), value, where in cases:
            d = base()
            d[table][key] = value
            with self.assertRaises(RubricError) as cm:
                build_rubric(d, "x.toml")
            self.assertIn(where, str(cm.exception))
        d = base()
        d["static"][0]["require"] = "(unclosed"
        with self.assertRaisesRegex(RubricError, "bad regular expression"):
            build_rubric(d, "x.toml")
        d = base()
        d["nonsense"] = {}
        with self.assertRaisesRegex(RubricError, "unknown table"):
            build_rubric(d, "x.toml")

    def test_unknown_step_and_unknown_mistake(self):
        d = tmpdir(self)
        o = d / "o.toml"
        o.write_text("[04_reduction.performance]\nsteps = [9]\n")
        with self.assertRaisesRegex(RubricError, "step 9"):
            load_labs(KIT, override=load_override(o))
        o.write_text('[06_transpose.mistakes.not_a_mistake]\nfeedback = "x"\n')
        with self.assertRaisesRegex(RubricError, "not_a_mistake"):
            load_labs(KIT, override=load_override(o))
        o.write_text("not toml [")
        with self.assertRaisesRegex(RubricError, "not valid TOML"):
            load_override(o)


if __name__ == "__main__":
    unittest.main()
