/* Lab 02's spec (cml_spec.h): the cases its tests and the grader's
 * kit-only check run, and when an output is right. Two kinds of case, in
 * the harness's layout (common/labs/02_constant_memory/harness.c):
 *
 * kind 0 | d << 8 | big << 16, the walk of constmem.h (steps 1-5):
 *   a = threads, b = passes. Data: the tables the upload gets (the small
 *   one, then the big one), then two other tables of the same sizes (the
 *   global copies steps 3 and 4 read), then one word: the walk's signs.
 *   The harness and the tests give the global copies and the signs to the
 *   kernel only after constmem_upload_tables has returned, so answers made
 *   from what the upload saw are wrong. Output: out, `threads` floats.
 *   Steps: 1 (the coefficients of the small table) runs d = 1 on the small
 *   table, 2 every d on it, 3 and 4 every d on both walks, 5 d = 1 on the
 *   big one.
 * kind 1 | radius << 8, the 2D convolution (steps 6-8): a = width,
 *   b = height. Data: the filter ((2r + 1)^2 floats), then the image.
 *   Output: out, width * height floats.
 *
 * The walk's tables hold nonzero integers small enough that every sum the
 * walk makes is an integer below 2^24, exact in float in any order: a
 * thread's sum is judged exactly (cm_lookup_compare). Each table holds
 * every value of +-1 .. +-n/2 once (n its entries), so one wrong entry read
 * changes a sum, except where the big table's walk has more than 64 passes:
 * there +-6144 could pass 2^24, and its big tables are cm_make_table's
 * (+-1 .. +-4096, drawn). Signs: drawn for each case; the thin group's first
 * two are 0 and all ones (every read added, every read subtracted).
 *
 * The convolution's data, three kinds for the same shapes: reals in
 * [-1, 1) (cm_make_image, cm_make_filter), judged within each pixel's
 * rounding bound (cm_conv_tolerance) and within the image-wide bound
 * (cm_conv_image_tolerance), whichever is smaller; integer-valued floats
 * (filter +-1 .. +-8, image +-1 .. +-64, never 0: every product and sum an
 * integer below 2^24), judged exactly; and reals of magnitude [1, 2) with
 * a random sign, where every term is at least 1 in magnitude, so one
 * dropped or extra term is far outside the bounds. A wrong pixel still
 * holding a poison (the tests' NaN or the harness's 0xff bytes) is "never
 * written"; the diagnosis names the likely cause (cm_conv_describe).
 *
 * Shapes that break these kernels: 1 thread, around a warp and a block,
 * primes, passes past 32 (step 1's rows wrap) up to the largest; 1-pixel
 * and 1-wide images, around one 32 x 64 tile, ragged right and bottom
 * edges, every radius; shapes drawn from the seed; and, for the grader, the
 * contract's limits (CONSTMEM_MAX_THREADS threads, the tallest image).
 *
 * The groups: thin, edges and large, each the cases of the test of that
 * name in every suite (a step runs those its steps mask names); the grader
 * runs thin and edges (images up to GRADER_MOST_PIXELS) and large's walks,
 * and two groups of its own, grader_walks and grader_convs: shapes of the
 * kit-only checker the tests never had, and the limits. */
#include <stdio.h>

#include <cml/cml_rng.h>
#include <cml/cml_spec.h>
#include "constmem_host.h"

enum { KIND_LOOKUP = 0, KIND_CONV = 1 }; /* harness.c's, in kind's low byte */

