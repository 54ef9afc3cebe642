# The manifest checker (cmake/KitManifest.cmake) on manifests made here:
# "nvcc_flags" read into LAB_NVCC_FLAG_FILES / LAB_NVCC_FLAGS_<file> when
# well formed, and each malformed value refused with a message that names
# it; a malformed "sectors" object refused; "pictures" read into
# LAB_PICTURE_STEPS, and a malformed entry refused (not a list or object, a
# step that is not the lab's or is the model's, shell characters or --step in
# its args, no one-line "shows"); "profiles" read into LAB_PROFILE_PAGES, and a
# malformed entry refused (not a list or object, a page not named _profile...
# or named twice, shell characters or options besides --step and the sizes in
# its args, a step list or a step the lab lacks or the model's, no "what"); a results entry with "handout": true refused while the handout has no
# results region for its table. Run as: cmake -DSOURCE_DIR=<kit> -DWORK=<dir> -P manifest-checks.cmake
# (the bad cases each run in a child cmake: a refusal is a FATAL_ERROR).
cmake_minimum_required(VERSION 3.25...4.1)   # the kit's policies (IN_LIST, empty list elements)
if(NOT CASE)
  set(good "\"nvcc_flags\": {\"spill.cu\": [\"-maxrregcount=32\", \"-Xptxas=-warn-spills\"]}")
  set(pic1 "{\"step\": 1, \"args\": \"--n 3 --size2 30x7\", \"shows\": \"a warp's loads\"}")
  set(pic2 "{\"step\": 1, \"args\": \"\", \"shows\": \"the same at the default sizes\"}")
  set(results "\"results\": [{\"page\": \"\", \"args\": \"\", \"handout\": true, \"json\": false, \"what\": \"w\"}]")
  set(prof1 "{\"page\": \"_profile\", \"args\": \"--step 1\", \"what\": \"step 1\"}")
  set(prof2 "{\"page\": \"_profile_big\", \"args\": \"--n 3000\", \"what\": \"the last step, --n 3000\"}")
  set(cases
    "good|${good}|"
    "not_object|\"nvcc_flags\": [\"-maxrregcount=32\"]|must be an object"
    "not_a_file|\"nvcc_flags\": {\"other.cu\": [\"-O3\"]}|not one of the lab's .cu"
    "c_file|\"nvcc_flags\": {\"host.c\": [\"-O3\"]}|not one of the lab's .cu"
    "not_list|\"nvcc_flags\": {\"spill.cu\": \"-maxrregcount=32\"}|must be a list of flags"
    "empty|\"nvcc_flags\": {\"spill.cu\": []}|empty list"
    "two_in_one|\"nvcc_flags\": {\"spill.cu\": [\"-maxrregcount=32 -O3\"]}|is not one nvcc option"
    "shell|\"nvcc_flags\": {\"spill.cu\": [\"-O3$(id)\"]}|is not one nvcc option"
    "no_count|\"nvcc_flags\": {\"spill.cu\": [\"-maxrregcount=lots\"]}|needs a register count"
    "sectors_good|${good}, \"sectors\": {\"gpu_agrees\": true, \"bounds\": [\"7,8:1:why\"], \"cpu_args\": \"--n 3\", \"cpu_expect\": \"1:ld:4.00\"}|"
    "sectors_not_object|${good}, \"sectors\": [\"7,8:1:why\"]|\"sectors\" must be an object"
    "sectors_bad_bound|${good}, \"sectors\": {\"gpu_agrees\": true, \"bounds\": [\"seven:1:why\"]}|must be STEPS:PERCENT:WHY"
    "sectors_no_why|${good}, \"sectors\": {\"gpu_agrees\": true, \"bounds\": [\"7:1\"]}|must be STEPS:PERCENT:WHY"
    "sectors_expect_alone|${good}, \"sectors\": {\"cpu_expect\": \"1:ld:4.00\"}|needs \"cpu_args\""
    "handout_marked|${good}, ${results}|"
    "handout_unmarked|${good}, ${results}|results:begin"
    "pictures_good|${good}, \"pictures\": [${pic1}]|"
    "pictures_step_twice|${good}, \"pictures\": [${pic1}, ${pic2}]|already has a picture"
    "pictures_not_list|${good}, \"pictures\": ${pic1}|\"pictures\" must be a list"
    "pictures_entry_not_object|${good}, \"pictures\": [\"--n 3\"]|entry 0 must be an object"
    "pictures_step_zero|${good}, \"pictures\": [{\"step\": 0, \"args\": \"--n 3\", \"shows\": \"w\"}]|one of the lab's 2 steps"
    "pictures_step_past_the_last|${good}, \"pictures\": [{\"step\": 3, \"args\": \"--n 3\", \"shows\": \"w\"}]|one of the lab's 2 steps"
    "pictures_step_as_text|${good}, \"pictures\": [{\"step\": \"1\", \"args\": \"--n 3\", \"shows\": \"w\"}]|one of the lab's 2 steps"
    "pictures_model_step|${good}, \"pictures\": [{\"step\": 2, \"args\": \"--n 3\", \"shows\": \"w\"}]|model file host.c"
    "pictures_shell_args|${good}, \"pictures\": [{\"step\": 1, \"args\": \"--n 3; rm x\", \"shows\": \"w\"}]|runner size options"
    "pictures_args_with_step|${good}, \"pictures\": [{\"step\": 1, \"args\": \"--step 2 --n 3\", \"shows\": \"w\"}]|must hold the sizes only"
    "pictures_no_shows|${good}, \"pictures\": [{\"step\": 1, \"args\": \"--n 3\"}]|\"shows\" must say"
    "pictures_two_lines|${good}, \"pictures\": [{\"step\": 1, \"args\": \"--n 3\", \"shows\": \"one\\ntwo\"}]|must be one line"
    "profiles_good|${good}, \"profiles\": [${prof1}, ${prof2}]|"
    "profiles_not_list|${good}, \"profiles\": ${prof1}|\"profiles\" must be a list"
    "profiles_entry_not_object|${good}, \"profiles\": [\"--step 1\"]|entry 0 must be an object"
    "profiles_bad_page|${good}, \"profiles\": [{\"page\": \"_big\", \"args\": \"--step 1\", \"what\": \"w\"}]|must start with _profile"
    "profiles_page_twice|${good}, \"profiles\": [${prof1}, ${prof1}]|is already a page of this lab"
    "profiles_shell_args|${good}, \"profiles\": [{\"page\": \"_profile\", \"args\": \"--step 1; rm x\", \"what\": \"w\"}]|string of runner options"
    "profiles_args_with_json|${good}, \"profiles\": [{\"page\": \"_profile\", \"args\": \"--step 1 --json\", \"what\": \"w\"}]|must hold --step and the sizes only"
    "profiles_step_list|${good}, \"profiles\": [{\"page\": \"_profile\", \"args\": \"--step 1,2\", \"what\": \"w\"}]|one step a page"
    "profiles_step_past_the_last|${good}, \"profiles\": [{\"page\": \"_profile\", \"args\": \"--step 3\", \"what\": \"w\"}]|one of the lab's 2 steps"
    "profiles_tried|${good}, \"profiles\": [{\"page\": \"_profile\", \"args\": \"--step 1\", \"what\": \"w\", \"tried\": {\"nvidia-h200\": \"a wider tile\"}}]|"
    "profiles_tried_not_object|${good}, \"profiles\": [{\"page\": \"_profile\", \"args\": \"--step 1\", \"what\": \"w\", \"tried\": \"a wider tile\"}]|\"tried\" must be an object"
    "profiles_tried_bad_gpu|${good}, \"profiles\": [{\"page\": \"_profile\", \"args\": \"--step 1\", \"what\": \"w\", \"tried\": {\"H200 card\": \"a wider tile\"}}]|must name a GPU folder"
    "profiles_tried_empty|${good}, \"profiles\": [{\"page\": \"_profile\", \"args\": \"--step 1\", \"what\": \"w\", \"tried\": {\"nvidia-h200\": \" \"}}]|say in one line what was tried"
    "profiles_model_step|${good}, \"profiles\": [{\"page\": \"_profile\", \"args\": \"--step 2\", \"what\": \"w\"}]|model file host.c"
    "profiles_no_what|${good}, \"profiles\": [{\"page\": \"_profile\", \"args\": \"--step 1\"}]|\"what\" must say")
  set(failed 0)
  foreach(c IN LISTS cases)
    string(REPLACE "|" ";" parts "${c}")
    list(GET parts 0 name)
    list(GET parts 1 extra)
    list(LENGTH parts np)
    set(want "")
    if(np GREATER 2)
      list(GET parts 2 want)
    endif()
    set(dir "${WORK}/${name}/99_manifest")
    file(REMOVE_RECURSE "${WORK}/${name}")
    file(MAKE_DIRECTORY "${dir}")
    file(WRITE "${dir}/spill.cu" "")
    file(WRITE "${dir}/main.cu" "")
    file(WRITE "${dir}/host.c" "")
    if(name STREQUAL "handout_marked")
      file(WRITE "${dir}/README.md" "# a handout\n\n<!-- results:begin -->\nnot yet\n<!-- results:end -->\n")
    else()
      file(WRITE "${dir}/README.md" "# a handout\n\nno results region\n")
    endif()
    # step 2 is in the model file (a host-only step, no kernel to draw) where a case needs one
    set(model "")
    set(step2_file "main.cu")
    if(name STREQUAL "pictures_model_step" OR name STREQUAL "profiles_model_step")
      set(model "host.c")
      set(step2_file "host.c")
    endif()
    file(WRITE "${dir}/lab.json" "{\"name\": \"99_manifest\", \"title\": \"t\", \"summary\": \"s\", \"stem\": \"m\",
 \"files\": [\"main.cu\", \"spill.cu\", \"host.c\"], \"model\": \"${model}\", \"sanitize\": [\"--n 3\"],
 \"steps\": [{\"num\": 1, \"ident\": \"a\", \"file\": \"main.cu\", \"title\": \"t\"},
  {\"num\": 2, \"ident\": \"b\", \"file\": \"${step2_file}\", \"title\": \"t\"}], ${extra}}\n")
    execute_process(COMMAND "${CMAKE_COMMAND}" "-DSOURCE_DIR=${SOURCE_DIR}" "-DCASE=${dir}"
                            -P "${CMAKE_CURRENT_LIST_FILE}"
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    string(REGEX REPLACE "[ \n]+" " " err "${err}")   # CMake wraps its messages
    if(want STREQUAL "")
      set(want_out "spill.cu=-maxrregcount=32;-Xptxas=-warn-spills")
      if(name STREQUAL "pictures_good")
        set(want_out "pictures of steps 1")
      elseif(name STREQUAL "profiles_good")
        set(want_out "profile pages _profile;_profile_big")
      endif()
      if(NOT rc EQUAL 0 OR NOT out MATCHES "${want_out}")
        message(SEND_ERROR "${name}: a good manifest was not read: ${out}${err}")
        set(failed 1)
      else()
        message(STATUS "${name}: read as expected")
      endif()
    elseif(rc EQUAL 0 OR NOT err MATCHES "${want}")
      message(SEND_ERROR "${name}: expected a refusal saying '${want}', got rc ${rc}: ${err}")
      set(failed 1)
    else()
      message(STATUS "${name}: refused as expected")
    endif()
  endforeach()
  if(failed)
    message(FATAL_ERROR "the manifest checker let a case through")
  endif()
  return()
endif()

include("${SOURCE_DIR}/cmake/KitManifest.cmake")
kit_read_manifest("${CASE}")
foreach(f IN LISTS LAB_NVCC_FLAG_FILES)
  string(MAKE_C_IDENTIFIER "${f}" fid)
  message(STATUS "${f}=${LAB_NVCC_FLAGS_${fid}}")
endforeach()
if(LAB_PICTURE_STEPS)
  message(STATUS "pictures of steps ${LAB_PICTURE_STEPS}")
endif()
if(LAB_PROFILE_PAGES)
  message(STATUS "profile pages ${LAB_PROFILE_PAGES}")
endif()
