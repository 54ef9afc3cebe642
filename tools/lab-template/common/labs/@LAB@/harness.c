/* Lab @LAB@'s harness for the grader's kit-only checker (grader/harness/
 * harness.h; docs/grading.md section 8): linked with the student's kernels
 * and nothing of the kit's checking code. Case a is n, b is the scale's
 * float bits. Output: out and a guard zone of SC_GUARD words each side
 * ((n + 2 * SC_GUARD) floats), all poisoned (0xff) before every launch: a
 * write past either end of out lands in a guard. The lab's spec
 * (labs/@LAB@/spec.c) makes the cases and judges the output. */
#include "harness.h"
#include "@STEM@.h"

#include <string.h>

enum { SC_GUARD = 64 };

typedef struct {
    float *in, *out_base;
    size_t n;
    float a;
} sc_state;

static size_t sc_out_bytes(const sc_state *s) { return (s->n + 2 * SC_GUARD) * 4; }

static cudaError_t sc_setup(const hn_case *c, void **st)
{
    sc_state *s = (sc_state *)calloc(1, sizeof *s);
    if (!(*st = s))
        return cudaErrorMemoryAllocation;
    s->n = (size_t)c->a;
    uint32_t bits = (uint32_t)c->b;
    memcpy(&s->a, &bits, 4);
    if (s->n != c->count || s->n == 0)
        return cudaErrorInvalidValue;
    cudaError_t err = cudaMalloc((void **)&s->in, s->n * 4);
    if (err == cudaSuccess)
        err = cudaMalloc((void **)&s->out_base, sc_out_bytes(s));
    if (err == cudaSuccess)
        err = cudaMemcpy(s->in, c->data, s->n * 4, cudaMemcpyHostToDevice);
    return err;
}

static cudaError_t sc_poison(void *st, const hn_case *c)
{
    sc_state *s = (sc_state *)st;
    (void)c;
    return cudaMemset(s->out_base, 0xff, sc_out_bytes(s));
}

static cudaError_t sc_launch(void *st, const hn_case *c)
{
    sc_state *s = (sc_state *)st;
    return @STEM@_step((int)c->step, s->in, s->out_base + SC_GUARD, s->n, s->a);
}

static cudaError_t sc_fetch(void *st, const hn_case *c, void **out, size_t *out_bytes, void *in_after)
{
    sc_state *s = (sc_state *)st;
    (void)c;
    if (!(*out = malloc(sc_out_bytes(s))))
        return cudaErrorMemoryAllocation;
    *out_bytes = sc_out_bytes(s);
    cudaError_t err = cudaMemcpy(*out, s->out_base, sc_out_bytes(s), cudaMemcpyDeviceToHost);
    return err == cudaSuccess ? cudaMemcpy(in_after, s->in, s->n * 4, cudaMemcpyDeviceToHost) : err;
}

static void sc_teardown(void *st)
{
    sc_state *s = (sc_state *)st;
    cudaFree(s->in);
    cudaFree(s->out_base);
    free(s);
}

/* no timed cases (the template's rubric has no [performance]): no input or output to sample */
static const hn_lab lab = {sc_setup, sc_poison, sc_launch, sc_fetch, sc_teardown, NULL, NULL, NULL};

int main(int argc, char **argv) { return hn_main(argc, argv, &lab); }
