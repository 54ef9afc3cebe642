/* The CPU path's own bank model (CML_CPU_CHECK=banks): the wavefronts of
 * one warp's shared-memory access on 32 banks of 4-byte words, the model
 * lab 01 teaches (and whose reference, solutions/01_shared_banks/
 * bank_model.c, the test cml_cpu_bank_model holds to this one on every
 * pattern it tries). The runtime owns it: it reads no lab's files.
 *
 * A 4-byte access is one phase of 32 lanes, an 8-byte access two phases of
 * 16 and a 16-byte access four of 8 (a phase moves at most 128 bytes). In a
 * phase, each bank serves its distinct words one per wavefront, and lanes
 * on the same word share it (broadcast): the phase costs as many
 * wavefronts as its busiest bank has distinct words. The access costs the
 * sum over its phases; -1 for what no warp could do (no addresses, another
 * width, a misaligned address). */
#include "cml_cpu_internal.h"

#include <stddef.h>

enum { WARP = 32, BANKS = 32, WORD = 4 };

/* The distinct words of one phase, sorted: insertion into a sorted array. */
static int distinct_words(const uint32_t *addr, int first, int lanes, int words, uint32_t *out)
{
    int n = 0;
    for (int lane = first; lane < first + lanes; ++lane) {
        for (int k = 0; k < words; ++k) {
            uint32_t w = addr[lane] / WORD + (uint32_t)k;
            int at = n;
            while (at > 0 && out[at - 1] > w)
                --at;
            if (at > 0 && out[at - 1] == w)
                continue;
            for (int j = n; j > at; --j)
                out[j] = out[j - 1];
            out[at] = w;
            ++n;
        }
    }
    return n;
}

/* Whether a phase is conflict-free: no bank holds two different words of
 * it (one wavefront). The common case, decided without sorting. */
static int one_wavefront(const uint32_t *addr, int first, int lanes, int words)
{
    uint32_t used = 0, word_of[BANKS];
    for (int lane = first; lane < first + lanes; ++lane)
        for (int k = 0; k < words; ++k) {
            uint32_t w = addr[lane] / WORD + (uint32_t)k, b = w % BANKS;
            if (!(used >> b & 1u)) {
                used |= 1u << b;
                word_of[b] = w;
            } else if (word_of[b] != w) {
                return 0;
            }
        }
    return 1;
}

int cml_cpu_conflict_degree(const uint32_t byte_address[32], int access_bytes)
{
    if (byte_address == NULL || (access_bytes != 4 && access_bytes != 8 && access_bytes != 16))
        return -1;
    for (int lane = 0; lane < WARP; ++lane)
        if (byte_address[lane] % (uint32_t)access_bytes)
            return -1;
    int words = access_bytes / WORD, lanes = WARP / words, total = 0;
    for (int first = 0; first < WARP; first += lanes) {
        if (one_wavefront(byte_address, first, lanes, words)) {
            total += 1;
            continue;
        }
        uint32_t w[WARP * 4];
        int n = distinct_words(byte_address, first, lanes, words, w), per_bank[BANKS] = {0}, worst = 1;
        for (int i = 0; i < n; ++i) {
            int b = (int)(w[i] % BANKS);
            if (++per_bank[b] > worst)
                worst = per_bank[b];
        }
        total += worst;
    }
    return total;
}
