/* Lab 04's spec (cml_spec.h): the cases its tests and the grader's
 * kit-only check run, and when a sum is right. A case is kind 0 (ints) or
 * 1 (floats), a = n; its output is out[0], 4 bytes.
 *
 * Sizes that break reductions: 1, around a warp and a block (256 and 512
 * elements per block are common), primes, around 2^20, and two drawn from
 * the seed. The grader runs the cases up to about a million elements (a
 * tenth of that on the CPU path); the tests run them all. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cml/cml_compare.h>
#include <cml/cml_rng.h>
#include <cml/cml_spec.h>
#include "reduction_host.h"

/* A case's tag: its data, and so its bound. */
enum { INTS, SMALL_INT_FLOATS, REALS, NON_NEGATIVE_INTS, POSITIVE_REALS };

#define GRADER_MOST(cpu) ((cpu) ? 100003u : 1000003u)
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const size_t awkward[] = {1, 2, 31, 32, 33, 255, 256, 257, 511, 513, 1023, 1025,
                                 65537, 1000003, (1u << 20) - 1, (1u << 20) + 1, 3u * (1u << 20) + 7};

/* A case of each size, its data by tag from (seed, stream + k); the grader
 * runs those up to GRADER_MOST. */
static int add_sizes(cml_cases *l, int tag, const size_t *sizes, size_t n, int cpu, uint64_t seed, uint64_t stream)
{
    static const char *const what[] = {"int", "float (small integers, exact)", "float (reals)",
                                       "non-negative ints (partial sums past 2^24)", "reals in [1, 2)"};
    for (size_t k = 0; k < n; ++k) {
        cml_case *c = cml_case_add(l, tag == INTS || tag == NON_NEGATIVE_INTS ? 0 : 1, sizes[k], 0, sizes[k],
                                   "n = %zu %s", sizes[k], what[tag]);
        if (!c)
            return 0;
        c->tag = tag;
        c->where = sizes[k] <= GRADER_MOST(cpu) ? CML_IN_BOTH : CML_IN_TESTS;
        if (tag == INTS)
            red_make_ints((int *)c->data, sizes[k], seed, stream + k);
        else if (tag == NON_NEGATIVE_INTS)
            cml_fill_int((int *)c->data, sizes[k], 0, 1000, seed, stream + k);
        else if (tag == POSITIVE_REALS)
            cml_fill_float((float *)c->data, sizes[k], 1.0f, 2.0f, seed, stream + k);
        else
            red_make_floats((float *)c->data, sizes[k], tag == REALS ? RED_REALS : RED_SMALL_INTS, seed, stream + k);
    }
    return 1;
}

/* The awkward sizes and two drawn from the seed. */
static int at_awkward_sizes(cml_cases *l, int tag, uint64_t seed, int cpu, uint64_t stream)
{
    size_t sizes[COUNT(awkward) + 2];
    memcpy(sizes, awkward, sizeof awkward);
    cml_rng rng;
    cml_rng_init(&rng, seed, 999);
    sizes[COUNT(awkward)] = (size_t)cml_rng_int(&rng, 2, 5000);
    sizes[COUNT(awkward) + 1] = (size_t)cml_rng_int(&rng, 5001, 3000000);
    return add_sizes(l, tag, sizes, COUNT(sizes), cpu, seed, stream);
}

static int ints_at_awkward_sizes(cml_cases *l, uint64_t seed, int cpu)
{
    return at_awkward_sizes(l, INTS, seed, cpu, 100);
}

static int small_int_floats_at_awkward_sizes(cml_cases *l, uint64_t seed, int cpu)
{
    return at_awkward_sizes(l, SMALL_INT_FLOATS, seed, cpu, 200);
}

/* Reals in [-1, 1), within red_float_tolerance. */
static int reals_within_bound(cml_cases *l, uint64_t seed, int cpu)
{
    static const size_t sizes[] = {1, 33, 4097, 1000003, (1u << 22) + 1};
    return add_sizes(l, REALS, sizes, COUNT(sizes), cpu, seed, 300);
}

/* Non-negative ints: the partial sums grow past 2^24, where a float can no
 * longer hold every integer, so a sum accumulated in float (or a float
 * shuffle of int partials) loses units; the symmetric data above never gets
 * there. Sums stay below 2^31. */
static int ints_past_2_pow_24(cml_cases *l, uint64_t seed, int cpu)
{
    static const size_t sizes[] = {65537, (1u << 18) + 3};
    return add_sizes(l, NON_NEGATIVE_INTS, sizes, COUNT(sizes), cpu, seed, 500);
}

/* Reals in [1, 2): one element dropped, or one block, moves the sum by at
 * least 1, and the bound here (2 * ceil(log2 n) * u * sum|a|, the error of
 * a summation tree of that depth) stays below 1 up to n = 2^17. The bound of
 * the reals above (8 * sqrt(n) * u * sum|a|) is far looser at large n. */
static int positive_reals(cml_cases *l, uint64_t seed, int cpu)
{
    static const size_t sizes[] = {1, 33, 4097, 65537, 131071};
    return add_sizes(l, POSITIVE_REALS, sizes, COUNT(sizes), cpu, seed, 600);
}

