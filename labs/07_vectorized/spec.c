/* Lab 07's spec (cml_spec.h): the cases its tests and the grader's kit-only
 * check run, and when an output is right.
 *
 * A case: kind 0 (a copy, steps 1-4) or 1 (the scale-add, step 5); a = n;
 * b = the element offset off (0..3) in its low byte and, for the
 * scale-add, the factor a's float bits in its high 32 bits. Its data: x,
 * off + n words, the first off of them before the array (the step reads x
 * + off), then for the scale-add y, laid out the same. Steps 1-3 take
 * 16-byte aligned arrays only: their cases have off = 0, and steps 4 and 5
 * run every offset.
 *
 * Its output (common/labs/07_vectorized/harness.c, and the tests' checked
 * run alike): VEC_GUARD poisoned words, out's n words, VEC_GUARD poisoned
 * words, all 0xffffffff before the launch. A copy is judged bit for bit;
 * the scale-add within the bound of one rounding of a * x and one of the
 * sum (vectorized_scale_add_bound: about 2^-24 of |a x| + |a x + y|, far
 * below the distance between two elements' values). The data are random
 * floats (as the copies' ints, their bits), so an element from a wrong
 * index never passes. */
#include <stdio.h>
#include <string.h>

#include <cml/cml_rng.h>
#include <cml/cml_spec.h>
#include "vectorized_host.h"

#define GRADER_MOST(cpu) ((cpu) ? 100003u : 1048576u)
#define COUNT(v) (sizeof(v) / sizeof((v)[0]))
#define STEP_BIT(s) (1u << (s))
#define COPY_STEPS (STEP_BIT(1) | STEP_BIT(2) | STEP_BIT(3) | STEP_BIT(4))

/* One case of n elements at offset off for `steps`, its data from (seed,
 * stream): a copy unless steps is step 5's. */
static cml_case *add_case(cml_cases *l, size_t n, unsigned off, uint32_t steps, int where, uint64_t seed,
                          uint64_t stream)
{
    int saxpy = steps == STEP_BIT(5);
    size_t words = off + n;
    cml_case *c = cml_case_add(l, (uint32_t)saxpy, n, off, (saxpy ? 2 : 1) * (uint64_t)words,
                               "n = %zu, offset %u (%s)", n, off, saxpy ? "scale-add" : "copy");
    if (!c)
        return NULL;
    float a;
    float *x = (float *)c->data, *y = saxpy ? x + words : NULL;
    vectorized_make_data(x, y, words, &a, seed, stream);
    if (saxpy)
        c->b |= (uint64_t)cml_float_bits(a) << 32;
    c->steps = steps;
    c->where = where;
    return c;
}

/* Each size as a copy at offset 0 (steps 1-4), a copy at an offset of 1-3
 * (step 4) and a scale-add (step 5); all_offsets: every offset for steps
 * 4 and 5, else one drawn from the size's place in the list. */
static int add_sizes(cml_cases *l, const size_t *sizes, size_t count, int all_offsets, int cpu, uint64_t seed,
                     uint64_t stream)
{
    for (size_t k = 0; k < count; ++k) {
        size_t n = sizes[k];
        int where = n <= GRADER_MOST(cpu) ? CML_IN_BOTH : CML_IN_TESTS;
        uint64_t s = stream + 16 * k;
        if (!add_case(l, n, 0, COPY_STEPS, where, seed, s))
            return 0;
        for (unsigned off = 1; off <= VEC_MAX_OFFSET; ++off)
            if ((all_offsets || off == 1 + k % 3) && !add_case(l, n, off, STEP_BIT(4), where, seed, s + off))
                return 0;
        for (unsigned off = 0; off <= VEC_MAX_OFFSET; ++off)
            if ((all_offsets || off == (k + 3) % 4) && !add_case(l, n, off, STEP_BIT(5), where, seed, s + 4 + off))
                return 0;
    }
    return 1;
}

/* n = 0 to 9: nothing, less than one vector, one vector and a bit, each
 * at every offset (a head longer than n, a head then nothing). */
