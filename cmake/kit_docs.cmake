# Usage: cmake -DSOURCE_DIR=<kit> [-DMODE=check|write] -P cmake/kit_docs.cmake
# The parts of the docs that list the labs, made from the manifests
# (labs/*/lab.json) and the results pages on disk:
#   - README.md, the block between "<!-- labs:begin" and "<!-- labs:end -->":
#     one table row per lab;
#   - docs/results/README.md, whole: one line per GPU folder, a link per page;
#   - each handout of a lab whose manifest has "pictures" (labs/<lab>/README.md),
#     the block between "<!-- pictures:begin" and "<!-- pictures:end -->": the
#     reference's access pictures (docs/pictures/, cmake/kit_pictures.cmake)
#     and the command that draws the student's own;
#   - each results page of what limits a step (a "profiles" entry of a
#     manifest) on a GPU its "tried" names, the block between "<!-- tried:begin"
#     and "<!-- tried:end -->" at the page's end: what was tried on that GPU
#     where the step misses its target (the runner writes the page anew on
#     each GPU run; this puts the block back).
# MODE=write rewrites them; MODE=check (the default, the kit's test
# kit.docs_match_manifests) fails and says what differs.
cmake_policy(SET CMP0057 NEW)  # if(... IN_LIST ...)
if(NOT SOURCE_DIR)
  get_filename_component(SOURCE_DIR "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
endif()
if(NOT MODE)
  set(MODE check)
endif()

# One doc file's text as it is (old) and as the manifests make it (new):
# where they differ, say `what` among the problems (MODE=check fails with
# them) and, with MODE=write, write the new text.
set_property(GLOBAL PROPERTY KIT_DOC_PROBLEMS "")
function(_kit_doc_keep path old new what)
  if(old STREQUAL new)
    return()
  endif()
  file(RELATIVE_PATH rel "${SOURCE_DIR}" "${path}")
  set_property(GLOBAL APPEND_STRING PROPERTY KIT_DOC_PROBLEMS "  ${rel}: ${what}\n")
  if(MODE STREQUAL "write")
    file(WRITE "${path}" "${new}")
  endif()
endfunction()

file(GLOB manifests "${SOURCE_DIR}/labs/*/lab.json")
list(SORT manifests)
if(NOT manifests)
  message(FATAL_ERROR "no labs/*/lab.json under ${SOURCE_DIR}")
endif()

# ---------------------------------------------------------------- README table
set(rows "| lab | what you build | runner |\n|---|---|---|\n")
foreach(m IN LISTS manifests)
  file(READ "${m}" json)
  string(JSON name GET "${json}" name)
  string(JSON summary GET "${json}" summary)
  string(JSON stem GET "${json}" stem)
  string(REPLACE "|" "\\|" summary "${summary}")
  string(APPEND rows "| [${name}](labs/${name}/README.md) | ${summary} | `${stem}_run` |\n")
  list(APPEND all_labs "${name}")
endforeach()
set(begin "<!-- labs:begin (made from labs/*/lab.json: cmake -DMODE=write -P cmake/kit_docs.cmake) -->")
set(end "<!-- labs:end -->")
file(READ "${SOURCE_DIR}/README.md" readme)
string(FIND "${readme}" "${begin}" b)
string(FIND "${readme}" "${end}" e)
if(b LESS 0 OR e LESS b)
  message(FATAL_ERROR "README.md has no block between\n  ${begin}\nand\n  ${end}\nfor the lab table")
endif()
string(LENGTH "${begin}" blen)
math(EXPR body_at "${b} + ${blen}")
string(SUBSTRING "${readme}" 0 ${body_at} head)
string(SUBSTRING "${readme}" ${e} -1 tail)
set(new_readme "${head}\n${rows}${tail}")

# ---------------------------------------------------------------- results index
# A page's line: the text of its manifest entry ("what", of a "results" or
# a "profiles" entry), or its file name.
function(_page_what lab suffix out)
  set(what "")
  file(READ "${SOURCE_DIR}/labs/${lab}/lab.json" json)
  foreach(list results profiles)
    string(JSON n ERROR_VARIABLE err LENGTH "${json}" ${list})
    if(NOT err AND n GREATER 0)
      math(EXPR last "${n} - 1")
      foreach(i RANGE ${last})
        string(JSON page GET "${json}" ${list} ${i} page)
        if(page STREQUAL suffix)
          string(JSON what GET "${json}" ${list} ${i} what)
        endif()
      endforeach()
    endif()
  endforeach()
  set(${out} "${what}" PARENT_SCOPE)
endfunction()

set(index "# Results

One folder per GPU, one page per lab (and data type or shape), each written
by the lab's reference runner on that GPU (`<stem>_run_ref --markdown FILE`,
and `--json` for the `.json` files) and dated. Nothing here is typed by
hand: the pages come from `tools/gpu-verify results` (see its `--help`), and
this index from `cmake -DMODE=write -P cmake/kit_docs.cmake`. A folder's
`access.md` (`tools/gpu-verify access`) sets every lab's global-memory
sectors per request and shared-memory bank conflicts, as Nsight Compute
measured them on that GPU, beside the CPU path's counts of the same kernels.
A lab's `_profile` pages (`<stem>_run_ref --profile`) say what limits its
last step there, as Nsight Compute measured it: DRAM bytes against the bytes
the step must move, DRAM throughput, L2 hits, sectors per request, occupancy,
issue slots and the top warp stalls.
")
file(GLOB gpu_dirs LIST_DIRECTORIES true "${SOURCE_DIR}/docs/results/*")
list(SORT gpu_dirs)
set(any_gpu FALSE)
foreach(dir IN LISTS gpu_dirs)
  if(NOT IS_DIRECTORY "${dir}")
    continue()
  endif()
  get_filename_component(gpu_dir "${dir}" NAME)
  file(GLOB pages RELATIVE "${dir}" "${dir}/*.md")
  list(SORT pages)
  if(NOT pages)
    continue()
  endif()
  set(any_gpu TRUE)
  set(gpu_name "${gpu_dir}")
  set(links "")
  foreach(page IN LISTS pages)
    file(STRINGS "${dir}/${page}" first LIMIT_COUNT 1)
    if(page STREQUAL "access.md")  # every lab's, from cmake/access_page.cmake
      if(NOT first MATCHES "^# Memory access on (.+): the CPU path against Nsight Compute$")
        message(FATAL_ERROR "docs/results/${gpu_dir}/access.md does not open with '# Memory access on <GPU>: the CPU "
                            "path against Nsight Compute': not the page tools/gpu-verify access writes")
      endif()
      set(gpu_name "${CMAKE_MATCH_1}")
      string(APPEND links "\n  - [every lab's memory access: the CPU path against Nsight Compute](${gpu_dir}/access.md)")
      continue()
    endif()
    if(first MATCHES "^# ([0-9][0-9]_[a-z0-9_]+) on (.+)$")
      set(lab "${CMAKE_MATCH_1}")
      set(gpu_name "${CMAKE_MATCH_2}")
    else()
      message(FATAL_ERROR "docs/results/${gpu_dir}/${page} does not open with '# <lab> on <GPU>': not a runner's page")
    endif()
    if(NOT EXISTS "${SOURCE_DIR}/labs/${lab}/lab.json")
      message(FATAL_ERROR "docs/results/${gpu_dir}/${page} is a page of '${lab}', which has no labs/${lab}/lab.json")
    endif()
    list(APPEND labs_with_pages "${lab}")
    string(REGEX REPLACE "\\.md$" "" base "${page}")
    string(LENGTH "${lab}" ll)
    string(SUBSTRING "${base}" ${ll} -1 suffix)
    _page_what("${lab}" "${suffix}" what)
    if(what)
      string(APPEND links "\n  - [${lab}, ${what}](${gpu_dir}/${page})")
    else()
      string(APPEND links "\n  - [${lab}](${gpu_dir}/${page})")
    endif()
    string(REGEX REPLACE "\\.md$" ".json" json_page "${page}")
    if(EXISTS "${dir}/${json_page}")
      string(APPEND links " ([JSON](${gpu_dir}/${json_page}))")
    endif()
  endforeach()
  string(APPEND index "\n- [${gpu_name}](${gpu_dir}/):${links}\n")
endforeach()
if(NOT any_gpu)
  string(APPEND index "\nNo GPU run has been recorded yet.\n")
endif()
# Every lab is named: one without a page says so (its runner has not been
# run on a GPU for the kit yet).
set(no_page "")
foreach(lab IN LISTS all_labs)
  list(FIND labs_with_pages "${lab}" at)
  if(at EQUAL -1)
    string(APPEND no_page "\n- ${lab}")
  endif()
endforeach()
if(no_page)
  string(APPEND index "\nNo GPU results page yet (made by `tools/gpu-verify results` on a GPU machine):\n${no_page}\n")
endif()


# ---------------------------------------------------------------- handout pictures
# For a lab with "pictures": one paragraph per step (one entry a step), the
# picture the reference draws and the command that draws the student's own.
foreach(m IN LISTS manifests)
  file(READ "${m}" json)
  string(JSON npic ERROR_VARIABLE err LENGTH "${json}" pictures)
  if(err OR npic EQUAL 0)
    continue()
  endif()
  string(JSON name GET "${json}" name)
  string(JSON stem GET "${json}" stem)
  set(handout "${SOURCE_DIR}/labs/${name}/README.md")
  set(pbegin "<!-- pictures:begin (made from labs/${name}/lab.json and docs/pictures/: cmake -DMODE=write -P cmake/kit_docs.cmake) -->")
  set(pend "<!-- pictures:end -->")
  file(READ "${handout}" text)
  string(FIND "${text}" "${pbegin}" pb)
  string(FIND "${text}" "${pend}" pe)
  if(pb LESS 0 OR pe LESS pb)
    message(FATAL_ERROR "labs/${name}/README.md has no block between\n  ${pbegin}\nand\n  ${pend}\n"
                        "for the access pictures its manifest names (\"pictures\")")
  endif()
  set(body "
Drawn by the kit from the reference solution's run on the CPU path
(`docs/pictures/`): for each step, one warp's worst shared-memory request
(its 32 lanes against the 32 banks, conflicts coloured) and its worst
global-memory request (the lanes against 32-byte sectors and 128-byte
lines). Draw your own kernel's with the command under each: no GPU
needed; open the SVG in a browser.
")
  math(EXPR last "${npic} - 1")
  foreach(i RANGE ${last})
    string(JSON step GET "${json}" pictures ${i} step)
    string(JSON shows GET "${json}" pictures ${i} shows)
    string(JSON args ERROR_VARIABLE err GET "${json}" pictures ${i} args)
    if(err)
      set(args "")
    endif()
    set(ident "")
    string(JSON nsteps LENGTH "${json}" steps)
    math(EXPR slast "${nsteps} - 1")
    foreach(k RANGE ${slast})
      string(JSON num GET "${json}" steps ${k} num)
      if(num EQUAL step)
        string(JSON ident GET "${json}" steps ${k} ident)
      endif()
    endforeach()
    set(svg "docs/pictures/${name}_step${step}.svg")
    if(NOT EXISTS "${SOURCE_DIR}/${svg}")
      message(FATAL_ERROR "${svg} is missing (labs/${name}/lab.json names a picture of step ${step}): "
                          "cmake --build build --target pictures draws it")
    endif()
    set(cmd "cmake --build build --target ${stem}_run_cpu && ./build/${stem}_run_cpu --step ${step} --picture step${step}.svg")
    if(args)
      string(APPEND cmd " ${args}")
    endif()
    string(APPEND body "
**Step ${step} (${ident})**: ${shows}.

![${name} step ${step}: ${shows}](../../${svg})

<!-- doc-check: skip=\"draws your own step ${step}, which the untouched skeleton has not written yet\" -->

    ${cmd}
")
  endforeach()
  string(LENGTH "${pbegin}" pblen)
  math(EXPR pbody "${pb} + ${pblen}")
  string(SUBSTRING "${text}" 0 ${pbody} phead)
  string(SUBSTRING "${text}" ${pe} -1 ptail)
  _kit_doc_keep("${handout}" "${text}" "${phead}\n${body}\n${ptail}"
                "its access pictures differ from the manifest's \"pictures\"")
endforeach()

# ---------------------------------------------------------------- what was tried, on the profile pages
foreach(m IN LISTS manifests)
  file(READ "${m}" json)
  string(JSON name GET "${json}" name)
  string(JSON nprof ERROR_VARIABLE err LENGTH "${json}" profiles)
  if(err OR nprof EQUAL 0)
    continue()
  endif()
  math(EXPR plast "${nprof} - 1")
  foreach(i RANGE ${plast})
    string(JSON page GET "${json}" profiles ${i} page)
    string(JSON ntried ERROR_VARIABLE err LENGTH "${json}" profiles ${i} tried)
    if(err OR ntried EQUAL 0)
      continue()
    endif()
    math(EXPR tlast "${ntried} - 1")
    foreach(t RANGE ${tlast})
      string(JSON gpu MEMBER "${json}" profiles ${i} tried ${t})
      string(JSON what GET "${json}" profiles ${i} tried "${gpu}")
      set(ppath "${SOURCE_DIR}/docs/results/${gpu}/${name}${page}.md")
      if(NOT EXISTS "${ppath}")
        continue()   # not measured on that GPU yet: the block comes with the page
      endif()
      file(READ "${ppath}" text)
      set(tbegin "<!-- tried:begin (made from labs/${name}/lab.json, \"profiles\", \"tried\": cmake -DMODE=write -P cmake/kit_docs.cmake) -->")
      set(tend "<!-- tried:end -->")
      string(FIND "${text}" "<!-- tried:begin" tb)
      if(tb GREATER_EQUAL 0)
        string(SUBSTRING "${text}" 0 ${tb} head)
      else()
        set(head "${text}")
      endif()
      string(REGEX REPLACE "\n+$" "" head "${head}")
      set(new "${head}\n\n${tbegin}\n**What was tried on this GPU.** ${what}\n${tend}\n")
      _kit_doc_keep("${ppath}" "${text}" "${new}" "its \"what was tried\" differs from the manifest's \"tried\"")
    endforeach()
  endforeach()
endforeach()

# ---------------------------------------------------------------- check or write
_kit_doc_keep("${SOURCE_DIR}/README.md" "${readme}" "${new_readme}" "the lab table differs from the manifests")
set(index_path "${SOURCE_DIR}/docs/results/README.md")
set(old_index "")
if(EXISTS "${index_path}")
  file(READ "${index_path}" old_index)
endif()
_kit_doc_keep("${index_path}" "${old_index}" "${index}" "differs from the pages in docs/results/")
get_property(problems GLOBAL PROPERTY KIT_DOC_PROBLEMS)
if(MODE STREQUAL "write")
  message("kit_docs: README.md, docs/results/README.md, the handouts' pictures and the pages' \"what was tried\" are up to date")
elseif(problems)
  message(FATAL_ERROR "kit_docs: the docs that list the labs are out of date:\n${problems}"
                      "Rewrite them with: cmake -DMODE=write -P cmake/kit_docs.cmake")
else()
  message("kit_docs: README.md's lab table, docs/results/README.md, the handouts' pictures and the pages' \"what was tried\" match the manifests and pages")
endif()
