#!/bin/sh
# release-check.sh KIT [CUDA_ARCHS]: the student edition, in two parts (run
# by CTest as kit.release):
#  1. every lab: tools/release writes the whole edition and it configures
#     (the preset default, as a student's first command), so that each lab's
#     files are in it and its CMake finds them;
#  2. three labs, end to end: tools/release --labs ... --check (configure,
#     build, host tests, progress, the student's self-check). Three labs
#     rather than nine keep CI's 2 cores under its time limit: the labs'
#     own sources are the developer tree's, built and tested by the rest of
#     the suite, and grader.selfcheck grades every lab. 01 has a host model,
#     04 a kit file under common/labs/, 09 is of the later labs.
# CUDA_ARCHS (the outer build's) goes to each configure as $CUDAARCHS. The
# temporary folder is removed.
set -u
kit=${1:?usage: release-check.sh KIT}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cml-release.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [ -n "${2:-}" ]; then
  CUDAARCHS=$2
  export CUDAARCHS
fi
"$kit/tools/release" "$tmp/whole" --course "the kit's CI" || exit 1
echo "kit.release: the whole edition configures (cmake --preset default)"
(cd "$tmp/whole" && cmake --preset default >"$tmp/whole-configure.log" 2>&1) ||
  { tail -n 30 "$tmp/whole-configure.log"; echo "kit.release: the whole edition does not configure" >&2; exit 1; }
if [ -f "$tmp/whole/build/Makefile" ]; then   # each lab's runner is a target (make's list; another generator: not read)
  for lab in $(cd "$kit/labs" && ls -d */lab.json | sed 's,/lab.json$,,'); do
    stem=$(sed -n 's/.*"stem": *"\([a-z0-9_]*\)".*/\1/p' "$kit/labs/$lab/lab.json" | head -n 1)
    grep -q "^${stem}_run:" "$tmp/whole/build/Makefile" ||
      { echo "kit.release: the whole edition has no target ${stem}_run for $lab" >&2; exit 1; }
  done
fi
rm -rf "$tmp/whole"
"$kit/tools/release" "$tmp/course-kit" --labs 01_shared_banks,04_reduction,09_shared_sort \
  --course "the kit's CI" --check --logs "$tmp/logs"