static int tiny_arrays(cml_cases *l, uint64_t seed, int cpu)
{
    static const size_t sizes[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    return add_sizes(l, sizes, COUNT(sizes), 1, cpu, seed, 100);
}

/* Sizes of every remainder mod 4 and none, around a block of 256, primes,
 * and one drawn from the seed. */
static int ragged_sizes(cml_cases *l, uint64_t seed, int cpu)
{
    size_t sizes[] = {31, 255, 256, 257, 1021, 1024, 4099, 65537, 0};
    cml_rng rng;
    cml_rng_init(&rng, seed, 707);
    sizes[COUNT(sizes) - 1] = (size_t)cml_rng_int(&rng, 10, cpu ? 100000 : 3000000);
    return add_sizes(l, sizes, COUNT(sizes), 0, cpu, seed, 300);
}

/* Sizes where the grid-stride loops go round many times: the launchers'
 * grid is one wave (8 blocks of 256 a multiprocessor), 270,336 threads on
 * a 132-SM H100 and 16 blocks where the CPU path has 2 workers. On a GPU
 * 2^24 + 3 and 10^8 + 7 (the larger for the tests only); on the CPU path
 * 2^18 + 3 (tests and grader) and 2^20 + 1. */
static int many_rounds(cml_cases *l, uint64_t seed, int cpu)
{
    static const size_t on_cpu[] = {(1u << 18) + 3, (1u << 20) + 1};
    static const size_t on_gpu[] = {(1u << 24) + 3, 100000007};
    return add_sizes(l, cpu ? on_cpu : on_gpu, 2, 0, cpu, seed, 500);
}

static const cml_group groups[] = {
    {"tiny_arrays", tiny_arrays, 0},
    {"ragged_sizes", ragged_sizes, 0},
    {"many_rounds", many_rounds, 0},
};

static uint64_t out_bytes(const cml_case *c)
{
    return 4 * (c->a + 2 * VEC_GUARD);
}

/* The case's x and y as the step reads them, then vectorized_judge. */
static int judge(const cml_case *c, int step, const void *out, uint64_t nbytes, char *msg, size_t cap)
{
    size_t n = (size_t)c->a;
    unsigned off = (unsigned)(c->b & 0xffu), eff = vectorized_step_offset(step, off);
    if (nbytes != out_bytes(c)) {
        snprintf(msg, cap, "%llu bytes of output, expected %llu", (unsigned long long)nbytes,
                 (unsigned long long)out_bytes(c));
        return 0;
    }
    if ((c->kind == VEC_SCALE_ADD) != (vectorized_kind(step) == VEC_SCALE_ADD)) {
        snprintf(msg, cap, "case %s is not one of step %d's", c->label, step);
        return 0;
    }
    const uint32_t *x = c->data + eff, *y = c->kind == VEC_SCALE_ADD ? c->data + off + n + eff : NULL;
    float a = cml_bits_float((uint32_t)(c->b >> 32));
    return vectorized_judge(step, x, y, a, n, eff, (const uint32_t *)out, msg, cap);
}

/* 2^28 elements (1 GiB an array) at offset 1 for steps 4 and 5, offset 0
 * for step 3; copies exact, the scale-add's samples within the rounding
 * freedom of the judge (|a x + y| < 3 for fill 2's floats in [-1, 1) and
 * a = 1.5). */
static int timing(int step, cml_spec_timing *t)
{
    if (step < 3 || step > VECTORIZED_NUM_STEPS)
        return 0;
    uint64_t n = (uint64_t)1 << 28, off = step >= 4 ? 1 : 0;
    int saxpy = vectorized_kind(step) == VEC_SCALE_ADD;
    t->kind = (uint32_t)saxpy;
    t->a = n;
    t->b = off | (saxpy ? (uint64_t)cml_float_bits(1.5f) << 32 : 0);
    t->count = (saxpy ? 2 : 1) * (off + n);
    t->fill = 2;
    snprintf(t->label, sizeof t->label, "n = 2^28, offset %u (timed)", (unsigned)off);
    t->traffic = (saxpy ? 12 : 8) * n; /* x (and y) read once, out written once */
    t->close_rel = saxpy ? 2.5e-7 : 0.0;
    t->close_abs = saxpy ? 1e-6 : 0.0;
    return 1;
}

const cml_spec cml_lab_spec = {"07_vectorized", groups, COUNT(groups), out_bytes, judge, timing, ""};
