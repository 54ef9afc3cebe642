# Build functions shared by every lab. Adding a lab is one kit_add_lab() line
# in the top-level CMakeLists.txt plus its folders (see docs/adding-a-lab.md).

# Strict warnings for host C; kept at zero.
add_library(kit_warnings INTERFACE)
target_compile_options(kit_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra -Wshadow -Wstrict-prototypes -Wpointer-arith
                          -Wcast-qual -Wwrite-strings -Wmissing-prototypes -Wpedantic>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall -Xcompiler=-Wextra>)
add_library(kit::warnings ALIAS kit_warnings)

# Every kernel build: line info always (sanitizers and ncu point at source
# lines), -G only behind an option.
add_library(kit_cuda_flags INTERFACE)
target_compile_options(kit_cuda_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo $<$<BOOL:${KIT_DEVICE_DEBUG}>:-G>>)
add_library(kit::cuda_flags ALIAS kit_cuda_flags)

set(KIT_SKIP_RETURN_CODE 77)  # common/include/cml/cml_check.h: CML_EXIT_NO_GPU
set(KIT_TEST_LABEL_SKIP "KIT-SKIP:")
find_program(KIT_COMPUTE_SANITIZER compute-sanitizer HINTS "${CUDAToolkit_BIN_DIR}")

