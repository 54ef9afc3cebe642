# Read a Criterion JSON report (--json=FILE) into lists a check script can use:
#   <prefix>_TOTAL, <prefix>_PASSED, <prefix>_FAILED (list of "suite::test"),
#   <prefix>_ERRORED (crashed or timed out), <prefix>_SKIPPED, <prefix>_MESSAGES
#   (one "suite::test: message" entry per failure message; its brackets
#   stand in for by placeholders: kit_message_text gives the message as written).
function(kit_read_criterion_json file prefix)
  file(READ "${file}" json)
  set(passed "")
  set(failed "")
  set(errored "")
  set(skipped "")
  set(messages "")
  set(total 0)
  string(JSON nsuites LENGTH "${json}" test_suites)
  if(nsuites GREATER 0)
    math(EXPR last_suite "${nsuites} - 1")
    foreach(s RANGE ${last_suite})
      string(JSON suite GET "${json}" test_suites ${s} name)
      string(JSON ntests LENGTH "${json}" test_suites ${s} tests)
      if(ntests EQUAL 0)
        continue()
      endif()
      math(EXPR last_test "${ntests} - 1")
      foreach(t RANGE ${last_test})
        math(EXPR total "${total} + 1")
        string(JSON name GET "${json}" test_suites ${s} tests ${t} name)
        string(JSON status GET "${json}" test_suites ${s} tests ${t} status)
        set(id "${suite}::${name}")
        if(status STREQUAL "PASSED")
          list(APPEND passed "${id}")
        elseif(status STREQUAL "SKIPPED")
          list(APPEND skipped "${id}")
        elseif(status STREQUAL "ERRORED")
          list(APPEND errored "${id}")
        else()
          list(APPEND failed "${id}")
        endif()
        string(JSON nmsg ERROR_VARIABLE no_msgs LENGTH "${json}" test_suites ${s} tests ${t} messages)
        if(NOT no_msgs AND nmsg GREATER 0)
          math(EXPR last_msg "${nmsg} - 1")
          foreach(m RANGE ${last_msg})
            string(JSON msg GET "${json}" test_suites ${s} tests ${t} messages ${m})
            string(REPLACE ";" "," msg "${msg}")
            # an unbalanced [ or ] (a range "[1, 2)") would make CMake's list
            # splitting run the later messages into this one: kept out of it,
            # kit_message_text gives them back
            string(REPLACE "[" "@KIT_LB@" msg "${msg}")
            string(REPLACE "]" "@KIT_RB@" msg "${msg}")
            list(APPEND messages "${id}: ${msg}")
          endforeach()
        endif()
      endforeach()
    endforeach()
  endif()
  foreach(v total passed failed errored skipped messages)
    string(TOUPPER "${v}" V)
    set(${prefix}_${V} "${${v}}" PARENT_SCOPE)
  endforeach()
endfunction()

# <var> (an entry of <prefix>_MESSAGES) as the test wrote it, its brackets back.
function(kit_message_text var)
  string(REPLACE "@KIT_LB@" "[" text "${${var}}")
  string(REPLACE "@KIT_RB@" "]" text "${text}")
  set(${var} "${text}" PARENT_SCOPE)
endfunction()

