/* Lab 01's spec (cml_spec.h): the cases its tests and the grader's kit-only
 * check run, and when an output is right. common/labs/01_shared_banks/
 * harness.c says what each case kind runs and what it writes:
 *
 *   kind 0  bank_of (step 1): data = byte addresses; out = one int each.
 *   kind 1  conflict_degree (steps 2, 3): a = patterns; data = records of
 *           access_bytes, a NULL flag and 32 byte addresses; out = one int
 *           per pattern.
 *   kind 2  the probe (step 4): a = rounds, data = the 32 lane words; out =
 *           512 sums (u32), then 16 start and 16 stop clocks (i64).
 *   kind 3  the probe with a round count it must refuse; out = its error.
 *   kind 4  C = A*B^T (steps 5-7): a = batch, data = A then B; out = C
 *           with GUARD poisoned words either side.
 *   kind 5  A*B^T with a batch it must refuse; out = its error.
 *
 * The model (steps 1-3) is judged against a model counted again here (never
 * the student's bank_model.c); its Criterion tests are tests/model.c, so
 * its cases here are the grader's. The probe's clocks cannot be judged, but
 * every thread's sum of the words it read can, and each warp's stop must
 * come after its start. A*B^T: integer data (exact: every sum of 32
 * products is an integer below 2^24) and real data within the rounding
 * bound of 32 multiply-adds in order (banks_abt_tolerance). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cml/cml_rng.h>
#include <cml/cml_spec.h>
#include "banks_host.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define STEP(s) (1u << (s))
#define ABT_STEPS (STEP(5) | STEP(6) | STEP(7))

enum { WARP = BANKS_WARP, REC = 2 + BANKS_WARP, MATRIX = BANKS_TILE * BANKS_TILE,
       THREADS = BANKS_PROBE_WARPS * BANKS_WARP, GUARD = 64 /* harness.c's BK_GUARD */ };
enum { K_BANK_OF, K_DEGREE, K_PROBE, K_PROBE_REFUSED, K_ABT, K_ABT_REFUSED };
#define INVALID_VALUE 1u /* cudaErrorInvalidValue */

/* A*B^T data (a case's tag): the tests' (banks_make_matrices) and the grader's. */
enum { REALS, SMALL_INTS, NONZERO_INTS, REALS_AWAY_FROM_ZERO };

/* ------------------------------------------------------------------ data */

static uint32_t below(cml_rng *r, uint64_t n) { return (uint32_t)(cml_rng_next(r) % n); }

/* A multiple of step below n. */
static uint32_t aligned_below(cml_rng *r, uint64_t n, uint32_t step) { return step * below(r, n / step); }

/* k distinct words of [lo, hi) in random order (the probe's lanes). */
static void distinct_words(cml_rng *r, uint32_t *out, int k, uint32_t lo, uint32_t hi)
{
    uint32_t pool[BANKS_PROBE_MAX_WORD];
    uint32_t n = hi - lo;
    for (uint32_t i = 0; i < n; ++i)
        pool[i] = lo + i;
    for (int i = 0; i < k; ++i) {
        uint32_t j = (uint32_t)i + below(r, n - (uint32_t)i);
        uint32_t t = pool[i];
        pool[i] = pool[j];
        pool[j] = t;
        out[i] = pool[i];
    }
}

static void put_record(uint32_t *rec, int access_bytes, int null, const uint32_t *addr)
{
    rec[0] = (uint32_t)access_bytes;
    rec[1] = (uint32_t)null;
    memcpy(rec + 2, addr, WARP * sizeof *addr);
}

/* Warp patterns of nbytes-wide aligned accesses: strides, broadcast, lanes
 * crowded into a few words (broadcast and conflict mixed), lanes in one bank
 * 16 KiB or more apart, and addresses anywhere. */
