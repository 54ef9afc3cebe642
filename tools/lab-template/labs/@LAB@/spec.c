/* Lab @LAB@'s spec (cml_spec.h): the cases its tests and the grader's
 * kit-only check run, and when an output is right: out[i] = a * in[i].
 * A case's a is n, b is the factor's float bits; its data are in. Its
 * output (common/labs/@LAB@/harness.c): a guard zone of GUARD words, out,
 * and another guard zone, every guard word 0xffffffff unless the kernel
 * wrote outside out. One multiply per element leaves no rounding freedom,
 * so out is judged bit for bit.
 *
 * Replace the groups with the lab's own: each is a Criterion test's case
 * list (tests/gpu.c runs it by name), and `where` says whether the
 * grader's kit-only check runs it too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_rng.h>
#include <cml/cml_spec.h>
#include "@STEM@_host.h"

#define GUARD 64u /* harness.c's SC_GUARD */
#define GRADER_MOST(cpu) ((cpu) ? 100003u : 1000003u)
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int add_sizes(cml_cases *l, const size_t *sizes, size_t n, int cpu, uint64_t seed, uint64_t stream)
{
    for (size_t k = 0; k < n; ++k) {
        float a;
        cml_case *c = cml_case_add(l, 0, sizes[k], 0, sizes[k], "n = %zu", sizes[k]);
        if (!c)
            return 0;
        @STEM@_make_data((float *)c->data, sizes[k], &a, seed, stream + k);
        c->b = cml_float_bits(a);
        c->where = sizes[k] <= GRADER_MOST(cpu) ? CML_IN_BOTH : CML_IN_TESTS;
    }
    return 1;
}

/* Around one block of 256 and past it; primes; 2^k - 1 and 2^k + 1; and a
 * size drawn from the seed. */
static int small_and_ragged(cml_cases *l, uint64_t seed, int cpu)
{
    size_t sizes[] = {1, 2, 255, 256, 257, 1009, 65535, 65537, 0};
    cml_rng rng;
    cml_rng_init(&rng, seed, 700);
    sizes[COUNT(sizes) - 1] = (size_t)cml_rng_int(&rng, 2, 3000000);
    return add_sizes(l, sizes, COUNT(sizes), cpu, seed, 100);
}

/* Far past the caches on a GPU; the same kinds, smaller, on the CPU path. */
static int large(cml_cases *l, uint64_t seed, int cpu)
{
    static const size_t on_cpu[] = {1000003, (1u << 20) + 1};
    static const size_t on_gpu[] = {(1u << 24) + 1, 100000007};
    return cpu ? add_sizes(l, on_cpu, COUNT(on_cpu), cpu, seed, 200)
               : add_sizes(l, on_gpu, COUNT(on_gpu), cpu, seed, 200);
}

static const cml_group groups[] = {{"small_and_ragged", small_and_ragged, 0}, {"large", large, CML_IN_TESTS}};

static uint64_t out_bytes(const cml_case *c)
{
    return 4 * (c->a + 2 * GUARD);
}

static int judge(const cml_case *c, int step, const void *out, uint64_t nbytes, char *msg, size_t cap)
{
    (void)step;
    size_t n = (size_t)c->a;
    const uint32_t *w = (const uint32_t *)out;
    if (nbytes != out_bytes(c)) {
        snprintf(msg, cap, "%llu bytes of output, expected %llu", (unsigned long long)nbytes,
                 (unsigned long long)out_bytes(c));
        return 0;
    }
    if (cml_spec_outside_write(w, w + GUARD + n, GUARD, "out", msg, cap)) {
        size_t used = strlen(msg);
        snprintf(msg + used, used < cap ? cap - used : 0, ": a thread past the end of the array without an i < n check");
        return 0;
    }
    float *got = (float *)malloc(n * sizeof *got), a;
    if (!got) {
        snprintf(msg, cap, "the checker ran out of host memory");
        return 0;
    }
    for (size_t i = 0; i < n; ++i) { /* the harness's poison (0xff bytes) is the tests' unwritten mark */
        uint32_t bits = w[GUARD + i] == 0xffffffffu ? @STEM_UPPER@_POISON_BITS : w[GUARD + i];
        memcpy(&got[i], &bits, 4);
    }
    uint32_t abits = (uint32_t)c->b;
    memcpy(&a, &abits, 4);
    @STEM@_check chk;
    int right = @STEM@_compare((const float *)c->data, got, n, a, &chk) == 0;
    if (!right)
        @STEM@_describe(&chk, msg, cap);
    free(got);
    return right;
}

const cml_spec cml_lab_spec = {"@LAB@", groups, COUNT(groups), out_bytes, judge, NULL, ""};
