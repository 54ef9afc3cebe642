# kit_build_on_demand(<program> <ok var> <why var>): builds the target that
# makes <program> (its file name) in the build folder BUILD_DIR. Progress
# builds a lab's test programs with it when it shows that lab (progress_all),
# and on a CUDA build a student's CPU-path programs (names ending in _cpu,
# left out of the default build, so that a file the CPU path cannot compile
# never stops the GPU build) only where no GPU could run the tests. <why var> gets the reason when the build fails (the CPU
# path's "cannot run" message, or the first compiler error).
function(kit_build_on_demand program ok_var why_var)
  set(${ok_var} TRUE PARENT_SCOPE)
  set(${why_var} "" PARENT_SCOPE)
  if(NOT BUILD_DIR)
    return()
  endif()
  get_filename_component(target "${program}" NAME)
  execute_process(COMMAND "${CMAKE_COMMAND}" --build "${BUILD_DIR}" --target "${target}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0)
    return()
  endif()
  set(${ok_var} FALSE PARENT_SCOPE)
  string(REGEX MATCH "the CPU path cannot run[^\n\"]*" why "${out}${err}")
  if(NOT why)
    string(REGEX MATCH "[^\n]*error[^\n]*" why "${out}${err}")
  endif()
  if(NOT why)
    set(why "the build of ${target} failed (exit ${rc})")
  endif()
  string(STRIP "${why}" why)
  set(${why_var} "${why}" PARENT_SCOPE)
endfunction()