static void patterns(cml_rng *r, uint32_t nbytes, int count, uint32_t *records)
{
    static const uint32_t strides[] = {0, 1, 2, 3, 4, 8, 16, 17, 32, 33, 64};
    uint32_t addr[WARP];
    int made = 0;
    for (size_t k = 0; k < COUNT(strides) && made < count; ++k, ++made) {
        uint32_t base = aligned_below(r, 1u << 16, nbytes);
        for (uint32_t i = 0; i < WARP; ++i)
            addr[i] = base + strides[k] * nbytes * i;
        put_record(records + (size_t)made * REC, (int)nbytes, 0, addr);
    }
    if (made < count) { /* one bank, far apart */
        uint32_t base = aligned_below(r, 1u << 20, nbytes);
        for (uint32_t i = 0; i < WARP; ++i)
            addr[i] = base + (i % 2) * 16384u * (i / 2 + 1);
        put_record(records + (size_t)made++ * REC, (int)nbytes, 0, addr);
    }
    if (made < count) { /* far apart, banks spread */
        for (uint32_t i = 0; i < WARP; ++i)
            addr[i] = below(r, 1u << 19) * 128u + (i * nbytes) % 128u;
        put_record(records + (size_t)made++ * REC, (int)nbytes, 0, addr);
    }
    for (; made < count; ++made) {
        switch (below(r, 4)) {
        case 0: { /* a handful of words: broadcast within, conflicts between */
            uint32_t pool[6];
            uint32_t n = 1 + below(r, 6);
            for (uint32_t k = 0; k < n; ++k)
                pool[k] = aligned_below(r, 1u << 12, nbytes);
            for (int i = 0; i < WARP; ++i)
                addr[i] = pool[below(r, n)];
            break;
        }
        case 1: /* a small window: some lanes share words, some banks */
            for (int i = 0; i < WARP; ++i)
                addr[i] = aligned_below(r, 64u * nbytes, nbytes);
            break;
        case 2: /* anywhere in 4 GiB */
            for (int i = 0; i < WARP; ++i)
                addr[i] = aligned_below(r, (uint64_t)1 << 32, nbytes);
            break;
        default: { /* a random stride from a random base */
            uint32_t base = aligned_below(r, 1u << 24, nbytes), s = 1 + below(r, 40);
            for (uint32_t i = 0; i < WARP; ++i)
                addr[i] = base + s * nbytes * i;
            break;
        }
        }
        put_record(records + (size_t)made * REC, (int)nbytes, 0, addr);
    }
}

/* The grader's nonzero integers +-[1, 64] (|products| <= 2^12, sums of 32
 * exact in float; a dropped product always shows) or reals +-[0.25, 1) (a
 * dropped product, at least 1/16, is far beyond the bound). */
static void grader_matrices(float *m, size_t n, int tag, uint64_t seed, uint64_t stream)
{
    cml_rng r;
    cml_rng_init(&r, seed, stream);
    for (size_t i = 0; i < n; ++i) {
        uint32_t v = (uint32_t)cml_rng_next(&r);
        if (tag == NONZERO_INTS)
            m[i] = (float)(v & 64 ? (int)(v & 63) + 1 : -1 - (int)(v & 63));
        else
            m[i] = (float)((0.25 + 0.75 * (double)(v >> 8) / 16777216.0) * (v & 1 ? 1.0 : -1.0));
    }
}

/* ------------------------------------------------------------------ cases */

static cml_case *probe(cml_cases *l, int rounds, int where, const char *fmt_name, const char *what)
{
    cml_case *c = cml_case_add(l, K_PROBE, (uint64_t)rounds, 0, WARP, "pattern %s (%s), %d round%s", fmt_name, what,
                               rounds, rounds == 1 ? "" : "s");
    if (c) {
        c->steps = STEP(4);
        c->where = where;
    }
    return c;
}

/* Every pattern of the probe (banks_host.h's table) at `rounds`; those
 * named in `grader` run in the grader too. */
static int every_pattern(cml_cases *l, int rounds, const banks_pattern *grader, size_t ngrader)
{
    for (int p = 0; p < BANKS_NUM_PATTERNS; ++p) {
        int where = CML_IN_TESTS;
        for (size_t k = 0; k < ngrader; ++k)
            where = grader[k] == (banks_pattern)p ? CML_IN_BOTH : where;
        cml_case *c = probe(l, rounds, where, banks_pattern_names[p], banks_pattern_whats[p]);
        if (!c)
            return 0;
        for (int lane = 0; lane < WARP; ++lane)
            c->data[lane] = banks_pattern_word((banks_pattern)p, lane);
    }
    return 1;
}

