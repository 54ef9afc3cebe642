/* Lab 09's harness for the grader's kit-only checker (grader/harness/
 * harness.h; docs/grading.md section 8): linked with the student's kernels
 * and nothing of the kit's checking code. Case a is n, b is step 3's run
 * width; its data are the n keys of in. Output: out and a guard zone of
 * SS_GUARD words each side ((n + 2 * SS_GUARD) keys), all poisoned (0xff)
 * before every launch, scratch too: a write past either end of out lands
 * in a guard. The lab's spec (labs/09_shared_sort/spec.c) makes the cases
 * and judges the output. */
#include "harness.h"
#include "shared_sort.h"

#include <string.h>

enum { SS_GUARD = 64 };

typedef struct {
    unsigned *in, *out_base, *scratch;
    size_t n, width;
} ss_state;

static size_t ss_out_bytes(const ss_state *s) { return (s->n + 2 * SS_GUARD) * 4; }

static cudaError_t ss_setup(const hn_case *c, void **st)
{
    ss_state *s = (ss_state *)calloc(1, sizeof *s);
    if (!(*st = s))
        return cudaErrorMemoryAllocation;
    s->n = (size_t)c->a;
    s->width = (size_t)c->b;
    if (s->n != c->count || s->n == 0)
        return cudaErrorInvalidValue;
    cudaError_t err = cudaMalloc((void **)&s->in, s->n * 4);
    if (err == cudaSuccess)
        err = cudaMalloc((void **)&s->out_base, ss_out_bytes(s));
    if (err == cudaSuccess)
        err = cudaMalloc((void **)&s->scratch, s->n * 4);
    if (err == cudaSuccess && c->data)
        err = cudaMemcpy(s->in, c->data, s->n * 4, cudaMemcpyHostToDevice);
    return err;
}

static cudaError_t ss_poison(void *st, const hn_case *c)
{
    ss_state *s = (ss_state *)st;
    (void)c;
    cudaError_t err = cudaMemset(s->out_base, 0xff, ss_out_bytes(s));
    return err == cudaSuccess ? cudaMemset(s->scratch, 0xff, s->n * 4) : err;
}

static cudaError_t ss_launch(void *st, const hn_case *c)
{
    ss_state *s = (ss_state *)st;
    return shared_sort_step((int)c->step, s->in, s->out_base + SS_GUARD, s->scratch, s->n, s->width);
}

static cudaError_t ss_fetch(void *st, const hn_case *c, void **out, size_t *out_bytes, void *in_after)
{
    ss_state *s = (ss_state *)st;
    (void)c;
    if (!(*out = malloc(ss_out_bytes(s))))
        return cudaErrorMemoryAllocation;
    *out_bytes = ss_out_bytes(s);
    cudaError_t err = cudaMemcpy(*out, s->out_base, ss_out_bytes(s), cudaMemcpyDeviceToHost);
    return err == cudaSuccess ? cudaMemcpy(in_after, s->in, s->n * 4, cudaMemcpyDeviceToHost) : err;
}

static void ss_teardown(void *st)
{
    ss_state *s = (ss_state *)st;
    cudaFree(s->in);
    cudaFree(s->out_base);
    cudaFree(s->scratch);
    free(s);
}

/* The timed step (spec.c's timing: step 4): the keys change between
 * repeats, the sorted keys are sampled. */
static void *ss_input(void *st, size_t *bytes)
{
    *bytes = ((ss_state *)st)->n * 4;
    return ((ss_state *)st)->in;
}

static void *ss_output(void *st, size_t *bytes)
{
    *bytes = ((ss_state *)st)->n * 4;
    return ((ss_state *)st)->out_base + SS_GUARD;
}

static const hn_lab lab = {ss_setup, ss_poison, ss_launch, ss_fetch, ss_teardown, ss_input, ss_output, NULL};

int main(int argc, char **argv) { return hn_main(argc, argv, &lab); }