# kit_add_host_test(<name> SOURCES ... [LIBS ...] [DEFINITIONS ...])
# A Criterion test executable that needs no GPU, registered with label "host".
function(kit_add_host_test name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;LIBS;DEFINITIONS")
  set(exe "test_${name}")
  string(REPLACE "." "_" exe "${exe}")
  add_executable(${exe} ${arg_SOURCES})
  target_link_libraries(${exe} PRIVATE ${arg_LIBS} cml_criterion_main kit::criterion kit::warnings)
  target_compile_definitions(${exe} PRIVATE ${arg_DEFINITIONS})
  add_test(NAME "${name}" COMMAND ${exe})
  set_tests_properties("${name}" PROPERTIES LABELS "host" TIMEOUT 120)
endfunction()

# One build of a lab's student files (from labs/, solutions/ or a mistake's
# folder): object library, runner, GPU test binary, and the model's host test
# binary when the lab has a host-side model.
function(_kit_lab_variant lab stem variant src_dir)
  set(lab_dir "${PROJECT_SOURCE_DIR}/labs/${lab}")
  set(drv_dir "${PROJECT_SOURCE_DIR}/common/labs/${lab}")
  set(kern "${stem}_kernels_${variant}")
  list(TRANSFORM KIT_LAB_FILES PREPEND "${src_dir}/" OUTPUT_VARIABLE sources)
  add_library(${kern} OBJECT ${sources})
  target_include_directories(${kern} PRIVATE "${lab_dir}")
  target_link_libraries(${kern} PRIVATE cml kit::cuda_flags)

  if(variant STREQUAL "student")
    set(suffix "")
  else()
    set(suffix "_${variant}")
  endif()
  set(runner "${stem}_run${suffix}")
  set(tests "test_${stem}${suffix}")
  add_executable(${runner} "${drv_dir}/run.c")
  target_link_libraries(${runner} PRIVATE ${kern} ${stem}_host kit::warnings)
  set_target_properties(${runner} PROPERTIES CUDA_RESOLVE_DEVICE_SYMBOLS ON LINKER_LANGUAGE CUDA)

  add_executable(${tests} "${lab_dir}/tests/gpu.c")
  target_link_libraries(${tests} PRIVATE ${kern} ${stem}_host cml_criterion_main kit::criterion kit::warnings)
  set_target_properties(${tests} PROPERTIES LINKER_LANGUAGE CUDA)
  set(runner_${variant} ${runner} PARENT_SCOPE)
  set(tests_${variant} ${tests} PARENT_SCOPE)

  # The host-side model (plain C, no GPU): its own tests, built from this
  # variant's copy of the model file alone.
  if(KIT_LAB_MODEL)
    set(model_tests "test_${stem}_model${suffix}")
    add_executable(${model_tests} "${lab_dir}/tests/model.c" "${src_dir}/${KIT_LAB_MODEL}")
    target_include_directories(${model_tests} PRIVATE "${lab_dir}" "${drv_dir}")
    target_link_libraries(${model_tests} PRIVATE cml cml_criterion_main kit::criterion kit::warnings)
    set(model_tests_${variant} ${model_tests} PARENT_SCOPE)
  endif()
endfunction()

# Run a tool under a CMake script that reports "KIT-SKIP:" when there is no GPU.
function(_kit_script_test name script labels)
  add_test(NAME "${name}" COMMAND "${CMAKE_COMMAND}" ${ARGN} -P "${PROJECT_SOURCE_DIR}/cmake/${script}")
  set_tests_properties("${name}" PROPERTIES LABELS "${labels}"
    SKIP_REGULAR_EXPRESSION "${KIT_TEST_LABEL_SKIP}" TIMEOUT 900)
endfunction()

# kit_add_lab(<lab> <stem> [FILES <file>...] [MODEL <file>] [SANITIZE "<args>"...])
#   labs/<lab>/: the student's files (FILES, default <stem>.cu; the first is
#   the kernel file), <stem>.h, tests/gpu.c, tests/host.c (optional) and,
#   with MODEL, tests/model.c: host tests of the plain-C model file MODEL
#   (one of FILES) that need no GPU.
#   solutions/<lab>/: the reference copies of FILES and mistakes.toml.
#   common/labs/<lab>/: the runner's run.c and the lab's host support.
#   SANITIZE: runner arguments, one string per compute-sanitizer run of
#   `--step all --check-only`; the first also runs each sanitizer mistake.
function(kit_add_lab lab stem)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "MODEL" "FILES;SANITIZE")
  set(KIT_LAB_FILES "${stem}.cu")
  if(arg_FILES)
    set(KIT_LAB_FILES ${arg_FILES})
  endif()
  set(KIT_LAB_MODEL "${arg_MODEL}")
  if(KIT_LAB_MODEL AND NOT KIT_LAB_MODEL IN_LIST KIT_LAB_FILES)
    message(FATAL_ERROR "kit_add_lab(${lab}): MODEL ${KIT_LAB_MODEL} must be one of FILES")
  endif()
  if(NOT arg_SANITIZE)
    message(FATAL_ERROR "kit_add_lab(${lab}): give the runner arguments for compute-sanitizer (SANITIZE \"...\")")
  endif()
  string(REPLACE ";" "|" sanitize_configs "${arg_SANITIZE}")
  list(GET arg_SANITIZE 0 mistake_args)
  set(lab_dir "${PROJECT_SOURCE_DIR}/labs/${lab}")
  set(sol_dir "${PROJECT_SOURCE_DIR}/solutions/${lab}")
  set(drv_dir "${PROJECT_SOURCE_DIR}/common/labs/${lab}")

  # Host support of the lab (data, CPU reference, library anchors): all of
  # common/labs/<lab>/ except the runner's main().
  file(GLOB host_srcs CONFIGURE_DEPENDS "${drv_dir}/*.c" "${drv_dir}/*.cu")
  list(REMOVE_ITEM host_srcs "${drv_dir}/run.c")
  add_library(${stem}_host STATIC ${host_srcs})
  target_include_directories(${stem}_host PUBLIC "${drv_dir}" "${lab_dir}")
  target_link_libraries(${stem}_host PUBLIC cml PRIVATE kit::cuda_flags)

  _kit_lab_variant(${lab} ${stem} student "${lab_dir}")
  _kit_lab_variant(${lab} ${stem} ref "${sol_dir}")

  if(EXISTS "${lab_dir}/tests/host.c")
    # The lab's files are named for tests that check them against the step table.
    kit_add_host_test(${lab}.host SOURCES "${lab_dir}/tests/host.c" LIBS ${stem}_host
      DEFINITIONS KIT_LAB_SKELETON="${lab_dir}/${stem}.cu" KIT_LAB_SOLUTION="${sol_dir}/${stem}.cu"
                  KIT_LAB_DIR="${lab_dir}" KIT_SOLUTION_DIR="${sol_dir}")
  endif()

  # The committed skeletons are exactly what the generator makes from the solution.
  foreach(file IN LISTS KIT_LAB_FILES)
    set(test_name ${lab}.skeleton_matches_solution)
    if(NOT file STREQUAL "${stem}.cu")
      set(test_name ${lab}.skeleton_matches_solution.${file})
    endif()
    add_test(NAME ${test_name} COMMAND labtool check-skeleton "${sol_dir}/${file}" "${lab_dir}/${file}")
    set_tests_properties(${test_name} PROPERTIES LABELS "host;skeleton")
  endforeach()

  if(KIT_LAB_MODEL)
    # The host-side model: the reference passes, the untouched skeleton fails
    # cleanly, and the student's progress; no GPU needed for any of them.
    add_test(NAME ${lab}.model.reference COMMAND ${model_tests_ref})
    set_tests_properties(${lab}.model.reference PROPERTIES LABELS "host;reference" TIMEOUT 120)
    _kit_script_test(${lab}.model.skeleton_fails_cleanly check_fails_cleanly.cmake "host;skeleton"
      "-DTESTS=$<TARGET_FILE:${model_tests_student}>" "-DWORK=${CMAKE_CURRENT_BINARY_DIR}/kit-checks/${lab}/model")
    add_test(NAME ${lab}.model.student COMMAND ${model_tests_student})
    set_tests_properties(${lab}.model.student PROPERTIES LABELS "host;student" TIMEOUT 120)
  endif()

  # Reference: every GPU test passes (or the whole binary skips without a GPU).
  add_test(NAME ${lab}.reference COMMAND ${tests_ref})
  set_tests_properties(${lab}.reference PROPERTIES LABELS "gpu;reference"
    SKIP_RETURN_CODE ${KIT_SKIP_RETURN_CODE} TIMEOUT 900)

  # Untouched skeleton: every test fails, none crashes or hangs.
  _kit_script_test(${lab}.skeleton_fails_cleanly check_fails_cleanly.cmake "gpu;skeleton"
    "-DTESTS=$<TARGET_FILE:${tests_student}>" "-DWORK=${CMAKE_CURRENT_BINARY_DIR}/kit-checks/${lab}")

  # A student's progress: the same tests on labs/<lab>/<stem>.cu, expected to
  # fail until the steps are done (excluded from the kit's own test preset).
  add_test(NAME ${lab}.student COMMAND ${tests_student})
  set_tests_properties(${lab}.student PROPERTIES LABELS "gpu;student"
    SKIP_RETURN_CODE ${KIT_SKIP_RETURN_CODE} TIMEOUT 900)

  # compute-sanitizer on the reference runner, every step, each SANITIZE configuration.
  foreach(tool memcheck racecheck synccheck initcheck)
    _kit_script_test(${lab}.reference.${tool} run_sanitizer.cmake "gpu;sanitizer;reference"
      "-DTOOL=${tool}" "-DSANITIZER=${KIT_COMPUTE_SANITIZER}" "-DRUNNER=$<TARGET_FILE:${runner_ref}>"
      "-DCONFIGS=${sanitize_configs}")
  endforeach()

  # The catalogue of classic mistakes: each one built from the solution and
  # proven to be caught by the tests or by a sanitizer.
  set(catalogue "${sol_dir}/mistakes.toml")
  if(EXISTS "${catalogue}")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${catalogue}")
    file(STRINGS "${catalogue}" name_lines REGEX "^name *= *\"[a-z0-9_]+\"")
    foreach(line IN LISTS name_lines)
      string(REGEX REPLACE "^name *= *\"([a-z0-9_]+)\".*" "\\1" name "${line}")
      set(out_dir "${CMAKE_CURRENT_BINARY_DIR}/mistakes/${lab}/${name}")
      list(TRANSFORM KIT_LAB_FILES PREPEND "${out_dir}/" OUTPUT_VARIABLE out_files)
      list(TRANSFORM KIT_LAB_FILES PREPEND "${sol_dir}/" OUTPUT_VARIABLE sol_files)
      add_custom_command(
        OUTPUT ${out_files} "${out_dir}/mistake.cmake"
        COMMAND "${CMAKE_COMMAND}" -E make_directory "${out_dir}"
        COMMAND labtool mutate-lab "${sol_dir}" "${catalogue}" ${name} "${out_dir}" ${KIT_LAB_FILES}
        COMMAND labtool mistake-cmake "${catalogue}" ${name} "${out_dir}/mistake.cmake"
        DEPENDS labtool ${sol_files} "${catalogue}"
        COMMENT "Building mistake ${lab}/${name} from the reference solution")
      _kit_lab_variant(${lab} ${stem} mistake_${name} "${out_dir}")
      # Every test binary of the variant: the model's (host) and the GPU tests.
      set(test_binaries "$<TARGET_FILE:${tests_mistake_${name}}>")
      if(KIT_LAB_MODEL)
        list(PREPEND test_binaries "$<TARGET_FILE:${model_tests_mistake_${name}}>")
      endif()
      string(REPLACE ";" "|" test_binaries "${test_binaries}")
      _kit_script_test(${lab}.mistake.${name} check_mistake.cmake "gpu;mistake"
        "-DINFO=${out_dir}/mistake.cmake" "-DTESTS=${test_binaries}"
        "-DRUNNER=$<TARGET_FILE:${runner_mistake_${name}}>" "-DSANITIZER=${KIT_COMPUTE_SANITIZER}"
        "-DRUNNER_ARGS=${mistake_args}" "-DWORK=${out_dir}")
    endforeach()
  endif()

  set_property(GLOBAL APPEND PROPERTY KIT_LAB_RUNNERS "${lab}=$<TARGET_FILE:${runner_ref}>")
  set_property(GLOBAL APPEND PROPERTY KIT_LAB_RUNNER_TARGETS ${runner_ref})
endfunction()

# The main job: run every built lab's reference steps and print the tables.
function(kit_add_run_target)
  get_property(runners GLOBAL PROPERTY KIT_LAB_RUNNERS)
  get_property(targets GLOBAL PROPERTY KIT_LAB_RUNNER_TARGETS)
  string(REPLACE ";" "|" runners "${runners}")
  add_custom_target(run-labs
    COMMAND "${CMAKE_COMMAND}" "-DRUNNERS=${runners}" -P "${PROJECT_SOURCE_DIR}/cmake/run_labs.cmake"
    DEPENDS ${targets}
    USES_TERMINAL
    VERBATIM
    COMMENT "Running every lab's reference steps")
endfunction()
