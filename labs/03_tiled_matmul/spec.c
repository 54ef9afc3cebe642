/* Lab 03's spec (cml_spec.h): C = A * B of M x K and K x N floats,
 * row-major. A case's a is M, b is N, kind is K; its data are A, then B.
 * Its output (common/labs/03_tiled_matmul/harness.c): C, then the guard
 * zone before C and the one after it (guard_words(N) words each), every
 * guard word 0xffffffff unless the kernel wrote outside C.
 *
 * The tests' shapes hold data uniform in [-1, 1): every element of C is
 * judged within gamma_K * sum_k |A(i, k)| |B(k, j)| of the product in
 * double, the error of any order of float additions (matmul_host.h). The
 * grader's shapes add three kinds of data judged exactly or within that
 * bound: small nonzero integers (every partial sum an integer below 2^24,
 * so C is exact and one dropped term changes it), distinct integers in A
 * (or B) against small ones in the other (one element read from a wrong
 * place changes C), and reals of magnitude [1, 2) with random signs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_rng.h>
#include <cml/cml_spec.h>
#include "matmul_host.h"

enum { UNIFORM, EXACT, DISTINCT_A, DISTINCT_B, SIGNED_REALS }; /* a case's tag: its data */

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

typedef struct shape {
    int M, N, K;
} shape;

/* The harness's guard zone (harness.c's guard_words). */
static uint64_t guard_words(uint64_t row)
{
    uint64_t g = 128 * (row + 1);
    if (g < 16384)
        g = 16384;
    return (g + 63) / 64 * 64;
}

/* n nonzero integers +-1 .. +-top (top a power of two <= 64). */
static void small_ints(float *a, size_t n, int top, cml_rng *rng)
{
    for (size_t i = 0; i < n; ++i) {
        uint64_t v = cml_rng_next(rng);
        a[i] = (float)((int)(1 + (v & (uint64_t)(top - 1))) * (v & 0x80 ? 1 : -1));
    }
}

