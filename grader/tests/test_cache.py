"""Issue 16's throughput pieces, without nvcc or a GPU: the content-hash
cache (a rerun skips what was graded from the same bytes, and only that),
the reference timed once per GPU per batch with its drift check, the
prebuilt kit's slot bookkeeping, and the shards a Slurm array grades."""
import json
import os
import time
import unittest
from dataclasses import asdict
from pathlib import Path
from unittest import mock

from helpers import KIT, fake_build, labs, tmpdir

from cmlgrade.cache import ResultCache, labscore_from_dict, student_from_dict
from cmlgrade.intake import Submission
from cmlgrade.kitslots import Slot, _as_in_tree, _harvest, _scrub
from cmlgrade.pipeline import Options, Pipeline
from cmlgrade.refstore import RefStore
from cmlgrade.reftime import RefTimes
from cmlgrade.report import write_all
from cmlgrade.results import Item, LabRun, LabScore
from cmlgrade.run import Deadline
from cmlgrade.sandbox import Executor, ProcResult, Sandbox
from cmlgrade.stagebase import PUBLIC_SEED
from cmlgrade.score import score_lab
from cmlgrade.slurm import ShardError, merge_shards, parse_shard, shard_of, write_shard

LABS = labs(["01_shared_banks", "04_reduction"])
BANKS, RED = LABS["01_shared_banks"], LABS["04_reduction"]


def sample_score(points=3.5) -> LabScore:
    return LabScore("04_reduction", "Parallel reduction", True,
                    [Item("step 1 interleaved", "tests", 5.0, points, "partial", "visible", ["fb"], ["d"]),
                     Item("memcheck", "sanitizer", 2.0, 0.0, "not_measured", "visible")],
                    points, 7.0, ["a note"], ["reduction.cu:3: error: x"], ["step1::t"])


class ResultCacheTests(unittest.TestCase):
    def test_round_trip_and_what_the_key_depends_on(self):
        d = tmpdir(self)
        c = ResultCache(d, "ctx")
        files = {"reduction.cu": b"int x;\n"}
        self.assertIsNone(c.get("ann", RED, files))
        c.put("ann", RED, files, sample_score(), {"build": 1.5})
        got, secs = c.get("ann", RED, files)
        self.assertEqual(asdict(got), asdict(sample_score()))
        self.assertEqual(secs, {"build": 1.5})
        # one byte, another student, another lab, another context: not found
        self.assertIsNone(c.get("ann", RED, {"reduction.cu": b"int y;\n"}))
        self.assertIsNone(c.get("bob", RED, files))
        self.assertIsNone(ResultCache(d, "other kit or seed").get("ann", RED, files))
        # another rubric (an override): not found
        other = labs(["04_reduction"])["04_reduction"]
        other.rubric.lab.time_limit_s += 1
        self.assertIsNone(c.get("ann", other, files))

    def test_context_follows_kit_seed_and_machine(self):
        d = tmpdir(self)
        a = ResultCache.for_run(d, KIT, [1, None], ["no GPU"])
        self.assertEqual(a.context, ResultCache.for_run(d, KIT, [1, None], ["no GPU"]).context)
        self.assertNotEqual(a.context, ResultCache.for_run(d, KIT, [1, 42], ["no GPU"]).context)
        self.assertNotEqual(a.context, ResultCache.for_run(d, KIT, [1, None], ["NVIDIA H100"]).context)

    def test_student_result_from_its_json(self):
        lab = BANKS
        ls = score_lab(lab, LabRun(lab.name, submitted=False), LabRun(lab.name))
        from cmlgrade.results import StudentResult
        r = StudentResult("ann", "ann.zip", [ls, sample_score()], ["p"], ["x.txt"], 3.5, 9.0, "not sandboxed", "public")
        back = student_from_dict(json.loads(json.dumps(asdict(r))))
        self.assertEqual(asdict(back), asdict(r))
        self.assertEqual(asdict(labscore_from_dict(asdict(ls))), asdict(ls))


