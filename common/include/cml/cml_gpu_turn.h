/* cml_gpu_turn.h: the kit's processes share a GPU; one that needs it alone
 * (an Nsight Compute run, the grader's timing) waits until they have ended.
 *
 * Two Nsight Compute runs on one GPU failed beside other GPU work: on an
 * H200 under ctest -j 8, lab 06's sectors_agree had ncu stop with
 * "LaunchFailed" after 6 or 7 launches of step 2, beside lab 05's ncu run
 * and then, with the ncu runs taking turns, beside compute-sanitizer runs
 * of the lab's runner and mistakes (2026-12-01). So an ncu run has the GPU
 * alone among the kit's processes, as the grader's own do among its
 * workers (grader/cmlgrade/profrun.py).
 *
 * Per GPU, two flock(2) files in $TMPDIR (else /tmp), open to every user,
 * named by the GPU's CUDA UUID as the GPU slots' are
 * (common/test/criterion_main.c): `cml-gpu-GPU-<hex>.use`, held shared by
 * every kit process that probed the GPU (cml_device_probe: the runners,
 * the labs' GPU tests) for as long as it runs, and exclusive by one that
 * has the GPU alone; and `cml-gpu-GPU-<hex>.gate`, taken shared for a
 * moment before a process shares the GPU, and exclusive, before the
 * `.use` file, by one that wants it alone: while that one waits, no new
 * process starts on the GPU, so those running end and it gets its turn.
 * The grader takes both exclusive, outside its sandbox, around its ncu
 * runs and while it times (grader/cmlgrade/gpuhold.py, kit_gpu_files).
 *
 * CML_GPU_HELD=1 in the environment: this process runs inside one that
 * holds the GPU (the program ncu profiles; every process the grader
 * starts), and takes nothing. Where a file cannot be made or locked (a
 * read-only $TMPDIR) a process shares unheld; cml_gpu_alone says why. */
#ifndef CML_GPU_TURN_H
#define CML_GPU_TURN_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" from the 16 bytes of
 * cudaDeviceProp.uuid, into buf (at least 41 bytes). */
void cml_gpu_uuid_text(const unsigned char bytes[16], char *buf, size_t cap);

/* This process shares the GPU with this UUID text from now until it ends
 * (its `.use` file held shared); waits while another has the GPU alone,
 * saying so once on stderr. Again for the same GPU: nothing more. */
void cml_gpu_share(const char *uuid);

/* The GPU this process shares ("" where none). */
const char *cml_gpu_shared(void);

typedef struct cml_gpu_alone_hold {
    int gate, use;  /* descriptors, -1 where not held */
    int was_shared; /* use is this process's share, made exclusive */
} cml_gpu_alone_hold;

/* The GPU with this UUID text alone among the kit's processes (this one's
 * own share given up meanwhile): waits for those running there to end,
 * saying so once on stderr. 1 when held (or CML_GPU_HELD=1: nothing to
 * take); 0 with why when a file cannot be locked. */
int cml_gpu_alone(const char *uuid, cml_gpu_alone_hold *h, char *why, size_t cap);

/* Lets the GPU go; this process's share, where it had one, is shared again. */
void cml_gpu_alone_end(cml_gpu_alone_hold *h);

#ifdef __cplusplus
}
#endif
#endif
