/* Lab 01 bank model: each phase's words are copied out, sorted with qsort
 * and walked once; equal neighbours are one word (broadcast), and a bank's
 * count grows by one for every new word in it. */
#include "banks.h"

#include <stdlib.h>
#include <string.h>

int bank_of(uint32_t byte_address)
{
    uint32_t word = byte_address >> 2;   /* 4-byte words */
    return (int)(word & (BANKS_COUNT - 1));
}

static int by_value(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Wavefronts of the lanes lo..hi-1, each touching `per_lane` words. */
static int phase_cost(const uint32_t *addr, int lo, int hi, int per_lane)
{
    size_t n = (size_t)(hi - lo) * (size_t)per_lane;
    uint32_t *words = malloc(n * sizeof *words);
    int per_bank[BANKS_COUNT];
    int worst = 1;
    size_t k = 0;
    if (words == NULL)
        return -1;
    for (int lane = lo; lane < hi; ++lane)
        for (int j = 0; j < per_lane; ++j)
            words[k++] = addr[lane] / BANKS_WORD_BYTES + (uint32_t)j;
    qsort(words, n, sizeof *words, by_value);
    memset(per_bank, 0, sizeof per_bank);
    for (k = 0; k < n; ++k) {
        if (k > 0 && words[k] == words[k - 1])
            continue;   /* the same word: one read serves every lane on it */
        int b = bank_of(words[k] * BANKS_WORD_BYTES);
        if (++per_bank[b] > worst)
            worst = per_bank[b];
    }
    free(words);
    return worst;
}

int conflict_degree(const uint32_t byte_address[BANKS_WARP], int access_bytes)
{
    uint32_t addr[BANKS_WARP];
    int lanes, total = 0;
    if (!byte_address)
        return -1;
    switch (access_bytes) {
    case 4: lanes = 32; break;
    case 8: lanes = 16; break;
    case 16: lanes = 8; break;
    default: return -1;
    }
    memcpy(addr, byte_address, sizeof addr);
    for (int i = 0; i < BANKS_WARP; ++i)
        if (addr[i] % (uint32_t)access_bytes)
            return -1;
    for (int lo = 0; lo < BANKS_WARP; lo += lanes) {
        int c = phase_cost(addr, lo, lo + lanes, access_bytes / BANKS_WORD_BYTES);
        if (c < 0)
            return -1;
        total += c;
    }
    return total;
}
