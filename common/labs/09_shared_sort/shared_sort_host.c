/* The host side of lab 09 that needs no kernel file (see shared_sort_host.h). */
#include "shared_sort_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_rng.h>

#define T SHARED_SORT_THREADS
#define K SHARED_SORT_PER_THREAD
#define TILE SHARED_SORT_TILE

const char *ss_keys_name(ss_keys kind)
{
    static const char *names[SS_NUM_KINDS] = {"full-range keys", "keys 0..15", "all keys equal",
                                              "sorted keys", "reverse-sorted keys"};
    return (unsigned)kind < SS_NUM_KINDS ? names[kind] : "keys";
}

void ss_make_keys(uint32_t *k, size_t n, ss_keys kind, uint64_t seed, uint64_t stream)
{
    cml_rng rng;
    cml_rng_init(&rng, seed, stream);
    uint32_t one = (uint32_t)(cml_rng_next(&rng) % SS_POISON), key = 0;
    for (size_t i = 0; i < n; ++i) {
        uint64_t r = cml_rng_next(&rng);
        switch (kind) {
        case SS_FEW_KEYS: k[i] = (uint32_t)(r >> 60); break;
        case SS_ALL_EQUAL: k[i] = one; break;
        case SS_SORTED:    /* steps of 0..2: runs of equal keys */
        case SS_REVERSED: key += (uint32_t)(r % 3); k[i] = key; break;
        default: k[i] = (uint32_t)((r >> 32) % SS_POISON); break;
        }
    }
    if (kind == SS_REVERSED)
        for (size_t i = 0; i < n / 2; ++i) {
            uint32_t s = k[i];
            k[i] = k[n - 1 - i];
            k[n - 1 - i] = s;
        }
}

