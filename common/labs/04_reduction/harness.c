/* Lab 04's harness (harness.h): kind 0 sums ints, kind 1 floats; case a
 * is n. Output: out[0] (4 bytes). out and scratch are poisoned (0xff)
 * before every launch; the input is read back after it. The cases and
 * their verdicts: the lab's spec, labs/04_reduction/spec.c. */
#include "harness.h"
#include "reduction.h"

typedef struct {
    void *in, *out, *scratch;
    size_t n, scratch_bytes;
} red_state;

static cudaError_t red_setup(const hn_case *c, void **st)
{
    red_state *s = (red_state *)calloc(1, sizeof *s);
    if (!(*st = s))
        return cudaErrorMemoryAllocation;
    s->n = (size_t)c->a;
    s->scratch_bytes = REDUCTION_SCRATCH_ELEMS(s->n) * 4;
    if (s->n > c->count)
        return cudaErrorInvalidValue;
    cudaError_t err = cudaMalloc(&s->in, s->n ? s->n * 4 : 4);
    if (err == cudaSuccess)
        err = cudaMalloc(&s->out, 4);
    if (err == cudaSuccess)
        err = cudaMalloc(&s->scratch, s->scratch_bytes);
    if (err == cudaSuccess)
        err = cudaMemcpy(s->in, c->data, s->n * 4, cudaMemcpyHostToDevice);
    return err;
}

static cudaError_t red_poison(void *st, const hn_case *c)
{
    red_state *s = (red_state *)st;
    (void)c;
    cudaError_t err = cudaMemset(s->out, 0xff, 4);
    return err == cudaSuccess ? cudaMemset(s->scratch, 0xff, s->scratch_bytes) : err;
}

static cudaError_t red_launch(void *st, const hn_case *c)
{
    red_state *s = (red_state *)st;
    return c->kind == 0 ? reduce_sum_int((int)c->step, (const int *)s->in, s->n, (int *)s->out, (int *)s->scratch)
                        : reduce_sum_float((int)c->step, (const float *)s->in, s->n, (float *)s->out,
                                           (float *)s->scratch);
}

static cudaError_t red_fetch(void *st, const hn_case *c, void **out, size_t *out_bytes, void *in_after)
{
    red_state *s = (red_state *)st;
    if (!(*out = malloc(4)))
        return cudaErrorMemoryAllocation;
    *out_bytes = 4;
    cudaError_t err = cudaMemcpy(*out, s->out, 4, cudaMemcpyDeviceToHost);
    return err == cudaSuccess ? cudaMemcpy(in_after, s->in, (size_t)c->count * 4, cudaMemcpyDeviceToHost) : err;
}

static void red_teardown(void *st)
{
    red_state *s = (red_state *)st;
    cudaFree(s->in);
    cudaFree(s->out);
    cudaFree(s->scratch);
    free(s);
}

static void *red_input(void *st, size_t *bytes)
{
    *bytes = ((red_state *)st)->n * 4;
    return ((red_state *)st)->in;
}

static void *red_output(void *st, size_t *bytes)
{
    *bytes = 4;
    return ((red_state *)st)->out;
}

static const hn_lab lab = {red_setup, red_poison, red_launch, red_fetch, red_teardown, red_input, red_output, NULL};

int main(int argc, char **argv) { return hn_main(argc, argv, &lab); }
