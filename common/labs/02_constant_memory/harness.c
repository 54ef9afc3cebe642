/* Lab 02's harness (harness.h). Two kinds of case, in the low byte of kind:
 *
 * kind 0, the walk (steps 1-5): kind = 0 | d << 8 | big << 16, a = threads,
 *   b = passes. Data: the tables the upload gets (the small one,
 *   CONSTMEM_TABLE_ENTRIES floats, then the big one, CONSTMEM_BIG_ENTRIES),
 *   then two other tables of the same sizes, the global copies steps 3 and
 *   4 read (job->table), then one word: the walk's signs (job->signs).
 *   Setup uploads the first two with the student's constmem_upload_tables,
 *   from copies of exactly their size, and only then puts the global copies
 *   on the device and takes the signs: the upload never sees what steps 3
 *   and 4 must read nor the signs every step applies, so a step that reads
 *   (or precomputes from) the uploaded tables, or sums that the upload made
 *   (row sums, prefix sums), gives wrong sums. The launch runs
 *   constmem_lookup. Output: out, `threads` floats. Input read back: the
 *   uploaded tables as the upload left them, the two global copies, the
 *   signs.
 *
 * kind 1, the convolution (steps 6-8): kind = 1 | radius << 8, a = width,
 *   b = height. Data: the filter ((2r + 1)^2 floats), then the image
 *   (width * height floats). Setup copies the filter to global memory
 *   (w_dev, step 7) and, for step 6, uploads it to constant memory with the
 *   student's constmem_upload_filter, from a copy of exactly its size,
 *   before the image is on the device: the upload never sees the image, so
 *   it cannot compute the step's answer. Step 8's host filter (job->w) is
 *   such a copy too. Output: out, width * height floats. Input read back:
 *   the filter's global copy, then the image. A timed case perturbs the
 *   image between repeats.
 *
 * out is poisoned (0xff) before every launch. The cases and their
 * verdicts: the lab's spec, labs/02_constant_memory/spec.c. */
#include "harness.h"
#include "constmem.h"

enum { KIND_LOOKUP = 0, KIND_CONV = 1 };

typedef struct {
    int conv;
    constmem_lookup_job lk;
    constmem_conv_job cv;
    float *host_table, *host_big, *host_w; /* what the upload gets: copies of exactly their size */
    float *dev_table, *dev_big;             /* the walk's global copies (other tables) */
    float *dev_w, *dev_in, *out;            /* the convolution's buffers (out: both kinds) */
    size_t taps, pixels, out_words;
} cm_state;

/* A host copy of n floats of src, exactly n long (nothing of the case's
   other data lies past it). */
static float *cm_copy(const float *src, size_t n)
{
    float *p = (float *)malloc(n * sizeof(float));
    if (p)
        memcpy(p, src, n * sizeof(float));
    return p;
}

static cudaError_t cm_setup(const hn_case *c, void **st)
{
    cm_state *s = (cm_state *)calloc(1, sizeof *s);
    if (!(*st = s))
        return cudaErrorMemoryAllocation;
    const float *data = (const float *)c->data;
    const size_t tables = CONSTMEM_TABLE_ENTRIES + CONSTMEM_BIG_ENTRIES;
    cudaError_t err;
    if ((c->kind & 0xff) == KIND_LOOKUP) {
        if (c->count != 2 * tables + 1 || c->a < 1 || c->a > CONSTMEM_MAX_THREADS || c->b < 1 ||
            c->b > CONSTMEM_MAX_PASSES)
            return cudaErrorInvalidValue;
        s->lk.d = (int)((c->kind >> 8) & 0xff);
        s->lk.big = (int)((c->kind >> 16) & 0xff);
        s->lk.threads = (int)c->a;
        s->lk.passes = (int)c->b;
        s->out_words = (size_t)c->a;
        s->host_table = cm_copy(data, CONSTMEM_TABLE_ENTRIES);
        s->host_big = cm_copy(data + CONSTMEM_TABLE_ENTRIES, CONSTMEM_BIG_ENTRIES);
        if (!s->host_table || !s->host_big)
            return cudaErrorMemoryAllocation;
        /* the student's upload first: the global copies are not on the device yet */
        err = constmem_upload_tables(s->host_table, s->host_big);
        if (err == cudaSuccess)
            err = cudaMalloc((void **)&s->dev_table, CONSTMEM_TABLE_ENTRIES * sizeof(float));
        if (err == cudaSuccess)
            err = cudaMalloc((void **)&s->dev_big, CONSTMEM_BIG_ENTRIES * sizeof(float));
        if (err == cudaSuccess)
            err = cudaMalloc((void **)&s->out, s->out_words * sizeof(float));
        if (err == cudaSuccess)
            err = cudaMemcpy(s->dev_table, data + tables, CONSTMEM_TABLE_ENTRIES * sizeof(float),
                             cudaMemcpyHostToDevice);
        if (err == cudaSuccess)
            err = cudaMemcpy(s->dev_big, data + tables + CONSTMEM_TABLE_ENTRIES, CONSTMEM_BIG_ENTRIES * sizeof(float),
                             cudaMemcpyHostToDevice);
        s->lk.table = s->lk.big ? s->dev_big : s->dev_table;
        s->lk.out = s->out;
        memcpy(&s->lk.signs, data + 2 * tables, sizeof s->lk.signs); /* after the upload, as the tables */
        return err;
    }
    if ((c->kind & 0xff) != KIND_CONV)
        return cudaErrorInvalidValue;
    int r = (int)(c->kind >> 8);
    if (r < 1 || r > CONSTMEM_MAX_RADIUS || c->a < 1 || c->b < 1 || c->a * c->b >= ((uint64_t)1 << 31))
        return cudaErrorInvalidValue;
    s->conv = 1;
    s->taps = (size_t)(2 * r + 1) * (size_t)(2 * r + 1);
    s->pixels = (size_t)(c->a * c->b);
    if (c->count != s->taps + s->pixels)
        return cudaErrorInvalidValue;
    s->out_words = s->pixels;
    if (!(s->host_w = cm_copy(data, s->taps)))
        return cudaErrorMemoryAllocation;
    /* step 6: the student's upload first, before the image is on the device */
    err = c->step == 6 ? constmem_upload_filter(s->host_w, r) : cudaSuccess;
    if (err == cudaSuccess)
        err = cudaMalloc((void **)&s->dev_w, s->taps * sizeof(float));
    if (err == cudaSuccess)
        err = cudaMalloc((void **)&s->dev_in, s->pixels * sizeof(float));
    if (err == cudaSuccess)
        err = cudaMalloc((void **)&s->out, s->pixels * sizeof(float));
    if (err == cudaSuccess)
        err = cudaMemcpy(s->dev_w, data, s->taps * sizeof(float), cudaMemcpyHostToDevice);
    if (err == cudaSuccess)
        err = cudaMemcpy(s->dev_in, data + s->taps, s->pixels * sizeof(float), cudaMemcpyHostToDevice);
    s->cv.in = s->dev_in;
    s->cv.out = s->out;
    s->cv.width = (int)c->a;
    s->cv.height = (int)c->b;
    s->cv.radius = r;
    s->cv.w = s->host_w; /* host copy (step 8) */
    s->cv.w_dev = s->dev_w;
    return err;
}

