/* Warp instructions rebuilt from the lanes' accesses, and the counts kept per
 * code address and kernel: what the bank counts (cml_cpu_banks.c, shared
 * memory) and the sector counts (cml_cpu_sectors.c, global memory) share.
 * See cml_cpu_internal.h for the contracts. */
#define _GNU_SOURCE
#include "cml_cpu_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static void *grow_array(void *p, size_t *cap, size_t elem, const char *tag)
{
    size_t n = *cap ? *cap * 2 : 64;
    void *q = realloc(p, n * elem);
    if (q == NULL) {
        fprintf(stderr, "cml-cpu %s: out of memory\n", tag);
        abort();
    }
    *cap = n;
    return q;
}

// ------------------------------------------------------------ the log

static void append(cml_cpu_warp_log *log, unsigned linear, uintptr_t addr, int size, int store, void *pc, int anchor)
{
    if (log->n == log->cap)
        log->acc = grow_array(log->acc, &log->cap, sizeof *log->acc, "checks");
    log->acc[log->n] =
        (cml_cpu_access){pc, addr, linear, (uint32_t)log->n, (uint8_t)size, (uint8_t)store, (uint8_t)anchor, 0};
    ++log->n;
}

void cml_cpu_warp_log_add(cml_cpu_warp_log *log, unsigned linear, uintptr_t addr, int size, int store, void *pc)
{
    append(log, linear, addr, size, store, pc, 0);
}

void cml_cpu_warp_log_anchor(cml_cpu_warp_log *log, unsigned linear, uintptr_t addr, int size, int store, void *pc)
{
    append(log, linear, addr, size, store, pc, 1);
}

/* The next access of a lane that continues a vector taken apart: the same
 * lane, direction and size, the bytes right after, another code address
 * close by (g++ emits a float4's four loads together). */
static int continues(const cml_cpu_access *prev, const cml_cpu_access *next)
{
    uintptr_t a = (uintptr_t)prev->pc, b = (uintptr_t)next->pc;
    return !prev->anchor && !next->anchor && next->linear == prev->linear && next->store == prev->store &&
           next->size == prev->size && next->addr == prev->addr + prev->size && a != b &&
           (a > b ? a - b : b - a) < 64;
}

/* merge_vectors: in log order (a lane's accesses between two switches are
 * consecutive there), each run of 2 or 4 accesses that continue one
 * another and whose first address is aligned to their total (8 or 16
 * bytes at most) becomes one access (runs of 4 only when min_parts is 4);
 * anything else stays as it was.
 * Returns the new count. */
static size_t merge_vectors(cml_cpu_access *a, size_t n, int min_parts)
{
    size_t out = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && j - i < 4 && continues(&a[j - 1], &a[j]))
            ++j;
        size_t parts = j - i, total = parts * a[i].size;
        if ((parts == 2 || parts == 4) && (int)parts >= min_parts && total <= 16 && a[i].addr % total == 0) {
            a[out] = a[i];
            a[out].size = (uint8_t)total;
            a[out].seq = (uint32_t)out;
            ++out;
        } else {
            for (size_t k = i; k < j; ++k, ++out) {
                a[out] = a[k];
                a[out].seq = (uint32_t)out;
            }
        }
        i = j;
    }
    return out;
}

/* Scratch of at least `need` elements (its old contents dropped). */
static void *scratch(void *p, size_t *cap, size_t need, size_t elem)
{
    if (*cap >= need)
        return p;
    free(p);
    p = malloc(need * elem);
    if (p == NULL)
        abort();
    *cap = need;
    return p;
}

/* The same, keeping the old contents (an array that grows). */
static void *scratch_keep(void *p, size_t *cap, size_t need, size_t elem)
{
    if (*cap >= need)
        return p;
    size_t cap0 = *cap;
    while (*cap < need)
        *cap = *cap ? *cap * 2 : 64;
    void *q = realloc(p, *cap * elem);
    if (q == NULL) {
        *cap = cap0;
        abort();
    }
    return q;
}

/* One kind of access in a flush: a code address, anchor, direction and
 * size (tag: anchor << 16 | store << 8 | size, in the order the
 * grouping wants them); rank: its place among the flush's kinds in that order. */