/* +-1 .. +-n, each magnitude once, random signs, shuffled. */
static void distinct_ints(float *a, size_t n, cml_rng *rng)
{
    for (size_t i = 0; i < n; ++i)
        a[i] = (float)(i + 1) * (cml_rng_next(rng) & 1 ? 1.0f : -1.0f);
    for (size_t i = n; i > 1; --i) {
        size_t j = (size_t)(cml_rng_next(rng) % i);
        float t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

/* Magnitude in [1, 2), random mantissa and sign. */
static void signed_reals(float *a, size_t n, cml_rng *rng)
{
    for (size_t i = 0; i < n; ++i) {
        uint32_t v = (uint32_t)cml_rng_next(rng), bits = 0x3F800000u | (v & 0x7FFFFFu) | (v & 0x80000000u);
        memcpy(&a[i], &bits, 4);
    }
}

static const char *const what[] = {"", " (small integers, exact)", " (distinct integers in A, exact)",
                                   " (distinct integers in B, exact)", " (reals)"};

/* A case of shape s, its data of kind tag from (seed, stream); top: the
 * small integers' largest magnitude. */
static cml_case *add(cml_cases *l, shape s, int tag, int top, int where, uint64_t seed, uint64_t stream)
{
    size_t na = (size_t)s.M * s.K, nb = (size_t)s.K * s.N;
    cml_case *c = cml_case_add(l, (uint32_t)s.K, (uint64_t)s.M, (uint64_t)s.N, na + nb, "%d x %d x %d%s", s.M, s.N,
                               s.K, what[tag]);
    if (!c)
        return NULL;
    c->tag = tag;
    c->where = where;
    float *A = (float *)c->data, *B = A + na;
    cml_rng rng;
    cml_rng_init(&rng, seed, stream);
    if (tag == UNIFORM) {
        mm_make_data(A, na, seed, 2 * stream);
        mm_make_data(B, nb, seed, 2 * stream + 1);
    } else if (tag == SIGNED_REALS) {
        signed_reals(A, na + nb, &rng);
    } else {
        if (tag == DISTINCT_A)
            distinct_ints(A, na, &rng);
        else
            small_ints(A, na, tag == EXACT ? top : 8, &rng);
        if (tag == DISTINCT_B)
            distinct_ints(B, nb, &rng);
        else
            small_ints(B, nb, tag == EXACT ? top : 8, &rng);
    }
    return c;
}

static int add_all(cml_cases *l, const shape *s, size_t n, int tag, int where, uint64_t seed, uint64_t stream)
{
    for (size_t k = 0; k < n; ++k)
        if (!add(l, s[k], tag, 16, where, seed, stream + k))
            return 0;
    return 1;
}

static shape drawn(uint64_t seed, uint64_t stream, int most)
{
    cml_rng rng;
    cml_rng_init(&rng, seed, stream);
    shape s;
    s.M = cml_rng_int(&rng, 2, most);
    s.N = cml_rng_int(&rng, 2, most);
    s.K = cml_rng_int(&rng, 2, most);
    return s;
}

/* ---- the tests' shapes: data uniform in [-1, 1). Sizes on the CPU path
 * (every CUDA thread emulated, matmul is O(n^3)) stay near 100, of the
 * same kinds: 1, odd, prime, 2^k +- 1, K below, across and above the
 * k-tiles (8, 16, 32), K smaller and larger than N. */

static int thin(cml_cases *l, uint64_t seed, int cpu)
{
    static const shape s[] = {{1, 1, 1}, {1, 1, 100}, {1, 77, 33}, {77, 1, 33}, {45, 67, 1}, {1, 129, 1}};
    (void)cpu;
    return add_all(l, s, COUNT(s), UNIFORM, CML_IN_TESTS, seed, 100);
}

/* The edge shapes and one drawn from the seed (each side 2 .. 70 on the
 * CPU path, 2 .. 300 on a GPU). */
static int ragged(cml_cases *l, uint64_t seed, int cpu)
{
    static const shape s[] = {{16, 16, 16}, {17, 15, 17}, {31, 33, 7}, {33, 31, 47},
                              {61, 67, 71}, {65, 63, 130}, {97, 129, 40}};
    shape d = drawn(seed, 303, cpu ? 70 : 300);
    return add_all(l, s, COUNT(s), UNIFORM, CML_IN_TESTS, seed, 200) &&
           add_all(l, &d, 1, UNIFORM, CML_IN_TESTS, seed, 299);
}

static int skinny(cml_cases *l, uint64_t seed, int cpu)
{
    static const shape on_cpu[] = {{300, 3, 37}, {3, 300, 37}, {5, 7, 301}};
    static const shape on_gpu[] = {{4099, 3, 70}, {3, 4099, 70}, {5, 7, 4099}, {100003, 2, 3}};
    return cpu ? add_all(l, on_cpu, COUNT(on_cpu), UNIFORM, CML_IN_TESTS, seed, 300)
               : add_all(l, on_gpu, COUNT(on_gpu), UNIFORM, CML_IN_TESTS, seed, 300);
}

static int large(cml_cases *l, uint64_t seed, int cpu)
{
    static const shape on_cpu[] = {{129, 130, 131}};
    static const shape on_gpu[] = {{1000, 777, 513}, {1025, 1031, 1021}, {256, 384, 4096}};
    return cpu ? add_all(l, on_cpu, COUNT(on_cpu), UNIFORM, CML_IN_TESTS, seed, 400)
               : add_all(l, on_gpu, COUNT(on_gpu), UNIFORM, CML_IN_TESTS, seed, 400);
}

/* ---- the grader's shapes */

/* Small integers, exact: 1-wide and 1-deep, around and across the tiles
 * (8, 16, 32, 64, 128), K below, across and above the k-tiles, rows
 * 16-byte aligned (N and K multiples of 4) and not, skinny; on a GPU also
 * 1025 x 1031 x 1021, a thousand blocks of many k-tiles in flight, where a
 * tile refilled before every warp has read it (no barrier after the
 * multiply-adds) garbles thousands of elements of C on an H200 and no
 * smaller case here garbles one. The contract's limits: every side past
 * the largest tile (128) with one small side; on a GPU each side at
 * MATMUL_MAX_SIDE (gridDim.y's 65535 blocks of 8 rows) with the others
 * small, and K at the limit (entries +-1: a sum of 2^18 terms stays
 * exact). Limit cases are checked, never traced (cml_case.limit). */
static int exact(cml_cases *l, uint64_t seed, int cpu)
{
    static const shape s[] = {{1, 1, 1},     {1, 1, 100},    {1, 77, 33},    {77, 1, 33},   {45, 67, 1},
                              {1, 129, 1},   {17, 15, 17},   {31, 33, 7},    {33, 31, 47},  {61, 67, 71},
                              {65, 63, 130}, {97, 129, 40},  {67, 45, 129},  {129, 130, 131}, {130, 132, 68},
                              {300, 3, 37},  {3, 300, 37},   {5, 7, 301}};
    static const shape on_gpu[] = {{1000, 5, 257}, {257, 131, 65}, {4099, 3, 70}, {3, 4099, 70}, {5, 7, 4099},
                                   {30011, 2, 3}};
    static const shape limits[] = {{600, 601, 3}, {603, 2, 605}, {2, 607, 609}};
    static const shape ones_cpu[] = {{1, 1, 16411}};
    static const shape ones_gpu[] = {{MATMUL_MAX_SIDE, 2, 3}, {3, MATMUL_MAX_SIDE, 2}, {2, 3, MATMUL_MAX_SIDE},
                                     {MATMUL_MAX_SIDE - 1, 1, 1}};
    const shape *ones = cpu ? ones_cpu : ones_gpu;
    for (size_t k = 0; k < (cpu ? COUNT(ones_cpu) : COUNT(ones_gpu)); ++k) {
        cml_case *c = add(l, ones[k], EXACT, 1, CML_IN_GRADER, seed, 500 + k);
        if (!c)
            return 0;
        c->limit = 1;
    }
    cml_rng rng; /* two drawn shapes, the second with 16-byte rows (N and K multiples of 4) */
    cml_rng_init(&rng, seed, 501);
    shape d[2];
    d[0].M = cml_rng_int(&rng, 2, 140);
    d[0].N = cml_rng_int(&rng, 2, 140);
    d[0].K = cml_rng_int(&rng, 2, 160);
    d[1].M = cml_rng_int(&rng, 2, 140);
    d[1].N = 4 * cml_rng_int(&rng, 1, 35);
    d[1].K = 4 * cml_rng_int(&rng, 1, 40);
    if (!add_all(l, s, COUNT(s), EXACT, CML_IN_GRADER, seed, 510) || !add_all(l, d, 2, EXACT, CML_IN_GRADER, seed, 530))
        return 0;
    if (!cpu) {
        shape g[COUNT(on_gpu) + 2];
        memcpy(g, on_gpu, sizeof on_gpu);
        g[COUNT(on_gpu)] = drawn(seed, 503, 160);
        g[COUNT(on_gpu) + 1] = (shape){1025, 1031, 1021};
        if (!add_all(l, g, COUNT(g), EXACT, CML_IN_GRADER, seed, 540))
            return 0;
        l->v[l->n - 1].limit = 1; /* checked, not traced: the technique traces stay on the cases they were */
    }
    size_t from = l->n;
    if (!add_all(l, limits, COUNT(limits), EXACT, CML_IN_GRADER, seed, 560))
        return 0;
    for (size_t k = from; k < l->n; ++k)
        l->v[k].limit = 1;
    return 1;
}

static int reals(cml_cases *l, uint64_t seed, int cpu)
{
    static const shape s[] = {{67, 45, 129}, {37, 29, 300}, {130, 132, 68}};
    static const shape on_gpu[] = {{129, 67, 513}, {260, 12, 1000}};
    return add_all(l, s, COUNT(s), SIGNED_REALS, CML_IN_GRADER, seed, 600) &&
           (cpu || add_all(l, on_gpu, COUNT(on_gpu), SIGNED_REALS, CML_IN_GRADER, seed, 610));
}

/* Distinct values up to +-V (V that matrix's size), the other's entries
 * +-1 .. +-8: K * V * 8 < 2^24, so the sums stay exact. */
static int distinct(cml_cases *l, uint64_t seed, int cpu)
{
    static const shape s[] = {{67, 45, 129}, {45, 67, 129}};
    static const shape on_gpu[] = {{90, 131, 70}, {131, 90, 70}};
    for (int k = 0; k < (cpu ? 2 : 4); ++k) {
        shape sh = k < 2 ? s[k] : on_gpu[k - 2];
        if (!add(l, sh, k % 2 ? DISTINCT_B : DISTINCT_A, 8, CML_IN_GRADER, seed, 700 + (uint64_t)k))
            return 0;
    }
    return 1;
}

static const cml_group groups[] = {
    {"thin", thin, CML_IN_TESTS},   {"ragged", ragged, CML_IN_TESTS}, {"skinny", skinny, CML_IN_TESTS},
    {"large", large, CML_IN_TESTS}, {"exact", exact, CML_IN_GRADER},  {"reals", reals, CML_IN_GRADER},
    {"distinct", distinct, CML_IN_GRADER},
};

static uint64_t out_bytes(const cml_case *c)
{
    return 4 * (c->a * c->b + 2 * guard_words(c->b));
}

/* The reference of the cases judged so far in this process: every step of
 * a lab is judged on the same cases, and the largest costs a second. */
typedef struct cached {
    const uint32_t *data;
    mm_reference ref;
} cached;
static cached cache[128];
static size_t ncached;

static const mm_reference *reference_of(const cml_case *c)
{
    for (size_t k = 0; k < ncached; ++k)
        if (cache[k].data == c->data && cache[k].ref.M == (int)c->a && cache[k].ref.N == (int)c->b)
            return &cache[k].ref;
    cached *slot = &cache[ncached < COUNT(cache) ? ncached++ : COUNT(cache) - 1];
    if (slot->data)
        mm_reference_free(&slot->ref);
    slot->data = NULL;
    const float *A = (const float *)c->data;
    if (mm_reference_init(&slot->ref, A, A + c->a * c->kind, (int)c->a, (int)c->b, (int)c->kind, 1e300, 1) != 0)
        return NULL;
    slot->data = c->data;
    return &slot->ref;
}

static int judge(const cml_case *c, int step, const void *out, uint64_t nbytes, char *msg, size_t cap)
{
    (void)step;
    uint64_t M = c->a, N = c->b, mn = M * N, gw = guard_words(N);
    if (nbytes != out_bytes(c)) {
        snprintf(msg, cap, "%llu bytes of output, expected %llu", (unsigned long long)nbytes,
                 (unsigned long long)out_bytes(c));
        return 0;
    }
    const mm_reference *ref = reference_of(c);
    float *C = (float *)malloc(mn * sizeof *C);
    if (!ref || !C) {
        free(C);
        snprintf(msg, cap, "the checker ran out of host memory");
        return 0;
    }
    /* the harness's poison (0xff bytes) is the tests' unwritten mark for the diagnosis */
    const uint32_t *w = (const uint32_t *)out;
    for (uint64_t i = 0; i < mn; ++i) {
        uint32_t bits = w[i] == 0xffffffffu ? MM_POISON_BITS : w[i];
        memcpy(&C[i], &bits, 4);
    }
    mm_check chk;
    int right = mm_compare(ref, C, &chk) == 0;
    if (!right) {
        mm_describe(&chk, msg, cap);
    } else if (c->tag != UNIFORM && c->tag != SIGNED_REALS) { /* integers: C is exact */
        uint64_t bad = 0, first = 0;
        for (uint64_t i = 0; i < mn; ++i)
            if ((double)C[i] != ref->row_val[i] && bad++ == 0)
                first = i;
        if (bad) {
            snprintf(msg, cap, "%llu of %llu elements of C differ from the exact product: C(%llu, %llu) = %.9g, "
                     "expected %.9g (integers: any order of additions gives it exactly)", (unsigned long long)bad,
                     (unsigned long long)mn, (unsigned long long)(first / N), (unsigned long long)(first % N),
                     (double)C[first], ref->row_val[first]);
            right = 0;
        }
    }
    free(C);
    if (!right)
        return 0;
    return !cml_spec_outside_write(w + mn, w + mn + gw, gw, "C", msg, cap); /* C, then the zones before and after */
}

/* The [performance] steps (3, 6, 8, 9): the results pages' 4096^3 (A, B
 * and C 64 MiB each: past the L2), floats in [-1, 1) made by the harness. */
static int timing(int step, cml_spec_timing *t)
{
    if (step != 3 && step != 6 && step != 8 && step != 9)
        return 0;
    uint64_t m = 4096, n = 4096, k = 4096;
    t->kind = (uint32_t)k;
    t->a = m;
    t->b = n;
    t->count = m * k + k * n;
    t->fill = 2;
    snprintf(t->label, sizeof t->label, "%llu x %llu x %llu (timed)", (unsigned long long)m,
             (unsigned long long)n, (unsigned long long)k);
    t->traffic = 4 * (t->count + m * n); /* A and B read once, C written once (a loose floor: matmul computes) */
    t->flops = 2 * m * n * k;           /* a multiply and an add per term: cuBLAS's rate bounds it */
    /* each harness's C(i, j) is within gamma_K * sum_k |A(i, k)| |B(k, j)| < gamma_K * K of the exact one */
    t->close_abs = 2 * mm_gamma((int)k) * (double)k;
    return 1;
}

const cml_spec cml_lab_spec = {"03_tiled_matmul", groups, COUNT(groups), out_bytes, judge, timing, ""};
