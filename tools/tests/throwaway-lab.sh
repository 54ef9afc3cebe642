#!/usr/bin/env bash
# throwaway-lab.sh KIT [cmake configure args...]: proves that adding a lab
# needs no edit outside the lab's own folders. In a temporary copy of the kit
# (the committed and untracked files; the other labs left out so that it
# stays quick), tools/new-lab makes 99_throwaway from the template; then,
# with no other edit:
#   1. the kit configures and builds (the lab's runner, tests, mistakes);
#   2. the lab's tests are registered and pass (reference, skeleton checks,
#      step comments, the mistake; GPU tests skip visibly without a GPU);
#   3. a student's progress lists the lab's steps;
#   4. the run workflow runs the lab's runner;
#   5. the docs index (README's lab table, docs/results/README.md) gains the
#      lab when regenerated, and then matches the manifests;
#   6. the grader picks the lab up and its self-check passes.
# Run by CTest as kit.throwaway_lab; exit 0 when all hold.
set -uo pipefail
kit=$(cd "${1:?usage: throwaway-lab.sh KIT [cmake args...]}" && pwd)
shift
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cml-throwaway.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
copy=$tmp/kit
fail() { echo "throwaway-lab: FAILED: $*" >&2; exit 1; }
step() { echo; echo "== $*"; }

step "copying the kit to $copy (without the other labs)"
mkdir -p "$copy"
if git -C "$kit" rev-parse --git-dir >/dev/null 2>&1; then
  # (a file deleted but not yet committed is listed too: it is left out, not an error)
  (cd "$kit" && git ls-files -co --exclude-standard -z) \
    | (cd "$kit" && tar --null --ignore-failed-read -cf - -T - 2>/dev/null) | tar -xf - -C "$copy" \
    || fail "could not copy the kit"
else
  (cd "$kit" && tar --exclude='./build*' -cf - .) | tar -xf - -C "$copy" || fail "could not copy the kit"
fi
rm -rf "$copy"/labs/[0-9]* "$copy"/solutions/[0-9]* "$copy"/common/labs/[0-9]* \
       "$copy"/slides/decks/[0-9]*
find "$copy/docs/results" -name '[0-9][0-9]_*' -type f -delete

step "tools/new-lab 99_throwaway throwaway \"Throwaway lab\""
(cd "$copy" && tools/new-lab 99_throwaway throwaway "Throwaway lab") || fail "tools/new-lab failed"

step "1. configure and build"
cmake -S "$copy" -B "$copy/build" -DCMAKE_BUILD_TYPE=Release "$@" > "$tmp/configure.log" 2>&1 \
  || { cat "$tmp/configure.log"; fail "configure failed"; }
cmake --build "$copy/build" -j 2 --target all student-cpu > "$tmp/build.log" 2>&1 || { tail -40 "$tmp/build.log"; fail "build failed"; }
echo "built"

step "2. the lab's tests"
ctest --test-dir "$copy/build" -R '^99_throwaway\.' -LE student -j 2 --output-on-failure > "$tmp/ctest.log" 2>&1
rc=$?
grep -E '^ *[0-9]+/[0-9]+ Test|tests passed|Skipped' "$tmp/ctest.log" | sed 's/^/  /'
[ $rc -eq 0 ] || { cat "$tmp/ctest.log"; fail "the new lab's tests failed"; }
for t in 99_throwaway.skeleton_matches_solution 99_throwaway.skeleton_comment_lists_the_steps.throwaway.cu; do
  grep -q " $t " "$tmp/ctest.log" || fail "test $t was not registered"
done
# The GPU build's tests (with nvcc) and the CPU path's (always): at least one
# of each pair, and on the CPU path they really run (no GPU needed).
for t in reference skeleton_fails_cleanly mistake.no_bounds_check; do
  grep -qE " 99_throwaway\.(cpu\.)?$t " "$tmp/ctest.log" || fail "no test 99_throwaway[.cpu].$t was registered"