typedef struct cml_cpu_kind {
    void *pc;
    uint32_t tag, rank;
} cml_cpu_kind;

static int by_pc_tag(const void *pa, const void *pb)
{
    const cml_cpu_kind *a = pa, *b = pb;
    if (a->pc != b->pc)
        return (uintptr_t)a->pc < (uintptr_t)b->pc ? -1 : 1;
    return a->tag < b->tag ? -1 : a->tag > b->tag;
}

/* Sorts log->acc[0..n) by warp, code address, anchor, direction, size,
 * linear index and seq (a total order: one result), in linear time: the
 * log is in seq order, so a stable counting sort by lane, then one by
 * (warp, kind), leaves each bucket in (lane, seq) order. A flush holds a
 * few dozen kinds and up to millions of accesses; qsort with a comparator
 * took 40% of a traced run of lab 09's harness. Each access's `line` holds
 * its kind's index during the sort, 0 after (the grouping sets it). */
static void sort_by_warp_pc_lane(cml_cpu_warp_log *log)
{
    size_t n = log->n, table = 64, nk = 0;
    cml_cpu_access *a = log->acc;
    unsigned warps = 0;
    for (;;) { /* the kinds, in a hash table of `table` slots (the first nk of log->kinds list them) */
        while (table < 4 * (nk + 1))
            table *= 2;
        log->kinds = scratch(log->kinds, &log->cap_kinds, 2 * table, sizeof *log->kinds);
        cml_cpu_kind *list = log->kinds, *slot = log->kinds + table;
        memset(slot, 0, table * sizeof *slot);
        nk = 0;
        size_t i = 0;
        for (; i < n && 2 * nk < table; ++i) {
            uint32_t tag = (uint32_t)a[i].anchor << 16 | (uint32_t)a[i].store << 8 | a[i].size;
            size_t h = (((uintptr_t)a[i].pc >> 2) ^ (uintptr_t)tag * 0x9e3779b1u) & (table - 1);
            while (slot[h].pc != NULL && !(slot[h].pc == a[i].pc && slot[h].tag == tag))
                h = (h + 1) & (table - 1);
            if (slot[h].pc == NULL) {
                slot[h] = (cml_cpu_kind){a[i].pc, tag, (uint32_t)nk};
                list[nk++] = slot[h];
            }
            a[i].line = slot[h].rank; /* its index in list, for now */
            if (a[i].linear / 32 >= warps)
                warps = a[i].linear / 32 + 1;
        }
        if (i == n)
            break;
        table *= 2; /* too full to stay quick: again, larger */
    }
    cml_cpu_kind *list = log->kinds;
    uint32_t *rank_of = (uint32_t *)(log->kinds + table); /* index in list -> rank (the table is done with) */
    qsort(list, nk, sizeof *list, by_pc_tag);
    for (size_t k = 0; k < nk; ++k)
        rank_of[list[k].rank] = (uint32_t)k;
    log->tmp = scratch(log->tmp, &log->cap_tmp, n, sizeof *log->tmp);
    size_t buckets = (size_t)warps * nk;
    log->counts = scratch(log->counts, &log->cap_counts, (buckets > 32 ? buckets : 32) + 1, sizeof *log->counts);
    size_t *at = log->counts;
    /* by lane, stable, into tmp */
    memset(at, 0, 33 * sizeof *at);
    for (size_t i = 0; i < n; ++i)
        ++at[a[i].linear % 32 + 1];
    for (size_t b = 1; b <= 32; ++b)
        at[b] += at[b - 1];
    for (size_t i = 0; i < n; ++i)
        log->tmp[at[a[i].linear % 32]++] = a[i];
    /* by (warp, kind), stable, back into acc */
    memset(at, 0, (buckets + 1) * sizeof *at);
    const cml_cpu_access *t = log->tmp;
    for (size_t i = 0; i < n; ++i)
        ++at[(size_t)(t[i].linear / 32) * nk + rank_of[t[i].line] + 1];
    for (size_t b = 1; b <= buckets; ++b)
        at[b] += at[b - 1];
    for (size_t i = 0; i < n; ++i) {
        cml_cpu_access *to = &a[at[(size_t)(t[i].linear / 32) * nk + rank_of[t[i].line]]++];
        *to = t[i];
        to->line = 0;
    }
}

