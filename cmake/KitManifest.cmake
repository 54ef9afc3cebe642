# Reads a lab's manifest, labs/<lab>/lab.json (docs/lab-manifest.md), the one
# place a lab's identity and shape are written. Everything the build makes for
# a lab comes from here: targets, tests, the generated step table
# (<stem>_steps.h) and the kit's description for the grader and the tools
# (<build>/kit/labs.json).

# _kit_json(<out> <json> <key>...): the value at the path, or "" when absent.
function(_kit_json out json)
  string(JSON value ERROR_VARIABLE err GET "${json}" ${ARGN})
  if(err)
    set(value "")
  endif()
  set(${out} "${value}" PARENT_SCOPE)
endfunction()

function(_kit_manifest_fail path what)
  message(FATAL_ERROR "${path}: ${what}\n(the format is in docs/lab-manifest.md)")
endfunction()

# _kit_json_list(<out> <json> <key>): a JSON array of strings as a CMake list.
function(_kit_json_list out json key path)
  set(items "")
  string(JSON type ERROR_VARIABLE err TYPE "${json}" ${key})
  if(err)
    set(${out} "" PARENT_SCOPE)
    return()
  endif()
  if(NOT type STREQUAL "ARRAY")
    _kit_manifest_fail("${path}" "\"${key}\" must be a list of strings")
  endif()
  string(JSON n LENGTH "${json}" ${key})
  if(n GREATER 0)
    math(EXPR last "${n} - 1")
    foreach(i RANGE ${last})
      string(JSON item GET "${json}" ${key} ${i})
      if(item MATCHES ";")
        _kit_manifest_fail("${path}" "\"${key}\" entry '${item}' must not contain ';'")
      endif()
      list(APPEND items "${item}")
    endforeach()
  endif()
  set(${out} "${items}" PARENT_SCOPE)
endfunction()

# _kit_json_optional(<count var> <json> <key> OBJECT|ARRAY <path> <message>):
# the members of an optional key (0 when it is absent); a value of another
# type stops configure with <message>.
function(_kit_json_optional out json key want path message)
  set(${out} 0 PARENT_SCOPE)
  string(JSON type ERROR_VARIABLE err TYPE "${json}" ${key})
  if(err)
    return()
  endif()
  if(NOT type STREQUAL want)
    _kit_manifest_fail("${path}" "${message}")
  endif()
  string(JSON n LENGTH "${json}" ${key})
  set(${out} ${n} PARENT_SCOPE)
endfunction()

# C string literal of a text (backslashes and quotes escaped).
function(_kit_c_string out text)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REPLACE "\"" "\\\"" text "${text}")
  set(${out} "\"${text}\"" PARENT_SCOPE)
endfunction()

