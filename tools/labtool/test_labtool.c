/* test_labtool.c - Criterion tests of the labtool library (host only). */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "labtool.h"

static char err[4096];

static char *skeleton_of(const char *src)
{
    char *out = NULL;
    size_t len = 0;
    int rc = skeleton_generate(src, strlen(src), "sol.cu", &out, &len, err, sizeof err);
    cr_assert_eq(rc, 0, "skeleton_generate failed: %s", err);
    cr_assert_eq(len, strlen(out));
    return out;
}

static void expect_skeleton_error(const char *src, const char *message)
{
    char *out = NULL;
    size_t len = 0;
    cr_assert_eq(skeleton_generate(src, strlen(src), "sol.cu", &out, &len, err, sizeof err), -1);
    cr_assert_str_eq(err, message);
    cr_assert_null(out);
}

/* ---- skeleton ------------------------------------------------------------ */

Test(skeleton, removes_regions_and_unprefixes_stub_lines)
{
    char *out = skeleton_of("#include <cstdio>\n"
                            "__global__ void k(float *x)\n"
                            "{\n"
                            "    // TODO(step 1): compute the global index.\n"
                            "    // Hint: blockIdx, blockDim, threadIdx.\n"
                            "    // BEGIN SOLUTION\n"
                            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                            "    //@ int i = 0;\n"
                            "    // END SOLUTION\n"
                            "    x[i] = 0;\n"
                            "}\n"
                            "int f(void)\n"
                            "{\n"
                            "  // TODO(step 12)\n"
                            "  // BEGIN SOLUTION  \t\n"
                            "  return 42;\n"
                            "\t//@return 0;\n"
                            "  //@  /* two spaces: one is kept */\n"
                            "  // END SOLUTION\n"
                            "}\n");
    cr_assert_str_eq(out, "#include <cstdio>\n"
                          "__global__ void k(float *x)\n"
                          "{\n"
                          "    // TODO(step 1): compute the global index.\n"
                          "    // Hint: blockIdx, blockDim, threadIdx.\n"
                          "    int i = 0;\n"
                          "    x[i] = 0;\n"
                          "}\n"
                          "int f(void)\n"
                          "{\n"
                          "  // TODO(step 12)\n"
                          "\treturn 0;\n"
                          "   /* two spaces: one is kept */\n"
                          "}\n");
    free(out);
}

Test(skeleton, copies_a_file_without_regions_unchanged)
{
    char *out = skeleton_of("int a;\n// BEGIN SOLUTION is only a marker when alone\n\nint b;");
    cr_assert_str_eq(out, "int a;\n// BEGIN SOLUTION is only a marker when alone\n\nint b;");
    free(out);
}

Test(skeleton, keeps_a_missing_final_newline_missing)
{
    char *out = skeleton_of("// TODO(step 3)\n// BEGIN SOLUTION\nx = 1;\n//@ x = 0;\n// END SOLUTION\ny;");
    cr_assert_str_eq(out, "// TODO(step 3)\nx = 0;\ny;");
    free(out);
}

Test(skeleton, reads_crlf_input_and_writes_lf)
{
    char *out = skeleton_of("a\r\n// TODO(step 1)\r\n// BEGIN SOLUTION\r\nb\r\n  //@ c\r\n// END SOLUTION\r\nd\r\n");
    cr_assert_str_eq(out, "a\n// TODO(step 1)\n  c\nd\n");
    free(out);
}

Test(skeleton, rejects_a_nested_begin_marker)
{
    expect_skeleton_error("// TODO(step 1)\n// BEGIN SOLUTION\n// TODO(step 2)\n  // BEGIN SOLUTION\n// END SOLUTION\n",
                          "sol.cu:4: nested BEGIN SOLUTION (the region opened at line 2 is still open)");
}

Test(skeleton, rejects_an_end_marker_without_a_begin)
{
    expect_skeleton_error("int a;\n\n   // END SOLUTION\n", "sol.cu:3: END SOLUTION without an open BEGIN SOLUTION");
}

