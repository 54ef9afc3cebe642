/* Lab 08's spec (cml_spec.h): the cases its tests and the grader's kit-only
 * check run, and when an output is right: y[i] = sum of coef[k] x[i]^k.
 *
 * A case's a is n, b the degree; its data are x (n floats) then coef
 * (degree + 1 floats), seeded in [-1, 1). Steps 2 and 3 compute the table's
 * degree, OCC_TABLE_DEGREE, only; every size also runs steps 1 and 4 at a
 * low degree drawn from the seed (0, 1, 5 or 8). Its output
 * (common/labs/08_occupancy/harness.c): a guard zone of GUARD words, y and
 * another guard zone, every guard word 0xffffffff unless the kernel wrote
 * outside y. The answer is judged within occupancy_ref's bound: any order
 * of the degree's multiplications and additions in float passes, a wrong
 * power, coefficient or element does not. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_rng.h>
#include <cml/cml_spec.h>
#include "occupancy_host.h"

#define GUARD 64u /* harness.c's OC_GUARD */
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define STEPS_ANY_DEGREE ((1u << 1) | (1u << 4))

static int add_case(cml_cases *l, size_t n, int degree, uint32_t steps, int where, uint64_t seed, uint64_t stream)
{
    cml_case *c = cml_case_add(l, 0, n, (uint64_t)degree, n + (size_t)degree + 1, "n = %zu, degree %d", n, degree);
    if (!c)
        return 0;
    float *x = (float *)c->data;
    occupancy_make_data(x, n, x + n, degree, seed, stream);
    c->steps = steps;
    c->where = where;
    return 1;
}

/* Each size at the table's degree (every step) and at a low degree drawn
 * from the seed (steps 1 and 4). */
static int add_sizes(cml_cases *l, const size_t *sizes, size_t count, int where, uint64_t seed, uint64_t stream)
{
    static const int low[] = {0, 1, 5, 8};
    cml_rng rng;
    cml_rng_init(&rng, seed, stream + 77);
    for (size_t k = 0; k < count; ++k) {
        int d = low[cml_rng_int(&rng, 0, (int)COUNT(low) - 1)];
        if (!add_case(l, sizes[k], OCC_TABLE_DEGREE, 0, where, seed, stream + 2 * k) ||
            !add_case(l, sizes[k], d, STEPS_ANY_DEGREE, where, seed, stream + 2 * k + 1))
            return 0;
    }
    return 1;
}

/* None (nothing to compute, nothing written, no launch error); one
 * element; a warp; around step 1's block of 256 and step 4's chunk of
 * 128 x 8 = 1024; a prime; and a size drawn from the seed. */
static int small_and_ragged(cml_cases *l, uint64_t seed, int cpu)
{
    (void)cpu;
    size_t sizes[] = {0, 1, 31, 255, 256, 257, 1023, 1025, 4099, 0};
    cml_rng rng;
    cml_rng_init(&rng, seed, 800);
    sizes[COUNT(sizes) - 1] = (size_t)cml_rng_int(&rng, 2, 200000);
    return add_sizes(l, sizes, COUNT(sizes), CML_IN_BOTH, seed, 100);
}

/* Far past the caches on a GPU; smaller on the CPU path. */
static int large(cml_cases *l, uint64_t seed, int cpu)
{
    static const size_t on_cpu[] = {300007};
    static const size_t on_gpu[] = {(1u << 24) + 1, 50000017};
    return cpu ? add_sizes(l, on_cpu, COUNT(on_cpu), CML_IN_TESTS, seed, 200)
               : add_sizes(l, on_gpu, COUNT(on_gpu), CML_IN_TESTS, seed, 200);
}

static const cml_group groups[] = {
    {"small_and_ragged", small_and_ragged, 0}, {"large", large, CML_IN_TESTS}};

static uint64_t out_bytes(const cml_case *c)
{
    return 4 * (c->a + 2 * GUARD);
}

static int judge(const cml_case *c, int step, const void *out, uint64_t nbytes, char *msg, size_t cap)
{
    size_t n = (size_t)c->a;
    int degree = (int)c->b;
    const uint32_t *w = (const uint32_t *)out;
    const float *x = (const float *)c->data;
    if (nbytes != out_bytes(c)) {
        snprintf(msg, cap, "%llu bytes of output, expected %llu", (unsigned long long)nbytes,
                 (unsigned long long)out_bytes(c));
        return 0;
    }
    if (cml_spec_outside_write(w, w + GUARD + n, GUARD, "y", msg, cap)) {
        size_t used = strlen(msg);
        snprintf(msg + used, used < cap ? cap - used : 0, ": a thread past the end of the array without an i < n check");
        return 0;
    }
    float *got = (float *)malloc((n ? n : 1) * sizeof *got);
    if (!got) {
        snprintf(msg, cap, "the checker ran out of host memory");
        return 0;
    }
    for (size_t i = 0; i < n; ++i) { /* the harness's poison (0xff bytes) is the tests' unwritten mark */
        uint32_t bits = w[GUARD + i] == 0xffffffffu ? OCCUPANCY_POISON_BITS : w[GUARD + i];
        memcpy(&got[i], &bits, 4);
    }
    occupancy_check chk;
    int right = occupancy_compare(x, x + n, degree, got, n, &chk) == 0;
    if (!right)
        occupancy_describe(&chk, step, msg, cap);
    free(got);
    return right;
}

/* Steps 1 and 4 timed on 2^27 floats at degree 8 (the runner's default),
 * x and coef in [-1, 1): 512 MiB each way, far past L2. Traffic: x read
 * and y written once (coef is 9 floats). A
 * sampled element is right within the judge's bound at |x| < 1: gamma(18)
 * times the sum of 9 coefficients below 1, about 1e-5. */
static int timing(int step, cml_spec_timing *t)
{
    if (step != 1 && step != 4)
        return 0;
    uint64_t n = (uint64_t)1 << 27, degree = 8;
    t->kind = 0;
    t->a = n;
    t->b = degree;
    t->count = n + degree + 1;
    t->fill = 2;
    snprintf(t->label, sizeof t->label, "n = 2^27, degree 8 (timed)");
    t->traffic = 8 * n;
    t->flops = 0; /* bound by memory, not compared with a library's FLOP rate */
    t->close_rel = 0.0;
    t->close_abs = 2e-5;
    return 1;
}

const cml_spec cml_lab_spec = {"08_occupancy", groups, COUNT(groups), out_bytes, judge, timing, ""};