# kit_read_manifest(<lab dir>): checks labs/<lab>/lab.json and sets, in the
# caller's scope, LAB_JSON (the text), LAB_NAME, LAB_STEM, LAB_FILES,
# LAB_MODEL, LAB_SANITIZE, LAB_CUDA_LIBRARIES, LAB_SECTORS_AGREE (0/1),
# LAB_SECTORS_BOUNDS, LAB_SECTORS_CPU_ARGS, LAB_SECTORS_CPU_EXPECT (the
# optional "sectors" object), LAB_PICTURE_STEPS (the step of each optional
# "pictures" entry, in order; one entry a step) and LAB_PICTURES (each
# entry as "<step>|<args>"), LAB_PROFILE_PAGES (the "page" of each
# optional "profiles" entry), LAB_NVCC_FLAG_FILES (the files
# with "nvcc_flags"; each file's list in LAB_NVCC_FLAGS_<its name as a C
# identifier>), LAB_NSTEPS and, per step k (1-based),
# LAB_STEP_<k>_IDENT, LAB_STEP_<k>_FILE, LAB_STEP_<k>_TITLE.
function(kit_read_manifest lab_dir)
  set(path "${lab_dir}/lab.json")
  get_filename_component(folder "${lab_dir}" NAME)
  file(READ "${path}" json)
  string(JSON type ERROR_VARIABLE err TYPE "${json}")
  if(err OR NOT type STREQUAL "OBJECT")
    _kit_manifest_fail("${path}" "not a JSON object: ${err}")
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${path}")

  _kit_json(name "${json}" name)
  if(NOT name STREQUAL folder)
    _kit_manifest_fail("${path}" "\"name\" is '${name}', but the folder is '${folder}'")
  endif()
  if(NOT name MATCHES "^[0-9][0-9]_[a-z0-9_]+$")
    _kit_manifest_fail("${path}" "\"name\" '${name}' must be NN_words (two digits, lower case, underscores)")
  endif()
  foreach(key title summary)
    _kit_json(value "${json}" ${key})
    if(value STREQUAL "")
      _kit_manifest_fail("${path}" "\"${key}\" is missing or empty")
    endif()
  endforeach()
  _kit_json(stem "${json}" stem)
  if(NOT stem MATCHES "^[a-z][a-z0-9_]*$")
    _kit_manifest_fail("${path}" "\"stem\" '${stem}' must be a C identifier in lower case")
  endif()
  _kit_json_list(files "${json}" files "${path}")
  if(NOT files)
    _kit_manifest_fail("${path}" "\"files\" must list the student's files (the first is the kernel file)")
  endif()
  foreach(f IN LISTS files)
    if(NOT f MATCHES "^[A-Za-z0-9_][A-Za-z0-9_.-]*\\.(cu|c)$")
      _kit_manifest_fail("${path}" "student file '${f}' must be a plain .cu or .c file name in the lab's folder")
    endif()
    if(NOT EXISTS "${lab_dir}/${f}")
      _kit_manifest_fail("${path}" "student file '${f}' is not in ${lab_dir}")
    endif()
  endforeach()
  _kit_json(model "${json}" model)
  if(model AND NOT model IN_LIST files)
    _kit_manifest_fail("${path}" "\"model\" '${model}' must be one of \"files\"")
  endif()
  _kit_json_list(sanitize "${json}" sanitize "${path}")
  if(NOT sanitize)
    _kit_manifest_fail("${path}" "\"sanitize\" must give at least one set of runner arguments for compute-sanitizer")
  endif()

  # CUDA libraries the lab's host code calls (e.g. "cublas" for an anchor):
  # CUDA::<name> on the CUDA build; the CPU path's stand-in otherwise.
  _kit_json_list(cuda_libraries "${json}" cuda_libraries "${path}")
  foreach(l IN LISTS cuda_libraries)
    if(NOT l MATCHES "^[a-z][a-zA-Z0-9_]*$")
      _kit_manifest_fail("${path}" "\"cuda_libraries\" entry '${l}' must be a CUDA toolkit library name, as in CUDA::<name> (e.g. \"cublas\")")
    endif()
  endforeach()

  # Coalescing held to measurements (cmake/Kit.cmake), optional:
  # "sectors": {"gpu_agrees": true, "bounds": ["STEPS:PERCENT:WHY", ...],
  #             "cpu_args": "<runner sizes>", "cpu_expect": "step:ld|st:sectors per request|..."}
  # gpu_agrees: a GPU test (NN.reference.sectors_agree) holds Nsight Compute's
  # sectors per request to the CPU path's, exactly but for the steps of a
  # bound; cpu_args/cpu_expect: a CPU test (NN.cpu.reference.sectors) holds
  # the CPU path's counts to figures ncu gave on a GPU.
  set(sectors_agree 0)
  set(sectors_bounds "")
  set(sectors_cpu_args "")
  set(sectors_cpu_expect "")
  string(JSON type ERROR_VARIABLE err TYPE "${json}" sectors)
  if(NOT err)
    if(NOT type STREQUAL "OBJECT")
      _kit_manifest_fail("${path}" "\"sectors\" must be an object (gpu_agrees, bounds, cpu_args, cpu_expect)")
    endif()
    _kit_json(sectors_agree "${json}" sectors gpu_agrees)
    if(sectors_agree STREQUAL "ON")
      set(sectors_agree 1)
    else()
      set(sectors_agree 0)
    endif()
    _kit_json_list(sectors_bounds "${json}" "sectors;bounds" "${path}")
    foreach(b IN LISTS sectors_bounds)
      if(NOT b MATCHES "^[1-9][0-9]*(,[1-9][0-9]*)*:[0-9]+(\\.[0-9]+)?:.+$")
        _kit_manifest_fail("${path}" "\"sectors\" bound '${b}' must be STEPS:PERCENT:WHY (e.g. \"7,8:1:why\")")
      endif()
    endforeach()
    _kit_json(sectors_cpu_args "${json}" sectors cpu_args)
    _kit_json(sectors_cpu_expect "${json}" sectors cpu_expect)
    if((sectors_cpu_args STREQUAL "") AND NOT (sectors_cpu_expect STREQUAL ""))
      _kit_manifest_fail("${path}" "\"sectors\": \"cpu_expect\" needs \"cpu_args\" (the sizes it was measured at)")
    endif()
  endif()

  # Extra nvcc flags for one student file (e.g. a step's kernel in its own
  # file compiled with -maxrregcount=32): {"<file>.cu": ["<flag>", ...]}.
  # Every CUDA build of that file gets them (the lab's, its mistakes', the
  # grader's build of a submission); the CPU path has no use for them.
  set(flag_files "")
  _kit_json_optional(nf "${json}" nvcc_flags OBJECT "${path}"
    "\"nvcc_flags\" must be an object: {\"<student file>.cu\": [\"<nvcc flag>\", ...]}")
  if(nf GREATER 0)
    math(EXPR last "${nf} - 1")
    foreach(i RANGE ${last})
      string(JSON f MEMBER "${json}" nvcc_flags ${i})
      if(NOT f IN_LIST files OR NOT f MATCHES "\\.cu$")
        _kit_manifest_fail("${path}" "\"nvcc_flags\" names '${f}', which is not one of the lab's .cu \"files\"")
      endif()
      string(JSON ft TYPE "${json}" nvcc_flags "${f}")
      if(NOT ft STREQUAL "ARRAY")
        _kit_manifest_fail("${path}" "\"nvcc_flags\" of '${f}' must be a list of flags, e.g. [\"-maxrregcount=32\"]")
      endif()
      _kit_json_list(flags "${json}" "nvcc_flags;${f}" "${path}")
      if(NOT flags)
        _kit_manifest_fail("${path}" "\"nvcc_flags\" of '${f}' is an empty list: leave the file out instead")
      endif()
      foreach(flag IN LISTS flags)
        # one nvcc option per entry, without spaces or shell characters
        if(NOT flag MATCHES "^--?[A-Za-z][A-Za-z0-9_-]*(=[A-Za-z0-9_.,=+-]+)?$")
          _kit_manifest_fail("${path}" "\"nvcc_flags\" of '${f}': '${flag}' is not one nvcc option (e.g. \"-maxrregcount=32\"; one option per entry, no spaces)")
        endif()
        if(flag MATCHES "^--?(maxrregcount|maxrreg)=?(.*)$" AND NOT CMAKE_MATCH_2 MATCHES "^[1-9][0-9]*$")
          _kit_manifest_fail("${path}" "\"nvcc_flags\" of '${f}': '${flag}' needs a register count, e.g. -maxrregcount=32")
        endif()
      endforeach()
      string(MAKE_C_IDENTIFIER "${f}" fid)
      set(LAB_NVCC_FLAGS_${fid} "${flags}" PARENT_SCOPE)
      list(APPEND flag_files "${f}")
    endforeach()
  endif()
  set(LAB_NVCC_FLAG_FILES "${flag_files}" PARENT_SCOPE)

  string(JSON nsteps ERROR_VARIABLE err LENGTH "${json}" steps)
  if(err OR nsteps EQUAL 0)
    _kit_manifest_fail("${path}" "\"steps\" must be a non-empty list")
  endif()
  set(idents "")
  math(EXPR last "${nsteps} - 1")
  foreach(i RANGE ${last})
    math(EXPR k "${i} + 1")
    _kit_json(num "${json}" steps ${i} num)
    _kit_json(ident "${json}" steps ${i} ident)
    _kit_json(file "${json}" steps ${i} file)
    _kit_json(title "${json}" steps ${i} title)
    if(NOT num STREQUAL "${k}")
      _kit_manifest_fail("${path}" "step ${k} has \"num\": '${num}'; steps are numbered 1, 2, ... in order")
    endif()
    if(NOT ident MATCHES "^[a-z][a-z0-9_]*$")
      _kit_manifest_fail("${path}" "step ${k}: \"ident\" '${ident}' must be a C identifier in lower case")
    endif()
    if(ident IN_LIST idents)
      _kit_manifest_fail("${path}" "step ${k}: \"ident\" '${ident}' is used twice")
    endif()
    list(APPEND idents "${ident}")
    if(NOT file IN_LIST files)
      _kit_manifest_fail("${path}" "step ${k}: \"file\" '${file}' is not one of \"files\"")
    endif()
    if(title STREQUAL "")
      _kit_manifest_fail("${path}" "step ${k}: \"title\" is empty")
    endif()
    set(LAB_STEP_${k}_IDENT "${ident}" PARENT_SCOPE)
    set(LAB_STEP_${k}_FILE "${file}" PARENT_SCOPE)
    set(LAB_STEP_${k}_TITLE "${title}" PARENT_SCOPE)
    set(step_file_${k} "${file}")
  endforeach()

  # Pictures of a step's memory access (optional): progress and the grader's
  # feedback name the command `<stem>_run_cpu --step N --picture stepN.svg
  # <args>` (the CPU path draws the step's worst shared and global access):
  # "pictures": [{"step": N, "args": "<runner sizes>", "shows": "<one line>"}, ...]
  set(picture_steps "")
  set(picture_entries "")
  _kit_json_optional(np "${json}" pictures ARRAY "${path}"
    "\"pictures\" must be a list of {\"step\": N, \"args\": \"...\", \"shows\": \"...\"}")
  if(np GREATER 0)
    math(EXPR last "${np} - 1")
    foreach(i RANGE ${last})
      string(JSON et TYPE "${json}" pictures ${i})
      if(NOT et STREQUAL "OBJECT")
        _kit_manifest_fail("${path}" "\"pictures\" entry ${i} must be an object {\"step\": N, \"args\": \"...\", \"shows\": \"...\"}")
      endif()
      string(JSON st ERROR_VARIABLE no_step TYPE "${json}" pictures ${i} step)
      _kit_json(pstep "${json}" pictures ${i} step)
      if(no_step OR NOT st STREQUAL "NUMBER" OR NOT pstep MATCHES "^[1-9][0-9]*$" OR pstep GREATER nsteps)
        _kit_manifest_fail("${path}" "\"pictures\" entry ${i}: \"step\" must be the number of one of the lab's ${nsteps} steps (got '${pstep}')")
      endif()
      if(pstep IN_LIST picture_steps)
        _kit_manifest_fail("${path}" "\"pictures\" entry ${i}: step ${pstep} already has a picture (one entry a step)")
      endif()
      if(model AND step_file_${pstep} STREQUAL model)
        _kit_manifest_fail("${path}" "\"pictures\" entry ${i}: step ${pstep} is in the model file ${model}, which runs no kernel to draw")
      endif()
      string(JSON at ERROR_VARIABLE no_args TYPE "${json}" pictures ${i} args)
      _kit_json(pargs "${json}" pictures ${i} args)
      # the runner's size options only: the command adds --step and --picture,
      # and progress prints it for a student to paste into a shell
      if(no_args OR NOT at STREQUAL "STRING" OR NOT pargs MATCHES "^[A-Za-z0-9 ._,=-]*$")
        _kit_manifest_fail("${path}" "\"pictures\" entry ${i}: \"args\" must be a string of runner size options (letters, digits, spaces and . _ , = -), e.g. \"--rows 256 --cols 512\"")
      endif()
      if(pargs MATCHES "(^| )--(step|picture|then|json|markdown)( |=|$)")
        _kit_manifest_fail("${path}" "\"pictures\" entry ${i}: \"args\" '${pargs}' must hold the sizes only: the command adds --step and --picture")
      endif()
      string(JSON wt ERROR_VARIABLE no_shows TYPE "${json}" pictures ${i} shows)
      _kit_json(shows "${json}" pictures ${i} shows)
      string(STRIP "${shows}" shows_stripped)
      if(no_shows OR NOT wt STREQUAL "STRING" OR shows_stripped STREQUAL "")
        _kit_manifest_fail("${path}" "\"pictures\" entry ${i}: \"shows\" must say in one line what the picture shows")
      endif()
      string(LENGTH "${shows}" shows_len)
      if(shows MATCHES "\n" OR shows_len GREATER 120)
        _kit_manifest_fail("${path}" "\"pictures\" entry ${i}: \"shows\" must be one line of at most 120 characters")
      endif()
      list(APPEND picture_steps ${pstep})
      list(APPEND picture_entries "${pstep}|${pargs}")
    endforeach()
  endif()

  # A results page whose table goes into the handout (handout: true): the
  # runner replaces only the handout's marked region; without the markers
  # --markdown would write the whole page over the handout.
  string(JSON nresults ERROR_VARIABLE err LENGTH "${json}" results)
  if(NOT err AND nresults GREATER 0)
    math(EXPR last "${nresults} - 1")
    foreach(i RANGE ${last})
      string(JSON handout ERROR_VARIABLE err GET "${json}" results ${i} handout)
      if(NOT err AND handout)
        set(handout_md "${lab_dir}/README.md")
        set(marked 0)
        if(EXISTS "${handout_md}")
          file(READ "${handout_md}" handout_text)
          string(FIND "${handout_text}" "<!-- results:begin -->\n" b)
          string(FIND "${handout_text}" "<!-- results:end -->" e)
          if(b GREATER -1 AND e GREATER b)
            set(marked 1)
          endif()
        endif()
        if(NOT marked)
          string(CONCAT why "results entry ${i} has \"handout\": true, but ${handout_md} has no region "
            "between the lines <!-- results:begin --> and <!-- results:end --> for its table (without it the "
            "runner's --markdown would write the whole results page over the handout)")
          _kit_manifest_fail("${path}" "${why}")
        endif()
      endif()
    endforeach()
  endif()

  # What limits a step, measured by Nsight Compute (optional): pages that
  # `<stem>_run_ref --profile <args> --markdown docs/results/<gpu>/<lab><page>.md`
  # writes (cmake/results_pages.cmake):
  # "profiles": [{"page": "_profile...", "args": "--step N <sizes>", "what": "<one line>"}, ...]
  set(result_pages "")
  string(JSON nresults ERROR_VARIABLE no_results LENGTH "${json}" results)
  if(NOT no_results AND nresults GREATER 0)
    math(EXPR last "${nresults} - 1")
    foreach(i RANGE ${last})
      _kit_json(rp "${json}" results ${i} page)
      list(APPEND result_pages "${rp}")
    endforeach()
  endif()
  set(profile_pages "")
  _kit_json_optional(nprof "${json}" profiles ARRAY "${path}"
    "\"profiles\" must be a list of {\"page\": \"_profile...\", \"args\": \"--step N ...\", \"what\": \"...\"}")
  if(nprof GREATER 0)
    math(EXPR last "${nprof} - 1")
    foreach(i RANGE ${last})
      string(JSON et TYPE "${json}" profiles ${i})
      if(NOT et STREQUAL "OBJECT")
        _kit_manifest_fail("${path}" "\"profiles\" entry ${i} must be an object {\"page\": \"_profile...\", \"args\": \"--step N ...\", \"what\": \"...\"}")
      endif()
      _kit_json(ppage "${json}" profiles ${i} page)
      if(NOT ppage MATCHES "^_profile[a-z0-9_]*$")
        _kit_manifest_fail("${path}" "\"profiles\" entry ${i}: \"page\" '${ppage}' must start with _profile and hold lower-case letters, digits and _ (the page is docs/results/<gpu>/${name}<page>.md)")
      endif()
      if(ppage IN_LIST profile_pages OR ppage IN_LIST result_pages)
        _kit_manifest_fail("${path}" "\"profiles\" entry ${i}: \"page\" '${ppage}' is already a page of this lab")
      endif()
      string(JSON at ERROR_VARIABLE no_args TYPE "${json}" profiles ${i} args)
      _kit_json(pargs "${json}" profiles ${i} args)
      if(no_args OR NOT at STREQUAL "STRING" OR NOT pargs MATCHES "^[A-Za-z0-9 ._,=-]*$")
        _kit_manifest_fail("${path}" "\"profiles\" entry ${i}: \"args\" must be a string of runner options (letters, digits, spaces and . _ , = -), e.g. \"--step 6 --size3 513x511x509\"")
      endif()
      if(pargs MATCHES "(^| )--(profile|markdown|json|then|check-only|sectors|counters|sweep|sweep-max)( |=|$)")
        _kit_manifest_fail("${path}" "\"profiles\" entry ${i}: \"args\" '${pargs}' must hold --step and the sizes only: the command adds --profile and --markdown")
      endif()
      set(pstep ${nsteps})
      if(pargs MATCHES "(^| )--step( |=)([^ ]*)")
        set(pstep "${CMAKE_MATCH_3}")
        if(NOT pstep MATCHES "^[1-9][0-9]*$" OR pstep GREATER nsteps)
          _kit_manifest_fail("${path}" "\"profiles\" entry ${i}: --step '${pstep}' must be one of the lab's ${nsteps} steps (one step a page)")
        endif()
      endif()
      if(model AND step_file_${pstep} STREQUAL model)
        _kit_manifest_fail("${path}" "\"profiles\" entry ${i}: step ${pstep} is in the model file ${model}, which runs no kernel to measure")
      endif()
      _kit_json(pwhat "${json}" profiles ${i} what)
      string(STRIP "${pwhat}" what_stripped)
      if(what_stripped STREQUAL "" OR pwhat MATCHES "\n")
        _kit_manifest_fail("${path}" "\"profiles\" entry ${i}: \"what\" must say in one line what the page measures (the results index shows it)")
      endif()
      list(APPEND profile_pages "${ppage}")
    endforeach()
  endif()

  set(LAB_JSON "${json}" PARENT_SCOPE)
  set(LAB_PROFILE_PAGES "${profile_pages}" PARENT_SCOPE)
  set(LAB_NAME "${name}" PARENT_SCOPE)
  set(LAB_STEM "${stem}" PARENT_SCOPE)
  set(LAB_FILES "${files}" PARENT_SCOPE)
  set(LAB_MODEL "${model}" PARENT_SCOPE)
  set(LAB_SANITIZE "${sanitize}" PARENT_SCOPE)
  set(LAB_CUDA_LIBRARIES "${cuda_libraries}" PARENT_SCOPE)
  set(LAB_SECTORS_AGREE "${sectors_agree}" PARENT_SCOPE)
  set(LAB_SECTORS_BOUNDS "${sectors_bounds}" PARENT_SCOPE)
  set(LAB_SECTORS_CPU_ARGS "${sectors_cpu_args}" PARENT_SCOPE)
  set(LAB_SECTORS_CPU_EXPECT "${sectors_cpu_expect}" PARENT_SCOPE)
  set(LAB_NSTEPS "${nsteps}" PARENT_SCOPE)
  set(LAB_PICTURE_STEPS "${picture_steps}" PARENT_SCOPE)
  set(LAB_PICTURES "${picture_entries}" PARENT_SCOPE)
