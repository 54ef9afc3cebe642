/* Lab 01 bank model: each bank keeps a growable list (realloc) of the
 * distinct words the phase touched in it; the phase costs its longest
 * list. */
#include "banks.h"

#include <stdlib.h>

struct word_list {
    uint32_t *words;
    int count, room;
};

int bank_of(uint32_t byte_address)
{
    return (int)(byte_address / 4u % 32u);
}

static int add_word(struct word_list *l, uint32_t w)
{
    for (int i = 0; i < l->count; i++)
        if (l->words[i] == w)
            return 0;
    if (l->count == l->room) {
        int room = l->room ? 2 * l->room : 4;
        uint32_t *grown = realloc(l->words, (size_t)room * sizeof *grown);
        if (!grown)
            return -1;
        l->words = grown;
        l->room = room;
    }
    l->words[l->count++] = w;
    return 0;
}

static int cost_of_phase(const uint32_t *addr, int lanes, int words)
{
    struct word_list banks[BANKS_COUNT] = {{0}};
    int worst = 1, failed = 0;
    for (int lane = 0; lane < lanes && !failed; lane++)
        for (int j = 0; j < words && !failed; j++) {
            uint32_t w = addr[lane] / 4u + (uint32_t)j;
            failed = add_word(&banks[bank_of(w * 4u)], w) != 0;
        }
    for (int b = 0; b < BANKS_COUNT; b++) {
        if (banks[b].count > worst)
            worst = banks[b].count;
        free(banks[b].words);
    }
    return failed ? -1 : worst;
}

int conflict_degree(const uint32_t byte_address[BANKS_WARP], int access_bytes)
{
    if (!byte_address || !(access_bytes == 4 || access_bytes == 8 || access_bytes == 16))
        return -1;
    for (int lane = 0; lane < BANKS_WARP; lane++)
        if (byte_address[lane] % (uint32_t)access_bytes)
            return -1;
    int words = access_bytes / 4, lanes = BANKS_WARP / words, total = 0;
    for (int first = 0; first < BANKS_WARP; first += lanes) {
        int c = cost_of_phase(byte_address + first, lanes, words);
        if (c < 0)
            return -1;
        total += c;
    }
    return total;
}
