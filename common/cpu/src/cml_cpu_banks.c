/* Shared-memory bank counts of the CPU path (CML_CPU_CHECK=banks), costed
 * with lab 01's bank model: conflict_degree() of the lab's reference
 * solution, solutions/01_shared_banks/bank_model.c, compiled into this
 * library under the name cml_cpu_ref_conflict_degree (see CMakeLists.txt);
 * cml_cpu_set_bank_model() plugs in another model of the same signature.
 *
 * One warp instruction = the accesses of one warp's lanes at the same code
 * address with the same occurrence number, counted per lane since the last
 * barrier (lanes run one after the other between barriers, so lane 5's
 * third pass over a load meets lane 0's third pass). Lanes that do not take
 * part repeat an active lane's address, as the model expects, so a partial
 * warp costs nothing extra. Per warp instruction: requests = its phases
 * (1 for 4-byte accesses, 2 for 8-byte, 4 for 16-byte; 1- and 2-byte
 * accesses count as their 4-byte word), wavefronts = the model's answer,
 * conflicts = wavefronts - requests. */
#define _GNU_SOURCE
#include "cml_cpu_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cml_cpu_ref_conflict_degree(const uint32_t byte_address[32], int access_bytes);

#ifdef CML_CPU_REF_BANK_MODEL
static cml_cpu_bank_model_fn model = cml_cpu_ref_conflict_degree;
#else
static cml_cpu_bank_model_fn model;
#endif

void cml_cpu_set_bank_model(cml_cpu_bank_model_fn fn) { model = fn; }

typedef struct occurrence { /* how often thread `thread` has run the access at pc in this interval */
    void *pc;
    uint32_t epoch;
    uint32_t thread;
    uint32_t count;
} occurrence;

typedef struct instruction { /* one warp's access at pc, occurrence occ */
    void *pc;
    uint32_t epoch;
    uint32_t occ;
    uint32_t warp;
    uint32_t mask;
    uint8_t store, size;
    uint32_t addr[32];
} instruction;

typedef struct stat {
    void *pc;
    int store;
    unsigned long long requests, wavefronts;
} stat;

typedef struct bank_state {
    uint32_t epoch;
    occurrence *occ;
    size_t occ_cap, occ_live;
    instruction *ins;
    size_t ins_cap, ins_live;
    uint32_t *live; /* indices into ins, this interval */
    stat *stats;    /* this grid, by (pc, store) */
    size_t n_stats, cap_stats;
} bank_state;

static __thread bank_state *bk;
static pthread_mutex_t banks_lock = PTHREAD_MUTEX_INITIALIZER;
static bank_state **states; /* every worker's, for the merge after a grid */
static size_t n_states;

typedef struct result {
    char *kernel; /* spaces removed */
    void *pc;
    int store;
    unsigned long long requests, wavefronts;
} result;
static result *results;
static size_t n_results, cap_results;

static void *grow_array(void *p, size_t *cap, size_t elem)
{
    size_t n = *cap ? *cap * 2 : 64;
    void *q = realloc(p, n * elem);
    if (q == NULL) {
        fprintf(stderr, "cml-cpu banks: out of memory\n");
        abort();
    }
    *cap = n;
    return q;
}

static size_t hash3(uintptr_t a, uint32_t b, uint32_t c)
{
    uint64_t h = (uint64_t)a * 0x9E3779B97F4A7C15ull ^ ((uint64_t)b << 32 | c) * 0xC2B2AE3D27D4EB4Full;
    return (size_t)(h ^ h >> 29);
}

static void rehash_occ(bank_state *b);
static void rehash_ins(bank_state *b);

static occurrence *occ_slot(bank_state *b, void *pc, uint32_t thread)
{
    if (b->occ_live * 2 >= b->occ_cap)
        rehash_occ(b);
    size_t mask = b->occ_cap - 1;
    for (size_t i = hash3((uintptr_t)pc, thread, 0) & mask;; i = (i + 1) & mask) {
        occurrence *o = &b->occ[i];
        if (o->epoch != b->epoch) {
            *o = (occurrence){pc, b->epoch, thread, 0};
            ++b->occ_live;
            return o;
        }
        if (o->pc == pc && o->thread == thread)
            return o;
    }
}

static instruction *ins_slot(bank_state *b, void *pc, uint32_t warp, uint32_t occ, int *fresh)
{
    if (b->ins_live * 2 >= b->ins_cap)
        rehash_ins(b);
    size_t mask = b->ins_cap - 1;
    for (size_t i = hash3((uintptr_t)pc, warp, occ) & mask;; i = (i + 1) & mask) {
        instruction *in = &b->ins[i];
        if (in->epoch != b->epoch) {
            in->pc = pc;
            in->epoch = b->epoch;
            in->occ = occ;
            in->warp = warp;
            in->mask = 0;
            b->live[b->ins_live++] = (uint32_t)i;
            *fresh = 1;
            return in;
        }
        if (in->pc == pc && in->warp == warp && in->occ == occ) {
            *fresh = 0;
            return in;
        }
    }
}

