"""Grades both ways (issue 22, item 8): the honest-program suite and the bug
fixtures of honest/suite.toml, in ONE batch run of grade.py on the CPU path
(sandboxed with bubblewrap, a secret seed, the prebuilt kit shared by every
submission, --jobs 2), as an instructor would grade a class.

- Every honest program (complete, correct, in a student's own style) must
  not be refused and must earn every point the CPU path measures: the
  points the reference solutions earn there (grader.selfcheck proves they
  earn every measured point), so any measured line below its maximum is a
  docked honest program.
- Every fixture (an honest program with one bug or cheat put in) must lose
  the lines its entry names, with the reason in its feedback; a cheat earns
  nothing on them, and a whole-lab cheat scores at or below the untouched
  skeleton.

It prints one line per program (its score, and the lines it lost with why)
and fails with all the wrong verdicts at once. Heavy (a batch of every lab
on the CPU path): run by CTest as grader.honest, which sets
CMLGRADE_HONEST=1; `unittest discover` (the `grader` test) skips it.
CMLGRADE_HONEST_WORK keeps the build trees there between runs (the
reference build is then reused); CMLGRADE_HONEST_ONLY=id,id,... grades only
those entries; CMLGRADE_HONEST_JOBS=N grades N labs at once (default 2, as
on CI's two cores; CMLGRADE_HONEST_PER_GPU=N passes --per-gpu N).
CMLGRADE_HONEST_GPU=1 grades on the GPUs that
grade.py finds instead (a GPU host: sanitizers, counters, Nsight Compute
traces and timing too; every point the references earn there, speed aside:
a program slower than the reference loses performance points rightly, and
its line says so without failing the test). Skipped,
with the reason, only where the CPU path cannot be built (no cmake, C/C++
compiler or Criterion)."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import unittest
from pathlib import Path

from helpers import GRADER, labs

from cmlgrade.score import score_lab

SUITE_DIR = Path(__file__).resolve().parent / "honest"
SECRET_SEED = "271828"


def load_suite() -> dict:
    return tomllib.loads((SUITE_DIR / "suite.toml").read_text(encoding="utf-8"))


def fixture_files(fx: dict) -> dict[str, str]:
    """The fixture's files: its base program's with each replacement made
    (every replacement must match, or the fixture is stale)."""
    files = {p.name: p.read_text(encoding="utf-8") for p in sorted((SUITE_DIR / fx["base"]).iterdir())}
    for old, new in fx["replace"]:
        hits = [name for name, text in files.items() if old in text]
        if not hits:
            raise AssertionError(f"fixture {fx['id']}: its replacement does not match {fx['base']}: {old[:60]!r}")
        for name in hits:
            files[name] = files[name].replace(old, new)
    return files


def missing_tools() -> str:
    for tool in ("cmake", "gcc", "g++", "pkg-config"):
        if not shutil.which(tool):
            return f"{tool} not found: the CPU path cannot be built here"
    if subprocess.run(["pkg-config", "--exists", "criterion"]).returncode != 0:
        return "Criterion not found (pkg-config criterion): the CPU path cannot be built here"
    return ""


def skeleton_points(lab) -> float:
    """What the untouched skeleton scores: every test failed."""
    from test_score import all_tests, lab_run
    return score_lab(lab, lab_run(lab, all_tests(lab, "FAILED")), lab_run(lab, all_tests(lab))).points


def lost_lines(ls: dict) -> list[dict]:
    return [it for it in ls["items"] if it["status"] not in ("not_measured", "excluded")
            and it["points"] < it["max_points"]]


def why_lost(it: dict) -> str:
    text = "; ".join(it.get("feedback", [])[:1] + it.get("details", [])[:1])
    return f"{it['name']} {it['points']:g}/{it['max_points']:g}: {text[:300]}"


WHY = missing_tools()


class SuiteShape(unittest.TestCase):
    """Cheap, always run: the suite is what its manifest says."""

    def test_every_program_is_listed_and_holds_its_labs_files(self):
        suite, kit_labs = load_suite(), labs()
        listed = [h["id"] for h in suite["honest"]]
        self.assertEqual(sorted(p.name for p in SUITE_DIR.iterdir() if p.is_dir()), sorted(listed))
        self.assertEqual(len(set(listed) | {f["id"] for f in suite["fixture"]}), len(listed) + len(suite["fixture"]))
        self.assertGreaterEqual(len(listed), 20)
        for h in suite["honest"]:
            files = sorted(p.name for p in (SUITE_DIR / h["id"]).iterdir())
            self.assertEqual(files, sorted(kit_labs[h["lab"]].files), h["id"])

    def test_every_fixture_applies_to_its_base(self):
        suite = load_suite()
        by_id = {h["id"]: h for h in suite["honest"]}
        for fx in suite["fixture"]:
            self.assertEqual(by_id[fx["base"]]["lab"], fx["lab"], fx["id"])
            self.assertIn(fx["kind"], ("cheat", "bug"), fx["id"])
            base = {p.name: p.read_text(encoding="utf-8") for p in (SUITE_DIR / fx["base"]).iterdir()}
            self.assertNotEqual(fixture_files(fx), base, fx["id"])


@unittest.skipUnless(os.environ.get("CMLGRADE_HONEST") == "1",
                     "the honest suite is one heavy batch: run it with `ctest -R grader.honest` (CMLGRADE_HONEST=1)")
@unittest.skipIf(WHY, f"honest suite skipped: {WHY}")
class HonestSuite(unittest.TestCase):
    def test_honest_programs_full_marks_and_fixtures_lose_their_lines(self):
        suite = load_suite()
        only = set(filter(None, os.environ.get("CMLGRADE_HONEST_ONLY", "").split(",")))
        if only:   # a part of the suite (by hand: a new program, or a fixture and its base)
            suite = {k: [e for e in v if e["id"] in only] for k, v in suite.items()}
        kit_labs = labs()
        tmp = Path(tempfile.mkdtemp(prefix="cmlgrade-honest-"))
        self.addCleanup(shutil.rmtree, tmp, True)
        batch, out = tmp / "batch", tmp / "out"
        for h in suite["honest"]:
            shutil.copytree(SUITE_DIR / h["id"], batch / h["id"])
        for fx in suite["fixture"]:
            (batch / fx["id"]).mkdir(parents=True)
            for name, text in fixture_files(fx).items():
                (batch / fx["id"] / name).write_text(text, encoding="utf-8")
        work = Path(os.environ.get("CMLGRADE_HONEST_WORK") or tmp / "work")
        shutil.rmtree(work / "students", ignore_errors=True)
        shutil.rmtree(work / "results", ignore_errors=True)
        n = len(suite["honest"]) + len(suite["fixture"])
        jobs = os.environ.get("CMLGRADE_HONEST_JOBS", "2")
        gpu = os.environ.get("CMLGRADE_HONEST_GPU") == "1"
        print(f"\n[test_honest] grading {len(suite['honest'])} honest programs and {len(suite['fixture'])} "
              f"fixtures in one batch {'on the GPUs' if gpu else 'on the CPU path'} (bubblewrap, secret seed, "
              f"--jobs {jobs})", file=sys.stderr, flush=True)
        t0 = time.monotonic()
        # the CPU path, even on a GPU machine, unless CMLGRADE_HONEST_GPU=1
        env = dict(os.environ) if gpu else dict(os.environ, CUDA_VISIBLE_DEVICES="")
        # With a kept work folder, each lab graded is cached there as soon as it is done (the same bytes, kit,
        # rubric and seed are not graded again; a run cut short keeps what it finished).
        cache = ["--cache", str(work / "cache")] if os.environ.get("CMLGRADE_HONEST_WORK") else ["--no-cache"]
        # a part of the suite: only its labs are built and graded
        labs_of = [a for lab in sorted({e["lab"] for e in suite["honest"] + suite["fixture"]}) for a in ("--lab", lab)]
        r = subprocess.run([sys.executable, str(GRADER / "grade.py"), str(batch), "--batch", "--out", str(out),
                            *(labs_of if only else []),
                            "--work", str(work), "--keep-work", *cache, "--jobs", jobs, "--secret-seed", SECRET_SEED,
                            "--per-gpu", os.environ.get("CMLGRADE_HONEST_PER_GPU", "1"),
                            "--progress", "--timings", str(work / "timings.json")], env=env)   # kept with a kept work folder
        wall = time.monotonic() - t0
        self.assertEqual(r.returncode, 0, f"grade.py exited {r.returncode} (its messages are above)")
        print(f"[test_honest] {n} submissions graded in {wall:.0f} s", file=sys.stderr)

        def lab_score(sid: str, lab: str) -> dict:
            res = json.loads((out / "students" / sid / "result.json").read_text(encoding="utf-8"))
            return next(ls for ls in res["labs"] if ls["lab"] == lab)

        wrong = []
        for entry in suite["honest"] + suite["fixture"]:
            line, ok = verdict(entry, lab_score(entry["id"], entry["lab"]), kit_labs)
            print(line, file=sys.stderr)
            if not ok:
                wrong.append(line)
        self.assertEqual(wrong, [], "\n" + "\n".join(wrong))


def verdict(entry: dict, ls: dict, kit_labs: dict) -> tuple[str, bool]:
    """One program's line (with its lost lines and why) and whether the
    grade is right: an honest program (no `base`) is not refused and loses
    nothing measured; a fixture builds and loses each line its entry names
    (a cheat all their points, a bug some), with the reason."""
    lost = lost_lines(ls)
    if "base" not in entry:
        refused = [note for note in ls["notes"] if "refused" in note]
        # on a GPU a program's speed is measured, not its style: an honest program slower than the
        # reference loses performance points rightly (its lines are shown, not held against the grader)
        slower = [it for it in lost if it["name"].startswith("performance ")]
        lost = [it for it in lost if it not in slower]
        ok = not lost and not refused
        line = (f"honest {entry['id']} ({entry['lab']}): {ls['points']:g}/{ls['max_points']:g} measured points "
                f"(the reference earns all of them{', its speed aside' if slower else ''}) "
                f"{'OK' if ok else 'WRONG'}")
        line += "".join(f"\n    refused: {note[:400]}" for note in refused)
        line += "".join(f"\n    slower than the reference (timed, right to lose): {why_lost(it)}" for it in slower)
        return line + "".join(f"\n    lost {why_lost(it)}" for it in lost), ok
    measured = [it for it in ls["items"] if it["status"] not in ("not_measured", "excluded")]
    whole = entry["loses"] == ["lab"]
    hit = measured if whole else [it for it in measured if any(re.search(p, it["name"]) for p in entry["loses"])]
    said = "\n".join(ls["notes"] + [f for it in hit for f in it.get("feedback", []) + it.get("details", [])])
    problems = []
    # a fixture tests the grader's judgement, not the compiler: its lab must build
    unbuilt = [n for n in ls["notes"] if "does not compile" in n or "not built" in n]
    if unbuilt or ls.get("build_errors"):
        problems.append("did not build, so it tests nothing: " + (unbuilt + ls.get("build_errors", []))[0][:300])
    elif whole:
        floor = skeleton_points(kit_labs[entry["lab"]])
        if ls["points"] > floor:
            problems.append(f"scored {ls['points']:g}, more than the untouched skeleton's {floor:g}")
    else:
        for p in entry["loses"]:   # each line (or group of lines) the fixture names
            lines = [it for it in hit if re.search(p, it["name"])]
            paid = [it for it in lines if it["points"] > (0 if entry["kind"] == "cheat" else it["max_points"] - 1e-9)]
            if not lines or (entry["kind"] == "cheat" and paid) or (entry["kind"] == "bug" and len(paid) == len(lines)):
                problems.append(f"still paid ({p}): " + (", ".join(f"{it['name']} {it['points']:g}/{it['max_points']:g}"
                                                                     for it in paid) or "no such line measured"))
    if not problems and not re.search(entry["why"], said):
        problems.append(f"the reason ({entry['why']}) is not in its feedback")
    line = (f"fixture {entry['id']} ({entry['kind']}, {entry['lab']}): {ls['points']:g}/{ls['max_points']:g}; "
            f"{'; '.join(problems) or 'OK'}" + "".join(f"\n    lost {why_lost(it)}" for it in lost[:6]))
    return line, not problems


def from_cache(folder: Path) -> None:
    """The verdicts of what a run (cut short or still going) has finished:
    python3 test_honest.py --from-cache CMLGRADE_HONEST_WORK/cache"""
    suite, kit_labs = load_suite(), labs()
    by_id = {e["id"]: e for e in suite["honest"] + suite["fixture"]}
    for p in sorted(folder.rglob("*.json"), key=lambda q: q.stat().st_mtime):
        d = json.loads(p.read_text(encoding="utf-8"))
        if d.get("student") in by_id:
            print(verdict(by_id[d["student"]], d["score"], kit_labs)[0])


if __name__ == "__main__":
    if sys.argv[1:2] == ["--from-cache"]:
        from_cache(Path(sys.argv[2]))
    else:
        unittest.main()
