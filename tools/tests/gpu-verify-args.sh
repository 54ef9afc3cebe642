#!/usr/bin/env bash
# tools/gpu-verify's command line, without a GPU: --help (alone or after a
# part) names every part, access and busy included, and exits 0; a bad
# --times is refused like a bad --lab; a bad part or a bad
# --lab is refused with exit 2 and a message, before anything is built
# (nvidia-smi is looked for only after the arguments).
set -u
kit="$1"
gv="$kit/tools/gpu-verify"
fail=0
check() {  # check WANT_RC WANT_TEXT ARGS...
  local want_rc="$1" want="$2"; shift 2
  local out rc
  out=$("$gv" "$@" 2>&1); rc=$?
  if [ "$rc" -ne "$want_rc" ] || ! printf '%s' "$out" | grep -qF -- "$want"; then
    echo "FAIL: gpu-verify $*: exit $rc (want $want_rc), output lacks '$want':"; printf '%s\n' "$out"; fail=1
  else
    echo "ok: gpu-verify $*: exit $rc, '$want'"
  fi
}
check 0 "usage: tools/gpu-verify [all|tests|results|access]" --help
check 0 "  access   runs kit_sectors_agree for every lab" access --help
check 0 "docs/results/<gpu>/access.md" -h
check 2 "usage: tools/gpu-verify" accesss
check 2 "gpu-verify: no lab 'nosuch'" access --lab nosuch
check 2 "gpu-verify: --lab needs a lab's name" access --lab
check 2 "gpu-verify: --lab goes with 'results' or 'access' only" tests --lab 06_transpose
check 2 "gpu-verify: --lab goes with 'results' or 'access' only" --lab 06_transpose
check 0 "  busy     the grader's self-check (grade.py --self-check) N times" busy --help
check 2 "gpu-verify: --times needs a count from 1 to 999" busy --times 0
check 2 "gpu-verify: --times needs a count from 1 to 999" busy --times ten
check 2 "gpu-verify: --times needs a count from 1 to 999" busy --times
check 2 "gpu-verify: --times goes with 'busy' only" tests --times 10
exit $fail