/* Step 4, one round of every pattern. */
static int probe_every_pattern_once(cml_cases *l, uint64_t seed, int cpu)
{
    (void)seed;
    (void)cpu;
    static const banks_pattern grader[] = {BANKS_PATTERN_stride_1};
    return every_pattern(l, 1, grader, COUNT(grader));
}

/* Step 4: round counts it must refuse, then every pattern at 7 rounds and
 * at a count drawn from the seed. */
static int probe_every_pattern_over_rounds(cml_cases *l, uint64_t seed, int cpu)
{
    (void)cpu;
    const long long bad[] = {0, -1, BANKS_PROBE_MAX_ROUNDS + 1};
    for (size_t k = 0; k < COUNT(bad); ++k) {
        cml_case *c = cml_case_add(l, K_PROBE_REFUSED, (uint64_t)bad[k], 0, WARP,
                                   "probe with rounds = %lld (must return cudaErrorInvalidValue)", bad[k]);
        if (!c)
            return 0;
        c->steps = STEP(4);
        for (int lane = 0; lane < WARP; ++lane)
            c->data[lane] = (uint32_t)lane;
    }
    static const banks_pattern grader[] = {BANKS_PATTERN_stride_33, BANKS_PATTERN_stride_32,
                                           BANKS_PATTERN_swizzled_column};
    cml_rng r;
    cml_rng_init(&r, seed, 401);
    return every_pattern(l, 7, grader, COUNT(grader)) && every_pattern(l, cml_rng_int(&r, 2, 50), NULL, 0);
}

/* Step 4, the grader's: random distinct lane words, and the contract's
 * limits (banks.h): the highest words a lane may name, BANKS_PROBE_MAX_ROUNDS
 * rounds on a GPU (a few on the CPU path, where every load is emulated).
 * The counters and the technique take a step's last two ordinary cases of
 * its largest size: random-word probes that run. */
static int probe_random_words(cml_cases *l, uint64_t seed, int cpu)
{
    cml_rng r;
    cml_rng_init(&r, seed, 1400);
    for (int k = 0; k <= 3; ++k) {
        int highest = k == 3;
        int rounds = highest ? (cpu ? 3 : BANKS_PROBE_MAX_ROUNDS) : cml_rng_int(&r, 2, cpu ? 12 : 50);
        cml_case *c = highest ? cml_case_add(l, K_PROBE, (uint64_t)rounds, 0, WARP, "probe, the highest words, %d "
                                             "round(s)", rounds)
                              : cml_case_add(l, K_PROBE, (uint64_t)rounds, 0, WARP, "probe, random words %d, %d "
                                             "round(s)", k + 1, rounds);
        if (!c)
            return 0;
        c->steps = STEP(4);
        c->where = CML_IN_GRADER;
        c->limit = highest;
        if (highest)
            distinct_words(&r, c->data, WARP, BANKS_PROBE_MAX_WORD - WARP, BANKS_PROBE_MAX_WORD);
        else
            distinct_words(&r, c->data, WARP, 0, BANKS_PROBE_MAX_WORD);
    }
    return 1;
}

/* Steps 1-3, the grader's (the tests are tests/model.c). */
static int bank_of_addresses(cml_cases *l, uint64_t seed, int cpu)
{
    (void)cpu;
    static const uint32_t edge[] = {0, 1, 2, 3, 4, 7, 124, 127, 128, 131, 132, 4 * 33, 16384, 16384 + 68, 49152,
                                    0xFFFFFFFCu, 0xFFFFFFFFu, 0x80000000u, 0x7FFFFFFFu};
    cml_rng r;
    cml_rng_init(&r, seed, 1100);
    size_t n = COUNT(edge) + 2000;
    cml_case *c = cml_case_add(l, K_BANK_OF, 0, 0, n, "bank_of on %zu addresses below 64 KiB", n);
    if (!c)
        return 0;
    c->steps = STEP(1);
    c->where = CML_IN_GRADER;
    memcpy(c->data, edge, sizeof edge);
    for (size_t i = COUNT(edge); i < n; ++i)
        c->data[i] = below(&r, 1u << 16);
    if (!(c = cml_case_add(l, K_BANK_OF, 0, 0, 3000, "bank_of on 3000 addresses anywhere")))
        return 0;
    c->steps = STEP(1);
    c->where = CML_IN_GRADER;
    for (size_t i = 0; i < 3000; ++i)
        c->data[i] = (uint32_t)cml_rng_next(&r);
    return 1;
}

