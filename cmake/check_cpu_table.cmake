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

# A lab with --sweep (its help lists it): the sweep's JSON on the CPU path,
# 1 MiB and 2 MiB, emulated, the step's times alone (no copy beside them).
execute_process(COMMAND "${RUNNER}" --help OUTPUT_VARIABLE help ERROR_QUIET)
if(help MATCHES "--sweep ")
  execute_process(COMMAND "${RUNNER}" --sweep --sweep-max 2M --repeat 1 --json
    RESULT_VARIABLE src OUTPUT_VARIABLE sjson ERROR_VARIABLE serr TIMEOUT 800)
  string(JSON npoints ERROR_VARIABLE jerr LENGTH "${sjson}" sweep points)
  if(NOT src EQUAL 0 OR jerr)
    list(APPEND problems "--sweep --sweep-max 2M --json: exit ${src}, not a sweep's JSON (${jerr}): ${sjson}${serr}")
  else()
    string(JSON emulated GET "${sjson}" emulated)
    string(JSON b0 GET "${sjson}" sweep points 0 bytes)
    string(JSON b1 ERROR_VARIABLE none GET "${sjson}" sweep points 1 bytes)
    string(JSON copy ERROR_VARIABLE no_copy GET "${sjson}" sweep points 0 memcpy)
    if(NOT npoints EQUAL 2 OR NOT emulated STREQUAL "ON" OR b0 GREATER 1048576 OR NOT b1 GREATER b0 OR NOT no_copy)
      list(APPEND problems "--sweep --sweep-max 2M: expected two emulated points (about 1 and 2 MiB) and no copy "
        "beside them; got ${npoints} points, emulated ${emulated}, bytes ${b0} and ${b1}, memcpy '${copy}'")
    endif()
    message("${name} --sweep --sweep-max 2M: ${npoints} sizes (${b0} and ${b1} bytes), emulated")
  endif()
endif()
if(problems)
  list(JOIN problems "; " problems)
  message(FATAL_ERROR "${problems}\n--- stdout:\n${out}\n--- stderr:\n${err}")
endif()
