"""Static and technique checks on what a step launched (issue 22): a step's
kernels are found by the grader's trace of the launches, whatever their
names, and mapped to the CUDA build's SASS; a tiled step's shared-memory
loads are compared with the reference's; a global-memory step must not read
the __constant__ copy. Honest variants keep every point, forgeries lose
their step. The SASS tests compile tests/fixtures/static/kernels.cu with
nvcc (skipped without nvcc and cuobjdump)."""
import math
import shutil
import subprocess
import unittest
from pathlib import Path

import helpers  # noqa: F401  (import path)
from helpers import FIXTURES, labs, tmpdir

from cmlgrade import checker, objcheck
from cmlgrade.checker import KernelUse, StepTrace, StepVerdict
from cmlgrade.objcheck import ObjectReport
from cmlgrade.results import LabRun
from cmlgrade.run import Deadline
from cmlgrade.sandbox import Executor, Sandbox
from cmlgrade.static import NO_TRACE, kernel_key, run_sass_checks, step_kernels
from cmlgrade.trust import _technique

LABS = labs()
SEED = 4242


def fake_harness(testcase, launches: list[tuple[str, int, int]]) -> Path:
    """A harness that makes no launch itself but writes the CPU runtime's
    launch lines (kernel, shared load and store requests) where the grader's
    trace reads them: what a student's harness on the CPU path would log."""
    p = tmpdir(testcase) / "harness"
    lines = "".join(f"launch {k} ld requests={ld} st requests={st} (no bank model: conflicts unknown)\\n"
                    for k, ld, st in launches)
    p.write_text("#!/usr/bin/env python3\nimport os\n"
                 f"open(os.environ['CML_CPU_BANKS_LOG'], 'a').write('{lines}')\n")
    p.chmod(0o755)
    return p


def technique(testcase, lab, step: int, launches, sass=None, ref=None) -> tuple[StepVerdict, LabRun]:
    """_technique on one step whose answers were right, with a harness that
    logs `launches`; returns the step's verdict after it."""
    run = LabRun(lab.name)
    v = StepVerdict(True, total=4)
    run.checks = {"public": {step: v}, "hidden": {step: StepVerdict(True, total=4)}}
    if sass is not None:
        run.objects = ObjectReport(checked=True, sass=sass)
    _technique(Executor(Sandbox(None, "")), lab, run, fake_harness(testcase, launches), SEED, tmpdir(testcase), 30,
               Deadline(600), {}, [], True, ref)
    return v, run