static cml_case *degree_case(cml_cases *l, int step, uint64_t m, const char *what)
{
    cml_case *c = cml_case_add(l, K_DEGREE, m, (uint64_t)step, m * REC, "conflict_degree on %llu %s",
                               (unsigned long long)m, what);
    if (c) {
        c->steps = STEP(step);
        c->where = CML_IN_GRADER;
    }
    return c;
}

static int degree_4_byte(cml_cases *l, uint64_t seed, int cpu)
{
    (void)cpu;
    cml_rng r;
    cml_rng_init(&r, seed, 1200);
    cml_case *c = degree_case(l, 2, 300, "4-byte patterns");
    if (!c)
        return 0;
    patterns(&r, 4, 300, c->data);
    return 1;
}

/* 8- and 16-byte patterns, and inputs it must refuse (-1). */
static int degree_wide_and_refused(cml_cases *l, uint64_t seed, int cpu)
{
    (void)cpu;
    cml_rng r;
    cml_rng_init(&r, seed, 1300);
    cml_case *c = degree_case(l, 3, 300, "8-byte patterns");
    if (!c)
        return 0;
    patterns(&r, 8, 300, c->data);
    if (!(c = degree_case(l, 3, 300, "16-byte patterns")))
        return 0;
    patterns(&r, 16, 300, c->data);
    static const int widths[] = {0, 1, 2, 3, 5, 12, 32, -4};
    if (!(c = degree_case(l, 3, 3 + COUNT(widths) + 1,
                          "inputs it must refuse (misaligned, width not 4/8/16, NULL)")))
        return 0;
    uint32_t addr[WARP], *rec = c->data;
    static const uint32_t misaligned[] = {8, 16, 4};
    for (size_t k = 0; k < COUNT(misaligned); ++k, rec += REC) { /* 4-byte aligned, not nbytes */
        uint32_t nbytes = misaligned[k];
        for (int i = 0; i < WARP; ++i)
            addr[i] = aligned_below(&r, 1u << 16, nbytes);
        addr[below(&r, WARP)] += nbytes == 4 ? 1 + below(&r, 3) : nbytes / 2;
        put_record(rec, (int)nbytes, 0, addr);
    }
    for (uint32_t i = 0; i < WARP; ++i)
        addr[i] = 4 * i;
    for (size_t k = 0; k < COUNT(widths); ++k, rec += REC)
        put_record(rec, widths[k], 0, addr);
    memset(addr, 0, sizeof addr);
    put_record(rec, 4, 1, addr);
    return 1;
}

/* Steps 5-7: a batch of A*B^T, A then B in the data. */
static cml_case *abt(cml_cases *l, int batch, int tag, int where, uint64_t seed, uint64_t stream)
{
    static const char *const what[] = {"reals", "small integers (exact)", "integers (exact)", "reals"};
    size_t n = (size_t)batch * MATRIX;
    cml_case *c = cml_case_add(l, K_ABT, (uint64_t)batch, 0, 2 * n, "A*B^T, batch %d, %s", batch, what[tag]);
    if (!c)
        return NULL;
    c->steps = ABT_STEPS;
    c->where = where;
    c->tag = tag;
    float *a = (float *)c->data, *b = a + n;
    if (tag == REALS || tag == SMALL_INTS) { /* the tests' data */
        banks_data kind = tag == REALS ? BANKS_DATA_REALS : BANKS_DATA_SMALL_INTS;
        banks_make_matrices(a, batch, kind, seed, 2 * stream);
        banks_make_matrices(b, batch, kind, seed, 2 * stream + 1);
    } else {
        grader_matrices(a, 2 * n, tag, seed, stream);
    }
    return c;
}

static cml_case *abt_refused(cml_cases *l, long long batch, int where)
{
    cml_case *c = cml_case_add(l, K_ABT_REFUSED, (uint64_t)batch, 0, 2 * MATRIX,
                               "A*B^T with batch = %lld (must return cudaErrorInvalidValue)", batch);
    if (c) {
        c->steps = ABT_STEPS;
        c->where = where;
    }
    return c;
}

