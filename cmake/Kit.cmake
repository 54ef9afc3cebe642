# kit_require_part(<path> <what>): a part the developer kit must have
# (KIT_EDITION=developer); configure stops naming it where it is missing.
function(kit_require_part path what)
  if(NOT EXISTS "${PROJECT_SOURCE_DIR}/${path}")
    message(FATAL_ERROR "${path} is missing: ${what}. The developer kit (KIT_EDITION=developer, the repository) "
                        "needs it; a student release says KIT_EDITION=student in its CMakeLists.txt (tools/release), "
                        "the grader's tree of a submission is configured with -DKIT_EDITION=grading")
  endif()
endfunction()

# kit_require_developer_parts(): what the developer kit has beside the
# labs, checked before anything is configured: every lab's reference
# solution, catalogue of mistakes and their feedback (solutions/<lab>/), and
# the kit's and the grader's own tests.
function(kit_require_developer_parts)
  kit_require_part(tools/tests/CMakeLists.txt "the kit's tools' own tests")
  kit_require_part(grader/tests/test_adversarial.py "the grader's adversarial suite")
  file(GLOB manifests RELATIVE "${PROJECT_SOURCE_DIR}/labs" "${PROJECT_SOURCE_DIR}/labs/*/lab.json")
  foreach(m IN LISTS manifests)
    get_filename_component(lab "${m}" DIRECTORY)
    kit_require_part(solutions/${lab} "lab ${lab}'s reference solution")
    kit_require_part(solutions/${lab}/mistakes.toml "lab ${lab}'s catalogue of classic mistakes")
    kit_require_part(solutions/${lab}/feedback.toml "lab ${lab}'s feedback on its mistakes")
  endforeach()
endfunction()

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

# kit_cpu_target(<target>): a target built on the CPU path (common/cpu):
# common/cpu/include ahead of every other include folder (its
# cuda_runtime_api.h stands in for the toolkit's), linked as C++.
function(kit_cpu_target target)
  target_include_directories(${target} BEFORE PRIVATE "${PROJECT_SOURCE_DIR}/common/cpu/include")
  set_target_properties(${target} PROPERTIES LINKER_LANGUAGE CXX C_EXTENSIONS ON)
endfunction()

# kit_cpu_sources(<target> <files>...): .cu files through the CPU path's
# source pass (cml_cpu_add_cuda_sources), the others as they are.
function(kit_cpu_sources target)
  set(cu "")
  set(other "")
  foreach(f IN LISTS ARGN)
    if(f MATCHES "\\.cu$")
      list(APPEND cu "${f}")
    else()
      list(APPEND other "${f}")
    endif()
  endforeach()
  if(other)
    target_sources(${target} PRIVATE ${other})
  endif()
  if(cu)
    # The folder cml_cpu_add_cuda_sources writes its .cpp into (its command
    # does not make it).
    file(MAKE_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}/cml_cpu/${target}")
    cml_cpu_add_cuda_sources(${target} SOURCES ${cu})
  endif()
endfunction()