Test(skeleton, reports_the_begin_line_of_an_unclosed_region)
{
    expect_skeleton_error("int a;\n// TODO(step 1)\n// BEGIN SOLUTION\nint b;\nint c;",
                          "sol.cu:3: BEGIN SOLUTION is never closed by an END SOLUTION");
}

Test(skeleton, rejects_a_stub_line_outside_a_region)
{
    expect_skeleton_error("int a;\n    //@ return 0;\n", "sol.cu:2: //@ stub line outside a BEGIN/END SOLUTION region");
}

Test(skeleton, rejects_a_region_without_a_todo_comment_above_it)
{
    expect_skeleton_error("// a comment\n// BEGIN SOLUTION\n// END SOLUTION\n",
                          "sol.cu:2: solution region at line 2 has no TODO(step N) comment right above it");
}

Test(skeleton, rejects_a_todo_separated_from_the_region_by_code)
{
    expect_skeleton_error("// TODO(step 1)\nint a;\n// BEGIN SOLUTION\n// END SOLUTION\n",
                          "sol.cu:3: solution region at line 3 has no TODO(step N) comment right above it");
}

Test(skeleton, rejects_a_todo_for_step_zero_or_without_a_number)
{
    expect_skeleton_error("// TODO(step 0)\n// TODO(step )\n// TODO(step x)\n// BEGIN SOLUTION\n// END SOLUTION\n",
                          "sol.cu:4: solution region at line 4 has no TODO(step N) comment right above it");
}

Test(skeleton, does_not_take_the_todo_of_the_previous_region)
{
    expect_skeleton_error("// TODO(step 1)\n// BEGIN SOLUTION\n// END SOLUTION\n// BEGIN SOLUTION\n// END SOLUTION\n",
                          "sol.cu:4: solution region at line 4 has no TODO(step N) comment right above it");
}

Test(skeleton, accepts_a_todo_higher_up_in_the_comment_block)
{
    char *out = skeleton_of("  // TODO(step 2): fill in.\n  // more words\n  // BEGIN SOLUTION\n  x;\n  // END SOLUTION\n");
    cr_assert_str_eq(out, "  // TODO(step 2): fill in.\n  // more words\n");
    free(out);
}

static const char SOL[] = "// TODO(step 1)\n// BEGIN SOLUTION\nx = 1;\n//@ x = 0;\n// END SOLUTION\ny;\nz;\n";

Test(check_skeleton, accepts_an_up_to_date_skeleton)
{
    const char *committed = "// TODO(step 1)\nx = 0;\ny;\nz;\n";
    size_t line = 0;
    cr_assert_eq(skeleton_check(SOL, strlen(SOL), "sol.cu", committed, strlen(committed), "skel.cu", &line, err, sizeof err), 0);
    cr_assert_eq(line, 0);
}

Test(check_skeleton, reports_the_first_differing_line)
{
    const char *committed = "// TODO(step 1)\nx = 0;\nw;\nz;\n";
    size_t line = 0;
    cr_assert_eq(skeleton_check(SOL, strlen(SOL), "sol.cu", committed, strlen(committed), "skel.cu", &line, err, sizeof err), 1);
    cr_assert_eq(line, 3);
    cr_assert_str_eq(err, "skel.cu differs from the skeleton generated from sol.cu at line 3\n"
                          "  expected: y;\n"
                          "  actual:   w;\n"
                          "  A student's edits make this kit check fail, by design: check your work with\n"
                          "  `cmake --workflow --preset progress` instead. Kit maintainers who changed the\n"
                          "  solution: docs/adding-a-lab.md says how to regenerate the skeleton.");
    /* Never a command that would overwrite the student's file. */
    cr_expect_null(strstr(err, "labtool skeleton"));
}

Test(check_skeleton, reports_a_missing_last_line_and_crlf)
{
    const char *shorter = "// TODO(step 1)\nx = 0;\ny;\n";
    const char *crlf = "// TODO(step 1)\r\nx = 0;\ny;\nz;\n";
    size_t line = 0;
    cr_assert_eq(skeleton_check(SOL, strlen(SOL), "sol.cu", shorter, strlen(shorter), "skel.cu", &line, err, sizeof err), 1);
    cr_assert_eq(line, 4);
    cr_assert(strstr(err, "\n  expected: z;\n  actual:   <end of file>\n") != NULL, "%s", err);
    cr_assert_eq(skeleton_check(SOL, strlen(SOL), "sol.cu", crlf, strlen(crlf), "skel.cu", &line, err, sizeof err), 1);
    cr_assert_eq(line, 1);
    cr_assert(strstr(err, "\n  actual:   // TODO(step 1)\\r\n") != NULL, "%s", err);
}

