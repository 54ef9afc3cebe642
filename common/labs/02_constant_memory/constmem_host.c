#include "constmem_host.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cml/cml_append.h>
#include <cml/cml_check.h>
#include <cml/cml_rng.h>

cm_kind cm_step_kind(int step)
{
    return step >= 6 ? CM_CONV : CM_LOOKUP;
}

int cm_step_nd(int step)
{
    return step >= 2 && step <= 4 ? CM_NUM_D : 1;
}

int cm_step_pattern(int step, int k)
{
    return step == 1 ? CM_COEFFS : cm_d(k);
}

int cm_step_big(int step)
{
    return step == 5;
}

/* ------------------------------------------------------------ data */

void cm_make_table(float *t, size_t n, uint64_t seed, uint64_t stream)
{
    cml_rng rng;
    cml_rng_init(&rng, seed, stream);
    for (size_t i = 0; i < n; ++i) {
        int v = cml_rng_int(&rng, 1, CM_TABLE_MAX);  /* nonzero: a zero could hide a wrong index */
        t[i] = (float)(cml_rng_int(&rng, 0, 1) ? v : -v);
    }
}

unsigned cm_make_signs(uint64_t seed, uint64_t stream)
{
    cml_rng rng;
    cml_rng_init(&rng, seed, stream);
    return (unsigned)(cml_rng_next(&rng) >> 32);
}

void cm_make_image(float *a, size_t n, uint64_t seed, uint64_t stream)
{
    cml_fill_float(a, n, -1.0f, 1.0f, seed, stream);
}

void cm_make_filter(float *w, int radius, uint64_t seed, uint64_t stream)
{
    cml_fill_float(w, (size_t)cm_taps(radius), -1.0f, 1.0f, seed, stream);
}

/* ------------------------------------------------------------ the walk */

/* x of step 1's pass p in thread t. */
static int coeff_x(long long t, int p)
{
    return (int)((t + p) % 3) - 1;
}

/* s_k of the walk (constmem.h): -1 where bit k of signs is set. */
static double sign_of(unsigned signs, int k)
{
    return (signs >> k) & 1u ? -1.0 : 1.0;
}

double cm_walk_sum(const float *table, int big, int d, int t, int passes, unsigned signs)
{
    if (d == CM_COEFFS) {
        double sum = 0.0;
        for (int p = 0; p < passes; ++p)
            for (int k = 0; k < CONSTMEM_PASS_READS; ++k)
                sum += sign_of(signs, k) * table[32 * (p % 32) + k] * coeff_x(t, p);
        return sum;
    }
    int warp = t / 32, lane = t % 32;
    int mask = big ? CONSTMEM_BIG_MASK : CONSTMEM_SMALL_MASK, stride = big ? CONSTMEM_BIG_STRIDE : 1;
    double sum = 0.0;
    for (int p = 0; p < passes; ++p) {
        int base = (int)(((long long)warp * CONSTMEM_WARP_STEP + (long long)p * CONSTMEM_PASS_STEP) & mask);
        for (int k = 0; k < CONSTMEM_PASS_READS; ++k)
            sum += sign_of(signs, k) * table[base + lane % d + k * stride];
    }
    return sum;
}

/* How many different values v[0..n) holds, counting up to limit + 1. */
static int distinct_values(const float *v, int n, int limit)
{
    uint32_t seen[33];
    int count = 0;
    for (int i = 0; i < n && count <= limit; ++i) {
        uint32_t bits = cml_float_bits(v[i]);
        int found = 0;
        for (int k = 0; k < count && !found; ++k)
            found = seen[k] == bits;
        if (!found && count < 33)
            seen[count++] = bits;
    }
    return count;
}

/* The sum of one pass starting at entry s, for every s a pass can start
 * at (exact: integers), read k signed by bit k of signs: a thread's sum is
 * then passes lookups. Step 1 (coeffs): the signed sum of row q, for each q. */
