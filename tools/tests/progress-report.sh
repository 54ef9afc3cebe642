#!/usr/bin/env bash
# cmake/student_progress.cmake's report, on a stand-in test program (no
# build): a failing step shows its own first message in full, brackets and
# later lines included ("[1, 2)" once ran every later message into step 8's
# line), the first failing test by name (Criterion lists tests in the order
# its workers end them), and a step done on an earlier run that fails now
# reads BROKEN. The manifest's picture of a step (lab 04: step 2) is named
# under the step while it fails, and once after the summary while it is done.
set -u
kit="$1"
work=$(mktemp -d "${TMPDIR:-/tmp}/cml-progress-XXXXXX")
trap 'rm -rf "$work"' EXIT
cat > "$work/fake_tests" <<'FAKE'
#!/bin/sh
rep=${1#--json=}
s2=PASSED; [ -f "$(dirname "$0")/break2" ] && s2=FAILED
cat > "$rep" <<J
{"id":"Criterion v2.4.2","passed":1,"failed":3,"errored":0,"skipped":0,"test_suites":[
{"name":"step1","tests":[{"name":"sums_ints","status":"FAILED","messages":["reduction.c:40: element [1, 2) of block 0 is wrong\nexpected 3, got 7","a second message"]}]},
{"name":"step2","tests":[{"name":"sums_ints","status":"$s2","messages":["step 2 has [one bracket"]}]},
{"name":"step8","tests":[{"name":"sums_ints","status":"FAILED","messages":["range [0, 5) of step 8"]},
  {"name":"sums_floats","status":"FAILED","messages":["the floats' message, listed second"]}]}]}
J
exit 1
FAKE
chmod +x "$work/fake_tests"
progress() {
  cmake -DTESTS="$work/fake_tests" -DMANIFEST="$kit/labs/04_reduction/lab.json" -DWORK="$work/w" \
    -P "$kit/cmake/student_progress.cmake" 2>&1
}
fail=0
expect() {   # expect <what> <fixed string> <output>
  if ! grep -qF -- "$2" <<<"$3"; then echo "FAIL: $1: no line '$2' in:"; echo "$3"; fail=1; fi
}
first=$(progress)
expect "step 1's own message" "      first: step1::sums_ints: reduction.c:40: element [1, 2) of block 0 is wrong" "$first"
expect "the message in full" "             expected 3, got 7" "$first"
expect "step 2 done" "step 2 strided_index    done (1 tests pass)" "$first"
# step 8's report lists sums_ints first (Criterion's order is the order its workers ended): the first by name
expect "step 8's first test by name" "      first: step8::sums_floats: the floats' message, listed second" "$first"
if grep -q "a second message" <<<"$first"; then echo "FAIL: step 1 shows more than its first message"; fail=1; fi
# no GPU and no CPU-path test program ran (a stand-in): the command builds the CPU path's runner first
picture="cmake --build build --target reduction_run_cpu && ./build/reduction_run_cpu --step 2 --picture step2.svg"
expect "the done step's picture, once" "  the tests check results, not memory access: see step 2's with $picture" "$first"
if grep -q "see its memory access" <<<"$first"; then echo "FAIL: a picture line under a done step"; fail=1; fi
touch "$work/break2"
second=$(progress)
expect "a broken step" "step 2 strided_index    BROKEN: 1 of 1 tests fail; every test passed on an earlier run" "$second"
expect "its message" "      first: step2::sums_ints: step 2 has [one bracket" "$second"
expect "step 1 is still not yet" "step 1 interleaved      not yet: 1 of 1 tests fail" "$second"
expect "the broken step's picture" "      see its memory access: $picture" "$second"
if grep -q "the tests check results" <<<"$second"; then echo "FAIL: a done step's picture with no step done"; fail=1; fi
[ $fail -eq 0 ] && echo "ok: each failing step shows its first message in full; a step done before and failing now reads BROKEN; a step's picture command is named"
exit $fail
