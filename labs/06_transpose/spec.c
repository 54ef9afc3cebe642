/* Lab 06's spec (cml_spec.h): the cases its tests and the grader's
 * kit-only check run, and when an output is right. A case is kind 0,
 * a = rows, b = cols, its data the rows x cols floats of in (row-major);
 * its output is the whole of out, rows * cols floats: a copy of in for
 * step 1, its transpose (cols x rows) for the others.
 *
 * Every element of the data is a different normal float (tr_make_data), so
 * an element read from a wrong place always shows. A transpose moves values
 * without arithmetic: the check is bit for bit, and a wrong element's value
 * says where it came from (tr_compare's diagnosis, with a likely cause).
 *
 * Shapes that break transposes: 1 x 1, 1 x N and N x 1, around one tile,
 * ragged right and bottom edges, more tile rows than a grid's y extent
 * holds, one large matrix, and shapes drawn from the seed. The grader runs
 * the cases up to about a million elements (a tenth of that on the CPU
 * path) and the tall ones at the contract's limits; the tests run them all. */
#include <stdio.h>
#include <string.h>

#include <cml/cml_rng.h>
#include <cml/cml_spec.h>
#include "transpose_host.h"

#define GRADER_MOST(cpu) ((cpu) ? 100003u : 1048576u)
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
/* More tile rows than a grid's y extent (65535) holds, for tiles up to 64
 * rows high: 65537 tiles of 64 rows, 131073 of 32. */
#define TALL ((1 << 22) + 17)
/* Steps as a cml_case mask. */
#define STEP_BIT(s) (1u << (s))
#define ALL_BUT_LAST ((STEP_BIT(TRANSPOSE_NUM_STEPS) - 1u) & ~1u)

typedef struct shape {
    int rows, cols;
} shape;

/* A rows x cols case, its data from (seed, stream). */
static cml_case *add_shape(cml_cases *l, shape s, uint64_t seed, uint64_t stream, int where, const char *what)
{
    uint64_t n = (uint64_t)s.rows * (uint64_t)s.cols;
    cml_case *c = cml_case_add(l, 0, (uint64_t)s.rows, (uint64_t)s.cols, n, "%d x %d%s", s.rows, s.cols, what);
    if (!c)
        return NULL;
    c->where = where;
    tr_make_data((float *)c->data, (size_t)n, seed, stream);
    return c;
}

/* Every shape; the grader runs those up to GRADER_MOST. */
static int add_shapes(cml_cases *l, const shape *s, size_t n, int cpu, uint64_t seed, uint64_t stream)
{
    for (size_t k = 0; k < n; ++k) {
        uint64_t size = (uint64_t)s[k].rows * (uint64_t)s[k].cols;
        if (!add_shape(l, s[k], seed, stream + k, size <= GRADER_MOST(cpu) ? CML_IN_BOTH : CML_IN_TESTS, ""))
            return 0;
    }
    return 1;
}

static int thin_matrices(cml_cases *l, uint64_t seed, int cpu)
{
    static const shape s[] = {{1, 1}, {1, 33}, {33, 1}, {1, 100003}, {100003, 1}};
    return add_shapes(l, s, COUNT(s), cpu, seed, 100);
}

/* Around one tile, then many tiles with ragged right and bottom edges (a
 * GPU's 512 x 513 and 1000 x 999, the CPU path's 300 x 301), and three
 * drawn from the seed: one up to 3000 x 3000, one thin strip (1 to 40 by
 * 1000 to 300000, either way round), and one up to 700 x 700 (200 x 200 on
 * the CPU path), which the grader runs too. */
static int edge_shapes(cml_cases *l, uint64_t seed, int cpu)
{
    static const shape fixed[] = {{31, 33}, {32, 32}, {33, 31}, {1000, 777}, {1025, 4097}, {1, 37},
                                  {37, 1},  {33, 65}, {97, 31}, {257, 129}};
    static const shape gpu_only[] = {{512, 513}, {1000, 999}}, cpu_only[] = {{300, 301}};
    shape s[COUNT(fixed) + COUNT(gpu_only) + 3];
    size_t n = COUNT(fixed);
    memcpy(s, fixed, sizeof fixed);
    if (cpu)
        s[n++] = cpu_only[0];
    else
        for (size_t k = 0; k < COUNT(gpu_only); ++k)
            s[n++] = gpu_only[k];
    cml_rng rng;
    cml_rng_init(&rng, seed, 606);
    s[n].rows = cml_rng_int(&rng, 2, 3000);
    s[n++].cols = cml_rng_int(&rng, 2, 3000);
    int thin = cml_rng_int(&rng, 1, 40), wide = cml_rng_int(&rng, 1000, 300000);
    int across = cml_rng_int(&rng, 0, 1);
    s[n].rows = across ? thin : wide;
    s[n++].cols = across ? wide : thin;
    s[n].rows = cml_rng_int(&rng, 2, cpu ? 200 : 700);
    s[n++].cols = cml_rng_int(&rng, 2, cpu ? 200 : 700);
    return add_shapes(l, s, n, cpu, seed, 200);
}