def fake_runner(calls):
    def fake(argv, cwd=None, env=None, timeout=None):
        fake_build(argv)
        calls.append(list(argv))
        return ProcResult(argv, 0, "", "", False, 0.01)
    return fake


class PipelineCacheTests(unittest.TestCase):
    """Two runs of the pipeline (fake commands): the second finds both labs
    of the unchanged student and grades only the changed one."""

    def grade(self, d, subs, calls):
        with mock.patch.dict(os.environ, {"CUDA_VISIBLE_DEVICES": ""}):
            p = Pipeline(Options(kit=KIT, work=d / "work", sandbox=False, jobs=2, cache=d / "cache"),
                         [BANKS, RED], runner=fake_runner(calls))
            p.prepare()
            return p, *p.grade(subs)

    def test_rerun_skips_what_is_unchanged_and_says_so(self):
        d = tmpdir(self)
        files = {BANKS.name: {"bank_model.c": b"int a;\n", "banks.cu": b"int b;\n"}, RED.name: {"reduction.cu": b"int c;\n"}}
        subs = [Submission("ann", "ann", files), Submission("bob", "bob", {RED.name: {"reduction.cu": b"int d;\n"}})]
        first = []
        p1, res1, err1 = self.grade(d, subs, first)
        self.assertEqual(err1, [])
        self.assertEqual(p1.cache.hits, 0)
        write_all(d / "out1", res1, [BANKS.name, RED.name])
        # bob changes his file; ann does not
        subs2 = [Submission("ann", "ann", files), Submission("bob", "bob", {RED.name: {"reduction.cu": b"int e;\n"}})]
        second = []
        said = []
        with mock.patch("cmlgrade.progress.Progress.note", lambda self, m: said.append(m)):
            p2, res2, err2 = self.grade(d, subs2, second)
        self.assertEqual(err2, [])
        self.assertEqual(p2.cache.hits, 2)
        self.assertEqual(sorted(p2.cached), [("ann", BANKS.name), ("ann", RED.name)])
        self.assertTrue(any("ann 04_reduction: already graded" in m for m in said), said)
        # nothing of ann's was built or run again; bob's lab was
        def built(calls):   # every target a build in a slot named (one build names all of a lab's)
            return [t for a in calls if a[:2] == ["cmake", "--build"] and a[3] == "--target" and "/slots/" in a[2]
                    for t in a[4:a.index("-j")]]
        self.assertEqual(built(first), BANKS.student_targets() + RED.student_targets() * 2)
        self.assertEqual(built(second), RED.student_targets())
        self.assertFalse(any("students/ann" in " ".join(a) for a in second))
        self.assertEqual(res2[0].timings[RED.name].get("cached"), 1.0)
        # a lab run graded now says when it began and ended after grading began (the benchmark's steady state)
        bob = res2[1].timings[RED.name]
        self.assertLessEqual(0.0, bob["began"])
        self.assertLessEqual(bob["began"], bob["ended"])
        write_all(d / "out2", res2, [BANKS.name, RED.name])
        for f in ("feedback.md", "result.json"):
            self.assertEqual((d / "out1/students/ann" / f).read_bytes(), (d / "out2/students/ann" / f).read_bytes())


