/* banks_host.c: patterns, data, CPU reference and checks of lab 01. */
#include "banks_host.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_rng.h>

#define PATTERN_NAME(id, what) #id,
#define PATTERN_WHAT(id, what) what,
const char *const banks_pattern_names[BANKS_NUM_PATTERNS] = {BANKS_PATTERNS(PATTERN_NAME)};
const char *const banks_pattern_whats[BANKS_NUM_PATTERNS] = {BANKS_PATTERNS(PATTERN_WHAT)};

enum { ROW = 5, COL = 5, BROADCAST_WORD = 7 };

unsigned banks_pattern_word(banks_pattern p, int lane)
{
    unsigned i = (unsigned)lane;
    switch (p) {
    case BANKS_PATTERN_stride_1: return i;
    case BANKS_PATTERN_stride_2: return 2 * i;
    case BANKS_PATTERN_stride_4: return 4 * i;
    case BANKS_PATTERN_stride_8: return 8 * i;
    case BANKS_PATTERN_stride_16: return 16 * i;
    case BANKS_PATTERN_stride_32: return 32 * i;
    case BANKS_PATTERN_stride_33: return 33 * i;
    case BANKS_PATTERN_broadcast: return BROADCAST_WORD;
    case BANKS_PATTERN_tile_row: return ROW * 32 + i;
    case BANKS_PATTERN_tile_column: return i * 32 + COL;
    case BANKS_PATTERN_padded_column: return i * 33 + COL;
    case BANKS_PATTERN_swizzled_column: return i * 32 + (COL ^ i);
    case BANKS_NUM_PATTERNS: break;
    }
    return 0;
}

void banks_pattern_addresses(banks_pattern p, uint32_t addr[BANKS_WARP])
{
    for (int lane = 0; lane < BANKS_WARP; ++lane)
        addr[lane] = banks_pattern_word(p, lane) * BANKS_WORD_BYTES;
}

unsigned banks_probe_expected_sum(banks_pattern p, int lane, int rounds)
{
    unsigned per_round = 0;
    for (unsigned j = 0; j < BANKS_PROBE_UNROLL; ++j)
        per_round += banks_pattern_word(p, lane) + 32u * j;
    return per_round * (unsigned)rounds;
}

cudaError_t banks_probe_alloc(banks_probe_buffers *b)
{
    memset(b, 0, sizeof *b);
    cudaError_t err = cml_dbuf_alloc(&b->lane_word, BANKS_WARP * sizeof(unsigned), 0xA5A5A5A5u);
    if (err == cudaSuccess)
        err = cml_dbuf_alloc(&b->start, BANKS_PROBE_WARPS * sizeof(long long), 0xA5A5A5A5u);
    if (err == cudaSuccess)
        err = cml_dbuf_alloc(&b->stop, BANKS_PROBE_WARPS * sizeof(long long), 0xA5A5A5A5u);
    if (err == cudaSuccess)
        err = cml_dbuf_alloc(&b->sums, BANKS_PROBE_WARPS * BANKS_WARP * sizeof(unsigned), 0xA5A5A5A5u);
    if (err != cudaSuccess)
        banks_probe_free(b);
    return err;
}

void banks_probe_free(banks_probe_buffers *b)
{
    cml_dbuf_free(&b->lane_word);
    cml_dbuf_free(&b->start);
    cml_dbuf_free(&b->stop);
    cml_dbuf_free(&b->sums);
}

/* ------------------------------------------------------------ A*B^T */

void banks_make_matrices(float *m, int batch, banks_data kind, uint64_t seed, uint64_t stream)
{
    size_t n = (size_t)batch * BANKS_TILE * BANKS_TILE;
    cml_rng rng;
    cml_rng_init(&rng, seed, stream);
    for (size_t i = 0; i < n; ++i)
        m[i] = kind == BANKS_DATA_SMALL_INTS ? (float)cml_rng_int(&rng, -8, 8)
                                             : cml_rng_float(&rng, -1.0f, 1.0f);
}

void banks_cpu_abt(const float *a, const float *b, int batch, double *c, double *abs_c)
{
    const int t = BANKS_TILE;
    for (int m = 0; m < batch; ++m) {
        const float *am = a + (size_t)m * t * t;
        const float *bm = b + (size_t)m * t * t;
        for (int i = 0; i < t; ++i)
            for (int j = 0; j < t; ++j) {
                double s = 0.0, sa = 0.0;
                for (int k = 0; k < t; ++k) {
                    double p = (double)am[i * t + k] * (double)bm[j * t + k];
                    s += p;
                    sa += fabs(p);
                }
                size_t at = (size_t)m * t * t + (size_t)i * t + j;
                if (c)
                    c[at] = s;
                if (abs_c)
                    abs_c[at] = sa;
            }
    }
}

double banks_abt_tolerance(double abs_sum)
{
    return 32.0 * ldexp(1.0, -24) * abs_sum + 1e-30;
}