/* More tile rows than a grid's y extent holds, and as wide: at the
 * contract's limits (rows * cols < 2^31 alone), so limit cases. On a GPU
 * TALL by 1 and 3, and 1 and 3 by TALL; the grader runs all but 1 x TALL.
 * On the CPU path (common/cpu), where every CUDA thread is a fiber and
 * those cost minutes a step, the tests run 3 columns (a partial tile) just
 * past grid y's 65535 tile rows: 2^21 + 17 rows for the 32-row tiles, TALL
 * for the last step's 64-row tiles; and both run 100003 x 3 and 2 x 100003,
 * as tall as the CPU path takes in a few seconds. */
static int tall_matrices(cml_cases *l, uint64_t seed, int cpu)
{
    static const shape gpu[] = {{TALL, 1}, {TALL, 3}, {1, TALL}, {3, TALL}};
    static const shape cpu_both[] = {{100003, 3}, {2, 100003}};
    cml_case *c;
    if (!cpu) {
        for (size_t k = 0; k < COUNT(gpu); ++k) {
            if (!(c = add_shape(l, gpu[k], seed, 300 + k, gpu[k].rows == 1 ? CML_IN_TESTS : CML_IN_BOTH, "")))
                return 0;
            c->limit = 1;
        }
        return 1;
    }
    shape s = {(1 << 21) + 17, 3};
    if (!(c = add_shape(l, s, seed, 300, CML_IN_TESTS, "")))
        return 0;
    c->limit = 1;
    c->steps = ALL_BUT_LAST;
    s.rows = TALL;
    if (!(c = add_shape(l, s, seed, 301, CML_IN_TESTS, "")))
        return 0;
    c->limit = 1;
    c->steps = STEP_BIT(TRANSPOSE_NUM_STEPS);
    for (size_t k = 0; k < COUNT(cpu_both); ++k) {
        if (!(c = add_shape(l, cpu_both[k], seed, 302 + k, CML_IN_BOTH, "")))
            return 0;
        c->limit = 1;
    }
    return 1;
}

/* One large matrix, 2^13 - 1 by 3 * 2^12 + 1 on a GPU; on the CPU path,
 * where a CPU second moves a few million elements, the same kind at
 * 2^11 - 1 by 3 * 2^10 + 1. The tests only. */
static int big_matrix(cml_cases *l, uint64_t seed, int cpu)
{
    shape s = {cpu ? 2047 : 8191, cpu ? 3073 : 12289};
    return add_shape(l, s, seed, 400, CML_IN_TESTS, "") != NULL;
}

/* Bank conflicts are read on the runner's counter shape, 256 x 1056 (whole
 * tiles): at partial tiles the padded and swizzled references show a few
 * (ncu: 80 and 4 at 1000 x 999 and 512 x 513 on an H100), and at
 * 1024 x 1024 still 23 and 6, which made the reference itself miss "zero";
 * the runner's pages read 0 at 256 x 1056. Only the grader's counters. */
static int bank_conflict_counters(cml_cases *l, uint64_t seed, int cpu)
{
    (void)cpu;
    shape s = {256, 1056};
    return add_shape(l, s, seed, 500, CML_FOR_COUNTERS, " (counters)") != NULL;
}

static const cml_group groups[] = {
    {"thin_matrices", thin_matrices, 0},   {"edge_shapes", edge_shapes, 0}, {"tall_matrices", tall_matrices, 0},
    {"big_matrix", big_matrix, CML_IN_TESTS},         {"bank_conflict_counters", bank_conflict_counters, CML_FOR_COUNTERS},
};

static uint64_t out_bytes(const cml_case *c)
{
    return 4 * c->count;
}

/* Bit for bit against the copy (step 1) or the transpose of the case's
 * data; what is wrong, with tr_compare's diagnosis: how many elements and
 * of what cause (never written, copied, a tile unmoved or unflipped, in's
 * guard value), the first few, and the likely cause. */
static int judge(const cml_case *c, int step, const void *out, uint64_t nbytes, char *msg, size_t cap)
{
    if (nbytes != 4 * c->count) {
        snprintf(msg, cap, "%llu bytes of output, expected %llu", (unsigned long long)nbytes,
                 (unsigned long long)(4 * c->count));
        return 0;
    }
    tr_check chk;
    if (tr_compare((const float *)c->data, (const float *)out, (int)c->a, (int)c->b, tr_step_mode(step), &chk) == 0)
        return 1;
    tr_describe(&chk, msg, cap);
    return 0;
}

/* 8192 x 8193 floats, 256 MiB each way, a side that is not a multiple of
 * the tile; exact, so the timed samples must equal the reference's. */
static int timing(int step, cml_spec_timing *t)
{
    if (step < 1 || step > TRANSPOSE_NUM_STEPS)
        return 0;
    t->kind = 0;
    t->a = 8192;
    t->b = 8193;
    t->count = t->a * t->b;
    t->fill = 2;
    snprintf(t->label, sizeof t->label, "%llu x %llu (timed)", (unsigned long long)t->a, (unsigned long long)t->b);
    t->traffic = 8 * t->count; /* in read once, out written once */
    return 1;
}

const cml_spec cml_lab_spec = {"06_transpose", groups, sizeof groups / sizeof groups[0], out_bytes, judge, timing,
                               ""};
