#!/usr/bin/env bash
# tools/gpu-verify busy without a GPU: stand-ins for nvidia-smi (two GPUs),
# cmake (nothing built), ctest (the other GPU work: a short run, counted) and
# python3 (the self-check: prints a "reference:" line, the second one docked,
# as on 2 x H200 beside ctest). Each of the N numbers runs once, the GPUs
# share them, the ctest loop runs while they do and stops after, the count
# and the exit status tell a docked self-check; CUDA_VISIBLE_DEVICES limits
# the GPUs.
set -u
kit="$1"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin"
cat > "$tmp/bin/nvidia-smi" <<'SH'
#!/bin/sh
case "$*" in
  *--query-gpu=index,utilization*) printf '0, 40\n1, 90\n0, 60\n1, 100\n' ;;
  *--query-gpu=index*) printf '0\n1\n' ;;
  *) echo "Stand-in GPU, 9.0, 0, 1 MiB" ;;
esac
SH
cat > "$tmp/bin/cmake" <<'SH'
#!/bin/sh
exit 0
SH
cat > "$tmp/bin/ctest" <<SH
#!/bin/sh
echo start >> "$tmp/ctest"; sleep 0.3; echo end >> "$tmp/ctest"
SH
cat > "$tmp/bin/python3" <<SH
#!/bin/sh
[ "\$1" = grader/grade.py ] || exit 99
n=0; until mkdir "$tmp/sc.\$n" 2>/dev/null; do n=\$((n + 1)); done   # the n-th self-check started, n from 0
echo "GPU \$CUDA_VISIBLE_DEVICES" >> "$tmp/gpus"
sleep 1
out=""; prev=""; for a in "\$@"; do [ "\$prev" = --out ] && out="\$a"; prev="\$a"; done
mkdir -p "\$out/students/reference"; echo "- step 2: full marks" > "\$out/students/reference/feedback.md"
if [ "\$n" = 2 ]; then echo "- step 3: timed 2 times (a time over 1.1x the reference's is timed again)" >> "\$out/students/reference/feedback.md"; fi
if [ "\$n" = 1 ]; then echo "reference: 803.92/804 (03_tiled_matmul 116.92/117)"; exit 3; fi
echo "reference: 804/804 (01_shared_banks 95/95)"
SH
chmod +x "$tmp/bin/"*
fail=0
PATH="$tmp/bin:$PATH" OUT="$tmp/out" "$kit/tools/gpu-verify" busy --times 4 > "$tmp/log" 2>&1; rc=$?
sleep 1
starts=$(grep -c start "$tmp/ctest" 2>/dev/null); sleep 1
summary="$tmp/out/busy/summary"
if [ "$rc" -ne 1 ] || ! grep -q "self-checks: 3 of 4 at full marks beside ctest --preset gpu" "$tmp/log" ||
   ! grep -q "GPU utilization while they ran (nvidia-smi, every 5 s): .*GPU 0 50% (2 samples)" "$tmp/log" ||
   ! grep -q "GPU 1 95% (2 samples)" "$tmp/log"; then
  echo "FAIL: one docked self-check of four: exit $rc (want 1), or no count line:"; cat "$tmp/log"; fail=1
else
  echo "ok: one docked self-check of four: exit 1, 'self-checks: 3 of 4 at full marks', each GPU's mean utilization"
fi
if [ "$(grep -c '^self-check [1-4] (GPU [01]): exit [03], [0-9]* s, [01] step(s) timed again: ' "$summary")" -ne 4 ] ||
   [ "$(grep -c ', 1 step(s) timed again: ' "$summary")" -ne 1 ] ||
   [ "$(sed -E 's/^self-check ([0-9]+) .*/\1/' "$summary" | sort -u | tr -d '\n')" != 1234 ] ||
   ! grep -q 'exit 3, .*: reference: 803.92/804' "$summary"; then
  echo "FAIL: the summary does not hold self-checks 1 to 4 once each with their reference: lines:"; cat "$summary"; fail=1
else
  echo "ok: self-checks 1 to 4 once each, with their reference: lines and the one step timed again"
fi
if [ "$(sort -u "$tmp/gpus" | tr -d '\n')" != "GPU 0GPU 1" ]; then
  echo "FAIL: both GPUs should run self-checks:"; cat "$tmp/gpus"; fail=1
