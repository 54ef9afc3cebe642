# Usage: cmake -DTOOL=memcheck|racecheck|synccheck|initcheck -DSANITIZER=<path>
#              -DRUNNER=<lab runner> -P run_sanitizer.cmake
# Runs every step of a lab's runner under compute-sanitizer, for int and
# float data at sizes that are not multiples of a block, in check-only mode.
include("${CMAKE_CURRENT_LIST_DIR}/KitCriterionJson.cmake")
kit_require_sanitizer("${RUNNER}" "${SANITIZER}" ready)
if(NOT ready)
  return()
endif()
set(failures "")
foreach(config "int;1000003" "float;70001" "int;33")
  list(GET config 0 type)
  list(GET config 1 n)
  execute_process(
    COMMAND "${SANITIZER}" --tool ${TOOL} --error-exitcode 99 --print-limit 20
            "${RUNNER}" --step all --type ${type} --n ${n} --check-only
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 800)
  string(REGEX MATCHALL "[^\n]*(ERROR SUMMARY|RACECHECK SUMMARY)[^\n]*" summary "${out}${err}")
  message("${TOOL} --type ${type} --n ${n}: exit ${rc}; ${summary}")
  if(NOT rc EQUAL 0)
    string(APPEND failures "--- ${TOOL} --type ${type} --n ${n} (exit ${rc}):\n${out}${err}\n")
  endif()
endforeach()
if(failures)
  message(FATAL_ERROR "compute-sanitizer ${TOOL} found problems:\n${failures}")
endif()