/* lane takes part in instruction `in`, at addr. */
static void put(cml_cpu_warp_insn *in, unsigned lane, uintptr_t addr)
{
    in->addr[lane] = addr;
    in->mask |= 1u << lane;
}

/* Beyond this many cells of the placing table (a lane that skipped many
 * of many passes), the lane's accesses go to the first passes in order. */
#define MAX_DP_CELLS ((size_t)1 << 22)

/* Places lane's c accesses (acc[0..c), in order) into passes ins[0..longest)
 * where they cost least: a dynamic programme over (access r, pass s); access
 * r can only go to passes r-1 .. r-1+d with d = longest - c, so the table
 * is a band of (c + 1) x (d + 1) cells. Ties go to the earliest passes. */
static void place_lane(cml_cpu_warp_log *log, cml_cpu_warp_insn *ins, unsigned longest, const cml_cpu_access *acc,
                       unsigned c, unsigned lane, cml_cpu_insn_cost_fn cost, void *ctx)
{
    unsigned d = longest - c;
    size_t cells = (size_t)(c + 1) * (d + 1);
    if (cells > MAX_DP_CELLS) {
        for (unsigned r = 0; r < c; ++r)
            put(&ins[r], lane, acc[r].addr);
        return;
    }
    int *dp = log->dp = scratch(log->dp, &log->cap_dp, cells, sizeof *log->dp);
    const int inf = 1 << 29;
/* DP(r, s): least cost of placing the first r accesses in the first s passes (r <= s <= r + d). */
#define DP(r, s) dp[(size_t)(r) * (d + 1) + ((s) - (r))]
    for (unsigned s = 0; s <= d; ++s)
        DP(0, s) = 0;
    for (unsigned r = 1; r <= c; ++r)
        for (unsigned s = r; s <= r + d; ++s) {
            int place = DP(r - 1, s - 1) + cost(&ins[s - 1], lane, acc[r - 1].addr, ctx);
            int skip = s > r ? DP(r, s - 1) : inf;
            DP(r, s) = skip <= place ? skip : place;
        }
    for (unsigned r = c, s = longest; r > 0; --s) {
        if (s > r && DP(r, s - 1) == DP(r, s))
            continue; /* pass s-1 skipped: the access goes to an earlier pass */
        put(&ins[s - 1], lane, acc[r - 1].addr);
        --r;
    }
#undef DP
}

/* The instructions ins[0..n), made ready for the accesses of group acc. */
static cml_cpu_warp_insn *instructions(cml_cpu_warp_log *log, const cml_cpu_access *acc, unsigned n)
{
    cml_cpu_warp_insn *ins = log->ins = scratch(log->ins, &log->cap_ins, n, sizeof *log->ins);
    for (unsigned k = 0; k < n; ++k) {
        ins[k].pc = acc[0].pc;
        ins[k].store = acc[0].store;
        ins[k].size = acc[0].size;
        ins[k].warp = acc[0].linear / 32;
        ins[k].mask = 0;
    }
    return ins;
}

static void emit_all(const cml_cpu_warp_insn *ins, unsigned n, cml_cpu_insn_fn emit, void *ctx)
{
    for (unsigned k = 0; k < n; ++k)
        if (ins[k].mask != 0)
            emit(&ins[k], ctx);
}

/* The end of the run of lane's accesses that starts at acc[i] (acc sorted by lane). */
static size_t lane_end(const cml_cpu_access *acc, size_t i, size_t n)
{
    size_t j = i;
    while (j < n && acc[j].linear == acc[i].linear)
        ++j;
    return j;
}

/* The accesses acc[0..n) of one warp at one pc, sorted by lane then order
 * (the bank counts' way). Lanes that made the access as often as the most
 * frequent lane (M times) fill instructions 0..M-1 in order: that is the
 * k-th pass over the access in a loop both took. The others are placed by
 * place_lane, after them. Without this, a lane that skips the first pass
 * would be paired with the others' second, counting conflicts no GPU makes. */
