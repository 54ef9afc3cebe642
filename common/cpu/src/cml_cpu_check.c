/* The checks of the CPU path: the access callbacks that GCC's
 * -fsanitize=thread puts before every load and store of a translated .cu
 * (implemented here; libtsan is not used), and the race check.
 *
 * CML_CPU_CHECK (read once at start-up) is a comma-separated list of
 * "race", "banks" and "sectors". Without it every callback returns after
 * testing one global, and the scheduler calls none of the hooks.
 *
 * Race check: within one barrier interval of one block, two accesses to the
 * same bytes by two threads, at least one a write, that no warp operation
 * orders, are a hazard. Per 4-byte word the check keeps the last writer and
 * the last two readers (thread, clock, code address); a __syncthreads
 * starts a new interval (older records no longer count); lanes of one warp
 * are ordered by the warp operations they pass together (__syncwarp,
 * shuffles, votes), tracked with a vector clock over the 32 lanes. Shared
 * memory is the worker's arena of static __shared__ variables
 * (cml_cpu_static_shared: `labtool cpu-translate` puts them there) and the
 * dynamic shared array; the program's thread-local block holds only the
 * references to them (and cml_cpu_coord) and is not checked; every other
 * address that is not the thread's own stack counts as global memory
 * (checked within the block, like shared).
 * Atomics are not checked. Each distinct pair of code addresses is one
 * hazard, printed once, after the grid, on the launching thread. */
#define _GNU_SOURCE
#include "cml_cpu_internal.h"

#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cml_cpu_check_mode;

// ------------------------------------------------------------ state per worker thread

typedef struct shadow {
    uintptr_t word;  /* address / 4 */
    uint32_t epoch;  /* the interval it was written in; older = empty */
    uint16_t wt, rt[2];  /* linear thread index + 1; 0 = none */
    uint8_t wm, rm[2];   /* which bytes of the word */
    uint32_t wc, rc[2];  /* the thread's own clock at the access */
    void *wpc, *rpc[2];
} shadow;

typedef struct check_state {
    int active;  /* a block runs on this thread */
    const cml_cpu_launch_desc *d;
    cml_cpu_uint3 block;
    uintptr_t dyn_lo, dyn_len;   /* dynamic shared memory */
    uintptr_t tls_lo, tls_len;   /* the program's thread-local block: not checked */
    uintptr_t arena_lo, arena_len; /* the worker's static __shared__ arrays */
    /* race check */
    uint32_t epoch;
    shadow *tab;
    size_t cap, live;
    uint32_t *vc;  /* vc[thread * 32 + lane]: what `thread` knows of `lane`'s clock */
    void *seen[256][2];  /* hazards this thread already handed on (a cache) */
} check_state;

static __thread check_state *ck;

static size_t tls_block_bytes; /* the program's PT_TLS, rounded up to its alignment */

static int find_tls(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size, (void)arg;
    for (int i = 0; i < info->dlpi_phnum; ++i)
        if (info->dlpi_phdr[i].p_type == PT_TLS) {
            size_t align = info->dlpi_phdr[i].p_align ? info->dlpi_phdr[i].p_align : 1;
            tls_block_bytes = (info->dlpi_phdr[i].p_memsz + align - 1) / align * align;
        }
    return 1; /* the first entry is the program itself */
}

static check_state *state(void)
{
    if (ck != NULL)
        return ck;
    check_state *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
#if defined(__x86_64__)
    /* x86-64 TLS variant II: the program's block ends at the thread pointer. */
    uintptr_t tp = (uintptr_t)__builtin_thread_pointer();
    c->tls_lo = tp - tls_block_bytes;
    c->tls_len = tls_block_bytes;
#endif
    ck = c;
    return c;
}

// ------------------------------------------------------------ hazards

typedef struct hazard {
    void *pc[2];
    int store[2];
    unsigned thread[2];
    cml_cpu_uint3 block, bdim;
    const cml_cpu_launch_desc *d; /* valid until the grid ends, when the hazard is printed */
    int global;
} hazard;