class KernelNameTests(unittest.TestCase):
    """The trace's names against the SASS's mangled names."""

    SASS = {"_Z4convI15constant_filterLi3EEvPKfPfiiT_": "a", "_Z4convI13global_filterLi3EEvPKfPfiiT_": "b",
            "_ZN37_GLOBAL__N__00000000_10_kernels_cu_abc10swizzle_itEPKfPfii": "c",
            "_Z17my_tile_transposeILi1EEvPKfPfii": "d", "_Z17my_tile_transposeILi0EEvPKfPfii": "e",
            "_Z9edge_copyPKfPfii": "f"}
    NAMES = {m: n for m, n in (
        ("_Z4convI15constant_filterLi3EEvPKfPfiiT_",
         "void conv<constant_filter, 3>(float const*, float*, int, int, constant_filter)"),
        ("_Z4convI13global_filterLi3EEvPKfPfiiT_",
         "void conv<global_filter, 3>(float const*, float*, int, int, global_filter)"),
        ("_ZN37_GLOBAL__N__00000000_10_kernels_cu_abc10swizzle_itEPKfPfii",
         "(anonymous namespace)::swizzle_it(float const*, float*, int, int)"),
        ("_Z17my_tile_transposeILi1EEvPKfPfii", "void my_tile_transpose<1>(float const*, float*, int, int)"),
        ("_Z17my_tile_transposeILi0EEvPKfPfii", "void my_tile_transpose<0>(float const*, float*, int, int)"),
        ("_Z9edge_copyPKfPfii", "edge_copy(float const*, float*, int, int)"))}

    def test_the_cpu_runtimes_names_find_their_instantiation(self):
        self.assertEqual(kernel_key(self.NAMES["_Z4convI15constant_filterLi3EEvPKfPfiiT_"]),
                         "conv<constant_filter,3>")
        got, missing = step_kernels(["conv<constant_filter,3>"], self.SASS, self.NAMES)
        self.assertEqual((got, missing), (["_Z4convI15constant_filterLi3EEvPKfPfiiT_"], []))
        got, _ = step_kernels(["my_tile_transpose<1>", "edge_copy"], self.SASS, self.NAMES)
        self.assertEqual(got, ["_Z17my_tile_transposeILi1EEvPKfPfii", "_Z9edge_copyPKfPfii"])
        # ncu's mangled names are the SASS's own
        self.assertEqual(step_kernels(["_Z9edge_copyPKfPfii"], self.SASS, self.NAMES)[0], ["_Z9edge_copyPKfPfii"])

    def test_a_kernel_named_by_its_launch_text_is_found_by_its_name(self):
        # the runtime names a kernel in an anonymous namespace by its launch's text
        got, missing = step_kernels(["swizzle_it"], self.SASS, self.NAMES)
        self.assertEqual((got, missing), (["_ZN37_GLOBAL__N__00000000_10_kernels_cu_abc10swizzle_itEPKfPfii"], []))
        got, _ = step_kernels(["my_tile_transpose"], self.SASS, self.NAMES)
        self.assertEqual(len(got), 2)
        self.assertEqual(step_kernels(["not_compiled<2>"], self.SASS, self.NAMES), ([], ["not_compiled<2>"]))

    def test_template_scope_takes_the_other_instantiations(self):
        got, _ = step_kernels(["my_tile_transpose<0>"], self.SASS, self.NAMES, template=True)
        self.assertEqual(sorted(got), ["_Z17my_tile_transposeILi0EEvPKfPfii", "_Z17my_tile_transposeILi1EEvPKfPfii"])

    def test_a_step_with_wrong_answers_earns_nothing_and_counts(self):
        lab = LABS["06_transpose"]
        r = {x.name: x for x in run_sass_checks(lab.rubric.static, self.SASS, "", {6: None})}
        self.assertTrue(r["step6_kernel_uses_the_tile"].measured)
        self.assertFalse(r["step6_kernel_uses_the_tile"].ok)
        self.assertFalse(r["tile_steps_go_through_shared_memory"].ok)

    def test_a_step_not_traced_is_not_measured(self):
        lab = LABS["06_transpose"]
        r = run_sass_checks(lab.rubric.static, self.SASS, "", {})
        self.assertTrue(r and all(not x.measured and x.detail == NO_TRACE for x in r), r)


