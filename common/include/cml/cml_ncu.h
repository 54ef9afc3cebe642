/* cml_ncu.h: hardware counters through Nsight Compute (ncu), for the labs
 * that teach something a counter shows (shared-memory bank conflicts,
 * global-memory coalescing).
 *
 * A runner measures its own kernels by running itself again under ncu, in a
 * mode that launches each kernel of interest once (e.g. --check-only), and
 * reading ncu's CSV. Where ncu is missing or the GPU refuses its counters,
 * the result says so in one plain line ("counters not available: ..."): a
 * missing measurement is never shown as zero.
 */
#ifndef CML_NCU_H
#define CML_NCU_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CML_NCU_MAX_KERNELS 64
/* 40: --profile reads some 35 metrics of each launch in one ncu run. */
#define CML_NCU_MAX_METRICS 40
#define CML_NCU_MAX_LINES 64

/* The shared-memory bank-conflict counters (conflicts = wavefronts beyond
 * the one a conflict-free access needs). */
#define CML_NCU_SHARED_LD_CONFLICTS "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
#define CML_NCU_SHARED_ST_CONFLICTS "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"

/* Global-memory coalescing: the 32-byte sectors that warp-level global
 * loads and stores touched, and their requests (one per warp instruction);
 * sectors per request is 4 for 32 lanes reading consecutive 4-byte words,
 * 32 when every lane's word lies in a sector of its own. */
#define CML_NCU_GLOBAL_LD_SECTORS "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
#define CML_NCU_GLOBAL_LD_REQUESTS "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
#define CML_NCU_GLOBAL_ST_SECTORS "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
#define CML_NCU_GLOBAL_ST_REQUESTS "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"

/* One source line's global loads or stores, summed over a run's launches
 * of a kernel (the CPU path's sector counts give them; ncu's details page
 * has none). */
typedef struct cml_ncu_line {
    char kernel[64];
    char where[160];                          /* "file.cu:LINE", the path left out */
    int store;
    double requests, sectors, ideal;          /* ideal: the fewest sectors that hold the bytes */
} cml_ncu_line;

typedef struct cml_ncu_counts {
    int available;                            /* 1 when ncu profiled at least one launch */
    char reason[256];                         /* why not, when available == 0 */
    int nmetrics;
    int nkernels;                             /* profiled launches, in launch order */
    char kernel[CML_NCU_MAX_KERNELS][64];     /* kernel name as ncu prints it, truncated */
    double value[CML_NCU_MAX_KERNELS][CML_NCU_MAX_METRICS]; /* -1 where ncu gave no value */
    int nlines;                               /* CPU path, sector metrics: per source line */
    cml_ncu_line line[CML_NCU_MAX_LINES];
} cml_ncu_counts;

/* Runs `ncu --clock-control none --csv --print-units base --metrics
 * m1,m2,... [--kernel-name regex:FILTER] EXE ARGS...` and fills *out with every profiled launch's
 * metrics, in launch order (metrics in the order given, at most
 * CML_NCU_MAX_METRICS). ncu is $CML_NCU when set, else `ncu` on the PATH.
 * args is a NULL-terminated list; filter may be NULL (every kernel).
 * Returns 1 when counts are available; 0 otherwise, with out->reason saying
 * why (ncu not found, no permission for the counters, nothing profiled).
 * The program under ncu must not itself call cml_ncu_collect.
 * On the CPU path (common/cpu) the runtime's counts stand in for ncu: the
 * program runs with CML_CPU_CHECK=banks for the bank-conflict metrics or
 * =sectors for the global ones (both kinds in one call: one run under
 * CML_CPU_CHECK=sectors,banks, its launch lines paired in order; any other
 * metric has no value, -1), and with sectors, out->line holds the source
 * lines too. */
int cml_ncu_collect(const char *exe, const char *const *args, const char *const *metrics, int nmetrics,
                    const char *filter, cml_ncu_counts *out);

/* The absolute path of the running program (for running itself under ncu).
 * Returns 1 on success, 0 when it cannot be found. */
int cml_self_exe(char *buf, size_t len);

/* Parses the text ncu prints with --csv (details page) into *out: rows
 * whose "Metric Name" is one of metrics; values may carry thousands
 * separators ("1,024"); a value in a scaled unit ("Mbyte", "usecond") is
 * given in bytes, sectors or nanoseconds. Returns the number of launches found. Exposed for
 * host tests; cml_ncu_collect calls it. */
int cml_ncu_parse_csv(const char *text, const char *const *metrics, int nmetrics, cml_ncu_counts *out);

/* Runs cmd through the shell (popen) and returns all it printed on stdout,
 * malloc'd and NUL-terminated, and its wait status (as pclose gives it) in
 * *status; NULL when it cannot start or the output cannot be held. Shared
 * by the ncu runs here and kit_sectors_agree (common/src/run_read.c). */
char *cml_run_read(const char *cmd, int *status);

#ifdef __cplusplus
}
#endif
#endif /* CML_NCU_H */