static void pass_sums(const float *table, int big, int coeffs, unsigned signs, double *pass_sum)
{
    int mask = big ? CONSTMEM_BIG_MASK : CONSTMEM_SMALL_MASK, stride = big ? CONSTMEM_BIG_STRIDE : 1;
    int starts = coeffs ? 32 : mask + 32;
    for (int s0 = 0; s0 < starts; ++s0) {
        double sum = 0.0;
        for (int k = 0; k < CONSTMEM_PASS_READS; ++k)
            sum += sign_of(signs, k) * (coeffs ? table[32 * s0 + k] : table[s0 + k * stride]);
        pass_sum[s0] = sum;
    }
}

/* Thread t's sum from the pass sums. */
static double thread_sum(const double *pass_sum, int big, int d, int passes, int t)
{
    int mask = big ? CONSTMEM_BIG_MASK : CONSTMEM_SMALL_MASK;
    long long warp = t / 32;
    double want = 0.0;
    for (int p = 0; p < passes; ++p)
        want += d == CM_COEFFS
                    ? pass_sum[p % 32] * coeff_x(t, p)
                    : pass_sum[((warp * CONSTMEM_WARP_STEP + (long long)p * CONSTMEM_PASS_STEP) & mask) + (t % 32) % d];
    return want;
}

size_t cm_lookup_compare(const float *table, int big, int d, int passes, unsigned signs, const float *out,
                         int threads, cm_lookup_check *chk)
{
    memset(chk, 0, sizeof *chk);
    chk->d = d;
    chk->big = big;
    chk->passes = passes;
    chk->threads = threads;
    chk->signs = signs;
    chk->all_zero = 1;
    /* the walk's pass sums, and (to name signs that were ignored) those with every read added */
    static double pass_sum[CONSTMEM_BIG_MASK + 32], plain_sum[CONSTMEM_BIG_MASK + 32];
    int coeffs = d == CM_COEFFS;
    pass_sums(table, big, coeffs, signs, pass_sum);
    if (signs != 0)
        pass_sums(table, big, coeffs, 0, plain_sum);
    for (int t = 0; t < threads; ++t) {
        double want = thread_sum(pass_sum, big, d, passes, t);
        float got = out[t];
        if (got != 0.0f)
            chk->all_zero = 0;
        if ((double)got == want && !cm_is_poison(cml_float_bits(got)))
            continue;
        if (cm_is_poison(cml_float_bits(got)))
            chk->unwritten++;
        else if (signs != 0 && (double)got == thread_sum(plain_sum, big, d, passes, t))
            chk->unsigned_sums++;
        if (chk->reported < CM_MAX_REPORTED) {
            chk->first[chk->reported].t = t;
            chk->first[chk->reported].expected = want;
            chk->first[chk->reported].got = got;
            chk->reported++;
        }
        chk->wrong++;
    }
    /* In a full warp, lane l's sum depends only on l % d (step 1: on t % 3):
     * at most d (3) values. More means the lanes read more entries than that
     * (an index that depends on the lane). */
    int allowed = coeffs ? 3 : d;
    if (chk->wrong > 0 && allowed < 32)
        for (int w0 = 0; w0 + 32 <= threads; w0 += 32)
            chk->lane_warps += distinct_values(out + w0, 32, allowed) > allowed;
    chk->checked = (size_t)threads;
    return chk->wrong;
}

cm_lookup_cause cm_lookup_likely_cause(const cm_lookup_check *chk)
{
    if (chk->unwritten * 2 > chk->wrong)
        return CM_LK_UNWRITTEN;
    if (chk->all_zero)
        return CM_LK_EMPTY_TABLE;
    if (chk->lane_warps > 0)
        return CM_LK_LANE_ADDRESSES;
    if (chk->unsigned_sums * 2 > chk->wrong)
        return CM_LK_SIGNS_IGNORED;
    return CM_LK_OTHER;
}

