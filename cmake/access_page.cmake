# Usage: cmake -DBUILD_DIR=<build> -DOUT=<dir> -DGPU_DIR=<name> [-DLABS=<lab>;<lab>...]
#              [-DGPU_NAME=<name>] [-DDRIVER=<version>] [-DNCU_VERSION=<text>] -P access_page.cmake
# The memory-access page of one GPU, OUT/docs/results/GPU_DIR/access.md
# (tools/gpu-verify access): for every lab, kit_sectors_agree --markdown on
# its reference runners, the GPU's under Nsight Compute and the CPU path's,
# with the sizes and bounds its sectors_agree test uses (written at
# configure into <build>/kit/access/<lab>.cmake by cmake/Kit.cmake), every
# step. Each lab gets its section, whatever its verdict. Fails (after the
# page is written) when a lab whose manifest holds it to the GPU
# ("sectors": {"gpu_agrees": true}) does not agree or was not measured.
cmake_policy(SET CMP0057 NEW)  # if(... IN_LIST ...)
file(GLOB specs "${BUILD_DIR}/kit/access/*.cmake")
list(SORT specs)
if(NOT specs)
  message(FATAL_ERROR "${BUILD_DIR}/kit/access/ holds no lab: configure the kit there first (cmake --preset gpu)")
endif()
set(known "")
foreach(spec IN LISTS specs)
  get_filename_component(lab "${spec}" NAME_WE)
  list(APPEND known "${lab}")
endforeach()
foreach(lab IN LISTS LABS)
  if(NOT lab IN_LIST known)
    message(FATAL_ERROR "LABS names '${lab}', which is not a lab of this build (${known})")
  endif()
endforeach()
foreach(v GPU_NAME DRIVER NCU_VERSION)
  if("${${v}}" STREQUAL "")
    set(${v} "unknown")
  endif()
endforeach()
string(TIMESTAMP today "%Y-%m-%d" UTC)
set(dir "${OUT}/docs/results/${GPU_DIR}")
file(MAKE_DIRECTORY "${dir}")
set(page "${dir}/access.md")

set(chosen "")
foreach(lab IN LISTS known)
  if(NOT LABS OR lab IN_LIST LABS)
    list(APPEND chosen "${lab}")
  endif()
endforeach()
set(toc "")
foreach(lab IN LISTS chosen)
  string(APPEND toc "- [${lab}](#${lab})\n")
endforeach()
file(WRITE "${page}" "# Memory access on ${GPU_NAME}: the CPU path against Nsight Compute

Measured on ${today}, driver ${DRIVER}, Nsight Compute ${NCU_VERSION}, by
`tools/gpu-verify access`: each lab's reference solution, every step, run
twice at the sizes of its tests: on this GPU under Nsight Compute
(`<stem>_run_ref --sectors`) and on the CPU path (`<stem>_run_ref_cpu
--sectors`, your kernels run on the CPU, no GPU needed). Nothing here is
typed by hand.

How to read a row: a *request* is one warp-wide load or store instruction
to global memory (`ld` or `st`); the *sectors* are the 32-byte pieces of
memory its 32 lanes touch. 32 lanes reading consecutive 4-byte words touch
128 bytes, 4 sectors: 4 sectors per request is a coalesced access, 32 means
every lane's word sits in a sector of its own (8 times the memory traffic).
*requests GPU / CPU path*: the same count on both sides means both ran the
same instructions. *agreement*: `the same` (exactly the same sectors per
request), `within N%: why` (where the two compilers shape a loop
differently; the reason is given and the lab's test allows it), or
`differs`. *bank conflicts*: shared-memory accesses of the same direction
that needed more than one pass through the 32 banks (the extra passes,
Nsight Compute's `l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld/st.sum`
against the CPU path's bank model, the one lab 01 teaches). They are shown
side by side, never required to be equal: a GPU counts some conflicts of its
own (e.g. lab 06's padded and swizzled tiles at odd sizes) where the model
says 0, so the CPU path's 0 says your access pattern is conflict-free in the
model. Kernels are named without template arguments; a kernel's launches in
a step are summed.

${toc}")

set(failed "")
foreach(spec IN LISTS specs)
  get_filename_component(lab "${spec}" NAME_WE)
  if(NOT lab IN_LIST chosen)
    continue()
  endif()
  include("${spec}")
  set(bound_args "")
  foreach(b IN LISTS ACCESS_BOUNDS)
    list(APPEND bound_args --bound "${b}")
  endforeach()
  if(ACCESS_AGREES)
    set(note "The test `${lab}.reference.sectors_agree` holds this lab to that agreement.")
  else()
    set(note "No test holds this lab to that agreement (its manifest has no \"gpu_agrees\"): the rows are reported as measured.")
  endif()
  separate_arguments(sizes UNIX_COMMAND "${ACCESS_SIZES}")
  if(ACCESS_NCU AND NOT ACCESS_NCU MATCHES "NOTFOUND$" AND "$ENV{CML_NCU}" STREQUAL "")
    set(ENV{CML_NCU} "${ACCESS_NCU}")
  endif()
  message("==> ${lab}: kit_sectors_agree ${ACCESS_GPU_RUNNER} ${ACCESS_CPU_RUNNER} -- ${ACCESS_SIZES}")
  # (the runners quoted: an empty GPU runner, a build without CUDA, is an argument of its own)
  execute_process(COMMAND "${ACCESS_TOOL}" "${ACCESS_GPU_RUNNER}" "${ACCESS_CPU_RUNNER}" ${bound_args}
    --markdown "${page}" --lab "${lab}" --note "${note}" -- ${sizes} RESULT_VARIABLE rc)
  if(ACCESS_AGREES AND NOT rc EQUAL 0)
    list(APPEND failed "${lab} (exit ${rc})")
  endif()
endforeach()
message("==> wrote ${page}")
if(failed)
  message(FATAL_ERROR "labs held to agreement with the GPU that did not agree or were not measured: ${failed}")
endif()