/* A case's tag: its data. */
enum {
    WALK_DISTINCT,    /* every table a permutation of +-1 .. +-n/2 */
    WALK_WIDE,        /* more than 64 passes: the big tables cm_make_table's */
    CONV_REALS,       /* reals in [-1, 1) */
    CONV_SMALL_INTS,  /* integer-valued: exact */
    CONV_REALS_1_2    /* magnitudes in [1, 2), random signs */
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define STEP_BIT(s) (1u << (s))
#define CONV_STEPS (STEP_BIT(6) | STEP_BIT(7) | STEP_BIT(8))
#define TABLES (CONSTMEM_TABLE_ENTRIES + CONSTMEM_BIG_ENTRIES)
#define WALK_WORDS (2 * TABLES + 1)
/* The big table's values up to +-6144 stay exact for 64 passes:
 * 64 * 32 * 6144 < 2^24. */
#define DISTINCT_BIG_MOST_PASSES 64
/* Past this many threads a walk is at the contract's limits: checked, never
 * traced. */
#define WALK_ORDINARY_MOST ((1 << 18) + 3)
/* The grader runs the test groups' images up to this many pixels (the CPU
 * path's: each pixel's thread a fiber, and a traced step runs its largest). */
#define GRADER_MOST_PIXELS(cpu) ((cpu) ? 200000u : (1u << 22))
/* constmem.h: constmem_conv_job's height <= */
#define MAX_HEIGHT 4194240
/* The CPU path's tall image (1 wide): past 65535 tiles of 16 rows, so blocks
 * of 16 rows or fewer must loop down it; the header's 4,194,240 rows (a GPU's
 * case) would take four times as long. */
#define TALL_CPU (65535 * 16 + 1031)

/* Each case's data come from streams 16 * stream + j (j < 16) of the seed,
 * its stream a group's base (1000, 2000, ...) plus its place in the group. */
typedef struct walk_shape {
    int threads, passes;
} walk_shape;

typedef struct conv_shape {
    int width, height, radius;
} conv_shape;

static const int ds[] = {1, 2, 4, 8, 16, 32};

/* ------------------------------------------------------------ data */

/* n floats (n even): +-1 .. +-n/2, each once, in a seeded random order. */
static void distinct_table(float *t, int n, uint64_t seed, uint64_t stream)
{
    for (int i = 0; i < n / 2; ++i) {
        t[i] = (float)(i + 1);
        t[n / 2 + i] = (float)-(i + 1);
    }
    cml_rng rng;
    cml_rng_init(&rng, seed, stream);
    for (int i = n - 1; i > 0; --i) {
        int j = cml_rng_int(&rng, 0, i);
        float v = t[i];
        t[i] = t[j];
        t[j] = v;
    }
}

/* n integer-valued floats in +-1 .. +-top, never 0. */
static void signed_ints(float *a, size_t n, int top, uint64_t seed, uint64_t stream)
{
    cml_rng rng;
    cml_rng_init(&rng, seed, stream);
    for (size_t i = 0; i < n; ++i) {
        int v = cml_rng_int(&rng, 1, top);
        a[i] = (float)(cml_rng_int(&rng, 0, 1) ? v : -v);
    }
}

/* n floats of magnitude in [1, 2) (exponent 0, a random mantissa), random signs. */
static void signed_reals_1_2(uint32_t *a, size_t n, uint64_t seed, uint64_t stream)
{
    cml_rng rng;
    cml_rng_init(&rng, seed, stream);
    for (size_t i = 0; i < n; ++i) {
        uint32_t v = (uint32_t)(cml_rng_next(&rng) >> 32);
        a[i] = 0x3F800000u | (v & 0x007FFFFFu) | (v & 0x80000000u);
    }
}

/* ------------------------------------------------------------ the walk */

/* The steps that run a walk (constmem_lookup's rules). */
static uint32_t walk_steps(int d, int big)
{
    if (!big)
        return (d == 1 ? STEP_BIT(1) : 0u) | STEP_BIT(2) | STEP_BIT(3) | STEP_BIT(4);
    return STEP_BIT(3) | STEP_BIT(4) | (d == 1 ? STEP_BIT(5) : 0u);
}

/* One walk, its tables and signs from (seed, stream). */
static cml_case *add_walk(cml_cases *l, walk_shape s, int d, int big, uint64_t seed, uint64_t stream, int where)
{
    int wide = s.passes > DISTINCT_BIG_MOST_PASSES;
    cml_case *c = cml_case_add(l, KIND_LOOKUP | (uint32_t)d << 8 | (uint32_t)big << 16, (uint64_t)s.threads,
                               (uint64_t)s.passes, WALK_WORDS, "%d threads, %d passes, d = %d, %s table", s.threads,
                               s.passes, d, big ? "big" : "small");
    if (!c)
        return NULL;
    float *f = (float *)c->data;
    for (int copy = 0; copy < 2; ++copy) { /* the tables the upload gets, then the global copies */
        float *t = f + (size_t)copy * TABLES;
        uint64_t sub = 16 * stream + 2 * (uint64_t)copy;
        distinct_table(t, CONSTMEM_TABLE_ENTRIES, seed, sub);
        if (wide)
            cm_make_table(t + CONSTMEM_TABLE_ENTRIES, CONSTMEM_BIG_ENTRIES, seed, sub + 1);
        else
            distinct_table(t + CONSTMEM_TABLE_ENTRIES, CONSTMEM_BIG_ENTRIES, seed, sub + 1);
    }
    c->data[2 * TABLES] = cm_make_signs(seed, 16 * stream + 4);
    c->tag = wide ? WALK_WIDE : WALK_DISTINCT;
    c->steps = walk_steps(d, big);
    c->where = where;
    c->limit = s.threads > WALK_ORDINARY_MOST;
    return c;
}

/* Every shape on both walks at every d. */
static int add_walks(cml_cases *l, const walk_shape *s, size_t n, uint64_t seed, uint64_t stream, int where)
{
    uint64_t k = 0;
    for (int big = 0; big <= 1; ++big)
        for (size_t i = 0; i < COUNT(ds); ++i)
            for (size_t j = 0; j < n; ++j)
                if (!add_walk(l, s[j], ds[i], big, seed, stream + k++, where))
                    return 0;
    return 1;
}

/* ------------------------------------------------------------ the convolution */

static cml_case *add_conv(cml_cases *l, conv_shape s, int tag, uint64_t seed, uint64_t stream, int where)
{
    static const char *const what[] = {"", "", "reals in [-1, 1)", "small integers, exact",
                                       "reals of magnitude [1, 2)"};
    size_t taps = (size_t)cm_taps(s.radius), pixels = (size_t)s.width * (size_t)s.height;
    cml_case *c = cml_case_add(l, KIND_CONV | (uint32_t)s.radius << 8, (uint64_t)s.width, (uint64_t)s.height,
                               taps + pixels, "%d x %d image, radius %d (%s)", s.width, s.height, s.radius, what[tag]);
    if (!c)
        return NULL;
    float *f = (float *)c->data;
    if (tag == CONV_REALS) {
        cm_make_filter(f, s.radius, seed, 16 * stream);
        cm_make_image(f + taps, pixels, seed, 16 * stream + 1);
    } else if (tag == CONV_SMALL_INTS) { /* |sum| <= 81 * 8 * 64: exact in float */
        signed_ints(f, taps, 8, seed, 16 * stream);
        signed_ints(f + taps, pixels, 64, seed, 16 * stream + 1);
    } else {
        signed_reals_1_2(c->data, taps + pixels, seed, 16 * stream);
    }
    c->tag = tag;
    c->steps = CONV_STEPS;
    c->where = where;
    return c;
}

/* Every shape with each of the three kinds of data; the grader runs those
 * up to GRADER_MOST_PIXELS. */
static int add_convs(cml_cases *l, const conv_shape *s, size_t n, int cpu, uint64_t seed, uint64_t stream)
{
    static const int tags[] = {CONV_REALS, CONV_SMALL_INTS, CONV_REALS_1_2};
    uint64_t k = 0;
    for (size_t j = 0; j < n; ++j) {
        uint64_t pixels = (uint64_t)s[j].width * (uint64_t)s[j].height;
        for (size_t i = 0; i < COUNT(tags); ++i)
            if (!add_conv(l, s[j], tags[i], seed, stream + k++,
                          pixels <= GRADER_MOST_PIXELS(cpu) ? CML_IN_BOTH : CML_IN_TESTS))
                return 0;
    }
    return 1;
}

/* ------------------------------------------------------------ the groups */

/* One thread, around a warp; 1-pixel and 1-wide images, every radius. The
 * first two walks (d = 1, small table) have signs 0 and all ones. */
static int thin(cml_cases *l, uint64_t seed, int cpu)
{
    static const walk_shape walks[] = {{1, 1}, {31, 2}, {32, 1}, {33, 3}};
    static const conv_shape convs[] = {{1, 1, 1}, {1, 1, 4}, {1, 1025, 2}, {4097, 1, 3}, {2, 3, 4}};
    size_t from = l->n;
    if (!add_walks(l, walks, COUNT(walks), seed, 1000, CML_IN_BOTH))
        return 0;
    l->v[from].data[2 * TABLES] = 0u;
    l->v[from + 1].data[2 * TABLES] = 0xFFFFFFFFu;
    return add_convs(l, convs, COUNT(convs), cpu, seed, 1100);
}

/* Around a block of 256, primes, and one walk drawn from the seed (2 to
 * 50000 threads, 1 to 8 passes); around one 32 x 64 tile and one 128 x 64
 * tile (step 6's; 132 wide: float4 rows that end inside a tile), ragged
 * right and bottom edges, and one image drawn from the seed (2 to 600 each way, any
 * radius). */
static int edges(cml_cases *l, uint64_t seed, int cpu)
{
    walk_shape walks[] = {{255, 2}, {257, 1}, {1000, 3}, {65537, 1}, {100003, 2}, {0, 0}};
    conv_shape convs[] = {{31, 63, 1},    {32, 64, 2},    {33, 65, 3},  {127, 63, 2},  {128, 64, 3},
                          {129, 65, 4},   {132, 129, 1},  {257, 131, 4}, {1000, 777, 2}, {97, 1031, 1},
                          {0, 0, 0}};
    cml_rng rng;
    cml_rng_init(&rng, seed, 202);
    walk_shape *w = &walks[COUNT(walks) - 1];
    w->threads = cml_rng_int(&rng, 2, 50000);
    w->passes = cml_rng_int(&rng, 1, 8);
    conv_shape *s = &convs[COUNT(convs) - 1];
    s->width = cml_rng_int(&rng, 2, 600);
    s->height = cml_rng_int(&rng, 2, 600);
    s->radius = cml_rng_int(&rng, 1, CONSTMEM_MAX_RADIUS);
    return add_walks(l, walks, COUNT(walks), seed, 2000, CML_IN_BOTH) &&
           add_convs(l, convs, COUNT(convs), cpu, seed, 2100);
}

/* A GPU's 2^18 + 3 threads of 16 passes and 4099 of the most passes; the
 * CPU path (every CUDA thread a fiber) 131071 of 4 and 1025 of the most.
 * Images of 4099 x 4097, 8191 x 1031 and 61 x 200003 on a GPU, 1031 x 1021
 * and 61 x 20011 on the CPU path, of reals in [-1, 1): the tests only. */
static int large(cml_cases *l, uint64_t seed, int cpu)
{
    static const walk_shape gpu_walks[] = {{(1 << 18) + 3, 16}, {4099, CONSTMEM_MAX_PASSES}};
    static const walk_shape cpu_walks[] = {{131071, 4}, {1025, CONSTMEM_MAX_PASSES}};
    return add_walks(l, cpu ? cpu_walks : gpu_walks, 2, seed, 3000, CML_IN_BOTH);
}

/* The large images, the tests' only (the same test as the large walks):
 * tens of MiB each on a GPU, which the grader's verifier never makes
 * (cml_group.where). */
static int large_images(cml_cases *l, uint64_t seed, int cpu)
{
    static const conv_shape gpu_convs[] = {{4099, 4097, 2}, {8191, 1031, 4}, {61, 200003, 3}};
    static const conv_shape cpu_convs[] = {{1031, 1021, 2}, {61, 20011, 4}};
    const conv_shape *convs = cpu ? cpu_convs : gpu_convs;
    size_t n = cpu ? COUNT(cpu_convs) : COUNT(gpu_convs);
    for (size_t k = 0; k < n; ++k)
        if (!add_conv(l, convs[k], CONV_REALS, seed, 3100 + k, CML_IN_TESTS))
            return 0;
    return 1;
}

/* The grader's walks beyond the tests': two drawn from the seed (2 to 5000
 * threads of 1 to 8 passes; 34 to 700 threads of 33 passes to the most),
 * a GPU's 1025 threads of the most passes (the CPU path's tests have it),
 * the CPU path's 20011 of 2; and the contract's limit, CONSTMEM_MAX_THREADS
 * threads of one pass (the CPU path: 2^20 + 1), on the small table at
 * d = 1 and 32 (a GiB of sums each step 3 and 4 run). */
static int grader_walks(cml_cases *l, uint64_t seed, int cpu)
{
    walk_shape s[3];
    cml_rng rng;
    cml_rng_init(&rng, seed, 404);
    s[0].threads = cml_rng_int(&rng, 2, 5000);
    s[0].passes = cml_rng_int(&rng, 1, 8);
    s[1].threads = cml_rng_int(&rng, 34, 700);
    s[1].passes = cml_rng_int(&rng, 33, CONSTMEM_MAX_PASSES);
    s[2].threads = cpu ? 20011 : 1025;
    s[2].passes = cpu ? 2 : CONSTMEM_MAX_PASSES;
    if (!add_walks(l, s, COUNT(s), seed, 4000, CML_IN_GRADER))
        return 0;
    walk_shape limit = {cpu ? (1 << 20) + 1 : CONSTMEM_MAX_THREADS, 1};
    return add_walk(l, limit, 1, 0, seed, 4100, CML_IN_GRADER) && add_walk(l, limit, 32, 0, seed, 4101, CML_IN_GRADER);
}

/* The grader's images beyond the tests': one of some size with each exact
 * and bounded data (a GPU's 1000 x 131 exact and 67 x 999 bounded, the CPU
 * path's 301 x 199 both ways); and the contract's limits: on a GPU the
 * tallest image 1 and 3 wide and a 2^20-wide one, on the CPU path a 1-wide
 * image past 65535 tiles of 16 rows (TALL_CPU) and a 3 x 16384 one. */
static int grader_convs(cml_cases *l, uint64_t seed, int cpu)
{
    typedef struct {
        conv_shape s;
        int tag, limit;
    } one;
    static const one gpu[] = {{{1000, 131, 2}, CONV_SMALL_INTS, 0}, {{67, 999, 3}, CONV_REALS_1_2, 0},
                              {{1, MAX_HEIGHT, 4}, CONV_SMALL_INTS, 1}, {{3, MAX_HEIGHT, 1}, CONV_SMALL_INTS, 1},
                              {{1 << 20, 3, 2}, CONV_SMALL_INTS, 1}};
    static const one on_cpu[] = {{{301, 199, 2}, CONV_SMALL_INTS, 0}, {{301, 199, 2}, CONV_REALS_1_2, 0},
                                 {{1, TALL_CPU, 2}, CONV_SMALL_INTS, 1}, {{3, 1 << 14, 4}, CONV_REALS_1_2, 1}};
    const one *v = cpu ? on_cpu : gpu;
    size_t n = cpu ? COUNT(on_cpu) : COUNT(gpu);
    for (size_t k = 0; k < n; ++k) {
        cml_case *c = add_conv(l, v[k].s, v[k].tag, seed, 4200 + k, CML_IN_GRADER);
        if (!c)
            return 0;
        c->limit = v[k].limit;
    }
    return 1;
}

static const cml_group groups[] = {
    {"thin", thin, 0}, {"edges", edges, 0}, {"large", large, 0}, {"large_images", large_images, CML_IN_TESTS},
    {"grader_walks", grader_walks, CML_IN_GRADER}, {"grader_convs", grader_convs, CML_IN_GRADER},
};

/* ------------------------------------------------------------ the verdict */

static uint64_t out_bytes(const cml_case *c)
{
    return 4 * c->a * ((c->kind & 0xff) == KIND_CONV ? c->b : 1);
}

/* The walk: exactly the sums of the tables the step reads (steps 3 and 4
 * the global copies, the others the uploaded ones) with the case's signs;
 * step 1 the coefficients of the small table. The convolution: exact on
 * integer-valued data, else within the smaller of the two bounds. What is
 * wrong, with its likely cause: cm_lookup_describe, cm_conv_describe. */
static int judge(const cml_case *c, int step, const void *out, uint64_t nbytes, char *msg, size_t cap)
{
    if (nbytes != out_bytes(c)) {
        snprintf(msg, cap, "%llu bytes of output, expected %llu", (unsigned long long)nbytes,
                 (unsigned long long)out_bytes(c));
        return 0;
    }
    const float *data = (const float *)c->data, *got = (const float *)out;
    if ((c->kind & 0xff) == KIND_CONV) {
        int r = (int)(c->kind >> 8), width = (int)c->a, height = (int)c->b;
        size_t taps = (size_t)cm_taps(r), pixels = (size_t)width * (size_t)height;
        double most = c->tag == CONV_SMALL_INTS ? 0.0 : cm_conv_image_tolerance(data + taps, pixels, data, r);
        cm_conv_check chk;
        if (cm_conv_compare_within(data + taps, width, height, data, r, got, most, &chk) == 0)
            return 1;
        cm_conv_describe(&chk, msg, cap);
        return 0;
    }
    int d = (int)((c->kind >> 8) & 0xff), big = (int)((c->kind >> 16) & 0xff);
    const float *tables = data + (step == 3 || step == 4 ? TABLES : 0);
    unsigned signs = c->data[2 * TABLES];
    cm_lookup_check chk;
    if (cm_lookup_compare(big ? tables + CONSTMEM_TABLE_ENTRIES : tables, big, step == 1 ? CM_COEFFS : d, (int)c->b,
                          signs, got, (int)c->a, &chk) == 0)
        return 1;
    cm_lookup_describe(&chk, msg, cap);
    return 0;
}

/* Steps 6-8 ([performance]): the results' 8192 x 8192 image, radius 2
 * (256 MiB in, 256 MiB out, far past the L2); the harness fills the filter
 * (the first 25 words) and the image with floats in [-1, 1). Each pixel of
 * either harness is within gamma_n * sum|w||in| of the exact one (n taps);
 * with |w|, |in| < 1 that sum is below n, so a sampled word is within
 * 2 * gamma_n * n of the reference's. */
static int timing(int step, cml_spec_timing *t)
{
    if (step < 6 || step > 8)
        return 0;
    const int r = 2, n = (2 * r + 1) * (2 * r + 1);
    const double u = 5.9604644775390625e-08; /* 2^-24 */
    t->kind = KIND_CONV | (uint32_t)r << 8;
    t->a = t->b = 8192;
    t->count = (uint64_t)n + t->a * t->b;
    t->fill = 2;
    snprintf(t->label, sizeof t->label, "%llu x %llu image, radius %d (timed)", (unsigned long long)t->a,
             (unsigned long long)t->b, r);
    t->traffic = 8 * t->count; /* read once, written once */
    t->close_abs = 2.0 * (n * u / (1.0 - n * u)) * n;
    return 1;
}

/* The uploads take host tables and filters (cudaMemcpyToSymbol; a cudaMemcpy
 * there is the catalogued mistake cudamemcpy_to_the_symbol_name, which must
 * fail as a test, not be refused). */
const cml_spec cml_lab_spec = {"02_constant_memory", groups, sizeof groups / sizeof groups[0], out_bytes, judge, timing,
                               "constmem_upload_tables,constmem_upload_filter"};