const char *cm_lookup_cause_text(cm_lookup_cause cause)
{
    switch (cause) {
    case CM_LK_UNWRITTEN:
        return "never written: out still holds the NaN poison (a step not done yet, or threads that return "
               "before writing out[t])";
    case CM_LK_EMPTY_TABLE:
        return "every sum is 0: the kernel adds nothing, or the table in constant memory holds zeros. Fill a "
               "__constant__ array with cudaMemcpyToSymbol(c_table, src, bytes); cudaMemcpy cannot reach it, "
               "and its error must be returned, not ignored";
    case CM_LK_LANE_ADDRESSES:
        return "the lanes of a warp read more different entries than the pattern has: an index that depends on the lane "
               "(threadIdx.x): per-thread indexing of the constant table. Use base + lane % d + k * stride; for "
               "d = 1 every lane reads the same entry, one broadcast. Constant memory serves one address at a "
               "time, so per-thread addresses cost up to 32 times as much (step 2 measures it)";
    case CM_LK_SIGNS_IGNORED:
        return "the sums are the walk's with every read added: the signs are ignored. Read k of every pass is "
               "subtracted where bit k of job->signs is set (constmem.h): multiply read k by sg.s[k] (step 1: "
               "its sum acc[k], once at the end). The signs are drawn after constmem_upload_tables, so a sum made "
               "in the upload cannot know them";
    default:
        return "wrong entries summed: check the walk (base = walk_base(warp, p, mask) once per pass, entry "
               "base + lane % d + k * stride, passes passes) and that the kernel reads the right table";
    }
}

/* APPEND: cml_append.h, on this function's buf, len and used. */
#define APPEND(...) CML_APPEND(buf, len, used, __VA_ARGS__)

char *cm_lookup_describe(const cm_lookup_check *chk, char *buf, size_t len)
{
    size_t zero = 0, *used = &zero;
    buf[0] = '\0';
    if (chk->d == CM_COEFFS)
        APPEND("%zu of %zu sums wrong (step 1's coefficients, %d passes, signs 0x%08x)", chk->wrong,
               chk->checked, chk->passes, chk->signs);
    else
        APPEND("%zu of %zu sums wrong (d = %d, %s table, %d passes, signs 0x%08x)", chk->wrong, chk->checked,
               chk->d, chk->big ? "big" : "small", chk->passes, chk->signs);
    if (chk->unwritten > 0)
        APPEND(" (%zu never written)", chk->unwritten);
    if (chk->lane_warps > 0)
        APPEND(" (%zu warps with more than %d different sums)", chk->lane_warps, chk->d == CM_COEFFS ? 3 : chk->d);
    for (int k = 0; k < chk->reported; ++k)
        APPEND("%sout[%d] expected %.0f, got %.9g", k == 0 ? ": " : "; ", chk->first[k].t, chk->first[k].expected,
               (double)chk->first[k].got);
    APPEND(". Likely cause: %s", cm_lookup_cause_text(cm_lookup_likely_cause(chk)));
    return buf;
}

const char *cm_upload_error_text(void)
{
    return "a copy into constant memory failed. Likely cause: cudaMemcpy to a __constant__ variable's name "
           "(in host code it names a host-side placeholder, not device memory); copy with "
           "cudaMemcpyToSymbol(symbol, src, bytes)";
}

/* ------------------------------------------------------------ the convolution */

double cm_conv_pixel(const float *in, int width, int height, const float *w, int radius, int y, int x, double *mag)
{
    int taps = 2 * radius + 1;
    double sum = 0.0, m = 0.0;
    for (int a = 0; a < taps; ++a) {
        int yy = y + a - radius;
        if (yy < 0 || yy >= height)
            continue;
        for (int b = 0; b < taps; ++b) {
            int xx = x + b - radius;
            if (xx < 0 || xx >= width)
                continue;
            double term = (double)w[a * taps + b] * (double)in[(size_t)yy * width + xx];
            sum += term;
            m += fabs(term);
        }
    }
    *mag = m;
    return sum;
}

double cm_conv_tolerance(int taps, double mag)
{
    return 2.0 * taps * (FLT_EPSILON / 2) * mag + 1e-6;
}

/* Higham's gamma_n for unit roundoff u. */
static double gamma_n(int n, double u)
{
    return n * u / (1.0 - n * u);
}