@unittest.skipUnless(shutil.which("nvcc") and objcheck.find_cuobjdump(), "needs nvcc and cuobjdump")
class CompiledKernelTests(unittest.TestCase):
    """tests/fixtures/static/kernels.cu, compiled for sm_90."""

    @classmethod
    def setUpClass(cls):
        cls.dir = Path(__import__("tempfile").mkdtemp(prefix="cmlgrade-static-"))
        obj = cls.dir / "kernels.o"
        r = subprocess.run(["nvcc", "-c", "-arch=sm_90", str(FIXTURES / "static" / "kernels.cu"), "-o", str(obj)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError(r.stderr)
        cls.sass = objcheck.read_sass(objcheck.find_cuobjdump(), obj)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def checks(self, lab, launched):
        return {x.name: x for x in run_sass_checks(LABS[lab].rubric.static, self.sass, "", launched)}

    def test_a_convolution_with_its_template_parameters_in_another_order_keeps_its_points(self):
        r = self.checks("02_constant_memory", {6: ["conv<constant_filter,3>"], 7: ["conv<global_filter,3>"],
                                               8: ["conv<global_filter,3>"]})
        for name in ("step6_filter_read_from_constant_memory", "convolution_goes_through_shared_memory"):
            self.assertTrue(r[name].ok and r[name].measured, r[name])

    def test_transpose_kernels_named_their_own_way_keep_their_points(self):
        # a template, an anonymous namespace (named by its launch text), a step with a second, plain kernel
        r = self.checks("06_transpose", {3: ["my_tile_transpose<0>"], 4: ["my_tile_transpose<1>"], 5: ["swizzle_it"],
                                         6: ["my_tile_transpose<1>", "edge_copy"]})
        self.assertTrue(all(x.ok and x.measured for x in r.values()), r)

    def test_a_bounce_through_shared_memory_has_shared_instructions_but_no_tile(self):
        # the SASS check alone cannot tell (LDS and STS are there): the technique's counts do (ShareTests)
        r = self.checks("06_transpose", {3: ["naive_with_a_bounce"]})
        self.assertTrue(r["tile_steps_go_through_shared_memory"].ok)
        r = self.checks("06_transpose", {3: ["edge_copy"]})
        self.assertFalse(r["tile_steps_go_through_shared_memory"].ok)
        self.assertIn("step 3's kernels (edge_copy", r["tile_steps_go_through_shared_memory"].detail)

    def test_a_walk_step_reading_sums_from_global_memory_loses_its_step(self):
        # lab 02's steps 1, 2 and 5 read constant memory only: sums an upload made and left in global
        # memory are a global load, whatever constant read sits beside them
        lab = LABS["02_constant_memory"]
        for step in (1, 2, 5):
            v, _ = technique(self, lab, step, [("walk_in_constant_memory", 0, 0)], self.sass)
            self.assertIs(v.ok, True, (step, v))
            v, _ = technique(self, lab, step, [("walk_from_upload_sums", 0, 0)], self.sass)
            self.assertIs(v.ok, False, step)
            self.assertIn(f"step {step} reads its table from __constant__ memory only", v.messages[0])

    def test_a_template_named_for_all_its_instantiations_keeps_its_steps(self):
        # the CPU path names a launch of a template in an anonymous namespace by its text (walk_by<Source>):
        # every instantiation is the step's, and a forbid rule fails only where all of them break it
        lab = LABS["02_constant_memory"]
        for step in (2, 3):
            v, _ = technique(self, lab, step, [("walk_by<Source>", 0, 0)], self.sass)
            self.assertIs(v.ok, True, (step, v))
        # named exactly (ncu's mangled names), the wrong instantiation loses the step
        wrong = next(m for m in self.sass if "walk_by" in m and "FromGlobal" in m)
        v, _ = technique(self, lab, 2, [(wrong, 0, 0)], self.sass)
        self.assertIs(v.ok, False)

    def test_without_sass_the_global_rule_is_not_checked(self):
        lab = LABS["02_constant_memory"]
        v, run = technique(self, lab, 3, [("walk_reads_the_constant_copy", 0, 0)], {})
        self.assertIs(v.ok, True)


class ShareTests(unittest.TestCase):
    """A tiled step's shared loads against the reference's on the same
    cases (lab 03: every step runs the same cases)."""

    def setUp(self):
        self.lab = LABS["03_tiled_matmul"]
        cases = checker.trace_cases(self.lab.name, SEED, True, 3)
        # (M, N, K) of each traced case: a tile reads 2K words for 32 outputs; step 6's 8 x 8 blocks K / 4
        shapes = [(c.a, c.b, c.kind) for c in cases]
        self.outputs = sum(math.ceil(m * n / 32) for m, n, _ in shapes)
        tile = sum(2 * k * math.ceil(m * n / 32) for m, n, k in shapes)
        ref = LabRun(self.lab.name)
        ref.traces = {s: StepTrace({"ref": KernelUse(2, tile if s < 6 else tile / 8, self.outputs)}, 2)
                      for s in self.lab.rubric.technique.shared_steps}
        self.ref, self.floor = ref, tile / 8

    def test_more_reuse_than_the_reference_keeps_the_step(self):
        # 16 x 8 outputs a thread, 32 x 32 blocks: about 0.4 of the reference's fewest loads
        v, _ = technique(self, self.lab, 3, [("mm<8,16>", int(0.4 * self.floor), self.outputs)], ref=self.ref)
        self.assertIs(v.ok, True, v)

    def test_no_shared_memory_at_all_says_so(self):
        v, _ = technique(self, self.lab, 3, [("naive", 0, 0)], ref=self.ref)
        self.assertIs(v.ok, False)
        self.assertIn("must stage its data in shared memory", v.messages[0])

    def test_without_the_references_counts_only_none_is_refused(self):
        v, run = technique(self, self.lab, 3, [("naive_bounce", self.outputs, self.outputs)])
        self.assertIs(v.ok, True)
        self.assertIn("only more than none", run.technique[3])

    def test_a_reduction_with_few_blocks_keeps_its_step(self):
        lab = LABS["04_reduction"]
        self.assertEqual(lab.rubric.technique.min_share, 0)
        v, _ = technique(self, lab, 7, [("reduce_few_blocks<64>", 3, 3)], ref=self.ref)
        self.assertIs(v.ok, True)


if __name__ == "__main__":
    unittest.main()
