#!/usr/bin/env bash
# tools/release writes what is committed or staged: an edit not staged is
# left out of the release, and a warning names its file. Run on a local
# clone of the kit (the kit itself is never touched). CTest: kit.release_edits.
set -u
kit="$1"
git -C "$kit" rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
  { echo "SKIP: $kit is not a git checkout: the release takes git's files only from one"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cml-release-edits.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
git clone -q --local "$kit" "$tmp/kit" || exit 1
# the clone has the kit's commits; the tool under test is this checkout's
cp "$kit/tools/release" "$tmp/kit/tools/release"
f=labs/04_reduction/reduction.cu
echo "// an edit that was never staged" >> "$tmp/kit/$f"
err=$("$tmp/kit/tools/release" "$tmp/out" 2>&1 >/dev/null) || { echo "FAIL: release exited $?: $err"; exit 1; }
fail=0
grep -q "warning: 1 released file(s) have edits that are not staged" <<<"$err" && grep -qx "  $f" <<<"$err" ||
  { echo "FAIL: no warning naming $f:"; echo "$err"; fail=1; }
cmp -s "$tmp/out/$f" <(git -C "$kit" show "HEAD:$f") ||
  { echo "FAIL: the release's $f is not the committed one"; fail=1; }
[ $fail -eq 0 ] && echo "ok: the edit not staged stayed out of the release, and the warning names it"
exit $fail
