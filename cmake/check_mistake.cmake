# Usage: cmake -DINFO=<mistake.cmake> -DTESTS="<test binary>|<test binary>..."
#              -DRUNNER=<runner> -DRUNNER_ARGS="<args>" -DSANITIZER=<path>
#              [-DCPU=ON] -DWORK=<dir> -P check_mistake.cmake
# Proves that one cataloged mistake (built from the reference solution by
# labtool mutate-lab) is caught: by failing tests with the expected message
# (the test binaries are the lab's host model tests, if any, and its GPU
# tests; without a GPU only the host ones can report), by the named
# compute-sanitizer tool, or by the hardware counters the runner reads with
# Nsight Compute (`RUNNER --step N --counters`).
# With -DCPU=ON the binaries are the CPU path's (common/cpu), which need no
# GPU and never skip: "tests" as above; "racecheck" by the CPU race check
# (CML_CPU_CHECK=race); "memcheck" by the CPU path's bounds report;
# "counters" by its bank accounting (CML_CPU_CHECK=banks and the runner's
# --counters). A check the CPU path cannot make fails; it is never skipped.
include("${CMAKE_CURRENT_LIST_DIR}/KitCriterionJson.cmake")
include("${INFO}")
file(MAKE_DIRECTORY "${WORK}")
message("mistake ${MISTAKE_NAME} (step ${MISTAKE_STEP}): ${MISTAKE_SUMMARY}")

separate_arguments(RUNNER_ARGS UNIX_COMMAND "${RUNNER_ARGS}")

# gpu_only (catalogue): no test of the CPU path can catch it (e.g. lab 04's
# tests past 2^31 elements exist on a GPU only). Its twin here holds the
# other half: the step's tests on the CPU path pass, so the mutation breaks
# nothing it does not say (a failure means the catalogue is wrong: it is
# caught here after all, or breaks more than its step).
if(CPU AND MISTAKE_GPU_ONLY)
  string(REPLACE "|" ";" TESTS "${TESTS}")
  set(KIT_CRITERION_ARGS "--filter=step${MISTAKE_STEP}/*")
  set(index 0)
  foreach(binary IN LISTS TESTS)
    math(EXPR index "${index} + 1")
    kit_run_criterion("${binary}" "${WORK}/gpu_only${index}.json" have_report rc)
    kit_read_criterion_json("${WORK}/gpu_only${index}.json" B)
    if(B_FAILED OR B_ERRORED OR NOT rc EQUAL 0)
      set(all_messages "${B_MESSAGES}")
      kit_message_text(all_messages)
      message(FATAL_ERROR "the catalogue says only a GPU catches this mistake (gpu_only), but step ${MISTAKE_STEP}'s "
                          "tests fail on the CPU path (exit ${rc}): ${B_FAILED} ${B_ERRORED}\n${all_messages}")
    endif()
  endforeach()
  message("not caught on the CPU path, as the catalogue says: ${MISTAKE_GPU_ONLY}. Step ${MISTAKE_STEP}'s tests "
          "pass here (${KIT_CRITERION_SYNTHESIS}); its GPU twin, this test's name without .cpu, must catch it")
  return()
endif()

# The runner's --counters output holds the line the catalogue expects.
function(_kit_expect_counters out all by)
  if(NOT out MATCHES "${MISTAKE_EXPECT_MESSAGE}")
    message(FATAL_ERROR "NOT CAUGHT: the ${by} do not match '${MISTAKE_EXPECT_MESSAGE}':\n${all}")
  endif()
  string(REGEX MATCH "[^\n]*${MISTAKE_EXPECT_MESSAGE}[^\n]*" first "${out}")
  message("caught by the ${by}:\n  ${first}")