static cudaError_t cm_poison(void *st, const hn_case *c)
{
    cm_state *s = (cm_state *)st;
    (void)c;
    return cudaMemset(s->out, 0xff, s->out_words * sizeof(float));
}

static cudaError_t cm_launch(void *st, const hn_case *c)
{
    cm_state *s = (cm_state *)st;
    return s->conv ? constmem_conv((int)c->step, &s->cv) : constmem_lookup((int)c->step, &s->lk);
}

static cudaError_t cm_fetch(void *st, const hn_case *c, void **out, size_t *out_bytes, void *in_after)
{
    cm_state *s = (cm_state *)st;
    (void)c;
    size_t bytes = s->out_words * sizeof(float);
    if (!(*out = malloc(bytes ? bytes : 1)))
        return cudaErrorMemoryAllocation;
    *out_bytes = bytes;
    float *back = (float *)in_after;
    cudaError_t err = cudaMemcpy(*out, s->out, bytes, cudaMemcpyDeviceToHost);
    if (!s->conv) {
        const size_t tables = CONSTMEM_TABLE_ENTRIES + CONSTMEM_BIG_ENTRIES;
        memcpy(back, s->host_table, CONSTMEM_TABLE_ENTRIES * sizeof(float));
        memcpy(back + CONSTMEM_TABLE_ENTRIES, s->host_big, CONSTMEM_BIG_ENTRIES * sizeof(float));
        if (err == cudaSuccess)
            err = cudaMemcpy(back + tables, s->dev_table, CONSTMEM_TABLE_ENTRIES * sizeof(float),
                             cudaMemcpyDeviceToHost);
        if (err == cudaSuccess)
            err = cudaMemcpy(back + tables + CONSTMEM_TABLE_ENTRIES, s->dev_big, CONSTMEM_BIG_ENTRIES * sizeof(float),
                             cudaMemcpyDeviceToHost);
        memcpy(back + 2 * tables, &s->lk.signs, sizeof s->lk.signs);
        return err;
    }
    if (err == cudaSuccess)
        err = cudaMemcpy(back, s->dev_w, s->taps * sizeof(float), cudaMemcpyDeviceToHost);
    if (err == cudaSuccess)
        err = cudaMemcpy(back + s->taps, s->dev_in, s->pixels * sizeof(float), cudaMemcpyDeviceToHost);
    return err;
}

static void cm_teardown(void *st)
{
    cm_state *s = (cm_state *)st;
    cudaFree(s->dev_table);
    cudaFree(s->dev_big);
    cudaFree(s->dev_w);
    cudaFree(s->dev_in);
    cudaFree(s->out);
    free(s->host_table);
    free(s->host_big);
    free(s->host_w);
    free(s);
}

/* Timed cases are convolutions (the [performance] steps 6-8): the image
   changes between repeats, out is sampled. */
static void *cm_input(void *st, size_t *bytes)
{
    cm_state *s = (cm_state *)st;
    *bytes = s->conv ? s->pixels * sizeof(float) : 0;
    return s->conv ? (void *)s->dev_in : NULL;
}

static void *cm_output(void *st, size_t *bytes)
{
    cm_state *s = (cm_state *)st;
    *bytes = s->out_words * sizeof(float);
    return s->out;
}

static const hn_lab lab = {cm_setup, cm_poison, cm_launch, cm_fetch, cm_teardown, cm_input, cm_output, NULL};

int main(int argc, char **argv) { return hn_main(argc, argv, &lab); }
