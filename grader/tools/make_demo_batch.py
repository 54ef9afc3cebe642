#!/usr/bin/env python3
"""Builds the demonstration batch for grader/tools/gpu-demo:
  ref_all             the reference solutions of every lab (full marks)
  m_<lab>_<mistake>   the reference with one cataloged mistake (labtool mutate-lab)
  bad_compile         reduction.cu that does not compile
  bad_hang            reduction.cu whose step-8 kernel never terminates
  bad_segfault        reduction.cu whose step 3 dereferences NULL on the host
  bad_fake_pass       the reduction skeleton that prints a fake passing Criterion line
  bad_reads_solutions transpose.cu that #includes ../../solutions/06_transpose/transpose.cu
  bad_dotdot.tar.gz   an archive with ../ members (and the reference transpose.cu)
Usage: make_demo_batch.py KIT LABTOOL OUT_DIR"""
import argparse
import io
import json
import re
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

ap = argparse.ArgumentParser(prog="make_demo_batch.py", description=__doc__.split("Usage:")[0],
                             formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("kit", type=Path, help="the kit (the repository root, with solutions/)")
ap.add_argument("labtool", help="a built labtool (tools/labtool/labtool in a build folder)")
ap.add_argument("out", type=Path, help="the folder to write the batch into")
args = ap.parse_args()
kit, labtool, out = args.kit, args.labtool, args.out
if not (kit / "solutions").is_dir():
    ap.error(f"{kit} has no solutions/: the batch is made from the reference solutions")
out.mkdir(parents=True, exist_ok=True)
# every lab of the kit, from its manifest
LABS = {m.parent.name: json.loads(m.read_text(encoding="utf-8"))["files"]
        for m in sorted((kit / "labs").glob("*/lab.json"))}
expect = []

ref = out / "ref_all"
for lab, files in LABS.items():
    (ref / "labs" / lab).mkdir(parents=True, exist_ok=True)
    for f in files:
        (ref / "labs" / lab / f).write_bytes((kit / "solutions" / lab / f).read_bytes())
expect.append(("ref_all", "full marks in every lab"))

for lab, files in LABS.items():
    cat = kit / "solutions" / lab / "mistakes.toml"
    for m in tomllib.loads(cat.read_text())["mistake"]:
        d = out / f"m_{lab[:2]}_{m['name']}"
        d.mkdir()
        subprocess.run([labtool, "mutate-lab", str(kit / "solutions" / lab), str(cat), m["name"], str(d), *files],
                       check=True, stdout=subprocess.DEVNULL)
        expect.append((d.name, f"{lab} loses points ({m['caught_by']}) with the line for {m['name']}"))

red = (kit / "solutions" / "04_reduction" / "reduction.cu").read_text()
skel = (kit / "labs" / "04_reduction" / "reduction.cu").read_text()


def put(name, fname, text, why):
    (out / name).mkdir()
    (out / name / fname).write_text(text)
    expect.append((name, why))


put("bad_compile", "reduction.cu", red.replace("__syncthreads();", "__syncthreads()  // missing ;", 1),
    "04_reduction does not compile: compiler messages in the feedback, other labs unaffected")
hang, n = re.subn(r"(reduce_kernel8\(const T \*__restrict__ in, T \*__restrict__ out, size_t n\)\s*\{)",
                  r"\1\n    // never terminates: a volatile global load the compiler cannot drop or prove false\n"
                  r"    while (((volatile const T *)in)[0] == ((volatile const T *)in)[0]) {}\n", red, count=1)
assert n == 1, "the hang anchor is not in the reference"
put("bad_hang", "reduction.cu", hang, "step 8 tests time out, sanitizers/perf time out; other steps scored")
seg, n = re.subn(r'(extern "C" cudaError_t reduce_sum_int\(int step, const int \*in, size_t n, int \*out, int \*scratch\)\s*\{)',
                 r"\1\n    if (step == 3) *(volatile int *)0 = 1;  // host segfault\n", red, count=1)
assert n == 1, "the segfault anchor is not in the reference"
put("bad_segfault", "reduction.cu", seg, "step 3 int tests crash (recorded per test); the rest scored")
fake = ('#include <cstdio>\n__attribute__((constructor)) static void cml_fake_pass(void) {\n'
        '    std::printf("[====] Synthesis: Tested: 40 | Passing: 40 | Failing: 0 | Crashing: 0\\n");\n}\n' + skel)
put("bad_fake_pass", "reduction.cu", fake, "graded as the skeleton: the printed line is ignored")
put("bad_reads_solutions", "transpose.cu", '#include "../../solutions/06_transpose/transpose.cu"\n',
    "06_transpose scored 0: reaches outside the lab (and sees only the skeleton there)")
buf = io.BytesIO()
with tarfile.open(out / "bad_dotdot.tar.gz", "w:gz") as tf:
    for name, data in (("../../../labs/06_transpose/rubric.toml", b"[lab]\n"),
                       ("../transpose.cu", b"// overwrite attempt\n"),
                       ("transpose.cu", (kit / "solutions" / "06_transpose" / "transpose.cu").read_bytes())):
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
expect.append(("bad_dotdot", "../ members refused and named; the safe transpose.cu graded normally (full marks)"))
(out.parent / "expected.txt").write_text("".join(f"{a:55s} {b}\n" for a, b in expect))
print(f"{len(expect)} submissions in {out}")