class KeptReferenceRunsTests(unittest.TestCase):
    """A shared reference build keeps the reference's tests (traces,
    counters) of a lab: another run with the same kit, programs, rubric,
    seeds and machine reuses them and runs none of the reference's tests;
    anything else runs them again, and only a complete run is kept."""

    def setUp(self):
        self.d = tmpdir(self)
        self.ref_build = self.d / "ref"
        self.ref_build.mkdir()
        self.lab = labs(["01_shared_banks"])["01_shared_banks"]
        self.lab.cpu = True   # the CPU path: its test programs (no traces: no harness here)
        for n in self.lab.ref_targets():
            (self.ref_build / n).write_text(f"{n} as built\n")
        self.status = "PASSED"

    def pipeline(self, seed=None, model=None):
        """A pipeline as prepare() leaves it for the reference's runs; the
        test programs are fakes that write a report, counted in self.calls."""
        self.calls = []

        def fake(argv, cwd=None, env=None, timeout=None):
            argv = [str(a) for a in argv]
            self.calls.append(argv)
            report = next((a.split("=", 1)[1] for a in argv if a.startswith("--json=")), None)
            if report:
                Path(report).write_text(json.dumps({"test_suites": [
                    {"name": "step1", "tests": [{"name": "small", "status": self.status},
                                                {"name": "odd_size", "status": "PASSED"}]}]}))
            return ProcResult(argv, 0, "", "", False, 0.01)
        p = Pipeline(Options(kit=KIT, work=self.d / f"work{len(os.listdir(self.d))}", sandbox=False,
                             secret_seed=seed, reference_build=self.ref_build), [self.lab], runner=fake)
        p.work, p.ref_build, p.gpu_ok, p.cpu_path, p.no_gpu_reason = p.opts.work, self.ref_build, False, True, "CPU path"
        p.ref_store = RefStore.for_run(self.ref_build, KIT, [PUBLIC_SEED, seed], ["", "False", "True", "CPU path", ""])
        return p

    def reference(self, p, gpu=None):
        with mock.patch("cmlgrade.gpuhold.gpu_model", lambda g: None):
            run = p.reference(self.lab, gpu)
        ran = [a for a in self.calls if "_ref" in Path(a[0]).name]
        return run, ran

    def test_a_second_run_reuses_them_and_says_so(self):
        first, ran = self.reference(self.pipeline())
        self.assertEqual(len(ran), 2, "both test programs ran the first time")
        self.assertEqual(len(list((self.ref_build / "reference-runs").glob("*.pickle"))), 1)
        said = []
        p = self.pipeline()
        p.say = said.append
        again, ran = self.reference(p)
        self.assertEqual(ran, [], "nothing of the reference runs again")
        self.assertEqual(again.tests, first.tests)
        self.assertTrue(any("as an earlier run" in m and "reference-runs" in m for m in said), said)

    def test_what_runs_them_again(self):
        self.reference(self.pipeline())
        self.assertEqual(len(self.reference(self.pipeline(seed=42))[1]), 4, "another seed: public and hidden runs")
        prog = self.ref_build / self.lab.ref_targets()[0]
        prog.write_text("built again by another compiler\n")
        self.assertEqual(len(self.reference(self.pipeline())[1]), 2, "another program")
        self.assertEqual(self.reference(self.pipeline())[1], [], "kept again after that run")
        self.lab.rubric.lab.time_limit_s += 1
        self.assertEqual(len(self.reference(self.pipeline())[1]), 2, "another rubric (an override)")
        for f in (self.ref_build / "reference-runs").glob("*.pickle"):
            f.write_bytes(b"not a kept run")
        self.assertEqual(len(self.reference(self.pipeline())[1]), 2, "an unreadable entry")

    def test_only_a_complete_run_is_kept(self):
        self.status = "FAILED"
        self.reference(self.pipeline())
        self.assertEqual(len(self.reference(self.pipeline())[1]), 2, "a failed reference test is not kept")
        self.status = "PASSED"
        (self.ref_build / self.lab.ref_targets()[0]).unlink()
        self.reference(self.pipeline())
        self.assertEqual(len(self.reference(self.pipeline())[1]), 1, "a program that is not there is not kept")

    def test_complete_wants_the_traces_and_counters_a_student_is_compared_with(self):
        from cmlgrade.parsers import CounterReport, TestOutcome
        from cmlgrade.refstore import complete
        from cmlgrade.results import BinaryRun
        ok = TestOutcome("step1", "small", "PASSED")
        run = LabRun(self.lab.name, tests={"public": {"t": BinaryRun("t", True, {ok.key: ok})}})
        self.assertTrue(complete(run, False, []))
        self.assertFalse(complete(run, False, [4]), "a shared step not traced")
        run.traces[4] = object()
        self.assertTrue(complete(run, False, [4]))
        self.assertFalse(complete(run, True, [4]), "counters wanted, none read")
        run.counters = CounterReport(True, "", {2: 0.0}, {3: "no kernel"})
        self.assertFalse(complete(run, True, [4]), "a step's counter missing")
        run.counters.missing.clear()
        self.assertTrue(complete(run, True, [4]))
        run.tests["public"]["t"].problem = "timed out"
        self.assertFalse(complete(run, True, [4]))

    def test_nothing_kept_without_a_shared_build_or_a_known_gpu_model(self):
        p = self.pipeline()
        p.ref_store = None   # no --reference-build
        self.reference(p)
        self.assertFalse((self.ref_build / "reference-runs").exists())
        p = self.pipeline()
        p.gpu_ok, p.cpu_path = True, False
        self.reference(p, gpu="0")   # a GPU whose model cannot be told
        self.assertFalse((self.ref_build / "reference-runs").exists())


