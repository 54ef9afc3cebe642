"""The pristine skeleton comes from the solutions, not from labs/ (a student's
clone has their edits there); steps not started are told apart from
mistakes."""
import shutil
import unittest
from pathlib import Path

from helpers import KIT, KIT_BUILD, labs, tmpdir

from cmlgrade.results import LabRun
from cmlgrade.sandbox import Executor, Sandbox
from cmlgrade.score import score_lab
from cmlgrade.skeleton import make_skeletons, not_started, todo_blocks

LABTOOL = KIT_BUILD / "tools" / "labtool" / "labtool"


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


class NotStartedTests(unittest.TestCase):
    def test_every_lab_file_skeleton_and_solution(self):
        for lab in labs().values():
            for f in lab.files:
                skel = text(KIT / lab.dir / f)
                steps = {s.num for s in lab.steps if s.where == f}
                self.assertEqual(set(todo_blocks(skel)), steps, f"{lab.name}/{f}")
                self.assertEqual(not_started(skel, skel), steps)
                if lab.solution_dir:
                    self.assertEqual(not_started(skel, text(KIT / lab.solution_dir / f)), set())

    def test_a_student_who_did_step_1_only(self):
        skel = text(KIT / "labs" / "04_reduction" / "reduction.cu")
        lines = skel.splitlines()
        at = next(i for i, ln in enumerate(lines) if "TODO(step 1)" in ln)
        while lines[at].strip().startswith("//"):
            at += 1
        lines.insert(at, "    for (int s = 1; s < blockDim.x; s *= 2) { /* mine */ }")
        mine = "\n\n".join(lines)  # blank lines do not matter
        self.assertEqual(not_started(skel, mine), set(range(2, 9)))

    def test_no_likely_mistake_for_a_step_not_started(self):
        lab = labs(["04_reduction"])["04_reduction"]
        from test_score import all_tests, lab_run
        m = next(x for x in lab.mistakes if x.caught_by == "tests")
        ref = lab_run(lab, all_tests(lab))
        spec = {k: ("FAILED", "x") if k.startswith(f"step{m.step}::") else v for k, v in all_tests(lab).items()}

        def lines(not_started_steps):
            run = lab_run(lab, spec)
            run.not_started = not_started_steps
            ls = score_lab(lab, run, ref)
            return [f for it in ls.items for f in it.feedback if f.startswith("Likely mistake")], ls.notes

        # make the failure look like the mistake: its real report (fixtures/mistakes, score's signatures)
        from cmlgrade.parsers import parse_criterion_json
        from helpers import FIXTURES
        real = parse_criterion_json((FIXTURES / "mistakes" / f"{lab.name}.{m.name}.json").read_text())
        spec = {k: ("FAILED", *real[k].messages) if k in real and real[k].status == "FAILED" else
                ("PASSED" if k.startswith(f"step{m.step}::") else v) for k, v in
                dict(spec, **dict.fromkeys(real, "PASSED")).items()}
        ref = lab_run(lab, {k: "PASSED" for k in spec})
        started, _ = lines([])
        self.assertTrue(any(m.name in x for x in started), started)
        unstarted, notes = lines([m.step])
        self.assertFalse(any(m.name in x for x in unstarted), unstarted)
        self.assertTrue(any("not started yet" in n and str(m.step) in n for n in notes), notes)


@unittest.skipUnless(LABTOOL.is_file(), f"no {LABTOOL}: build the kit first")
class PristineSkeletonTests(unittest.TestCase):
    def test_an_edited_clone_still_gives_the_pristine_skeleton(self):
        kit = tmpdir(self)
        lab = labs(["04_reduction"])["04_reduction"]
        shutil.copytree(KIT / "labs" / lab.name, kit / "labs" / lab.name)
        shutil.copytree(KIT / "solutions" / lab.name, kit / "solutions" / lab.name)
        pristine = (KIT / lab.dir / "reduction.cu").read_bytes()
        (kit / lab.dir / "reduction.cu").write_bytes(pristine + b"\n// my work\n")  # the student's clone
        sk = make_skeletons(Executor(Sandbox(None, "")), LABTOOL, kit, [lab], tmpdir(self))
        self.assertEqual(sk.get(lab.name, "reduction.cu"), pristine)
        self.assertEqual(sk.notes, [])
        self.assertIn("labtool skeleton", sk.source[(lab.name, "reduction.cu")])

    def test_without_solutions_the_kit_copy_and_a_note(self):
        kit = tmpdir(self)
        lab = labs(["04_reduction"])["04_reduction"]
        shutil.copytree(KIT / "labs" / lab.name, kit / "labs" / lab.name)
        sk = make_skeletons(Executor(Sandbox(None, "")), LABTOOL, kit, [lab], tmpdir(self))
        self.assertEqual(sk.get(lab.name, "reduction.cu"), (KIT / lab.dir / "reduction.cu").read_bytes())
        self.assertTrue(any("no reference solution" in n for n in sk.notes), sk.notes)


if __name__ == "__main__":
    unittest.main()