static pthread_mutex_t hazard_lock = PTHREAD_MUTEX_INITIALIZER;
static hazard *hazards;
static size_t n_hazards, cap_hazards, printed_hazards;
static size_t n_reported; /* distinct pairs of source lines printed */
static char **printed_pairs;
static size_t n_printed_pairs;

/* 1 when this pair of source lines was printed before (else remembers it). */
static int seen_pair(const char *pair)
{
    for (size_t i = 0; i < n_printed_pairs; ++i)
        if (strcmp(printed_pairs[i], pair) == 0)
            return 1;
    char **grown = realloc(printed_pairs, (n_printed_pairs + 1) * sizeof *grown);
    if (grown != NULL) {
        printed_pairs = grown;
        printed_pairs[n_printed_pairs++] = strdup(pair);
    }
    return 0;
}

static void add_hazard(check_state *c, void *pc0, int st0, unsigned t0, void *pc1, int st1, unsigned t1, int global)
{
    void *lo = pc0 < pc1 ? pc0 : pc1, *hi = pc0 < pc1 ? pc1 : pc0;
    size_t slot = (((uintptr_t)lo * 31u) ^ (uintptr_t)hi) % 256;
    if (c->seen[slot][0] == lo && c->seen[slot][1] == hi)
        return;
    c->seen[slot][0] = lo;
    c->seen[slot][1] = hi;
    pthread_mutex_lock(&hazard_lock);
    for (size_t i = 0; i < n_hazards; ++i) {
        hazard *h = &hazards[i];
        if ((h->pc[0] == lo && h->pc[1] == hi) || (h->pc[0] == hi && h->pc[1] == lo)) {
            pthread_mutex_unlock(&hazard_lock);
            return;
        }
    }
    if (n_hazards == cap_hazards) {
        size_t cap = cap_hazards ? 2 * cap_hazards : 16;
        hazard *grown = realloc(hazards, cap * sizeof *grown);
        if (grown == NULL) {
            pthread_mutex_unlock(&hazard_lock);
            return;
        }
        hazards = grown;
        cap_hazards = cap;
    }
    hazards[n_hazards++] = (hazard){{pc0, pc1}, {st0, st1}, {t0, t1}, c->block, c->d->block, c->d, global};
    pthread_mutex_unlock(&hazard_lock);
}

/* "file:line" of a code address (without the function). */
static void source_line(void *pc, char *buf, size_t len)
{
    cml_cpu_where_is(pc, buf, len);
    char *in = strstr(buf, " (in ");
    if (in != NULL)
        *in = '\0';
}

static void thread_coords(unsigned linear, cml_cpu_uint3 bdim, char *buf, size_t len)
{
    snprintf(buf, len, "(%u,%u,%u)", linear % bdim.x, linear / bdim.x % bdim.y, linear / (bdim.x * bdim.y));
}

void cml_cpu_check_grid_end(const cml_cpu_launch_desc *d)
{
    if (cml_cpu_check_mode & CML_CPU_CHECK_BANKS)
        cml_cpu_banks_grid_end(cml_cpu_kernel_name(d));
    if (cml_cpu_check_mode & CML_CPU_CHECK_SECTORS)
        cml_cpu_sectors_grid_end(cml_cpu_kernel_name(d));
    if (!(cml_cpu_check_mode & CML_CPU_CHECK_RACE))
        return;
    pthread_mutex_lock(&hazard_lock);
    for (; printed_hazards < n_hazards; ++printed_hazards) {
        const hazard *h = &hazards[printed_hazards];
        char at[2][600], who[2][40], line[1800];
        for (int k = 0; k < 2; ++k) {
            source_line(h->pc[k], at[k], sizeof at[k]);
            thread_coords(h->thread[k], h->bdim, who[k], sizeof who[k]);
        }
        snprintf(line, sizeof line, "Race reported between %s access at %s by thread %s and %s access at %s by thread "
                 "%s, block (%u,%u,%u) of kernel %s (%s memory)",
                 h->store[0] ? "Write" : "Read", at[0], who[0], h->store[1] ? "Write" : "Read", at[1], who[1],
                 h->block.x, h->block.y, h->block.z, cml_cpu_kernel_name(h->d), h->global ? "global" : "shared");
        /* Code addresses differ, lines may not (two instances of a template):
         * one line, one hazard, per pair of source lines. */
        char pair[1300];
        snprintf(pair, sizeof pair, "%s|%s|%s", at[0], at[1], h->global ? "g" : "s");
        if (seen_pair(pair))
            continue;
        ++n_reported;
        fprintf(stderr, "cml-cpu racecheck: %s\n", line);
    }
    pthread_mutex_unlock(&hazard_lock);
}