static void rehash_occ(bank_state *b)
{
    occurrence *old = b->occ;
    size_t old_cap = b->occ_cap;
    b->occ_cap = old_cap ? old_cap * 2 : 1024;
    b->occ = calloc(b->occ_cap, sizeof *b->occ);
    if (b->occ == NULL) {
        fprintf(stderr, "cml-cpu banks: out of memory\n");
        abort();
    }
    b->occ_live = 0;
    for (size_t i = 0; i < old_cap; ++i)
        if (old[i].epoch == b->epoch)
            *occ_slot(b, old[i].pc, old[i].thread) = old[i];
    free(old);
}

static void rehash_ins(bank_state *b)
{
    instruction *old = b->ins;
    uint32_t *old_live = b->live;
    size_t old_n = b->ins_live;
    b->ins_cap = b->ins_cap ? b->ins_cap * 2 : 256;
    b->ins = calloc(b->ins_cap, sizeof *b->ins);
    b->live = malloc(b->ins_cap / 2 * sizeof *b->live + sizeof *b->live);
    if (b->ins == NULL || b->live == NULL) {
        fprintf(stderr, "cml-cpu banks: out of memory\n");
        abort();
    }
    b->ins_live = 0;
    for (size_t k = 0; k < old_n; ++k) {
        const instruction *o = &old[old_live[k]];
        int fresh;
        instruction *in = ins_slot(b, o->pc, o->warp, o->occ, &fresh);
        *in = *o;
    }
    free(old);
    free(old_live);
}

void cml_cpu_banks_block_begin(unsigned n_threads)
{
    (void)n_threads;
    if (bk == NULL) {
        bk = calloc(1, sizeof *bk);
        if (bk == NULL) {
            fprintf(stderr, "cml-cpu banks: out of memory\n");
            abort();
        }
        bk->epoch = 1;
        rehash_occ(bk);
        rehash_ins(bk);
        pthread_mutex_lock(&banks_lock);
        bank_state **grown = realloc(states, (n_states + 1) * sizeof *states);
        if (grown != NULL) {
            states = grown;
            states[n_states++] = bk;
        }
        pthread_mutex_unlock(&banks_lock);
    }
    ++bk->epoch;
    bk->occ_live = bk->ins_live = 0;
}

void cml_cpu_banks_access(unsigned linear, uint32_t addr, int size, int store, void *pc)
{
    bank_state *b = bk;
    if (b == NULL)
        return;
    if (size < 4) {
        addr &= ~3u;
        size = 4;
    } else if (size > 16) {
        size = 16;
    }
    occurrence *o = occ_slot(b, pc, linear);
    uint32_t occ = o->count++;
    int fresh;
    instruction *in = ins_slot(b, pc, linear / 32, occ, &fresh);
    if (fresh) {
        in->store = (uint8_t)store;
        in->size = (uint8_t)size;
    }
    in->addr[linear % 32] = addr;
    in->mask |= 1u << (linear % 32);
}

static void stat_add(bank_state *b, void *pc, int store, unsigned long long r, unsigned long long w)
{
    for (size_t i = 0; i < b->n_stats; ++i)
        if (b->stats[i].pc == pc && b->stats[i].store == store) {
            b->stats[i].requests += r;
            b->stats[i].wavefronts += w;
            return;
        }
    if (b->n_stats == b->cap_stats)
        b->stats = grow_array(b->stats, &b->cap_stats, sizeof *b->stats);
    b->stats[b->n_stats++] = (stat){pc, store, r, w};
}

void cml_cpu_banks_flush(void)
{
    bank_state *b = bk;
    if (b == NULL)
        return;
    /* Consecutive instructions usually share a pc: remember the last stat. */
    for (size_t k = 0; k < b->ins_live; ++k) {
        instruction *in = &b->ins[b->live[k]];
        uint32_t first = in->addr[__builtin_ctz(in->mask)];
        for (unsigned lane = 0; lane < 32; ++lane)
            if (!(in->mask >> lane & 1u))
                in->addr[lane] = first;
        int w = model != NULL ? model(in->addr, in->size) : -1;
        if (w < 0)
            continue; /* no model, or one that refuses the access (misaligned) */
        stat_add(b, in->pc, in->store, (unsigned long long)in->size / 4, (unsigned long long)w);
    }
    ++b->epoch;
    b->occ_live = b->ins_live = 0;
}

static char *squeeze(const char *s) /* the kernel's name without spaces */
{
    char *r = malloc(strlen(s) + 1), *o = r;
    if (r == NULL)
        abort();
    for (; *s; ++s)
        if (*s != ' ')
            *o++ = *s;
    *o = '\0';
    return r;
}

