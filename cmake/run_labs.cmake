# Usage: cmake -DRUNNERS="lab=path|lab=path" -P run_labs.cmake
# The kit's main job: every built lab's reference runner, all steps, with the
# results table. Without a GPU it says so and what still works.
string(REPLACE "|" ";" runners "${RUNNERS}")
set(failed "")
foreach(entry IN LISTS runners)
  string(REGEX REPLACE "=.*" "" lab "${entry}")
  string(REGEX REPLACE "^[^=]*=" "" runner "${entry}")
  message("==> ${lab}: ${runner} --step all")
  execute_process(COMMAND "${runner}" --step all RESULT_VARIABLE rc)
  if(rc EQUAL 77)
    message("\nNo usable CUDA device, so no lab was run. What works without a GPU:\n"
            "  - building everything (you just did),\n"
            "  - the host tests:  ctest --preset host\n"
            "  - lab 01's part 1, the bank model:  ctest --preset progress -R model,\n"
            "    and its predictions per pattern:  ./build/banks_run --model\n"
            "  - the CPU references, data generators and skeleton checks (part of the host tests)\n"
            "See README.md, section \"Without a GPU\".")
    return()
  elseif(NOT rc EQUAL 0)
    list(APPEND failed "${lab} (exit ${rc})")
  endif()
endforeach()
if(failed)
  message(FATAL_ERROR "runner failed: ${failed}")
endif()
