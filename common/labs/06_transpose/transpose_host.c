#include "transpose_host.h"

#include <stdio.h>
#include <string.h>

#include <cml/cml_append.h>
#include <cml/cml_check.h>
#include <cml/cml_rng.h>

#define MASK28 ((1u << 28) - 1u)

tr_mode tr_step_mode(int step)
{
    return step == 1 ? TR_COPY : TR_TRANSPOSE;
}

void tr_make_data(float *a, size_t n, uint64_t seed, uint64_t stream)
{
    /* x -> a*x + b, x ^= x >> 15, x *= c, x ^= x >> 13, all mod 2^28: each
     * step is a bijection of [0, 2^28) (a and c odd), so distinct indices
     * give distinct 28-bit codes: 1 sign bit, 4 exponent bits (2^-7 .. 2^8)
     * and the 23 mantissa bits of a normal float. */
    cml_rng rng;
    cml_rng_init(&rng, seed, stream);
    uint32_t ka = ((uint32_t)cml_rng_next(&rng) | 1u) & MASK28;
    uint32_t kb = (uint32_t)cml_rng_next(&rng) & MASK28;
    uint32_t kc = ((uint32_t)cml_rng_next(&rng) | 1u) & MASK28;
    for (size_t i = 0; i < n; ++i) {
        uint32_t x = (uint32_t)i & MASK28;
        x = (x * ka + kb) & MASK28;
        x ^= x >> 15;
        x = (x * kc) & MASK28;
        x ^= x >> 13;
        uint32_t sign = x >> 27, exponent = 120u + ((x >> 23) & 15u), mantissa = x & 0x7FFFFFu;
        a[i] = cml_bits_float(sign << 31 | exponent << 23 | mantissa);
    }
}

void tr_cpu_transpose(const float *in, float *out, int rows, int cols)
{
    enum { B = 32 };  /* in blocks, so both arrays are walked a cache line at a time */
    for (int rb = 0; rb < rows; rb += B)
        for (int cb = 0; cb < cols; cb += B)
            for (int r = rb; r < rb + B && r < rows; ++r)
                for (int c = cb; c < cb + B && c < cols; ++c)
                    out[(size_t)c * rows + r] = in[(size_t)r * cols + c];
}

/* in(r, c) when it lies inside in, through *bits; 0 when outside. */
static int in_at(const float *in, int rows, int cols, long long r, long long c, uint32_t *bits)
{
    if (r < 0 || c < 0 || r >= rows || c >= cols)
        return 0;
    *bits = cml_float_bits(in[(size_t)r * (size_t)cols + (size_t)c]);
    return 1;
}

tr_cause tr_classify(const float *in, int rows, int cols, tr_mode mode, int i, int j, uint32_t got)
{
    static const int sides[] = {32, 64, 16};
    uint32_t v = 0;
    if (got == TR_POISON_BITS || got == TR_HARNESS_POISON_BITS)
        return TR_CAUSE_UNWRITTEN;
    if (got == TR_IN_GUARD_BITS)
        return TR_CAUSE_GUARD_VALUE;
    if (mode == TR_COPY)
        return TR_CAUSE_OTHER;
    /* out is cols x rows: out(i, j) must hold in(j, i). */
    if (cml_float_bits(in[(size_t)i * (size_t)rows + (size_t)j]) == got)
        return TR_CAUSE_NOT_TRANSPOSED;
    for (size_t s = 0; s < sizeof sides / sizeof sides[0]; ++s) {
        long long t = sides[s];
        long long ti = i / t * t, tj = j / t * t;  /* out(i, j) is in out's tile (ti, tj) */
        /* written at the tile's own block position: out(ti + y, tj + x) = in(ti + x, tj + y) */
        if (in_at(in, rows, cols, ti + j % t, tj + i % t, &v) && v == got)
            return TR_CAUSE_TILE_NOT_MOVED;
        /* moved but not flipped: out(ti + y, tj + x) = in(tj + y, ti + x) */
        if (in_at(in, rows, cols, tj + i % t, ti + j % t, &v) && v == got)
            return TR_CAUSE_TILE_NOT_FLIPPED;
    }
    return TR_CAUSE_OTHER;
}

const char *tr_cause_text(tr_cause cause)
{
    switch (cause) {
    case TR_CAUSE_GUARD_VALUE:
        return "wrong elements hold 1e+06, the guard value around in: the kernel reads past the end of "
               "in (a partial tile loaded without a bounds check)";
    case TR_CAUSE_TILE_NOT_MOVED:
        return "each tile of out holds the transpose of the tile at the same block position of in: swap "
               "the block indices on the write (the tile at (r0, c0) of in goes to (c0, r0) of out)";
    case TR_CAUSE_TILE_NOT_FLIPPED:
        return "each tile lands in the right place but is not transposed inside: on the write, read the "
               "tile's column (element (x, y) of the tile), not its row";
    case TR_CAUSE_NOT_TRANSPOSED:
        return "out[k] holds in[k]: copied, not transposed (element (r, c) of in belongs at "
               "out[c * rows + r])";
    case TR_CAUSE_UNWRITTEN:
        return "never written: out still holds the NaN poison there (a step not done yet, or tiles "
               "skipped: check the grid, the tile origin and the bounds checks)";
    default:
        return "a race (no __syncthreads() between writing the tile and reading it) or a wrong index; "
               CML_RACE_TOOL_HINT("transpose");
    }
}