Test(check_skeleton, truncates_long_lines_to_120_characters)
{
    char src[200], committed[200], expected[200];
    memset(src, 'a', 130);
    strcpy(src + 130, "\n");
    strcpy(committed, "b\n");
    memset(expected, 'a', 120);
    strcpy(expected + 120, "...\n  actual:   b\n");
    cr_assert_eq(skeleton_check(src, strlen(src), "sol.cu", committed, strlen(committed), "skel.cu", NULL, err, sizeof err), 1);
    cr_assert(strstr(err, expected) != NULL, "%s", err);
}

Test(check_skeleton, passes_on_errors_in_the_solution)
{
    cr_assert_eq(skeleton_check("// END SOLUTION\n", 16, "sol.cu", "", 0, "skel.cu", NULL, err, sizeof err), -1);
    cr_assert_str_eq(err, "sol.cu:1: END SOLUTION without an open BEGIN SOLUTION");
}

/* ---- mistake catalogue --------------------------------------------------- */

#define HEAD "[[mistake]]\nname = \"no_sync\"\nsummary = \"forgets the barrier\"\nstep = 2\n"
#define TAIL "find = '''__syncthreads();'''\nreplace = \"\"\n"
#define RACE HEAD "caught_by = \"racecheck\"\n" TAIL

static struct mistake *parse_ok(const char *text, size_t *n)
{
    struct mistake *ms = NULL;
    cr_assert_eq(mistakes_parse(text, strlen(text), "m.toml", &ms, n, err, sizeof err), 0, "parse failed: %s", err);
    return ms;
}

static void expect_toml_error(const char *text, const char *message)
{
    struct mistake *ms = NULL;
    size_t n = 0;
    cr_assert_eq(mistakes_parse(text, strlen(text), "m.toml", &ms, &n, err, sizeof err), -1);
    cr_assert_str_eq(err, message);
}

Test(catalogue, reads_every_field_of_a_mistake)
{
    size_t n;
    struct mistake *ms = parse_ok("# catalogue\n\n" RACE "\n[[mistake]]  # second\nname = \"off_by_one\"\n"
                                  "summary = '''x''''\nstep = 10\ncaught_by = \"tests\"\n"
                                  "expect_failing = \"bounds::.*\"\nexpect_message = \"expected [0-9]+\"\n"
                                  "find = '''i < n'''\nreplace = '''i <= n'''\n", &n);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(ms[0].name, "no_sync");
    cr_assert_str_eq(ms[0].summary, "forgets the barrier");
    cr_assert_eq(ms[0].step, 2);
    cr_assert_str_eq(ms[0].caught_by, "racecheck");
    cr_assert_null(ms[0].expect_failing);
    cr_assert_null(ms[0].expect_message);
    cr_assert_str_eq(ms[0].find, "__syncthreads();");
    cr_assert_str_eq(ms[0].replace, "");
    cr_assert_eq(ms[0].line, 3);
    cr_assert_eq(ms[0].find_line, 8);
    cr_assert_str_eq(ms[1].summary, "x'");
    cr_assert_eq(ms[1].step, 10);
    cr_assert_str_eq(ms[1].expect_failing, "bounds::.*");
    cr_assert_str_eq(ms[1].replace, "i <= n");
    cr_assert_eq(mistakes_find(ms, n, "off_by_one"), &ms[1]);
    cr_assert_null(mistakes_find(ms, n, "nope"));
    mistakes_free(ms, n);
}

Test(catalogue, trims_the_newline_after_an_opening_triple_quote)
{
    size_t n;
    struct mistake *ms = parse_ok(HEAD "caught_by = \"memcheck\"\nfind = '''\n  a\\n \"b\"\n\tc'''\nreplace = '''\n\nd\n'''\n", &n);
    cr_assert_str_eq(ms[0].find, "  a\\n \"b\"\n\tc");
    cr_assert_str_eq(ms[0].replace, "\nd\n");
    mistakes_free(ms, n);
}

