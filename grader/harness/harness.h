/* harness.h: the kit-only checker's channel to a student's kernels
 * (docs/grading.md §8, "Verdicts from processes without student code").
 *
 * A harness is linked with the student's kernel object and nothing of the
 * kit's checking code. It reads cases from the input file the grader wrote
 * (inputs only, never a seed of the hidden tests), runs each case's launch
 * with every output poisoned first, and writes raw outputs into the output
 * file. It decides nothing: the grader's checker (Python, no student code)
 * compares the outputs with the right answers, and for a timed case the
 * samples with those of the reference's harness.
 *
 * A lab's harness (common/labs/<lab>/harness.c) is a table of callbacks (hn_lab)
 * and main() { return hn_main(argc, argv, &lab); }. Only `launch` calls the
 * student's code; everything else is the kit's.
 *
 * Input (little-endian):  "CMLH" u32 version=2, u32 ncases, then per case
 *   u32 step, u32 kind, u64 a, u64 b, u64 count, u32 fill, u32 repeats,
 *   u64 seed, and (fill 0 only) count*4 bytes of data.
 *   fill 0: the data follows; fill 1: the harness makes count ints in
 *   [-1024, 3072); fill 2: count floats in [-1, 1) (both from `seed`, the
 *   timing data: public, never a hidden test's).
 *   repeats 0: a checked case. repeats R > 0: a timed case: HN_WARMUP
 *   untimed launches, then R launches each timed with CUDA events; before
 *   every launch but the first a contiguous eighth of the timing input
 *   (lab->input), at a place drawn from `seed`, gets fresh words, and every
 *   output is poisoned again; after it HN_SAMPLES words of the output
 *   (lab->output) are read back at places drawn from `seed`. Every lab's
 *   outputs depend on their input locally or wholly, so about an eighth of
 *   the outputs change each time: a launcher that reuses an earlier answer
 *   shows it in a few samples of nearly every repeat.
 * Output: "CMLO" u32 version=2, u32 ncases, then per case
 *   i32 cuda_error, u64 nbytes, nbytes of output,
 *   u64 inbytes, inbytes of the input as read back after the launch,
 *   u32 nrep, then nrep x (f32 ms, HN_SAMPLES x (u64 word, u32 value)),
 *   i32 the timed repeats' first CUDA error. A checked case has nrep = 0;
 *   a timed case writes no output or input bytes (nbytes = inbytes = 0),
 *   and nrep = 0 when its setup failed (cuda_error says why).
 * Step HN_MARK_STEP (0xffffffff) is a mark between the steps of one traced
 *   run (checker.trace_steps): no data (count 0, repeats 0); the harness
 *   launches the kit's own empty kernel cml_hn_mark (hn_mark.cu, CUDA
 *   harnesses only) and writes a checked case's record with no bytes. In an
 *   Nsight Compute run the launches between mark k and mark k + 1 are the
 *   k-th traced step's: the kit's code, never the student's, says where a
 *   step begins (the object checks refuse a student's reference to it).
 * Step 0 (HN_COPY_STEP) with repeats R > 0 is the device's copy ceiling,
 *   the kit's own code, never the student's: HN_WARMUP untimed and R timed
 *   cudaMemcpy device-to-device copies of count words (no data follows, and
 *   none is made on the host); its records are those of a timed case, the
 *   samples read from the copy. The grader asks only the reference's
 *   harness for it, in the same run as the reference's timed steps.
 * Step HN_LIBRARY_STEP (0xfffffffe) with repeats R > 0 is the lab's library
 *   ceiling, the kit's code, never the student's: the case's data set up as
 *   for a step, then R timed calls of lab->library (lab 03: cuBLAS SGEMM on
 *   the same matrices) in place of the student's launch; its records are a
 *   timed case's. A lab without one (library NULL), and the CPU path's
 *   harness, answer nrep 0. The grader asks only the reference's harness.
 * A third argument names a FIFO, the gate: once its CUDA context is made
 *   the harness opens it and reads one byte before it reads any case: 'g'
 *   runs the cases; anything else, or none, ends the run with status 3 and
 *   no output. The grader starts the reference's timing runs so, before it
 *   holds the GPU alone (reftime.LabTiming), and lets each go in its turn:
 *   their contexts are made while other work still runs there. Never a
 *   student's harness for timing: its code would run beside the reference's
 *   timing. A fourth argument, `warm`, launches the kit's empty kernel
 *   cml_hn_warm (hn_mark.cu) before the gate: the grader's Nsight Compute
 *   runs (profrun.py) start so, the student's harness too, with a share of
 *   the GPU, so that ncu's start, the context and the profiler's setup
 *   happen before the GPU is held alone; no student code runs before the
 *   gate. The CPU path's harness refuses `warm` (status 2): it is never
 *   profiled.
 * Exit status 0 when the output file is complete, 77 without a device. */