def runner_json(step, ms):
    return json.dumps({"lab": "x", "rows": [{"kind": "step", "step": step, "status": "ok", "correct": True,
                                             "median_ms": ms}]})


class RefTimesTests(unittest.TestCase):
    """The reference is timed `repeats` times once, then checked with one
    run per submission; a run outside the measured spread re-times it."""

    def setUp(self):
        self.ref_ms = [1.00, 1.02, 0.98, 1.01, 0.99, 1.00, 1.00]
        self.ref_calls = 0
        self.student_calls = 0

        def fake(argv, cwd=None, env=None, timeout=None):

            fake_build(argv)
            if "ref" in Path(argv[0]).name:
                ms = self.ref_ms[min(self.ref_calls, len(self.ref_ms) - 1)]
                self.ref_calls += 1
            else:
                ms = 2.0
                self.student_calls += 1
            return ProcResult(argv, 0, runner_json(3, ms), "", False, 0.01)
        self.exe = Executor(Sandbox(None, ""), fake)

    def perf(self, rt, d):
        return rt.perf(self.exe, self.exe, d / "red_run", d / "red_run_ref", 3, "--n 1000", 3, Deadline(100), 10,
                       d, {}, [], key=("0", "04_reduction"))

    def test_once_per_batch_then_one_check_run(self):
        d = tmpdir(self)
        rt = RefTimes()
        a = self.perf(rt, d)
        self.assertEqual(self.ref_calls, 3)
        self.assertEqual((a.student_ms, a.ref_ms), (2.0, 1.00))
        b = self.perf(rt, d)
        self.assertEqual(self.ref_calls, 4, "one drift check run for the second submission")
        self.assertEqual(b.ref_ms, a.ref_ms)
        self.assertEqual(self.student_calls, 6)

    def test_drift_re_times_the_reference(self):
        d = tmpdir(self)
        self.ref_ms = [1.00, 1.02, 0.98, 1.50, 1.49, 1.51, 1.50]   # the GPU slowed down after the first three
        rt = RefTimes()
        self.perf(rt, d)
        b = self.perf(rt, d)
        self.assertEqual(self.ref_calls, 7, "3 first, 1 check (1.50: outside 0.98..1.02 +-10%), 3 again")
        self.assertAlmostEqual(b.ref_ms, 1.50)
        self.assertEqual(rt.table[("0", "04_reduction", 3, "--n 1000")].retimed, 1)

    def test_wrong_student_answer_is_not_timed(self):
        d = tmpdir(self)

        def wrong(argv, cwd=None, env=None, timeout=None):
            row = json.loads(runner_json(3, 1.0))
            row["rows"][0]["correct"] = False
            return ProcResult(argv, 0, json.dumps(row), "", False, 0.01)
        rt = RefTimes()
        r = rt.perf(Executor(Sandbox(None, ""), wrong), self.exe, d / "s", d / "red_run_ref", 3, "", 3, Deadline(100),
                    10, d, {}, [], key=("0", "x"))
        self.assertFalse(r.correct)
        self.assertEqual(self.ref_calls, 0)


