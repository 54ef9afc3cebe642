# Usage: cmake -DENTRIES="lab=bin|bin^lab=bin..." -DSOURCE_DIR=<kit> -DWORK=<dir>
#              [-DBUILD_DIR=<build>] -P progress_all.cmake
# `cmake --build --preset progress` (after the build): each lab's steps on the
# student's files, one line per step, then one line per lab. LAB (from the
# environment variable LAB) picks the labs whose name contains it.
string(REPLACE "^" ";" entries "${ENTRIES}")
set(LAB "$ENV{LAB}")  # read when it runs, not when the build was configured
set(summary "")
foreach(entry IN LISTS entries)
  string(REGEX REPLACE "=.*" "" lab "${entry}")
  string(REGEX REPLACE "^[^=]*=" "" bins "${entry}")
  if(LAB AND NOT lab MATCHES "${LAB}")
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