static void group_by_cost(cml_cpu_warp_log *log, const cml_cpu_access *acc, size_t n, cml_cpu_insn_cost_fn cost,
                          cml_cpu_insn_fn emit, void *ctx)
{
    unsigned longest = 0;
    for (size_t i = 0, j; i < n; i = j) {
        j = lane_end(acc, i, n);
        longest = (unsigned)(j - i) > longest ? (unsigned)(j - i) : longest;
    }
    cml_cpu_warp_insn *ins = instructions(log, acc, longest);
    for (int pass = 0; pass < 2; ++pass) /* the lanes that took every pass first, then the others */
        for (size_t i = 0; i < n;) {
            size_t j = lane_end(acc, i, n);
            unsigned c = (unsigned)(j - i), lane = acc[i].linear % 32;
            if (pass == 0 && c == longest)
                for (unsigned k = 0; k < c; ++k)
                    put(&ins[k], lane, acc[i + k].addr);
            else if (pass == 1 && c != longest)
                place_lane(log, ins, longest, &acc[i], c, lane, cost, ctx);
            i = j;
        }
    emit_all(ins, longest, emit, ctx);
}

#define MAX_PASSES 65536u

/* Passes numbered by the visits of another source line, q[0..nq) (the
 * warp's accesses there, sorted by lane, then order; those at code address
 * `skip`, the access's own, left out): the pass of each access of acc[0..n)
 * is how many times its lane had visited the line before it. Valid when
 * the line is in the same loop: every lane of acc visited it, its accesses
 * get strictly rising numbers, the lanes visited it as often as one another
 * but for one (the trips of one loop), and some access has visits both
 * before and after it (not a loop before or after the access's own). Writes
 * the numbers to pass[] (when not NULL); returns how many passes are used
 * (0: not valid). */
static unsigned passes_after(const cml_cpu_access *q, size_t nq, const void *skip, const cml_cpu_access *acc,
                             size_t n, unsigned *pass, unsigned char *used)
{
    unsigned fewest = ~0u, most = 0, top = 0;
    for (size_t i = 0, j; i < nq; i = j) {
        j = lane_end(q, i, nq);
        unsigned visits = 0;
        for (size_t k = i; k < j; ++k)
            visits += q[k].pc != skip;
        fewest = visits < fewest ? visits : fewest;
        most = visits > most ? visits : most;
    }
    if (most == 0 || most > fewest + 1 || most > MAX_PASSES)
        return 0;
    memset(used, 0, most + 1);
    int inside = 0;
    size_t at = 0; /* q's run of the current lane */
    for (size_t i = 0, j; i < n; i = j) {
        j = lane_end(acc, i, n);
        while (at < nq && q[at].linear < acc[i].linear)
            ++at;
        size_t end = at < nq && q[at].linear == acc[i].linear ? lane_end(q, at, nq) : at, k = at;
        unsigned visits = 0, all = 0;
        for (size_t v = at; v < end; ++v)
            all += q[v].pc != skip;
        if (all == 0)
            return 0; /* this lane never visited the line */
        long before = -1;
        for (size_t r = i; r < j; ++r) {
            for (; k < end && q[k].seq < acc[r].seq; ++k)
                visits += q[k].pc != skip;
            if ((long)visits <= before)
                return 0; /* two accesses between the same two visits */
            inside |= visits > 0 && visits < all;
            before = visits;
            used[visits] = 1;
            if (pass != NULL)
                pass[r] = visits;
        }
    }
    for (unsigned p = 0; p <= most; ++p)
        top += used[p];
    return inside ? top : 0;
}

// ------------------------------------------------------------ source lines of code addresses

/* pc -> an id of its source line ("file:line"), cached: g++ may copy one
 * line's access into several code addresses (a loop peeled or unswitched),
 * and the passes of a loop are numbered by a line, whichever copy ran. */
static pthread_mutex_t lines_lock = PTHREAD_MUTEX_INITIALIZER;
typedef struct line_entry {
    void *pc;
    uint32_t id;
} line_entry;
static line_entry *line_cache; /* open addressing by pc */
static size_t line_cache_cap, line_cache_n;
static char **line_names;
static size_t n_line_names, cap_line_names;

/* pc's slot in the table (its own, or the empty one where it goes). */
static line_entry *line_slot(line_entry *table, size_t cap, const void *pc)
{
    size_t h = ((uintptr_t)pc * 0x9E3779B97F4A7C15ull >> 17) & (cap - 1);
    while (table[h].pc != NULL && table[h].pc != pc)
        h = (h + 1) & (cap - 1);
    return &table[h];
}

