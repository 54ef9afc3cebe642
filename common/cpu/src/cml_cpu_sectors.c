/* Global-memory sector counts of the CPU path (CML_CPU_CHECK=sectors): the
 * coalescing of every warp-level load and store instruction, as Nsight
 * Compute counts it on a GPU with l1tex__t_sectors_pipe_lsu_mem_global_op_
 * ld/st.sum (32-byte sectors) and l1tex__t_requests_pipe_lsu_mem_global_op_
 * ld/st.sum (one request per warp instruction).
 *
 * The accesses are those to device memory (cudaMalloc memory and __device__
 * variables; not __constant__ variables, which a GPU reads through its
 * constant cache, and not locals, kernel parameters or shared memory),
 * grouped into warp instructions as the bank counts group shared accesses
 * (cml_cpu_warp_log_flush: one code address, one pass between barriers; a
 * lane's passes counted as a GPU runs a loop's trips, or numbered by the
 * lane's accesses to shared memory in the same loop, logged for that). A
 * lane's 16- or 8-byte vector that g++ took apart into 4- or 8-byte
 * accesses is counted as one access again (merge_vectors).
 *
 * Per instruction: requests = 1; sectors = the distinct 32-byte sectors its
 * lanes touch; ideal = the fewest sectors that could hold the distinct bytes
 * they touch (a 4-byte access by 32 consecutive lanes: 128 bytes, 4
 * sectors; every lane at one address: 1). Counts go per code address, then
 * per kernel and source line. */
#define _GNU_SOURCE
#include "cml_cpu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { REQUESTS, SECTORS, IDEAL };
enum { SECTOR_BYTES = 32 };
static cml_cpu_tally tally = CML_CPU_TALLY_INIT("sectors");
static __thread cml_cpu_tally_worker *sw;

void cml_cpu_sectors_block_begin(void)
{
    if (sw == NULL) {
        sw = cml_cpu_tally_join(&tally);
        sw->log.merge_vectors = 1;
    }
    sw->log.n = 0;
}

void cml_cpu_sectors_access(unsigned linear, uintptr_t addr, int size, int store, void *pc)
{
    if (sw != NULL)
        cml_cpu_warp_log_add(&sw->log, linear, addr, size, store, pc);
}

void cml_cpu_sectors_anchor(unsigned linear, uintptr_t addr, int size, int store, void *pc)
{
    if (sw != NULL)
        cml_cpu_warp_log_anchor(&sw->log, linear, addr, size, store, pc);
}

static uintptr_t first_sector(uintptr_t addr) { return addr / SECTOR_BYTES; }
static uintptr_t last_sector(uintptr_t addr, int size) { return (addr + (uintptr_t)size - 1) / SECTOR_BYTES; }

/* Sorts v[0..n) (a warp's worth, mostly in order already) and returns how
 * many distinct values it holds. */
