# Usage: cmake -DRUNNER=<lab 06's reference runner on the CPU path>
#              -DARGS="<sizes>" -DWORK=<dir> [-DPYTHON=<python3>]
#              [-DWRONG_RUNNER=<the runner of a mistake whose step 3 is wrong>] -P check_cpu_picture.cmake
# A runner's --picture end to end (common/cpu/README.md, "Access pictures"):
# `RUNNER --step 3 --picture FILE ARGS` (the plain 32x32 tile) must exit 0
# and write an SVG whose shared panel draws a load at 32-way (32 wavefronts
# for one request, ideal 1) and whose global panel says 4 sectors per request;
# step 4 (the padded tile) must draw a load at degree 1; --picture with
# --step all or --json must be refused (exit 2). With PYTHON, each SVG must
# also parse as XML. With WRONG_RUNNER, its step 3 (a wrong result) must
# still be drawn, titled "a WRONG result", and exit 1.
separate_arguments(args UNIX_COMMAND "${ARGS}")
get_filename_component(name "${RUNNER}" NAME)
file(MAKE_DIRECTORY "${WORK}")
set(problems "")

# The value of attribute NAME in the panel tag of SPACE ("" when missing).
function(panel_attr svg space attr out)
  string(REGEX MATCH "<g class=\"panel\" data-space=\"${space}\"[^>]*>" tag "${svg}")
  string(REGEX MATCH " ${attr}=\"([^\"]*)\"" m "${tag}")
  set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

function(expect_attr svg space attr want label)
  panel_attr("${svg}" ${space} ${attr} got)
  message("${label}: ${space} ${attr} = \"${got}\" (expected \"${want}\")")
  if(NOT got STREQUAL "${want}")
    list(APPEND problems "${label}: ${space} panel ${attr} is \"${got}\", expected \"${want}\"")
    set(problems "${problems}" PARENT_SCOPE)
  endif()
endfunction()

foreach(step 3 4)
  set(svg_file "${WORK}/step${step}.svg")
  file(REMOVE "${svg_file}")
  execute_process(COMMAND "${RUNNER}" --step ${step} --picture "${svg_file}" ${args}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 600)
  message("${name} --step ${step} --picture ${svg_file} ${ARGS}: exit ${rc}\n${out}${err}")
  if(NOT rc EQUAL 0 OR NOT EXISTS "${svg_file}")
    list(APPEND problems "step ${step}: exit ${rc}, no SVG")
    continue()
  endif()
  message("wrote ${svg_file}")
  file(READ "${svg_file}" svg)
  string(LENGTH "${svg}" bytes)
  if(bytes GREATER 100000)
    list(APPEND problems "step ${step}: the SVG is ${bytes} bytes (over 100 KB)")
  endif()
  if(NOT out MATCHES "drawn in ${svg_file}")
    list(APPEND problems "step ${step}: the summary does not name the file it wrote")
  endif()
  if(PYTHON)
    execute_process(COMMAND "${PYTHON}" -c "import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])"
      "${svg_file}" RESULT_VARIABLE xml_rc ERROR_VARIABLE xml_err)
    if(NOT xml_rc EQUAL 0)
      list(APPEND problems "step ${step}: not valid XML: ${xml_err}")
    endif()
  endif()
  expect_attr("${svg}" shared data-op ld "step ${step}")
  expect_attr("${svg}" shared data-worst-ideal 1 "step ${step}")
  expect_attr("${svg}" global data-sectors-per-request 4.00 "step ${step}")
  expect_attr("${svg}" global data-ideal-per-request 4.00 "step ${step}")
  if(step EQUAL 3)
    expect_attr("${svg}" shared data-degree 32 "step 3 (plain tile: the column read)")
    expect_attr("${svg}" shared data-worst-wavefronts 32 "step 3")
    if(NOT svg MATCHES "32-way bank conflict")
      list(APPEND problems "step 3: the caption does not say 32-way")
    endif()
  else()
    expect_attr("${svg}" shared data-degree 1 "step 4 (padded tile: the column read)")
    expect_attr("${svg}" shared data-worst-wavefronts 1 "step 4")
  endif()
endforeach()

# One step, alone.
foreach(bad "--step;all" "--step;3;--json" "--step;3-4")
  execute_process(COMMAND "${RUNNER}" ${bad} --picture "${WORK}/refused.svg" ${args}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
  string(REPLACE ";" " " shown "${bad}")
  message("${name} ${shown} --picture: exit ${rc}: ${err}")
  if(NOT rc EQUAL 2 OR NOT err MATCHES "--picture")
    list(APPEND problems "${shown} --picture: exit ${rc}, expected 2 with a message naming --picture")
  endif()
endforeach()

# A wrong step: still drawn (what it touched), marked, exit 1.
if(WRONG_RUNNER)
  set(svg_file "${WORK}/wrong3.svg")
  file(REMOVE "${svg_file}")
  execute_process(COMMAND "${WRONG_RUNNER}" --step 3 --picture "${svg_file}" ${args}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 600)
  message("${WRONG_RUNNER} --step 3 --picture: exit ${rc}\n${out}${err}")
  if(NOT rc EQUAL 1 OR NOT EXISTS "${svg_file}")
    list(APPEND problems "a wrong step 3: exit ${rc} (expected 1) and the picture must still be drawn")
  else()
    file(READ "${svg_file}" svg)
    if(NOT svg MATCHES "step 3 \\(tile\\), a WRONG result")
      list(APPEND problems "a wrong step 3's picture is not titled 'a WRONG result'")
    endif()
    if(NOT err MATCHES "is WRONG" OR NOT out MATCHES "does not work yet")
      list(APPEND problems "a wrong step 3: the runner does not say the result is wrong")
    endif()
  endif()
endif()

if(problems)
  string(REPLACE ";" "\n  " problems "${problems}")
  message(FATAL_ERROR "${name} --picture:${problems}")
endif()