set(KIT_SKIP_RETURN_CODE 77)  # common/include/cml/cml_check.h: CML_EXIT_NO_GPU
set(KIT_TEST_LABEL_SKIP "KIT-SKIP:")
find_program(KIT_COMPUTE_SANITIZER compute-sanitizer HINTS "${CUDAToolkit_BIN_DIR}")
find_program(KIT_NCU ncu HINTS "${CUDAToolkit_BIN_DIR}")

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
# binary when the lab has a host-side model; with KIT_CPU the same files
# again on the CPU path (targets ending in _cpu); with CPU_ONLY, no CUDA
# build. Sets <variant>'s target names in the caller: runner_/tests_/
# model_tests_ and, on the CPU path, runner_cpu_/tests_cpu_<variant>.
function(_kit_lab_variant lab stem variant src_dir)
  cmake_parse_arguments(PARSE_ARGV 4 arg "CPU_ONLY" "" "")
  set(lab_dir "${PROJECT_SOURCE_DIR}/labs/${lab}")
  set(drv_dir "${PROJECT_SOURCE_DIR}/common/labs/${lab}")
  set(gen_dir "${PROJECT_BINARY_DIR}/kit/include/${lab}")
  list(TRANSFORM KIT_LAB_FILES PREPEND "${src_dir}/" OUTPUT_VARIABLE sources)
  if(variant STREQUAL "student")
    set(suffix "")
  else()
    set(suffix "_${variant}")
  endif()

  if(KIT_HAVE_CUDA AND NOT arg_CPU_ONLY)
    set(kern "${stem}_kernels_${variant}")
    add_library(${kern} OBJECT ${sources})
    target_link_libraries(${kern} PRIVATE cml kit::cuda_flags)
    # The manifest's "nvcc_flags" of a file (e.g. -maxrregcount=32): on
    # this variant's copy of it, the only thing that compiles it.
    foreach(f IN LISTS KIT_LAB_NVCC_FLAG_FILES)
      string(MAKE_C_IDENTIFIER "${f}" fid)
      foreach(flag IN LISTS KIT_LAB_NVCC_FLAGS_${fid})
        set_property(SOURCE "${src_dir}/${f}" TARGET_DIRECTORY ${kern} APPEND PROPERTY COMPILE_OPTIONS
          "$<$<COMPILE_LANGUAGE:CUDA>:${flag}>")
      endforeach()
    endforeach()
    _kit_variant_programs("" ${stem}_host)
    set_target_properties(${runner} PROPERTIES CUDA_RESOLVE_DEVICE_SYMBOLS ON LINKER_LANGUAGE CUDA)
    set_target_properties(${tests} PROPERTIES LINKER_LANGUAGE CUDA)
    set(runner_${variant} ${runner} PARENT_SCOPE)
    set(tests_${variant} ${tests} PARENT_SCOPE)
  endif()

  if(KIT_CPU)
    # The same files on the CPU path: the .cu translated (labtool
    # cpu-translate) and compiled as C++ against common/cpu/include.
    set(kern "${stem}_kernels_${variant}_cpu")
    add_library(${kern} OBJECT)
    kit_cpu_target(${kern})
    kit_cpu_sources(${kern} ${sources})
    target_link_libraries(${kern} PRIVATE cml_cpu kit::warnings)
    _kit_variant_programs("_cpu" ${stem}_host_cpu)
    kit_cpu_target(${runner})
    kit_cpu_target(${tests})
    if(variant STREQUAL "student" AND KIT_HAVE_CUDA)
      # Beside a CUDA build a student's CPU-path programs stand in only where
      # no GPU runs the tests: built on demand (cmake/KitOnDemand.cmake) by
      # progress and run, and by the kit's test workflow (target
      # student-cpu), never by the default build, which a file the CPU path
      # cannot compile (it says "the CPU path cannot run") would stop.
      set_target_properties(${kern} ${runner} ${tests} PROPERTIES EXCLUDE_FROM_ALL ON)
      set_property(GLOBAL APPEND PROPERTY KIT_STUDENT_CPU_TARGETS ${runner} ${tests})
    endif()
    set(runner_cpu_${variant} ${runner} PARENT_SCOPE)
    set(tests_cpu_${variant} ${tests} PARENT_SCOPE)
  endif()

  # The host-side model (plain C, no GPU): its own tests, built from this
  # variant's copy of the model file alone.
  if(KIT_LAB_MODEL)
    set(model_tests "test_${stem}_model${suffix}")
    add_executable(${model_tests} "${lab_dir}/tests/model.c" "${src_dir}/${KIT_LAB_MODEL}")
    target_include_directories(${model_tests} PRIVATE "${lab_dir}" "${drv_dir}" "${gen_dir}")
    target_link_libraries(${model_tests} PRIVATE cml cml_criterion_main kit::criterion kit::warnings)
    _kit_depend_on_sources(${model_tests})
    set(model_tests_${variant} ${model_tests} PARENT_SCOPE)
  endif()
endfunction()

# The runner and the GPU test binary of one build (CUDA or CPU path) of a
# variant, on its object library ${kern}; a macro, so runner and tests are
# set in _kit_lab_variant's scope.
macro(_kit_variant_programs tail host_lib)
  target_include_directories(${kern} PRIVATE "${lab_dir}" "${gen_dir}")
  _kit_depend_on_sources(${kern})
  set(runner "${stem}_run${suffix}${tail}")
  set(tests "test_${stem}${suffix}${tail}")
  # run.c and tests/gpu.c compile alike for every variant of a lab (their
  # flags come from the host library and the kit, never from the variant's
  # kernels), so each is compiled once per lab and build (CUDA, CPU path)
  # and its object linked into every variant's runner and test binary: 2
  # compiles a lab and build instead of 2 per reference, skeleton, student
  # and catalogued mistake.
  if(NOT TARGET ${stem}_run_main${tail})
    add_library(${stem}_run_main${tail} OBJECT "${drv_dir}/run.c")
    target_link_libraries(${stem}_run_main${tail} PRIVATE ${host_lib} kit::warnings)
    add_library(${stem}_tests_main${tail} OBJECT "${lab_dir}/tests/gpu.c")
    target_link_libraries(${stem}_tests_main${tail} PRIVATE ${host_lib} cml_criterion_main kit::criterion
      kit::warnings)
    if("${tail}" STREQUAL "_cpu")
      kit_cpu_target(${stem}_run_main${tail})
      kit_cpu_target(${stem}_tests_main${tail})
    endif()
  endif()
  add_executable(${runner})
  target_link_libraries(${runner} PRIVATE ${stem}_run_main${tail} ${kern} ${host_lib} kit::warnings)
  add_executable(${tests})
  target_link_libraries(${tests} PRIVATE ${stem}_tests_main${tail} ${kern} ${host_lib} cml_criterion_main
    kit::criterion kit::warnings)
  if("${tail}" STREQUAL "")   # the CUDA build's: shares the GPUs with the other test binaries (criterion_main.c)
    target_link_libraries(${tests} PRIVATE cml_gpu_lease)
  endif()
