#!/bin/sh
# try-lab.sh LAB [ref|skeleton]: builds a lab's GPU tests (labs/LAB/tests/gpu.c,
# unchanged) on the CPU path and runs them: the reference solution's files
# (ref, the default), the untouched skeleton in labs/LAB (skeleton), or the
# lab's files in another directory (an absolute path: a submission, a mutant).
# Needs gcc, g++, cmake and Criterion; no CUDA toolkit, no GPU.
#   common/cpu/try-lab.sh 04_reduction ref
#   CML_CPU_BUILD=/tmp/x common/cpu/try-lab.sh 06 skeleton
# Extra arguments after the variant go to the Criterion binary (e.g.
# --filter 'step3/*'). Exit status: the test binary's. The binary is
# instrumented for the checks: CML_CPU_CHECK=race or banks (README.md).
# CML_CPU_RUNNER=1 builds and runs the lab's runner instead (the arguments
# go to it: --step 3 --n 1000).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
lab=${1:?usage: try-lab.sh LAB [ref|skeleton] [criterion args...]}
variant=${2:-ref}
[ $# -ge 2 ] && shift 2 || shift $#
case $lab in
  [0-9][0-9]) lab=$(cd "$root/labs" && ls -d "${lab}"_* | head -n 1) ;;
esac
[ -d "$root/labs/$lab" ] || { echo "try-lab.sh: no lab $lab" >&2; exit 2; }
tag=$variant
case $variant in
  ref) src_dir=$root/solutions/$lab ;;
  skeleton) src_dir=$root/labs/$lab ;;
  /*) src_dir=$variant; tag=dir-$(echo "$variant" | cksum | cut -d' ' -f1) ;;
  *) echo "try-lab.sh: variant is ref, skeleton or an absolute directory holding the lab's files" >&2; exit 2 ;;
esac
out=${CML_CPU_BUILD:-/tmp/cml-cpu-try}/$lab-$tag
mkdir -p "$out/obj" "$out/gen" "$out/src"

CC=${CC:-gcc}
CXX=${CXX:-g++}
CFLAGS="-std=gnu11 -O2 -g -pthread"
CXXFLAGS="-std=c++17 -O2 -g -gdwarf-4 -pthread -ffp-contract=off"
# The checks' access callbacks (CML_CPU_INSTRUMENT=0 leaves them out: to time their cost).
[ "${CML_CPU_INSTRUMENT:-1}" = 0 ] || CXXFLAGS="$CXXFLAGS -fsanitize=thread --param=tsan-instrument-func-entry-exit=0 -fsanitize=alignment -fno-sanitize-recover=alignment"
crit_cflags=$(pkg-config --cflags criterion 2>/dev/null || true)
crit_libs=$(pkg-config --libs criterion 2>/dev/null || echo -lcriterion)

echo "== building $lab ($variant) in $out"
# 1. labtool (for the source pass) and the step table.
$CC -std=c11 -O1 -o "$out/labtool" "$root"/tools/labtool/labtool_main.c "$root"/tools/labtool/labtool_core.c \
  "$root"/tools/labtool/labtool_cpu.c "$root"/tools/labtool/toml_subset.c
cmake -DKIT_ROOT="$root" -DLAB="$lab" -DOUT="$out/gen" -P "$here/cmake/lab_info.cmake"
. "$out/gen/lab.sh"
drv=$root/common/labs/$lab
inc="-I$here/include -I$root/labs/$lab -I$out/gen -I$root/common/include -I$drv"

# 2. Every .cu is translated, then compiled as C++; every .c as C.
objs=""
compile() { # compile SOURCE TAG
  name=$(basename "$1")
  case $name in
    *.cu)
      "$out/labtool" cpu-translate "$1" "$out/src/$2_${name%.cu}.cpp"
      $CXX $CXXFLAGS $inc -c "$out/src/$2_${name%.cu}.cpp" -o "$out/obj/$2_$name.o" ;;
    *.c) $CC $CFLAGS $inc $crit_cflags -c "$1" -o "$out/obj/$2_$name.o" ;;
  esac
  objs="$objs $out/obj/$2_$name.o"
}
for f in $FILES; do compile "$src_dir/$f" lab; done
for f in "$drv"/*.c "$drv"/*.cu; do
  [ -e "$f" ] && [ "$(basename "$f")" != run.c ] && compile "$f" host
done
for f in "$root"/common/src/*.c "$root"/common/src/*.cu; do compile "$f" cml; done
for f in "$here"/src/*.c; do compile "$f" rt; done
if [ "${CML_CPU_RUNNER:-0}" = 1 ]; then
  # The lab's runner instead of its tests (what compute-sanitizer runs on a GPU).
  compile "$drv/run.c" runner
  bin=$out/${STEM}_run
else
  compile "$root/labs/$lab/tests/gpu.c" test
  compile "$root/common/test/criterion_main.c" test
  bin=$out/test_$STEM
fi
$CXX -pthread -o "$bin" $objs $crit_libs -ldl -lm

# 3. Run, timed.
echo "== running $bin $*"
start=$(date +%s)
set +e
"$bin" "$@"
rc=$?
set -e
echo "== $lab ($variant): exit $rc, wall $(( $(date +%s) - start )) s"
exit $rc
