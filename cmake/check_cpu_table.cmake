# Usage: cmake -DRUNNER=<lab runner built on the CPU path> -DARGS="<args>"
#              -P check_cpu_table.cmake
# The CPU path's runner checks and times every step and prints the results
# table as on a GPU, with the kit's rule for the CPU path: the table says
# EMULATED, every timed row is labelled emulated, and no time is compared
# with a ceiling (no "% max" column, no "100% = ..." line, no ratio to the
# lab's library anchor). Runs `RUNNER --step all ARGS` at the default
# repeat count (ARGS: the manifest's first "sanitize" sizes, small ones).
separate_arguments(args UNIX_COMMAND "${ARGS}")
execute_process(COMMAND "${RUNNER}" --step all ${args}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 800)
get_filename_component(name "${RUNNER}" NAME)
set(problems "")
if(NOT rc EQUAL 0)
  list(APPEND problems "exit ${rc}, not 0")
endif()
if(NOT out MATCHES "-- EMULATED")
  list(APPEND problems "no results table saying EMULATED")
endif()
# A step's row: "<step>  <kernel>  <check>  <ms>  <rate>  (emulated)"
string(REGEX MATCHALL "\n[0-9]+ +[A-Za-z0-9_]+ +[a-zA-Z]+ +[^\n]*" rows "${out}")
string(REGEX MATCHALL "\n[0-9]+ +[A-Za-z0-9_]+ +ok +[0-9.]+ +[0-9.]+  \\(emulated\\)" timed "${out}")
list(LENGTH rows nrows)
list(LENGTH timed ntimed)
if(nrows EQUAL 0)
  list(APPEND problems "no step rows in the table")
elseif(NOT ntimed EQUAL nrows)
  list(APPEND problems "${ntimed} of ${nrows} step rows checked ok and timed (emulated)")
endif()
foreach(ratio "% max" "100% =" "x cuBLAS" "x CUB" "x step before")
  string(FIND "${out}" "${ratio}" at)
  if(NOT at EQUAL -1)
    list(APPEND problems "'${ratio}' printed: an emulated time compared with a ceiling or an anchor")
  endif()
endforeach()
message("${name} --step all ${ARGS}: exit ${rc}, ${ntimed} of ${nrows} step rows timed (emulated)")
if(problems)
  list(JOIN problems "; " problems)
  message(FATAL_ERROR "${problems}\n--- stdout:\n${out}\n--- stderr:\n${err}")
endif()
