/* test_hn_fill.c: the kit's fill kernel (hn_fill.cu) makes, on the device,
 * the very words the host's generator makes one after the other (hn_fill.h),
 * and nothing past them: a timed case's data (harness.h, hn_fill_host) and
 * each timed repeat's fresh words (hn_fresh) are the same on a GPU as they
 * were when the host made them.
 *
 * Built twice: for the GPU (CTest grader.harness_fill, skipped only where
 * there is no CUDA device or driver; any other CUDA error fails) and on the
 * CPU path (grader.harness_fill.cpu, the same kernel emulated). Exit 0 when
 * every case matches, 1 when one does not, 77 without a device. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "hn_fill.h"

cudaError_t cml_hn_fill_device(void *dst, uint64_t n, uint32_t fill, uint64_t s);
cudaError_t cml_hn_fill_host(uint32_t *w, uint64_t n, uint32_t fill, uint64_t s);

#define GUARD 64u /* words past the end that must stay as they were */

/* The host's generator, one word after the other (harness.h's hn_word). */
static void host_words(uint32_t *w, uint64_t n, uint32_t fill, uint64_t s)
{
    for (uint64_t i = 0; i < n; ++i) {
        s += HN_GOLDEN;
        w[i] = hn_word_of(fill, hn_mix(s));
    }
}

static int failed(const char *what, cudaError_t err)
{
    fprintf(stderr, "test_hn_fill: %s: %s (%s)\n", what, cudaGetErrorName(err), cudaGetErrorString(err));
    return 1;
}

/* n words of the stream at state s, made on the device after `skip` words
 * made there first (the repeats' chunks: state s + skip * HN_GOLDEN), into a
 * poisoned buffer: every word right, the guard untouched. */
static int check(uint64_t skip, uint64_t n, uint32_t fill, uint64_t s)
{
    uint64_t total = skip + n;
    size_t bytes = (size_t)(total + GUARD) * 4;
    uint32_t *want = malloc(bytes), *got = malloc(bytes);
    void *dev = NULL;
    if (!want || !got) {
        fprintf(stderr, "test_hn_fill: no host memory for %llu words\n", (unsigned long long)total);
        free(want);
        free(got);
        return 1;
    }
    host_words(want, total, fill, s);
    for (uint64_t i = total; i < total + GUARD; ++i)
        want[i] = 0xA5A5A5A5u;
    int bad = 0;
    cudaError_t err = cudaMalloc(&dev, bytes);
    if (err == cudaSuccess)
        err = cudaMemset(dev, 0xA5, bytes);
    if (err == cudaSuccess && skip)
        err = cml_hn_fill_device(dev, skip, fill, s);
    if (err == cudaSuccess)
        err = cml_hn_fill_device((uint32_t *)dev + skip, n, fill, s + skip * HN_GOLDEN);
    if (err == cudaSuccess)
        err = cudaDeviceSynchronize();
    if (err == cudaSuccess)
        err = cudaMemcpy(got, dev, bytes, cudaMemcpyDeviceToHost);
    if (err != cudaSuccess) {
        bad = failed("a CUDA call failed", err);
    } else {
        for (uint64_t i = 0; i < total + GUARD; ++i) {
            if (got[i] != want[i]) {
                fprintf(stderr, "test_hn_fill: fill %u, seed %#llx, %llu + %llu words: word %llu is %#010x, "
                        "the host's generator makes %#010x%s\n", fill, (unsigned long long)s,
                        (unsigned long long)skip, (unsigned long long)n, (unsigned long long)i, got[i], want[i],
                        i >= total ? " (past the end: it must stay untouched)" : "");
                bad = 1;
                break;
            }
        }
    }
    cudaFree(dev);
    free(want);
    free(got);
    return bad;
}

/* A timed case's data made on the device into host memory (cml_hn_fill_host). */
static int check_host(uint64_t n, uint32_t fill, uint64_t s)
{
    uint32_t *want = malloc((size_t)(n + GUARD) * 4), *got = malloc((size_t)(n + GUARD) * 4);
    int bad = 0;
    if (!want || !got) {
        fprintf(stderr, "test_hn_fill: no host memory for %llu words\n", (unsigned long long)n);
        bad = 1;
    } else {
        host_words(want, n, fill, s);
        memset(want + n, 0xA5, GUARD * 4);
        memset(got, 0xA5, (size_t)(n + GUARD) * 4);
        cudaError_t err = cml_hn_fill_host(got, n, fill, s);
        if (err != cudaSuccess)
            bad = failed("cml_hn_fill_host", err);
        for (uint64_t i = 0; !bad && i < n + GUARD; ++i)
            if (got[i] != want[i]) {
                fprintf(stderr, "test_hn_fill: a case's data, fill %u, seed %#llx, %llu words: word %llu is %#010x, "
                        "the host's generator makes %#010x\n", fill, (unsigned long long)s, (unsigned long long)n,
                        (unsigned long long)i, got[i], want[i]);
                bad = 1;
            }
    }
    free(want);
    free(got);
    return bad;
}

int main(void)
{
    int ndev = 0;
    cudaError_t err = cudaGetDeviceCount(&ndev);
    if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver || (err == cudaSuccess && ndev == 0)) {
        printf("test_hn_fill: skipped: no CUDA device (%s)\n", err == cudaSuccess ? "none found" : cudaGetErrorName(err));
        return 77;
    }
    if (err != cudaSuccess)
        return failed("cudaGetDeviceCount", err);
    /* sizes below, at and across a block (256 threads) and past one grid of 1024 blocks (the grid-stride loop) */
    static const uint64_t sizes[] = {1, 255, 256, 257, 70001, 262144 + 1003,
#ifndef CML_CPU_BACKEND
                                     3 * 262144 + 17, 8388608 + 5 /* an eighth of 256 MiB */
#endif
    };
    static const uint64_t seeds[] = {0, 0x5DEECE66Dull, 0xFFFFFFFFFFFFFFF0ull};
    int bad = 0, cases = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k)
        for (uint32_t fill = 1; fill <= 2; ++fill) {
            uint64_t seed = seeds[(k + fill) % 3];
            bad |= check(0, sizes[k], fill, seed);
            bad |= check(sizes[k] / 3 + 1, sizes[k], fill, seed ^ 0x9E37ull); /* a later chunk of the stream */
            bad |= check_host(sizes[k], fill, seed + k);
            cases += 3;
        }
    /* no words: nothing written, no launch */
    bad |= check(0, 0, 1, 7);
    printf("test_hn_fill: %d cases, %s\n", cases + 1, bad ? "FAILED" : "every word the host's generator makes");
    return bad;
}
