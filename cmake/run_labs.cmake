# Usage: cmake -DRUNNERS="lab=path[=cpu path]|..." -DSOURCE_DIR=<kit> [-DBUILD_DIR=<build>]
#              -P run_labs.cmake
include("${CMAKE_CURRENT_LIST_DIR}/KitOnDemand.cmake")
# The kit's main job: every built lab's runner, all steps, with the results
# table. Without a usable GPU the CPU path's runner (common/cpu) runs instead,
# at the manifest's small sanitize sizes, its times labelled emulated;
# without either it says so, and what still works, from the manifests.
string(REPLACE "|" ";" runners "${RUNNERS}")
set(failed "")
set(no_gpu "")
set(cpu_note "")
foreach(entry IN LISTS runners)
  # lab=<runner>[=<the same on the CPU path>]
  string(REGEX REPLACE "=.*" "" lab "${entry}")
  string(REGEX REPLACE "^[^=]*=" "" paths "${entry}")
  string(REPLACE "=" ";" paths "${paths}")
  set(rc 77)
  foreach(runner IN LISTS paths)
    get_filename_component(name "${runner}" NAME)
    if(name MATCHES "_cpu$" AND NOT rc EQUAL 77)
      break()  # the GPU build ran
    endif()
    set(args "")
    if(name MATCHES "_cpu$")
      # The GPU sizes would take hours on a CPU: the manifest's first
      # "sanitize" arguments (small, awkward sizes) and 5 timed runs.
      file(READ "${SOURCE_DIR}/labs/${lab}/lab.json" json)
      string(JSON args GET "${json}" sanitize 0)
      string(APPEND args " --repeat 5")
    endif()
    if(name MATCHES "_cpu$")   # a student's, beside a CUDA build: built only now (KitOnDemand.cmake)
      kit_build_on_demand("${runner}" built why)
      if(NOT built)
        message("==> ${lab}: ${name} could not be built: ${why}")
        list(APPEND failed "${lab} (the CPU path could not build it)")
        set(no_gpu "")
        break()
      endif()
    endif()
    message("==> ${lab}: ${name} --step all ${args}")
    separate_arguments(args UNIX_COMMAND "${args}")
    # The table on stdout and the messages on stderr are printed apart, so a
    # message never lands inside a table row on a terminal.
    execute_process(COMMAND "${runner}" --step all ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(out)
      message("${out}")
    endif()
    if(rc EQUAL 77)
      string(STRIP "${err}" no_gpu)
      continue()
    endif()
    if(name MATCHES "_cpu$")
      set(cpu_note "The labs ran on the CPU path (common/cpu): checks as on a GPU, times emulated (not a GPU's).")
      set(no_gpu "")
    endif()
    if(err)
      message("${err}")
    endif()
    if(NOT rc EQUAL 0)
      list(APPEND failed "${lab} (exit ${rc})")
    endif()
  endforeach()
  if(no_gpu)
    break()
  endif()
endforeach()
if(cpu_note)
  message("${cpu_note}")
endif()

if(no_gpu)
  set(model_lines "")
  file(GLOB manifests "${SOURCE_DIR}/labs/*/lab.json")
  list(SORT manifests)
  foreach(m IN LISTS manifests)
    file(READ "${m}" json)
    string(JSON model ERROR_VARIABLE e GET "${json}" model)
    if(model)
      string(JSON lab GET "${json}" name)
      string(JSON stem GET "${json}" stem)
      string(APPEND model_lines
        "  - ${lab}'s part without a GPU (${model}): LAB=${lab} cmake --build --preset progress,\n"
        "    and its predictions:  ./build/${stem}_run --model\n")
    endif()
  endforeach()
  message("${no_gpu}\n\nNo usable CUDA device, so no lab was run. What works without a GPU:\n"
          "  - building everything (you just did),\n"
          "  - the kit's host tests:  ctest --preset host\n"
          "${model_lines}"
          "  - the CPU references, data generators and skeleton checks (part of the host tests)\n"
          "See README.md, section \"Without a GPU\".")
  return()
endif()
if(failed)
  message(FATAL_ERROR "runner failed: ${failed}")
endif()