/* One to thousands of real matrices, one batch drawn from the seed, and a
 * batch of 0 it must refuse. */
static int real_matrices(cml_cases *l, uint64_t seed, int cpu)
{
    (void)cpu;
    static const int batches[] = {1, 2, 33, 1000};
    for (size_t k = 0; k < COUNT(batches); ++k)
        if (!abt(l, batches[k], REALS, CML_IN_TESTS, seed, k))
            return 0;
    cml_rng r;
    cml_rng_init(&r, seed, 500);
    return abt(l, cml_rng_int(&r, 3, 5000), REALS, CML_IN_TESTS, seed, 10) && abt_refused(l, 0, CML_IN_BOTH);
}

static int small_integer_matrices(cml_cases *l, uint64_t seed, int cpu)
{
    (void)cpu;
    return abt(l, 77, SMALL_INTS, CML_IN_TESTS, seed, 20) != NULL;
}

/* 65537 matrices: one block per matrix is more blocks than a grid's y (or
 * z) dimension holds. The tests only. */
static int matrices_past_grid_y(cml_cases *l, uint64_t seed, int cpu)
{
    (void)cpu;
    return abt(l, 65537, REALS, CML_IN_TESTS, seed, 30) != NULL;
}

/* The grader's: nonzero integers at batches up to a few hundred (a few
 * dozen on the CPU path), a batch of reals away from zero, and a negative
 * batch it must refuse. */
static int abt_grader_batches(cml_cases *l, uint64_t seed, int cpu)
{
    cml_rng r;
    cml_rng_init(&r, seed, 1500);
    int batches[] = {1, 2, 33, cml_rng_int(&r, 3, cpu ? 40 : 400), 257};
    for (size_t k = 0; k < COUNT(batches) - (cpu ? 1 : 0); ++k)
        if (!abt(l, batches[k], NONZERO_INTS, CML_IN_GRADER, seed, 1510 + k))
            return 0;
    return abt(l, cpu ? 5 : 65, REALS_AWAY_FROM_ZERO, CML_IN_GRADER, seed, 1520) &&
           abt_refused(l, -1, CML_IN_GRADER);
}

static const cml_group groups[] = {
    {"probe_every_pattern_once", probe_every_pattern_once, 0},
    {"probe_every_pattern_over_rounds", probe_every_pattern_over_rounds, 0},
    {"real_matrices", real_matrices, 0},
    {"small_integer_matrices", small_integer_matrices, CML_IN_TESTS},
    {"matrices_past_grid_y", matrices_past_grid_y, CML_IN_TESTS},
    {"bank_of_addresses", bank_of_addresses, CML_IN_GRADER},
    {"degree_4_byte", degree_4_byte, CML_IN_GRADER},
    {"degree_wide_and_refused", degree_wide_and_refused, CML_IN_GRADER},
    {"probe_random_words", probe_random_words, CML_IN_GRADER},
    {"abt_grader_batches", abt_grader_batches, CML_IN_GRADER},
};

static uint64_t out_bytes(const cml_case *c)
{
    switch (c->kind) {
    case K_BANK_OF: return 4 * c->count;
    case K_DEGREE: return 4 * c->a;
    case K_PROBE: return THREADS * 4 + 2 * BANKS_PROBE_WARPS * 8;
    case K_ABT: return 4 * (c->count / 2 + 2 * GUARD);
    default: return 4;
    }
}

/* ------------------------------------------------------------------ the judge */

static int bank_ref(uint32_t addr) { return (int)(addr / 4 % 32); }

static const char *bank_cause(uint32_t addr, int got)
{
    if (got == -1)
        return "still the skeleton's -1 (TODO(step 1) in bank_model.c)";
    if (got < 0 || got >= BANKS_COUNT)
        return "a bank is a number from 0 to 31";
    if ((uint32_t)got == addr % 32)
        return "that is the byte address modulo 32: divide by the 4-byte word size first";
    if ((uint32_t)got == addr / 4 % 16)
        return "the right word, but count the banks again (banks.h: BANKS_COUNT)";
    return "which 4-byte word holds this byte, and which of the 32 banks holds that word?";
}