/* At exit: the count, and status 86 where the program would have exited 0. */
static void race_at_exit(int status, void *arg)
{
    (void)arg;
    size_t n = n_reported + (n_hazards - printed_hazards); /* a grid that never ended: unprinted */
    if (n == 0)
        return;
    fprintf(stderr, "cml-cpu racecheck: %zu hazard%s\n", n, n == 1 ? "" : "s");
    if (status == 0) {
        fflush(NULL);
        _exit(86);
    }
}

size_t cml_cpu_race_hazards(void)
{
    pthread_mutex_lock(&hazard_lock);
    size_t n = n_reported + (n_hazards - printed_hazards);
    pthread_mutex_unlock(&hazard_lock);
    return n;
}

// ------------------------------------------------------------ race check

static shadow *slot_of(check_state *c, uintptr_t word);

static void grow(check_state *c)
{
    size_t old_cap = c->cap;
    shadow *old = c->tab;
    shadow *tab = calloc(old_cap * 2, sizeof *tab);
    if (tab == NULL)
        return;
    c->tab = tab;
    c->cap = old_cap * 2;
    c->live = 0;
    for (size_t i = 0; i < old_cap; ++i)
        if (old[i].epoch == c->epoch) {
            shadow *s = slot_of(c, old[i].word);
            *s = old[i];
        }
    free(old);
}

/* The entry of `word` in this interval, made empty if new. Linear probing
 * where an entry of an older interval counts as empty: within one interval
 * the table behaves like a fresh one, so a new interval costs nothing. */
static shadow *slot_of(check_state *c, uintptr_t word)
{
    if (c->live * 2 >= c->cap)
        grow(c);
    size_t mask = c->cap - 1;
    size_t i = (size_t)((word * 0x9E3779B97F4A7C15ull) >> 20) & mask;
    for (;; i = (i + 1) & mask) {
        shadow *s = &c->tab[i];
        if (s->epoch != c->epoch) {
            memset(s, 0, sizeof *s);
            s->word = word;
            s->epoch = c->epoch;
            ++c->live;
            return s;
        }
        if (s->word == word)
            return s;
    }
}

/* Thread t's access at its clock tc happened before what thread u does now. */
static int ordered(const check_state *c, unsigned t, uint32_t tc, unsigned u)
{
    return t / 32 == u / 32 && c->vc[u * 32 + t % 32] >= tc;
}

static void race_word(check_state *c, uintptr_t word, unsigned bytes, int store, unsigned u, void *pc, int global)
{
    shadow *s = slot_of(c, word);
    uint32_t clock = c->vc[u * 32 + u % 32];
    if (s->wt != 0 && s->wt - 1u != u && (s->wm & bytes) && !ordered(c, s->wt - 1u, s->wc, u))
        add_hazard(c, s->wpc, 1, s->wt - 1u, pc, store, u, global);
    if (store) {
        for (int k = 0; k < 2; ++k)
            if (s->rt[k] != 0 && s->rt[k] - 1u != u && (s->rm[k] & bytes) && !ordered(c, s->rt[k] - 1u, s->rc[k], u))
                add_hazard(c, s->rpc[k], 0, s->rt[k] - 1u, pc, 1, u, global);
        s->wt = (uint16_t)(u + 1);
        s->wm = (uint8_t)bytes;
        s->wc = clock;
        s->wpc = pc;
        s->rt[0] = s->rt[1] = 0;
        return;
    }
    /* Keep two readers: replace this thread's own record, an empty one, or
     * one ordered before this read; else the older. */
    int k = 0;
    if (s->rt[0] == u + 1 || s->rt[0] == 0)
        k = 0;
    else if (s->rt[1] == u + 1 || s->rt[1] == 0)
        k = 1;
    else if (ordered(c, s->rt[1] - 1u, s->rc[1], u))
        k = 1;
    int same = s->rt[k] == u + 1;
    s->rt[k] = (uint16_t)(u + 1);
    s->rm[k] = (uint8_t)(same ? s->rm[k] | bytes : bytes);
    s->rc[k] = clock;
    s->rpc[k] = pc;
}

