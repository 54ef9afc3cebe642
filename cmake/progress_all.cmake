# Usage: cmake -DENTRIES="lab=bin|bin^lab=bin..." -DSOURCE_DIR=<kit> -DWORK=<dir>
#              [-DBUILD_DIR=<build>] -P progress_all.cmake
# `cmake --build --preset progress`: builds the test programs of the labs it
# shows (only those: LAB=04 builds lab 04's), then each lab's steps on the
# student's files, one line per step, and one line per lab. LAB (from the
# environment variable LAB) picks the labs whose name contains it. (The
# CPU path's programs are built where they are needed: student_progress.)
include("${CMAKE_CURRENT_LIST_DIR}/KitOnDemand.cmake")
string(REPLACE "^" ";" entries "${ENTRIES}")
set(LAB "$ENV{LAB}")  # read when it runs, not when the build was configured
set(summary "")
foreach(entry IN LISTS entries)
  string(REGEX REPLACE "=.*" "" lab "${entry}")
  string(REGEX REPLACE "^[^=]*=" "" bins "${entry}")
  if(LAB AND NOT lab MATCHES "${LAB}")
    continue()
  endif()
  # this lab's test programs, built now (a compiler error is this lab's result)
  string(REPLACE "|" ";" programs "${bins}")
  set(why "")
  foreach(p IN LISTS programs)
    if(NOT p MATCHES "_cpu$" AND NOT why)
      get_filename_component(name "${p}" NAME)
      message("${lab}: building your files (${name})")
      kit_build_on_demand("${p}" built why)
    endif()
  endforeach()
  if(why)
    message("${lab}: does not build: ${why}\n(all of the compiler's messages: cmake --build ${BUILD_DIR})\n")
    list(APPEND summary "${lab}: does not build")
    continue()
  endif()
  execute_process(COMMAND "${CMAKE_COMMAND}" "-DTESTS=${bins}" "-DMANIFEST=${SOURCE_DIR}/labs/${lab}/lab.json"
                          "-DBUILD_DIR=${BUILD_DIR}"
                          "-DWORK=${WORK}/${lab}" -P "${CMAKE_CURRENT_LIST_DIR}/student_progress.cmake"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  # Keep the per-step lines; drop CMake's framing of "not finished yet".
  string(REGEX REPLACE "CMake Error at .*" "" err "${err}")
  string(REGEX MATCH "[^\n]*steps done[^\n]*" line "${err}")
  string(STRIP "${out}${err}" text)
  message("${text}\n")
  if(line)
    list(APPEND summary "${line}")
  endif()
endforeach()
if(NOT summary)
  message(FATAL_ERROR "no lab matched LAB='${LAB}'")
endif()
message("Summary:")
foreach(line IN LISTS summary)
  message("  ${line}")
endforeach()