static uint32_t line_id(void *pc)
{
    pthread_mutex_lock(&lines_lock);
    if (line_cache_n * 2 >= line_cache_cap) {
        size_t cap = line_cache_cap ? 2 * line_cache_cap : 1024;
        line_entry *fresh = calloc(cap, sizeof *fresh);
        if (fresh == NULL)
            abort();
        for (size_t i = 0; i < line_cache_cap; ++i)
            if (line_cache[i].pc != NULL)
                *line_slot(fresh, cap, line_cache[i].pc) = line_cache[i];
        free(line_cache);
        line_cache = fresh;
        line_cache_cap = cap;
    }
    line_entry *e = line_slot(line_cache, line_cache_cap, pc);
    if (e->pc == NULL) {
        char where[600];
        cml_cpu_where_is(pc, where, sizeof where);
        char *in = strstr(where, " (in ");
        if (in != NULL)
            *in = '\0';
        size_t id = 0;
        while (id < n_line_names && strcmp(line_names[id], where) != 0)
            ++id;
        if (id == n_line_names) {
            line_names = scratch_keep(line_names, &cap_line_names, n_line_names + 1, sizeof *line_names);
            if ((line_names[n_line_names++] = strdup(where)) == NULL)
                abort();
        }
        e->pc = pc;
        e->id = (uint32_t)id;
        ++line_cache_n;
    }
    uint32_t id = e->id;
    pthread_mutex_unlock(&lines_lock);
    return id;
}

static int by_line_lane(const void *pa, const void *pb)
{
    const cml_cpu_access *a = pa, *b = pb;
    if (a->line != b->line)
        return a->line < b->line ? -1 : 1;
    if (a->linear != b->linear)
        return a->linear < b->linear ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Whether `line` looks like a loop's to the accesses at code address skip
 * (groups [w0, w1) of the warp): one of its other code addresses reached
 * twice by a lane; or, a line of its own, reached twice by a lane at any of
 * its code addresses (g++ may copy a loop's store into a version per
 * branch). Several accesses on the access's own line (a function's line
 * inlined seven times) are not a loop. */
static int line_loops(const cml_cpu_access *a, const size_t (*groups)[3], size_t w0, size_t w1, uint32_t line,
                      const void *skip, uint32_t own)
{
    for (size_t g = w0; g < w1; ++g)
        if (a[groups[g][0]].line == line && a[groups[g][0]].pc != skip && groups[g][2] >= 2)
            return 1;
    if (line == own)
        return 0;
    unsigned lanes[32] = {0};
    for (size_t g = w0; g < w1; ++g)
        if (a[groups[g][0]].line == line)
            for (size_t i = groups[g][0]; i < groups[g][1]; ++i)
                if (++lanes[a[i].linear % 32] >= 2)
                    return 1;
    return 0;
}

/* The global counts' way: the accesses of one warp at one code address,
 * acc[0..n) (sorted by lane, then order), one instruction per pass. A lane's
 * k-th access there is its k-th pass, as a GPU runs a loop's body once per
 * trip with every lane still in it, unless the lanes' visits of a source
 * line in the same loop number the passes: a tile loop whose load only some
 * lanes make (a grid's edge) and whose store to shared memory all make
 * leaves a lane that skips the load out of that trip's instruction only. Of
 * the lines that could number the passes (passes_after, line_loops; ev is
 * the warp's accesses sorted by line, lane and order, a their groups), the
 * one that makes the fewest instructions. */
