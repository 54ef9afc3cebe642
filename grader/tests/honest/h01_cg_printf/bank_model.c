/* Lab 01 bank model, bank by bank: for each bank, count the words of the
 * phase that fall in it and that no earlier (lane, word) of the phase
 * touched already. */
#include "banks.h"

#include <stdbool.h>
#include <stddef.h>

int bank_of(uint32_t byte_address)
{
    return (int)((byte_address >> 2) & 31u);
}

static uint32_t word_at(const uint32_t *addr, int lane, int j)
{
    return addr[lane] / BANKS_WORD_BYTES + (uint32_t)j;
}

static bool seen_before(const uint32_t *addr, int lo, int lane, int j, int words)
{
    uint32_t w = word_at(addr, lane, j);
    for (int l = lo; l <= lane; ++l)
        for (int jj = 0; jj < words; ++jj) {
            if (l == lane && jj == j)
                return false;
            if (word_at(addr, l, jj) == w)
                return true;
        }
    return false;
}

static int phase(const uint32_t *addr, int lo, int lanes, int words)
{
    int best = 1;
    for (int bank = 0; bank < BANKS_COUNT; ++bank) {
        int n = 0;
        for (int lane = lo; lane < lo + lanes; ++lane)
            for (int j = 0; j < words; ++j)
                if (bank_of(word_at(addr, lane, j) * BANKS_WORD_BYTES) == bank &&
                    !seen_before(addr, lo, lane, j, words))
                    ++n;
        if (n > best)
            best = n;
    }
    return best;
}

int conflict_degree(const uint32_t byte_address[BANKS_WARP], int access_bytes)
{
    int words;
    if (byte_address == NULL)
        return -1;
    if (access_bytes == 4)
        words = 1;
    else if (access_bytes == 8)
        words = 2;
    else if (access_bytes == 16)
        words = 4;
    else
        return -1;
    for (int lane = 0; lane < BANKS_WARP; ++lane)
        if (byte_address[lane] % (uint32_t)access_bytes != 0)
            return -1;
    int lanes = BANKS_WARP / words, cost = 0;
    for (int lo = 0; lo < BANKS_WARP; lo += lanes)
        cost += phase(byte_address, lo, lanes, words);
    return cost;
}