Test(catalogue, reads_crlf_line_ends)
{
    size_t n;
    struct mistake *ms = parse_ok("[[mistake]]\r\nname = \"a\"\r\nsummary = \"s\"\r\nstep = 1\r\ncaught_by = \"initcheck\"\r\n"
                                  "find = '''\r\nx\r\ny'''\r\nreplace = \"z\"", &n);
    cr_assert_str_eq(ms[0].find, "x\ny");
    cr_assert_str_eq(ms[0].replace, "z");
    mistakes_free(ms, n);
}

Test(catalogue, decodes_basic_string_escapes)
{
    size_t n;
    struct mistake *ms = parse_ok(HEAD "caught_by = \"tests\"\nexpect_failing = \"a\\\\.b \\\"q\\\"\\t;\\n\"\n" TAIL, &n);
    cr_assert_str_eq(ms[0].expect_failing, "a\\.b \"q\"\t;\n");
    mistakes_free(ms, n);
}

Test(catalogue, allows_a_comment_after_a_value)
{
    size_t n;
    struct mistake *ms = parse_ok(HEAD "caught_by = \"synccheck\" # a \"quoted\" comment\n"
                                  "expect_message = \"a#b\"# hash in the string\n" TAIL, &n);
    cr_assert_str_eq(ms[0].caught_by, "synccheck");
    cr_assert_str_eq(ms[0].expect_message, "a#b");
    mistakes_free(ms, n);
}

Test(catalogue, rejects_an_unknown_key)
{
    expect_toml_error(RACE "hint = \"x\"\n", "m.toml:8: unknown key 'hint' (a [[mistake]] has name, summary, step, "
                                             "caught_by, expect_failing, expect_message, find, replace, file, gpu_only)");
}

Test(catalogue, names_the_missing_required_key_and_the_mistake)
{
    expect_toml_error(HEAD "caught_by = \"racecheck\"\nreplace = \"\"\n", "m.toml:1: mistake 'no_sync' has no 'find' key");
    expect_toml_error("[[mistake]]\nstep = 1\n", "m.toml:1: this [[mistake]] has no 'name' key");
    expect_toml_error(HEAD "caught_by = \"tests\"\n" TAIL,
                      "m.toml:1: mistake 'no_sync' is caught_by = \"tests\" and so needs an 'expect_failing' key");
}

Test(catalogue, reads_the_file_a_mistake_changes_and_the_counters_kind)
{
    size_t n;
    struct mistake *ms = parse_ok(HEAD "caught_by = \"counters\"\nfile = \"bank_model.c\"\n" TAIL, &n);
    cr_assert_str_eq(ms[0].caught_by, "counters");
    cr_assert_str_eq(ms[0].file, "bank_model.c");
    mistakes_free(ms, n);
    ms = parse_ok(RACE, &n);
    cr_assert_null(ms[0].file, "no file key: the lab's first file");
    mistakes_free(ms, n);
}

Test(catalogue, rejects_a_file_outside_the_lab_folder)
{
    expect_toml_error(RACE "file = \"../x.cu\"\n",
                      "m.toml:8: the file of mistake 'no_sync' must be a plain file name in the lab's folder");
    expect_toml_error(RACE "file = \"sub/x.cu\"\n",
                      "m.toml:8: the file of mistake 'no_sync' must be a plain file name in the lab's folder");
}

Test(catalogue, rejects_a_duplicate_mistake_name)
{
    expect_toml_error(RACE RACE, "m.toml:8: duplicate mistake name 'no_sync' (first used by the [[mistake]] at line 1)");
}

Test(catalogue, rejects_a_duplicate_key_in_one_table)
{
    expect_toml_error(HEAD "step = 3\n", "m.toml:5: duplicate key 'step' (already set at line 4)");
}

Test(catalogue, rejects_a_key_outside_any_table)
{
    expect_toml_error("# header\nname = \"x\"\n" RACE, "m.toml:2: key 'name' is outside any [[mistake]] table");
}