static int by_value(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* The end of the segment of contiguous width `w` that place i is in. */
static size_t seg_end(size_t i, size_t n, size_t w, size_t *lo)
{
    *lo = i - i % w;
    return n - *lo < w ? n : *lo + w;
}

void ss_sort_runs(uint32_t *k, size_t n, size_t width)
{
    size_t lo;
    for (size_t i = 0; i < n; i = seg_end(i, n, width, &lo))
        qsort(k + i, seg_end(i, n, width, &lo) - i, sizeof *k, by_value);
}

/* Step 3's merged width: 2 * width, or all of n (no overflow for a huge width). */
static size_t pair_width(size_t n, size_t width)
{
    return width >= n ? n : 2 * width;
}

/* The places of list t of the tile at base, below n: idx[0..count). */
static size_t list_places(size_t base, size_t t, size_t n, size_t *idx)
{
    size_t count = 0;
    for (size_t i = 0; i < K && base + i * T + t < n; ++i)
        idx[count++] = base + i * T + t;
    return count;
}

void ss_expect(const uint32_t *in, size_t n, int step, size_t width, uint32_t *want)
{
    memcpy(want, in, n * sizeof *want);
    if (step == 1) {
        size_t idx[K];
        uint32_t v[K];
        for (size_t base = 0; base < n; base += TILE)
            for (size_t t = 0; t < T; ++t) {
                size_t c = list_places(base, t, n, idx);
                for (size_t i = 0; i < c; ++i)
                    v[i] = in[idx[i]];
                qsort(v, c, sizeof *v, by_value);
                for (size_t i = 0; i < c; ++i)
                    want[idx[i]] = v[i];
            }
        return;
    }
    size_t w = step == 2 ? TILE : step == SS_MERGE_STEP ? pair_width(n, width) : n;
    ss_sort_runs(want, n, w ? w : 1);
}

/* Counts of the two sorted arrays a (in's keys) and b (out's): the smallest
 * key whose counts differ; 0 when they hold the same keys. */
static int first_count_difference(const uint32_t *a, const uint32_t *b, size_t m, ss_check *chk)
{
    size_t i = 0, j = 0;
    while (i < m || j < m) {
        uint32_t key = i < m && (j >= m || a[i] <= b[j]) ? a[i] : b[j];
        size_t ca = 0, cb = 0;
        while (i < m && a[i] == key)
            ++ca, ++i;
        while (j < m && b[j] == key)
            ++cb, ++j;
        if (ca != cb) {
            chk->key = key;
            chk->count_in = ca;
            chk->count_out = cb;
            return 1;
        }
    }
    return 0;
}

/* Diagnoses the segment of chk->first: lost or duplicated, or out of order. */
static void diagnose(const uint32_t *in, const uint32_t *out, ss_check *chk)
{
    size_t n = chk->n, f = chk->first, m = 0, idx_list[K];
    const size_t *idx = NULL;
    if (chk->step == 1) {
        size_t base = f - f % TILE;
        chk->tile = f / TILE;
        chk->list = (f - base) % T;
        m = list_places(base, chk->list, n, idx_list);
        idx = idx_list;
        chk->seg_lo = idx[0];
        chk->seg_hi = idx[m - 1] + 1;
    } else {
        size_t w = chk->step == 2 ? TILE : chk->step == SS_MERGE_STEP ? pair_width(n, chk->width) : n;
        chk->seg_hi = seg_end(f, n, w ? w : 1, &chk->seg_lo);
        chk->tile = f / TILE;
        m = chk->seg_hi - chk->seg_lo;
    }
    if (chk->got == SS_POISON) {
        chk->fault = SS_UNWRITTEN;
        return;
    }
    uint32_t *a = malloc(m * sizeof *a), *b = malloc(m * sizeof *b);
    if (!a || !b) {
        free(a);
        free(b);
        chk->fault = SS_LOST_OR_DUPLICATED; /* no room to tell: the plainer of the two */
        chk->key = chk->expected;
        return;
    }
    for (size_t i = 0; i < m; ++i) {
        size_t at = idx ? idx[i] : chk->seg_lo + i;
        a[i] = in[at];
        b[i] = out[at];
    }
    qsort(a, m, sizeof *a, by_value);
    qsort(b, m, sizeof *b, by_value);
    if (first_count_difference(a, b, m, chk)) {
        chk->fault = SS_LOST_OR_DUPLICATED;
    } else {
        chk->fault = SS_OUT_OF_ORDER;
        for (size_t i = 1; i < m; ++i) {
            size_t at = idx ? idx[i] : chk->seg_lo + i, before = idx ? idx[i - 1] : at - 1;
            if (out[at] < out[before]) {
                chk->order_at = at;
                chk->order_key = out[at];
                chk->order_before = out[before];
                break;
            }
        }
    }
    free(a);
    free(b);
}

/* Step 4: out is in's whole tiles sorted, then the poison where the last,
 * partial tile's keys belong (a tile count rounded down: that tile never
 * sorted, never merged); 0 when it is not, or when there is no partial
 * tile. */
static size_t partial_tile_lost(const uint32_t *in, const uint32_t *out, size_t n)
{
    size_t m = n - n % TILE;
    if (m == 0 || m == n)
        return 0;
    uint32_t *a = malloc(m * sizeof *a);
    if (!a)
        return 0;
    memcpy(a, in, m * sizeof *a);
    qsort(a, m, sizeof *a, by_value);
    size_t i = memcmp(a, out, m * sizeof *a) == 0 ? m : 0;
    free(a);
    for (; i > 0 && i < n; ++i)
        if (out[i] != SS_POISON)
            return 0;
    return i ? n - m : 0;
}

size_t ss_compare(const uint32_t *in, const uint32_t *out, size_t n, int step, size_t width, ss_check *chk)
{
    memset(chk, 0, sizeof *chk);
    chk->step = step;
    chk->n = n;
    chk->width = width;
    uint32_t *want = malloc((n ? n : 1) * sizeof *want);
    if (!want) {
        chk->wrong = n ? n : 1;
        chk->fault = SS_LOST_OR_DUPLICATED;
        return chk->wrong;
    }
    ss_expect(in, n, step, width, want);
    for (size_t i = 0; i < n; ++i) {
        if (out[i] == want[i])
            continue;
        if (chk->wrong++ == 0) {
            chk->first = i;
            chk->expected = want[i];
            chk->got = out[i];
        }
        chk->unwritten += out[i] == SS_POISON;
    }
    free(want);
    if (chk->wrong)
        diagnose(in, out, chk);
    if (chk->wrong && step == 4)
        chk->partial_lost = partial_tile_lost(in, out, n);
    return chk->wrong;
}

static const char *likely_cause(int step, ss_fault f)
{
    static const char *causes[4][3] = {
        {"the last partial tile's lists are not written back (write every place below n), or the grid rounds "
         "the tile count down",
         "the insertion sort overwrites a key before moving it up (hold the key being placed in a register)",
         "a list only partly sorted, or list t is not the keys base + i * 128 + t (a column of the tile)"},
        {"the merged tile is not written back for every place below n, or fewer rounds than the tile's 1024 "
         "keys",
         "equal keys at the heads of two lists: only the list that won may advance (compare the key and the "
         "list's index, not the key alone)",
         "a round read warp_min[] before every warp posted, or a warp overwrote it while others still read it "
         "(a barrier missing), or the lists were not sorted before the merge"},
        {"a thread stops before its last output, or the grid has too few threads for its n / 8 outputs",
         "the split is not where the merge path crosses the diagonal: search i only in [max(0, d - nb), "
         "min(d, na)] (never past either run) with the merge's own rule for equal keys (a[i] <= b[j])",
         "the split's diagonal is off, or a pair's second run does not start where its first ends"},
        {"the passes end in scratch, not out (count the passes first and sort the tiles into the buffer that "
         "makes the last pass end in out)",
         "step 2's merge or step 3's split loses equal keys (their tests say which)",
         "the last partial tile left unsorted (round the tile count up), or a pass width that does not start "
         "at the tile's 1024 keys and double"}};
    int s = step >= 1 && step <= 4 ? step - 1 : 3;
    return causes[s][f == SS_UNWRITTEN ? 0 : f == SS_LOST_OR_DUPLICATED ? 1 : 2];
}

char *ss_describe(const ss_check *chk, char *buf, size_t len)
{
    char where[160], what[200];
    switch (chk->step) {
    case 1:
        snprintf(where, sizeof where, "list %zu of tile %zu (out[%zu + i * %d + %zu])", chk->list, chk->tile,
                 chk->tile * TILE, T, chk->list);
        break;
    case 2: snprintf(where, sizeof where, "tile %zu (out[%zu..%zu))", chk->tile, chk->seg_lo, chk->seg_hi); break;
    case SS_MERGE_STEP:
        snprintf(where, sizeof where, "the pair of runs of width %zu merged into out[%zu..%zu)", chk->width,
                 chk->seg_lo, chk->seg_hi);
        break;
    default: snprintf(where, sizeof where, "out[0..%zu)", chk->n); break;
    }
    switch (chk->fault) {
    case SS_UNWRITTEN: snprintf(what, sizeof what, "out[%zu] was never written (still the poison)", chk->first); break;
    case SS_LOST_OR_DUPLICATED:
        snprintf(what, sizeof what, "a key was lost or duplicated: key %u is %zu times in the input there, %zu times in out",
                 chk->key, chk->count_in, chk->count_out);
        break;
    default:
        snprintf(what, sizeof what, "every key is there but out of order: out[%zu] = %u comes after %u",
                 chk->order_at, chk->order_key, chk->order_before);
        break;
    }
    char lost[200];
    snprintf(lost, sizeof lost,
             "the last, partial tile's %zu keys never reached out (the rest is sorted): its tile was never sorted "
             "(round the tile count up: (n + 1023) / 1024 blocks)",
             chk->partial_lost);
    const char *cause = chk->unwritten == chk->n && chk->n > 0
                            ? "nothing was written: the step is not done yet, or its kernel never ran"
                        : chk->partial_lost ? lost
                                            : likely_cause(chk->step, chk->fault);
    snprintf(buf, len,
             "%zu of %zu keys of out are wrong (%zu never written); the first, out[%zu], expected %u, got %u. In %s, "
             "%s. Likely cause: %s",
             chk->wrong, chk->n, chk->unwritten, chk->first, chk->expected, chk->got, where, what, cause);
    return buf;
}

cudaError_t ss_buffers_alloc(ss_buffers *b, size_t n, size_t width, const uint32_t *host_in)
{
    memset(b, 0, sizeof *b);
    b->n = n;
    b->width = width;
    cudaError_t err = cml_dbuf_alloc(&b->in, n * sizeof(uint32_t), SS_IN_GUARD_BITS);
    if (err == cudaSuccess)
        err = cml_dbuf_alloc(&b->out, n * sizeof(uint32_t), SS_OUT_GUARD_BITS);
    if (err == cudaSuccess)
        err = cml_dbuf_alloc(&b->scratch, n * sizeof(uint32_t), SS_SCRATCH_GUARD_BITS);
    if (err == cudaSuccess && host_in)
        err = cudaMemcpy(b->in.ptr, host_in, n * sizeof(uint32_t), cudaMemcpyHostToDevice);
    return err;
}

void ss_buffers_free(ss_buffers *b)
{
    cml_dbuf_free(&b->in);
    cml_dbuf_free(&b->out);
    cml_dbuf_free(&b->scratch);
}