endfunction()

# kit_write_step_header(<file>): the lab's step table for C, from the
# manifest read by kit_read_manifest in the caller's scope:
#   <STEM>_STEPS(X)   X(num, ident, "file", "title") per step
#   <STEM>_NUM_STEPS  and  <STEM>_FIRST_GPU_STEP (the first step outside the model)
function(kit_write_step_header file)
  string(TOUPPER "${LAB_STEM}" up)
  set(first_gpu 0)
  set(rows "")
  foreach(k RANGE 1 ${LAB_NSTEPS})
    _kit_c_string(cfile "${LAB_STEP_${k}_FILE}")
    _kit_c_string(ctitle "${LAB_STEP_${k}_TITLE}")
    string(APPEND rows " \\\n    X(${k}, ${LAB_STEP_${k}_IDENT}, ${cfile}, ${ctitle})")
    if(first_gpu EQUAL 0 AND NOT LAB_STEP_${k}_FILE STREQUAL LAB_MODEL)
      set(first_gpu ${k})
    endif()
  endforeach()
  if(first_gpu EQUAL 0)
    math(EXPR first_gpu "${LAB_NSTEPS} + 1")
  endif()
  set(text "/* ${LAB_STEM}_steps.h: lab ${LAB_NAME}'s step table, generated by the build from
 * labs/${LAB_NAME}/lab.json. Do not edit: change the manifest. */
#ifndef ${up}_STEPS_H
#define ${up}_STEPS_H

/* X(number, identifier, \"student file\", \"what the step changes\") */
#define ${up}_STEPS(X)${rows}

#define ${up}_NUM_STEPS ${LAB_NSTEPS}
#define ${up}_FIRST_GPU_STEP ${first_gpu}

#endif
")
  # Written only when it changes, so an unchanged manifest rebuilds nothing.
  file(CONFIGURE OUTPUT "${file}" CONTENT "${text}" @ONLY)
endfunction()

# kit_manifest_description(<out>): the manifest with what the build adds
# (folders, target names, the tests' suite names), for <build>/kit/labs.json.
function(kit_manifest_description out has_solution)
  set(json "${LAB_JSON}")
  string(JSON json SET "${json}" dir "\"labs/${LAB_NAME}\"")
  if(has_solution)
    string(JSON json SET "${json}" solution_dir "\"solutions/${LAB_NAME}\"")
  else()
    string(JSON json SET "${json}" solution_dir "\"\"")
  endif()
  list(GET LAB_FILES 0 kernel_file)
  string(JSON json SET "${json}" kernel_file "\"${kernel_file}\"")
  string(JSON json SET "${json}" suite "\"step{num}\"")
  set(model_tests "")
  if(LAB_MODEL)
    set(model_tests "test_${LAB_STEM}_model")
  endif()
  string(JSON json SET "${json}" targets
    "{\"runner\": \"${LAB_STEM}_run\", \"tests\": \"test_${LAB_STEM}\", \"model_tests\": \"${model_tests}\", \"ref_suffix\": \"_ref\"}")
  string(JSON json REMOVE "${json}" about)
  set(${out} "${json}" PARENT_SCOPE)
endfunction()