static void race_access(check_state *c, uintptr_t a, unsigned size, int store, unsigned u, void *pc, int global)
{
    uintptr_t end = a + size;
    for (uintptr_t w = a & ~(uintptr_t)3; w < end; w += 4) {
        uintptr_t lo = a > w ? a : w, hi = end < w + 4 ? end : w + 4;
        unsigned bytes = ((1u << (hi - lo)) - 1u) << (lo - w);
        race_word(c, w / 4, bytes, store, u, pc, global);
    }
}

// ------------------------------------------------------------ hooks from the scheduler

void cml_cpu_check_block_begin(const cml_cpu_launch_desc *d, cml_cpu_uint3 block, char *dyn, size_t dyn_bytes)
{
    check_state *c = state();
    if (c == NULL)
        return;
    if ((cml_cpu_check_mode & CML_CPU_CHECK_RACE) && c->tab == NULL) {
        c->cap = 1u << 14;
        c->tab = calloc(c->cap, sizeof *c->tab);
        c->vc = calloc(1024 * 32, sizeof *c->vc);
        if (c->tab == NULL || c->vc == NULL) {
            fprintf(stderr, "cml-cpu racecheck: out of memory\n");
            abort();
        }
        for (unsigned t = 0; t < 1024; ++t)
            c->vc[t * 32 + t % 32] = 1;
    }
    c->d = d;
    c->block = block;
    c->dyn_lo = (uintptr_t)dyn;
    c->dyn_len = dyn != NULL ? dyn_bytes : 0;
    ++c->epoch;
    c->live = 0;
    if (cml_cpu_check_mode & CML_CPU_CHECK_BANKS)
        cml_cpu_banks_block_begin(d->block.x * d->block.y * d->block.z);
    if (cml_cpu_check_mode & CML_CPU_CHECK_SECTORS)
        cml_cpu_sectors_block_begin();
    c->active = 1;
}

void cml_cpu_check_static_shared(char *arena, size_t bytes)
{
    check_state *c = state();
    if (c == NULL)
        return;
    c->arena_lo = (uintptr_t)arena;
    c->arena_len = bytes;
}

void cml_cpu_check_barrier(void)
{
    check_state *c = ck;
    if (c == NULL || !c->active)
        return;
    ++c->epoch;
    c->live = 0;
    if (cml_cpu_check_mode & CML_CPU_CHECK_BANKS)
        cml_cpu_banks_flush();
    if (cml_cpu_check_mode & CML_CPU_CHECK_SECTORS)
        cml_cpu_sectors_flush();
}

void cml_cpu_check_warp_sync(unsigned warp, unsigned go)
{
    check_state *c = ck;
    if (c == NULL || !c->active || c->vc == NULL || go == 0)
        return;
    uint32_t join[32] = {0};
    for (unsigned m = go; m; m &= m - 1) {
        const uint32_t *v = &c->vc[(warp * 32 + (unsigned)__builtin_ctz(m)) * 32];
        for (int l = 0; l < 32; ++l)
            join[l] = v[l] > join[l] ? v[l] : join[l];
    }
    for (unsigned m = go; m; m &= m - 1) {
        unsigned lane = (unsigned)__builtin_ctz(m);
        uint32_t *v = &c->vc[(warp * 32 + lane) * 32];
        memcpy(v, join, sizeof join);
        ++v[lane];
    }
}