#ifndef CML_HARNESS_H
#define CML_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "hn_fill.h"

#define HN_VERSION 2u
#define HN_WARMUP 3u
#define HN_SAMPLES 32u
#define HN_MAX_REPEATS 1000u
#define HN_MAX_COUNT ((uint64_t)1 << 30)
#define HN_COPY_STEP 0u
#define HN_MARK_STEP 0xffffffffu
#define HN_LIBRARY_STEP 0xfffffffeu

#ifdef HN_HAVE_FILL
/* hn_fill.cu: words [0, n) of the stream at state s (as n hn_word calls
   would make them) into device memory, on the default stream */
cudaError_t cml_hn_fill_device(void *dst, uint64_t n, uint32_t fill, uint64_t s);
/* hn_fill.cu: the same words into host memory w, made on the device */
cudaError_t cml_hn_fill_host(uint32_t *w, uint64_t n, uint32_t fill, uint64_t s);
#endif

#ifdef HN_HAVE_MARK
/* hn_mark.cu: launches cml_hn_mark (the step marks of a traced run) */
cudaError_t cml_hn_mark_step(uint32_t step);
#define hn_mark cml_hn_mark_step
/* hn_mark.cu: launches cml_hn_warm and waits for it (a profiled run's warm-up) */
cudaError_t cml_hn_warm_up(void);
#define hn_warm cml_hn_warm_up
#else
static cudaError_t hn_mark(uint32_t step)
{
    (void)step;
    return cudaErrorInvalidValue; /* the CPU path's harness: its traces are taken a step a run */
}
static cudaError_t hn_warm(void)
{
    return cudaErrorInvalidValue; /* the CPU path's harness is never profiled */
}
#endif

typedef struct {
    uint32_t step, kind;
    uint64_t a, b, count;
    uint32_t fill, repeats;
    uint64_t seed;
    void *data; /* count * 4 bytes, host */
} hn_case;

typedef struct {
    /* Allocates the case's buffers and uploads its inputs; *st is the lab's state. */
    cudaError_t (*setup)(const hn_case *c, void **st);
    /* Poisons every output and scratch buffer (0xff bytes). */
    cudaError_t (*poison)(void *st, const hn_case *c);
    /* The student's launch for step c->step, and nothing else. */
    cudaError_t (*launch)(void *st, const hn_case *c);
    /* The outputs into *out (malloc'd, *out_bytes long) and the input as it
       is now into in_after (c->count * 4 bytes). */
    cudaError_t (*fetch)(void *st, const hn_case *c, void **out, size_t *out_bytes, void *in_after);
    void (*teardown)(void *st);
    /* Timed cases only (NULL where the lab has none): the device buffer one
       word of which changes between repeats, and the device output sampled. */
    void *(*input)(void *st, size_t *bytes);
    void *(*output)(void *st, size_t *bytes);
    /* The library ceiling (HN_LIBRARY_STEP; NULL: none): the kit's own call of
       a tuned library on the case's buffers, timed as a launch would be. */
    cudaError_t (*library)(void *st, const hn_case *c);
} hn_lab;

static int hn_read(FILE *f, void *p, size_t n) { return fread(p, 1, n, f) == n; }