double cm_conv_image_tolerance(const float *in, size_t pixels, const float *w, int radius)
{
    int taps = cm_taps(radius);
    double most_in = 0.0, sum_w = 0.0;
    for (size_t i = 0; i < pixels; ++i)
        most_in = fmax(most_in, fabs((double)in[i]));
    for (int k = 0; k < taps; ++k)
        sum_w += fabs((double)w[k]);
    return (gamma_n(taps, FLT_EPSILON / 2) + gamma_n(taps, DBL_EPSILON / 2)) * most_in * sum_w;
}

size_t cm_conv_compare(const float *in, int width, int height, const float *w, int radius, const float *out,
                       cm_conv_check *chk)
{
    return cm_conv_compare_within(in, width, height, w, radius, out, HUGE_VAL, chk);
}

size_t cm_conv_compare_within(const float *in, int width, int height, const float *w, int radius, const float *out,
                              double most, cm_conv_check *chk)
{
    memset(chk, 0, sizeof *chk);
    chk->width = width;
    chk->height = height;
    chk->radius = radius;
    int taps = cm_taps(radius), r = radius;
    /* Where the wrong pixels are says something only when the image has
     * pixels away from the place in question. */
    chk->all_left = width > 2 * r;
    chk->all_border = chk->all_tile_edge = width > 2 * r && height > 2 * r;
    for (int y = 0; y < height; ++y) {
        for (int x = 0; x < width; ++x) {
            double mag = 0.0;
            double want = cm_conv_pixel(in, width, height, w, radius, y, x, &mag);
            float got = out[(size_t)y * width + x];
            if (fabs((double)got - want) <= fmin(cm_conv_tolerance(taps, mag), most))
                continue;  /* (NaN fails the test and lands below) */
            if (cm_is_poison(cml_float_bits(got))) {
                chk->unwritten++;
            } else {
                int tx = x % CM_TILE_W, ty = y % CM_TILE_H;
                chk->all_left &= x < r;
                chk->all_border &= x < r || y < r || x >= width - r || y >= height - r;
                chk->all_tile_edge &= tx < r || ty < r || tx >= CM_TILE_W - r || ty >= CM_TILE_H - r;
            }
            if (chk->reported < CM_MAX_REPORTED) {
                chk->first[chk->reported].y = y;
                chk->first[chk->reported].x = x;
                chk->first[chk->reported].expected = want;
                chk->first[chk->reported].got = got;
                chk->reported++;
            }
            chk->wrong++;
        }
    }
    chk->checked = (size_t)width * (size_t)height;
    return chk->wrong;
}

cm_conv_cause cm_conv_likely_cause(const cm_conv_check *chk)
{
    if (chk->unwritten * 2 > chk->wrong || chk->unwritten == chk->wrong)
        return CM_CV_UNWRITTEN;
    if (chk->all_left)
        return CM_CV_LEFT_EDGE;
    if (chk->all_border)
        return CM_CV_BORDER;
    if (chk->all_tile_edge)
        return CM_CV_HALO;
    return CM_CV_SUM;
}

const char *cm_conv_cause_text(cm_conv_cause cause)
{
    switch (cause) {
    case CM_CV_UNWRITTEN:
        return "never written: out still holds the NaN poison there (a step not done yet, or tiles skipped: "
               "check the grid and the bounds check of the store)";
    case CM_CV_LEFT_EDGE:
        return "only pixels within r of the left edge are wrong: reading before the image at x = 0. A halo "
               "pixel with x < 0 is outside the image and counts as 0 (check x >= 0 as well as x < width); "
               "in[y * width + x] with x < 0 is the end of the row above, or before the array";
    case CM_CV_BORDER:
        return "only pixels within r of the image's border are wrong: pixels outside the image must count as "
               "0 (check x and y against 0 and against width and height on the load), and every halo pixel "
               "must be loaded";
    case CM_CV_HALO:
        return "only pixels within r of a tile's edge are wrong, inside the image too: the halo not loaded. "
               "The tile in shared memory needs r extra rows and columns on every side, loaded from the "
               "neighbouring tiles' pixels";
    default:
        return "wrong all over the image: the sum itself. Check that the filter loops cover 2r + 1 taps each "
               "way (the filter radius off by one is the classic), the weight index a * (2r + 1) + b, the "
               "filter's upload, and the __syncthreads() between loading the tile and reading it (a race; "
               CML_RACE_TOOL_HINT("constmem") ")";
    }
}