static int judge_bank_of(const cml_case *c, const int32_t *got, char *msg, size_t cap)
{
    for (size_t i = 0; i < c->count; ++i)
        if (got[i] != bank_ref(c->data[i])) {
            snprintf(msg, cap, "bank_of(%u) = %d, expected %d. Likely cause: %s", c->data[i], (int)got[i],
                     bank_ref(c->data[i]), bank_cause(c->data[i], (int)got[i]));
            return 0;
        }
    return 1;
}

/* conflict_degree as banks.h defines it, counted here again. Without
 * DISTINCT every lane's word counts (a broadcast counted as a conflict);
 * without PHASES a wide access is one phase of 32 lanes: the classic
 * mistakes, named when a wrong answer is theirs. */
enum { DISTINCT = 1, PHASES = 2, AS_DEFINED = DISTINCT | PHASES };

static int model_degree(const uint32_t *addr, int nbytes, int how)
{
    if (nbytes != 4 && nbytes != 8 && nbytes != 16)
        return -1;
    for (int i = 0; i < WARP; ++i)
        if (addr[i] % (uint32_t)nbytes)
            return -1;
    int words = nbytes / 4, lanes = how & PHASES ? WARP / words : WARP, total = 0;
    for (int first = 0; first < WARP; first += lanes) {
        uint32_t w[4 * WARP];
        int nw = 0, per_bank[BANKS_COUNT] = {0}, worst = 0;
        for (int lane = first; lane < first + lanes; ++lane)
            for (int k = 0; k < words; ++k)
                w[nw++] = addr[lane] / 4 + (uint32_t)k;
        for (int p = 0; p < nw; ++p) {
            int seen = 0;
            for (int q = 0; q < p && (how & DISTINCT) && !seen; ++q)
                seen = w[q] == w[p];
            if (!seen && ++per_bank[w[p] % BANKS_COUNT] > worst)
                worst = per_bank[w[p] % BANKS_COUNT];
        }
        total += worst;
    }
    return total;
}

static int judge_degree(const cml_case *c, const int32_t *got, char *msg, size_t cap)
{
    for (uint64_t k = 0; k < c->a; ++k) {
        const uint32_t *r = c->data + k * REC, *addr = r + 2;
        int nbytes = (int)r[0], null = r[1] != 0;
        int want = null ? -1 : model_degree(addr, nbytes, AS_DEFINED);
        if (got[k] == want)
            continue;
        char what[160];
        if (null)
            snprintf(what, sizeof what, "byte_address NULL");
        else
            snprintf(what, sizeof what, "lanes at bytes %u, %u, %u, %u, %u, %u, ...", addr[0], addr[1], addr[2],
                     addr[3], addr[4], addr[5]);
        const char *cause = "";
        if (want == -1)
            cause = ". Likely cause: an input conflict_degree must refuse (-1): NULL, a width other than 4, 8 "
                    "or 16, or an address that is not a multiple of the width";
        else if (got[k] == -1)
            cause = ". Likely cause: a valid input refused";
        else if (got[k] == model_degree(addr, nbytes, PHASES))
            cause = ". Likely cause: lanes on one word counted as a conflict: a broadcast is one read, count "
                    "distinct words per bank";
        else if (nbytes > 4 && got[k] == model_degree(addr, nbytes, DISTINCT))
            cause = ". Likely cause: 8- and 16-byte accesses are served a half or a quarter warp at a time: "
                    "count the phases apart and add them";
        snprintf(msg, cap, "pattern %llu (%s; access_bytes %d): conflict_degree = %d, expected %d%s",
                 (unsigned long long)k + 1, what, nbytes, (int)got[k], want, cause);
        return 0;
    }
    return 1;
}

