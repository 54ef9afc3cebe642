/* Lab 09's spec (cml_spec.h): the cases its tests and the grader's
 * kit-only check run, and when an output is right. A case is kind 0, a = n,
 * b = step 3's run width (the other steps ignore it), tag = the kind of
 * keys (shared_sort_host.h's ss_keys); its data are the n keys of in.
 * Its output (common/labs/09_shared_sort/harness.c): a guard zone of GUARD
 * words, out, and another guard zone, every guard word 0xffffffff unless
 * the kernel wrote outside out.
 *
 * A sort has one answer: out is judged key for key against the CPU's
 * (ss_expect: step 1 each tile's lists sorted in place, step 2 each tile
 * sorted, step 3 each pair of runs merged, step 4 all sorted), and the
 * first wrong place's segment says whether a key was lost or duplicated
 * (its keys differ from the input's) or the keys are out of order.
 *
 * The sort steps (1, 2, 4) run the groups sizes, patterns and many_tiles;
 * the merge step (3) runs merge_sizes, merge_patterns and merge_many_runs,
 * whose data are runs of the case's width, each sorted. Every test of a
 * step runs one group of each pair (tests/gpu.c). */
#include <stdio.h>
#include <string.h>

#include <cml/cml_rng.h>
#include <cml/cml_spec.h>
#include "shared_sort_host.h"

#define GUARD 64u /* harness.c's SS_GUARD */
#define GRADER_MOST(cpu) ((cpu) ? 70000u : 1100000u)
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define STEP_BIT(s) (1u << (s))
#define SORT_STEPS (STEP_BIT(1) | STEP_BIT(2) | STEP_BIT(4))

typedef struct sized {
    size_t n, width;
    ss_keys keys;
} sized;

static const char *width_text(size_t width, char *buf, size_t len)
{
    if (width)
        snprintf(buf, len, ", runs of %zu", width);
    else
        buf[0] = 0;
    return buf;
}

/* One case per entry: its keys from (seed, stream + k); merge cases
 * (width > 0) get their runs sorted. The grader runs those up to
 * GRADER_MOST keys. */
static int add_cases(cml_cases *l, const sized *s, size_t count, int merge, int cpu, uint64_t seed, uint64_t stream)
{
    for (size_t k = 0; k < count; ++k) {
        char w[48];
        cml_case *c = cml_case_add(l, 0, s[k].n, s[k].width, s[k].n, "n = %zu, %s%s", s[k].n,
                                   ss_keys_name(s[k].keys), width_text(merge ? s[k].width : 0, w, sizeof w));
        if (!c)
            return 0;
        ss_make_keys(c->data, s[k].n, s[k].keys, seed, stream + k);
        if (merge)
            ss_sort_runs(c->data, s[k].n, s[k].width);
        c->tag = (int)s[k].keys;
        c->steps = merge ? STEP_BIT(SS_MERGE_STEP) : SORT_STEPS;
        c->where = s[k].n <= GRADER_MOST(cpu) ? CML_IN_BOTH : CML_IN_TESTS;
    }
    return 1;
}

/* One key, two, around one list of 8 and one tile of 128 lists of 8, a
 * partial last tile, and a size drawn from the seed. */
static int sizes(cml_cases *l, uint64_t seed, int cpu)
{
    sized s[] = {{1, 1, SS_FULL_RANGE},    {2, 1, SS_FULL_RANGE},    {127, 1, SS_FEW_KEYS},
                 {128, 1, SS_FULL_RANGE},  {129, 1, SS_FEW_KEYS},    {1023, 1, SS_FULL_RANGE},
                 {1024, 1, SS_FEW_KEYS},   {1025, 1, SS_FULL_RANGE}, {3001, 1, SS_FEW_KEYS},
                 {0, 1, SS_FULL_RANGE}};
    cml_rng rng;
    cml_rng_init(&rng, seed, 900);
    s[COUNT(s) - 1].n = (size_t)cml_rng_int(&rng, 2, 6000);
    return add_cases(l, s, COUNT(s), 0, cpu, seed, 100);
}

/* Widths of 1 (pairs of single keys), odd widths, a last pair with no
 * second run or a short one, one run wider than n (a copy), and a size and
 * width drawn from the seed. */
static int merge_sizes(cml_cases *l, uint64_t seed, int cpu)
{
    sized s[] = {{1, 1, SS_FULL_RANGE},      {2, 1, SS_FULL_RANGE},      {3, 1, SS_FEW_KEYS},
                 {100, 3, SS_FEW_KEYS},      {1000, 7, SS_FULL_RANGE},   {1025, 512, SS_FEW_KEYS},
                 {3001, 700, SS_FULL_RANGE}, {2048, 1024, SS_FEW_KEYS},  {4096, 5000, SS_FULL_RANGE},
                 {0, 1, SS_FEW_KEYS}};
    cml_rng rng;
    cml_rng_init(&rng, seed, 901);
    s[COUNT(s) - 1].n = (size_t)cml_rng_int(&rng, 2, 20000);
    s[COUNT(s) - 1].width = (size_t)cml_rng_int(&rng, 1, (int)s[COUNT(s) - 1].n);
    return add_cases(l, s, COUNT(s), 1, cpu, seed, 200);
}

