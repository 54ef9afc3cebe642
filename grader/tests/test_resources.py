"""[[static]] checks on the resources of the kernels a step launches (issue
27, lab 08): max_registers, no_local_memory / local_memory = "required",
read from the compiled object (cuobjdump -res-usage, and LDL/STL in the
SASS). A forger who launches a tiny kernel in a step that must spill loses
the check; an honest style (Horner's rule, no table) keeps a check that asks
for no spill; without a CUDA build every such check is "not checked",
never passed. The compiled tests build tests/fixtures/static/resources.cu
with nvcc (skipped without nvcc and cuobjdump)."""
import shutil
import subprocess
import tempfile
import tomllib
import unittest
from pathlib import Path

import helpers  # noqa: F401  (import path)
from helpers import FIXTURES

from cmlgrade import objcheck
from cmlgrade.objread import Resources, parse_resources
from cmlgrade.rubric import RubricError, build_rubric
from cmlgrade.static import NO_TRACE, run_sass_checks

FILES = ["spill.cu"]

RUBRIC = """
[[static]]
name = "step2_spills_under_the_cap"
steps = [2]
max_registers = 32
local_memory = "required"
points = 1

[[static]]
name = "step3_no_spill"
steps = [3]
max_registers = 64
no_local_memory = true
points = 1

[[static]]
name = "step3_fma_and_no_spill"
steps = [3]
require = ['\\bFFMA']
no_local_memory = true
points = 1
"""


def rubric(text=RUBRIC):
    return build_rubric(tomllib.loads(text), "x.toml", FILES).static


class ParseTests(unittest.TestCase):
    TEXT = """
Fatbin elf code:
================
arch = sm_90
Resource usage:
 Common:
  GLOBAL:0
 Function _Z5tinyPf:
  REG:8 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:360 TEXTURE:0 SURFACE:0 SAMPLER:0
 Function _Z12table_spillsPKfPfiS0_:
  REG:32 STACK:16 SHARED:0 LOCAL:0 CONSTANT[0]:380 TEXTURE:0 SURFACE:0 SAMPLER:0

Fatbin elf code:
================
arch = sm_100
Resource usage:
 Function _Z12table_spillsPKfPfiS0_:
  REG:30 STACK:24 SHARED:0 LOCAL:4 CONSTANT[0]:380 TEXTURE:0 SURFACE:0 SAMPLER:0
"""

    def test_each_function_gets_its_largest_use_over_the_architectures(self):
        r = parse_resources(self.TEXT)
        self.assertEqual(r["_Z5tinyPf"], Resources(8, 0, 0))
        self.assertEqual(r["_Z12table_spillsPKfPfiS0_"], Resources(32, 24, 4))
        self.assertEqual(r["_Z12table_spillsPKfPfiS0_"].local_bytes, 28)
        self.assertNotIn("GLOBAL", r)


class RubricTests(unittest.TestCase):
    def test_the_keys_are_read(self):
        r = {c.name: c for c in rubric()}
        self.assertEqual((r["step2_spills_under_the_cap"].max_registers,
                          r["step2_spills_under_the_cap"].local_memory), (32, "required"))
        self.assertEqual((r["step3_no_spill"].max_registers, r["step3_no_spill"].local_memory), (64, "none"))
        self.assertEqual(r["step3_no_spill"].patterns, [])
        self.assertEqual(r["step3_fma_and_no_spill"].patterns, [r"\bFFMA"])

    def test_malformed_values_are_refused_naming_the_key(self):
        bad = [('steps = [2]\nmax_registers = 0', "max_registers"),
               ('steps = [2]\nmax_registers = "32"', "max_registers"),
               ('steps = [2]\nlocal_memory = "some"', "local_memory"),
               ('steps = [2]\nno_local_memory = false', "no_local_memory"),
               ('steps = [2]\nno_local_memory = true\nlocal_memory = "required"', "contradict"),
               ('max_registers = 32', "kernels of steps"),
               ('sass_kernel = "k"\nno_local_memory = true', "kernels of steps"),
               ('steps = [2]', "exactly one of require")]
        for body, what in bad:
            with self.assertRaises(RubricError, msg=body) as cm:
                rubric(f'[[static]]\nname = "x"\n{body}\n')
            self.assertIn(what, str(cm.exception), body)