static int judge_probe(const cml_case *c, const unsigned char *out, char *msg, size_t cap)
{
    uint32_t rounds = (uint32_t)c->a, sums[THREADS];
    int64_t start[BANKS_PROBE_WARPS], stop[BANKS_PROBE_WARPS];
    memcpy(sums, out, sizeof sums);
    memcpy(start, out + sizeof sums, sizeof start);
    memcpy(stop, out + sizeof sums + sizeof start, sizeof stop);
    for (int t = 0; t < THREADS; ++t) {
        uint32_t word = c->data[t % WARP], per_round = 0;
        for (uint32_t j = 0; j < BANKS_PROBE_UNROLL; ++j)
            per_round += word + 32u * j;
        uint32_t want = per_round * rounds;
        if (sums[t] != want) {
            snprintf(msg, cap, "sums[%d] = %u, expected %u (the words lane %d reads, every round; %s; lane i reads "
                     "word %u, %u, %u, %u, ...)", t, sums[t], want, t % WARP,
                     sums[t] == BANKS_HARNESS_POISON ? "never written" : "other words read, or not every round",
                     c->data[0], c->data[1], c->data[2], c->data[3]);
            return 0;
        }
    }
    for (int w = 0; w < BANKS_PROBE_WARPS; ++w)
        if (stop[w] <= start[w]) {
            snprintf(msg, cap, "warp %d: stop %lld is not after start %lld (%s)", w, (long long)stop[w],
                     (long long)start[w],
                     stop[w] == -1 || start[w] == -1 ? "never written" : "clock64() read in the wrong place");
            return 0;
        }
    return 1;
}

/* Step 7: does C hold, in each of the first matrices, the sum over k of
 * A[i][k] * B[j][k ^ j]? That is what a swizzle on one side only gives: B
 * stored at bs[y][x ^ y] and read at bs[x][k], and B stored at bs[y][x] and
 * read at bs[x][k ^ x], both read B[x][k ^ x] for B[x][k]. From C the two
 * cannot be told apart, so the message names neither side. */
static int swizzled_on_one_side_only(const float *a, const float *b, const float *c, size_t batch)
{
    const int t = BANKS_TILE;
    size_t shown = batch < 16 ? batch : 16; /* enough evidence, and quick for 65537 matrices */
    for (size_t m = 0; m < shown; ++m) {
        const float *am = a + m * MATRIX, *bm = b + m * MATRIX, *cm = c + m * MATRIX;
        for (int i = 0; i < t; ++i)
            for (int j = 0; j < t; ++j) {
                double s = 0.0, sa = 0.0;
                for (int k = 0; k < t; ++k) {
                    double p = (double)am[i * t + k] * (double)bm[j * t + (k ^ j)];
                    s += p;
                    sa += fabs(p);
                }
                double got = (double)cm[i * t + j];
                if (isnan(got) || fabs(got - s) > banks_abt_tolerance(sa))
                    return 0;
            }
    }
    return 1;
}

#define APPEND(...)                                                                    \
    do {                                                                               \
        int n_ = snprintf(msg + used, used < cap ? cap - used : 0, __VA_ARGS__);        \
        used += n_ > 0 ? (size_t)n_ : 0;                                               \
    } while (0)