static void group_by_pass(cml_cpu_warp_log *log, const cml_cpu_access *a, size_t w0, size_t w1, size_t g,
                          size_t nev, cml_cpu_insn_fn emit, void *ctx)
{
    const size_t(*groups)[3] = (const size_t(*)[3])log->groups;
    const cml_cpu_access *acc = a + groups[g][0], *ev = log->ev;
    size_t n = groups[g][1] - groups[g][0];
    log->pass = scratch(log->pass, &log->cap_pass, n, sizeof *log->pass);
    log->used = scratch(log->used, &log->cap_used, MAX_PASSES + 1, sizeof *log->used);
    size_t best = nev, best_end = nev;
    unsigned fewest = ~0u;
    for (size_t i = 0, j; i < nev; i = j) {
        for (j = i; j < nev && ev[j].line == ev[i].line;)
            ++j;
        unsigned k = line_loops(a, groups, w0, w1, ev[i].line, acc[0].pc, acc[0].line)
                         ? passes_after(ev + i, j - i, acc[0].pc, acc, n, NULL, log->used)
                         : 0;
        if (k > 0 && k < fewest)
            fewest = k, best = i, best_end = j;
    }
    unsigned passes = 0;
    if (best < nev) {
        passes_after(ev + best, best_end - best, acc[0].pc, acc, n, log->pass, log->used);
        for (size_t r = 0; r < n; ++r)
            passes = log->pass[r] + 1 > passes ? log->pass[r] + 1 : passes;
    } else { /* by count */
        for (size_t i = 0, j; i < n; i = j) {
            j = lane_end(acc, i, n);
            for (size_t r = i; r < j; ++r)
                log->pass[r] = (unsigned)(r - i);
            passes = (unsigned)(j - i) > passes ? (unsigned)(j - i) : passes;
        }
    }
    cml_cpu_warp_insn *ins = instructions(log, acc, passes);
    for (size_t r = 0; r < n; ++r)
        put(&ins[log->pass[r]], acc[r].linear % 32, acc[r].addr);
    emit_all(ins, passes, emit, ctx);
}

void cml_cpu_warp_log_flush(cml_cpu_warp_log *log, cml_cpu_insn_cost_fn cost, cml_cpu_insn_fn emit, void *ctx)
{
    if (log->n == 0)
        return;
    if (log->merge_vectors)
        log->n = merge_vectors(log->acc, log->n, log->merge_vectors);
    sort_by_warp_pc_lane(log);
    cml_cpu_access *a = log->acc;
    size_t n_groups = 0; /* runs of one warp, code address and kind: [start, end), most accesses of a lane */
    for (size_t i = 0, j; i < log->n; i = j) {
        size_t most = 0;
        for (j = i; j < log->n && a[j].pc == a[i].pc && a[j].linear / 32 == a[i].linear / 32 &&
                    a[j].anchor == a[i].anchor && a[j].store == a[i].store && a[j].size == a[i].size;)
            ++j;
        for (size_t k = i, e; k < j; k = e) {
            e = lane_end(a, k, j);
            most = e - k > most ? e - k : most;
        }
        log->groups = scratch_keep(log->groups, &log->cap_groups, n_groups + 1, sizeof *log->groups);
        log->groups[n_groups][0] = i;
        log->groups[n_groups][1] = j;
        log->groups[n_groups++][2] = most;
    }
    for (size_t w0 = 0, w1; w0 < n_groups; w0 = w1) {
        unsigned warp = a[log->groups[w0][0]].linear / 32;
        for (w1 = w0; w1 < n_groups && a[log->groups[w1][0]].linear / 32 == warp;)
            ++w1;
        size_t nev = 0;
        if (cost == NULL) { /* the warp's accesses by source line, to number passes by */
            size_t from = log->groups[w0][0], to = log->groups[w1 - 1][1];
            for (size_t g = w0; g < w1; ++g) {
                uint32_t line = line_id(a[log->groups[g][0]].pc);
                for (size_t i = log->groups[g][0]; i < log->groups[g][1]; ++i)
                    a[i].line = line;
            }
            nev = to - from;
            log->ev = scratch(log->ev, &log->cap_ev, nev, sizeof *log->ev);
            memcpy(log->ev, a + from, nev * sizeof *log->ev);
            qsort(log->ev, nev, sizeof *log->ev, by_line_lane);
        }
        for (size_t g = w0; g < w1; ++g) {
            const cml_cpu_access *first = &a[log->groups[g][0]];
            if (first->anchor)
                continue; /* numbers passes, is not counted */
            if (cost != NULL)
                group_by_cost(log, first, log->groups[g][1] - log->groups[g][0], cost, emit, ctx);
            else
                group_by_pass(log, a, w0, w1, g, nev, emit, ctx);
        }
    }
    log->n = 0;
}

// ------------------------------------------------------------ counts per code address and kernel

