/* cml_cpu.h: the interface between the CUDA C++ surface (cuda_runtime.h,
 * compiled into translated kernels) and the C runtime that runs them
 * (common/cpu/src/cml_cpu_runtime.c). Students never include this. */
#ifndef CML_CPU_H
#define CML_CPU_H

#include <stddef.h>
#include <stdint.h>
#include "cuda_runtime_api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cml_cpu_uint3 { unsigned x, y, z; } cml_cpu_uint3;

/* One launch as the translated `K<<<grid, block, smem>>>(args)` makes it.
 * body(ctx) runs the kernel for the calling CUDA thread; the runtime calls
 * it once per thread, on that thread's fiber. */
typedef struct cml_cpu_launch_desc {
    const char *kernel;   /* the kernel expression as written, e.g. "k<512, T>" */
    const char *file;     /* where the launch is */
    int line;
    cml_cpu_uint3 grid, block;
    size_t dynamic_smem;
    void (*body)(void *ctx);
    void *ctx;
    const void *fn;       /* the kernel function: reports name it (a launch through a
                             pointer parameter is written `kernel<<<...>>>`) */
} cml_cpu_launch_desc;

/* The kernel's name for reports and bank counts: the function's own name
 * with its template arguments ("reduce_kernel3<int>"), from the debug
 * information, or the launch expression when there is none. */
const char *cml_cpu_kernel_name(const cml_cpu_launch_desc *d);

/* Runs every block of the grid to the end (blocks spread over worker
 * threads, one fiber per CUDA thread). Returns cudaSuccess, a launch error
 * (invalid configuration; not sticky) or the sticky error of a fault, which
 * has already been reported on stderr. */
cudaError_t cml_cpu_run_grid(const cml_cpu_launch_desc *d);

/* 1 when p lies inside (or one past) a live cudaMalloc allocation. */
int cml_cpu_is_device_pointer(const void *p);

/* Device memory is closed to host code (PROT_NONE) except while a kernel
 * runs; the runtime's own host code that reads or writes it (cudaMemcpy,
 * cudaMemset, the cuBLAS and CUB stand-ins) opens the allocation that
 * contains p around the access, and closes it again with the same p. Opens
 * nest (a count per allocation); a p outside every allocation (a host
 * pointer, NULL) does nothing. Not for student code: a host access to
 * device memory is the mistake the closing catches. */
void cml_cpu_device_open(const void *p);
void cml_cpu_device_close(const void *p);

/* A file-scope __device__ or __constant__ variable as `labtool cpu-translate`
 * rewrites it (CML_CPU_SYMBOL, cuda_runtime.h): the variable lives in a
 * holder of whole pages of its own, and this entry, in the section
 * cml_cpu_symtab of the object that declares it, tells the runtime where.
 * At start-up the runtime closes those pages to host code as it closes
 * cudaMalloc memory (opened while a kernel runs and inside the runtime's
 * own copies), and maps the same memory a second time as the variable's
 * device address (cudaGetSymbolAddress): the name in host code stays no
 * device pointer, as on a GPU. */
typedef struct cml_cpu_symbol_entry {
    void *holder;        /* page-aligned; the variable at its start */
    size_t holder_bytes; /* a whole number of pages */
    size_t bytes;        /* sizeof the variable */
    const char *decl;    /* "__device__ float g[1024]", for reports */
} cml_cpu_symbol_entry;

/* The device address of the variable whose host name is at `symbol` (of
 * `bytes`): the second mapping of a rewritten variable; for any other (a
 * declaration the source pass left as it was) the variable itself, from
 * then on accepted as device memory but never closed. NULL for NULL. */
void *cml_cpu_symbol_address(const void *symbol, size_t bytes);

/* Reports a host pointer passed as argument `index` (0-based) of a launch
 * and makes the launch fail with a sticky cudaErrorIllegalAddress. */
cudaError_t cml_cpu_host_pointer_argument(const cml_cpu_launch_desc *d, int index, const void *p);

/* Inside a kernel: the block's dynamic shared memory (extern __shared__). */
void *cml_cpu_dynamic_shared(void);
/* Inside a kernel: a new static __shared__ array of `bytes` for the calling
 * worker (one OS thread runs one block at a time), aligned to `align` (or
 * more), ending where a guard page starts: an access past its end faults
 * and is reported with `decl` ("float tile[32][33]"). What `labtool
 * cpu-translate` makes of `__shared__ T a[N]...;` calls it once per worker
 * and declaration (through cml_cpu_static_shared_ref, cuda_runtime.h). */
void *cml_cpu_static_shared(size_t bytes, size_t align, const char *decl);
/* __syncthreads(): every thread of the block that has not exited arrives. */
void cml_cpu_syncthreads(void);

/* Warp operations. Each lane of `mask` that has not exited must arrive;
 * the value of lane src_lane is returned for CML_CPU_SHFL, the ballot of
 * the predicates (value != 0) for CML_CPU_BALLOT, 0 for CML_CPU_SYNCWARP. */
enum { CML_CPU_SYNCWARP = 0, CML_CPU_SHFL = 1, CML_CPU_BALLOT = 2 };
uint64_t cml_cpu_warp_op(int op, unsigned mask, uint64_t value, int src_lane);

/* The calling CUDA thread's lane mask of lanes that exist and have not exited. */
unsigned cml_cpu_active_mask(void);

/* clock64(): a per-thread counter (GPU cycles mean nothing here). */
long long cml_cpu_clock64(void);

/* Integer division by zero inside a kernel: reported like a fault (a GPU
 * gives an undefined result; the x86 would raise SIGFPE). */
void cml_cpu_trap(const char *what);

/* The current CUDA thread's coordinates (thread-local, set per switch): one
 * struct, so that the checks can tell its reads from shared memory (both
 * are thread-locals of the program). */
typedef struct cml_cpu_coords { cml_cpu_uint3 thread_idx, block_idx, block_dim, grid_dim; } cml_cpu_coords;
extern __thread cml_cpu_coords cml_cpu_coord;

/* __syncthreads_count/and/or: the barrier, then op CML_CPU_BAR_COUNT gives
 * how many arriving threads passed a non-zero predicate, CML_CPU_BAR_AND
 * whether all did, CML_CPU_BAR_OR whether any did. */
enum { CML_CPU_BAR_COUNT = 0, CML_CPU_BAR_AND = 1, CML_CPU_BAR_OR = 2 };
int cml_cpu_syncthreads_pred(int op, int predicate);

/* Bank-conflict model: the wavefronts of one warp's shared access, given
 * each lane's shared byte address (inactive lanes repeat an active lane's
 * address) and the access width. The signature is lab 01's
 * conflict_degree() (labs/01_shared_banks/banks.h), so the lab's own model
 * is plugged in as is: cml_cpu_set_bank_model(conflict_degree).
 * CML_CPU_CHECK=banks costs accesses with the runtime's own model,
 * cml_cpu_conflict_degree (src/cml_cpu_bank_model.c), unless another is set
 * (NULL: requests are counted, conflicts are not). Student code may call
 * neither (the grader's object checks). */
typedef int (*cml_cpu_bank_model_fn)(const uint32_t byte_address[32], int access_bytes);
int cml_cpu_conflict_degree(const uint32_t byte_address[32], int access_bytes);
void cml_cpu_set_bank_model(cml_cpu_bank_model_fn fn);

#ifdef __cplusplus
}
#endif

#endif