/* 2^28 + 1 on a GPU: 1 GiB, far past the caches and one wave of blocks.
 * On the CPU path, where one CPU second sums a few million elements in the
 * early steps, 2^22 + 1: still thousands of blocks and a partial last one.
 * The tests only (past GRADER_MOST). */
static int large_ints(cml_cases *l, uint64_t seed, int cpu)
{
    size_t n = ((size_t)1 << (cpu ? 22 : 28)) + 1;
    return add_sizes(l, INTS, &n, 1, cpu, seed, 400);
}

/* Past 2^31 elements on a GPU: 2^31 + 2^20 + 7 ints, 8 GiB. An index held
 * in 32 bits goes negative there (an out-of-bounds read, a CUDA error) or,
 * unsigned, wraps to the start and reads the first elements again. The
 * data below 2^31 are -1, 0 or 1 and every element from 2^31 on is +1, so
 * the tail dropped or read from the start moves the sum by about 2^20.
 * The case carries no host data (count 0): the test makes its 8 GiB on the
 * device, the head cml_fill_int's words of (seed, RED_BIG_STREAM) as before,
 * and sums them there, with the kit's own kernels
 * (common/labs/04_reduction/red_big.cu); a host loop over 8 GiB and its
 * upload cost 11 to 16 s of every lab 04 grading. The tests only, and not
 * on the CPU path (8 GiB, and 2^31 threads emulated): no case there. */
static int past_2_pow_31(cml_cases *l, uint64_t seed, int cpu)
{
    (void)seed;
    if (cpu)
        return 1;
    size_t n = ((size_t)1 << 31) + ((size_t)1 << 20) + 7;
    cml_case *c = cml_case_add(l, 0, n, 0, 0, "n = 2^31 + 2^20 + 7 int (8 GiB: indices past 32 bits)");
    if (!c)
        return 0;
    c->tag = INTS;
    c->b = (uint64_t)1 << 31; /* the head of -1, 0 and 1; every element after it is +1 */
    c->where = CML_IN_TESTS;
    return 1;
}

static const cml_group groups[] = {
    {"ints_at_awkward_sizes", ints_at_awkward_sizes, 0},
    {"small_int_floats_at_awkward_sizes", small_int_floats_at_awkward_sizes, 0},
    {"reals_within_bound", reals_within_bound, 0},
    {"ints_past_2_pow_24", ints_past_2_pow_24, 0},
    {"positive_reals", positive_reals, 0},
    {"large_ints", large_ints, CML_IN_TESTS},
    {"past_2_pow_31", past_2_pow_31, CML_IN_TESTS},
};

static uint64_t out_bytes(const cml_case *c)
{
    (void)c;
    return 4;
}

static int judge(const cml_case *c, int step, const void *out, uint64_t nbytes, char *msg, size_t cap)
{
    (void)step;
    if (nbytes != 4) {
        snprintf(msg, cap, "%llu bytes of output, expected 4", (unsigned long long)nbytes);
        return 0;
    }
    red_reference ref;
    red_reference_of(c->data, c->kind == 0 ? RED_INT : RED_FLOAT,
                     c->tag == SMALL_INT_FLOATS ? RED_SMALL_INTS : RED_REALS, (size_t)c->a, &ref);
    if (c->kind == 0) {
        int got;
        memcpy(&got, out, 4);
        if ((int64_t)got == ref.isum)
            return 1;
        snprintf(msg, cap, "expected %lld, got %d. Likely cause: %s", (long long)ref.isum, got,
                 red_diagnose_int(got, ref.isum));
        return 0;
    }
    float got;
    memcpy(&got, out, 4);
    if (c->tag == POSITIVE_REALS) /* all positive: sum|a| = sum */
        ref.tol = 2.0 * fmax(1.0, ceil(log2((double)c->a))) * 5.9604644775390625e-08 * ref.fsum;
    if (cml_close(got, ref.fsum, ref.tol, 0.0))
        return 1;
    char bound[96] = " (exact)";
    if (ref.tol > 0)
        snprintf(bound, sizeof bound, ", allowed error %.3g%s", ref.tol,
                 c->tag == POSITIVE_REALS ? " (one element is at least 1)" : "");
    snprintf(msg, cap, "expected %.9g, got %.9g%s. Likely cause: %s", ref.fsum, (double)got, bound,
             red_diagnose_float(got, ref.fsum, ref.tol));
    return 0;
}

/* 1 GiB of ints (the results pages' size): far past L2; exact, so the
 * timed samples must equal the reference's. */
static int timing(int step, cml_spec_timing *t)
{
    (void)step;
    t->kind = 0;
    t->a = t->count = (uint64_t)1 << 28;
    t->fill = 1;
    snprintf(t->label, sizeof t->label, "n = %llu int (timed)", (unsigned long long)t->a);
    t->traffic = 4 * t->count; /* the ints read once; one sum written */
    return 1;
}

const cml_spec cml_lab_spec = {"04_reduction", groups, sizeof groups / sizeof groups[0], out_bytes, judge, timing,
                               ""};