/* Keys that break sorts: all equal, already sorted, reversed, a few keys
 * many times each, and the full range. */
static int patterns(cml_cases *l, uint64_t seed, int cpu)
{
    static const sized s[] = {{2500, 1, SS_ALL_EQUAL}, {2049, 1, SS_SORTED},   {3000, 1, SS_REVERSED},
                              {4097, 1, SS_FEW_KEYS},  {5000, 1, SS_FULL_RANGE}};
    return add_cases(l, s, COUNT(s), 0, cpu, seed, 300);
}

static int merge_patterns(cml_cases *l, uint64_t seed, int cpu)
{
    static const sized s[] = {{2500, 100, SS_ALL_EQUAL}, {2049, 64, SS_SORTED},        {3000, 1000, SS_REVERSED},
                              {4097, 9, SS_FEW_KEYS},    {5000, 1024, SS_FULL_RANGE}};
    return add_cases(l, s, COUNT(s), 1, cpu, seed, 400);
}

/* Many tiles, the last partial: on a GPU a million and ten million keys
 * (the tests only, past GRADER_MOST); on the CPU path, where step 2's
 * merge costs about 2 ms of CPU a tile, 41 and 64 tiles. */
static int many_tiles(cml_cases *l, uint64_t seed, int cpu)
{
    static const sized on_cpu[] = {{41 * 1024 + 77, 1, SS_FEW_KEYS}, {65537, 1, SS_FULL_RANGE}};
    static const sized on_gpu[] = {{(1u << 20) + 3, 1, SS_FEW_KEYS}, {10000019, 1, SS_FULL_RANGE}};
    return cpu ? add_cases(l, on_cpu, COUNT(on_cpu), 0, cpu, seed, 500)
               : add_cases(l, on_gpu, COUNT(on_gpu), 0, cpu, seed, 500);
}

static int merge_many_runs(cml_cases *l, uint64_t seed, int cpu)
{
    static const sized on_cpu[] = {{200003, 1000, SS_FEW_KEYS}, {131077, 4096, SS_FULL_RANGE}};
    static const sized on_gpu[] = {{(1u << 22) + 5, 4096, SS_FEW_KEYS}, {10000019, 65536, SS_FULL_RANGE}};
    return cpu ? add_cases(l, on_cpu, COUNT(on_cpu), 1, cpu, seed, 600)
               : add_cases(l, on_gpu, COUNT(on_gpu), 1, cpu, seed, 600);
}

/* Bank conflicts are read on 132 whole tiles (one wave of blocks on a
 * 132-SM H100), full-range keys. Only the grader's counters. */
static int bank_conflict_counters(cml_cases *l, uint64_t seed, int cpu)
{
    static const sized s[] = {{132 * 1024, 1, SS_FULL_RANGE}};
    if (!add_cases(l, s, COUNT(s), 0, cpu, seed, 700))
        return 0;
    l->v[l->n - 1].where = CML_FOR_COUNTERS;
    return 1;
}

static const cml_group groups[] = {
    {"sizes", sizes, 0},
    {"merge_sizes", merge_sizes, 0},
    {"patterns", patterns, 0},
    {"merge_patterns", merge_patterns, 0},
    {"many_tiles", many_tiles, 0},
    {"merge_many_runs", merge_many_runs, 0},
    {"bank_conflict_counters", bank_conflict_counters, CML_FOR_COUNTERS},
};

static uint64_t out_bytes(const cml_case *c)
{
    return 4 * (c->a + 2 * GUARD);
}

static int judge(const cml_case *c, int step, const void *out, uint64_t nbytes, char *msg, size_t cap)
{
    size_t n = (size_t)c->a;
    const uint32_t *w = (const uint32_t *)out;
    if (nbytes != out_bytes(c)) {
        snprintf(msg, cap, "%llu bytes of output, expected %llu", (unsigned long long)nbytes,
                 (unsigned long long)out_bytes(c));
        return 0;
    }
    if (cml_spec_outside_write(w, w + GUARD + n, GUARD, "out", msg, cap)) {
        size_t used = strlen(msg);
        snprintf(msg + used, used < cap ? cap - used : 0,
                 ": a place past n written without a check (a partial tile's pads, or a merge thread past the end)");
        return 0;
    }
    ss_check chk;
    if (ss_compare(c->data, w + GUARD, n, step, (size_t)c->b, &chk) == 0)
        return 1;
    ss_describe(&chk, msg, cap);
    return 0;
}

/* Step 4 on 2^26 keys (256 MiB, far past L2), the harness's seeded ints
 * as keys; a sort has one answer, so the sampled words must equal the
 * reference's exactly. Each merge pass reads and writes all keys: the
 * least traffic of any sort is one read and one write. */
static int timing(int step, cml_spec_timing *t)
{
    if (step != 4)
        return 0;
    t->kind = 0;
    t->a = (uint64_t)1 << 26;
    t->b = 1;
    t->count = t->a;
    t->fill = 1;
    snprintf(t->label, sizeof t->label, "n = 2^26 keys (timed)");
    t->traffic = 8 * t->count;
    return 1;
}

const cml_spec cml_lab_spec = {"09_shared_sort", groups, COUNT(groups), out_bytes, judge, timing, ""};