else
  echo "ok: both GPUs ran self-checks"
fi
if [ "${starts:-0}" -lt 1 ] || [ "$(grep -c start "$tmp/ctest")" -ne "$starts" ] ||
   [ "$(grep -c end "$tmp/ctest")" -gt "$starts" ]; then
  echo "FAIL: the ctest loop should run beside them and stop after:"; cat "$tmp/ctest"; fail=1
else
  echo "ok: ctest ran $starts time(s) beside them and stopped"
fi
rm -rf "$tmp/gpus" "$tmp"/sc.*
PATH="$tmp/bin:$PATH" OUT="$tmp/out1" CUDA_VISIBLE_DEVICES=1 "$kit/tools/gpu-verify" busy --times 2 > "$tmp/log1" 2>&1
if [ "$(sort -u "$tmp/gpus" | tr -d '\n')" != "GPU 1" ]; then
  echo "FAIL: CUDA_VISIBLE_DEVICES=1: only GPU 1 should run self-checks:"; cat "$tmp/gpus" "$tmp/log1"; fail=1
else
  echo "ok: CUDA_VISIBLE_DEVICES=1: GPU 1 alone"
fi
# --beside load without the runners built: refused, not run beside nothing
mkdir -p "$tmp/bare/tools" "$tmp/bare/build-gpu"; cp "$kit/tools/gpu-verify" "$tmp/bare/tools/"
PATH="$tmp/bin:$PATH" OUT="$tmp/out3" "$tmp/bare/tools/gpu-verify" busy --times 1 --beside load > "$tmp/log3" 2>&1; rc=$?
if [ "$rc" -ne 1 ] || ! grep -q "build-gpu/matmul_run_ref, which the build did not make" "$tmp/log3" || [ -e "$tmp/out3/busy/summary" ]; then
  echo "FAIL: --beside load with no runners built should stop before any self-check:"; cat "$tmp/log3"; fail=1
else
  echo "ok: --beside load with no runners built: refused before any self-check"
fi
# --beside load: the lab runners in a loop on each GPU the self-checks use,
# stopped after; a copy of the script in a kit of its own, whose build-gpu/
# holds stand-ins for the two runners
rm -rf "$tmp/gpus" "$tmp"/sc.*
mkdir -p "$tmp/kit/tools" "$tmp/kit/build-gpu"
cp "$kit/tools/gpu-verify" "$tmp/kit/tools/"
for r in matmul_run_ref transpose_run_ref; do
  printf '#!/bin/sh\necho "%s GPU $CUDA_VISIBLE_DEVICES" >> "%s/load"; sleep 0.2\n' "$r" "$tmp" > "$tmp/kit/build-gpu/$r"
  chmod +x "$tmp/kit/build-gpu/$r"
done
ctests=$(grep -c start "$tmp/ctest")
PATH="$tmp/bin:$PATH" OUT="$tmp/out2" "$tmp/kit/tools/gpu-verify" busy --times 3 --beside load > "$tmp/log2" 2>&1; rc=$?
sleep 1; loads=$(grep -c . "$tmp/load" 2>/dev/null); sleep 1
if [ "$rc" -ne 1 ] || ! grep -q "self-checks: 2 of 3 at full marks beside a load on every GPU" "$tmp/log2" ||
   ! grep -q "runs of it ended, 0 of them failed" "$tmp/log2" ||
   ! grep -q "matmul_run_ref GPU 0" "$tmp/load" || ! grep -q "transpose_run_ref GPU 1" "$tmp/load" ||
   [ "$(grep -c start "$tmp/ctest")" -ne "$ctests" ]; then
  echo "FAIL: --beside load: the runners on both GPUs, no ctest, 2 of 3 (the second docked):"; cat "$tmp/log2" "$tmp/load"; fail=1
elif [ "$(grep -c . "$tmp/load")" -ne "$loads" ]; then
  echo "FAIL: --beside load: the load went on after the self-checks:"; cat "$tmp/load"; fail=1
else
  echo "ok: --beside load: lab 03's and lab 06's runners on GPUs 0 and 1 beside 3 self-checks, stopped after"
fi
exit $fail