class SlotTests(unittest.TestCase):
    def test_scrub_removes_what_the_build_wrote_and_harvest_copies_it_with_tree_paths(self):
        d = tmpdir(self)
        slot = Slot(0, d / "slot")
        kit_obj = slot.build / "common/CMakeFiles/cml.dir/src/rng.c.o"
        stu_obj = slot.build / "CMakeFiles/reduction_kernels_student.dir/labs/04_reduction/reduction.cu.o"
        dep = Path(str(stu_obj) + ".d")
        for p in (kit_obj, stu_obj, dep, slot.build / "test_reduction"):
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(b"x")
        old = time.time() - 100
        os.utime(kit_obj, (old, old))
        since = time.time() - 1
        dep.write_text(f"{stu_obj}: {slot.src}/labs/04_reduction/reduction.cu {slot.build}/kit/include/x.h\n")
        tree = d / "students" / "ann"
        _harvest(slot, tree, since)
        got = tree / "build" / stu_obj.relative_to(slot.build)
        self.assertTrue(got.is_file())
        text = (tree / "build" / dep.relative_to(slot.build)).read_text()
        self.assertIn(f"{tree}/src/labs/04_reduction/reduction.cu", text)
        self.assertIn(f"{tree}/build/kit/include/x.h", text)
        self.assertNotIn(str(slot.root), text)
        self.assertFalse((tree / "build" / kit_obj.relative_to(slot.build)).exists(), "the kit's objects stay")
        _scrub(slot, ["test_reduction"], since, ["reduction.cu"])
        self.assertTrue(kit_obj.is_file())
        self.assertFalse(stu_obj.exists() or dep.exists() or (slot.build / "test_reduction").exists())
        self.assertEqual(_as_in_tree(f"{slot.src}/labs/a.cu:3: error", slot, tree), f"{tree}/src/labs/a.cu:3: error")

    def test_scrub_keeps_a_kit_object_the_build_wrote_again_and_nothing_of_the_students(self):
        """An object compiled from the kit's files alone (its depfile names
        none of the student's files), written by a student's build, stays:
        deleted, every later build would compile it again. Anything that
        may hold the student's code goes."""
        d = tmpdir(self)
        slot = Slot(0, d / "slot")
        objs = {"kit": "CMakeFiles/reduction_host.dir/common/labs/04_reduction/cub_anchor.cu.o",
                "student": "CMakeFiles/reduction_kernels_student.dir/labs/04_reduction/reduction.cu.o",
                "includes": "grader/CMakeFiles/reduction_harness.dir/harness.c.o",
                "no_depfile": "CMakeFiles/x.dir/common/other.cu.o",
                "device_link": "CMakeFiles/reduction_run.dir/cmake_device_link.o"}
        deps = {"kit": "/usr/local/cuda/include/cub/cub.cuh /s/common/include/cml/cml_check.h",
                "student": f"{slot.src}/labs/04_reduction/reduction.cu /s/labs/04_reduction/reduction.h",
                "includes": f"{slot.src}/common/labs/04_reduction/../../../labs/04_reduction/reduction.cu",
                "device_link": "/s/common/include/cml/cml_check.h"}
        for k, rel in objs.items():
            p = slot.build / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(b"obj")
            if k in deps:
                Path(str(p) + ".d").write_text(f"{p}: \\\n  {deps[k]}\n")
        translated = slot.build / "CMakeFiles/x.dir/reduction.cudafe1.cpp"
        translated.write_text("int x;\n")
        _scrub(slot, ["test_reduction"], time.time() - 10, ["reduction.cu"])
        left = {k for k, rel in objs.items() if (slot.build / rel).exists()}
        self.assertEqual(left, {"kit"})
        self.assertTrue(Path(str(slot.build / objs["kit"]) + ".d").exists(), "its depfile stays with it")
        self.assertFalse(Path(str(slot.build / objs["student"]) + ".d").exists())
        self.assertFalse(translated.exists())

    def test_the_slots_copy_of_the_kit_is_never_dated_in_the_future(self):
        """A kit file copied with a time ahead of this machine's clock would
        make Ninja compile its objects again in every student's build
        (reproduced here: lab 04 took 9.9 s a build against 2.6 s)."""
        from cmlgrade.kitslots import _date_now
        d = tmpdir(self)
        ahead, old = d / "common/labs/04_reduction/cub_anchor.cu", d / "common/old.c"
        for p in (ahead, old):
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text("x\n")
        day = 86400
        os.utime(ahead, (time.time() + day, time.time() + day))
        os.utime(old, (1000000000, 1000000000))
        _date_now(d)
        self.assertLessEqual(ahead.stat().st_mtime, time.time())
        self.assertEqual(old.stat().st_mtime, 1000000000, "a file dated in the past keeps its time")

    def test_stale_objects_names_the_kits_not_the_students(self):
        from cmlgrade.kitslots import stale_objects
        explain = "\n".join([
            "ninja explain: output /b/CMakeFiles/VerifyGlobs.cmake_force of phony edge with no inputs doesn't exist",
            "ninja explain: output CMakeFiles/r_kernels_student.dir/labs/04_reduction/reduction.cu.o older than "
            "most recent input /s/labs/04_reduction/reduction.cu (1 vs 2)",
            "ninja explain: output CMakeFiles/r_host.dir/common/labs/04_reduction/cub_anchor.cu.o older than most "
            "recent input /usr/local/cuda/include/cub/cub.cuh (1 vs 2)",
            "ninja explain: CMakeFiles/r_host.dir/common/labs/04_reduction/cub_anchor.cu.o is dirty",
            "ninja explain: output CMakeFiles/r_run.dir/cmake_device_link.o doesn't exist"])
        self.assertEqual(stale_objects(explain), [
            "output CMakeFiles/r_host.dir/common/labs/04_reduction/cub_anchor.cu.o older than most recent input "
            "/usr/local/cuda/include/cub/cub.cuh (1 vs 2)"])
        self.assertEqual(stale_objects("ninja: no work to do.\n"), [])

    def pool(self, count=2):
        from cmlgrade import kitslots
        stub = mock.patch.object(kitslots, "make_student_tree", lambda kit, root, files: (root / "src").mkdir())
        stub.start()
        self.addCleanup(stub.stop)
        return kitslots.SlotPool(count, tmpdir(self), KIT, {}, ["test_reduction", "reduction_run"], "90", 16, 60)

    def test_an_object_library_target_makes_no_binary_and_its_objects_reach_the_tree(self):
        """On the CPU path with nvcc, a lab's CUDA kernels are built as their
        object library (Lab.kernels_library) for the SASS checks: no binary
        is expected of it, and its objects are copied into the submission's
        tree, where the object checks read them. A binary target that made
        nothing is still a grader error."""
        pool = self.pool()
        lab = labs(["04_reduction"])["04_reduction"]
        lib = lab.kernels_library()
        self.assertEqual(lib, "reduction_kernels_student")

        class Exe:
            def run(self, argv, **kw):
                if argv[:2] == ["cmake", "--build"] and lib in argv:
                    obj = slot.build / f"CMakeFiles/{lib}.dir/labs/04_reduction/reduction.cu.o"
                    obj.parent.mkdir(parents=True, exist_ok=True)
                    obj.write_bytes(b"obj")
                    (slot.build / "test_reduction_cpu").write_bytes(b"bin")   # the runner makes nothing
                return ProcResult(list(argv), 0, "", "", False, 0.0)
        slot = pool.acquire(Exe())
        (slot.src / "labs" / "04_reduction").mkdir(parents=True)
        tree = tmpdir(self) / "students" / "ann"
        tb = pool.build_lab(Exe(), slot, "04_reduction", {"reduction.cu": b"x"},
                            ["test_reduction_cpu", "reduction_run_cpu", lib], tree, 60, (lib,))
        self.assertEqual({t: b.ok for t, b in tb.targets.items()},
                         {"test_reduction_cpu": True, "reduction_run_cpu": False, lib: True})
        self.assertEqual(tb.targets["reduction_run_cpu"].errors, ["grader error: the build made no reduction_run_cpu"])
        self.assertTrue((tree / "build" / f"CMakeFiles/{lib}.dir/labs/04_reduction/reduction.cu.o").is_file())
        self.assertTrue((tree / "build" / "test_reduction_cpu").is_file())
        # not named objects-only, the same target that made no binary is the grader error it always was
        pool.release(slot)
        self.assertIs(pool.acquire(Exe()), slot)
        tb = pool.build_lab(Exe(), slot, "04_reduction", {"reduction.cu": b"x"}, ["test_reduction_cpu", lib],
                            tmpdir(self) / "students" / "bob", 60)
        self.assertFalse(tb.targets[lib].ok)
        self.assertEqual(tb.targets[lib].errors, [f"grader error: the build made no {lib}"])

    def test_the_pristine_kit_is_built_one_slot_at_a_time_with_every_job(self):
        """Workers build slots one after the other (with all the grader's
        build jobs), not side by side with a few: the first is ready as soon
        as one build allows. A worker that waits takes a built slot released
        meanwhile rather than waiting for its own build. The builds are
        stand-ins that wait on events."""
        import threading
        pool = self.pool()
        started, finish = [threading.Event(), threading.Event()], [threading.Event(), threading.Event()]
        builds = []

        class Exe:
            def run(self, argv, **kw):
                if argv[:2] == ["cmake", "--build"]:
                    k = len(builds)
                    builds.append(argv)
                    started[k].set()
                    finish[k].wait(60)
                return ProcResult(list(argv), 0, "", "", False, 0.0)
        got = {}

        def worker(name):
            got[name] = pool.acquire(Exe())
        workers = {n: threading.Thread(target=worker, args=(n,)) for n in ("a", "b", "c")}
        workers["a"].start()
        self.assertTrue(started[0].wait(60))
        workers["b"].start()
        self.assertFalse(started[1].wait(0.5), "two slots' pristine builds ran at once")
        finish[0].set()
        workers["a"].join(60)
        self.assertTrue(got["a"].ready)
        self.assertTrue(started[1].wait(60), "the second slot was never built")   # b builds it now
        workers["c"].start()   # nothing free to take, a build under way: it waits ...
        pool.release(got["a"])   # ... and takes the built slot a lets go of, before b's build ends
        workers["c"].join(60)
        self.assertIs(got["c"], got["a"])
        self.assertFalse(finish[1].is_set())
        finish[1].set()
        workers["b"].join(60)
        self.assertTrue(got["b"].ready)
        self.assertIsNot(got["b"], got["a"])
        self.assertEqual([b[b.index("-j") + 1] for b in builds], ["16", "16"])

    def test_a_built_slot_is_handed_out_before_one_still_to_build(self):
        pool = self.pool(3)
        built = []

        class Exe:
            def run(self, argv, **kw):
                built.append(argv)
                return ProcResult(list(argv), 0, "", "", False, 0.0)
        a = pool.acquire(Exe())   # nothing built yet: this worker builds one
        self.assertTrue(a.ready)
        n = len(built)
        pool.release(a)
        self.assertIs(pool.acquire(Exe()), a)   # built and free: handed out again, nothing built
        self.assertEqual(len(built), n)
        b = pool.acquire(Exe())   # none built is free: another is built
        self.assertTrue(b.ready and b is not a)

    def _lab_build(self, outcome):
        """build_lab with stand-in builds: `outcome(targets)` gives a build's
        ProcResult fields (rc, output, timed out), a built target's binary
        is made. Returns the TreeBuild and the builds' target lists."""
        pool = self.pool(1)
        builds = []
        now = [lambda targets: (0, "", False)]   # the slot's own build, then the lab's

        class Exe:
            def run(self, argv, **kw):
                if argv[:2] == ["cmake", "--build"] and "--target" in argv:
                    targets = argv[argv.index("--target") + 1:argv.index("-j")]
                    builds.append(targets)
                    rc, out, late = now[0](targets)
                    if rc == 0:
                        for t in targets:
                            Path(argv[2]).mkdir(parents=True, exist_ok=True)
                            (Path(argv[2]) / t).write_text("built")
                    return ProcResult(list(argv), None if late else rc, out, "", late, 1.0)
                return ProcResult(list(argv), 0, "", "", False, 0.0)
        slot = pool.acquire(Exe())
        self.assertTrue(slot.ready)
        builds.clear()
        now[0] = outcome
        (slot.src / "labs" / "04_reduction").mkdir(parents=True)
        targets = ["test_reduction", "reduction_run", "reduction_harness"]
        tb = pool.build_lab(Exe(), slot, "04_reduction", {"reduction.cu": b"int x;"}, targets, tmpdir(self) / "t", 60)
        return tb, builds

    def test_a_labs_targets_build_in_one_build_each_failure_on_its_own(self):
        """One cmake --build for all of a lab's targets; where it fails, each
        target again on its own, so each failure has its own messages; a build
        that timed out is not tried again target by target."""
        tb, builds = self._lab_build(lambda targets: (0, "", False))
        self.assertEqual(builds, [["test_reduction", "reduction_run", "reduction_harness"]])
        self.assertTrue(all(b.ok for b in tb.targets.values()))
        self.assertEqual(list(tb.targets), ["test_reduction", "reduction_run", "reduction_harness"])
        self.assertAlmostEqual(tb.seconds, 1.0)

        def fails(targets):   # reduction_run.c does not compile, whatever else is built with it
            bad = "reduction_run" in targets
            return (2, "labs/04_reduction/run.c:3:1: error: expected ';'\n", False) if bad else (0, "", False)
        tb, builds = self._lab_build(fails)
        self.assertEqual(builds, [["test_reduction", "reduction_run", "reduction_harness"], ["test_reduction"],
                                  ["reduction_run"], ["reduction_harness"]])
        self.assertEqual({t: b.ok for t, b in tb.targets.items()},
                         {"test_reduction": True, "reduction_run": False, "reduction_harness": True})
        self.assertTrue(any("expected ';'" in e for e in tb.targets["reduction_run"].errors))
        self.assertAlmostEqual(tb.seconds, 4.0)

        tb, builds = self._lab_build(lambda targets: (None, "", True))
        self.assertEqual(len(builds), 1)
        self.assertTrue(all(not b.ok and b.timed_out and "timed out after 60 s" in b.errors[0]
                            for b in tb.targets.values()))


