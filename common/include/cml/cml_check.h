/* cml_check.h: CUDA error checking and the kit's exit statuses.
 * Usable from C and CUDA C. */
#ifndef CML_CHECK_H
#define CML_CHECK_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exit statuses shared by every runner and tool of the kit. */
enum {
    CML_EXIT_OK = 0,
    CML_EXIT_FAIL = 1,    /* a wrong result or a CUDA error */
    CML_EXIT_USAGE = 2,   /* bad command-line arguments */
    CML_EXIT_NO_GPU = 77  /* no usable CUDA device (CTest's SKIP_RETURN_CODE) */
};

/* The end of a diagnosis that may be a race, for the lab whose runner is
 * <stem>_run: the tool that finds it on this build's path (the CPU path's own
 * race check there, with the lab's runner named; a student without a GPU has
 * no compute-sanitizer to run). */
#ifdef CML_CPU_BACKEND
#define CML_RACE_TOOL_HINT(stem)                                                                             \
    "the CPU path's racecheck names the line: CML_CPU_CHECK=race build/" stem "_run_cpu --step N --check-only"
#else
#define CML_RACE_TOOL_HINT(stem)                                                                             \
    "run build/" stem "_run --step N under compute-sanitizer --tool racecheck and --tool memcheck to find it "  \
    "(without a GPU: CML_CPU_CHECK=race build/" stem "_run_cpu --step N --check-only)"
#endif

/* Prints "file:line: CUDA error in `expr`: <name>: <description>" to stderr
 * and exits with CML_EXIT_FAIL when err is not cudaSuccess. */
void cml_check_fail(cudaError_t err, const char *expr, const char *file, int line);

#ifdef __cplusplus
}
#endif

/* Check a CUDA runtime call in host code that cannot go on after an error
 * (runners, tools). Tests use CML_TEST_CHECK from cml_test.h instead. */
#define CML_CHECK(call)                                                   \
    do {                                                                  \
        cudaError_t cml_err_ = (call);                                    \
        if (cml_err_ != cudaSuccess)                                      \
            cml_check_fail(cml_err_, #call, __FILE__, __LINE__);          \
    } while (0)

/* In a function that returns cudaError_t (the labs' launchers): return the
 * error of a failing call to the caller. */
#define CML_TRY(call)                                                     \
    do {                                                                  \
        cudaError_t cml_err_ = (call);                                    \
        if (cml_err_ != cudaSuccess)                                      \
            return cml_err_;                                              \
    } while (0)

/* Right after a <<<...>>> launch: a bad configuration shows up here. */
#define CML_TRY_LAUNCH() CML_TRY(cudaGetLastError())

#endif /* CML_CHECK_H */