class WithoutObjectTests(unittest.TestCase):
    SASS = {"_Z5tinyPf": "        /*0000*/                   EXIT ;"}

    def test_without_a_cuda_build_they_are_not_checked(self):
        r = run_sass_checks(rubric(), {}, "not checked (no CUDA build: the CPU path)", {2: ["tiny"], 3: ["tiny"]}, {})
        self.assertTrue(r and all(not x.ok and not x.measured for x in r), r)
        self.assertIn("no CUDA build", r[0].detail)

    def test_without_resource_usage_they_are_not_checked(self):
        r = run_sass_checks(rubric(), self.SASS, "", {2: ["tiny"], 3: ["tiny"]}, {})
        self.assertTrue(all(not x.ok and not x.measured for x in r), r)
        self.assertIn("resource usage was not read", r[0].detail)

    def test_not_traced_is_not_measured_and_wrong_answers_count(self):
        res = {"_Z5tinyPf": Resources(8, 0, 0)}
        r = run_sass_checks(rubric(), self.SASS, "", {}, res)
        self.assertTrue(all(x.detail == NO_TRACE and not x.measured for x in r), r)
        r = {x.name: x for x in run_sass_checks(rubric(), self.SASS, "", {2: None, 3: None}, res)}
        self.assertFalse(r["step2_spills_under_the_cap"].ok)
        self.assertTrue(r["step2_spills_under_the_cap"].measured)


@unittest.skipUnless(shutil.which("nvcc") and objcheck.find_cuobjdump(), "needs nvcc and cuobjdump")
class CompiledTests(unittest.TestCase):
    """resources.cu, compiled for sm_90 with -maxrregcount=32."""

    @classmethod
    def setUpClass(cls):
        cls.dir = Path(tempfile.mkdtemp(prefix="cmlgrade-resources-"))
        obj = cls.dir / "resources.o"
        r = subprocess.run(["nvcc", "-c", "-arch=sm_90", "-maxrregcount=32", str(FIXTURES / "static" / "resources.cu"),
                            "-o", str(obj)], capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError(r.stderr)
        cu = objcheck.find_cuobjdump()
        cls.sass = objcheck.read_sass(cu, obj)
        cls.res = objcheck.read_resources(cu, obj)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def checks(self, launched):
        return {x.name: x for x in run_sass_checks(rubric(), self.sass, "", launched, self.res)}

    def test_the_object_is_read_as_ptxas_made_it(self):
        spill = next(r for k, r in self.res.items() if "table_spills" in k)
        bounded = next(r for k, r in self.res.items() if "table_bounded" in k)
        self.assertLessEqual(spill.regs, 32)
        self.assertGreater(spill.local_bytes, 0)
        self.assertEqual(bounded.local_bytes, 0)   # __launch_bounds__(256, 4) overrides the cap: 64 registers
        self.assertGreater(bounded.regs, 32)

    def test_the_reference_shape_keeps_every_point(self):
        r = self.checks({2: ["table_spills"], 3: ["table_bounded"]})
        self.assertTrue(all(x.ok and x.measured for x in r.values()), r)
        self.assertIn("registers", r["step2_spills_under_the_cap"].detail)

    def test_an_honest_horner_step_keeps_its_no_spill_points(self):
        r = self.checks({2: ["table_spills"], 3: ["horner"]})
        self.assertTrue(r["step3_no_spill"].ok, r["step3_no_spill"])
        self.assertTrue(r["step3_fma_and_no_spill"].ok, r["step3_fma_and_no_spill"])

    def test_a_tiny_kernel_launched_instead_of_the_spilling_one_loses_the_check(self):
        r = self.checks({2: ["tiny"], 3: ["table_bounded"]})
        self.assertFalse(r["step2_spills_under_the_cap"].ok)
        self.assertIn("use no local memory", r["step2_spills_under_the_cap"].detail)
        # beside the real one it changes nothing: the step's kernels together show the spill
        r = self.checks({2: ["table_spills", "tiny"], 3: ["table_bounded"]})
        self.assertTrue(r["step2_spills_under_the_cap"].ok, r["step2_spills_under_the_cap"])

    def test_the_spilling_kernel_in_the_no_spill_step_is_named(self):
        r = self.checks({2: ["table_spills"], 3: ["table_spills"]})
        self.assertFalse(r["step3_no_spill"].ok)
        self.assertIn("uses local memory", r["step3_no_spill"].detail)
        self.assertIn("table_spills", r["step3_no_spill"].detail)

    def test_a_step_over_its_register_limit_is_named(self):
        chk = rubric('[[static]]\nname = "few"\nsteps = [3]\nmax_registers = 40\n')
        r = run_sass_checks(chk, self.sass, "", {3: ["table_bounded"]}, self.res)[0]
        self.assertFalse(r.ok)
        self.assertIn("more than 40", r.detail)


if __name__ == "__main__":
    unittest.main()