size_t tr_compare(const float *in, const float *out, int rows, int cols, tr_mode mode, tr_check *chk)
{
    memset(chk, 0, sizeof *chk);
    chk->rows = rows;
    chk->cols = cols;
    chk->mode = mode;
    int out_rows = mode == TR_COPY ? rows : cols, out_cols = mode == TR_COPY ? cols : rows;
    for (int i = 0; i < out_rows; ++i) {
        for (int j = 0; j < out_cols; ++j) {
            float want = mode == TR_COPY ? in[(size_t)i * cols + j] : in[(size_t)j * cols + i];
            float got = out[(size_t)i * out_cols + j];
            uint32_t got_bits = cml_float_bits(got);
            if (got_bits == cml_float_bits(want))
                continue;
            chk->by_cause[tr_classify(in, rows, cols, mode, i, j, got_bits)]++;
            if (chk->reported < TR_MAX_REPORTED) {
                tr_mismatch *m = &chk->first[chk->reported++];
                m->row = i;
                m->col = j;
                m->expected = want;
                m->got = got;
            }
            chk->wrong++;
        }
    }
    chk->checked = (size_t)rows * (size_t)cols;
    return chk->wrong;
}

tr_cause tr_likely_cause(const tr_check *chk)
{
    /* The guard value cannot turn up by chance: any one names the cause. The
     * others are values that a race can also leave in a few elements (a stale
     * tile word that happens to equal in[k]), so the cause that explains the
     * most wrong elements wins; ties go to the more specific one. */
    if (chk->by_cause[TR_CAUSE_GUARD_VALUE] > 0)
        return TR_CAUSE_GUARD_VALUE;
    int best = TR_CAUSE_OTHER;
    for (int c = 0; c < TR_NUM_CAUSES; ++c)
        if (chk->by_cause[c] > chk->by_cause[best] || (chk->by_cause[c] == chk->by_cause[best] && c < best))
            best = c;
    return (tr_cause)best;
}

/* APPEND: cml_append.h, on this function's buf, len and used. */
#define APPEND(...) CML_APPEND(buf, len, used, __VA_ARGS__)

static void describe_counts(const tr_check *chk, char *buf, size_t len, size_t *used)
{
    static const char *what[TR_NUM_CAUSES] = {
        "hold in's guard value", "from the tile at the unswapped block position", "from an unflipped tile",
        "copied from the same index of in", "never written", "otherwise wrong"};
    int first = 1;
    for (int c = 0; c < TR_NUM_CAUSES; ++c) {
        if (chk->by_cause[c] == 0)
            continue;
        APPEND("%s%zu %s", first ? " (" : ", ", chk->by_cause[c], what[c]);
        first = 0;
    }
    if (!first)
        APPEND(")");
}

char *tr_describe(const tr_check *chk, char *buf, size_t len)
{
    size_t zero = 0, *used = &zero;
    buf[0] = '\0';
    APPEND("%zu of %zu elements of out are wrong", chk->wrong, chk->checked);
    describe_counts(chk, buf, len, used);
    for (int k = 0; k < chk->reported; ++k)
        APPEND("%sout(%d, %d) expected %.9g, got %.9g", k == 0 ? ": " : "; ", chk->first[k].row,
               chk->first[k].col, (double)chk->first[k].expected, (double)chk->first[k].got);
    APPEND(". Likely cause: %s", tr_cause_text(tr_likely_cause(chk)));
    return buf;
}

cudaError_t tr_buffers_alloc(tr_buffers *b, int rows, int cols)
{
    memset(b, 0, sizeof *b);
    b->rows = rows;
    b->cols = cols;
    size_t bytes = (size_t)rows * (size_t)cols * sizeof(float);
    cudaError_t err = cml_dbuf_alloc(&b->in, bytes, TR_IN_GUARD_BITS);
    if (err == cudaSuccess)
        err = cml_dbuf_alloc(&b->out, bytes, TR_OUT_GUARD_BITS);
    if (err != cudaSuccess)
        tr_buffers_free(b);
    return err;
}

void tr_buffers_free(tr_buffers *b)
{
    cml_dbuf_free(&b->in);
    cml_dbuf_free(&b->out);
}

cudaError_t tr_upload(tr_buffers *b, const float *host)
{
    return cudaMemcpy(b->in.ptr, host, b->in.bytes, cudaMemcpyHostToDevice);
}