class ShardTests(unittest.TestCase):
    def test_shards_partition_the_class(self):
        subs = [Submission(f"s{i:02d}", "", {}) for i in (5, 3, 9, 1, 7, 2, 8)]
        parts = [shard_of(subs, i, 3) for i in range(3)]
        ids = sorted(s.student for p in parts for s in p)
        self.assertEqual(ids, sorted(s.student for s in subs))
        self.assertEqual([s.student for s in parts[0]], ["s01", "s05", "s09"])
        self.assertEqual(parse_shard("2/3"), (2, 3))
        for bad in ("3/3", "-1/3", "1", "a/b", "0/0"):
            with self.assertRaises(ShardError):
                parse_shard(bad)

    def test_merged_shards_write_the_same_bytes_as_one_run(self):
        d = tmpdir(self)
        from cmlgrade.results import StudentResult
        results = []
        for i, pts in enumerate((1.0, 2.5, 3.5, 0.0)):
            ls = sample_score(pts)
            results.append(StudentResult(f"s{i}", f"s{i}.zip", [ls], [], [], pts, 7.0, "not sandboxed", "public",
                                         missing=(i == 3)))
        write_all(d / "one", results, ["04_reduction"], "", "a run note")
        for i in range(2):
            out = d / "shards" / str(i)
            out.mkdir(parents=True)
            write_shard(out, (i, 2), [r for k, r in enumerate(results) if k % 2 == i], ["04_reduction"], "",
                        "a run note", [])
        merge_shards([d / "shards" / str(i) / "shard.json" for i in range(2)], d / "merged")
        one = sorted(p.relative_to(d / "one") for p in (d / "one").rglob("*") if p.is_file())
        merged = sorted(p.relative_to(d / "merged") for p in (d / "merged").rglob("*") if p.is_file())
        self.assertEqual(one, merged)
        for p in one:
            self.assertEqual((d / "one" / p).read_bytes(), (d / "merged" / p).read_bytes(), p)
        with self.assertRaisesRegex(ShardError, "shards 1 of 2 are missing"):
            merge_shards([d / "shards" / "0" / "shard.json"], d / "x")


if __name__ == "__main__":
    unittest.main()
