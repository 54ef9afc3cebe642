#include "stencil_host.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cml/cml_append.h>
#include <cml/cml_check.h>
#include <cml/cml_rng.h>

int st_step_dims(int step)
{
    return step == 1 ? 1 : step == 2 ? 2 : step >= 3 && step <= STENCIL_NUM_STEPS ? 3 : 0;
}

int st_step_radius(int step)
{
    return step == 1 ? STENCIL_R : 1;
}

size_t st_points(st_grid g)
{
    return (size_t)g.nx * (size_t)g.ny * (size_t)g.nz;
}

int st_grid_fits(int step, st_grid g)
{
    if (g.nx < 1 || g.ny < 1 || g.nz < 1 || st_points(g) >= ((size_t)1 << 31))
        return 0;
    switch (st_step_dims(step)) {
    case 1: return g.ny == 1 && g.nz == 1;
    case 2: return g.nz == 1 && g.ny <= 1000000;
    case 3: return g.ny <= 65535 && g.nz <= 65535;
    default: return 0;
    }
}

void st_make_data(float *a, size_t n, uint64_t seed, uint64_t stream)
{
    cml_rng rng;
    cml_rng_init(&rng, seed, stream);
    for (size_t i = 0; i < n; ++i) {
        float v = cml_rng_float(&rng, 0.25f, 1.0f);
        a[i] = (cml_rng_next(&rng) >> 63) ? -v : v;
    }
}

/* n coefficients of magnitude 0.1 .. 1, either sign, pairwise >= 0.05 apart. */
static void distinct_coeffs(cml_rng *rng, float *c, int n)
{
    for (int i = 0; i < n; ++i) {
        int ok;
        do {
            float v = cml_rng_float(rng, 0.1f, 1.0f);
            c[i] = (cml_rng_next(rng) >> 63) ? -v : v;
            ok = 1;
            for (int k = 0; k < i; ++k)
                ok &= fabsf(c[i] - c[k]) >= 0.05f;
        } while (!ok);
    }
}

void st_make_coeffs(stencil_coeffs *c, uint64_t seed)
{
    cml_rng rng;
    cml_rng_init(&rng, seed, 0x57E4C11);
    distinct_coeffs(&rng, c->c1, 2 * STENCIL_R + 1);
    distinct_coeffs(&rng, &c->c2[0][0], 9);
    distinct_coeffs(&rng, c->c3, 7);
    float v = cml_rng_float(&rng, 0.25f, 1.0f);
    c->outside = (cml_rng_next(&rng) >> 63) ? -v : v;
}

/* in(x, y, z) as a double, the boundary value off the grid. */
static double in_at(const float *in, st_grid g, float outside, long long x, long long y, long long z)
{
    if (x < 0 || y < 0 || z < 0 || x >= g.nx || y >= g.ny || z >= g.nz)
        return outside;
    return in[((size_t)z * (size_t)g.ny + (size_t)y) * (size_t)g.nx + (size_t)x];
}

int st_terms(int step, const stencil_coeffs *c, const float *in, st_grid g, int x, int y, int z, double *w,
                 double *v)
{
    int n = 0;
    switch (st_step_dims(step)) {
    case 1:
        for (int k = -STENCIL_R; k <= STENCIL_R; ++k, ++n) {
            w[n] = c->c1[k + STENCIL_R];
            v[n] = in_at(in, g, c->outside, (long long)x + k, y, z);
        }
        break;
    case 2:
        for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx, ++n) {
                w[n] = c->c2[dy + 1][dx + 1];
                v[n] = in_at(in, g, c->outside, (long long)x + dx, (long long)y + dy, z);
            }
        break;
    default: {
        static const int off[7][3] = {{0, 0, 0}, {-1, 0, 0}, {1, 0, 0}, {0, -1, 0}, {0, 1, 0}, {0, 0, -1}, {0, 0, 1}};
        for (; n < 7; ++n) {
            w[n] = c->c3[n];
            v[n] = in_at(in, g, c->outside, (long long)x + off[n][0], (long long)y + off[n][1], (long long)z + off[n][2]);
        }
    }
    }
    return n;
}

double st_cpu_point(int step, const stencil_coeffs *c, const float *in, st_grid g, int x, int y, int z,
                    double *abs_sum)
{
    double w[9], v[9], sum = 0.0, mag = 0.0;
    int n = st_terms(step, c, in, g, x, y, z, w, v);
    for (int k = 0; k < n; ++k) {
        sum += w[k] * v[k];
        mag += fabs(w[k] * v[k]);
    }
    if (abs_sum != NULL)
        *abs_sum = mag;
    return sum;
}

/* Within the float rounding of an n-term sum of magnitude mag. */
static int close_enough(double got, double want, double mag, int n)
{
    return fabs(got - want) <= (n + 1) * ldexp(mag, -24) + 1e-30;
}

