#!/usr/bin/env bash
# Two tools/gpu-verify at once (results --lab A on one GPU, --lab B on
# another) build build-gpu/ one after the other, never both at once: with
# stand-ins for nvidia-smi and cmake on the PATH (no GPU, nothing built), the
# stand-in's build claims a marker folder (mkdir: only one can) for a second
# and says OVERLAP if the other build holds it. Each run stops after its
# build (the stand-in build fails), so nothing else runs.
set -u
kit="$1"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin"
cat > "$tmp/bin/nvidia-smi" <<'SH'
#!/bin/sh
echo "Stand-in GPU, 9.0, 0, 1 MiB"
SH
cat > "$tmp/bin/cmake" <<SH
#!/bin/sh
case "\$1" in
  --build)
    if mkdir "$tmp/building" 2>/dev/null; then
      echo "build \$\$" >> "$tmp/builds"; sleep 1; rmdir "$tmp/building"
    else
      echo OVERLAP >> "$tmp/builds"
    fi
    echo "stand-in build: stop here"; exit 1 ;;
  *) exit 0 ;;
esac
SH
chmod +x "$tmp/bin/nvidia-smi" "$tmp/bin/cmake"
for k in 1 2 3; do
  PATH="$tmp/bin:$PATH" OUT="$tmp/out$k" "$kit/tools/gpu-verify" results --lab 05_stencil > "$tmp/log$k" 2>&1 &
done
wait
fail=0
builds=$(grep -c '^build ' "$tmp/builds" 2>/dev/null)
if grep -q OVERLAP "$tmp/builds" 2>/dev/null || [ "${builds:-0}" -ne 3 ]; then
  echo "FAIL: the three gpu-verify builds were not one at a time:"; cat "$tmp/builds"; fail=1
else
  echo "ok: three gpu-verify at once built one at a time ($builds builds, no overlap)"
fi
for k in 1 2 3; do
  grep -q "stand-in build: stop here" "$tmp/log$k" || { echo "FAIL: run $k did not stop after its build:"; cat "$tmp/log$k"; fail=1; }
done
exit $fail
