/* Lab 07's harness (harness.h). Case kind 0 (copy) or 1 (scale-add), a = n,
 * b = the offset off (low byte) and the factor's float bits (high 32 bits);
 * data: x, off + n words, then (scale-add) y alike. x and y are separate
 * allocations, so that x + off, y + off and out + off share their offset
 * from a 16-byte boundary (the contract of vectorized.h). Output:
 * VEC_GUARD words, out's n words, VEC_GUARD words, all poisoned (0xff)
 * before every launch. The cases and their verdicts: the lab's spec,
 * labs/07_vectorized/spec.c. */
#include "harness.h"
#include "vectorized.h"

enum { VX_GUARD = 64 }; /* vectorized_host.h's VEC_GUARD (the harness links nothing of the kit's checks) */

typedef struct {
    uint32_t *x, *y, *out;      /* x and y: words = off + n each; out: off + 2 VX_GUARD + n */
    size_t n, words;
    unsigned off;               /* the offset the step runs at */
    int saxpy;
} vx_state;

static size_t vx_out_words(const vx_state *s) { return 2 * VX_GUARD + s->n; }

static cudaError_t vx_setup(const hn_case *c, void **st)
{
    vx_state *s = (vx_state *)calloc(1, sizeof *s);
    if (!(*st = s))
        return cudaErrorMemoryAllocation;
    unsigned off = (unsigned)(c->b & 0xffu);
    s->n = (size_t)c->a;
    s->saxpy = c->kind == 1;
    s->off = c->step >= 4 ? off : 0;  /* steps 1-3: 16-byte aligned arrays */
    s->words = off + s->n;
    if (off > 3 || c->kind > 1 || c->count != (uint64_t)(s->saxpy ? 2 : 1) * s->words)
        return cudaErrorInvalidValue;
    size_t bytes = s->words ? s->words * 4 : 4;
    cudaError_t err = cudaMalloc((void **)&s->x, bytes);
    if (err == cudaSuccess && s->saxpy)
        err = cudaMalloc((void **)&s->y, bytes);
    if (err == cudaSuccess)
        err = cudaMalloc((void **)&s->out, (off + vx_out_words(s)) * 4);
    if (err == cudaSuccess)
        err = cudaMemcpy(s->x, c->data, s->words * 4, cudaMemcpyHostToDevice);
    if (err == cudaSuccess && s->saxpy)
        err = cudaMemcpy(s->y, (const uint32_t *)c->data + s->words, s->words * 4, cudaMemcpyHostToDevice);
    return err;
}

static cudaError_t vx_poison(void *st, const hn_case *c)
{
    vx_state *s = (vx_state *)st;
    (void)c;
    return cudaMemset(s->out, 0xff, (s->off + vx_out_words(s)) * 4);
}

static cudaError_t vx_launch(void *st, const hn_case *c)
{
    vx_state *s = (vx_state *)st;
    float a = 0.0f;
    uint32_t bits = (uint32_t)(c->b >> 32);
    if (s->saxpy)
        memcpy(&a, &bits, 4);
    return vectorized_step((int)c->step, s->x + s->off, s->saxpy ? s->y + s->off : NULL,
                           s->out + s->off + VX_GUARD, s->n, a);
}

static cudaError_t vx_fetch(void *st, const hn_case *c, void **out, size_t *out_bytes, void *in_after)
{
    vx_state *s = (vx_state *)st;
    (void)c;
    *out_bytes = vx_out_words(s) * 4;
    if (!(*out = malloc(*out_bytes)))
        return cudaErrorMemoryAllocation;
    cudaError_t err = cudaMemcpy(*out, s->out + s->off, *out_bytes, cudaMemcpyDeviceToHost);
    if (err == cudaSuccess)
        err = cudaMemcpy(in_after, s->x, s->words * 4, cudaMemcpyDeviceToHost);
    if (err == cudaSuccess && s->saxpy)
        err = cudaMemcpy((uint32_t *)in_after + s->words, s->y, s->words * 4, cudaMemcpyDeviceToHost);
    return err;
}

static void vx_teardown(void *st)
{
    vx_state *s = (vx_state *)st;
    cudaFree(s->x);
    cudaFree(s->y);
    cudaFree(s->out);
    free(s);
}

/* Timed cases: x changes between repeats (every output depends on it), and
 * out's words are sampled. */
static void *vx_input(void *st, size_t *bytes)
{
    vx_state *s = (vx_state *)st;
    *bytes = s->words * 4;
    return s->x;
}

static void *vx_output(void *st, size_t *bytes)
{
    vx_state *s = (vx_state *)st;
    *bytes = vx_out_words(s) * 4;
    return s->out + s->off;
}

static const hn_lab lab = {vx_setup, vx_poison, vx_launch, vx_fetch, vx_teardown, vx_input, vx_output, NULL};

int main(int argc, char **argv) { return hn_main(argc, argv, &lab); }
