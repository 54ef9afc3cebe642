"""The lab registry from the manifests (labs/*/lab.json) or the build's
<build>/kit/labs.json; rubrics (policy only), override merging, validation;
the mistakes' feedback from the catalogue."""
import json
import shutil
import tomllib
import unittest
from pathlib import Path

from helpers import GRADER, KIT, KIT_BUILD, labs, tmpdir

from cmlgrade.labs import LabError, kit_description, load_labs, load_mistakes, manifests, same_shape
from cmlgrade.rubric import RubricError, build_rubric, load_override, load_rubric, merge

FILES = ["reduction.cu"]


def base(name="04_reduction"):
    with (KIT / "labs" / name / "rubric.toml").open("rb") as f:
        return tomllib.load(f)


def the_manifests() -> dict[str, dict]:
    """Every lab of the kit, from labs/*/lab.json (never a list in a test)."""
    return {p.parent.name: json.loads(p.read_text()) for p in sorted((KIT / "labs").glob("*/lab.json"))}


def small_kit(testcase, names=None) -> Path:
    """A kit holding only the manifests (and catalogues) of some labs."""
    kit = tmpdir(testcase)
    for name in names or the_manifests():
        (kit / "labs" / name).mkdir(parents=True)
        shutil.copy2(KIT / "labs" / name / "lab.json", kit / "labs" / name / "lab.json")
        sol = KIT / "solutions" / name
        if sol.is_dir():
            (kit / "solutions" / name).mkdir(parents=True)
            for f in ("mistakes.toml", "feedback.toml"):
                if (sol / f).is_file():
                    shutil.copy2(sol / f, kit / "solutions" / name / f)
    return kit