endmacro()

# A mistake's files are generated (labtool mutate-lab) by one custom target
# that every build of them waits for, so two builds never write them at once.
function(_kit_depend_on_sources target)
  if(KIT_SOURCES_TARGET)
    add_dependencies(${target} ${KIT_SOURCES_TARGET})
  endif()
endfunction()

# Run a tool under a CMake script that reports "KIT-SKIP:" when there is no GPU.
function(_kit_script_test name script labels)
  add_test(NAME "${name}" COMMAND "${CMAKE_COMMAND}" ${ARGN} -P "${PROJECT_SOURCE_DIR}/cmake/${script}")
  set_tests_properties("${name}" PROPERTIES LABELS "${labels}"
    SKIP_REGULAR_EXPRESSION "${KIT_TEST_LABEL_SKIP}" TIMEOUT 900)
endfunction()

# A student's progress on one test binary: Criterion's run with one line
# per step (cmake/student_progress.cmake).
function(_kit_progress_test name binaries lab labels)
  add_test(NAME "${name}" COMMAND "${CMAKE_COMMAND}" "-DTESTS=${binaries}"
    "-DMANIFEST=${PROJECT_SOURCE_DIR}/labs/${lab}/lab.json" "-DBUILD_DIR=${PROJECT_BINARY_DIR}"
    "-DWORK=${PROJECT_BINARY_DIR}/kit-checks/progress/${name}"
    -P "${PROJECT_SOURCE_DIR}/cmake/student_progress.cmake")
  set_tests_properties("${name}" PROPERTIES LABELS "${labels}" TIMEOUT 1800)
endfunction()

# The opening comment of every student file in <dir> lists the manifest's
# steps of that file, and only those (one kit_step_comment run per file).
function(_kit_step_comment_test name dir)
  foreach(file IN LISTS LAB_FILES)
    set(args "")
    foreach(k RANGE 1 ${LAB_NSTEPS})
      if(LAB_STEP_${k}_FILE STREQUAL file)
        list(APPEND args ${k} ${LAB_STEP_${k}_IDENT})
      endif()
    endforeach()
    add_test(NAME "${name}.${file}" COMMAND kit_step_comment "${dir}/${file}" ${args})
    set_tests_properties("${name}.${file}" PROPERTIES LABELS "host;skeleton")
  endforeach()
endfunction()

# The runner `cmake --workflow --preset run` runs for a lab (of the
# variant's builds: the CUDA one, then the CPU path's for a machine without
# a usable GPU).
function(_kit_register_runner lab variant)
  set(paths "")
  foreach(target IN ITEMS ${runner_${variant}} ${runner_cpu_${variant}})
    get_target_property(on_demand ${target} EXCLUDE_FROM_ALL)
    if(on_demand)
      # a student's CPU-path runner beside a CUDA build: built on demand by
      # run_labs.cmake (a $<TARGET_FILE:> here would make run-labs build it)
      list(APPEND paths "${PROJECT_BINARY_DIR}/${target}")
    else()
      list(APPEND paths "$<TARGET_FILE:${target}>")
      set_property(GLOBAL APPEND PROPERTY KIT_LAB_RUNNER_TARGETS ${target})
    endif()
  endforeach()
  list(JOIN paths "=" paths)
  set_property(GLOBAL APPEND PROPERTY KIT_LAB_RUNNERS "${lab}=${paths}")
endfunction()

