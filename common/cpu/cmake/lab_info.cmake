# cmake -DKIT_ROOT=<repo> -DLAB=<lab> -DOUT=<dir> -P lab_info.cmake
# Writes <OUT>/<stem>_steps.h (the step table the kit's build generates)
# and <OUT>/lab.sh (STEM, FILES, MODEL as shell variables) for try-lab.sh.
cmake_minimum_required(VERSION 3.25)
include("${KIT_ROOT}/cmake/KitManifest.cmake")
kit_read_manifest("${KIT_ROOT}/labs/${LAB}")
kit_write_step_header("${OUT}/${LAB_STEM}_steps.h")
string(REPLACE ";" " " files "${LAB_FILES}")
file(WRITE "${OUT}/lab.sh" "STEM='${LAB_STEM}'\nFILES='${files}'\nMODEL='${LAB_MODEL}'\n")
