/* cml_access_picture.h: a runner's --picture. Reads the records the CPU
 * path writes under CML_CPU_PICTURE (common/cpu/README.md, "Access
 * pictures": per kernel, source line and direction, the line's counts and
 * its worst warp instruction with the 32 lanes' addresses) and draws one
 * warp's lanes against the 32 banks (shared memory) or against the 32-byte
 * sectors and 128-byte lines (global memory) as an SVG. Plain C, no CUDA:
 * the runtime's tests draw with the same functions. */
#ifndef CML_ACCESS_PICTURE_H
#define CML_ACCESS_PICTURE_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One record: a source line's loads or stores in one memory space. */
typedef struct cml_access {
    int shared;                      /* 1: shared memory, 0: global memory */
    int store;                       /* 0: ld, 1: st */
    char kernel[256];                /* as the CPU path names it ("k<32>", no spaces) */
    char where[512];                 /* "path/file.cu:LINE" */
    char decl[160];                  /* shared: the variable ("float tile[32][33]"), or "" */
    /* the line, summed over every launch: warp instructions, requests (shared: phases, one per 4 bytes of
     * a lane's access; global: one per instruction), wavefronts or sectors, and the ideal of those */
    unsigned long long instructions, requests, count, ideal;
    /* its worst instruction: wavefronts or sectors, their ideal, bytes per lane, where it ran */
    long long worst_count, worst_ideal;
    int size;
    unsigned block[3], warp;
    uint32_t mask;                   /* the lanes that took part */
    unsigned long long base;         /* shared: the variable's start; global: 128-byte aligned */
    long long offset[32];            /* each lane's byte address - base (where mask has it) */
} cml_access;

typedef struct cml_access_list {
    cml_access *a;                   /* malloc'd; cml_access_free */
    int n;
} cml_access_list;

/* Reads a CML_CPU_PICTURE file into *list. Returns 1, or 0 with why. */
int cml_access_read(const char *path, cml_access_list *list, char *why, size_t len);
void cml_access_free(cml_access_list *list);

/* The record whose worst instruction is worst in one space (shared: the
 * highest conflict degree, wavefronts per phase; global: the most sectors
 * beyond the ideal, then the most sectors), kernels whose name starts with
 * skip_prefix (the kit's own "cml_", or NULL) left out; NULL when none. */
const cml_access *cml_access_worst(const cml_access_list *list, int shared, const char *skip_prefix);

/* Writes the SVG: a title line, a panel per space (shared, global; a NULL
 * record draws a panel saying the step made no such access, with
 * none_text), a footer line. Returns 0, or -1 when the file cannot be
 * written. */
int cml_access_svg(FILE *out, const char *title, const cml_access *shared, const cml_access *global,
                   const char *none_shared, const char *none_global, const char *footer);

/* The panel's headline, e.g. "32-way bank conflict: 32 wavefronts per
 * request (ideal: 1 wavefront)" or "32 sectors per request (ideal: 4
 * sectors per request)", into buf. */
void cml_access_headline(const cml_access *a, char *buf, size_t len);

/* The conflict degree of the worst instruction as drawn (shared): the most
 * distinct 4-byte words one bank holds in one phase. */
int cml_access_degree(const cml_access *a);

#ifdef __cplusplus
}
#endif
#endif /* CML_ACCESS_PICTURE_H */