/* Where a point lies: within the radius of the grid's start or end on
 * any axis of the step, or next to a tile border inside the grid. */
static void position(const st_check *chk, int x, int y, int z, int *near_start, int *near_end, int *tile_edge)
{
    int dims = st_step_dims(chk->step), r = st_step_radius(chk->step);
    st_grid g = chk->grid;
    *near_start = x < r || (dims >= 2 && y < r) || (dims == 3 && z < r);
    *near_end = x >= g.nx - r || (dims >= 2 && y >= g.ny - r) || (dims == 3 && z >= g.nz - r);
    int xm = x % 32, ym = y % 8;
    *tile_edge = xm < r || xm >= 32 - r || (dims >= 2 && (ym < r || ym >= 8 - r));
}

void st_check_begin(st_check *chk, int step, st_grid g)
{
    memset(chk, 0, sizeof *chk);
    chk->step = step;
    chk->grid = g;
}

void st_check_wrong(st_check *chk, st_wrong what, int x, int y, int z, double expected, float got)
{
    if (what == ST_WRONG_UNWRITTEN) {
        chk->unwritten++;
    } else if (what == ST_WRONG_OUTSIDE_READ) {
        chk->outside_reads++;
    } else if (what == ST_WRONG_ROTATION) {
        chk->rotation++;
    } else {
        int s, e, t;
        position(chk, x, y, z, &s, &e, &t);
        chk->at_edge += s || e;
        chk->at_end += e && !s;
        chk->at_tile_edge += !s && !e && t;
    }
    if (chk->reported < ST_MAX_REPORTED) {
        st_mismatch *m = &chk->first[chk->reported++];
        m->x = x;
        m->y = y;
        m->z = z;
        m->expected = expected;
        m->got = got;
    }
    chk->wrong++;
}

size_t st_compare(int step, const stencil_coeffs *c, const float *in, const float *out, st_grid g, st_check *chk)
{
    st_check_begin(chk, step, g);
    size_t i = 0;
    for (int z = 0; z < g.nz; ++z)
        for (int y = 0; y < g.ny; ++y)
            for (int x = 0; x < g.nx; ++x, ++i) {
                double w[9], v[9], want = 0.0, mag = 0.0;
                int n = st_terms(step, c, in, g, x, y, z, w, v);
                for (int k = 0; k < n; ++k) {
                    want += w[k] * v[k];
                    mag += fabs(w[k] * v[k]);
                }
                float got = out[i];
                if (close_enough(got, want, mag, n))
                    continue;
                st_wrong what = ST_WRONG_OTHER;
                if (cml_float_bits(got) == ST_POISON_BITS)
                    what = ST_WRONG_UNWRITTEN;
                else if (isfinite(got) && fabs(got - want) > 1000.0)
                    what = ST_WRONG_OUTSIDE_READ; /* |data| <= 1: only the 2^20 around in gets this far */
                else if (n == 7 && close_enough(got, want + w[5] * (v[0] - v[5]), mag + fabs(w[5] * v[0]), n))
                    what = ST_WRONG_ROTATION;     /* the z - 1 term took the point's own value */
                st_check_wrong(chk, what, x, y, z, want, got);
            }
    chk->checked = i;
    return chk->wrong;
}

st_cause st_likely_cause(const st_check *chk)
{
    if (chk->wrong == 0)
        return ST_CAUSE_OTHER;
    if (chk->outside_reads > 0)
        return ST_CAUSE_OUTSIDE_READ;  /* cannot happen by chance: names the cause alone */
    if (2 * chk->unwritten >= chk->wrong)
        return ST_CAUSE_UNWRITTEN;
    if (2 * chk->rotation > chk->wrong)
        return ST_CAUSE_ROTATION;
    size_t others = chk->wrong - chk->unwritten - chk->rotation;
    if (others == 0)
        return ST_CAUSE_UNWRITTEN;
    if (chk->at_end == others)
        return ST_CAUSE_GRID_END;
    if (chk->at_edge == others)
        return ST_CAUSE_GRID_EDGE;
    if (chk->at_tile_edge > 0 && chk->at_edge + chk->at_tile_edge == others)
        return ST_CAUSE_TILE_EDGE;
    return ST_CAUSE_OTHER;
}

