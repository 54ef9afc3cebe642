# Usage: cmake -DTOOL=<kit_sectors_agree> -DWORK=<scratch dir> -P check_sectors_agree.cmake
# kit_sectors_agree against two stand-in runners (shell scripts printing a
# fixed --sectors --json): its verdicts and its --markdown table. The
# expected figures are the stand-ins' own: step 1 the same (the CPU path's
# two launches summed), step 2's loads 1% apart within a 2% --bound, step
# 3's stores apart (a verdict that must read "differs"), the GPU's 84 bank
# conflicts beside the CPU path's 0 (reported, never compared); then the
# same with the stores agreeing, appended as a second section; a skip and
# a bad use. No GPU, no lab built.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(head "{\"lab\": \"99_fake\", \"emulated\": EMULATED, \"metrics\": [],\n \"steps\": [
  {\"step\": 1, \"ident\": \"copy\", \"available\": true, \"reason\": \"\"},
  {\"step\": 2, \"ident\": \"halo\", \"available\": true, \"reason\": \"\"},
  {\"step\": 3, \"ident\": \"naive\", \"available\": true, \"reason\": \"\"}],\n \"launches\": [")
set(gpu_json "${head}
  {\"step\": 1, \"ident\": \"copy\", \"kernel\": \"copy_kernel<512, int>\", \"ld_requests\": 100, \"ld_sectors\": 400, \"st_requests\": 100, \"st_sectors\": 400, \"ld_bank_conflicts\": 0, \"st_bank_conflicts\": 0},
  {\"step\": 2, \"ident\": \"halo\", \"kernel\": \"halo_kernel\", \"ld_requests\": 100, \"ld_sectors\": 500, \"st_requests\": 100, \"st_sectors\": 400, \"ld_bank_conflicts\": 84, \"st_bank_conflicts\": 0},
  {\"step\": 3, \"ident\": \"naive\", \"kernel\": \"naive_kernel\", \"ld_requests\": 100, \"ld_sectors\": 400, \"st_requests\": 100, \"st_sectors\": 3200, \"ld_bank_conflicts\": 0, \"st_bank_conflicts\": 0}],\n \"lines\": []}")
set(cpu_json "${head}
  {\"step\": 1, \"ident\": \"copy\", \"kernel\": \"copy_kernel<512u,int>\", \"ld_requests\": 60, \"ld_sectors\": 240, \"st_requests\": 60, \"st_sectors\": 240, \"ld_bank_conflicts\": 0, \"st_bank_conflicts\": 0},
  {\"step\": 1, \"ident\": \"copy\", \"kernel\": \"copy_kernel<512u,int>\", \"ld_requests\": 40, \"ld_sectors\": 160, \"st_requests\": 40, \"st_sectors\": 160, \"ld_bank_conflicts\": 0, \"st_bank_conflicts\": 0},
  {\"step\": 2, \"ident\": \"halo\", \"kernel\": \"halo_kernel\", \"ld_requests\": 100, \"ld_sectors\": 505, \"st_requests\": 100, \"st_sectors\": 400, \"ld_bank_conflicts\": 0, \"st_bank_conflicts\": 0},
  {\"step\": 3, \"ident\": \"naive\", \"kernel\": \"naive_kernel\", \"ld_requests\": 100, \"ld_sectors\": 400, \"st_requests\": 100, \"st_sectors\": ST3, \"ld_bank_conflicts\": 0, \"st_bank_conflicts\": 0}],\n \"lines\": []}")
string(REPLACE "EMULATED" "false" gpu_json "${gpu_json}")
string(REPLACE "EMULATED" "true" cpu_json "${cpu_json}")
string(REPLACE "ST3" "\${FAKE_ST3:-1600}" cpu_json "${cpu_json}")
file(WRITE "${WORK}/gpu_run" "#!/bin/sh\n[ \"$1\" = --probe ] && { echo 'a fake GPU'; exit 0; }\n"
  "[ \"$1 $2 $3\" = '--sectors --json --rows' ] || { echo \"fake GPU runner: unexpected arguments: $*\" >&2; exit 2; }\n"
  "cat <<'JSON'\n${gpu_json}\nJSON\n")
file(WRITE "${WORK}/cpu_run" "#!/bin/sh\ncat <<JSON\n${cpu_json}\nJSON\n")
file(CHMOD "${WORK}/gpu_run" "${WORK}/cpu_run" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)

set(problems "")
macro(expect what text)
  string(FIND "${${what}}" "${text}" at)
  if(at EQUAL -1)
    list(APPEND problems "${what} lacks '${text}'")
  endif()
endmacro()
set(page "${WORK}/access.md")

# 1. step 3 differs
execute_process(COMMAND "${TOOL}" "${WORK}/gpu_run" "${WORK}/cpu_run" --bound "2:2:the halo's loads"
  --markdown "${page}" -- --rows 9
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("run 1 (exit ${rc}):\n${out}${err}")
if(NOT rc EQUAL 1)
  list(APPEND problems "run 1: exit ${rc}, expected 1 (step 3 differs)")
endif()
expect(out "step 1 copy: copy_kernel ld: GPU 4.0000 sectors/request (100 requests, 400 sectors), CPU path 4.0000 (100, 400): the same")
expect(out "step 2 halo: halo_kernel ld: GPU 5.0000 sectors/request (100 requests, 500 sectors), CPU path 5.0500 (100, 505): within +1.00%, bound 2% (the halo's loads)")
expect(out "step 2 halo: halo_kernel ld: shared-memory bank conflicts GPU 84, CPU path 0 (reported, not compared)")
expect(out "step 3 naive: naive_kernel st: GPU 32.0000 sectors/request (100 requests, 3200 sectors), CPU path 16.0000 (100, 1600): DIFFERENT")
expect(out "DIFFER: 3 kernels of 3 steps compared")
file(READ "${page}" md)
expect(md "\n## 99_fake\n\n`gpu_run --sectors` (Nsight Compute) against `cpu_run --sectors` (the CPU path), every step, at `--rows 9`.")
expect(md "| step | ident | kernel | direction | GPU sectors/request | CPU path sectors/request | requests GPU / CPU path | agreement | bank conflicts GPU / CPU path |")
expect(md "| 1 | copy | `copy_kernel` | ld | 4.0000 | 4.0000 | 100 / 100 | the same | 0 / 0 |")
expect(md "| 2 | halo | `halo_kernel` | ld | 5.0000 | 5.0500 | 100 / 100 | within 2% (+1.00%): the halo's loads | 84 / 0 |")
expect(md "| 3 | naive | `naive_kernel` | st | 32.0000 | 16.0000 | 100 / 100 | differs (-50.00%) | 0 / 0 |")
expect(md "**Differ**: 3 kernels of 3 steps compared")

# 2. all agree: appended, with the lab's name and a note
execute_process(COMMAND "${CMAKE_COMMAND}" -E env FAKE_ST3=3200 "${TOOL}" "${WORK}/gpu_run" "${WORK}/cpu_run"
  --bound "2:2:the halo's loads" --markdown "${page}" --lab "99_fake again" --note "A note." -- --rows 9
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("run 2 (exit ${rc}):\n${out}${err}")
if(NOT rc EQUAL 0)
  list(APPEND problems "run 2: exit ${rc}, expected 0 (all agree)")
endif()
expect(out "AGREE: 3 kernels of 3 steps compared")
file(READ "${page}" md)
expect(md "**Differ**: 3 kernels")
expect(md "\n## 99_fake again\n\n`gpu_run --sectors` (Nsight Compute) against `cpu_run --sectors` (the CPU path), every step, at `--rows 9`. A note.\n")
expect(md "| 3 | naive | `naive_kernel` | st | 32.0000 | 32.0000 | 100 / 100 | the same | 0 / 0 |")
expect(md "**Agree**: 3 kernels of 3 steps compared")

# 3. no GPU runner: a skip, and the section says why
execute_process(COMMAND "${TOOL}" "" "${WORK}/cpu_run" --markdown "${page}" --lab 99_skipped -- --rows 9
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 77)
  list(APPEND problems "run 3: exit ${rc}, expected 77 (a skip)")
endif()
file(READ "${page}" md)
expect(md "## 99_skipped")
expect(md "no CUDA build of the lab's runner here")
expect(md "Not measured (skipped).")

# 4. --note without --markdown: a usage error, nothing run
execute_process(COMMAND "${TOOL}" "${WORK}/gpu_run" "${WORK}/cpu_run" --note x -- --rows 9
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT err MATCHES "usage: kit_sectors_agree")
  list(APPEND problems "run 4: exit ${rc}, expected 1 with the usage: ${err}")
endif()

if(problems)
  list(JOIN problems "\n  " problems)
  message(FATAL_ERROR "kit_sectors_agree:\n  ${problems}\n(the page: ${page})")
endif()