class ManifestTests(unittest.TestCase):
    def test_the_kits_labs_are_its_manifests(self):
        want = the_manifests()
        ls = labs()
        self.assertTrue(want)
        self.assertEqual(sorted(ls), sorted(want))
        for name, m in want.items():
            lab = ls[name]
            self.assertEqual((lab.stem, list(lab.files), lab.model_file), (m["stem"], m["files"], m["model"]))
            self.assertEqual([(s.num, s.ident, s.what, s.where) for s in lab.steps],
                             [(s["num"], s["ident"], s["title"], s["file"]) for s in m["steps"]])
            self.assertEqual(list(lab.sanitize), m["sanitize"])
            self.assertEqual(lab.kernels, m["kernels"])
            expect = {int(k): v for c in m["counters"] for k, v in c["expect"].items()}
            self.assertEqual({c.step: c.expect for c in lab.counter_checks}, expect)
            runner = f"{m['stem']}_run"
            self.assertEqual(lab.student_targets()[-1], runner)
            self.assertEqual(lab.ref_targets()[-1], runner + "_ref")
            self.assertEqual(bool(m["model"]), f"test_{m['stem']}_model" in lab.test_binaries())
            self.assertEqual(lab.step_of_suite("step3"), 3)
            self.assertIsNone(lab.step_of_suite("helpers"))
            # every cataloged mistake has its feedback line
            for mk in lab.mistakes:
                self.assertTrue(mk.feedback, mk.name)
            self.assertEqual(set(lab.rubric.sanitizers.points), {"memcheck", "racecheck", "synccheck", "initcheck"})

    def test_the_build_writes_the_same_description(self):
        """<build>/kit/labs.json (made by CMake) and the grader's own
        derivation from the manifests agree field by field."""
        written = KIT_BUILD / "kit" / "labs.json"
        if not written.is_file():
            self.skipTest(f"no {written}: configure the kit first")
        built = json.loads(written.read_text())["labs"]
        derived = manifests(KIT)
        self.assertEqual(json.loads(json.dumps(built, sort_keys=True)), json.loads(json.dumps(derived, sort_keys=True)))
        self.assertEqual(same_shape(load_labs(KIT), load_labs(KIT, build_dir=KIT_BUILD)), [])

    def test_the_edition_is_what_the_kits_cmakelists_says(self):
        """solution_dir comes from KIT_EDITION in the kit's CMakeLists.txt
        (as the build's own description does), not from whether a
        solutions/ folder happens to be there."""
        from cmlgrade.labs import kit_edition
        kit = small_kit(self)
        top = (KIT / "CMakeLists.txt").read_text()
        self.assertEqual(kit_edition(KIT), "developer")
        (kit / "CMakeLists.txt").write_text(top.replace('set(KIT_EDITION "developer" CACHE',
                                                        'set(KIT_EDITION "student" CACHE'))
        self.assertEqual(kit_edition(kit), "student")
        self.assertTrue((kit / "solutions").is_dir())
        self.assertEqual({d["solution_dir"] for d in manifests(kit)}, {""})
        (kit / "CMakeLists.txt").write_text(top)
        self.assertEqual({d["solution_dir"] for d in manifests(kit)} - {""},
                         {f"solutions/{d['name']}" for d in manifests(kit)})

    def test_the_build_description_is_read_when_present(self):
        kit = small_kit(self)
        build = kit / "b"
        desc = kit_description(kit)
        desc[0]["sanitize"] = ["--from-the-build"]
        (build / "kit").mkdir(parents=True)
        (build / "kit" / "labs.json").write_text(json.dumps({"format": 1, "labs": desc}))
        lab = load_labs(kit, build_dir=build)[0]
        self.assertEqual(lab.sanitize, ("--from-the-build",))
        self.assertEqual(same_shape(load_labs(kit), [lab] + load_labs(kit)[1:]), [f"{lab.name}: sanitize"])
        (build / "kit" / "labs.json").write_text(json.dumps({"format": 2, "labs": []}))
        with self.assertRaisesRegex(LabError, "format"):
            load_labs(kit, build_dir=build)

    def test_a_lab_without_a_rubric_gets_the_default_policy(self):
        kit = small_kit(self)
        rubrics = tmpdir(self)  # no rubric file at all
        ls = load_labs(kit, rubric_dir=rubrics)
        self.assertEqual(sorted(l.name for l in ls), sorted(the_manifests()))
        for lab in ls:
            self.assertTrue(lab.rubric.is_default)
            self.assertIn("default policy", lab.rubric.source)
            self.assertEqual([s for s in lab.rubric.static if not s.sass_kernel], [],
                             "no regex over the source text: reaching outside the lab is the object checks' job")
            self.assertGreater(lab.max_points(False), 0)

    def test_unknown_lab_names_the_known_ones(self):
        with self.assertRaisesRegex(LabError, r"99_nope.*known: .*04_reduction"):
            load_labs(KIT, only=["99_nope"])

    def test_kernel_names_come_from_the_manifest(self):
        from cmlgrade.parsers import names_in
        ls = labs()
        text = "a race between tree_down_to and reduce_kernel3"
        self.assertEqual(names_in(text, ls["04_reduction"].kernels)[:2], ["tree_down_to", "reduce_kernel3"])
        self.assertNotIn("tree_down_to", names_in(text, ls["06_transpose"].kernels))
        kit = small_kit(self, ["04_reduction"])
        m = kit / "labs" / "04_reduction" / "lab.json"
        m.write_text(m.read_text().replace('"kernels": "', '"kernels": "(', 1))
        with self.assertRaisesRegex(LabError, "kernels"):
            load_labs(kit)

    def test_a_manifest_in_the_wrong_folder(self):
        kit = small_kit(self, ["04_reduction"])
        (kit / "labs" / "04_reduction").rename(kit / "labs" / "05_other")
        with self.assertRaisesRegex(LabError, "folder's name"):
            load_labs(kit)