void cml_cpu_check_block_end(int completed)
{
    check_state *c = ck;
    if (c == NULL)
        return;
    if (completed && (cml_cpu_check_mode & CML_CPU_CHECK_BANKS))
        cml_cpu_banks_flush();
    if (completed && (cml_cpu_check_mode & CML_CPU_CHECK_SECTORS))
        cml_cpu_sectors_flush();
    c->active = 0;
}

// ------------------------------------------------------------ the access callbacks

static inline __attribute__((always_inline)) void access_hook(const volatile void *p, unsigned size, int store,
                                                              void *pc)
{
    check_state *c = ck;
    if (c == NULL || !c->active)
        return;
    uintptr_t a = (uintptr_t)p;
    char here;
    if (((a ^ (uintptr_t)&here) & ~(uintptr_t)(CML_CPU_STACK_BYTES - 1)) == 0)
        return; /* the CUDA thread's own stack (aligned to its size): locals */
    if (a - c->tls_lo < c->tls_len)
        return; /* thread-locals: the references to __shared__ variables, cml_cpu_coord */
    int shared = a - c->arena_lo < c->arena_len || a - c->dyn_lo < c->dyn_len;
    cml_cpu_uint3 t = cml_cpu_coord.thread_idx, bd = cml_cpu_coord.block_dim;
    unsigned u = t.x + bd.x * (t.y + bd.y * t.z);
    if (shared && (cml_cpu_check_mode & CML_CPU_CHECK_BANKS))
        cml_cpu_banks_access(u, (uint32_t)a, (int)size, store, pc);
    if ((cml_cpu_check_mode & CML_CPU_CHECK_SECTORS) && shared)
        cml_cpu_sectors_anchor(u, a, (int)size, store, pc); /* numbers the passes of the global ones */
    else if ((cml_cpu_check_mode & CML_CPU_CHECK_SECTORS) && cml_cpu_device_kind((const void *)a) == CML_CPU_GLOBAL)
        cml_cpu_sectors_access(u, a, (int)size, store, pc);
    if ((cml_cpu_check_mode & CML_CPU_CHECK_RACE) && c->tab != NULL)
        race_access(c, a, size, store, u, pc, !shared);
}

/* The callbacks live in a section of their own, so that the watchdog's
 * report can tell a spin stopped inside one (cml_cpu_in_access_hook). */
#define CML_CPU_HOOK_FN __attribute__((section("cml_cpu_hooks")))
extern const char __start_cml_cpu_hooks[], __stop_cml_cpu_hooks[];
int cml_cpu_in_access_hook(const void *pc)
{
    return (const char *)pc >= __start_cml_cpu_hooks && (const char *)pc < __stop_cml_cpu_hooks;
}

#define CML_CPU_HOOK(name, size, store)                                       \
    void name(void *p);                                                       \
    CML_CPU_HOOK_FN void name(void *p)                                        \
    {                                                                         \
        if (__builtin_expect(cml_cpu_check_mode != 0, 0))                     \
            access_hook(p, size, store, __builtin_return_address(0));         \
    }
CML_CPU_HOOK(__tsan_read1, 1, 0)
CML_CPU_HOOK(__tsan_read2, 2, 0)
CML_CPU_HOOK(__tsan_read4, 4, 0)
CML_CPU_HOOK(__tsan_read8, 8, 0)
CML_CPU_HOOK(__tsan_read16, 16, 0)
CML_CPU_HOOK(__tsan_write1, 1, 1)
CML_CPU_HOOK(__tsan_write2, 2, 1)
CML_CPU_HOOK(__tsan_write4, 4, 1)
CML_CPU_HOOK(__tsan_write8, 8, 1)
CML_CPU_HOOK(__tsan_write16, 16, 1)
CML_CPU_HOOK(__tsan_unaligned_read2, 2, 0)
CML_CPU_HOOK(__tsan_unaligned_read4, 4, 0)
CML_CPU_HOOK(__tsan_unaligned_read8, 8, 0)
CML_CPU_HOOK(__tsan_unaligned_read16, 16, 0)
CML_CPU_HOOK(__tsan_unaligned_write2, 2, 1)
CML_CPU_HOOK(__tsan_unaligned_write4, 4, 1)
CML_CPU_HOOK(__tsan_unaligned_write8, 8, 1)
CML_CPU_HOOK(__tsan_unaligned_write16, 16, 1)
CML_CPU_HOOK(__tsan_volatile_read1, 1, 0)
CML_CPU_HOOK(__tsan_volatile_read2, 2, 0)
CML_CPU_HOOK(__tsan_volatile_read4, 4, 0)
CML_CPU_HOOK(__tsan_volatile_read8, 8, 0)
CML_CPU_HOOK(__tsan_volatile_read16, 16, 0)
CML_CPU_HOOK(__tsan_volatile_write1, 1, 1)
CML_CPU_HOOK(__tsan_volatile_write2, 2, 1)
CML_CPU_HOOK(__tsan_volatile_write4, 4, 1)
CML_CPU_HOOK(__tsan_volatile_write8, 8, 1)
CML_CPU_HOOK(__tsan_volatile_write16, 16, 1)

