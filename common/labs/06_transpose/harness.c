/* Lab 06's harness (harness.h): case a is rows, b is cols. Output: the
 * whole out array (rows * cols floats), poisoned (0xff) before every launch.
 * The cases and their verdicts: the lab's spec, labs/06_transpose/spec.c. */
#include "harness.h"
#include "transpose.h"

typedef struct {
    void *in, *out;
    size_t bytes;
} tr_state;

static cudaError_t tr_setup(const hn_case *c, void **st)
{
    tr_state *s = (tr_state *)calloc(1, sizeof *s);
    if (!(*st = s))
        return cudaErrorMemoryAllocation;
    s->bytes = (size_t)c->count * 4;
    if (c->a * c->b != c->count)
        return cudaErrorInvalidValue;
    cudaError_t err = cudaMalloc(&s->in, s->bytes ? s->bytes : 4);
    if (err == cudaSuccess)
        err = cudaMalloc(&s->out, s->bytes ? s->bytes : 4);
    if (err == cudaSuccess)
        err = cudaMemcpy(s->in, c->data, s->bytes, cudaMemcpyHostToDevice);
    return err;
}

static cudaError_t tr_poison(void *st, const hn_case *c)
{
    (void)c;
    return cudaMemset(((tr_state *)st)->out, 0xff, ((tr_state *)st)->bytes);
}

static cudaError_t tr_launch(void *st, const hn_case *c)
{
    tr_state *s = (tr_state *)st;
    return transpose_step((int)c->step, (const float *)s->in, (float *)s->out, (int)c->a, (int)c->b);
}

static cudaError_t tr_fetch(void *st, const hn_case *c, void **out, size_t *out_bytes, void *in_after)
{
    tr_state *s = (tr_state *)st;
    (void)c;
    if (!(*out = malloc(s->bytes ? s->bytes : 1)))
        return cudaErrorMemoryAllocation;
    *out_bytes = s->bytes;
    cudaError_t err = cudaMemcpy(*out, s->out, s->bytes, cudaMemcpyDeviceToHost);
    return err == cudaSuccess ? cudaMemcpy(in_after, s->in, s->bytes, cudaMemcpyDeviceToHost) : err;
}

static void tr_teardown(void *st)
{
    tr_state *s = (tr_state *)st;
    cudaFree(s->in);
    cudaFree(s->out);
    free(s);
}

static void *tr_input(void *st, size_t *bytes)
{
    *bytes = ((tr_state *)st)->bytes;
    return ((tr_state *)st)->in;
}

static void *tr_output(void *st, size_t *bytes)
{
    *bytes = ((tr_state *)st)->bytes;
    return ((tr_state *)st)->out;
}

static const hn_lab lab = {tr_setup, tr_poison, tr_launch, tr_fetch, tr_teardown, tr_input, tr_output, NULL};

int main(int argc, char **argv) { return hn_main(argc, argv, &lab); }
