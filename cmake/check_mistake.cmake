# Usage: cmake -DINFO=<mistake.cmake> -DTESTS=<test binary> -DRUNNER=<runner>
#              -DSANITIZER=<path> -DWORK=<dir> -P check_mistake.cmake
# Proves that one cataloged mistake (built from the reference solution by
# labtool mutate) is caught: by failing tests with the expected message, or by
# the named compute-sanitizer tool.
include("${CMAKE_CURRENT_LIST_DIR}/KitCriterionJson.cmake")
include("${INFO}")
message("mistake ${MISTAKE_NAME} (step ${MISTAKE_STEP}): ${MISTAKE_SUMMARY}")

if(MISTAKE_CAUGHT_BY STREQUAL "tests")
  kit_run_criterion("${TESTS}" "${WORK}/tests.json" have_report rc)
  if(NOT have_report)
    return()
  endif()
  kit_read_criterion_json("${WORK}/tests.json" R)
  set(caught_by "")
  foreach(t IN LISTS R_FAILED R_ERRORED)
    if(t MATCHES "${MISTAKE_EXPECT_FAILING}")
      list(APPEND caught_by "${t}")
    endif()
  endforeach()
  if(NOT caught_by)
    message(FATAL_ERROR "NOT CAUGHT: no failing test matches '${MISTAKE_EXPECT_FAILING}'.\n"
                        "failing: ${R_FAILED} ${R_ERRORED}")
  endif()
  set(evidence "")
  foreach(m IN LISTS R_MESSAGES)
    if(m MATCHES "${MISTAKE_EXPECT_MESSAGE}")
      set(evidence "${m}")
      break()
    endif()
  endforeach()
  if(NOT evidence)
    message(FATAL_ERROR "the tests fail (${caught_by}) but no message matches '${MISTAKE_EXPECT_MESSAGE}':\n"
                        "the feedback does not point at the mistake.\nmessages:\n${R_MESSAGES}")
  endif()
  list(LENGTH caught_by ncaught)
  message("caught by ${ncaught} failing test(s), e.g. ${evidence}")
else()
  kit_require_sanitizer("${RUNNER}" "${SANITIZER}" ready)
  if(NOT ready)
    return()
  endif()
  execute_process(
    COMMAND "${SANITIZER}" --tool ${MISTAKE_CAUGHT_BY} --error-exitcode 99 --print-limit 5
            "${RUNNER}" --step ${MISTAKE_STEP} --type int --n 100003 --check-only
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 800)
  if(NOT rc EQUAL 99)
    message(FATAL_ERROR "NOT CAUGHT: compute-sanitizer ${MISTAKE_CAUGHT_BY} reported nothing (exit ${rc}):\n${out}${err}")
  endif()
  if(NOT "${out}${err}" MATCHES "${MISTAKE_EXPECT_MESSAGE}")
    message(FATAL_ERROR "${MISTAKE_CAUGHT_BY} fails, but its report does not match '${MISTAKE_EXPECT_MESSAGE}':\n${out}${err}")
  endif()
  string(REGEX MATCH "[^\n]*${MISTAKE_EXPECT_MESSAGE}[^\n]*" first "${out}${err}")
  string(REGEX MATCH "[^\n]*at [^\n]*\\.cu:[0-9]+[^\n]*" where "${out}${err}")
  message("caught by compute-sanitizer ${MISTAKE_CAUGHT_BY}:\n  ${first}\n  ${where}")
endif()
