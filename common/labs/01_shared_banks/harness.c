/* Lab 01's harness (harness.h). The case's kind says which of the
 * student's functions it runs; the step is passed on where the interface
 * takes one (banks_abt).
 *
 *   kind 0  bank_of (host, steps 1): data = addresses; out = one int each.
 *   kind 1  conflict_degree (host, steps 2 and 3): a = m patterns; data =
 *           m records of BK_REC words: access_bytes (int), a flag (1: pass
 *           NULL instead of the addresses), then the 32 lanes' byte
 *           addresses; out = one int per pattern.
 *   kind 2  banks_probe (step 4): a = rounds; data = the 32 lane words;
 *           out = sums (512 u32), then start and stop (16 i64 each).
 *   kind 3  banks_probe with a round count it must refuse: a = rounds (as
 *           a signed 64-bit value); out = one word, the error it returned.
 *   kind 4  banks_abt (steps 5-7): a = batch; data = A then B (batch * 1024
 *           floats each, in one device buffer); out = C with BK_GUARD
 *           words before and after it (poisoned, must stay so).
 *   kind 5  banks_abt with a batch it must refuse: a = batch (signed);
 *           out = one word, the error it returned.
 * Every output (and the guards) is poisoned (0xff) before every launch;
 * the input (addresses, lane words, A and B) is read back after it. A host
 * case's outputs are written by the launch into a host buffer. The cases
 * and their verdicts: the lab's spec, labs/01_shared_banks/spec.c. */
#include "harness.h"
#include "banks.h"

#define BK_REC (2 + BANKS_WARP)
#define BK_GUARD 64
#define BK_MATRIX (BANKS_TILE * BANKS_TILE)
#define BK_THREADS (BANKS_PROBE_WARPS * BANKS_WARP)

typedef struct {
    uint32_t *host_out;                 /* kinds 0, 1, 3, 5 */
    size_t host_words;
    void *in;                           /* device: lane words (2, 3) or A|B (4, 5) */
    unsigned *sums;                     /* kinds 2, 3 */
    long long *start, *stop;
    float *c_base;                      /* kinds 4, 5: C with its guards */
    size_t n;                           /* kinds 4, 5: batch * 1024 */
} bk_state;

static long long bk_signed(uint64_t v) { return (long long)v; }

static cudaError_t bk_setup(const hn_case *c, void **st)
{
    bk_state *s = (bk_state *)calloc(1, sizeof *s);
    if (!(*st = s))
        return cudaErrorMemoryAllocation;
    const size_t bytes = (size_t)c->count * 4;
    switch (c->kind) {
    case 0:
    case 1:
        s->host_words = c->kind == 0 ? (size_t)c->count : (size_t)c->a;
        if (c->kind == 1 && c->a * BK_REC != c->count)
            return cudaErrorInvalidValue;
        s->host_out = (uint32_t *)malloc(s->host_words ? s->host_words * 4 : 4);
        return s->host_out ? cudaSuccess : cudaErrorMemoryAllocation;
    case 2:
    case 3: {
        if (c->count != BANKS_WARP)
            return cudaErrorInvalidValue;
        if (c->kind == 3 && !(s->host_out = (uint32_t *)malloc(4)))
            return cudaErrorMemoryAllocation;
        s->host_words = c->kind == 3;
        cudaError_t err = cudaMalloc(&s->in, bytes);
        if (err == cudaSuccess)
            err = cudaMalloc((void **)&s->sums, BK_THREADS * sizeof(unsigned));
        if (err == cudaSuccess)
            err = cudaMalloc((void **)&s->start, BANKS_PROBE_WARPS * sizeof(long long));
        if (err == cudaSuccess)
            err = cudaMalloc((void **)&s->stop, BANKS_PROBE_WARPS * sizeof(long long));
        if (err == cudaSuccess)
            err = cudaMemcpy(s->in, c->data, bytes, cudaMemcpyHostToDevice);
        return err;
    }
    case 4:
    case 5: {
        /* kind 4: a batch of at least one matrix, A and B in the data;
           kind 5: a refused batch, run on one matrix's worth of buffers */
        long long batch = bk_signed(c->a);
        if (c->kind == 4 && (batch < 1 || (uint64_t)batch * 2 * BK_MATRIX != c->count))
            return cudaErrorInvalidValue;
        if (c->kind == 5 && c->count != 2 * BK_MATRIX)
            return cudaErrorInvalidValue;
        if (c->kind == 5 && !(s->host_out = (uint32_t *)malloc(4)))
            return cudaErrorMemoryAllocation;
        s->host_words = c->kind == 5;
        s->n = (size_t)c->count / 2;
        cudaError_t err = cudaMalloc(&s->in, bytes);
        if (err == cudaSuccess)
            err = cudaMalloc((void **)&s->c_base, (s->n + 2 * BK_GUARD) * sizeof(float));
        if (err == cudaSuccess)
            err = cudaMemcpy(s->in, c->data, bytes, cudaMemcpyHostToDevice);
        return err;
    }
    default:
        return cudaErrorInvalidValue;
    }
}