char *cm_conv_describe(const cm_conv_check *chk, char *buf, size_t len)
{
    size_t zero = 0, *used = &zero;
    buf[0] = '\0';
    APPEND("%zu of %zu pixels of out (%d x %d, radius %d) are wrong", chk->wrong, chk->checked, chk->width,
           chk->height, chk->radius);
    if (chk->unwritten > 0)
        APPEND(" (%zu never written)", chk->unwritten);
    for (int k = 0; k < chk->reported; ++k)
        APPEND("%sout(y %d, x %d) expected %.7g, got %.9g", k == 0 ? ": " : "; ", chk->first[k].y,
               chk->first[k].x, chk->first[k].expected, (double)chk->first[k].got);
    APPEND(". Likely cause: %s", cm_conv_cause_text(cm_conv_likely_cause(chk)));
    return buf;
}

/* ------------------------------------------------------------ device buffers */

cudaError_t cm_lookup_alloc(cm_lookup_buffers *b, int threads)
{
    return cm_lookup_alloc_slices(b, threads, CM_NUM_D);
}

cudaError_t cm_lookup_alloc_slices(cm_lookup_buffers *b, int threads, int slices)
{
    memset(b, 0, sizeof *b);
    b->threads = threads;
    b->slices = slices;
    cudaError_t err = cml_dbuf_alloc(&b->table, CONSTMEM_TABLE_ENTRIES * sizeof(float), CM_IN_GUARD_BITS);
    if (err == cudaSuccess)
        err = cml_dbuf_alloc(&b->big, CONSTMEM_BIG_ENTRIES * sizeof(float), CM_IN_GUARD_BITS);
    if (err == cudaSuccess)
        err = cml_dbuf_alloc(&b->out, (size_t)slices * (size_t)threads * sizeof(float), CM_OUT_GUARD_BITS);
    if (err != cudaSuccess)
        cm_lookup_free(b);
    return err;
}

void cm_lookup_free(cm_lookup_buffers *b)
{
    cml_dbuf_free(&b->table);
    cml_dbuf_free(&b->big);
    cml_dbuf_free(&b->out);
}

cudaError_t cm_lookup_upload_globals(cm_lookup_buffers *b, const float *table, const float *big)
{
    cudaError_t err = cudaMemcpy(b->table.ptr, table, b->table.bytes, cudaMemcpyHostToDevice);
    if (err == cudaSuccess)
        err = cudaMemcpy(b->big.ptr, big, b->big.bytes, cudaMemcpyHostToDevice);
    return err;
}

cudaError_t cm_lookup_poison(cm_lookup_buffers *b)
{
    return cml_dbuf_fill32(&b->out, CM_POISON_BITS);
}

/* The first buffer of bufs[0..n) whose guards were written, as a message. */
static cudaError_t check_guards(const cml_dbuf *const *bufs, const char *const *names, int n, const char *hint,
                                int *intact, char *msg, size_t len)
{
    int bad = -1;
    long long where = 0;
    cudaError_t err = cml_dbufs_check_guards(bufs, n, &bad, &where);
    *intact = bad < 0;
    if (err == cudaSuccess && bad >= 0)
        snprintf(msg, len, "the kernel writes outside %s, at byte offset %lld (%s): %s", names[bad], where,
                 where < 0 ? "before the first element" : "past the last element", hint);
    return err;
}