static int distinct(uintptr_t *v, int n)
{
    for (int i = 1; i < n; ++i)
        for (int j = i; j > 0 && v[j - 1] > v[j]; --j) {
            uintptr_t t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    int d = n > 0;
    for (int i = 1; i < n; ++i)
        d += v[i] != v[i - 1];
    return d;
}

/* One warp instruction: in->mask says which lanes took part, in->addr[lane]
 * each one's byte address, so the lane's 32-byte sector is addr / 32 and
 * its 128-byte line addr / 128 (what a model of the caches would start
 * from); counted here as a request, its distinct sectors and the ideal. */
static void count(const cml_cpu_warp_insn *in, void *ctx)
{
    uintptr_t sectors[64], addrs[32];
    int n_sectors = 0, n_addrs = 0;
    for (uint32_t m = in->mask; m; m &= m - 1) {
        uintptr_t a = in->addr[__builtin_ctz(m)];
        addrs[n_addrs++] = a;
        /* an access of 16 bytes at most spans 2 sectors */
        for (uintptr_t s = first_sector(a); s <= last_sector(a, in->size) && n_sectors < 64; ++s)
            sectors[n_sectors++] = s;
    }
    unsigned long long bytes = (unsigned long long)distinct(addrs, n_addrs) * (unsigned)in->size;
    unsigned long long v[CML_CPU_TALLY_VALUES] = {1, (unsigned long long)distinct(sectors, n_sectors),
                                                  (bytes + SECTOR_BYTES - 1) / SECTOR_BYTES};
    cml_cpu_tally_stat *st = cml_cpu_tally_add(ctx, in->pc, in->store, v);
    /* a picture's worst instruction: the most sectors beyond the ideal, then the most sectors, then lanes */
    if (cml_cpu_check_mode & CML_CPU_CHECK_PICTURE)
        cml_cpu_worst_keep(st, in, (const long long[3]){(long long)(v[SECTORS] - v[IDEAL]), (long long)v[SECTORS],
                                                        n_addrs},
                           0);
}

void cml_cpu_sectors_flush(void)
{
    if (sw != NULL)
        cml_cpu_warp_log_flush(&sw->log, NULL, count, sw);
}

/* Under CML_CPU_CHECK=sectors, a line per launch too (common/src/ncu.c
 * reads them as it reads ncu's launches): "cml-cpu sectors: launch <kernel>
 * ld requests=<R> sectors=<S> ideal=<I> st requests=<R> sectors=<S> ideal=<I>". */
void cml_cpu_sectors_print_launches(void);
void cml_cpu_sectors_print_launches(void) { tally.print_launches = 1; }

void cml_cpu_sectors_grid_end(const char *kernel)
{
    unsigned long long v[2][CML_CPU_TALLY_VALUES];
    const char *name = cml_cpu_tally_grid_end(&tally, kernel, v);
    if (tally.print_launches)
        fprintf(stderr,
                "cml-cpu sectors: launch %s ld requests=%llu sectors=%llu ideal=%llu st requests=%llu sectors=%llu "
                "ideal=%llu\n",
                name, v[0][REQUESTS], v[0][SECTORS], v[0][IDEAL], v[1][REQUESTS], v[1][SECTORS], v[1][IDEAL]);
}

int cml_cpu_sector_counts(const char *kernel, int store, unsigned long long *requests, unsigned long long *sectors,
                          unsigned long long *ideal)
{
    unsigned long long v[CML_CPU_TALLY_VALUES];
    int found = cml_cpu_tally_sum(&tally, kernel, store, v);
    if (requests != NULL)
        *requests = v[REQUESTS];
    if (sectors != NULL)
        *sectors = v[SECTORS];
    if (ideal != NULL)
        *ideal = v[IDEAL];
    return found;
}

static double per_request(unsigned long long n, unsigned long long requests)
{
    return requests ? (double)n / (double)requests : 0.0;
}

static void line(FILE *out, const char *kernel, const char *where, int store, const unsigned long long v[])
{
    fprintf(out, "cml-cpu sectors: %s %s %s requests=%llu sectors=%llu ideal=%llu sectors/request=%.2f "
                 "ideal/request=%.2f\n",
            kernel, where, store ? "st" : "ld", v[REQUESTS], v[SECTORS], v[IDEAL], per_request(v[SECTORS], v[REQUESTS]),
            per_request(v[IDEAL], v[REQUESTS]));
}

static void total(FILE *out, const char *kernel, const unsigned long long v[2][CML_CPU_TALLY_VALUES])
{
    fprintf(out, "cml-cpu sectors: %s total ld requests=%llu sectors=%llu ideal=%llu st requests=%llu sectors=%llu "
                 "ideal=%llu\n",
            kernel, v[0][REQUESTS], v[0][SECTORS], v[0][IDEAL], v[1][REQUESTS], v[1][SECTORS], v[1][IDEAL]);
}

void cml_cpu_sectors_report(FILE *out) { cml_cpu_tally_report(&tally, out, line, total); }

void cml_cpu_sectors_picture(FILE *out) { cml_cpu_tally_picture(&tally, out, "global"); }

void cml_cpu_sectors_at_exit(void);
void cml_cpu_sectors_at_exit(void) { cml_cpu_sectors_report(stderr); }
