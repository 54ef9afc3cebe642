/* GPU tests of lab 01, steps 4-7 (banks.cu), one Criterion suite per step.
 * Built twice: against your labs/01_shared_banks/banks.cu and against the
 * reference solution. (Steps 1-3 are tested in tests/model.c, no GPU.)
 *
 * Each test runs one group of the lab's spec (labs/01_shared_banks/spec.c:
 * the cases and the judge the grader's kit-only check uses too; CML_SEED
 * changes the data) through a checked run: outputs poisoned before every
 * launch, guard zones around every buffer. Timing is the runner's job;
 * here the probe is checked for what it must leave behind: the sum of the
 * words each thread read, and a start and stop clock per warp. A*B^T is
 * checked against a CPU product in double, for seeded real and
 * small-integer data (exact). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_spec.h>
#include <cml/cml_test.h>
#include "banks_host.h"

#define MAX_REPORTS 4
#define MSG 2048

enum { K_PROBE = 2, K_PROBE_REFUSED, K_ABT, K_ABT_REFUSED }; /* the spec's kinds (harness.c) */

/* Judges one case's output (in the harness's layout) with the spec. */
static int judged(int step, const cml_case *c, const void *out, uint64_t nbytes, uint64_t seed)
{
    static char msg[MSG];
    int right = cml_lab_spec.judge(c, step, out, nbytes, msg, sizeof msg);
    cr_expect(right, "step %d, %s (seed %llu): %s", step, c->label, (unsigned long long)seed, msg);
    return right;
}

/* The probe on poisoned start, stop and sums (guard zones around each);
 * its output in the harness's layout: sums, then start, then stop. */
static int check_probe(int step, const cml_case *c, uint64_t seed)
{
    enum { THREADS = BANKS_PROBE_WARPS * BANKS_WARP, CLOCKS = BANKS_PROBE_WARPS * sizeof(long long) };
    banks_probe_buffers b;
    CML_TEST_CHECK(banks_probe_alloc(&b));
    CML_TEST_CHECK(cudaMemcpy(b.lane_word.ptr, c->data, BANKS_WARP * 4, cudaMemcpyHostToDevice));
    int rounds = (int)(long long)c->a;
    unsigned char out[THREADS * 4 + 2 * CLOCKS];
    if (c->kind == K_PROBE_REFUSED) { /* the error it returns is the output */
        cudaError_t err = banks_probe((const unsigned *)b.lane_word.ptr, rounds, (long long *)b.start.ptr,
                                      (long long *)b.stop.ptr, (unsigned *)b.sums.ptr);
        banks_probe_free(&b);
        uint32_t word = (uint32_t)err;
        return judged(step, c, &word, sizeof word, seed);
    }
    CML_TEST_CHECK(cml_dbuf_fill32(&b.start, BANKS_HARNESS_POISON));
    CML_TEST_CHECK(cml_dbuf_fill32(&b.stop, BANKS_HARNESS_POISON));
    CML_TEST_CHECK(cml_dbuf_fill32(&b.sums, BANKS_HARNESS_POISON));
    cudaError_t err = banks_probe((const unsigned *)b.lane_word.ptr, rounds, (long long *)b.start.ptr,
                                  (long long *)b.stop.ptr, (unsigned *)b.sums.ptr);
    if (err == cudaSuccess)
        err = cudaDeviceSynchronize();
    cr_assert(err == cudaSuccess, "step %d, %s: CUDA error %s: %s", step, c->label, cudaGetErrorName(err),
              cudaGetErrorString(err));
    CML_TEST_CHECK(cudaMemcpy(out, b.sums.ptr, THREADS * 4, cudaMemcpyDeviceToHost));
    CML_TEST_CHECK(cudaMemcpy(out + THREADS * 4, b.start.ptr, CLOCKS, cudaMemcpyDeviceToHost));
    CML_TEST_CHECK(cudaMemcpy(out + THREADS * 4 + CLOCKS, b.stop.ptr, CLOCKS, cudaMemcpyDeviceToHost));
    const cml_dbuf *guarded[] = {&b.start, &b.stop, &b.sums};
    const char *names[] = {"start", "stop", "sums"};
    int bad = -1;
    long long where = 0;
    CML_TEST_CHECK(cml_dbufs_check_guards(guarded, 3, &bad, &where));
    banks_probe_free(&b);
    cr_expect(bad < 0, "step %d, %s: a write outside %s (byte offset %lld): index by warp (threadIdx.x / 32) for "
              "start/stop and by thread for sums", step, c->label, bad >= 0 ? names[bad] : "", where);
    return judged(step, c, out, sizeof out, seed) && bad < 0;
}

/* A*B^T: c poisoned (banks_abt_run), guard zones around a, b and c; its
 * output in the harness's layout: c between two poisoned guards. */
