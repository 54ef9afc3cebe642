# Usage: cmake -DTOOL=memcheck|racecheck|synccheck|initcheck -DSANITIZER=<path>
#              -DRUNNER=<lab runner> -DCONFIGS="<args>|<args>..." -P run_sanitizer.cmake
# Runs every step of a lab's runner under compute-sanitizer in check-only
# mode, once per configuration (the lab's SANITIZE arguments in kit_add_lab:
# data types and sizes that are not multiples of a block or tile).
include("${CMAKE_CURRENT_LIST_DIR}/KitCriterionJson.cmake")
kit_require_sanitizer("${RUNNER}" "${SANITIZER}" ready)
if(NOT ready)
  return()
endif()
set(failures "")
# memcheck as the grader runs it (kit_sanitizer_tool: exact buffers, padding)
kit_sanitizer_tool(${TOOL} env options)
string(REPLACE "|" ";" CONFIGS "${CONFIGS}")
foreach(config IN LISTS CONFIGS)
  separate_arguments(args UNIX_COMMAND "${config}")
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -E env ${env} "${SANITIZER}" --tool ${TOOL} ${options} --error-exitcode 99 --print-limit 20
            "${RUNNER}" --step all ${args} --check-only
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 800)
  string(REGEX MATCHALL "[^\n]*(ERROR SUMMARY|RACECHECK SUMMARY)[^\n]*" summary "${out}${err}")
  message("${TOOL} ${config}: exit ${rc}; ${summary}")
  if(NOT rc EQUAL 0)
    string(APPEND failures "--- ${TOOL} ${config} (exit ${rc}):\n${out}${err}\n")
  endif()
endforeach()
if(failures)
  message(FATAL_ERROR "compute-sanitizer ${TOOL} found problems:\n${failures}")
endif()