cml_cpu_tally_worker *cml_cpu_tally_join(cml_cpu_tally *t)
{
    cml_cpu_tally_worker *w = calloc(1, sizeof *w);
    if (w == NULL) {
        fprintf(stderr, "cml-cpu %s: out of memory\n", t->tag);
        abort();
    }
    pthread_mutex_lock(&t->lock);
    cml_cpu_tally_worker **grown = realloc(t->workers, (t->n_workers + 1) * sizeof *grown);
    if (grown != NULL) {
        t->workers = grown;
        t->workers[t->n_workers++] = w;
    }
    pthread_mutex_unlock(&t->lock);
    return w;
}

cml_cpu_tally_stat *cml_cpu_tally_add(cml_cpu_tally_worker *w, void *pc, int store,
                                      const unsigned long long v[CML_CPU_TALLY_VALUES])
{
    size_t i = 0;
    while (i < w->n_stats && !(w->stats[i].pc == pc && w->stats[i].store == store))
        ++i;
    if (i == w->n_stats) {
        if (w->n_stats == w->cap_stats)
            w->stats = grow_array(w->stats, &w->cap_stats, sizeof *w->stats, "checks");
        w->stats[w->n_stats++] = (cml_cpu_tally_stat){pc, store, {0}, NULL};
    }
    for (int k = 0; k < CML_CPU_TALLY_VALUES; ++k)
        w->stats[i].v[k] += v[k];
    return &w->stats[i];
}

static char *squeeze(const char *s) /* a kernel's name without spaces */
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

/* The result of (name, pc, store), made if new. Call with t->lock held. */
static cml_cpu_tally_result *result_of(cml_cpu_tally *t, const char *name, void *pc, int store)
{
    for (size_t r = 0; r < t->n_results; ++r)
        if (t->results[r].pc == pc && t->results[r].store == store && strcmp(t->results[r].kernel, name) == 0)
            return &t->results[r];
    if (t->n_results == t->cap_results)
        t->results = grow_array(t->results, &t->cap_results, sizeof *t->results, t->tag);
    t->results[t->n_results] = (cml_cpu_tally_result){strdup(name), pc, store, {0}, NULL};
    return &t->results[t->n_results++];
}