done
if grep -q " 99_throwaway.cpu.reference " "$tmp/ctest.log"; then
  # The CPU path runs anywhere: its reference and mistake checks must have run, not skipped.
  for t in cpu.reference cpu.mistake.no_bounds_check cpu.checker.reference cpu.checker.skeleton \
           cpu.checker.mistake.no_bounds_check; do
    grep -E " 99_throwaway\.$t +\.* +Passed" "$tmp/ctest.log" >/dev/null || fail "99_throwaway.$t did not pass on the CPU path"
  done
fi
listed=$(ctest --test-dir "$copy/build" -N -R '^99_throwaway\.student$')
[[ $listed == *99_throwaway.student* ]] || fail "no progress test 99_throwaway.student"

step "3. a student's progress"
LAB=99_throwaway cmake --build "$copy/build" --target progress > "$tmp/progress.log" 2>&1
grep -E 'step [12] |99_throwaway:' "$tmp/progress.log" | sed 's/^/  /'
grep -q 'step 1 one_per_thread' "$tmp/progress.log" && grep -q 'step 2 grid_stride' "$tmp/progress.log" \
  || { cat "$tmp/progress.log"; fail "progress does not list the lab's steps"; }

step "4. the run workflow"
cmake --build "$copy/build" --target run-labs > "$tmp/run.log" 2>&1
grep -E 'throwaway' "$tmp/run.log" | head -5 | sed 's/^/  /'
grep -q 'throwaway_run' "$copy/build/CMakeFiles/run-labs.dir/build.make" 2>/dev/null \
  || grep -q 'throwaway' "$tmp/run.log" || fail "the run workflow does not run throwaway_run"

step "5. the docs index"
cmake -DSOURCE_DIR="$copy" -DMODE=write -P "$copy/cmake/kit_docs.cmake" || fail "kit_docs.cmake write failed"
grep -q '99_throwaway' "$copy/README.md" || fail "README's lab table does not list the lab"
grep -q '99_throwaway' "$copy/docs/results/README.md" || fail "docs/results/README.md does not list the lab"
cmake -DSOURCE_DIR="$copy" -P "$copy/cmake/kit_docs.cmake" || fail "the docs do not match the manifests after writing"
grep '99_throwaway' "$copy/README.md" | sed 's/^/  /'

step "6. the grader"
python3 "$copy/grader/grade.py" --self-check --lab 99_throwaway --out "$tmp/grader-out" --work "$tmp/grader-work" \
  > "$tmp/grader.log" 2>&1
rc=$?
grep -v '^\[' "$tmp/grader.log" | sed 's/^/  /'
[ $rc -eq 0 ] || fail "the grader's self-check of the new lab exited $rc"
# the template's rubric is the new lab's policy (no "default policy" note)
if grep -q "note: 99_throwaway has no rubric file" "$tmp/grader.log"; then
  fail "the new lab's rubric (labs/99_throwaway/rubric.toml, from the template) was not read"
fi
# the template's kit-only checker (labs/99_throwaway/spec.c and common/labs/99_throwaway/harness.c) gives the verdicts
if grep -q "note: 99_throwaway has no kit-only checker" "$tmp/grader.log"; then
  fail "the new lab has no kit-only checker: the template's spec.c and harness.c were not picked up"
fi
# full marks: 26/26 on the CPU path, more with a GPU (its timing points); the same N twice either way
grep -Eq '^reference: ([0-9]+)/\1 \(99_throwaway \1/\1\)$' "$tmp/grader.log" || fail "the reference is not at full marks"
grep -q '99_throwaway' "$tmp/grader-out/gradebook.csv" || fail "the gradebook has no column for the lab"
head -1 "$tmp/grader-out/gradebook.csv" | sed 's/^/  gradebook: /'

echo
echo "throwaway-lab: the new lab was picked up by the build, tests, progress, run workflow, docs index and grader"
