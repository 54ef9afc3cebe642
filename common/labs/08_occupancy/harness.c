/* Lab 08's harness for the grader's kit-only checker (grader/harness/
 * harness.h; docs/grading.md section 8): linked with the student's kernels
 * and nothing of the kit's checking code. Case a is n, b the degree; its
 * data are x then coef. Output: y and a guard zone of OC_GUARD words each
 * side ((n + 2 * OC_GUARD) floats), all poisoned (0xff) before every
 * launch: a write past either end of y lands in a guard. The lab's spec
 * (labs/08_occupancy/spec.c) makes the cases and judges the output. */
#include "harness.h"
#include "occupancy.h"

#include <string.h>

enum { OC_GUARD = 64 };

typedef struct {
    float *x, *coef, *y_base;
    size_t n;
    int degree;
} oc_state;

static size_t oc_out_bytes(const oc_state *s) { return (s->n + 2 * OC_GUARD) * 4; }
static size_t oc_in_bytes(const oc_state *s) { return (s->n + (size_t)s->degree + 1) * 4; }

static cudaError_t oc_setup(const hn_case *c, void **st)
{
    oc_state *s = (oc_state *)calloc(1, sizeof *s);
    if (!(*st = s))
        return cudaErrorMemoryAllocation;
    s->n = (size_t)c->a;
    s->degree = (int)c->b;
    if (c->b > OCC_MAX_DEGREE || c->count != s->n + c->b + 1)
        return cudaErrorInvalidValue;
    /* x and coef in one allocation, as the case holds them (x at least one float: n may be 0) */
    cudaError_t err = cudaMalloc((void **)&s->x, oc_in_bytes(s) + 4);
    if (err == cudaSuccess)
        err = cudaMalloc((void **)&s->y_base, oc_out_bytes(s));
    if (err == cudaSuccess)
        err = cudaMemcpy(s->x, c->data, oc_in_bytes(s), cudaMemcpyHostToDevice);
    s->coef = s->x ? s->x + s->n : NULL;
    return err;
}

static cudaError_t oc_poison(void *st, const hn_case *c)
{
    oc_state *s = (oc_state *)st;
    (void)c;
    return cudaMemset(s->y_base, 0xff, oc_out_bytes(s));
}

static cudaError_t oc_launch(void *st, const hn_case *c)
{
    oc_state *s = (oc_state *)st;
    return occupancy_step((int)c->step, s->x, s->y_base + OC_GUARD, (int)s->n, s->coef, s->degree);
}

static cudaError_t oc_fetch(void *st, const hn_case *c, void **out, size_t *out_bytes, void *in_after)
{
    oc_state *s = (oc_state *)st;
    (void)c;
    if (!(*out = malloc(oc_out_bytes(s))))
        return cudaErrorMemoryAllocation;
    *out_bytes = oc_out_bytes(s);
    cudaError_t err = cudaMemcpy(*out, s->y_base, oc_out_bytes(s), cudaMemcpyDeviceToHost);
    return err == cudaSuccess ? cudaMemcpy(in_after, s->x, oc_in_bytes(s), cudaMemcpyDeviceToHost) : err;
}

static void oc_teardown(void *st)
{
    oc_state *s = (oc_state *)st;
    cudaFree(s->x);
    cudaFree(s->y_base);
    free(s);
}

/* Timed cases (steps 1 and 4, the spec's timing): x changes between
 * repeats (every y[i] depends on x[i] alone, so an eighth of y changes),
 * and y's words are sampled. coef stays: it is the same polynomial. */
static void *oc_input(void *st, size_t *bytes)
{
    oc_state *s = (oc_state *)st;
    *bytes = s->n * 4;
    return s->x;
}

static void *oc_output(void *st, size_t *bytes)
{
    oc_state *s = (oc_state *)st;
    *bytes = s->n * 4;
    return s->y_base + OC_GUARD;
}

static const hn_lab lab = {oc_setup, oc_poison, oc_launch, oc_fetch, oc_teardown, oc_input, oc_output, NULL};

int main(int argc, char **argv) { return hn_main(argc, argv, &lab); }