Test(catalogue, rejects_an_unknown_caught_by_value)
{
    expect_toml_error(HEAD "caught_by = \"valgrind\"\n" TAIL,
                      "m.toml:5: mistake 'no_sync': caught_by must be one of tests, memcheck, racecheck, synccheck, initcheck, counters");
}

Test(catalogue, takes_gpu_only_with_the_tests_and_its_reason_in_one_line)
{
    size_t n;
    struct mistake *ms = parse_ok(HEAD "caught_by = \"tests\"\nexpect_failing = \"^big::\"\n"
                                  "gpu_only = \"the case is 8 GiB\"\n" TAIL, &n);
    cr_assert_str_eq(ms[0].gpu_only, "the case is 8 GiB");
    char *out;
    size_t len;
    cr_assert_eq(mistake_cmake(&ms[0], &out, &len), 0);
    cr_assert(strstr(out, "set(MISTAKE_GPU_ONLY [=[the case is 8 GiB]=])\n") != NULL, "%s", out);
    free(out);
    mistakes_free(ms, n);
    expect_toml_error(RACE "gpu_only = \"x\"\n",
                      "m.toml:8: gpu_only of mistake 'no_sync' goes with caught_by = \"tests\" only");
    expect_toml_error(HEAD "caught_by = \"tests\"\nexpect_failing = \"^big::\"\ngpu_only = \"\"\n" TAIL,
                      "m.toml:7: gpu_only of mistake 'no_sync' must say in one line why the CPU path cannot catch it");
}

Test(catalogue, rejects_unterminated_strings)
{
    expect_toml_error(HEAD "caught_by = \"racecheck\n", "m.toml:5: unterminated string (a \"...\" string must end on its own line)");
    expect_toml_error(HEAD "find = '''\nabc\n''\n", "m.toml:5: unterminated multi-line string (the ''' opened here is never closed)");
}

Test(catalogue, rejects_values_outside_the_subset)
{
    expect_toml_error(HEAD "caught_by = \"a\\x\"\n", "m.toml:5: unsupported escape sequence in string (only \\\\ \\\" \\n \\t are supported)");
    expect_toml_error("[[mistake]]\nstep = 007\n", "m.toml:2: leading zeros are not allowed in integers");
    expect_toml_error("[[mistake]]\nstep = -1\n", "m.toml:2: unsupported value for 'step' (expected \"string\", '''string''' or a non-negative integer)");
    expect_toml_error("[[mistake]]\nstep = 1.5\n", "m.toml:2: only plain non-negative decimal integers are supported");
    expect_toml_error("[mistake]\n", "m.toml:1: only [[mistake]] table headers are supported");
    expect_toml_error("[[mistake]]\na.b = 1\n", "m.toml:2: expected '=' after the key 'a' (keys must be bare [A-Za-z0-9_]+)");
    expect_toml_error("[[mistake]]\nname = \"x\" y\n", "m.toml:2: unexpected text after the value");
    expect_toml_error(HEAD "caught_by = 3\n", "m.toml:5: 'caught_by' must be a string");
    expect_toml_error("[[mistake]]\nname = \"Bad-Name\"\n", "m.toml:2: mistake name \"Bad-Name\" must match [a-z0-9_]+");
    expect_toml_error("\n\xff\n", "m.toml:2: invalid UTF-8");
}

Test(catalogue, loads_a_catalogue_file)
{
    char path[] = "/tmp/labtool_test_XXXXXX";
    int fd = mkstemp(path);
    struct mistake *ms = NULL;
    size_t n = 0;
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(lt_write_file(path, RACE, strlen(RACE), err, sizeof err), 0, "%s", err);
    cr_assert_eq(mistakes_load(path, &ms, &n, err, sizeof err), 0, "%s", err);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(ms[0].name, "no_sync");
    mistakes_free(ms, n);
    unlink(path);
    cr_assert_eq(mistakes_load(path, &ms, &n, err, sizeof err), -1);
    cr_assert(strstr(err, ": cannot open: ") != NULL, "%s", err);
}

/* ---- mutate and mistake-cmake -------------------------------------------- */

