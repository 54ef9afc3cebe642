# Usage: cmake -DRUNNER=<lab runner built on the CPU path>
#              -DCONFIGS="<args>|<args>..." -P run_cpu_check.cmake
# The CPU path's sanitizer run: every step of the reference runner in
# check-only mode under the CPU race check (CML_CPU_CHECK=race), once per
# configuration (the manifest's "sanitize" arguments: sizes that are not
# multiples of a block or tile). The CPU path also checks the bounds of
# every global and dynamic shared access on every run, so a clean exit here
# is the CPU's racecheck and memcheck together (on buffers of exactly the
# interface's sizes, CML_EXACT_BUFFERS=1, as the grader's memcheck runs).
# Passes only when every step checks "ok" and no hazard, fault or deadlock is
# reported.
set(failures "")
string(REPLACE "|" ";" CONFIGS "${CONFIGS}")
foreach(config IN LISTS CONFIGS)
  separate_arguments(args UNIX_COMMAND "${config}")
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -E env CML_CPU_CHECK=race CML_EXACT_BUFFERS=1 "${RUNNER}" --step all ${args} --check-only
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 800)
  string(REGEX MATCHALL "step [0-9]+ [^\n]*" lines "${out}")
  list(LENGTH lines nsteps)
  string(REGEX MATCHALL "cml-cpu racecheck: Race reported between[^\n]*" races "${err}")
  list(LENGTH races nraces)
  message("CPU race check ${config}: exit ${rc}, ${nsteps} step(s) checked, ${nraces} hazard(s)")
  if(NOT rc EQUAL 0 OR nsteps EQUAL 0 OR "${err}" MATCHES "cml-cpu")
    string(APPEND failures "--- CML_CPU_CHECK=race ${RUNNER} --step all ${config} --check-only (exit ${rc}):\n${out}${err}\n")
  endif()
endforeach()
if(failures)
  message(FATAL_ERROR "the CPU path's checks found problems in the reference:\n${failures}")
endif()