/* With HN_TRACE set in its environment, a harness says on stderr when each
 * part of each case ended, in seconds since it started (where a run's time
 * goes: docs/grading.md, "Grading a large class"). The grader never sets it. */
static void hn_trace(uint32_t k, const char *what)
{
    static int on = -1;
    static struct timespec t0;
    struct timespec t;
    if (on < 0) {
        on = getenv("HN_TRACE") != NULL;
        timespec_get(&t0, TIME_UTC);
    }
    if (!on)
        return;
    timespec_get(&t, TIME_UTC);
    fprintf(stderr, "harness: %8.3f s  case %u: %s\n",
            (double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec), k, what);
}
static int hn_write(FILE *f, const void *p, size_t n) { return fwrite(p, 1, n, f) == n; }

/* The timing data, the changed words and the sampled places: the next draw
   of the stream at *s (hn_fill.h). */
static uint64_t hn_next(uint64_t *s) { return hn_mix(*s += HN_GOLDEN); }

static uint32_t hn_word(uint32_t fill, uint64_t *s) { return hn_word_of(fill, hn_next(s)); }

/* A fresh `chunk` words of the timing input at device address dst, the
 * stream's next words; *s advances past them. The CUDA harness makes them
 * on the device (the kit's kernel), the CPU path's on the host. */
static cudaError_t hn_fresh(void *dst, uint64_t chunk, uint32_t fill, uint64_t *s)
{
#ifdef HN_HAVE_FILL
    cudaError_t err = cml_hn_fill_device(dst, chunk, fill, *s);
    *s += chunk * HN_GOLDEN;
    return err;
#else
    uint32_t *host = (uint32_t *)malloc(chunk * 4);
    if (!host)
        return cudaErrorMemoryAllocation;
    for (uint64_t i = 0; i < chunk; ++i)
        host[i] = hn_word(fill, s);
    cudaError_t err = cudaMemcpy(dst, host, chunk * 4, cudaMemcpyHostToDevice);
    free(host);
    return err;
#endif
}

/* A filled case's data (count words of the stream at `seed`) into host
 * memory. The CUDA harness makes them on the device and copies them back
 * (a timed case's input is up to 1 GiB: a host loop over it took most of a
 * timed run); where that fails (no room on the device), and on the CPU
 * path, the host makes them. The same words either way. */
static void hn_fill_host(uint32_t *w, uint64_t count, uint32_t fill, uint64_t seed)
{
#ifdef HN_HAVE_FILL
    if (cml_hn_fill_host(w, count, fill, seed) == cudaSuccess)
        return;
    cudaGetLastError(); /* not sticky (an allocation that failed): the host makes them */
#endif
    uint64_t s = seed;
    for (uint64_t i = 0; i < count; ++i)
        w[i] = hn_word(fill, &s);
}

/* One timed repeat's record: its ms, then HN_SAMPLES words of the device
 * buffer `dev` (bytes long) at places drawn from *s (0xffffffff once an
 * error has happened). Returns the error so far. */
static cudaError_t hn_record(FILE *out, float ms, const void *dev, size_t bytes, uint64_t *s, cudaError_t err)
{
    hn_write(out, &ms, 4);
    for (uint32_t k = 0; k < HN_SAMPLES; ++k) {
        uint64_t at = hn_next(s) % (bytes / 4);
        uint32_t v = 0xffffffffu;
        if (err == cudaSuccess)
            err = cudaMemcpy(&v, (const unsigned char *)dev + 4 * at, 4, cudaMemcpyDeviceToHost);
        hn_write(out, &at, 8);
        hn_write(out, &v, 4);
    }
    return err;
}

