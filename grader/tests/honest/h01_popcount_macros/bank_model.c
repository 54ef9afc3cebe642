/* Lab 01 bank model with lane masks: the lanes of a phase still to be
 * served are bits of `todo`; each round takes the lowest such lane's word,
 * serves every lane touching that word at once (a broadcast) and charges
 * one wavefront to the word's bank. __builtin_popcount counts what is left. */
#include "banks.h"

#include <stddef.h>

int bank_of(uint32_t byte_address)
{
    return (int)(byte_address % (BANKS_COUNT * BANKS_WORD_BYTES)) / BANKS_WORD_BYTES;
}

static int one_phase(const uint32_t *addr, int lanes, int words)
{
    int load[BANKS_COUNT] = {0};
    int most = 1;
    /* (lane, word index) pairs still unserved, one mask per word index */
    uint32_t todo[4];
    for (int j = 0; j < words; ++j)
        todo[j] = lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1u);
    for (int j = 0; j < words; ++j) {
        while (__builtin_popcount(todo[j]) > 0) {
            int lane = __builtin_ctz(todo[j]);
            uint32_t word = addr[lane] / BANKS_WORD_BYTES + (uint32_t)j;
            /* every (lane, index) on this word is served by this read */
            for (int jj = 0; jj < words; ++jj)
                for (int l = 0; l < lanes; ++l)
                    if ((todo[jj] >> l & 1u) && addr[l] / BANKS_WORD_BYTES + (uint32_t)jj == word)
                        todo[jj] &= ~(1u << l);
            int b = bank_of(word * BANKS_WORD_BYTES);
            if (++load[b] > most)
                most = load[b];
        }
    }
    return most;
}

int conflict_degree(const uint32_t byte_address[BANKS_WARP], int access_bytes)
{
    if (byte_address == NULL)
        return -1;
    if (access_bytes != 4 && access_bytes != 8 && access_bytes != 16)
        return -1;
    for (int i = 0; i < BANKS_WARP; ++i)
        if (byte_address[i] & (uint32_t)(access_bytes - 1))
            return -1;
    const int words = access_bytes / 4, lanes = BANKS_WARP / words;
    int sum = 0;
    for (int phase = 0; phase < words; ++phase)
        sum += one_phase(byte_address + phase * lanes, lanes, words);
    return sum;
}
