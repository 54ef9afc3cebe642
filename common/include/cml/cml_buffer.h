/* cml_buffer.h: device arrays with guard zones, and poisoning.
 *
 * Each buffer is one cudaMalloc of guard + payload + guard. The guards are
 * filled with a known 4-byte pattern before a run and checked after it: a
 * kernel that writes past either end is caught even when the write stays
 * inside the allocation (where compute-sanitizer cannot see it), and a kernel
 * that reads past the end of an input reads the pattern, which the labs'
 * diagnostics recognize. The payload starts 256-byte aligned.
 *
 * With CML_EXACT_BUFFERS=1 in the environment (the grader's memcheck runs,
 * and the kit's: compute-sanitizer memcheck and the CPU path's bounds
 * check), each buffer is instead one cudaMalloc of exactly its payload and
 * has no guards: a read or write past either end leaves the allocation, so
 * the tool reports it even when the value read never reaches an output
 * (inside a guard zone no tool can see it). The guard checks then report
 * every buffer intact; the tool is the check. */
#ifndef CML_BUFFER_H
#define CML_BUFFER_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CML_GUARD_BYTES ((size_t)64 * 1024)

typedef struct cml_dbuf {
    void *base;         /* what cudaMalloc returned */
    void *ptr;          /* the payload: hand this to kernels */
    size_t bytes;       /* payload size */
    uint32_t guard;     /* pattern the guards hold */
    int exact;          /* 1: an allocation of exactly the payload, no guards (CML_EXACT_BUFFERS) */
} cml_dbuf;

/* Allocates bytes of payload between two guard zones filled with guard (or,
 * with CML_EXACT_BUFFERS set and not "0", exactly bytes and no guards).
 * The payload itself is not initialized: poison or upload it. */
cudaError_t cml_dbuf_alloc(cml_dbuf *b, size_t bytes, uint32_t guard);

/* Whether CML_EXACT_BUFFERS asks for allocations of exactly the payload. */
int cml_dbuf_exact_mode(void);
void cml_dbuf_free(cml_dbuf *b);

/* Fill the payload with a repeated 4-byte pattern (bytes must be a multiple
 * of 4), e.g. a poison value an honest kernel never produces. */
cudaError_t cml_dbuf_fill32(cml_dbuf *b, uint32_t pattern);

/* Checks both guards. Returns cudaSuccess and sets *intact to 1 when both
 * still hold the pattern; else *intact = 0 and *where describes the first
 * damaged byte as an offset from the payload: negative before it, >= bytes
 * after it. */
cudaError_t cml_dbuf_check_guards(const cml_dbuf *b, int *intact, long long *where);

/* Checks the guards of n buffers in order (the likeliest culprit first).
 * Returns the first CUDA error, or cudaSuccess with *bad = the index of the
 * first damaged buffer (and *where as above), or -1 when all are intact.
 * Every checked run of the kit (tests and runners) goes through this. */
cudaError_t cml_dbufs_check_guards(const cml_dbuf *const *bufs, int n, int *bad, long long *where);

/* A 64-bit FNV-1a hash of bytes of host memory: cml_hash_bytes(p, n, 0)
 * starts one; pass the last result as h to go on over the next piece. */
uint64_t cml_hash_bytes(const void *p, size_t n, uint64_t h);
/* The same hash of a buffer's payload, read back from the device in
 * pieces (for checking that a kernel left its input alone without keeping
 * a host copy). Synchronizes. */
cudaError_t cml_dbuf_hash(const cml_dbuf *b, uint64_t *hash);

/* Launch a fill of n 32-bit words at d with pattern (asynchronous). */
cudaError_t cml_fill32_async(void *d, size_t n, uint32_t pattern, cudaStream_t stream);

/* The bits of a float, and back (for poison and guard patterns). */
uint32_t cml_float_bits(float f);
float cml_bits_float(uint32_t u);

#ifdef __cplusplus
}
#endif
#endif