static cudaError_t bk_poison(void *st, const hn_case *c)
{
    bk_state *s = (bk_state *)st;
    (void)c;
    if (s->host_out)
        memset(s->host_out, 0xff, s->host_words * 4);
    cudaError_t err = cudaSuccess;
    if (s->sums)
        err = cudaMemset(s->sums, 0xff, BK_THREADS * sizeof(unsigned));
    if (err == cudaSuccess && s->start)
        err = cudaMemset(s->start, 0xff, BANKS_PROBE_WARPS * sizeof(long long));
    if (err == cudaSuccess && s->stop)
        err = cudaMemset(s->stop, 0xff, BANKS_PROBE_WARPS * sizeof(long long));
    if (err == cudaSuccess && s->c_base)
        err = cudaMemset(s->c_base, 0xff, (s->n + 2 * BK_GUARD) * sizeof(float));
    return err;
}

static cudaError_t bk_launch(void *st, const hn_case *c)
{
    bk_state *s = (bk_state *)st;
    const uint32_t *w = (const uint32_t *)c->data;
    switch (c->kind) {
    case 0:
        for (size_t i = 0; i < s->host_words; ++i)
            s->host_out[i] = (uint32_t)bank_of(w[i]);
        return cudaSuccess;
    case 1:
        for (size_t i = 0; i < s->host_words; ++i) {
            const uint32_t *r = w + i * BK_REC;
            s->host_out[i] = (uint32_t)conflict_degree(r[1] ? NULL : r + 2, (int)r[0]);
        }
        return cudaSuccess;
    case 2:
        return banks_probe((const unsigned *)s->in, (int)c->a, s->start, s->stop, s->sums);
    case 3: /* the refusal is the output: it is not a failed case */
        s->host_out[0] = (uint32_t)banks_probe((const unsigned *)s->in, (int)bk_signed(c->a), s->start, s->stop,
                                               s->sums);
        return cudaSuccess;
    case 4:
    case 5: {
        const float *a = (const float *)s->in;
        cudaError_t err = banks_abt((int)c->step, a, a + s->n, s->c_base + BK_GUARD, (int)bk_signed(c->a));
        if (c->kind == 4)
            return err;
        s->host_out[0] = (uint32_t)err;
        return cudaSuccess;
    }
    default:
        return cudaErrorInvalidValue;
    }
}

static cudaError_t bk_fetch(void *st, const hn_case *c, void **out, size_t *out_bytes, void *in_after)
{
    bk_state *s = (bk_state *)st;
    const size_t in_bytes = (size_t)c->count * 4;
    size_t bytes = s->host_out ? s->host_words * 4
                   : c->kind == 2 ? BK_THREADS * 4 + 2 * BANKS_PROBE_WARPS * sizeof(long long)
                                  : (s->n + 2 * BK_GUARD) * sizeof(float);
    unsigned char *o = (unsigned char *)malloc(bytes ? bytes : 1);
    if (!(*out = o))
        return cudaErrorMemoryAllocation;
    *out_bytes = bytes;
    if (c->kind <= 1) { /* host cases: the addresses were only read through const pointers */
        memcpy(o, s->host_out, bytes);
        memcpy(in_after, c->data, in_bytes);
        return cudaSuccess;
    }
    cudaError_t err = cudaSuccess;
    if (s->host_out)
        memcpy(o, s->host_out, bytes);
    else if (c->kind == 2) {
        err = cudaMemcpy(o, s->sums, BK_THREADS * 4, cudaMemcpyDeviceToHost);
        if (err == cudaSuccess)
            err = cudaMemcpy(o + BK_THREADS * 4, s->start, BANKS_PROBE_WARPS * sizeof(long long),
                             cudaMemcpyDeviceToHost);
        if (err == cudaSuccess)
            err = cudaMemcpy(o + BK_THREADS * 4 + BANKS_PROBE_WARPS * sizeof(long long), s->stop,
                             BANKS_PROBE_WARPS * sizeof(long long), cudaMemcpyDeviceToHost);
    } else
        err = cudaMemcpy(o, s->c_base, bytes, cudaMemcpyDeviceToHost);
    return err == cudaSuccess ? cudaMemcpy(in_after, s->in, in_bytes, cudaMemcpyDeviceToHost) : err;
}

static void bk_teardown(void *st)
{
    bk_state *s = (bk_state *)st;
    free(s->host_out);
    cudaFree(s->in);
    cudaFree(s->sums);
    cudaFree(s->start);
    cudaFree(s->stop);
    cudaFree(s->c_base);
    free(s);
}

/* Timed cases are kind 4 only (steps 6 and 7): A|B changes, C is sampled. */
static void *bk_input(void *st, size_t *bytes)
{
    bk_state *s = (bk_state *)st;
    *bytes = s->c_base ? 2 * s->n * sizeof(float) : 0;
    return s->c_base ? s->in : NULL;
}

static void *bk_output(void *st, size_t *bytes)
{
    bk_state *s = (bk_state *)st;
    *bytes = s->c_base ? s->n * sizeof(float) : 0;
    return s->c_base ? (void *)(s->c_base + BK_GUARD) : NULL;
}

static const hn_lab lab = {bk_setup, bk_poison, bk_launch, bk_fetch, bk_teardown, bk_input, bk_output, NULL};

int main(int argc, char **argv) { return hn_main(argc, argv, &lab); }