class CatalogueTests(unittest.TestCase):
    def test_feedback_comes_from_the_catalogue(self):
        lab = labs(["04_reduction"])["04_reduction"]
        m = {x.name: x for x in lab.mistakes}["last_warp_without_syncwarp"]
        self.assertEqual((m.kernel, m.finding), ("reduce_kernel5|warp_tail", "(?i)^warning"))
        self.assertIn("__syncwarp", m.feedback)

    def test_a_mistake_without_feedback_or_a_stray_line(self):
        d = tmpdir(self)
        (d / "mistakes.toml").write_text('[[mistake]]\nname = "a"\nstep = 1\ncaught_by = "tests"\n')
        with self.assertRaisesRegex(LabError, "a has no feedback"):
            load_mistakes(d / "mistakes.toml", "x.cu")
        (d / "feedback.toml").write_text('[a]\nfeedback = "fix a"\n[b]\nfeedback = "x"\n')
        with self.assertRaisesRegex(LabError, "not in mistakes.toml: b"):
            load_mistakes(d / "mistakes.toml", "x.cu")
        (d / "feedback.toml").write_text('[a]\nfeedback = "fix a"\nkernel = "(bad"\n')
        with self.assertRaisesRegex(LabError, "bad regular expression"):
            load_mistakes(d / "mistakes.toml", "x.cu")
        (d / "feedback.toml").write_text('[a]\nfeedback = "fix a"\n')
        self.assertEqual(load_mistakes(d / "mistakes.toml", "x.cu")[0].feedback, "fix a")

    def test_feedback_keys_in_the_catalogue_entry(self):
        """Once labtool accepts them, the keys may sit in the [[mistake]] entry."""
        d = tmpdir(self)
        (d / "mistakes.toml").write_text('[[mistake]]\nname = "a"\nstep = 2\ncaught_by = "racecheck"\n'
                                         'feedback = "sync"\nkernel = "k2"\nfinding = "(?i)^warning"\n')
        m = load_mistakes(d / "mistakes.toml", "x.cu")[0]
        self.assertEqual((m.feedback, m.kernel, m.finding, m.step, m.file), ("sync", "k2", "(?i)^warning", 2, "x.cu"))