void __tsan_read_range(void *p, unsigned long size);
CML_CPU_HOOK_FN void __tsan_read_range(void *p, unsigned long size)
{
    if (__builtin_expect(cml_cpu_check_mode != 0, 0) && size <= 16)
        access_hook(p, (unsigned)size, 0, __builtin_return_address(0));
}
void __tsan_write_range(void *p, unsigned long size);
CML_CPU_HOOK_FN void __tsan_write_range(void *p, unsigned long size)
{
    if (__builtin_expect(cml_cpu_check_mode != 0, 0) && size <= 16)
        access_hook(p, (unsigned)size, 1, __builtin_return_address(0));
}

/* Instrumented code calls these too (function entry/exit is switched off
 * by the compile flags, but harmless if left on). */
void __tsan_init(void);
void __tsan_init(void) {}
void __tsan_func_entry(void *pc);
void __tsan_func_entry(void *pc) { (void)pc; }
void __tsan_func_exit(void);
void __tsan_func_exit(void) {}
void __tsan_vptr_update(void **p, void *v);
void __tsan_vptr_update(void **p, void *v) { (void)p, (void)v; }
void __tsan_vptr_read(void **p);
void __tsan_vptr_read(void **p) { (void)p; }

/* Atomics: done for real (blocks run on several OS threads), not checked. */
#define CML_CPU_TSAN_ATOMIC(bits, T)                                                                             \
    T __tsan_atomic##bits##_load(const volatile T *a, int mo);                                                  \
    T __tsan_atomic##bits##_load(const volatile T *a, int mo)                                                   \
    {                                                                                                            \
        (void)mo;                                                                                                \
        return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                                             \
    }                                                                                                            \
    void __tsan_atomic##bits##_store(volatile T *a, T v, int mo);                                               \
    void __tsan_atomic##bits##_store(volatile T *a, T v, int mo)                                                \
    {                                                                                                            \
        (void)mo;                                                                                                \
        __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                                                \
    }                                                                                                            \
    T __tsan_atomic##bits##_exchange(volatile T *a, T v, int mo);                                               \
    T __tsan_atomic##bits##_exchange(volatile T *a, T v, int mo)                                                \
    {                                                                                                            \
        (void)mo;                                                                                                \
        return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                                      \
    }                                                                                                            \
    CML_CPU_TSAN_RMW(bits, T, fetch_add)                                                                         \
    CML_CPU_TSAN_RMW(bits, T, fetch_sub)                                                                         \
    CML_CPU_TSAN_RMW(bits, T, fetch_and)                                                                         \
    CML_CPU_TSAN_RMW(bits, T, fetch_or)                                                                          \
    CML_CPU_TSAN_RMW(bits, T, fetch_xor)                                                                         \
    CML_CPU_TSAN_RMW(bits, T, fetch_nand)                                                                        \
    int __tsan_atomic##bits##_compare_exchange_strong(volatile T *a, T *c, T v, int mo, int fmo);               \
    int __tsan_atomic##bits##_compare_exchange_strong(volatile T *a, T *c, T v, int mo, int fmo)                \
    {                                                                                                            \
        (void)mo, (void)fmo;                                                                                     \
        return __atomic_compare_exchange_n(a, c, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                      \
    }                                                                                                            \
    int __tsan_atomic##bits##_compare_exchange_weak(volatile T *a, T *c, T v, int mo, int fmo);                 \
    int __tsan_atomic##bits##_compare_exchange_weak(volatile T *a, T *c, T v, int mo, int fmo)                  \
    {                                                                                                            \
        (void)mo, (void)fmo;                                                                                     \
        return __atomic_compare_exchange_n(a, c, v, 1, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                      \
    }                                                                                                            \
    T __tsan_atomic##bits##_compare_exchange_val(volatile T *a, T c, T v, int mo, int fmo);                     \
    T __tsan_atomic##bits##_compare_exchange_val(volatile T *a, T c, T v, int mo, int fmo)                      \
    {                                                                                                            \
        (void)mo, (void)fmo;                                                                                     \
        __atomic_compare_exchange_n(a, &c, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                            \
        return c;                                                                                                \
    }
#define CML_CPU_TSAN_RMW(bits, T, op)                                \
    T __tsan_atomic##bits##_##op(volatile T *a, T v, int mo);        \
    T __tsan_atomic##bits##_##op(volatile T *a, T v, int mo)         \
    {                                                                \
        (void)mo;                                                    \
        return __atomic_##op(a, v, __ATOMIC_SEQ_CST);                \
    }
CML_CPU_TSAN_ATOMIC(8, uint8_t)
CML_CPU_TSAN_ATOMIC(16, uint16_t)
CML_CPU_TSAN_ATOMIC(32, uint32_t)
CML_CPU_TSAN_ATOMIC(64, uint64_t)

void __tsan_atomic_thread_fence(int mo);
void __tsan_atomic_thread_fence(int mo)
{
    (void)mo;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
void __tsan_atomic_signal_fence(int mo);
void __tsan_atomic_signal_fence(int mo)
{
    (void)mo;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

// ------------------------------------------------------------ start-up

void cml_cpu_bank_counts_on(void) { cml_cpu_check_set_mode(cml_cpu_check_mode | CML_CPU_CHECK_BANKS); }
void cml_cpu_sector_counts_on(void) { cml_cpu_check_set_mode(cml_cpu_check_mode | CML_CPU_CHECK_SECTORS); }

void cml_cpu_check_set_mode(int mode)
{
    if (tls_block_bytes == 0)
        dl_iterate_phdr(find_tls, NULL);
    cml_cpu_check_mode = mode;
}

void cml_cpu_banks_at_exit(void);
void cml_cpu_banks_print_launches(void);
void cml_cpu_sectors_at_exit(void);
void cml_cpu_sectors_print_launches(void);

static void check_from_env(const char *env)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", env);
    int mode = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        if (strcmp(tok, "race") == 0)
            mode |= CML_CPU_CHECK_RACE;
        else if (strcmp(tok, "banks") == 0)
            mode |= CML_CPU_CHECK_BANKS;
        else if (strcmp(tok, "sectors") == 0)
            mode |= CML_CPU_CHECK_SECTORS;
        else
            fprintf(stderr, "cml-cpu: CML_CPU_CHECK: unknown check '%s' (race, banks, sectors)\n", tok);
    }
    if (mode & CML_CPU_CHECK_RACE)
        on_exit(race_at_exit, NULL);
    if (mode & CML_CPU_CHECK_BANKS) {
        atexit(cml_cpu_banks_at_exit);
        cml_cpu_banks_print_launches();
    }
    if (mode & CML_CPU_CHECK_SECTORS) {
        atexit(cml_cpu_sectors_at_exit);
        cml_cpu_sectors_print_launches();
    }
    cml_cpu_check_set_mode(mode);
}

__attribute__((constructor)) static void check_init(void)
{
    const char *env = getenv("CML_CPU_CHECK");
    if (env != NULL && *env != '\0')
        check_from_env(env);
    cml_cpu_picture_init(); /* CML_CPU_PICTURE adds its bits to those */
}
