/* harness.h: the kit-only checker's channel to a student's kernels
 * (docs/grading.md §8, "Verdicts from processes without student code").
 *
 * A harness is linked with the student's kernel object and nothing of the
 * kit's checking code. It reads cases from the input file the grader wrote
 * (inputs only, never a seed), runs each case's launch once with the output
 * poisoned first, and writes the raw outputs into the output file. It
 * decides nothing: the grader's checker (Python, no student code) compares
 * the outputs with the right answers.
 *
 * Input (little-endian):  "CMLH" u32 version=1, u32 ncases, then per case
 *   u32 step, u32 kind, u64 a, u64 b, u64 count, count*4 bytes of data.
 * Output: "CMLO" u32 version=1, u32 ncases, then per case
 *   i32 cuda_error, u64 nbytes, nbytes of output,
 *   u64 inbytes, inbytes of the input as read back after the launch.
 * Exit status 0 when the output file is complete, 77 without a device. */
#ifndef CML_HARNESS_H
#define CML_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

typedef struct {
    uint32_t step, kind;
    uint64_t a, b, count;
    void *data; /* count * 4 bytes, host */
} hn_case;

/* Runs one case: out (host, *out_bytes long) and the input read back
 * (host, case->count * 4 bytes). Returns the first CUDA error. */
typedef cudaError_t (*hn_run_fn)(const hn_case *c, void **out, size_t *out_bytes, void *in_after);

static int hn_read(FILE *f, void *p, size_t n) { return fread(p, 1, n, f) == n; }
static int hn_write(FILE *f, const void *p, size_t n) { return fwrite(p, 1, n, f) == n; }

/* main() of every harness: argv[1] input file, argv[2] output file. */
static int hn_main(int argc, char **argv, hn_run_fn run)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s INPUT OUTPUT\n", argv[0]);
        return 2;
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        fprintf(stderr, "no CUDA device\n");
        return 77;
    }
    FILE *in = fopen(argv[1], "rb"), *out = fopen(argv[2], "wb");
    char magic[4];
    uint32_t version = 0, ncases = 0;
    if (!in || !out || !hn_read(in, magic, 4) || memcmp(magic, "CMLH", 4) != 0 || !hn_read(in, &version, 4) ||
        version != 1 || !hn_read(in, &ncases, 4)) {
        fprintf(stderr, "harness: cannot read %s or write %s\n", argv[1], argv[2]);
        return 2;
    }
    hn_write(out, "CMLO", 4);
    hn_write(out, &version, 4);
    hn_write(out, &ncases, 4);
    for (uint32_t k = 0; k < ncases; ++k) {
        hn_case c;
        if (!hn_read(in, &c.step, 4) || !hn_read(in, &c.kind, 4) || !hn_read(in, &c.a, 8) || !hn_read(in, &c.b, 8) ||
            !hn_read(in, &c.count, 8) || c.count > ((uint64_t)1 << 30)) {
            fprintf(stderr, "harness: case %u is damaged\n", k);
            return 2;
        }
        size_t bytes = (size_t)c.count * 4;
        c.data = malloc(bytes ? bytes : 1);
        void *after = malloc(bytes ? bytes : 1);
        if (!c.data || !after || !hn_read(in, c.data, bytes)) {
            fprintf(stderr, "harness: case %u: no memory or short input\n", k);
            return 2;
        }
        void *res = NULL;
        size_t res_bytes = 0;
        memset(after, 0xff, bytes);
        int32_t err = (int32_t)run(&c, &res, &res_bytes, after);
        uint64_t rb = res ? res_bytes : 0, ib = bytes;
        hn_write(out, &err, 4);
        hn_write(out, &rb, 8);
        if (rb)
            hn_write(out, res, rb);
        hn_write(out, &ib, 8);
        hn_write(out, after, ib);
        fflush(out);
        free(res);
        free(after);
        free(c.data);
        if (err != cudaSuccess)
            cudaGetLastError(); /* a sticky error ends the later cases too; they say so */
    }
    return fclose(out) == 0 ? 0 : 2;
}

#endif
