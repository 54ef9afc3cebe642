/* cml_test_lock.h: a lock that tests of one GPU take turns on (defined in
 * common/test/criterion_main.c, the main() of every Criterion binary). */
#ifndef CML_TEST_LOCK_H
#define CML_TEST_LOCK_H

#ifdef __cplusplus
extern "C" {
#endif

/* Takes the exclusive lock `name` of this test binary's GPU (the one its
 * lease gave it, CUDA_VISIBLE_DEVICES), waiting while another process holds
 * it; the lock goes when the calling process (the test's worker) ends. For
 * tests that need more of the GPU than the 4 GiB a test counts on (lab
 * 04's 8 GiB cases): they take turns. A lock file of $TMPDIR (else /tmp),
 * open to every user, as the GPU slots' (common/test/criterion_main.c).
 * -1 when it cannot be taken (errno says why). */
int cml_test_gpu_lock(const char *name);

#ifdef __cplusplus
}
#endif
#endif