int cm_lookup_fetch(cm_lookup_buffers *b, float *host_out, cm_lookup_result *res)
{
    memset(res, 0, sizeof *res);
    static const char *const names[3] = {"out", "the table's global copy", "the big table's global copy"};
    const cml_dbuf *bufs[3] = {&b->out, &b->table, &b->big};
    cudaError_t err = cudaDeviceSynchronize();
    if (err == cudaSuccess)
        err = cudaMemcpy(host_out, b->out.ptr, b->out.bytes, cudaMemcpyDeviceToHost);
    if (err == cudaSuccess)
        err = check_guards(bufs, names, 3, "threads past the last one must return before writing out[t]",
                           &res->guards_intact, res->guard_msg, sizeof res->guard_msg);
    res->err = err;
    return err == cudaSuccess && res->guards_intact;
}

int cm_lookup_verify(cm_lookup_buffers *b, int step, int big, int passes, unsigned signs, const float *table,
                     const float *big_table, float *host_out, cm_lookup_result *res)
{
    cm_lookup_fetch(b, host_out, res);
    if (res->err != cudaSuccess)
        return 0;
    int ok = res->guards_intact;
    res->nd = cm_step_nd(step);
    for (int k = 0; k < res->nd; ++k)
        ok &= cm_lookup_compare(big ? big_table : table, big, cm_step_pattern(step, k), passes, signs,
                                host_out + (size_t)k * b->threads, b->threads, &res->check[k]) == 0;
    return ok;
}

cudaError_t cm_conv_alloc(cm_conv_buffers *b, int width, int height)
{
    memset(b, 0, sizeof *b);
    b->width = width;
    b->height = height;
    size_t bytes = (size_t)width * (size_t)height * sizeof(float);
    cudaError_t err = cml_dbuf_alloc(&b->in, bytes, CM_IN_GUARD_BITS);
    if (err == cudaSuccess)
        err = cml_dbuf_alloc(&b->out, bytes, CM_OUT_GUARD_BITS);
    if (err == cudaSuccess)
        err = cml_dbuf_alloc(&b->w, CONSTMEM_MAX_TAPS * sizeof(float), CM_IN_GUARD_BITS);
    if (err != cudaSuccess)
        cm_conv_free(b);
    return err;
}

void cm_conv_free(cm_conv_buffers *b)
{
    cml_dbuf_free(&b->in);
    cml_dbuf_free(&b->out);
    cml_dbuf_free(&b->w);
}

cudaError_t cm_conv_upload_image(cm_conv_buffers *b, const float *img)
{
    return cudaMemcpy(b->in.ptr, img, b->in.bytes, cudaMemcpyHostToDevice);
}

cudaError_t cm_conv_upload_filter_global(cm_conv_buffers *b, const float *w, int radius)
{
    return cudaMemcpy(b->w.ptr, w, (size_t)cm_taps(radius) * sizeof(float), cudaMemcpyHostToDevice);
}

cudaError_t cm_conv_poison(cm_conv_buffers *b)
{
    return cml_dbuf_fill32(&b->out, CM_POISON_BITS);
}

int cm_conv_fetch(cm_conv_buffers *b, float *host_out, cm_conv_result *res)
{
    memset(res, 0, sizeof *res);
    static const char *const names[3] = {"out", "in, its input", "the filter's global copy"};
    const cml_dbuf *bufs[3] = {&b->out, &b->in, &b->w};
    cudaError_t err = cudaDeviceSynchronize();
    if (err == cudaSuccess)
        err = cudaMemcpy(host_out, b->out.ptr, b->out.bytes, cudaMemcpyDeviceToHost);
    if (err == cudaSuccess)
        err = check_guards(bufs, names, 3,
                           "a partial tile without bounds checks (the tiles on the right and bottom edges hang "
                           "over the image)",
                           &res->guards_intact, res->guard_msg, sizeof res->guard_msg);
    res->err = err;
    return err == cudaSuccess && res->guards_intact;
}

int cm_conv_verify(cm_conv_buffers *b, const float *img, const float *w, int radius, float *host_out,
                   cm_conv_result *res)
{
    cm_conv_fetch(b, host_out, res);
    if (res->err != cudaSuccess)
        return 0;
    cm_conv_compare(img, b->width, b->height, w, radius, host_out, &res->check);
    return res->guards_intact && res->check.wrong == 0;
}
