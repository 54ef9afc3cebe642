# Choose CUDA architectures before the CUDA language is enabled.
#
# Order of precedence:
#   1. -DCMAKE_CUDA_ARCHITECTURES=...   (cache variable; also "native", "all")
#   2. the CUDAARCHS environment variable (CMake's own convention)
#   3. the compute capability of the visible GPU(s), read with nvidia-smi
#   4. no GPU visible: sm_90 alone. Nothing built here runs on a GPU (the CPU
#      path runs the kernels), so one architecture is enough to compile them
#      and is several times faster than the portable list below, which a
#      build for other machines asks for by name:
#      -DCMAKE_CUDA_ARCHITECTURES="75;80;86;89;90;100;120" (Turing to
#      Blackwell; CUDA 13 has no sm_70).
#
# CMake's own "native" fails to configure on a machine without a GPU; this
# file never asks for "native" itself, so configuring works everywhere.
set(KIT_PORTABLE_CUDA_ARCHITECTURES "75;80;86;89;90;100;120")

# The compute capabilities of the GPUs nvidia-smi lists, as "90;100" ("":
# none listed, or no nvidia-smi), asked once a configure: the architectures
# below when none is given, and KIT_GPU_MISTAKES's default (CMakeLists.txt).
function(kit_listed_gpu_caps out)
  get_property(asked GLOBAL PROPERTY KIT_LISTED_GPU_CAPS SET)
  if(NOT asked)
    set(caps "")
    find_program(KIT_NVIDIA_SMI nvidia-smi)
    if(KIT_NVIDIA_SMI)
      execute_process(COMMAND "${KIT_NVIDIA_SMI}" --query-gpu=compute_cap --format=csv,noheader
                      OUTPUT_VARIABLE listed RESULT_VARIABLE rc ERROR_QUIET TIMEOUT 20)
      if(rc EQUAL 0)
        string(REGEX MATCHALL "[0-9]+\\.[0-9]+" listed "${listed}")
        foreach(cap IN LISTS listed)
          string(REPLACE "." "" cap "${cap}")
          list(APPEND caps "${cap}")
        endforeach()
        list(REMOVE_DUPLICATES caps)
      endif()
    endif()
    set_property(GLOBAL PROPERTY KIT_LISTED_GPU_CAPS "${caps}")
  endif()
  get_property(caps GLOBAL PROPERTY KIT_LISTED_GPU_CAPS)
  set(${out} "${caps}" PARENT_SCOPE)
endfunction()

if(DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT CMAKE_CUDA_ARCHITECTURES STREQUAL "")
  set(_kit_arch_source "CMAKE_CUDA_ARCHITECTURES")
elseif(DEFINED ENV{CUDAARCHS} AND NOT "$ENV{CUDAARCHS}" STREQUAL "")
  set(CMAKE_CUDA_ARCHITECTURES "$ENV{CUDAARCHS}" CACHE STRING "CUDA architectures")
  set(_kit_arch_source "the CUDAARCHS environment variable")
else()
  kit_listed_gpu_caps(_kit_detected)
  if(_kit_detected)
    set(CMAKE_CUDA_ARCHITECTURES "${_kit_detected}" CACHE STRING "CUDA architectures")
    set(_kit_arch_source "the visible GPU (nvidia-smi)")
  else()
    set(CMAKE_CUDA_ARCHITECTURES "90" CACHE STRING "CUDA architectures")
    set(_kit_arch_source "no GPU visible: one architecture to compile for; -DCMAKE_CUDA_ARCHITECTURES=\"${KIT_PORTABLE_CUDA_ARCHITECTURES}\" builds for every GPU")
  endif()
endif()
message(STATUS "CUDA architectures: ${CMAKE_CUDA_ARCHITECTURES} (from ${_kit_arch_source})")