const char *st_cause_text(st_cause cause)
{
    switch (cause) {
    case ST_CAUSE_OUTSIDE_READ:
        return "points hold NaN or about 2^20 times a coefficient, what lies just outside in: the kernel reads "
               "before the array (the first tile's halo, in[-R] .. in[-1] in 1D, the row or plane above the "
               "grid in 2D and 3D) or past its end. Cells outside the grid hold c.outside: check both ends "
               "before loading";
    case ST_CAUSE_UNWRITTEN:
        return "never written: out still holds the NaN poison there (a step not done yet, points skipped, or "
               "a grid that does not cover the whole array)";
    case ST_CAUSE_ROTATION:
        return "the z - 1 neighbour is the point's own value: the registers rotate in the wrong order (below "
               "takes here before here takes above, then above takes ahead)";
    case ST_CAUSE_GRID_END:
        return "every wrong point lies within the stencil's radius of the grid's far end: the cells just past "
               "the end did not hold the boundary value in the tile. On the last, partial tile store c.outside "
               "for cells outside the grid (store it, do not skip the cell), and never return before the "
               "barrier: a thread whose point lies past the end still loads its share of the tile";
    case ST_CAUSE_GRID_EDGE:
        return "every wrong point lies within the stencil's radius of the grid's edge: the halo cells outside "
               "the grid must hold c.outside in the tile (store it, do not skip the cell), on the first tile "
               "and on the last, partial one";
    case ST_CAUSE_TILE_EDGE:
        return "every wrong point lies next to a tile border inside the grid: halo cells were not loaded (the "
               "halo loaded by too few threads, or one side of the ring missing)";
    default:
        return "a race (no __syncthreads() between loading a tile and reading it, or between one plane and "
               "the next) or a wrong index; " CML_RACE_TOOL_HINT("stencil");
    }
}

/* APPEND: cml_append.h, on this function's buf, len and used. */
#define APPEND(...) CML_APPEND(buf, len, used, __VA_ARGS__)

char *st_describe(const st_check *chk, char *buf, size_t len)
{
    size_t zero = 0, *used = &zero;
    buf[0] = '\0';
    APPEND("%zu of %zu points of out are wrong", chk->wrong, chk->checked);
    const size_t counts[] = {chk->outside_reads, chk->unwritten, chk->rotation, chk->at_edge, chk->at_tile_edge};
    static const char *what[] = {"read outside in", "never written", "with z - 1 = the point",
                                 "at the grid's edge", "at tile borders"};
    int first = 1;
    for (int k = 0; k < 5; ++k) {
        if (counts[k] == 0)
            continue;
        APPEND("%s%zu %s", first ? " (" : ", ", counts[k], what[k]);
        first = 0;
    }
    if (!first)
        APPEND(")");
    int dims = st_step_dims(chk->step);
    for (int k = 0; k < chk->reported; ++k) {
        const st_mismatch *m = &chk->first[k];
        APPEND("%s", k == 0 ? ": " : "; ");
        if (dims == 1)
            APPEND("out[%d]", m->x);
        else if (dims == 2)
            APPEND("out(x %d, y %d)", m->x, m->y);
        else
            APPEND("out(x %d, y %d, z %d)", m->x, m->y, m->z);
        APPEND(" expected %.9g, got %.9g", m->expected, (double)m->got);
    }
    APPEND(". Likely cause: %s", st_cause_text(st_likely_cause(chk)));
    return buf;
}

cudaError_t st_buffers_alloc(st_buffers *b, size_t points)
{
    memset(b, 0, sizeof *b);
    b->points = points;
    size_t bytes = points * sizeof(float);
    cudaError_t err;
#ifdef CML_CPU_BACKEND
    /* The CPU path's cudaMalloc ends each allocation at a guard page and puts
     * one before it; an allocation of whole pages starts right after the
     * first. So in[0] is the first byte that may be read, and in[-1] faults
     * (the bounds check names the kernel and the line). */
    size_t room = (bytes + 4095) / 4096 * 4096;
    err = cudaMalloc(&b->in.base, room);
    if (err == cudaSuccess) {
        b->in.ptr = b->in.base;
        b->in.bytes = bytes;
        b->in.guard = ST_IN_GUARD_BITS;
        if (room > bytes)
            err = cml_fill32_async((char *)b->in.ptr + bytes, (room - bytes) / 4, ST_IN_GUARD_BITS, 0);
    } else {
        b->in.base = NULL;
    }
#else
    err = cml_dbuf_alloc(&b->in, bytes, ST_IN_GUARD_BITS);
#endif
    if (err == cudaSuccess)
        err = cml_dbuf_alloc(&b->out, bytes, ST_OUT_GUARD_BITS);
    if (err != cudaSuccess)
        st_buffers_free(b);
    return err;
}

void st_buffers_free(st_buffers *b)
{
    cml_dbuf_free(&b->in);
    cml_dbuf_free(&b->out);
}

cudaError_t st_upload(st_buffers *b, const float *host, size_t n)
{
    if (n > b->points)
        return cudaErrorInvalidValue;
    cudaError_t err = cudaSuccess;
    if (n < b->points)
        err = cml_dbuf_fill32(&b->in, ST_IN_GUARD_BITS);
    if (err == cudaSuccess)
        err = cudaMemcpy(b->in.ptr, host, n * sizeof(float), cudaMemcpyHostToDevice);
    return err;
}