static cudaError_t hn_timed(const hn_lab *lab, void *st, const hn_case *c, FILE *out,
                            cudaError_t (*launch)(void *st, const hn_case *c))
{
    size_t in_bytes = 0, out_bytes = 0;
    unsigned char *din = lab->input ? (unsigned char *)lab->input(st, &in_bytes) : NULL;
    unsigned char *dout = lab->output ? (unsigned char *)lab->output(st, &out_bytes) : NULL;
    uint32_t nrep = launch && din && dout && in_bytes >= 4 && out_bytes >= 4 ? c->repeats : 0;
    hn_write(out, &nrep, 4);
    if (!nrep)
        return cudaErrorInvalidValue;
    uint64_t s = c->seed ^ 0x5DEECE66Dull, in_words = in_bytes / 4, chunk = in_words / 8 ? in_words / 8 : 1;
    cudaEvent_t e0, e1;
    cudaError_t err = cudaEventCreate(&e0);
    if (err == cudaSuccess)
        err = cudaEventCreate(&e1);
    for (uint32_t r = 0; r < HN_WARMUP + nrep; ++r) { /* every record is written, an error or not */
        if (r > 0 && err == cudaSuccess) { /* a fresh eighth of the input, at a place drawn from the seed */
            uint64_t at = hn_next(&s) % (in_words - chunk + 1);
            err = hn_fresh(din + 4 * at, chunk, c->fill ? c->fill : 2, &s);
        }
        if (err == cudaSuccess)
            err = lab->poison(st, c);
        if (err == cudaSuccess)
            err = cudaDeviceSynchronize();
        if (err == cudaSuccess)
            err = cudaEventRecord(e0, 0);
        if (err == cudaSuccess)
            err = launch(st, c);
        if (err == cudaSuccess)
            err = cudaEventRecord(e1, 0);
        if (err == cudaSuccess)
            err = cudaDeviceSynchronize();
        if (err == cudaSuccess)
            err = cudaGetLastError();
        float ms = 0.0f;
        if (err == cudaSuccess)
            err = cudaEventElapsedTime(&ms, e0, e1);
        if (r >= HN_WARMUP)
            err = hn_record(out, ms, dout, out_bytes, &s, err);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return err;
}

/* The copy ceiling (HN_COPY_STEP): R timed device-to-device copies of
 * c->count words, written as a timed case's records. */
static cudaError_t hn_copy_timed(const hn_case *c, FILE *out)
{
    size_t bytes = (size_t)c->count * 4;
    void *src = NULL, *dst = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    cudaError_t err = bytes >= 4 ? cudaMalloc(&src, bytes) : cudaErrorInvalidValue;
    if (err == cudaSuccess)
        err = cudaMalloc(&dst, bytes);
    if (err == cudaSuccess)
        err = cudaMemset(src, 0x3c, bytes);
    if (err == cudaSuccess)
        err = cudaEventCreate(&e0);
    if (err == cudaSuccess)
        err = cudaEventCreate(&e1);
    uint32_t nrep = err == cudaSuccess ? c->repeats : 0;
    hn_write(out, &nrep, 4);
    uint64_t s = c->seed;
    for (uint32_t r = 0; nrep && r < HN_WARMUP + nrep; ++r) { /* every record is written, an error or not */
        float ms = 0.0f;
        if (err == cudaSuccess)
            err = cudaEventRecord(e0, 0);
        if (err == cudaSuccess)
            err = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, 0);
        if (err == cudaSuccess)
            err = cudaEventRecord(e1, 0);
        if (err == cudaSuccess)
            err = cudaEventSynchronize(e1);
        if (err == cudaSuccess)
            err = cudaEventElapsedTime(&ms, e0, e1);
        if (r >= HN_WARMUP)
            err = hn_record(out, ms, dst, bytes, &s, err);
    }
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    cudaFree(src);
    cudaFree(dst);
    return err;
}

/* The host memory of a case's data: one buffer for the whole run, grown
 * when a larger case needs it, pinned where the CUDA harness can pin it. A
 * timed case's input is up to 1 GiB: a fresh pageable buffer a case,
 * faulted in page by page and copied at pageable speed both ways (made on
 * the device, then uploaded by the lab's setup), took most of a timed
 * run's time on an H200 (0.4 s a 512 MiB case). malloc'd where pinning
 * fails, and on the CPU path. Every case writes all of its bytes. */