/* A heap-allocated mistake "m1" whose find key is on line 7; release it with
 * mistakes_free(m, 1). */
static struct mistake *one(const char *find, const char *replace)
{
    struct mistake *m = calloc(1, sizeof *m);
    cr_assert_not_null(m);
    m->name = strdup("m1");
    m->find = strdup(find);
    m->replace = strdup(replace);
    m->find_line = 7;
    return m;
}

Test(mutate, replaces_the_single_occurrence)
{
    struct mistake *m = one("a[i] = b;\n    __syncthreads();\n", "a[i] = b;\n");
    const char *src = "// BEGIN SOLUTION\r\n    a[i] = b;\r\n    __syncthreads();\r\n// END SOLUTION\r\n";
    char *out;
    size_t len;
    cr_assert_eq(mutate_apply(src, strlen(src), "sol.cu", m, "m.toml", &out, &len, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(out, "// BEGIN SOLUTION\n    a[i] = b;\n// END SOLUTION\n");
    cr_assert_eq(len, strlen(out));
    free(out);
    mistakes_free(m, 1);
}

Test(mutate, rejects_find_text_that_is_absent)
{
    struct mistake *m = one("__syncwarp();", "");
    char *out = NULL;
    size_t len;
    cr_assert_eq(mutate_apply("x;\n", 3, "sol.cu", m, "m.toml", &out, &len, err, sizeof err), -1);
    cr_assert_str_eq(err, "m.toml:7: mistake 'm1': its find text occurs 0 times in sol.cu but must occur exactly once "
                          "(catalogue and solution have drifted apart)");
    cr_assert_null(out);
    mistakes_free(m, 1);
}

Test(mutate, rejects_find_text_that_occurs_twice)
{
    struct mistake *m = one("i < n", "i <= n");
    const char *src = "for (i = 0; i < n; i++) {}\nwhile (i < n) {}\n";
    char *out = NULL;
    size_t len;
    cr_assert_eq(mutate_apply(src, strlen(src), "sol.cu", m, "m.toml", &out, &len, err, sizeof err), -1);
    cr_assert(strstr(err, "m.toml:7: mistake 'm1': its find text occurs 2 times in sol.cu") == err, "%s", err);
    mistakes_free(m, 1);
}

Test(mistake_cmake, writes_the_regex_verbatim_in_bracket_arguments)
{
    size_t n, len;
    char *out;
    struct mistake *ms = parse_ok(HEAD "caught_by = \"tests\"\nexpect_failing = '''^(sum|scan)::\"a\\b\";]=]'''\n" TAIL, &n);
    cr_assert_eq(mistake_cmake(&ms[0], &out, &len), 0);
    cr_assert_str_eq(out, "# Generated by labtool mistake-cmake from the mistake catalogue; do not edit.\n"
                          "set(MISTAKE_NAME [=[no_sync]=])\n"
                          "set(MISTAKE_SUMMARY [=[forgets the barrier]=])\n"
                          "set(MISTAKE_STEP 2)\n"
                          "set(MISTAKE_CAUGHT_BY [=[tests]=])\n"
                          "set(MISTAKE_EXPECT_FAILING [==[^(sum|scan)::\"a\\b\";]=]]==])\n"
                          "set(MISTAKE_EXPECT_MESSAGE [=[]=])\n"
                          "set(MISTAKE_FILE [=[]=])\n"
                          "set(MISTAKE_GPU_ONLY [=[]=])\n");
    cr_assert_eq(len, strlen(out));
    free(out);
    mistakes_free(ms, n);
}

Test(mistake_cmake, avoids_a_closer_formed_with_the_end_of_the_value)
{
    struct mistake *m = one("f", "");
    char *out;
    size_t len;
    m->summary = strdup("ends with ]=");
    m->caught_by = strdup("memcheck");
    m->expect_message = strdup("\nleading newline");
    cr_assert_eq(mistake_cmake(m, &out, &len), 0);
    cr_assert(strstr(out, "set(MISTAKE_SUMMARY [==[ends with ]=]==])\n") != NULL, "%s", out);
    cr_assert(strstr(out, "set(MISTAKE_EXPECT_MESSAGE [=[\n\nleading newline]=])\n") != NULL, "%s", out);
    cr_assert(strstr(out, "set(MISTAKE_EXPECT_FAILING [=[]=])\n") != NULL, "%s", out);
    free(out);
    mistakes_free(m, 1);
}

/* ---- cpu-translate (the CPU path's source pass) --------------------------- */

static char *translated(const char *src)
{
    char *out = NULL;
    size_t len = 0;
    int rc = cpu_translate(src, strlen(src), "k.cu", &out, &len, err, sizeof err);
    cr_assert_eq(rc, 0, "cpu_translate failed: %s", err);
    return out;
}

static int lines_in(const char *s)
{
    int n = 0;
    for (; *s; ++s)
        n += *s == '\n';
    return n;
}

static void expect_has(const char *out, const char *what)
{
    cr_expect(strstr(out, what) != NULL, "the translation should contain\n  %s\nit reads:\n%s", what, out);
}

Test(cpu_translate, static_shared_arrays_become_bounds_checked_references_line_for_line)
{
    const char *src = "__global__ void k(float *o)\n"
                      "{\n"
                      "    // the tile\n"
                      "    __shared__ float tile[32][33], row[32];\n"
                      "    volatile __shared__ __align__(16) int flags[4];\n"
                      "    __shared__ int count;\n"
                      "    __shared__ float *p;\n"
                      "    o[0] = tile[0][0] + row[0] + flags[0] + count + *p;\n"
                      "}\n";
    char *out = translated(src);
    expect_has(out, "    static thread_local auto &tile = cml_cpu_static_shared_ref<float[32][33], 0>(\"float "
                    "tile[32][33]\"); static thread_local auto &row = cml_cpu_static_shared_ref<float[32], "
                    "0>(\"float row[32]\");\n");
    expect_has(out, "static thread_local auto &flags = cml_cpu_static_shared_ref<volatile int[4], (16)>");
    expect_has(out, "static thread_local auto &count = cml_cpu_static_shared_ref<int, 0>(\"int count\");");
    expect_has(out, "static thread_local auto &p = cml_cpu_static_shared_ref<float*, 0>(\"float *p\");");
    cr_expect_eq(lines_in(out), lines_in(src) + 2, "lines are kept (plus the #include and #line):\n%s", out);
    free(out);
}

Test(cpu_translate, shared_in_a_macro_body_and_a_pasted_kernel_name)
{
    char *out = translated("#define K(T) \\\n"
                           "__global__ void T##_k(T *o) \\\n"
                           "{ \\\n"
                           "    __shared__ T buf[64]; \\\n"
                           "    o[0] = buf[0]; \\\n"
                           "}\n"
                           "#define L(T) void T##_go(T *o) { T##_k<<<1, 64>>>(o); }\n");
    expect_has(out, "    static thread_local auto &buf = cml_cpu_static_shared_ref<T[64], 0>(\"T buf[64]\"); \\\n");
    expect_has(out, "cml_cpu_launch(CML_CPU_KERNEL(T##_k), ");
    free(out);
}

Test(cpu_translate, extern_shared_in_an_extern_c_function_is_a_local_pointer)
{
    char *out = translated("namespace ns {\n"
                           "extern \"C\" {\n"
                           "__global__ void a(float *o) { extern __shared__ float s[]; o[0] = s[0]; }\n"
                           "}\n"
                           "extern \"C\" __global__ void b(float *o) { extern __shared__ float t[]; o[0] = t[0]; }\n"
                           "}\n"
                           "extern __shared__ float g[];\n");
    expect_has(out, "{ float *s = (float *)cml_cpu_dynamic_shared(); o[0]");
    expect_has(out, "{ float *t = (float *)cml_cpu_dynamic_shared(); o[0]");
    expect_has(out, "#define g ((float *)cml_cpu_dynamic_shared())");
    free(out);
}

Test(cpu_translate, declarations_of_other_forms_keep_the_macro)
{
    char *out = translated("struct S { int a; };\n"
                           "__global__ void k(int *o)\n"
                           "{\n"
                           "    __shared__ struct { int a; } anon;\n"
                           "    __shared__ int (*fp)(int);\n"
                           "    o[0] = anon.a;\n"
                           "}\n");
    expect_has(out, "    __shared__ struct { int a; } anon;\n");
    expect_has(out, "    __shared__ int (*fp)(int);\n");
    free(out);
}

Test(cpu_translate, words_in_comments_do_not_make_a_function_body_a_namespace)
{
    char *out = translated("// One extern array serves every namespace and struct.\n"
                           "template <typename T>\n"
                           "__device__ T *shared_array()\n"
                           "{\n"
                           "    extern __shared__ unsigned char bytes[];\n"
                           "    return (T *)bytes;\n"
                           "}\n");
    expect_has(out, "    unsigned char *bytes = (unsigned char *)cml_cpu_dynamic_shared();\n");
    free(out);
}

Test(cpu_translate, device_and_constant_variables_become_holders_the_runtime_closes_line_for_line)
{
    const char *src = "#define N 8\n"
                      "__device__ int counter = 0;\n"
                      "__constant__ float w[3] = {1, 2, // the first two\n"
                      "                           3};\n"
                      "static __device__ __align__(16) float g[N], *gp, h = 2.5f;\n"
                      "namespace { __device__ __constant__ unsigned int ticket; }\n"
                      "__device__ float twice(float x) { return 2 * x; }\n"
                      "__global__ void k(float *o) { o[0] = w[0] + counter + g[0] + twice(h); }\n";
    char *out = translated(src);
    expect_has(out, "\nstatic cml_cpu_symbol<int> cml_cpu_sym_counter = { 0}; "
                    "CML_CPU_SYMBOL(counter, \"__device__ int counter\");\n");
    expect_has(out, "\nstatic cml_cpu_symbol<float[3]> cml_cpu_sym_w = { {1, 2, // the first two\n"
                    "                           3}}; CML_CPU_SYMBOL(w, \"__constant__ float w[3]\");\n");
    expect_has(out, "\nstatic cml_cpu_symbol<float[N]> cml_cpu_sym_g; CML_CPU_SYMBOL(g, \"__device__ float g[N]\"); "
                    "static cml_cpu_symbol<float*> cml_cpu_sym_gp; CML_CPU_SYMBOL(gp, \"__device__ float *gp\"); "
                    "static cml_cpu_symbol<float> cml_cpu_sym_h = { 2.5f}; CML_CPU_SYMBOL(h, \"__device__ float h\");\n");
    expect_has(out, "namespace { static cml_cpu_symbol<unsigned int> cml_cpu_sym_ticket; "
                    "CML_CPU_SYMBOL(ticket, \"__constant__ unsigned int ticket\"); }\n");
    expect_has(out, "\n__device__ float twice(float x) { return 2 * x; }\n");
    cr_expect_eq(lines_in(out), lines_in(src) + 2, "lines are kept (plus the #include and #line):\n%s", out);
    free(out);
}

Test(cpu_translate, device_variables_of_other_forms_are_left_as_written)
{
    /* const/constexpr (constant expressions), templates, extern and the
     * definition it names, a size from the initializer, function pointers,
     * direct initialization, __managed__, a declaration in a macro, a
     * function's static, a class's member function */
    const char *src = "__device__ const int bias = 3;\n"
                      "__constant__ constexpr float pi = 3.14f;\n"
                      "template <int K> __device__ float table[K];\n"
                      "extern __device__ int shared_count;\n"
                      "__device__ int shared_count = 1;\n"
                      "__device__ int sized[] = {1, 2};\n"
                      "__device__ float (*op)(float);\n"
                      "__device__ int direct(5);\n"
                      "__device__ __managed__ int managed;\n"
                      "#define DECL __device__ int in_macro;\n"
                      "__global__ void k(int *o) { static __device__ int local; o[0] = local; }\n"
                      "struct S { __device__ int get() const { return 1; } };\n";
    char *out = translated(src);
    expect_has(out, "#line 1 \"k.cu\"\n");
    const char *body = strstr(out, "#line 1 \"k.cu\"\n") + strlen("#line 1 \"k.cu\"\n");
    cr_expect_str_eq(body, src, "every declaration should be left as it is; the translation reads:\n%s", out);
    free(out);
}