void cml_cpu_banks_grid_end(const char *kernel)
{
    char *name = squeeze(kernel);
    pthread_mutex_lock(&banks_lock);
    /* A marker (pc NULL) says the kernel ran, shared memory or not. */
    size_t m = 0;
    while (m < n_results && !(results[m].pc == NULL && strcmp(results[m].kernel, name) == 0))
        ++m;
    if (m == n_results) {
        if (n_results == cap_results)
            results = grow_array(results, &cap_results, sizeof *results);
        results[n_results++] = (result){strdup(name), NULL, 0, 0, 0};
    }
    for (size_t s = 0; s < n_states; ++s) {
        bank_state *b = states[s];
        for (size_t i = 0; i < b->n_stats; ++i) {
            const stat *st = &b->stats[i];
            size_t r = 0;
            while (r < n_results &&
                   !(results[r].pc == st->pc && results[r].store == st->store && strcmp(results[r].kernel, name) == 0))
                ++r;
            if (r == n_results) {
                if (n_results == cap_results)
                    results = grow_array(results, &cap_results, sizeof *results);
                results[n_results++] = (result){strdup(name), st->pc, st->store, 0, 0};
            }
            results[r].requests += st->requests;
            results[r].wavefronts += st->wavefronts;
        }
        b->n_stats = 0;
    }
    pthread_mutex_unlock(&banks_lock);
    free(name);
}

/* kernel matches `name` (spaces removed): all of it, or its name without
 * namespace and template arguments ("ns::k<256,float>" matches "k"). */
static int kernel_matches(const char *name, const char *kernel)
{
    if (kernel == NULL)
        return 1;
    char *want = squeeze(kernel);
    int same = strcmp(name, want) == 0;
    if (!same) {
        const char *base = name, *p;
        while ((p = strstr(base, "::")) != NULL && (strchr(base, '<') == NULL || p < strchr(base, '<')))
            base = p + 2;
        size_t len = strcspn(base, "<");
        same = strlen(want) == len && strncmp(base, want, len) == 0;
    }
    free(want);
    return same;
}

int cml_cpu_bank_totals(const char *kernel, unsigned long long *ld, unsigned long long *st)
{
    unsigned long long l = 0, s = 0;
    int found = 0;
    pthread_mutex_lock(&banks_lock);
    for (size_t r = 0; r < n_results; ++r)
        if (kernel_matches(results[r].kernel, kernel)) {
            found = 1;
            unsigned long long c = results[r].wavefronts - results[r].requests;
            if (results[r].store)
                s += c;
            else
                l += c;
        }
    pthread_mutex_unlock(&banks_lock);
    if (ld != NULL)
        *ld = l;
    if (st != NULL)
        *st = s;
    return found ? 0 : -1;
}

typedef struct line_total {
    const char *kernel;
    char where[600];
    int store;
    unsigned long long requests, wavefronts;
} line_total;

static int by_kernel_line(const void *a, const void *b)
{
    const line_total *x = a, *y = b;
    int c = strcmp(x->kernel, y->kernel);
    if (c == 0)
        c = strcmp(x->where, y->where);
    return c != 0 ? c : x->store - y->store;
}

void cml_cpu_banks_at_exit(void);
void cml_cpu_banks_at_exit(void) { cml_cpu_banks_report(stderr); }

void cml_cpu_banks_report(FILE *out)
{
    if (model == NULL) {
        fprintf(out, "cml-cpu banks: no bank model in this build (solutions/01_shared_banks/bank_model.c "
                        "was not there when the runtime was built)\n");
        return;
    }
    pthread_mutex_lock(&banks_lock);
    line_total *lines = calloc(n_results + 1, sizeof *lines);
    size_t n = 0;
    for (size_t r = 0; r < n_results && lines != NULL; ++r) {
        char where[600] = "";
        if (results[r].pc != NULL) { /* the marker makes a line of its own with nothing counted */
            cml_cpu_where_is(results[r].pc, where, sizeof where);
            char *in = strstr(where, " (in ");
            if (in != NULL)
                *in = '\0';
        }
        size_t k = 0;
        while (k < n && !(lines[k].store == results[r].store && strcmp(lines[k].kernel, results[r].kernel) == 0 &&
                          strcmp(lines[k].where, where) == 0))
            ++k;
        if (k == n) {
            lines[n].kernel = results[r].kernel;
            snprintf(lines[n].where, sizeof lines[n].where, "%s", where);
            lines[n].store = results[r].store;
            ++n;
        }
        lines[k].requests += results[r].requests;
        lines[k].wavefronts += results[r].wavefronts;
    }
    if (lines != NULL) {
        qsort(lines, n, sizeof *lines, by_kernel_line);
        unsigned long long c[2] = {0, 0};
        for (size_t k = 0; k < n; ++k) {
            if (lines[k].where[0] != '\0') {
                fprintf(out, "cml-cpu banks: %s %s %s requests=%llu wavefronts=%llu conflicts=%llu\n",
                        lines[k].kernel, lines[k].where, lines[k].store ? "st" : "ld", lines[k].requests,
                        lines[k].wavefronts, lines[k].wavefronts - lines[k].requests);
                c[lines[k].store != 0] += lines[k].wavefronts - lines[k].requests;
            }
            if (k + 1 == n || strcmp(lines[k + 1].kernel, lines[k].kernel) != 0) {
                fprintf(out, "cml-cpu banks: %s total ld conflicts=%llu st conflicts=%llu\n", lines[k].kernel,
                        c[0], c[1]);
                c[0] = c[1] = 0;
            }
        }
    }
    free(lines);
    pthread_mutex_unlock(&banks_lock);
}