static void *hn_buf;
static size_t hn_buf_bytes;
static int hn_buf_pinned;

static void hn_buffer_free(void)
{
    if (hn_buf_pinned)
        cudaFreeHost(hn_buf);
    else
        free(hn_buf);
    hn_buf = NULL;
    hn_buf_bytes = 0;
    hn_buf_pinned = 0;
}

static void *hn_case_buffer(size_t bytes)
{
    if (bytes <= hn_buf_bytes)
        return hn_buf;
    hn_buffer_free();
#ifdef HN_HAVE_FILL
    if (cudaMallocHost(&hn_buf, bytes) == cudaSuccess) {
        hn_buf_pinned = 1;
    } else {
        cudaGetLastError(); /* not sticky: pageable memory then */
        hn_buf = NULL;
    }
#endif
    if (!hn_buf)
        hn_buf = malloc(bytes);
    hn_buf_bytes = hn_buf ? bytes : 0;
    return hn_buf;
}

static int hn_read_case(FILE *in, hn_case *c)
{
    if (!hn_read(in, &c->step, 4) || !hn_read(in, &c->kind, 4) || !hn_read(in, &c->a, 8) || !hn_read(in, &c->b, 8) ||
        !hn_read(in, &c->count, 8) || !hn_read(in, &c->fill, 4) || !hn_read(in, &c->repeats, 4) ||
        !hn_read(in, &c->seed, 8) || c->count > HN_MAX_COUNT || c->fill > 2 || c->repeats > HN_MAX_REPEATS)
        return 0;
    if (c->step == HN_MARK_STEP) { /* a step mark: no data */
        c->data = NULL;
        return c->count == 0 && c->repeats == 0;
    }
    if (c->step == HN_LIBRARY_STEP && !c->repeats) /* the library ceiling is timed, never checked */
        return 0;
    size_t bytes = (size_t)c->count * 4;
    if (c->step == HN_COPY_STEP && c->repeats) { /* the copy ceiling: device buffers only (hn_copy_timed) */
        c->data = NULL;
        return c->fill != 0;
    }
    c->data = hn_case_buffer(bytes ? bytes : 1);
    if (!c->data)
        return 0;
    if (c->fill == 0)
        return hn_read(in, c->data, bytes);
    hn_fill_host((uint32_t *)c->data, c->count, c->fill, c->seed);
    return 1;
}