cudaError_t banks_abt_alloc(banks_abt_buffers *d, int batch)
{
    size_t bytes = (size_t)batch * BANKS_TILE * BANKS_TILE * sizeof(float);
    memset(d, 0, sizeof *d);
    d->batch = batch;
    cudaError_t err = cml_dbuf_alloc(&d->a, bytes, 0xA5A5A5A5u);
    if (err == cudaSuccess)
        err = cml_dbuf_alloc(&d->b, bytes, 0xA5A5A5A5u);
    if (err == cudaSuccess)
        err = cml_dbuf_alloc(&d->c, bytes, 0xA5A5A5A5u);
    if (err != cudaSuccess)
        banks_abt_free(d);
    return err;
}

void banks_abt_free(banks_abt_buffers *d)
{
    cml_dbuf_free(&d->a);
    cml_dbuf_free(&d->b);
    cml_dbuf_free(&d->c);
}

const char *banks_abt_likely_cause(int step, const float *am, const float *bm, int i, int j, float got, double want)
{
    const int t = BANKS_TILE;
    uint32_t bits;
    memcpy(&bits, &got, sizeof bits);
    if (bits == BANKS_POISON || bits == BANKS_HARNESS_POISON)
        return "never written: a thread did not store its C[y][x]";
    /* A * B (B's tile read by row) instead of A * B^T? */
    double ab = 0.0;
    for (int k = 0; k < t; ++k)
        ab += (double)am[i * t + k] * (double)bm[k * t + j];
    if (fabs((double)got - ab) <= banks_abt_tolerance(fabs(ab)) * 4 && fabs(ab - want) > 1e-3)
        return "this is (A*B)[i][j]: B's tile is read as bs[k][x], a row; A*B^T reads bs[x][k]";
    if (step == 7)
        return "if steps 5 and 6 pass, check that the store and the read use the same swizzle: "
               "B[x][k] stored at bs[x][k ^ x] and read back from there";
    return "a wrong index, or a tile read before every thread stored its part (barrier)";
}

size_t banks_abt_check(int step, const float *a, const float *b, const float *c, const double *ref,
                       const double *abs_ref, int batch, int max_reports, char *report, size_t len)
{
    const int t = BANKS_TILE;
    size_t wrong = 0, used = 0;
    if (len > 0)
        report[0] = '\0';
    for (size_t at = 0; at < (size_t)batch * t * t; ++at) {
        double tol = banks_abt_tolerance(abs_ref[at]);
        double got = (double)c[at];
        if (!isnan(got) && fabs(got - ref[at]) <= tol)
            continue;
        if ((int)wrong < max_reports && used < len) {
            size_t m = at / ((size_t)t * t);
            int i = (int)(at / t % t), j = (int)(at % t);
            int n = snprintf(report + used, len - used, "%smatrix %zu, C[%d][%d]: expected %.9g, got %.9g (%s)",
                             wrong ? "\n" : "", m, i, j, ref[at], got,
                             banks_abt_likely_cause(step, a + m * t * t, b + m * t * t, i, j, c[at], ref[at]));
            used += n > 0 ? (size_t)n : 0;
        }
        ++wrong;
    }
    return wrong;
}

/* ------------------------------------------------------------ the model's view */

int banks_model_table(int (*bank)(uint32_t byte_address),
                      int (*degree)(const uint32_t byte_address[BANKS_WARP], int access_bytes), char *out,
                      size_t len)
{
    enum { SHOWN = 8 };  /* lanes whose banks are shown */
    size_t used = 0;
    int no_bank = 0, no_degree = 0;
#define PUT(...)                                                                       \
    do {                                                                               \
        int n_ = snprintf(out + used, used < len ? len - used : 0, __VA_ARGS__);        \
        used += n_ > 0 ? (size_t)n_ : 0;                                               \
    } while (0)
    PUT("%-16s %-48s %-24s %5s\n", "pattern", "lane i reads", "banks of lanes 0-7", "model");
    for (int p = 0; p < BANKS_NUM_PATTERNS; ++p) {
        uint32_t addr[BANKS_WARP];
        banks_pattern_addresses((banks_pattern)p, addr);
        char banks[SHOWN * 4 + 1] = "", model[16];
        size_t b = 0;
        for (int lane = 0; lane < SHOWN; ++lane) {
            int k = bank(addr[lane]);
            int ok = k >= 0 && k < BANKS_COUNT;
            no_bank += !ok;
            b += (size_t)snprintf(banks + b, sizeof banks - b, ok ? "%s%d" : "%s?", lane ? " " : "", k);
        }
        int d = degree(addr, 4);
        no_degree += d <= 0;
        snprintf(model, sizeof model, d > 0 ? "%d" : "?", d);
        PUT("%-16s %-48s %-24s %5s\n", banks_pattern_names[p], banks_pattern_whats[p], banks, model);
    }
    if (no_bank)
        PUT("banks ?: bank_of gives no bank from 0 to 31 yet (step 1 in bank_model.c).\n");
    if (no_degree)
        PUT("model ?: conflict_degree gives no wavefront count yet (steps 2-3 in bank_model.c)%s.\n",
            no_bank ? "" : "; the banks above are your bank_of's");
#undef PUT
    return no_bank + no_degree;
}