static int check_abt(int step, const cml_case *c, uint64_t seed)
{
    long long batch = (long long)c->a;
    size_t n = c->count / 2;
    banks_abt_buffers d;
    CML_TEST_CHECK(banks_abt_alloc(&d, c->kind == K_ABT ? (int)batch : 1));
    CML_TEST_CHECK(cudaMemcpy(d.a.ptr, c->data, n * 4, cudaMemcpyHostToDevice));
    CML_TEST_CHECK(cudaMemcpy(d.b.ptr, c->data + n, n * 4, cudaMemcpyHostToDevice));
    if (c->kind == K_ABT_REFUSED) { /* the error it returns is the output */
        cudaError_t err = banks_abt(step, (const float *)d.a.ptr, (const float *)d.b.ptr, (float *)d.c.ptr,
                                    (int)batch);
        banks_abt_free(&d);
        uint32_t word = (uint32_t)err;
        return judged(step, c, &word, sizeof word, seed);
    }
    cudaError_t err = banks_abt_run(&d, step);
    if (err == cudaSuccess)
        err = cudaDeviceSynchronize();
    cr_assert(err == cudaSuccess, "step %d, %s: CUDA error %s: %s", step, c->label, cudaGetErrorName(err),
              cudaGetErrorString(err));
    uint64_t nbytes = cml_lab_spec.out_bytes(c);
    size_t guard = (size_t)(nbytes / 4 - n) / 2;
    uint32_t *out = malloc(nbytes);
    cr_assert(out, "out of host memory for batch %lld", batch);
    for (size_t k = 0; k < guard; ++k)
        out[k] = out[guard + n + k] = BANKS_HARNESS_POISON;
    CML_TEST_CHECK(cudaMemcpy(out + guard, d.c.ptr, n * 4, cudaMemcpyDeviceToHost));
    /* c first: writing past it is the likely mistake; a and b are only read. */
    const cml_dbuf *guarded[] = {&d.c, &d.a, &d.b};
    const char *names[] = {"c", "a", "b"};
    int bad = -1;
    long long where = 0;
    CML_TEST_CHECK(cml_dbufs_check_guards(guarded, 3, &bad, &where));
    banks_abt_free(&d);
    cr_expect(bad < 0, "step %d, %s: a write outside %s (byte offset %lld of %zu): an index past the matrix, or a "
              "block that handles a matrix that does not exist", step, c->label, bad >= 0 ? names[bad] : "", where,
              n * 4);
    int right = judged(step, c, out, nbytes, seed);
    free(out);
    return right && bad < 0;
}

/* Every case of the group; stop after a few failures so the report stays readable. */
static int check_case(int step, const cml_case *c, uint64_t seed)
{
    cr_assert(c->kind >= K_PROBE && c->kind <= K_ABT_REFUSED, "spec case %s: kind %u is not a GPU case", c->label,
              c->kind);
    return c->kind <= K_PROBE_REFUSED ? check_probe(step, c, seed) : check_abt(step, c, seed);
}

static void run_group(int step, const char *group)
{
    cr_assert(cml_test_spec_group(step, group, check_case, MAX_REPORTS) > 0, "spec group %s has no case for step %d",
              group, step);
}

/* The 65537-matrix group (67 million CUDA threads: about 10 s a step on
 * the CPU path on 2 cores). On the CPU path only once the step gets batches 1, 2 and 33
 * right; on a GPU always. */
static void run_group_after_small(int step, const char *group)
{
    cr_assert(cml_test_spec_group_after(step, "real_matrices", 3, group, check_case, MAX_REPORTS) > 0,
              "spec group %s has no case for step %d", group, step);
}

/* ------------------------------------------------------------ step 4 */

Test(step4, probe_reads_the_pattern_words_and_times_each_warp_in_one_round, .timeout = 60)
{
    run_group(4, "probe_every_pattern_once");
}

/* 7 rounds and a count from the seed; and the round counts it must refuse. */
Test(step4, probe_repeats_the_reads_for_every_round, .timeout = 60)
{
    run_group(4, "probe_every_pattern_over_rounds");
}

/* ------------------------------------------------------------ steps 5-7 */

/* One suite per A*B^T step, from the step table. */
#define ABT_TESTS(num)                                                                            \
    Test(step##num, product_of_one_to_thousands_of_real_matrices, .timeout = 120)                 \
    {                                                                                             \
        run_group(num, "real_matrices");                                                          \
    }                                                                                             \
    Test(step##num, product_of_small_integer_matrices_is_exact, .timeout = 120)                   \
    {                                                                                             \
        run_group(num, "small_integer_matrices");                                                 \
    }                                                                                             \
    Test(step##num, product_of_more_matrices_than_a_grid_y_dimension_holds, .timeout = 120)       \
    {                                                                                             \
        run_group_after_small(num, "matrices_past_grid_y");                                       \
    }

ABT_TESTS(5)
ABT_TESTS(6)
ABT_TESTS(7)

/* Every A*B^T step is in the table and has a suite above. */
#define IS_ABT_STEP(num, ident, where, what) +((num) >= 5)
_Static_assert(0 BANKS_STEPS(IS_ABT_STEP) == 3, "banks.h has A*B^T steps without tests here");