static int judge_abt(const cml_case *c, int step, const uint32_t *words, char *msg, size_t cap)
{
    const int t = BANKS_TILE;
    size_t batch = (size_t)c->a, n = batch * MATRIX, used = 0;
    if (cml_spec_outside_write(words, words + GUARD + n, GUARD, "C", msg, cap)) {
        used = strlen(msg);
        APPEND(": an index past the matrix, or a block for a matrix that does not exist");
        return 0;
    }
    const float *a = (const float *)c->data, *b = a + n;
    float got_c;
    const uint32_t *cw = words + GUARD;
    int exact = c->tag == SMALL_INTS || c->tag == NONZERO_INTS;
    size_t wrong = 0, first = 0;
    double first_want = 0.0, first_tol = 0.0;
    for (size_t m = 0; m < batch; ++m) {
        const float *am = a + m * MATRIX, *bm = b + m * MATRIX;
        for (int i = 0; i < t; ++i)
            for (int j = 0; j < t; ++j) {
                const float *ra = am + i * t, *rb = bm + j * t;
                /* products of floats are exact in double; four partial sums
                   (for speed) add them with an error below 2^-48 sum|a b|,
                   far inside the float bound (exact for the integers) */
                double s4[4] = {0.0, 0.0, 0.0, 0.0}, sa4[4] = {0.0, 0.0, 0.0, 0.0};
                for (int k = 0; k < t; k += 4)
                    for (int q = 0; q < 4; ++q) {
                        double p = (double)ra[k + q] * (double)rb[k + q];
                        s4[q] += p;
                        sa4[q] += fabs(p);
                    }
                double s = (s4[0] + s4[1]) + (s4[2] + s4[3]), sa = (sa4[0] + sa4[1]) + (sa4[2] + sa4[3]);
                /* a float sum of 32 products in order, each step rounding once:
                   |err| <= 32 u sum|a b| (exact for the integer data) */
                double tol = exact ? 0.0 : banks_abt_tolerance(sa);
                size_t at = m * MATRIX + (size_t)i * t + (size_t)j;
                memcpy(&got_c, &cw[at], sizeof got_c);
                if (isfinite(got_c) && fabs((double)got_c - s) <= tol)
                    continue;
                if (wrong++ == 0) {
                    first = at;
                    first_want = s;
                    first_tol = tol;
                }
            }
    }
    if (wrong == 0)
        return 1;
    const float *cf = (const float *)(const void *)cw;
    if (step == 7 && swizzled_on_one_side_only(a, b, cf, batch))
        APPEND("C[y][x] is the sum over k of A[y][k] * B[x][k ^ x], so the swizzle is applied on one side only: "
               "either B is stored swizzled and read plain, or stored plain and read swizzled (C cannot tell "
               "which). Store B[y][x] at bs[y][x ^ y] AND read B[x][k] at bs[x][k ^ x]. ");
    size_t m = first / MATRIX;
    int i = (int)(first / t % t), j = (int)(first % t);
    memcpy(&got_c, &cw[first], sizeof got_c);
    APPEND("%zu of %zu elements of C wrong, the first: matrix %zu, C[%d][%d] = ", wrong, n, m, i, j);
    if (cw[first] == BANKS_HARNESS_POISON || cw[first] == BANKS_POISON)
        APPEND("never written");
    else
        APPEND("%.9g", (double)got_c);
    APPEND(", expected %.9g", first_want);
    if (first_tol > 0)
        APPEND(" (allowed error %.3g)", first_tol);
    APPEND(". Likely cause: %s", banks_abt_likely_cause(step, a + m * MATRIX, b + m * MATRIX, i, j, got_c,
                                                         first_want));
    return 0;
}

static int judge(const cml_case *c, int step, const void *out, uint64_t nbytes, char *msg, size_t cap)
{
    uint64_t want = out_bytes(c);
    if (nbytes != want) {
        snprintf(msg, cap, "%llu bytes of output, expected %llu", (unsigned long long)nbytes,
                 (unsigned long long)want);
        return 0;
    }
    switch (c->kind) {
    case K_BANK_OF: return judge_bank_of(c, (const int32_t *)out, msg, cap);
    case K_DEGREE: return judge_degree(c, (const int32_t *)out, msg, cap);
    case K_PROBE: return judge_probe(c, (const unsigned char *)out, msg, cap);
    case K_ABT: return judge_abt(c, step, (const uint32_t *)out, msg, cap);
    default: { /* a refusal: its error */
        uint32_t got;
        memcpy(&got, out, 4);
        if (got == INVALID_VALUE)
            return 1;
        snprintf(msg, cap, "returned error %u%s, expected cudaErrorInvalidValue (%u)", got,
                 got == 0 ? " (cudaSuccess)" : "", INVALID_VALUE);
        return 0;
    }
    }
}

/* Steps 6 and 7: a batch of 65536 (the runner's default): A, B and C
 * 256 MiB each, far past L2. Inputs in [-1, 1): sum|a b| < 32, and each of
 * the two harnesses is within 32 u sum|a b| of the exact product, so they
 * differ by at most 2 * 32 * 32 u. */
static int timing(int step, cml_spec_timing *t)
{
    if (step != 6 && step != 7)
        return 0;
    uint64_t batch = 1u << 16;
    t->kind = K_ABT;
    t->a = batch;
    t->count = 2 * batch * MATRIX;
    t->fill = 2;
    snprintf(t->label, sizeof t->label, "A*B^T, batch %llu (timed)", (unsigned long long)batch);
    t->traffic = 4 * (t->count + t->count / 2); /* A and B read once, C (one matrix a pair) written once */
    t->close_abs = 2.0 * 32 * 32 * ldexp(1.0, -24);
    return 1;
}

const cml_spec cml_lab_spec = {"01_shared_banks", groups, COUNT(groups), out_bytes, judge, timing, ""};
