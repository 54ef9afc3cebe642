/* Lab 05's harness (harness.h). Case a = nx, b = ny + nz * 2^32; the data
 * starts with the coefficients (ST_HEAD words: stencil_coeffs as stencil.h
 * lays it out, c1, c2, c3, outside) and the grid (nx * ny * nz floats)
 * follows.
 *
 *   kind 0  stencil_step(step, ...): out = the grid's output with ST_GUARD
 *           words before and after it (poisoned, they must stay so).
 *   kind 1  stencil_step with a grid it must refuse: out = one word, the
 *           error it returned (the case's own failure is not a CUDA error).
 *
 * in lies between two pads of ST_PAD NaN words (ST_PAD_WORD, a NaN other
 * than the poison): a halo read before the array or past its end gives
 * NaN, never a plausible value, and the judge can tell it from a point
 * never written.
 * out and its guards are poisoned (0xff) before every launch; the grid and
 * the coefficients (the struct the student's code was given) are read
 * back after it. A filled (timed) case takes its coefficients from the
 * first ST_HEAD words of the filled data. The cases and their verdicts:
 * the lab's spec, labs/05_stencil/spec.c. */
#include "harness.h"
#include "stencil.h"

#define ST_HEAD ((uint64_t)(sizeof(stencil_coeffs) / sizeof(float)))
#define ST_GUARD 64
#define ST_PAD 64
#define ST_PAD_WORD 0x7fc0bad0u

typedef struct {
    stencil_coeffs coeffs;  /* the struct whose address the launch passes */
    float *in_base, *out_base;
    size_t n;
    int nx, ny, nz;
    uint32_t refused;       /* kind 1: the launcher's answer */
} st_state;

static cudaError_t st_setup(const hn_case *c, void **st)
{
    st_state *s = (st_state *)calloc(1, sizeof *s);
    if (!(*st = s))
        return cudaErrorMemoryAllocation;
    if (c->kind > 1 || c->count < ST_HEAD || c->a > 0x7fffffffu || (c->b & 0xffffffffu) > 0x7fffffffu ||
        (c->b >> 32) > 0x7fffffffu)
        return cudaErrorInvalidValue;
    s->nx = (int)c->a;
    s->ny = (int)(c->b & 0xffffffffu);
    s->nz = (int)(c->b >> 32);
    s->n = (size_t)(c->count - ST_HEAD);
    if (c->kind == 0 && (uint64_t)s->nx * (uint64_t)s->ny * (uint64_t)s->nz != s->n)
        return cudaErrorInvalidValue;
    memcpy(&s->coeffs, c->data, sizeof s->coeffs);
    cudaError_t err = cudaMalloc((void **)&s->in_base, (s->n + 2 * ST_PAD) * sizeof(float));
    if (err == cudaSuccess)
        err = cudaMalloc((void **)&s->out_base, (s->n + 2 * ST_GUARD) * sizeof(float));
    uint32_t pad[ST_PAD];
    for (int k = 0; k < ST_PAD; ++k)
        pad[k] = ST_PAD_WORD;
    if (err == cudaSuccess)
        err = cudaMemcpy(s->in_base, pad, sizeof pad, cudaMemcpyHostToDevice);
    if (err == cudaSuccess)
        err = cudaMemcpy(s->in_base + ST_PAD + s->n, pad, sizeof pad, cudaMemcpyHostToDevice);
    if (err == cudaSuccess)
        err = cudaMemcpy(s->in_base + ST_PAD, (const float *)c->data + ST_HEAD, s->n * sizeof(float),
                         cudaMemcpyHostToDevice);
    return err;
}

static cudaError_t st_poison(void *st, const hn_case *c)
{
    st_state *s = (st_state *)st;
    (void)c;
    s->refused = 0xffffffffu;
    return cudaMemset(s->out_base, 0xff, (s->n + 2 * ST_GUARD) * sizeof(float));
}

static cudaError_t st_launch(void *st, const hn_case *c)
{
    st_state *s = (st_state *)st;
    cudaError_t err = stencil_step((int)c->step, s->in_base + ST_PAD, s->out_base + ST_GUARD, s->nx, s->ny, s->nz,
                                   &s->coeffs);
    if (c->kind == 0)
        return err;
    s->refused = (uint32_t)err;
    return cudaSuccess;
}

static cudaError_t st_fetch(void *st, const hn_case *c, void **out, size_t *out_bytes, void *in_after)
{
    st_state *s = (st_state *)st;
    size_t bytes = c->kind == 0 ? (s->n + 2 * ST_GUARD) * sizeof(float) : 4;
    if (!(*out = malloc(bytes)))
        return cudaErrorMemoryAllocation;
    *out_bytes = bytes;
    cudaError_t err = cudaSuccess;
    if (c->kind == 0)
        err = cudaMemcpy(*out, s->out_base, bytes, cudaMemcpyDeviceToHost);
    else
        memcpy(*out, &s->refused, 4);
    memcpy(in_after, &s->coeffs, sizeof s->coeffs);
    if (err == cudaSuccess)
        err = cudaMemcpy((float *)in_after + ST_HEAD, s->in_base + ST_PAD, s->n * sizeof(float),
                         cudaMemcpyDeviceToHost);
    return err;
}

static void st_teardown(void *st)
{
    st_state *s = (st_state *)st;
    cudaFree(s->in_base);
    cudaFree(s->out_base);
    free(s);
}

static void *st_input(void *st, size_t *bytes)
{
    st_state *s = (st_state *)st;
    *bytes = s->n * sizeof(float);
    return s->in_base + ST_PAD;
}

static void *st_output(void *st, size_t *bytes)
{
    st_state *s = (st_state *)st;
    *bytes = s->n * sizeof(float);
    return s->out_base + ST_GUARD;
}

static const hn_lab lab = {st_setup, st_poison, st_launch, st_fetch, st_teardown, st_input, st_output, NULL};

int main(int argc, char **argv) { return hn_main(argc, argv, &lab); }
