/* Host tests of lab 09's known-good side: the keys, what each step must
 * make of them, and the check's diagnosis (never written, lost or
 * duplicated, out of order). No GPU needed; these run in CI. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shared_sort_host.h"

enum { N = 3001 };

Test(keys, every_kind_stays_below_the_poison_and_few_keys_repeat)
{
    static uint32_t k[N];
    for (int kind = 0; kind < SS_NUM_KINDS; ++kind) {
        ss_make_keys(k, N, (ss_keys)kind, 20261122, 9);
        for (int i = 0; i < N; ++i)
            cr_assert(k[i] != SS_POISON, "%s: k[%d] is the poison", ss_keys_name((ss_keys)kind), i);
    }
    ss_make_keys(k, N, SS_FEW_KEYS, 20261122, 9);
    int seen[16] = {0};
    for (int i = 0; i < N; ++i) {
        cr_assert(k[i] < 16);
        ++seen[k[i]];
    }
    for (int v = 0; v < 16; ++v)
        cr_expect(seen[v] > 100, "key %d only %d times", v, seen[v]);
}

Test(expect, step1_sorts_each_list_of_a_tile_in_its_own_places)
{
    static uint32_t k[N], want[N];
    ss_make_keys(k, N, SS_FULL_RANGE, 20261122, 10);
    ss_expect(k, N, 1, 0, want);
    for (size_t base = 0; base < N; base += SHARED_SORT_TILE)
        for (size_t t = 0; t < SHARED_SORT_THREADS; ++t)
            for (size_t i = 1; i < SHARED_SORT_PER_THREAD; ++i) {
                size_t a = base + (i - 1) * SHARED_SORT_THREADS + t, b = a + SHARED_SORT_THREADS;
                if (b < N)
                    cr_assert(want[a] <= want[b], "list %zu of tile %zu not sorted at %zu", t, base, b);
            }
    cr_assert(memcmp(k, want, sizeof k) != 0, "step 1's answer is its input: the check could not fail");
}

Test(check, a_dropped_key_is_lost_or_duplicated_and_a_swap_is_out_of_order)
{
    static uint32_t k[N], out[N];
    char msg[1000];
    ss_check chk;
    ss_make_keys(k, N, SS_FEW_KEYS, 20261122, 11);
    for (int step = 1; step <= 4; ++step) {
        ss_expect(k, N, step, 700, out);
        cr_assert(ss_compare(k, out, N, step, 700, &chk) == 0, "step %d: the right answer is wrong", step);
        size_t at = 2000; /* tile 1; step 3's pair [1400, 2800) */
        uint32_t keep = out[at];
        out[at] = out[at] + 1 < 16 ? out[at] + 1 : out[at] - 1; /* one key replaced by another */
        cr_assert(ss_compare(k, out, N, step, 700, &chk) > 0);
        cr_expect(chk.fault == SS_LOST_OR_DUPLICATED && chk.first == at, "step %d: %s", step,
                  ss_describe(&chk, msg, sizeof msg));
        out[at] = SS_POISON;
        ss_compare(k, out, N, step, 700, &chk);
        cr_expect(chk.fault == SS_UNWRITTEN && chk.unwritten == 1, "step %d: %s", step,
                  ss_describe(&chk, msg, sizeof msg));
        out[at] = keep;
    }
    /* two different keys of one tile swapped: the same keys, out of order */
    ss_expect(k, N, 2, 0, out);
    size_t a = 1100, b = 1900;
    cr_assert(out[a] < out[b]);
    uint32_t s = out[a];
    out[a] = out[b];
    out[b] = s;
    ss_compare(k, out, N, 2, 0, &chk);
    ss_describe(&chk, msg, sizeof msg);
    cr_expect(chk.fault == SS_OUT_OF_ORDER && chk.tile == 1, "%s", msg);
    cr_expect(strstr(msg, "out of order") != NULL, "%s", msg);
}

Test(check, a_merge_of_unsorted_runs_is_judged_against_the_merged_pair)
{
    static uint32_t k[N], want[N];
    ss_make_keys(k, N, SS_FULL_RANGE, 20261122, 12);
    ss_sort_runs(k, N, 7);
    ss_expect(k, N, 3, 7, want);
    for (size_t p = 0; p < N; p += 14)
        for (size_t i = p + 1; i < p + 14 && i < N; ++i)
            cr_assert(want[i - 1] <= want[i], "pair at %zu not merged at %zu", p, i);
    cr_assert(memcmp(k, want, sizeof k) != 0, "runs of 7 already merged: the case could not fail");
}

/* Step 4 with the tile count rounded down: the whole tiles sorted, the
 * poison where the last, partial tile's keys belong. N = 3001 = 2 tiles
 * and 953 keys. */
Test(check, a_last_partial_tile_that_never_reached_out_is_named)
{
    static uint32_t k[N], out[N];
    char msg[1000];
    ss_check chk;
    ss_make_keys(k, N, SS_FEW_KEYS, 20261122, 13);
    memcpy(out, k, sizeof out);
    ss_sort_runs(out, 2 * SHARED_SORT_TILE, 2 * SHARED_SORT_TILE);
    for (size_t i = 2 * SHARED_SORT_TILE; i < N; ++i)
        out[i] = SS_POISON;
    cr_assert(ss_compare(k, out, N, 4, 0, &chk) > 0);
    ss_describe(&chk, msg, sizeof msg);
    cr_expect(chk.partial_lost == N - 2 * SHARED_SORT_TILE, "%s", msg);
    cr_expect(strstr(msg, "Likely cause: the last, partial tile's 953 keys never reached out") != NULL, "%s", msg);
    /* one more key wrong among the whole tiles: not that mistake alone, not named */
    out[5] = out[5] + 1 < 16 ? out[5] + 1 : out[5] - 1;
    ss_compare(k, out, N, 4, 0, &chk);
    ss_describe(&chk, msg, sizeof msg);
    cr_expect(chk.partial_lost == 0 && strstr(msg, "partial tile's") == NULL, "%s", msg);
}
