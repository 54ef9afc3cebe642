/* Access pictures of the CPU path (CML_CPU_PICTURE=<file>): per kernel,
 * source line and direction, the worst warp instruction the bank counts
 * (shared memory) and the sector counts (global memory) saw, with its 32
 * lanes' addresses, written to <file> at exit for a runner's --picture
 * (common/src/access_picture.c draws it; the format: common/cpu/README.md,
 * "Access pictures").
 *
 * The counts keep, per worker and code address, the worst instruction by a
 * score (cml_cpu_worst_keep: shared, the most wavefronts; global, the most
 * sectors beyond the ideal, then the most sectors); a grid's end merges the
 * workers' into the kernel's results (cml_cpu_worst_merge); the file merges
 * the code addresses of one source line. Ties go to the lowest block of the
 * grid, so the picture does not depend on which worker ran what. */
#define _GNU_SOURCE
#include "cml_cpu_internal.h"

#include <stdlib.h>
#include <string.h>

enum { LINE_BYTES = 128 };

/* 1 when a is worse than b (a higher score; on a tie, an earlier block). */
static int worse(const cml_cpu_worst *a, const cml_cpu_worst *b)
{
    if (!b->have)
        return a->have;
    for (int k = 0; k < 3; ++k)
        if (a->score[k] != b->score[k])
            return a->score[k] > b->score[k];
    return a->order < b->order;
}

void cml_cpu_worst_keep(cml_cpu_tally_stat *st, const cml_cpu_warp_insn *in, const long long score[3], int shared)
{
    if (in->mask == 0)
        return;
    if (st->worst == NULL && (st->worst = calloc(1, sizeof *st->worst)) == NULL)
        return; /* no picture for this line: the counts go on */
    cml_cpu_coords c = cml_cpu_coord;
    cml_cpu_worst cand;
    memset(&cand, 0, sizeof cand);
    cand.have = 1;
    memcpy(cand.score, score, sizeof cand.score);
    cand.block = c.block_idx;
    cand.order = ((unsigned long long)c.block_idx.z * c.grid_dim.y + c.block_idx.y) * c.grid_dim.x + c.block_idx.x;
    if (!worse(&cand, st->worst))
        return;
    cand.warp = in->warp;
    cand.size = in->size;
    cand.mask = in->mask;
    uintptr_t lowest = UINTPTR_MAX;
    for (uint32_t m = in->mask; m; m &= m - 1)
        lowest = in->addr[__builtin_ctz(m)] < lowest ? in->addr[__builtin_ctz(m)] : lowest;
    uint32_t start = 0;
    const char *decl = NULL;
    if (shared && cml_cpu_shared_var_of((uint32_t)lowest, &start, &decl)) {
        cand.base = start;
        cand.decl = decl;
        for (uint32_t m = in->mask; m; m &= m - 1) {
            unsigned lane = (unsigned)__builtin_ctz(m);
            cand.offset[lane] = (long long)(int32_t)((uint32_t)in->addr[lane] - start);
        }
    } else {
        cand.base = lowest & ~(uintptr_t)(LINE_BYTES - 1);
        for (uint32_t m = in->mask; m; m &= m - 1) {
            unsigned lane = (unsigned)__builtin_ctz(m);
            cand.offset[lane] = (long long)(in->addr[lane] - cand.base);
        }
    }
    *st->worst = cand;
}

void cml_cpu_worst_merge(cml_cpu_worst *into, const cml_cpu_worst *from)
{
    if (from != NULL && worse(from, into))
        *into = *from;
}

/* A field's value without tabs or line ends (the file's separators). */
static void put_clean(FILE *out, const char *s)
{
    for (; s != NULL && *s; ++s)
        fputc(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s, out);
}

static void write_line(FILE *out, const char *space, const cml_cpu_tally_line *l)
{
    int shared = strcmp(space, "shared") == 0;
    const cml_cpu_worst *w = &l->worst;
    fprintf(out, "access\tspace=%s\top=%s\tkernel=", space, l->store ? "st" : "ld");
    put_clean(out, l->kernel);
    fputs("\twhere=", out);
    put_clean(out, l->where);
    if (shared) /* values: requests (phases), wavefronts, instructions; ideal: a wavefront a request */
        fprintf(out, "\tinstructions=%llu\trequests=%llu\twavefronts=%llu\tideal=%llu", l->v[2], l->v[0], l->v[1],
                l->v[0]);
    else /* requests (one an instruction), sectors, ideal */
        fprintf(out, "\tinstructions=%llu\trequests=%llu\tsectors=%llu\tideal=%llu", l->v[0], l->v[0], l->v[1],
                l->v[2]);
    /* the worst instruction: its wavefronts (ideal: one a phase) or sectors (ideal: the fewest that hold its bytes) */
    if (shared)
        fprintf(out, "\tsize=%d\tworst_wavefronts=%lld\tworst_ideal=%d", w->size, w->score[0],
                w->size > 4 ? w->size / 4 : 1);
    else
        fprintf(out, "\tsize=%d\tworst_sectors=%lld\tworst_ideal=%lld", w->size, w->score[1],
                w->score[1] - w->score[0]);
    fprintf(out, "\tblock=%u,%u,%u\twarp=%u\tmask=0x%08x\tbase=0x%llx", w->block.x, w->block.y, w->block.z, w->warp,
            w->mask, (unsigned long long)w->base);
    if (shared) {
        fputs("\tdecl=", out);
        put_clean(out, w->decl != NULL ? w->decl : "");
    }
    fputs("\toffsets=", out);
    for (unsigned lane = 0; lane < 32; ++lane) {
        if (w->mask >> lane & 1u)
            fprintf(out, "%s%lld", lane ? "," : "", w->offset[lane]);
        else
            fprintf(out, "%s-", lane ? "," : "");
    }
    fputc('\n', out);
}

void cml_cpu_tally_picture(cml_cpu_tally *t, FILE *out, const char *space)
{
    pthread_mutex_lock(&t->lock);
    size_t n = 0;
    cml_cpu_tally_line *lines = cml_cpu_tally_lines(t, &n);
    for (size_t k = 0; k < n; ++k)
        if (lines[k].worst.have)
            write_line(out, space, &lines[k]);
    free(lines);
    pthread_mutex_unlock(&t->lock);
}

int cml_cpu_picture_write(const char *path)
{
    FILE *out = fopen(path, "w");
    if (out == NULL) {
        fprintf(stderr, "cml-cpu picture: cannot write %s\n", path);
        return -1;
    }
    fprintf(out, "cml-cpu picture 1\n");
    cml_cpu_banks_picture(out);
    cml_cpu_sectors_picture(out);
    return fclose(out) == 0 ? 0 : -1;
}

void cml_cpu_picture_on(void)
{
    cml_cpu_check_set_mode(cml_cpu_check_mode | CML_CPU_CHECK_BANKS | CML_CPU_CHECK_SECTORS | CML_CPU_CHECK_PICTURE);
}

/* CML_CPU_PICTURE=<file>: record from the start (with the bank and sector
 * counts, whatever CML_CPU_CHECK says) and write <file> at exit. */
static const char *picture_path;

static void picture_at_exit(void)
{
    if (picture_path != NULL)
        cml_cpu_picture_write(picture_path);
}

void cml_cpu_picture_init(void)
{
    const char *env = getenv("CML_CPU_PICTURE");
    if (env == NULL || *env == '\0')
        return;
    picture_path = env;
    atexit(picture_at_exit);
    cml_cpu_picture_on();
}