/* main() of every harness: argv[1] input file, argv[2] output file. */
static int hn_main(int argc, char **argv, const hn_lab *lab)
{
    if (argc < 3 || argc > 5 || (argc == 5 && strcmp(argv[4], "warm") != 0)) {
        fprintf(stderr, "usage: %s INPUT OUTPUT [GATE [warm]]\n", argv[0]);
        return 2;
    }
    int ndev = 0;
    hn_trace(0, "started");
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        fprintf(stderr, "no CUDA device\n");
        return 77;
    }
    cudaFree(NULL); /* the context, made here: before the gate, and so that the trace shows what it costs */
    hn_trace(0, "the CUDA context made");
    if (argc == 5) { /* a profiled run's warm-up (above), before the gate */
        cudaError_t err = hn_warm();
        if (err != cudaSuccess) {
            fprintf(stderr, "harness: the warm-up launch failed: %s\n", cudaGetErrorString(err));
            return 2;
        }
        hn_trace(0, "the profiler's warm-up launched");
    }
    if (argc >= 4) { /* the gate (above): wait for the grader's go */
        FILE *gate = fopen(argv[3], "rb");
        int go = gate ? fgetc(gate) : EOF;
        if (gate)
            fclose(gate);
        if (go != 'g')
            return 3;
        hn_trace(0, "let go");
    }
    FILE *in = fopen(argv[1], "rb"), *out = fopen(argv[2], "wb");
    char magic[4];
    uint32_t version = 0, ncases = 0;
    if (!in || !out || !hn_read(in, magic, 4) || memcmp(magic, "CMLH", 4) != 0 || !hn_read(in, &version, 4) ||
        version != HN_VERSION || !hn_read(in, &ncases, 4)) {
        fprintf(stderr, "harness: cannot read %s or write %s\n", argv[1], argv[2]);
        return 2;
    }
    hn_write(out, "CMLO", 4);
    hn_write(out, &version, 4);
    hn_write(out, &ncases, 4);
    for (uint32_t k = 0; k < ncases; ++k) {
        hn_case c;
        if (!hn_read_case(in, &c)) {
            fprintf(stderr, "harness: case %u is damaged, or no memory for it\n", k);
            return 2;
        }
        hn_trace(k, c.fill ? "read, its data made" : "read");
        if (c.step == HN_COPY_STEP && c.repeats) { /* the copy ceiling: no lab code at all */
            int32_t none = 0;
            uint64_t zero64 = 0;
            hn_write(out, &none, 4);
            hn_write(out, &zero64, 8);
            hn_write(out, &zero64, 8);
            int32_t t32 = (int32_t)hn_copy_timed(&c, out);
            hn_trace(k, "copy ceiling timed");
            hn_write(out, &t32, 4);
            fflush(out);
            if (t32 != 0)
                cudaGetLastError();
            continue;
        }
        if (c.step == HN_MARK_STEP) { /* the kit's mark, then a checked case's record with no bytes */
            cudaError_t err = hn_mark(c.kind);
            if (err == cudaSuccess)
                err = cudaDeviceSynchronize();
            int32_t err32 = (int32_t)err, t32 = 0;
            uint64_t zero64 = 0;
            uint32_t zero = 0;
            hn_write(out, &err32, 4);
            hn_write(out, &zero64, 8);
            hn_write(out, &zero64, 8);
            hn_write(out, &zero, 4);
            hn_write(out, &t32, 4);
            fflush(out);
            if (err != cudaSuccess)
                cudaGetLastError();
            continue;
        }
        size_t bytes = (size_t)c.count * 4;
        void *after = c.repeats ? NULL : malloc(bytes ? bytes : 1);
        void *res = NULL, *st = NULL;
        size_t res_bytes = 0;
        if (!c.repeats && !after) {
            fprintf(stderr, "harness: case %u: no memory\n", k);
            return 2;
        }
        if (after)
            memset(after, 0xff, bytes);
        cudaError_t err = lab->setup(&c, &st);
        hn_trace(k, "set up");
        if (err == cudaSuccess && !c.repeats)
            err = lab->poison(st, &c);
        if (err == cudaSuccess && !c.repeats)
            err = lab->launch(st, &c);
        if (err == cudaSuccess && !c.repeats)
            err = cudaDeviceSynchronize();
        if (err == cudaSuccess && !c.repeats)
            err = lab->fetch(st, &c, &res, &res_bytes, after);
        if (!c.repeats)
            hn_trace(k, "launched and fetched");
        uint64_t rb = res ? res_bytes : 0, ib = c.repeats ? 0 : bytes;
        int32_t err32 = (int32_t)err;
        hn_write(out, &err32, 4);
        hn_write(out, &rb, 8);
        if (rb)
            hn_write(out, res, rb);
        hn_write(out, &ib, 8);
        if (ib)
            hn_write(out, after, ib);
        uint32_t zero = 0;
        int32_t t32 = 0;
        if (c.repeats && err == cudaSuccess) {
            t32 = (int32_t)hn_timed(lab, st, &c, out, c.step == HN_LIBRARY_STEP ? lab->library : lab->launch);
            hn_trace(k, "timed");
        } else {
            hn_write(out, &zero, 4); /* no timed repeats follow */
        }
        hn_write(out, &t32, 4);
        fflush(out);
        if (st)
            lab->teardown(st);
        free(res);
        free(after);
        hn_trace(k, "written, torn down"); /* its data's buffer is the next case's */
        if (err != cudaSuccess)
            cudaGetLastError(); /* a sticky error ends the later cases too; they say so */
    }
    hn_buffer_free();
    return fclose(out) == 0 ? 0 : 2;
}

#endif