# Ask a runner whether a usable GPU is present. Sets <out_var> to TRUE when
# there is one; otherwise prints the "KIT-SKIP:" line (the test is reported as
# skipped by CTest) with the runner's reason.
function(kit_require_gpu runner out_var)
  execute_process(COMMAND "${runner}" --probe RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  if(rc EQUAL 0)
    set(${out_var} TRUE PARENT_SCOPE)
  elseif(rc EQUAL 77)
    string(STRIP "${out}${err}" why)
    message("KIT-SKIP: ${why}")
    set(${out_var} FALSE PARENT_SCOPE)
  else()
    message(FATAL_ERROR "${runner} --probe failed (exit ${rc}):\n${out}${err}")
  endif()
endfunction()

# Run a Criterion test binary with a JSON report. Sets <out_var> to TRUE when
# a report was written and the caller should read it; prints "KIT-SKIP:" and
# sets FALSE when every test skipped (no GPU; the reason goes to KIT_SKIP_WHY,
# and is printed unless KIT_QUIET_SKIP is set); stops with an error when the
# binary wrote no report, or skipped while the script runs with -DCPU=ON (a
# CPU-path binary never skips). <rc_var> gets the exit status.
# KIT_CRITERION_ARGS, when set, are more arguments for the binary (--filter);
# KIT_CRITERION_SYNTHESIS gets Criterion's closing "[====] Synthesis:" line.
function(kit_run_criterion tests report out_var rc_var)
  file(REMOVE "${report}")
  if(NOT EXISTS "${tests}")
    # beside a CUDA build a student's CPU-path programs are not in the default
    # build: the test workflow builds them (target student-cpu)
    get_filename_component(name "${tests}" NAME)
    message(FATAL_ERROR "${tests} is not built: cmake --build <build> --target ${name} "
                        "(or run the tests with cmake --workflow --preset test, which builds it)")
  endif()
  execute_process(COMMAND "${tests}" "--json=${report}" ${KIT_CRITERION_ARGS}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 850)
  set(${rc_var} "${rc}" PARENT_SCOPE)
  # Criterion's closing line, for the caller to show in the log.
  string(REGEX MATCH "\\[====\\] Synthesis:[^\n]*" synthesis "${out}${err}")
  set(KIT_CRITERION_SYNTHESIS "${synthesis}" PARENT_SCOPE)
  if(rc EQUAL 77 AND CPU)
    # -DCPU=ON: a binary of the CPU path, which needs no GPU and never skips.
    message(FATAL_ERROR "${tests} (CPU path) skipped every test (exit 77); it must run them:\n${out}${err}")
  endif()
  if(rc EQUAL 77)
    string(REGEX MATCH "no CUDA device[^\n]*" why "${out}${err}")
    set(KIT_SKIP_WHY "${why}" PARENT_SCOPE)
    if(NOT KIT_QUIET_SKIP)
      message("KIT-SKIP: ${why}")
    endif()
    set(${out_var} FALSE PARENT_SCOPE)
    return()
  endif()
  if(NOT EXISTS "${report}")
    message(FATAL_ERROR "${tests} wrote no report (exit ${rc}): it crashed or hung outside a test\n${out}${err}")
  endif()
  set(${out_var} TRUE PARENT_SCOPE)
endfunction()

# A usable GPU and compute-sanitizer, or a "KIT-SKIP:" line saying which is missing.
function(kit_require_sanitizer runner sanitizer out_var)
  kit_require_gpu("${runner}" have_gpu)
  if(have_gpu AND NOT sanitizer)
    message("KIT-SKIP: compute-sanitizer was not found next to nvcc")
    set(have_gpu FALSE)
  endif()
  set(${out_var} ${have_gpu} PARENT_SCOPE)
endfunction()

# How the kit runs a compute-sanitizer tool, as the grader does
# (grader/cmlgrade/run.py: EXACT_BUFFERS, TOOL_OPTIONS): for memcheck, the
# runner's buffers at exactly their sizes (cml_buffer.h: a read past an
# input's end is outside the allocation) and memcheck's own padding after
# every allocation (small allocations lie side by side: without it such a
# read lands in the next one). Sets env_var (for cmake -E env) and
# options_var (after --tool).
function(kit_sanitizer_tool tool env_var options_var)
  if(tool STREQUAL "memcheck")
    set(${env_var} CML_EXACT_BUFFERS=1 PARENT_SCOPE)
    set(${options_var} --padding 1048576 PARENT_SCOPE)
  else()
    set(${env_var} "" PARENT_SCOPE)
    set(${options_var} "" PARENT_SCOPE)
  endif()
endfunction()