const char *cml_cpu_tally_grid_end(cml_cpu_tally *t, const char *kernel,
                                   unsigned long long launch[2][CML_CPU_TALLY_VALUES])
{
    char *name = squeeze(kernel);
    memset(launch, 0, 2 * sizeof launch[0]);
    pthread_mutex_lock(&t->lock);
    const char *kept = result_of(t, name, NULL, 0)->kernel; /* a marker (pc NULL): the kernel ran */
    for (size_t s = 0; s < t->n_workers; ++s) {
        cml_cpu_tally_worker *w = t->workers[s];
        for (size_t i = 0; i < w->n_stats; ++i) {
            cml_cpu_tally_stat *st = &w->stats[i];
            cml_cpu_tally_result *r = result_of(t, name, st->pc, st->store);
            for (int k = 0; k < CML_CPU_TALLY_VALUES; ++k) {
                r->v[k] += st->v[k];
                launch[st->store ? 1 : 0][k] += st->v[k];
            }
            if (st->worst != NULL && r->worst == NULL) { /* a picture's worst instruction: handed over */
                r->worst = st->worst;
            } else if (st->worst != NULL) {
                cml_cpu_worst_merge(r->worst, st->worst);
                free(st->worst);
            }
            st->worst = NULL;
        }
        w->n_stats = 0;
    }
    pthread_mutex_unlock(&t->lock);
    free(name);
    return kept;
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

int cml_cpu_tally_sum(cml_cpu_tally *t, const char *kernel, int store, unsigned long long sum[CML_CPU_TALLY_VALUES])
{
    int found = 0;
    memset(sum, 0, CML_CPU_TALLY_VALUES * sizeof sum[0]);
    pthread_mutex_lock(&t->lock);
    for (size_t i = 0; i < t->n_results; ++i)
        if (kernel_matches(t->results[i].kernel, kernel)) {
            found = 1;
            if (t->results[i].pc != NULL && t->results[i].store == (store != 0))
                for (int k = 0; k < CML_CPU_TALLY_VALUES; ++k)
                    sum[k] += t->results[i].v[k];
        }
    pthread_mutex_unlock(&t->lock);
    return found ? 0 : -1;
}

/* "file:line": by file, then by line number (line 41 before line 162). */
static int by_where(const char *x, const char *y)
{
    const char *cx = strrchr(x, ':'), *cy = strrchr(y, ':');
    size_t fx = cx ? (size_t)(cx - x) : strlen(x), fy = cy ? (size_t)(cy - y) : strlen(y);
    int c = strncmp(x, y, fx < fy ? fx : fy);
    if (c != 0 || fx != fy)
        return c != 0 ? c : fx < fy ? -1 : 1;
    long lx = cx ? strtol(cx + 1, NULL, 10) : 0, ly = cy ? strtol(cy + 1, NULL, 10) : 0;
    return lx != ly ? (lx < ly ? -1 : 1) : strcmp(x, y);
}

static int by_kernel_line(const void *a, const void *b)
{
    const cml_cpu_tally_line *x = a, *y = b;
    int c = strcmp(x->kernel, y->kernel);
    if (c == 0)
        c = by_where(x->where, y->where);
    return c != 0 ? c : x->store - y->store;
}

cml_cpu_tally_line *cml_cpu_tally_lines(cml_cpu_tally *t, size_t *n_lines)
{
    cml_cpu_tally_line *lines = calloc(t->n_results + 1, sizeof *lines);
    size_t n = 0;
    for (size_t r = 0; r < t->n_results && lines != NULL; ++r) {
        const cml_cpu_tally_result *res = &t->results[r];
        char where[600] = "";
        if (res->pc != NULL) { /* the marker makes a line of its own with nothing counted */
            cml_cpu_where_is(res->pc, where, sizeof where);
            char *in = strstr(where, " (in ");
            if (in != NULL)
                *in = '\0';
        }
        size_t k = 0;
        while (k < n && !(lines[k].store == res->store && strcmp(lines[k].kernel, res->kernel) == 0 &&
                          strcmp(lines[k].where, where) == 0))
            ++k;
        if (k == n) {
            lines[n].kernel = res->kernel;
            snprintf(lines[n].where, sizeof lines[n].where, "%s", where);
            lines[n].store = res->store;
            ++n;
        }
        for (int i = 0; i < CML_CPU_TALLY_VALUES; ++i)
            lines[k].v[i] += res->v[i];
        cml_cpu_worst_merge(&lines[k].worst, res->worst);
    }
    if (lines != NULL)
        qsort(lines, n, sizeof *lines, by_kernel_line);
    *n_lines = lines != NULL ? n : 0;
    return lines;
}

void cml_cpu_tally_report(cml_cpu_tally *t, FILE *out, cml_cpu_tally_line_fn line, cml_cpu_tally_total_fn total)
{
    pthread_mutex_lock(&t->lock);
    size_t n = 0;
    cml_cpu_tally_line *lines = cml_cpu_tally_lines(t, &n);
    if (lines != NULL) {
        unsigned long long sum[2][CML_CPU_TALLY_VALUES] = {{0}};
        for (size_t k = 0; k < n; ++k) {
            if (lines[k].where[0] != '\0') {
                line(out, lines[k].kernel, lines[k].where, lines[k].store, lines[k].v);
                for (int i = 0; i < CML_CPU_TALLY_VALUES; ++i)
                    sum[lines[k].store != 0][i] += lines[k].v[i];
            }
            if (k + 1 == n || strcmp(lines[k + 1].kernel, lines[k].kernel) != 0) {
                total(out, lines[k].kernel, (const unsigned long long(*)[CML_CPU_TALLY_VALUES])sum);
                memset(sum, 0, sizeof sum);
            }
        }
    }
    free(lines);
    pthread_mutex_unlock(&t->lock);
}

FILE *cml_cpu_tally_log(cml_cpu_tally *t, const char *var)
{
    if (!t->log_opened) {
        t->log_opened = 1;
        const char *path = getenv(var);
        if (path != NULL && path[0] != '\0' && (t->log = fopen(path, "a")) == NULL)
            fprintf(stderr, "cml-cpu %s: cannot open %s=%s\n", t->tag, var, path);
    }
    return t->log;
}
