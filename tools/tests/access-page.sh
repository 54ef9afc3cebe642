#!/usr/bin/env bash
# cmake/access_page.cmake (tools/gpu-verify access) on stand-in runners,
# no GPU: two labs' comparisons as configure writes them
# (<build>/kit/access/<lab>.cmake). A lab the manifest holds to the GPU
# that agrees and one not held that differs: the page holds both sections
# (the second's "differs" reported) and the script succeeds; once the held
# lab differs too, the script fails after writing the page.
set -u
kit="$1" tool="$2"
work=$(mktemp -d "${TMPDIR:-/tmp}/cml-access-XXXXXX")
trap 'rm -rf "$work"' EXIT
runner() {  # runner FILE LAB ST_SECTORS LD_CONFLICTS (FAKE_ST, when set, replaces 98_held's CPU stores)
  cat > "$1" <<R
#!/bin/sh
[ "\$1" = --probe ] && exit 0
sectors=$3
cat <<J
{"lab": "$2", "emulated": false, "metrics": [],
 "steps": [
  {"step": 1, "ident": "tile", "available": true, "reason": ""}],
 "launches": [
  {"step": 1, "ident": "tile", "kernel": "tile_kernel<32>", "ld_requests": 10, "ld_sectors": 40, "st_requests": 10, "st_sectors": \$sectors, "ld_bank_conflicts": $4, "st_bank_conflicts": 0}],
 "lines": []}
J
R
  chmod +x "$1"
}
mkdir -p "$work/build/kit/access"
runner "$work/held_gpu" 98_held 40 84
runner "$work/held_cpu" 98_held '${FAKE_ST:-40}' 0
runner "$work/free_gpu" 99_free 320 0
runner "$work/free_cpu" 99_free 40 0
for lab in held free; do
  n=98; agrees=1; [ $lab = free ] && { n=99; agrees=0; }
  cat > "$work/build/kit/access/${n}_$lab.cmake" <<S
set(ACCESS_LAB [==[${n}_$lab]==])
set(ACCESS_TOOL [==[$tool]==])
set(ACCESS_GPU_RUNNER [==[$work/${lab}_gpu]==])
set(ACCESS_CPU_RUNNER [==[$work/${lab}_cpu]==])
set(ACCESS_SIZES [==[--n 9]==])
set(ACCESS_BOUNDS [==[]==])
set(ACCESS_AGREES $agrees)
set(ACCESS_NCU [==[]==])
S
done
page() {
  rm -rf "$work/out"
  cmake -DBUILD_DIR="$work/build" -DOUT="$work/out" -DGPU_DIR=fake-gpu -DGPU_NAME="Fake GPU" -DDRIVER=1.0 \
    -DNCU_VERSION="Version 0.0" -P "$kit/cmake/access_page.cmake" > "$work/log" 2>&1
}
fail=0
expect() {  # expect TEXT: in the page
  if grep -qF -- "$1" "$work/out/docs/results/fake-gpu/access.md"; then echo "ok: the page has '$1'"
  else echo "FAIL: the page lacks '$1'"; fail=1; fi
}
if page; then echo "ok: the page is written, 99_free's difference reported, not failed"
else echo "FAIL: access_page.cmake failed:"; cat "$work/log"; fail=1; fi
expect "# Memory access on Fake GPU: the CPU path against Nsight Compute"
expect "driver 1.0, Nsight Compute Version 0.0"
expect "- [98_held](#98_held)"
expect "The test \`98_held.reference.sectors_agree\` holds this lab to that agreement."
expect "| 1 | tile | \`tile_kernel\` | ld | 4.0000 | 4.0000 | 10 / 10 | the same | 84 / 0 |"
expect "No test holds this lab to that agreement"
expect "| 1 | tile | \`tile_kernel\` | st | 32.0000 | 4.0000 | 10 / 10 | differs (-87.50%) | 0 / 0 |"
first=$(head -n 1 "$work/out/docs/results/fake-gpu/access.md")
case "$first" in "# Memory access on "*": the CPU path against Nsight Compute") ;; # cmake/kit_docs.cmake's form
  *) echo "FAIL: the title '$first' is not the one cmake/kit_docs.cmake links"; fail=1 ;; esac
if FAKE_ST=80 page; then echo "FAIL: a held lab that differs must fail the page's script"; fail=1
else
  grep -q "measured: 98_held (exit 1)" "$work/log" &&
    echo "ok: a held lab that differs fails the script, naming it" || { echo "FAIL: no message:"; cat "$work/log"; fail=1; }
  expect "**Differ**"
fi
exit $fail