# kit_add_labs(): every lab folder with a manifest, in name order, then the
# kit's description of them (<build>/kit/labs.json) and the run target.
function(kit_add_labs)
  file(GLOB manifests RELATIVE "${PROJECT_SOURCE_DIR}/labs" CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/labs/*/lab.json")
  list(SORT manifests)
  foreach(m IN LISTS manifests)
    get_filename_component(lab "${m}" DIRECTORY)
    kit_add_lab(${lab})
  endforeach()
  get_property(names GLOBAL PROPERTY KIT_LAB_NAMES)
  if(NOT names)
    message(FATAL_ERROR "no lab found: every lab has a manifest labs/<lab>/lab.json (docs/lab-manifest.md)")
  endif()
  set(json "{\"format\": 1, \"labs\": []}")
  set(i 0)
  foreach(lab IN LISTS names)
    # One property per lab: a description holds ';', a list separator.
    get_property(d GLOBAL PROPERTY KIT_LAB_DESCRIPTION_${lab})
    string(JSON json SET "${json}" labs ${i} "${d}")
    math(EXPR i "${i} + 1")
  endforeach()
  file(CONFIGURE OUTPUT "${PROJECT_BINARY_DIR}/kit/labs.json" CONTENT "${json}\n" @ONLY)
  # README's lab table and the results index are made from the manifests.
  add_test(NAME kit.docs_match_manifests
    COMMAND "${CMAKE_COMMAND}" "-DSOURCE_DIR=${PROJECT_SOURCE_DIR}" -P "${PROJECT_SOURCE_DIR}/cmake/kit_docs.cmake")
  set_tests_properties(kit.docs_match_manifests PROPERTIES LABELS "host")
  list(JOIN names ", " shown)
  message(STATUS "Labs: ${shown}")
  kit_add_run_target()
  kit_add_progress_target()
endfunction()

# kit_add_lab(<lab>): everything of one lab, from its manifest
# labs/<lab>/lab.json (docs/lab-manifest.md):
#   labs/<lab>/: the student's files ("files"; the first is the kernel file),
#   <stem>.h, tests/gpu.c, tests/host.c (optional) and, with a "model",
#   tests/model.c: host tests of the plain-C model file that need no GPU.
#   solutions/<lab>/: the reference copies of the files and mistakes.toml
#   (absent in a student release: then only the student's targets exist).
#   common/labs/<lab>/: the runner's run.c and the lab's host support.
#   "sanitize": runner arguments, one string per compute-sanitizer run of
#   `--step all --check-only`; the first also runs each sanitizer mistake.
function(kit_add_lab lab)
  set(lab_dir "${PROJECT_SOURCE_DIR}/labs/${lab}")
  set(sol_dir "${PROJECT_SOURCE_DIR}/solutions/${lab}")
  set(drv_dir "${PROJECT_SOURCE_DIR}/common/labs/${lab}")
  kit_read_manifest("${lab_dir}")
  set(stem "${LAB_STEM}")
  set(KIT_LAB_FILES ${LAB_FILES})
  set(KIT_LAB_MODEL "${LAB_MODEL}")
  set(KIT_LAB_NVCC_FLAG_FILES "${LAB_NVCC_FLAG_FILES}")
  foreach(f IN LISTS LAB_NVCC_FLAG_FILES)
    string(MAKE_C_IDENTIFIER "${f}" fid)
    set(KIT_LAB_NVCC_FLAGS_${fid} "${LAB_NVCC_FLAGS_${fid}}")
    if(KIT_CPU)   # said once per file, at configure
      list(JOIN LAB_NVCC_FLAGS_${fid} " " shown)
      message(STATUS "${lab}: nvcc flags of ${f} (${shown}) apply to CUDA builds only; "
                     "the CPU path ignores them (no registers or spills to set there)")
    endif()
  endforeach()
  string(REPLACE ";" "|" sanitize_configs "${LAB_SANITIZE}")
  list(GET LAB_SANITIZE 0 mistake_args)
  # the reference and its catalogue: in the developer kit only (KIT_EDITION)
  set(has_solution 0)
  if(KIT_EDITION STREQUAL "developer")   # kit_require_developer_parts: they are there
    set(has_solution 1)
  endif()

  # Student file names are unique across labs: the grader and the release
  # find a student's file by its name.
  get_property(seen GLOBAL PROPERTY KIT_STUDENT_FILES)
  foreach(f IN LISTS LAB_FILES)
    if("${f}" IN_LIST seen)
      message(FATAL_ERROR "labs/${lab}/lab.json: student file '${f}' is also a file of another lab; names must be unique across labs")
    endif()
  endforeach()
  set_property(GLOBAL APPEND PROPERTY KIT_STUDENT_FILES ${LAB_FILES})

  # The step table for C, generated into the build tree.
  set(gen_dir "${PROJECT_BINARY_DIR}/kit/include/${lab}")
  kit_write_step_header("${gen_dir}/${stem}_steps.h")
  kit_manifest_description(desc ${has_solution})
  set_property(GLOBAL PROPERTY KIT_LAB_DESCRIPTION_${lab} "${desc}")
  set_property(GLOBAL APPEND PROPERTY KIT_LAB_NAMES "${lab}")

  # Host support of the lab (data, CPU reference, library anchors): all of
  # common/labs/<lab>/ except the runner's main() and the kit-only checker's
  # harness (grader/CMakeLists.txt builds it, with none of the kit's checking code).
  file(GLOB host_srcs CONFIGURE_DEPENDS "${drv_dir}/*.c" "${drv_dir}/*.cu")
  list(REMOVE_ITEM host_srcs "${drv_dir}/run.c" "${drv_dir}/harness.c")
  # The lab's spec (cml_spec.h): its cases and judge, for the tests and the grader's verifier.
  if(EXISTS "${lab_dir}/spec.c")
    list(APPEND host_srcs "${lab_dir}/spec.c")
  endif()
  if(KIT_HAVE_CUDA)
    add_library(${stem}_host STATIC ${host_srcs})
    target_include_directories(${stem}_host PUBLIC "${drv_dir}" "${lab_dir}" "${gen_dir}")
    target_link_libraries(${stem}_host PUBLIC cml PRIVATE kit::cuda_flags)
    # The manifest's "cuda_libraries" (e.g. cublas for an anchor): CUDA::<name>.
    foreach(l IN LISTS LAB_CUDA_LIBRARIES)
      if(NOT TARGET CUDA::${l})
        message(FATAL_ERROR "labs/${lab}/lab.json: \"cuda_libraries\" names '${l}', but the CUDA toolkit has no CUDA::${l}")
      endif()
      target_link_libraries(${stem}_host PUBLIC CUDA::${l})
    endforeach()
    set(host_lib ${stem}_host)
  endif()
  if(KIT_CPU)
    # On the CPU path the "cuda_libraries" are stand-ins inside cml_cpu_runtime.
    add_library(${stem}_host_cpu STATIC)
    kit_cpu_target(${stem}_host_cpu)
    kit_cpu_sources(${stem}_host_cpu ${host_srcs})
    target_include_directories(${stem}_host_cpu PUBLIC "${drv_dir}" "${lab_dir}" "${gen_dir}")
    target_link_libraries(${stem}_host_cpu PUBLIC cml_cpu PRIVATE kit::warnings)
    if(NOT KIT_HAVE_CUDA)
      set(host_lib ${stem}_host_cpu)
    endif()
  endif()

  # The grader's verifier of the lab's cases (cml_spec.h): the spec and the
  # kit's host code, never student code. Host C only (it launches nothing),
  # so it links the CPU path's build of that code wherever there is one, as
  # without nvcc: grading on the CPU path then builds no CUDA library for it
  # (the GPU host library and cml were built for the verifiers alone there).
  if(EXISTS "${lab_dir}/spec.c")
    add_executable(${stem}_verify "${PROJECT_SOURCE_DIR}/common/src/verify_main.c")
    if(KIT_CPU)
      target_link_libraries(${stem}_verify PRIVATE ${stem}_host_cpu kit::warnings)
    else()
      target_link_libraries(${stem}_verify PRIVATE ${host_lib} kit::warnings)
    endif()
  endif()

  set(KIT_SOURCES_TARGET "")
  _kit_lab_variant(${lab} ${stem} student "${lab_dir}")

  if(EXISTS "${lab_dir}/tests/host.c")
    kit_add_host_test(${lab}.host SOURCES "${lab_dir}/tests/host.c" LIBS ${host_lib}
      DEFINITIONS KIT_LAB_DIR="${lab_dir}")
  endif()

  # A student's progress: the same tests on the files in labs/<lab>/,
  # expected to fail until the steps are done (label "student": not part of
  # the kit's own test presets). Each prints a line per step.
  # The GPU tests, and the CPU path's (used where the GPU tests cannot run).
  # Paths, never $<TARGET_FILE:>: a target named in the progress target's
  # command would be built before it, every lab's; progress builds the labs
  # it shows itself (progress_all.cmake, KitOnDemand.cmake).
  set(progress_bins "")
  foreach(t IN LISTS model_tests_student tests_student tests_cpu_student)
    list(APPEND progress_bins "${PROJECT_BINARY_DIR}/${t}")
  endforeach()
  string(REPLACE ";" "|" progress_bins "${progress_bins}")
  _kit_progress_test(${lab}.student "${progress_bins}" "${lab}" "student")
  set_property(GLOBAL APPEND PROPERTY KIT_PROGRESS_ENTRIES "${lab}=${progress_bins}")

  # The opening comment of each student file lists the steps in that file.
  _kit_step_comment_test(${lab}.skeleton_comment_lists_the_steps "${lab_dir}")

  if(NOT has_solution)
    _kit_register_runner(${lab} student)
    return()  # a student release or the grader's tree of a submission: no reference, no catalogue
  endif()

  _kit_lab_variant(${lab} ${stem} ref "${sol_dir}")
  _kit_step_comment_test(${lab}.solution_comment_lists_the_steps "${sol_dir}")

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
    # cleanly; no GPU needed for either.
    add_test(NAME ${lab}.model.reference COMMAND ${model_tests_ref})
    set_tests_properties(${lab}.model.reference PROPERTIES LABELS "host;reference" TIMEOUT 120)
    _kit_script_test(${lab}.model.skeleton_fails_cleanly check_fails_cleanly.cmake "host;skeleton"
      "-DTESTS=$<TARGET_FILE:${model_tests_student}>" "-DWORK=${CMAKE_CURRENT_BINARY_DIR}/kit-checks/${lab}/model")
  endif()

  if(KIT_HAVE_CUDA)
    # Reference: every GPU test passes (or the whole binary skips without a GPU).
    add_test(NAME ${lab}.reference COMMAND ${tests_ref})
    set_tests_properties(${lab}.reference PROPERTIES LABELS "gpu;reference"
      SKIP_RETURN_CODE ${KIT_SKIP_RETURN_CODE} TIMEOUT 900)

    # Untouched skeleton: every test fails, none crashes or hangs.
    _kit_script_test(${lab}.skeleton_fails_cleanly check_fails_cleanly.cmake "gpu;skeleton"
      "-DTESTS=$<TARGET_FILE:${tests_student}>" "-DWORK=${CMAKE_CURRENT_BINARY_DIR}/kit-checks/${lab}")

    # compute-sanitizer on the reference runner, every step, each SANITIZE configuration.
    foreach(tool memcheck racecheck synccheck initcheck)
      _kit_script_test(${lab}.reference.${tool} run_sanitizer.cmake "gpu;sanitizer;reference"
        "-DTOOL=${tool}" "-DSANITIZER=${KIT_COMPUTE_SANITIZER}" "-DRUNNER=$<TARGET_FILE:${runner_ref}>"
        "-DCONFIGS=${sanitize_configs}")
    endforeach()
  endif()

  if(KIT_CPU)
    # The same on the CPU path (label cpu): never skipped for want of a GPU.
    add_test(NAME ${lab}.cpu.reference COMMAND ${tests_cpu_ref})
    set_tests_properties(${lab}.cpu.reference PROPERTIES LABELS "cpu;reference" TIMEOUT 900)
    _kit_script_test(${lab}.cpu.skeleton_fails_cleanly check_fails_cleanly.cmake "cpu;skeleton"
      "-DTESTS=$<TARGET_FILE:${tests_cpu_student}>" "-DWORK=${CMAKE_CURRENT_BINARY_DIR}/kit-checks/${lab}/cpu" -DCPU=ON)
    # The CPU race check (CML_CPU_CHECK=race) of every reference step, each
    # SANITIZE configuration; the CPU path checks every access's bounds too.
    _kit_script_test(${lab}.cpu.reference.racecheck run_cpu_check.cmake "cpu;sanitizer;reference"
      "-DRUNNER=$<TARGET_FILE:${runner_cpu_ref}>" "-DCONFIGS=${sanitize_configs}")
    # The runner's table on the CPU path: every step checked and timed, the
    # times labelled emulated and compared with no ceiling or anchor.
    _kit_script_test(${lab}.cpu.reference.table check_cpu_table.cmake "cpu;reference"
      "-DRUNNER=$<TARGET_FILE:${runner_cpu_ref}>" "-DARGS=${mistake_args}")
    # Coalescing on the GPU (ncu) against the CPU path's counts, every step
    # (a visible skip without a GPU, a CUDA build or Nsight Compute).
    # Which labs, the bounds and the CPU path's expected figures: the
    # manifest's "sectors" (cmake/KitManifest.cmake, docs/lab-manifest.md).
    set(gpu_runner "")
    if(KIT_HAVE_CUDA)
      set(gpu_runner "$<TARGET_FILE:${runner_ref}>")
    endif()
    set(bounds "")
    foreach(b IN LISTS LAB_SECTORS_BOUNDS)
      list(APPEND bounds --bound "${b}")
    endforeach()
    separate_arguments(sizes UNIX_COMMAND "${mistake_args}")
    # The same comparison for every lab, as tools/gpu-verify access runs it
    # (cmake/access_page.cmake): the runners, sizes and bounds the test
    # would use, whether or not the manifest holds the lab to it.
    set(agrees 0)
    if(LAB_SECTORS_AGREE)
      set(agrees 1)
    endif()
    file(GENERATE OUTPUT "${PROJECT_BINARY_DIR}/kit/access/${lab}.cmake" CONTENT
"# Written by cmake/Kit.cmake at configure: ${lab}'s comparison for cmake/access_page.cmake.
set(ACCESS_LAB [==[${lab}]==])
set(ACCESS_TOOL [==[$<TARGET_FILE:kit_sectors_agree>]==])
set(ACCESS_GPU_RUNNER [==[${gpu_runner}]==])
set(ACCESS_CPU_RUNNER [==[$<TARGET_FILE:${runner_cpu_ref}>]==])
set(ACCESS_SIZES [==[${mistake_args}]==])
set(ACCESS_BOUNDS [==[${LAB_SECTORS_BOUNDS}]==])
set(ACCESS_AGREES ${agrees})
set(ACCESS_NCU [==[${KIT_NCU}]==])
")
    if(LAB_SECTORS_AGREE)
      add_test(NAME ${lab}.reference.sectors_agree COMMAND kit_sectors_agree "${gpu_runner}"
        "$<TARGET_FILE:${runner_cpu_ref}>" ${bounds} -- ${sizes})
      # COST: among the longest GPU tests (Nsight Compute on every launch:
      # 170-390 s a lab on an H200), so ctest -j starts them early, beside
      # the grader's long tests, not last (where they would set the end)
      set_tests_properties(${lab}.reference.sectors_agree PROPERTIES LABELS "gpu;reference"
        SKIP_RETURN_CODE ${KIT_SKIP_RETURN_CODE} TIMEOUT 900 COST 250)
      if(KIT_NCU)
        set_tests_properties(${lab}.reference.sectors_agree PROPERTIES ENVIRONMENT "CML_NCU=${KIT_NCU}")
      endif()
    endif()
    if(NOT LAB_SECTORS_CPU_EXPECT STREQUAL "")
      # The bank conflicts beside the sectors: the manifest's "counters"
      # expectations (zero, nonzero) of the two bank-conflict metrics.
      set(bank_expect "")
      string(JSON ncounters ERROR_VARIABLE err LENGTH "${LAB_JSON}" counters)
      if(NOT err AND ncounters GREATER 0)
        math(EXPR last_counter "${ncounters} - 1")
        foreach(i RANGE ${last_counter})
          string(JSON metric GET "${LAB_JSON}" counters ${i} metric)
          string(JSON nexpect ERROR_VARIABLE err LENGTH "${LAB_JSON}" counters ${i} expect)
          if(err OR NOT metric MATCHES "^l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_(ld|st)\\.sum$")
            continue()
          endif()
          set(dir "${CMAKE_MATCH_1}")
          math(EXPR last_expect "${nexpect} - 1")
          foreach(j RANGE ${last_expect})
            string(JSON step MEMBER "${LAB_JSON}" counters ${i} expect ${j})
            string(JSON kind GET "${LAB_JSON}" counters ${i} expect ${step})
            list(APPEND bank_expect "${step}:${dir}:${kind}")
          endforeach()
        endforeach()
      endif()
      list(JOIN bank_expect "|" bank_expect)
      _kit_script_test(${lab}.cpu.reference.sectors check_cpu_sectors.cmake "cpu;reference"
        "-DRUNNER=$<TARGET_FILE:${runner_cpu_ref}>" "-DARGS=${LAB_SECTORS_CPU_ARGS}" "-DEXPECT=${LAB_SECTORS_CPU_EXPECT}"
        "-DBANKS=${bank_expect}")
    endif()
    # The access picture end to end (--picture, common/cpu/README.md): lab
    # 06's plain tile (step 3) drawn at 32-way, its padded tile (step 4) at
    # degree 1, at the manifest's CPU sector sizes; the SVG parsed as XML
    # where Python 3 is found.
    if(lab STREQUAL "06_transpose")
      find_program(KIT_PYTHON3 python3)
      set(python_arg "")
      if(KIT_PYTHON3)
        set(python_arg "-DPYTHON=${KIT_PYTHON3}")
      endif()
      _kit_script_test(${lab}.cpu.reference.picture check_cpu_picture.cmake "cpu;reference"
        "-DRUNNER=$<TARGET_FILE:${runner_cpu_ref}>" "-DARGS=${LAB_SECTORS_CPU_ARGS}"
        "-DWORK=${CMAKE_CURRENT_BINARY_DIR}/kit-checks/${lab}/picture" ${python_arg}
        "-DWRONG_RUNNER=$<TARGET_FILE:${LAB_STEM}_run_mistake_block_indices_not_swapped_on_the_write_cpu>")
    endif()
  endif()

  # The access pictures of the handouts and decks (docs/pictures/<lab>_stepN.svg),
  # one per step the manifest's "pictures" names (LAB_PICTURES, "step|args"):
  # drawn by the reference's run on the CPU path; the test fails when the
  # kept ones are not what it draws now, the target `pictures` writes them.
  if(LAB_PICTURES)
    list(JOIN LAB_PICTURES "@" entries)
    set(picture_args "-DRUNNER=$<TARGET_FILE:${runner_cpu_ref}>" "-DLAB=${lab}" "-DENTRIES=${entries}"
      "-DDIR=${PROJECT_SOURCE_DIR}/docs/pictures" "-DWORK=${CMAKE_CURRENT_BINARY_DIR}/kit-checks/${lab}/pictures")
    _kit_script_test(${lab}.cpu.reference.pictures kit_pictures.cmake "cpu;reference" ${picture_args})
    add_custom_target(pictures_${lab}
      COMMAND "${CMAKE_COMMAND}" -DMODE=write ${picture_args} -P "${PROJECT_SOURCE_DIR}/cmake/kit_pictures.cmake"
      DEPENDS ${runner_cpu_ref} VERBATIM)
    if(NOT TARGET pictures)
      add_custom_target(pictures)
    endif()
    add_dependencies(pictures pictures_${lab})
  endif()

  # The catalogue of classic mistakes: each one built from the solution and
  # proven to be caught by the tests or by a sanitizer (on the CPU path: by
  # the tests, the CPU race check, its bounds report or its bank counts).
  # (kit_require_developer_parts made sure it is there: this is the developer kit, past the return above)
  set(catalogue "${sol_dir}/mistakes.toml")
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
    set(KIT_SOURCES_TARGET "mistake_sources_${stem}_${name}")
    add_custom_target(${KIT_SOURCES_TARGET} DEPENDS ${out_files} "${out_dir}/mistake.cmake")
    set(cpu_only "")
    if(NOT KIT_GPU_MISTAKES)   # no GPU listed (CMakeLists.txt): the CPU path's build alone
      set(cpu_only CPU_ONLY)
    endif()
    _kit_lab_variant(${lab} ${stem} mistake_${name} "${out_dir}" ${cpu_only})
    set(model_bins "")
    if(KIT_LAB_MODEL)
      set(model_bins "$<TARGET_FILE:${model_tests_mistake_${name}}>")
    endif()
    # Every test binary of the variant: the model's (host) and the GPU tests.
    if(KIT_HAVE_CUDA AND KIT_GPU_MISTAKES)
      set(test_binaries ${model_bins} "$<TARGET_FILE:${tests_mistake_${name}}>")
      string(REPLACE ";" "|" test_binaries "${test_binaries}")
      _kit_script_test(${lab}.mistake.${name} check_mistake.cmake "gpu;mistake"
        "-DINFO=${out_dir}/mistake.cmake" "-DTESTS=${test_binaries}"
        "-DRUNNER=$<TARGET_FILE:${runner_mistake_${name}}>" "-DSANITIZER=${KIT_COMPUTE_SANITIZER}"
        "-DRUNNER_ARGS=${mistake_args}" "-DWORK=${out_dir}")
    endif()
    if(KIT_CPU)
      set(test_binaries ${model_bins} "$<TARGET_FILE:${tests_cpu_mistake_${name}}>")
      string(REPLACE ";" "|" test_binaries "${test_binaries}")
      _kit_script_test(${lab}.cpu.mistake.${name} check_mistake.cmake "cpu;mistake"
        "-DINFO=${out_dir}/mistake.cmake" "-DTESTS=${test_binaries}"
        "-DRUNNER=$<TARGET_FILE:${runner_cpu_mistake_${name}}>" -DCPU=ON
        "-DRUNNER_ARGS=${mistake_args}" "-DWORK=${out_dir}/cpu")
    endif()
  endforeach()

  _kit_register_runner(${lab} ref)
endfunction()

# The main job: run every built lab's reference steps and print the tables
# (in a student release, the student's runners).
function(kit_add_run_target)
  get_property(runners GLOBAL PROPERTY KIT_LAB_RUNNERS)
  get_property(targets GLOBAL PROPERTY KIT_LAB_RUNNER_TARGETS)
  string(REPLACE ";" "|" runners "${runners}")
  add_custom_target(run-labs
    COMMAND "${CMAKE_COMMAND}" "-DRUNNERS=${runners}" "-DSOURCE_DIR=${PROJECT_SOURCE_DIR}"
            "-DBUILD_DIR=${PROJECT_BINARY_DIR}"
            -P "${PROJECT_SOURCE_DIR}/cmake/run_labs.cmake"
    DEPENDS ${targets}
    USES_TERMINAL
    VERBATIM
    COMMENT "Running every lab's reference steps")
endfunction()

# A student's progress: builds the student's test binaries of the labs it
# shows (progress_all.cmake: LAB=04 builds lab 04's only, so the run is never
# of an old build) and prints each lab's steps, done or not. Also the
# target student-cpu: a student's CPU-path programs that a CUDA build leaves
# out of the default build, for the kit's test workflow.
function(kit_add_progress_target)
  get_property(student_cpu GLOBAL PROPERTY KIT_STUDENT_CPU_TARGETS)
  add_custom_target(student-cpu)
  if(student_cpu)
    add_dependencies(student-cpu ${student_cpu})
  endif()
  get_property(entries GLOBAL PROPERTY KIT_PROGRESS_ENTRIES)
  string(REPLACE ";" "^" entries "${entries}")
  add_custom_target(progress
    COMMAND "${CMAKE_COMMAND}" "-DENTRIES=${entries}" "-DSOURCE_DIR=${PROJECT_SOURCE_DIR}"
            "-DBUILD_DIR=${PROJECT_BINARY_DIR}"
            "-DWORK=${PROJECT_BINARY_DIR}/kit-checks/progress"
            -P "${PROJECT_SOURCE_DIR}/cmake/progress_all.cmake"
    USES_TERMINAL
    VERBATIM
    COMMENT "Your progress: the tests on your files in labs/")
endfunction()
