/* cml_test.h: helpers for the labs' Criterion tests (C only). */
#ifndef CML_TEST_H
#define CML_TEST_H

#include <criterion/criterion.h>
#include <cuda_runtime_api.h>
#include "cml_device.h"
#include "cml_rng.h"
#include "cml_spec.h"
#include "cml_test_lock.h"

/* Skip the current test, visibly, when this machine has no GPU; fail it,
 * naming the CUDA error, when a GPU is there but cannot run it (out of
 * memory, a launch failure: never read as "no GPU"). Each test runs in its
 * own worker process, so probing here never initializes CUDA in Criterion's
 * parent process. */
#define CML_REQUIRE_GPU()                                                  \
    do {                                                                   \
        char cml_why_[320];                                                \
        cml_device_info cml_dev_;                                          \
        int cml_probe_ = cml_device_probe(&cml_dev_, cml_why_, sizeof cml_why_); \
        if (cml_probe_ == CML_PROBE_NO_GPU)                                \
            cr_skip_test("%s", cml_why_);                                  \
        else if (cml_probe_ != CML_PROBE_OK)                               \
            cr_assert_fail("%s", cml_why_);                                \
    } while (0)

/* A CUDA call inside a test: a failure ends the test with the call's text
 * and the error (a sticky error after a crashed kernel shows up here). */
#define CML_TEST_CHECK(call)                                               \
    do {                                                                   \
        cudaError_t cml_err_ = (call);                                     \
        cr_assert(cml_err_ == cudaSuccess, "%s failed: %s (%s)", #call,   \
                  cudaGetErrorName(cml_err_), cudaGetErrorString(cml_err_)); \
    } while (0)

/* The seed of the current test, in one call: CML_SEED when set (decimal or
 * 0x hex), else the kit's default; logged on Criterion's info channel. A
 * CML_SEED that is not a number fails the test rather than running on
 * other data than asked. The same rule as the runners' (cml_seed). */
static inline uint64_t cml_test_seed(void)
{
    uint64_t seed = 0;
    char err[160];
    cr_assert(cml_seed(&seed, err, sizeof err), "%s", err);
    cr_log_info("seed %llu (set CML_SEED to change the data)", (unsigned long long)seed);
    return seed;
}

/* The spec's cases of the GPU or of the CPU path: this build's. */
#ifdef CML_CPU_BACKEND
#define CML_TEST_ON_CPU 1
#else
#define CML_TEST_ON_CPU 0
#endif

/* The cases of `group` for step on this seed through check, up to
 * most_wrong wrong ones (cml_test_spec_group, cml_test_spec_group_after). */
static inline size_t cml_test_spec_cases_(int step, const char *group, uint64_t seed,
                                          int (*check)(int step, const cml_case *c, uint64_t seed), int most_wrong)
{
    cml_cases list;
    cr_assert(cml_spec_group_cases(&cml_lab_spec, group, seed, CML_TEST_ON_CPU, step, &list),
              "spec group %s: no such group, or out of host memory", group);
    int wrong = 0;
    for (size_t k = 0; k < list.n && wrong < most_wrong; ++k)
        wrong += !check(step, &list.v[k], seed);
    size_t n = list.n;
    cml_cases_free(&list);
    return n;
}

/* One test of a lab's spec (cml_spec.h): every case of the spec's group
 * `group` that step runs goes through check (the lab's checked run and
 * cml_lab_spec.judge; it reports what is wrong and returns 0 then), up to
 * most_wrong wrong cases, so that the report stays readable. Skips without
 * a GPU. Returns how many cases the group has for the step. */
static inline size_t cml_test_spec_group(int step, const char *group,
                                         int (*check)(int step, const cml_case *c, uint64_t seed), int most_wrong)
{
    CML_REQUIRE_GPU();
    return cml_test_spec_cases_(step, group, cml_test_seed(), check, most_wrong);
}

/* A test of huge cases (more blocks than a grid's y extent holds: tens of
 * millions of CUDA threads). On the CPU path, where every CUDA thread is a
 * fiber and these cases cost seconds to tens of seconds a step, it first
 * runs the first `first_n` cases of a small group of the same step (which
 * have their own test): a step already wrong there fails here at once, on
 * that small case, and says that the huge cases were not run; a step right
 * there runs them all. A wrong kernel (an untouched skeleton, a catalogued
 * mistake, a step in progress) then costs milliseconds instead of the huge
 * cases' time. On a GPU, where the huge cases take milliseconds, they
 * always run, so a test's outcome there never depends on another group's.
 * Returns how many cases `group` has for the step (1 when it stopped
 * early, so that a caller's "has a case" holds). */
static inline size_t cml_test_spec_group_after(int step, const char *small, size_t first_n, const char *group,
                                               int (*check)(int step, const cml_case *c, uint64_t seed),
                                               int most_wrong)
{
    CML_REQUIRE_GPU();
    uint64_t seed = cml_test_seed();
#ifdef CML_CPU_BACKEND
    cml_cases pre;
    cr_assert(cml_spec_group_cases(&cml_lab_spec, small, seed, CML_TEST_ON_CPU, step, &pre),
              "spec group %s: no such group, or out of host memory", small);
    cr_assert(pre.n > 0, "spec group %s has no case for step %d", small, step);
    for (size_t k = 0; k < pre.n && k < first_n; ++k) {
        if (!check(step, &pre.v[k], seed)) {
            cr_expect(0, "step %d: its huge cases (spec group %s) were not run: the step is already wrong on %s "
                      "above (a case of %s, which has its own test); fix that first (the CPU path only: on a "
                      "GPU they always run)",
                      step, group, pre.v[k].label, small);
            cml_cases_free(&pre);
            return 1;
        }
    }
    cml_cases_free(&pre);
#else
    (void)small;
    (void)first_n;
#endif
    return cml_test_spec_cases_(step, group, seed, check, most_wrong);
}

#define CML_CAT_(a, b) a##b
#define CML_CAT(a, b) CML_CAT_(a, b)

#endif