endfunction()
if(MISTAKE_CAUGHT_BY STREQUAL "tests")
  string(REPLACE "|" ";" TESTS "${TESTS}")
  set(R_FAILED "")
  set(R_ERRORED "")
  set(R_MESSAGES "")
  set(skips "")
  set(index 0)
  set(reported FALSE)
  set(KIT_QUIET_SKIP TRUE)
  set(KIT_SKIP_WHY "")
  # On the CPU path only the step's suite runs when the catalogue names one
  # ("^stepN::"): the test that must catch the mistake is there, and the
  # other suites at CPU speed would only add minutes.
  if(CPU AND MISTAKE_EXPECT_FAILING MATCHES "^\\^(step[0-9]+)::$")
    set(KIT_CRITERION_ARGS "--filter=${CMAKE_MATCH_1}/*")
  endif()
  foreach(binary IN LISTS TESTS)
    math(EXPR index "${index} + 1")
    kit_run_criterion("${binary}" "${WORK}/tests${index}.json" have_report rc)
    if(have_report)
      kit_read_criterion_json("${WORK}/tests${index}.json" B)
      list(APPEND R_FAILED ${B_FAILED})
      list(APPEND R_ERRORED ${B_ERRORED})
      list(APPEND R_MESSAGES ${B_MESSAGES})
      set(reported TRUE)
    endif()
  endforeach()
  if(NOT reported)
    message("KIT-SKIP: ${KIT_SKIP_WHY}")  # every binary skipped: no GPU
    return()
  endif()
  set(caught_by "")
  foreach(t IN LISTS R_FAILED R_ERRORED)
    if(t MATCHES "${MISTAKE_EXPECT_FAILING}")
      list(APPEND caught_by "${t}")
    endif()
  endforeach()
  if(NOT caught_by AND KIT_SKIP_WHY)
    message("KIT-SKIP: ${KIT_SKIP_WHY} (the tests that run here pass; the GPU tests must catch it)")
    return()
  endif()
  if(NOT caught_by)
    message(FATAL_ERROR "NOT CAUGHT: no failing test matches '${MISTAKE_EXPECT_FAILING}'.\n"
                        "failing: ${R_FAILED} ${R_ERRORED}")
  endif()
  set(evidence "")
  foreach(m IN LISTS R_MESSAGES)
    kit_message_text(m)
    if(m MATCHES "${MISTAKE_EXPECT_MESSAGE}")
      set(evidence "${m}")
      break()
    endif()
  endforeach()
  if(NOT evidence)
    set(all_messages "${R_MESSAGES}")
    kit_message_text(all_messages)
    message(FATAL_ERROR "the tests fail (${caught_by}) but no message matches '${MISTAKE_EXPECT_MESSAGE}':\n"
                        "the feedback does not point at the mistake.\nmessages:\n${all_messages}")
  endif()
  list(LENGTH caught_by ncaught)
  message("caught by ${ncaught} failing test(s), e.g. ${evidence}")
elseif(CPU)
  include("${CMAKE_CURRENT_LIST_DIR}/check_mistake_cpu.cmake")
elseif(MISTAKE_CAUGHT_BY STREQUAL "counters")
  kit_require_gpu("${RUNNER}" have_gpu)
  if(NOT have_gpu)
    return()
  endif()
  execute_process(COMMAND "${RUNNER}" --step ${MISTAKE_STEP} --counters
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 800)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${RUNNER} --step ${MISTAKE_STEP} --counters failed (exit ${rc}):\n${out}${err}")
  endif()
  if(out MATCHES "counters not available[^\n]*")
    message("KIT-SKIP: ${CMAKE_MATCH_0}")
    return()
  endif()
  _kit_expect_counters("${out}" "${out}${err}" "hardware counters (Nsight Compute)")
else()
  kit_require_sanitizer("${RUNNER}" "${SANITIZER}" ready)
  if(NOT ready)
    return()
  endif()
  kit_sanitizer_tool(${MISTAKE_CAUGHT_BY} env options)   # as the grader runs the tool
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -E env ${env} "${SANITIZER}" --tool ${MISTAKE_CAUGHT_BY} ${options} --error-exitcode 99 --print-limit 5
            "${RUNNER}" --step ${MISTAKE_STEP} ${RUNNER_ARGS} --check-only
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
