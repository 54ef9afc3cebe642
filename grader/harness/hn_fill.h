/* hn_fill.h: the timing data's generator (harness.h), one definition for
 * the harness's host code and for the kit's fill kernel (hn_mark.cu).
 *
 * splitmix64: state s advances by HN_GOLDEN per word and the word is a mix
 * of the new state, so word i of a stream that starts at state s is
 * hn_mix(s + (i + 1) * HN_GOLDEN): the host makes it one word after the
 * other (hn_next), the device all at once, the same words. checker.py has
 * the same generator. */
#ifndef CML_HN_FILL_H
#define CML_HN_FILL_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define HN_HD __host__ __device__
#else
#define HN_HD
#endif

#define HN_GOLDEN 0x9E3779B97F4A7C15ull

static inline HN_HD uint64_t hn_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A word of the timing data from one draw r: fill 1 an int in [-1024, 3072),
 * fill 2 a float in [-1, 1) (its bits). */
static inline HN_HD uint32_t hn_word_of(uint32_t fill, uint64_t r)
{
    if (fill == 1)
        return (uint32_t)((int32_t)(r & 4095) - 1024);
    float f = (float)((int32_t)(r >> 40) - (1 << 23)) / (float)(1 << 23);
    uint32_t w;
    memcpy(&w, &f, 4);
    return w;
}

#endif