class RubricTests(unittest.TestCase):
    def test_every_timed_step_has_a_harness_that_times_it(self):
        """A step the rubric times is timed by the lab's kit-only harness: its
        hn_lab gives the timing input to change and the output to sample
        (fields 6 and 7). Without them every repeat is missing and the
        grader reads the step as a wrong answer (lab 08's steps 1 and 4 on
        an H200, the reference at 54/60)."""
        timed = 0
        for name, lab in labs().items():
            if not lab.rubric.performance.steps:
                continue
            timed += 1
            src = (KIT / "common" / "labs" / name / "harness.c").read_text()
            init = src[src.index("static const hn_lab lab = {"):]
            fields = [f.strip() for f in init[init.index("{") + 1:init.index("}")].split(",")]
            self.assertEqual(len(fields), 8, f"{name}: the harness's hn_lab has 8 fields")
            self.assertNotIn("NULL", fields[5:7], f"{name}: steps {lab.rubric.performance.steps} are timed "
                             "but the harness gives no timing input or output")
        self.assertGreater(timed, 0)

    def test_override_merges_key_by_key(self):
        d = tmpdir(self)
        o = d / "o.toml"
        o.write_text('[04_reduction.performance]\npoints_per_step = 10\n[04_reduction.tests.points]\n"1" = 2\n'
                     '[06_transpose.mistakes.block_indices_not_swapped_on_the_write]\nfeedback = "whiteboard"\n')
        ov = load_override(o)
        r = load_rubric(KIT / "labs" / "04_reduction" / "rubric.toml", ov["04_reduction"], FILES)
        self.assertEqual(r.performance.points_per_step, 10)
        self.assertEqual(r.performance.full_credit_ratio, 1.2)   # kept
        self.assertEqual(r.tests.step_points(1), 2)
        self.assertEqual(r.tests.step_points(8), 12)              # kept from the default
        ls = {l.name: l for l in load_labs(KIT, override=ov)}
        self.assertEqual(ls["04_reduction"].rubric.performance.points_per_step, 10)
        m = {x.name: x for x in ls["06_transpose"].mistakes}
        self.assertEqual(m["block_indices_not_swapped_on_the_write"].feedback, "whiteboard")

    def test_the_demo_override_loads_and_limits_the_sanitizer_runs(self):
        ov = load_override(GRADER / "tools" / "gpu-demo-override.toml")
        for lab in load_labs(KIT, override=ov):
            # A lab the override does not name (a new lab) keeps every configuration.
            want = lab.sanitize[:1] if lab.name in ov else lab.sanitize
            self.assertEqual(lab.sanitizer_args(), list(want))
        for lab in load_labs(KIT):
            self.assertEqual(lab.sanitizer_args(), list(lab.sanitize))

    def test_merge_replaces_lists(self):
        self.assertEqual(merge({"a": [1, 2], "t": {"x": 1, "y": 2}}, {"a": [3], "t": {"y": 5}}),
                         {"a": [3], "t": {"x": 1, "y": 5}})

    def test_validation_errors_name_the_key(self):
        cases = [
            (("tests", "visibility"), "secret", "tests.visibility"),
            (("sanitizers", "points"), {"memchek": 1}, "sanitizers.points.memchek"),
            (("performance", "full_credit_ratio"), 0.5, "performance.full_credit_ratio"),
            (("performance", "steps"), ["7"], "performance.steps"),
        ]
        for (table, key), value, where in cases:
            d = base()
            d[table][key] = value
            with self.assertRaises(RubricError) as cm:
                build_rubric(d, "x.toml", FILES)
            self.assertIn(where, str(cm.exception))
        d = base()
        d["static"][0]["require"] = "(unclosed"
        with self.assertRaisesRegex(RubricError, "bad regular expression"):
            build_rubric(d, "x.toml", FILES)
        d = base()
        d["static"][0]["file"] = "other.cu"
        with self.assertRaisesRegex(RubricError, "not one of the lab's files"):
            build_rubric(d, "x.toml", FILES)
        d = base()
        d["nonsense"] = {}
        with self.assertRaisesRegex(RubricError, "unknown table"):
            build_rubric(d, "x.toml", FILES)

    def test_what_the_manifest_says_is_refused_in_a_rubric(self):
        for table, key, value in (("lab", "stem", "reduction"), ("lab", "files", FILES),
                                  ("lab", "steps_macro", "REDUCTION_STEPS"), ("tests", "binaries", ["t"]),
                                  ("sanitizers", "runner_args", ["--n 3"]), ("counters", "check", [])):
            d = base()
            d.setdefault(table, {})[key] = value
            with self.assertRaisesRegex(RubricError, rf"{table}\.{key}: no longer in a rubric.*manifest"):
                build_rubric(d, "x.toml", FILES)
        for name in the_manifests():  # the kit's own rubrics are policy only
            if (KIT / "labs" / name / "rubric.toml").is_file():
                data = base(name)
                self.assertEqual(set(data.get("lab", {})) - {"title", "time_limit_s", "build_timeout_s"}, set())
                self.assertNotIn("mistakes", data)

    def test_unknown_step_and_unknown_mistake(self):
        d = tmpdir(self)
        o = d / "o.toml"
        o.write_text("[04_reduction.performance]\nsteps = [9]\n")
        with self.assertRaisesRegex(RubricError, "step 9"):
            load_labs(KIT, override=load_override(o))
        o.write_text('[06_transpose.counters.points]\n"1" = 5\n')   # step 1 has no counter expectation
        with self.assertRaisesRegex(RubricError, "counters.points names step 1"):
            load_labs(KIT, override=load_override(o))
        o.write_text('[06_transpose.mistakes.not_a_mistake]\nfeedback = "x"\n')
        with self.assertRaisesRegex(RubricError, "not_a_mistake"):
            load_labs(KIT, override=load_override(o))
        o.write_text('[99_nope.tests]\ndefault_points = 1\n')
        with self.assertRaisesRegex(RubricError, "99_nope"):
            load_labs(KIT, override=load_override(o))
        o.write_text("not toml [")
        with self.assertRaisesRegex(RubricError, "not valid TOML"):
            load_override(o)


if __name__ == "__main__":
    unittest.main()
