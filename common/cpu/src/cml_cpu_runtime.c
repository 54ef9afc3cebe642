/* The CPU execution path's runtime: device memory, errors, and the grid
 * scheduler that runs translated kernels.
 *
 * Model: a grid's blocks are spread over a pool of OS threads (workers);
 * a worker runs one block at a time, each CUDA thread of the block as a
 * fiber on its own 64 KiB stack. Fibers switch only at barriers, warp
 * operations and exit, so static __shared__ (a thread_local) is per block.
 * Faults (SIGSEGV on a guard page, SIGFPE, the watchdog) leave the block by
 * siglongjmp, are reported with kernel, block, thread and source line, and
 * set a sticky error like a GPU's. */
#define _GNU_SOURCE
#include "cml_cpu.h"
#include "cml_cpu_fiber.h"
#include "cml_cpu_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

// ------------------------------------------------------------ errors

static cudaError_t sticky_error = cudaSuccess; /* a fault: every later call returns it */
static cudaError_t last_error = cudaSuccess;   /* cleared by cudaGetLastError */
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;

static cudaError_t record(cudaError_t err)
{
    if (err != cudaSuccess && last_error == cudaSuccess)
        last_error = err;
    return err;
}

/* Every API call starts here: after a fault, nothing works any more. */
#define STICKY_GUARD()                        \
    do {                                      \
        if (sticky_error != cudaSuccess)      \
            return sticky_error;              \
    } while (0)

static void make_sticky(cudaError_t err)
{
    pthread_mutex_lock(&state_lock);
    if (sticky_error == cudaSuccess)
        sticky_error = err;
    pthread_mutex_unlock(&state_lock);
}

const char *cudaGetErrorName(cudaError_t err)
{
    switch (err) {
#define NAME(e) \
    case e: return #e;
        NAME(cudaSuccess) NAME(cudaErrorInvalidValue) NAME(cudaErrorMemoryAllocation)
        NAME(cudaErrorInitializationError) NAME(cudaErrorInvalidConfiguration) NAME(cudaErrorInvalidSymbol)
        NAME(cudaErrorInvalidDevicePointer) NAME(cudaErrorInvalidMemcpyDirection)
        NAME(cudaErrorInsufficientDriver) NAME(cudaErrorNoDevice) NAME(cudaErrorInvalidDevice)
        NAME(cudaErrorInvalidPtx) NAME(cudaErrorUnsupportedPtxVersion) NAME(cudaErrorNoKernelImageForDevice)
        NAME(cudaErrorInvalidResourceHandle) NAME(cudaErrorNotReady) NAME(cudaErrorIllegalAddress)
        NAME(cudaErrorLaunchTimeout) NAME(cudaErrorLaunchFailure) NAME(cudaErrorIllegalInstruction)
        NAME(cudaErrorMisalignedAddress)
        NAME(cudaErrorAssert) NAME(cudaErrorUnknown)
#undef NAME
    }
    return "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t err)
{
    switch (err) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidSymbol: return "invalid device symbol";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorIllegalAddress:
        return "an illegal memory access was encountered (CPU path: see the report above on stderr)";
    case cudaErrorLaunchTimeout:
        return "the launch timed out and was terminated (CPU path watchdog: see the report on stderr)";
    case cudaErrorLaunchFailure:
        return "unspecified launch failure (CPU path: deadlock or divergent barrier, see stderr)";
    case cudaErrorIllegalInstruction:
        return "an illegal instruction was encountered (CPU path: see the report on stderr)";
    case cudaErrorMisalignedAddress:
        return "misaligned address (CPU path: see the report on stderr)";
    default: return cudaGetErrorName(err);
    }
}

cudaError_t cudaGetLastError(void)
{
    if (sticky_error != cudaSuccess)
        return sticky_error;
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void) { return sticky_error != cudaSuccess ? sticky_error : last_error; }

// ------------------------------------------------------------ device

static int worker_count(void);

cudaError_t cudaGetDeviceCount(int *count)
{
    *count = 1;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int device)
{
    if (device != 0)
        return record(cudaErrorInvalidDevice);
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "CPU (emulated, %d worker threads)", worker_count());
    struct sysinfo si;
    p->totalGlobalMem = sysinfo(&si) == 0 ? (size_t)si.totalram * si.mem_unit : (size_t)1 << 32;
    p->sharedMemPerBlock = 48 * 1024;
    p->sharedMemPerMultiprocessor = 228 * 1024;
    p->regsPerBlock = 65536;
    p->warpSize = 32;
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
    p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 0x7fffffff;
    p->maxGridSize[1] = p->maxGridSize[2] = 65535;
    p->clockRate = 1000000;
    p->totalConstMem = 65536;
    p->major = 9; /* the surface of CUDA 13 code for sm_90: shuffles, independent thread scheduling */
    p->minor = 0;
    p->multiProcessorCount = worker_count();
    p->l2CacheSize = 4 * 1024 * 1024;
    p->maxThreadsPerMultiProcessor = 2048;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device)
{
    cudaDeviceProp p;
    cudaError_t err = cudaGetDeviceProperties(&p, device);
    if (err != cudaSuccess)
        return err;
    switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = p.maxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: *value = p.maxThreadsDim[0]; break;
    case cudaDevAttrMaxBlockDimY: *value = p.maxThreadsDim[1]; break;
    case cudaDevAttrMaxBlockDimZ: *value = p.maxThreadsDim[2]; break;
    case cudaDevAttrMaxGridDimX: *value = p.maxGridSize[0]; break;
    case cudaDevAttrMaxGridDimY: *value = p.maxGridSize[1]; break;
    case cudaDevAttrMaxGridDimZ: *value = p.maxGridSize[2]; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = (int)p.sharedMemPerBlock; break;
    case cudaDevAttrTotalConstantMemory: *value = (int)p.totalConstMem; break;
    case cudaDevAttrWarpSize: *value = 32; break;
    case cudaDevAttrClockRate: *value = p.clockRate; break;
    case cudaDevAttrMultiProcessorCount: *value = p.multiProcessorCount; break;
    case cudaDevAttrComputeCapabilityMajor: *value = p.major; break;
    case cudaDevAttrComputeCapabilityMinor: *value = p.minor; break;
    case cudaDevAttrL2CacheSize: *value = p.l2CacheSize; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *value = p.maxThreadsPerMultiProcessor; break;
    default: return record(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : record(cudaErrorInvalidDevice); }
cudaError_t cudaGetDevice(int *device)
{
    *device = 0;
    return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int *version)
{
    *version = CUDART_VERSION;
    return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int *version)
{
    *version = CUDART_VERSION;
    return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void)
{
    STICKY_GUARD();
    return cudaSuccess;
}
cudaError_t cudaDeviceReset(void)
{
    sticky_error = last_error = cudaSuccess;
    return cudaSuccess;
}

cudaError_t cml_cpu_occupancy(int *blocks, int block_size, size_t dynamic_smem)
{
    (void)dynamic_smem;
    STICKY_GUARD();
    if (block_size <= 0 || block_size > 1024)
        return record(cudaErrorInvalidValue);
    *blocks = 1; /* a worker runs one block at a time */
    return cudaSuccess;
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, const void *func, int block_size,
                                                          size_t dynamic_smem)
{
    if (!func || !blocks)
        return record(cudaErrorInvalidValue);
    return cml_cpu_occupancy(blocks, block_size, dynamic_smem);
}

cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func)
{
    STICKY_GUARD();
    if (!attr || !func)
        return record(cudaErrorInvalidValue);
    memset(attr, 0, sizeof *attr); /* registers, local bytes, versions: not known here */
    attr->maxThreadsPerBlock = 1024;
    return cudaSuccess;
}

// ------------------------------------------------------------ memory

/* Each allocation is its own mapping: [guard page][slack][payload, rounded
 * up to 256 bytes, ending on a page boundary][guard page]. A read or write
 * past the end (or far before the start) hits a guard page.
 *
 * Host code may not touch device memory, as on a GPU, where it is not in
 * the host's address space: the body (slack and payload) is PROT_NONE
 * except while a kernel runs (every allocation) or while the runtime itself
 * copies, sets or reads it (cudaMemcpy, cudaMemset, the cuBLAS and CUB
 * stand-ins: the allocations concerned, cml_cpu_device_open/close). Without
 * that, a launcher that sums a cudaMalloc array on the host gets the right
 * answer with no kernel here, and a fault on a GPU. A host access faults and
 * fault_handler reports it (host_access_report). */
typedef struct allocation {
    char *map;      /* the whole mapping */
    size_t map_len;
    char *ptr;      /* what cudaMalloc returned */
    size_t bytes;   /* what was asked for */
    unsigned opens; /* the runtime's own accesses in progress (cml_cpu_device_open) */
    /* A __device__/__constant__ variable (see "symbols" below), else NULL:
     * its declaration for reports; shadow, the same memory where host code
     * names the variable (its holder, of map_len bytes like its device
     * view at map = ptr), or NULL. The variables open and close together
     * (symbol_group), not one by one. */
    const char *decl;
    char *shadow;
    size_t body_len; /* what set_access opens and closes at map + page (0: never closed one by one) */
} allocation;

static allocation *allocs;
static size_t n_allocs, cap_allocs;
static const size_t page = 4096;
static unsigned running_launches; /* grids running: every allocation is open */

/* Readable and writable from this process while a grid runs or the runtime
 * has it open; PROT_NONE otherwise. Call with state_lock held, after
 * changing opens or running_launches, with whether it was open before. */
static void set_access(const allocation *a, int was_open)
{
    int open = a->opens > 0 || running_launches > 0;
    if (open == was_open || a->body_len == 0)
        return;
    if (mprotect(a->map + page, a->body_len, open ? PROT_READ | PROT_WRITE : PROT_NONE) != 0) {
        /* Only on exhausted kernel memory for the mapping's split; going on
         * would report a wrong fault later. */
        fprintf(stderr, "cml-cpu: mprotect of a cudaMalloc allocation failed: %s\n", strerror(errno));
        abort();
    }
}

static int is_open(const allocation *a) { return a->opens > 0 || running_launches > 0; }

/* The __device__ and __constant__ variables' views (see "symbols" below). */
static struct {
    unsigned opens;          /* the runtime's own accesses in progress */
    char *device;            /* the device views, one range (guard pages around it) */
    size_t device_len;
    char **run_at;           /* the host views: runs of adjacent holders */
    size_t *run_len, n_runs;
} symbol_group;

static int symbols_open(void) { return symbol_group.opens > 0 || running_launches > 0; }

/* As set_access, for every variable at once. */
static void symbols_set_access(int was_open)
{
    int open = symbols_open();
    if (open == was_open || symbol_group.device == NULL)
        return;
    int prot = open ? PROT_READ | PROT_WRITE : PROT_NONE, bad = mprotect(symbol_group.device, symbol_group.device_len, prot);
    for (size_t i = 0; i < symbol_group.n_runs; ++i)
        bad |= mprotect(symbol_group.run_at[i], symbol_group.run_len[i], prot);
    if (bad) {
        fprintf(stderr, "cml-cpu: mprotect of the __device__ variables failed: %s\n", strerror(errno));
        abort();
    }
}


static size_t find_alloc(const void *p) /* index of the first allocation with ptr > p */
{
    size_t lo = 0, hi = n_allocs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if ((const char *)allocs[mid].ptr <= (const char *)p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The allocation whose mapping (guards included), or whose variable's
 * host view, contains p, or NULL. Call with state_lock held (or from a
 * signal handler, read-only). */
static const allocation *mapping_of(const void *p)
{
    for (size_t i = 0; i < n_allocs; ++i)
        if (((const char *)p >= allocs[i].map && (const char *)p < allocs[i].map + allocs[i].map_len) ||
            (allocs[i].shadow != NULL && (const char *)p >= allocs[i].shadow &&
             (const char *)p < allocs[i].shadow + allocs[i].map_len))
            return &allocs[i];
    return NULL;
}

/* Where the allocation's payload starts in the view that contains addr
 * (the variable's host view, or the device mapping). */
static const char *view_of(const allocation *a, const char *addr)
{
    if (a->shadow != NULL && addr >= a->shadow && addr < a->shadow + a->map_len)
        return a->shadow;
    return a->ptr;
}

/* "a 4000-byte cudaMalloc allocation" or "__device__ float g[1000] (4000 bytes)". */
static void describe_alloc(const allocation *a, char *buf, size_t len)
{
    if (a->decl != NULL)
        snprintf(buf, len, "%s (%zu bytes)", a->decl, a->bytes);
    else
        snprintf(buf, len, "a %zu-byte cudaMalloc allocation", a->bytes);
}

/* Adds a to allocs, in order of ptr. Call with state_lock held. Returns 0,
 * or -1 out of memory. */
static int insert_alloc(const allocation *a)
{
    if (n_allocs == cap_allocs) {
        size_t cap = cap_allocs ? 2 * cap_allocs : 64;
        allocation *grown = realloc(allocs, cap * sizeof *grown);
        if (grown == NULL)
            return -1;
        allocs = grown;
        cap_allocs = cap;
    }
    size_t at = find_alloc(a->ptr);
    memmove(&allocs[at + 1], &allocs[at], (n_allocs - at) * sizeof *allocs);
    allocs[at] = *a;
    ++n_allocs;
    return 0;
}

cudaError_t cudaMalloc(void **ptr, size_t bytes)
{
    STICKY_GUARD();
    worker_count(); /* the runtime's start-up installs the handler that reports a host access */
    *ptr = NULL;
    size_t payload = (bytes + 255) / 256 * 256;
    if (payload == 0)
        payload = 256;
    size_t body = (payload + page - 1) / page * page;
    size_t len = body + 2 * page;
    /* PROT_NONE as a whole: the body opens while a kernel runs (set_access). */
    char *map = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (map == MAP_FAILED)
        return record(cudaErrorMemoryAllocation);
    allocation a = {map, len, map + page + body - payload, bytes, 0, NULL, NULL, body};
    pthread_mutex_lock(&state_lock);
    set_access(&a, 0); /* open at once if a grid is running (another host thread's) */
    if (insert_alloc(&a) != 0) {
        pthread_mutex_unlock(&state_lock);
        munmap(map, len);
        return record(cudaErrorMemoryAllocation);
    }
    pthread_mutex_unlock(&state_lock);
    *ptr = a.ptr;
    return cudaSuccess;
}

cudaError_t cudaFree(void *ptr)
{
    if (ptr == NULL)
        return cudaSuccess;
    pthread_mutex_lock(&state_lock);
    size_t at = find_alloc(ptr);
    if (at == 0 || allocs[at - 1].ptr != ptr || allocs[at - 1].decl != NULL) { /* (a variable's: not freed) */
        pthread_mutex_unlock(&state_lock);
        return record(cudaErrorInvalidValue);
    }
    allocation a = allocs[at - 1];
    memmove(&allocs[at - 1], &allocs[at], (n_allocs - at) * sizeof *allocs);
    --n_allocs;
    pthread_mutex_unlock(&state_lock);
    munmap(a.map, a.map_len);
    return sticky_error;
}

/* The allocation whose payload contains p (or ends at p), or NULL. Call
 * with state_lock held. */
static allocation *payload_of(const void *p)
{
    size_t at = find_alloc(p);
    return at > 0 && (const char *)p <= allocs[at - 1].ptr + allocs[at - 1].bytes ? &allocs[at - 1] : NULL;
}

/* The sector counts' question (cml_cpu_internal.h): which device memory p
 * is in. A cudaMalloc allocation's payload is rounded up to 256 bytes, as a
 * GPU's is; a variable is reached by its device view or, from kernels
 * naming it, its holder (the host view). */
static int kind_of(const allocation *a)
{
    return a->decl != NULL && strncmp(a->decl, "__constant__", 12) == 0 ? CML_CPU_CONSTANT : CML_CPU_GLOBAL;
}

int cml_cpu_device_kind(const void *p)
{
    const char *c = p;
    size_t at = find_alloc(p);
    if (at > 0) {
        const allocation *a = &allocs[at - 1];
        size_t bytes = a->decl != NULL ? a->bytes : (a->bytes + 255) / 256 * 256;
        if (c < a->ptr + bytes)
            return kind_of(a);
    }
    for (size_t r = 0; r < symbol_group.n_runs; ++r)
        if (c >= symbol_group.run_at[r] && c < symbol_group.run_at[r] + symbol_group.run_len[r]) {
            for (size_t i = 0; i < n_allocs; ++i)
                if (allocs[i].shadow != NULL && c >= allocs[i].shadow && c < allocs[i].shadow + allocs[i].bytes)
                    return kind_of(&allocs[i]);
            break;
        }
    return CML_CPU_NOT_DEVICE;
}

void cml_cpu_device_open(const void *p)
{
    pthread_mutex_lock(&state_lock);
    allocation *a = payload_of(p);
    if (a != NULL && a->shadow != NULL) { /* a variable: all of them open together */
        int was = symbols_open();
        ++symbol_group.opens;
        symbols_set_access(was);
    } else if (a != NULL) {
        int was = is_open(a);
        ++a->opens;
        set_access(a, was);
    }
    pthread_mutex_unlock(&state_lock);
}

void cml_cpu_device_close(const void *p)
{
    pthread_mutex_lock(&state_lock);
    allocation *a = payload_of(p);
    if (a != NULL && a->shadow != NULL && symbol_group.opens > 0) {
        int was = symbols_open();
        --symbol_group.opens;
        symbols_set_access(was);
    } else if (a != NULL && a->opens > 0) { /* freed and reallocated between: nothing to close */
        int was = is_open(a);
        --a->opens;
        set_access(a, was);
    }
    pthread_mutex_unlock(&state_lock);
}

/* Every allocation open while a grid runs (its kernels may reach any of
 * them, through pointers inside structs too). */
static void launch_opens(int delta)
{
    pthread_mutex_lock(&state_lock);
    int before = running_launches > 0;
    running_launches += delta;
    if ((running_launches > 0) != before) {
        for (size_t i = 0; i < n_allocs; ++i)
            if (allocs[i].opens == 0) /* the others stay open for the runtime's own access */
                set_access(&allocs[i], before);
        if (symbol_group.opens == 0)
            symbols_set_access(before);
    }
    pthread_mutex_unlock(&state_lock);
}

int cml_cpu_is_device_pointer(const void *p)
{
    pthread_mutex_lock(&state_lock);
    size_t at = find_alloc(p);
    int inside = at > 0 && (const char *)p <= allocs[at - 1].ptr + allocs[at - 1].bytes;
    pthread_mutex_unlock(&state_lock);
    return inside;
}

cudaError_t cudaMallocHost(void **ptr, size_t bytes)
{
    *ptr = malloc(bytes ? bytes : 1);
    return *ptr ? cudaSuccess : record(cudaErrorMemoryAllocation);
}

cudaError_t cudaFreeHost(void *ptr)
{
    free(ptr);
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    struct sysinfo si;
    if (sysinfo(&si) != 0)
        return record(cudaErrorUnknown);
    *free_bytes = (size_t)si.freeram * si.mem_unit;
    *total_bytes = (size_t)si.totalram * si.mem_unit;
    return cudaSuccess;
}

/* A device range of a copy must lie inside one allocation (a GPU would
 * fault or refuse). */
static int device_range_ok(const void *p, size_t bytes)
{
    pthread_mutex_lock(&state_lock);
    size_t at = find_alloc(p);
    int ok = at > 0 && (const char *)p + bytes <= allocs[at - 1].ptr + allocs[at - 1].bytes;
    pthread_mutex_unlock(&state_lock);
    return ok;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind)
{
    STICKY_GUARD();
    if (bytes == 0)
        return cudaSuccess;
    int dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    int src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if (kind > cudaMemcpyDefault)
        return record(cudaErrorInvalidMemcpyDirection);
    if ((dst_dev && !device_range_ok(dst, bytes)) || (src_dev && !device_range_ok(src, bytes))) {
        fprintf(stderr,
                "cml-cpu: cudaMemcpy of %zu bytes: the %s [%p, +%zu) is not inside one cudaMalloc allocation "
                "(a host pointer, a wrong direction, or a size past the end): cudaErrorInvalidValue\n",
                bytes, dst_dev && !device_range_ok(dst, bytes) ? "destination" : "source",
                dst_dev && !device_range_ok(dst, bytes) ? dst : src, bytes);
        return record(cudaErrorInvalidValue);
    }
    /* Whichever side lies in an allocation, whatever the kind says
     * (cudaMemcpyDefault names none). */
    cml_cpu_device_open(dst);
    cml_cpu_device_open(src);
    memmove(dst, src, bytes);
    cml_cpu_device_close(src);
    cml_cpu_device_close(dst);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream)
{
    (void)stream;
    return cudaMemcpy(dst, src, bytes, kind);
}

cudaError_t cudaMemset(void *dst, int value, size_t bytes)
{
    STICKY_GUARD();
    if (bytes == 0)
        return cudaSuccess;
    if (!device_range_ok(dst, bytes)) {
        fprintf(stderr,
                "cml-cpu: cudaMemset of %zu bytes: [%p, +%zu) is not inside one cudaMalloc allocation: "
                "cudaErrorInvalidValue\n",
                bytes, dst, bytes);
        return record(cudaErrorInvalidValue);
    }
    cml_cpu_device_open(dst);
    memset(dst, value, bytes);
    cml_cpu_device_close(dst);
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes, cudaStream_t stream)
{
    (void)stream;
    return cudaMemset(dst, value, bytes);
}

// ------------------------------------------------------------ symbols

/* File-scope __device__ and __constant__ variables (cml_cpu_symbol_entry,
 * cml_cpu.h). Host code must not read or write them, as on a GPU: without
 * that, a launcher has a kernel copy its input into a __device__ array,
 * computes the answer on the host from there and has a kernel copy it
 * out. Each variable's pages (its holder) are mapped from one memfd twice:
 * where host code names the variable (the holder itself, remapped in
 * place; kernels use this name too) and at a device address of its own
 * (cudaGetSymbolAddress), all of them one range between two guard pages,
 * each an allocation among the cudaMalloc ones. The name is no device
 * pointer (cudaMemcpy to it fails, a kernel argument pointing at it is
 * reported), as on a GPU. The variables open and close together, as one
 * allocation would (symbol_group: one mprotect per run of adjacent
 * holders and one for the device range, so that a launch costs a few
 * mprotect calls whatever the number of variables). Without memfd the
 * variables stay one view, open and accepted as device memory. */
extern const cml_cpu_symbol_entry __start_cml_cpu_symtab[] __attribute__((weak));
extern const cml_cpu_symbol_entry __stop_cml_cpu_symtab[] __attribute__((weak));
static int symbol_fd = -1; /* the memfd behind every variable's two views */
/* Writes `len` bytes at `from` at offset `at` of fd (zero pages left as
 * holes, so that a large zero array costs nothing). Returns 0 or -1. */
static int symbol_store(int fd, off_t at, const char *from, size_t len)
{
    for (size_t o = 0; o < len; o += page) {
        const char *pg = from + o;
        size_t k = 0;
        while (k < page && pg[k] == 0)
            ++k;
        if (k < page && pwrite(fd, pg, page, at + (off_t)o) != (ssize_t)page)
            return -1;
    }
    return 0;
}

/* Copies every variable into a new memfd (from its host view, readable)
 * and maps both views of each from it with prot. Returns the fd or -1. */
static int symbols_map(const cml_cpu_symbol_entry *const *e, size_t n, int prot)
{
    int fd = memfd_create("cml_cpu_symbols", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)symbol_group.device_len) != 0)
        return -1;
    off_t at = 0;
    for (size_t i = 0; i < n; at += (off_t)e[i]->holder_bytes, ++i)
        if (symbol_store(fd, at, e[i]->holder, e[i]->holder_bytes) != 0)
            return -1;
    if (mmap(symbol_group.device, symbol_group.device_len, prot, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
        return -1;
    at = 0;
    for (size_t i = 0; i < n; at += (off_t)e[i]->holder_bytes, ++i)
        if (mmap(e[i]->holder, e[i]->holder_bytes, prot, MAP_SHARED | MAP_FIXED, fd, at) == MAP_FAILED) {
            fprintf(stderr, "cml-cpu: cannot map the __device__ variable %s\n", e[i]->decl);
            abort(); /* its pages are gone: nothing sensible is left to run */
        }
    return fd;
}

static const cml_cpu_symbol_entry **symbol_entries; /* by holder address */
static size_t n_symbol_entries;

/* After a fork the child gets memory of its own, as it would without the
 * memfd (a shared mapping would carry its writes into the parent's
 * variables): a new memfd with the variables' current contents. */
static void symbols_after_fork(void)
{
    if (symbol_fd < 0)
        return;
    for (size_t i = 0; i < n_symbol_entries; ++i)
        mprotect(symbol_entries[i]->holder, symbol_entries[i]->holder_bytes, PROT_READ);
    int fd = symbols_map(symbol_entries, n_symbol_entries, symbols_open() ? PROT_READ | PROT_WRITE : PROT_NONE);
    if (fd < 0) {
        fprintf(stderr, "cml-cpu: cannot give a forked process its own __device__ variables\n");
        _exit(1);
    }
    close(symbol_fd);
    symbol_fd = fd;
}

static int by_holder(const void *a, const void *b)
{
    const char *x = (*(const cml_cpu_symbol_entry *const *)a)->holder;
    const char *y = (*(const cml_cpu_symbol_entry *const *)b)->holder;
    return x < y ? -1 : x > y;
}

static void install_handlers(void);

/* At load, before main: every variable of the program's cml_cpu_symtab
 * sections is closed to host code. */
__attribute__((constructor)) static void register_symbols(void)
{
    const cml_cpu_symbol_entry *first = __start_cml_cpu_symtab, *end = __stop_cml_cpu_symtab;
    if (first == NULL || end == NULL || first == end)
        return;
    install_handlers(); /* host code may touch a variable before any CUDA call */
    size_t n = 0, total = 0;
    const cml_cpu_symbol_entry **e = malloc((size_t)(end - first) * sizeof *e);
    if (e == NULL)
        abort();
    for (const cml_cpu_symbol_entry *x = first; x < end; ++x) {
        /* (a compiler's padding between entries is zeros) */
        if (x->holder == NULL)
            continue;
        e[n++] = x;
        total += x->holder_bytes;
    }
    qsort(e, n, sizeof *e, by_holder);
    int two_views = n > 0;
    for (size_t i = 0; i < n; ++i)
        two_views &= (uintptr_t)e[i]->holder % page == 0 && e[i]->holder_bytes % page == 0 && e[i]->holder_bytes > 0;
    char *res = two_views ? mmap(NULL, total + 2 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
                          : MAP_FAILED;
    if (res != MAP_FAILED) {
        symbol_group.device = res + page;
        symbol_group.device_len = total;
        symbol_group.run_at = malloc(n * sizeof *symbol_group.run_at);
        symbol_group.run_len = malloc(n * sizeof *symbol_group.run_len);
        if (symbol_group.run_at == NULL || symbol_group.run_len == NULL)
            abort();
        symbol_fd = symbols_map(e, n, PROT_NONE);
        if (symbol_fd < 0) { /* no memfd: one view each, open */
            munmap(res, total + 2 * page);
            symbol_group.device = NULL;
        }
    }
    symbol_entries = e;
    n_symbol_entries = n;
    size_t at = 0;
    for (size_t i = 0; i < n; at += e[i]->holder_bytes, ++i) {
        char *holder = e[i]->holder;
        size_t len = e[i]->holder_bytes;
        allocation a = {holder, len, holder, e[i]->bytes, 0, e[i]->decl, NULL, 0};
        if (symbol_group.device != NULL) {
            a.map = a.ptr = symbol_group.device + at;
            a.shadow = holder;
            size_t r = symbol_group.n_runs;
            if (r > 0 && symbol_group.run_at[r - 1] + symbol_group.run_len[r - 1] == holder) {
                symbol_group.run_len[r - 1] += len;
            } else {
                symbol_group.run_at[r] = holder;
                symbol_group.run_len[r] = len;
                ++symbol_group.n_runs;
            }
        }
        pthread_mutex_lock(&state_lock);
        int bad = insert_alloc(&a);
        pthread_mutex_unlock(&state_lock);
        if (bad) {
            fprintf(stderr, "cml-cpu: out of memory\n");
            abort();
        }
    }
    if (symbol_fd >= 0)
        pthread_atfork(NULL, NULL, symbols_after_fork);
}

/* The variable whose host view contains p, or NULL. Call with state_lock held. */
static allocation *symbol_of(const void *p)
{
    for (size_t i = 0; i < n_allocs; ++i)
        if (allocs[i].shadow != NULL && (const char *)p >= allocs[i].shadow &&
            (const char *)p < allocs[i].shadow + allocs[i].bytes)
            return &allocs[i];
    return NULL;
}

void *cml_cpu_symbol_address(const void *symbol, size_t bytes)
{
    if (symbol == NULL)
        return NULL;
    pthread_mutex_lock(&state_lock);
    allocation *a = symbol_of(symbol);
    void *dev = a != NULL ? a->ptr + ((const char *)symbol - a->shadow) : (void *)symbol;
    size_t at = find_alloc(symbol);
    if (a == NULL && !(at > 0 && (const char *)symbol <= allocs[at - 1].ptr + allocs[at - 1].bytes)) {
        /* a variable the source pass left as it was: device memory from now
         * on (a kernel may take its address), never closed */
        allocation open = {(char *)symbol, bytes, (char *)symbol, bytes, 0, "a __device__ variable", NULL, 0};
        if (insert_alloc(&open) != 0)
            dev = NULL;
    }
    pthread_mutex_unlock(&state_lock);
    return dev;
}

/* The device address and size of the variable whose host name is at
 * symbol (a rewritten variable's second view), else symbol itself and 0. */
static char *symbol_device(const void *symbol, size_t *bytes)
{
    pthread_mutex_lock(&state_lock);
    allocation *a = symbol_of(symbol);
    char *dev = a != NULL ? a->ptr + ((const char *)symbol - a->shadow) : (char *)symbol;
    *bytes = a != NULL ? a->bytes - (size_t)((const char *)symbol - a->shadow) : 0;
    pthread_mutex_unlock(&state_lock);
    return dev;
}

cudaError_t cudaGetSymbolAddress(void **dev_ptr, const void *symbol)
{
    size_t bytes = 0;
    char *dev = symbol_device(symbol, &bytes);
    if (bytes == 0)
        return record(cudaErrorInvalidSymbol); /* from C, the size of another variable is not known */
    *dev_ptr = dev;
    return cudaSuccess;
}

cudaError_t cudaGetSymbolSize(size_t *bytes, const void *symbol)
{
    (void)symbol_device(symbol, bytes);
    return *bytes != 0 ? cudaSuccess : record(cudaErrorInvalidSymbol);
}

cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t bytes, size_t offset, cudaMemcpyKind kind)
{
    (void)kind;
    STICKY_GUARD();
    size_t have = 0;
    char *dst = symbol_device(symbol, &have);
    if (have != 0 && (offset > have || bytes > have - offset))
        return record(cudaErrorInvalidValue);
    cml_cpu_device_open(dst);
    cml_cpu_device_open(src); /* a cudaMemcpyDeviceToDevice into the symbol */
    memmove(dst + offset, src, bytes);
    cml_cpu_device_close(src);
    cml_cpu_device_close(dst);
    return cudaSuccess;
}

cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t bytes, size_t offset, cudaMemcpyKind kind)
{
    (void)kind;
    STICKY_GUARD();
    size_t have = 0;
    char *src = symbol_device(symbol, &have);
    if (have != 0 && (offset > have || bytes > have - offset))
        return record(cudaErrorInvalidValue);
    cml_cpu_device_open(src);
    cml_cpu_device_open(dst);
    memmove(dst, src + offset, bytes);
    cml_cpu_device_close(dst);
    cml_cpu_device_close(src);
    return cudaSuccess;
}

cudaError_t cudaMemcpyToSymbolAsync(const void *symbol, const void *src, size_t bytes, size_t offset,
                                    cudaMemcpyKind kind, cudaStream_t stream)
{
    (void)stream;
    return cudaMemcpyToSymbol(symbol, src, bytes, offset, kind);
}

cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *symbol, size_t bytes, size_t offset,
                                      cudaMemcpyKind kind, cudaStream_t stream)
{
    (void)stream;
    return cudaMemcpyFromSymbol(dst, symbol, bytes, offset, kind);
}

// ------------------------------------------------------------ streams, events

/* Kernels finish inside their launch, so a stream orders nothing; events
 * hold wall-clock time, labelled "emulated" by the kit's runners. */
struct CUevent_st {
    double ms;
    int recorded;
};

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

cudaError_t cudaStreamCreate(cudaStream_t *stream)
{
    *stream = (cudaStream_t)malloc(1);
    return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    free(stream);
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    (void)stream;
    STICKY_GUARD();
    return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    *event = calloc(1, sizeof **event);
    return *event ? cudaSuccess : record(cudaErrorMemoryAllocation);
}
cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    free(event);
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    (void)stream;
    STICKY_GUARD();
    if (event == NULL)
        return record(cudaErrorInvalidResourceHandle);
    event->ms = now_ms();
    event->recorded = 1;
    return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    (void)event;
    STICKY_GUARD();
    return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t stop)
{
    STICKY_GUARD();
    if (start == NULL || stop == NULL || !start->recorded || !stop->recorded)
        return record(cudaErrorInvalidResourceHandle);
    *ms = (float)(stop->ms - start->ms);
    return cudaSuccess;
}

// ------------------------------------------------------------ scheduler state

enum { F_READY, F_BARRIER, F_WARP, F_DONE };

typedef struct fiber {
    cml_cpu_ctx ctx;
    char *stack;          /* usable stack (the guard page lies below) */
    int state;
    unsigned linear;      /* thread index within the block, x fastest */
    cml_cpu_uint3 tid;
    int op;               /* warp operation waited on */
    unsigned mask;
    uint64_t value, result;
    int src;
    long long clock;
    void *wait_pc;        /* where it waits: for the deadlock report */
} fiber;

typedef struct worker {
    pthread_t thread;
    int index;
    fiber *fibers;
    unsigned n_fibers;    /* fibers with a stack */
    cml_cpu_ctx sched;    /* the worker's own context */
    sigjmp_buf escape;    /* a fault leaves the block through here */
    volatile sig_atomic_t in_block;
    char *dyn_map;        /* dynamic shared memory, a guard page after it */
    size_t dyn_cap;
    char *dyn_ptr;
    size_t dyn_bytes;
    char *arena;          /* static __shared__ arrays (cml_cpu_static_shared) */
    size_t arena_used;
    struct shared_array *arrays;
    size_t n_arrays, cap_arrays;
    void *altstack;
    /* the block being run */
    unsigned n_threads, alive, at_barrier;
    unsigned warp_waiting[32], warp_gone[32];
    cml_cpu_uint3 block;
    volatile uint64_t switches;      /* watchdog: progress (no clock read per switch) */
    uint64_t watch_seen;             /* the watchdog's: switches when last looked */
    double watch_since_ms;           /* the watchdog's: since when it has not changed */
    unsigned bar_count;              /* __syncthreads_count: predicates so far */
} worker;

typedef struct grid {
    const cml_cpu_launch_desc *d;
    unsigned long long n_blocks;
    unsigned long long next;         /* atomic */
    volatile int abort;
} grid;

static __thread worker *self;
static __thread fiber *current;
__thread cml_cpu_coords cml_cpu_coord;

/* A fiber's stack: CML_CPU_STACK_BYTES (cml_cpu_internal.h), aligned to its
 * size, so that the checks tell a thread's locals by one mask. */
static const size_t stack_bytes = CML_CPU_STACK_BYTES;
static worker *workers;
static int n_workers;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_wake = PTHREAD_COND_INITIALIZER, pool_done = PTHREAD_COND_INITIALIZER;
static grid *pool_job;
static unsigned long pool_generation;
static int pool_busy;
static double watchdog_s = 10.0;

static void fault_handler(int sig, siginfo_t *si, void *uctx);
static void *pool_main(void *arg);
static void *watchdog_main(void *arg);

static void install_altstack(worker *w)
{
    size_t len = 64 * 1024;
    w->altstack = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (w->altstack == MAP_FAILED)
        return;
    stack_t ss = {.ss_sp = w->altstack, .ss_size = len, .ss_flags = 0};
    sigaltstack(&ss, NULL);
}

/* The fault handler (kernels' faults, host code's access to device
 * memory, the watchdog's signal). Again at the runtime's start: a test
 * framework may have put its own in between. */
static void install_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = fault_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGFPE, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL); /* the watchdog's */
}

static void init_runtime(void)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    n_workers = cores > 0 ? (int)cores : 1;
    const char *env = getenv("CML_CPU_THREADS");
    if (env != NULL && atoi(env) > 0)
        n_workers = atoi(env);
    if (n_workers > 64)
        n_workers = 64;
    env = getenv("CML_CPU_WATCHDOG");
    if (env != NULL && atof(env) > 0)
        watchdog_s = atof(env);
    workers = calloc((size_t)n_workers, sizeof *workers);
    if (workers == NULL) {
        fprintf(stderr, "cml-cpu: out of memory\n");
        abort();
    }
    install_handlers();
    for (int i = 0; i < n_workers; ++i)
        workers[i].index = i;
    /* Worker 0 is whichever host thread launches. */
    for (int i = 1; i < n_workers; ++i) {
        pthread_create(&workers[i].thread, NULL, pool_main, &workers[i]);
    }
    pthread_t wd;
    if (pthread_create(&wd, NULL, watchdog_main, NULL) == 0)
        pthread_detach(wd);
}

static int worker_count(void)
{
    pthread_once(&init_once, init_runtime);
    return n_workers;
}

// ------------------------------------------------------------ reports

/* "file:line" of a code address, through addr2line (only on a report). */
void cml_cpu_where_is(void *pc, char *buf, size_t len)
{
    Dl_info info;
    struct link_map *map = NULL;
    snprintf(buf, len, "pc %p", pc);
    if (pc == NULL || dladdr1(pc, &info, (void **)&map, RTLD_DL_LINKMAP) == 0 || map == NULL)
        return;
    /* The program itself has no name in its link map (and dladdr's is
     * argv[0]); addr2line, another process, needs the real path. */
    char cmd[1200], exe[600];
    const char *file = map->l_name;
    if (file == NULL || file[0] == '\0') {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n <= 0)
            return;
        exe[n] = '\0';
        file = exe;
    }
    uintptr_t off = (uintptr_t)pc - 1 - (uintptr_t)map->l_addr; /* the address in the file (load bias removed) */
    snprintf(cmd, sizeof cmd, "addr2line -i -C -f -e '%s' 0x%lx 2>/dev/null", file, (unsigned long)off);
    FILE *p = popen(cmd, "r");
    if (p == NULL)
        return;
    char fn[512] = "", line[512] = "";
    /* With -i, the first pair is the innermost frame. The CUDA surface's
     * own inline functions (__syncthreads, the shuffles: cuda_runtime.h)
     * are skipped: the report names the line of the kernel that called them. */
    int found = 0;
    while (!found && fgets(fn, sizeof fn, p) != NULL && fgets(line, sizeof line, p) != NULL) {
        fn[strcspn(fn, "\n")] = '\0';
        line[strcspn(line, "\n")] = '\0';
        char *disc = strstr(line, " (discriminator");
        if (disc != NULL)
            *disc = '\0';
        if (strncmp(line, "??", 2) == 0)
            break;
        snprintf(buf, len, "%s (in %s)", line, fn);
        found = strstr(line, "/cuda_runtime.h:") == NULL && strstr(line, "/vector_types.h:") == NULL;
    }
    while (fgets(fn, sizeof fn, p) != NULL) /* drain the pipe */
        ;
    pclose(p);
}

const char *cml_cpu_kernel_name(const cml_cpu_launch_desc *d)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static struct {
        const void *fn;
        char *name;
    } cache[128];
    static int n_cache;
    if (d->fn == NULL)
        return d->kernel;
    const char *name = d->kernel;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_cache; ++i)
        if (cache[i].fn == d->fn) {
            name = cache[i].name;
            pthread_mutex_unlock(&lock);
            return name;
        }
    char where[600];
    cml_cpu_where_is((char *)d->fn + 1, where, sizeof where); /* where_is looks at pc - 1 */
    char *in = strstr(where, " (in ");
    if (in != NULL) {
        char *fn = in + 5, *end;
        if (strncmp(fn, "void ", 5) == 0) /* a template's demangled name starts with its return type */
            fn += 5;
        end = fn;
        int depth = 0;
        for (; *end && !(depth == 0 && *end == '('); ++end)
            depth += *end == '<' ? 1 : *end == '>' ? -1 : 0;
        *end = '\0';
        char *copy = *fn ? strdup(fn) : NULL;
        if (copy != NULL && n_cache < 128) {
            cache[n_cache].fn = d->fn;
            cache[n_cache++].name = copy;
            name = copy;
        } else {
            free(copy);
        }
    }
    pthread_mutex_unlock(&lock);
    return name;
}

static void describe_thread(const worker *w, const fiber *f, char *buf, size_t len)
{
    snprintf(buf, len, "block (%u,%u,%u), thread (%u,%u,%u)", w->block.x, w->block.y, w->block.z, f->tid.x,
             f->tid.y, f->tid.z);
}

static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;

/* One report per grid: the first fault wins; others are the same bug. */
static int first_report(grid *g)
{
    return __atomic_exchange_n(&g->abort, 1, __ATOMIC_SEQ_CST) == 0;
}

// ------------------------------------------------------------ fibers

static void fiber_main(void *arg);

static int ensure_fibers(worker *w, unsigned n)
{
    if (w->fibers == NULL) {
        w->fibers = calloc(1024, sizeof *w->fibers);
        if (w->fibers == NULL)
            return 0;
    }
    while (w->n_fibers < n) {
        /* Map twice the size, keep one aligned stack and the guard page below it. */
        size_t len = 2 * stack_bytes + page;
        char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            return 0;
        char *stack = (char *)(((uintptr_t)m + page + stack_bytes - 1) & ~(uintptr_t)(stack_bytes - 1));
        if (stack - page > m)
            munmap(m, (size_t)(stack - page - m));
        if (stack + stack_bytes < m + len)
            munmap(stack + stack_bytes, (size_t)(m + len - (stack + stack_bytes)));
        mprotect(stack - page, page, PROT_NONE); /* a stack overflow hits this page */
        w->fibers[w->n_fibers++].stack = stack;
    }
    return 1;
}

static int ensure_dynamic_shared(worker *w, size_t bytes)
{
    size_t need = (bytes + page - 1) / page * page;
    if (need == 0)
        need = page;
    if (w->dyn_cap < need) {
        if (w->dyn_map != NULL)
            munmap(w->dyn_map, w->dyn_cap + page);
        w->dyn_map = mmap(NULL, need + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (w->dyn_map == MAP_FAILED) {
            w->dyn_map = NULL;
            w->dyn_cap = 0;
            return 0;
        }
        mprotect(w->dyn_map + need, page, PROT_NONE);
        w->dyn_cap = need;
    }
    /* The array ends where the guard page starts (16-byte aligned, as
     * extern __shared__ __align__(16) asks). */
    w->dyn_bytes = bytes;
    w->dyn_ptr = w->dyn_map + w->dyn_cap - (bytes + 15) / 16 * 16;
    return 1;
}

void *cml_cpu_dynamic_shared(void) { return self != NULL ? self->dyn_ptr : NULL; }

/* Static __shared__ arrays: each worker reserves an arena (address space
 * only) and gives each array it is asked for (once per declaration: the
 * caller keeps the reference) its own pages, the array ending where a
 * guard page starts, so that an index one past the flat extent faults like
 * the dynamic array's. Arrays live as long as the worker: a worker runs
 * one block at a time, as with the thread_local they replace. Underflow
 * (an index before the start) lands in the page's slack: not caught. */
enum { ARENA_BYTES = 64 << 20 };
typedef struct shared_array {
    char *ptr;
    size_t bytes;
    const char *decl;
} shared_array;

/* The largest power of two up to 16 that divides n: an array of float[31]
 * ends exactly at its guard; one of 16-byte multiples stays 16-aligned
 * (a float4 view of it, as on a GPU). */
static size_t natural_align(size_t n)
{
    size_t a = 16;
    while (a > 1 && n % a != 0)
        a /= 2;
    return a;
}

void *cml_cpu_static_shared(size_t bytes, size_t align, const char *decl)
{
    worker *w = self;
    if (w == NULL) {
        /* host code calling a __device__ function: no block, no check */
        void *p = NULL;
        return posix_memalign(&p, align < 16 ? 16 : align, bytes ? bytes : 1) == 0 ? p : NULL;
    }
    if (w->arena == NULL) {
        void *m = mmap(NULL, ARENA_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            cml_cpu_trap("out of address space for static __shared__ arrays");
        w->arena = m;
        cml_cpu_check_static_shared(w->arena, ARENA_BYTES); /* the checks count it as shared memory */
    }
    if (align < natural_align(bytes))
        align = natural_align(bytes);
    size_t body = (bytes + align - 1 + page) / page * page; /* room for any alignment slack */
    if (w->arena_used + body + page > ARENA_BYTES || w->n_arrays == w->cap_arrays) {
        size_t cap = w->cap_arrays ? 2 * w->cap_arrays : 16;
        shared_array *grown = w->arena_used + body + page > ARENA_BYTES ? NULL : realloc(w->arrays, cap * sizeof *grown);
        if (grown == NULL)
            cml_cpu_trap("out of memory for static __shared__ arrays");
        w->arrays = grown;
        w->cap_arrays = cap;
    }
    char *pages = w->arena + w->arena_used;
    if (mprotect(pages, body, PROT_READ | PROT_WRITE) != 0)
        cml_cpu_trap("out of memory for static __shared__ arrays");
    w->arena_used += body + page; /* the page after stays PROT_NONE: the guard */
    char *p = (char *)(((uintptr_t)(pages + body - bytes)) & ~(uintptr_t)(align - 1));
    w->arrays[w->n_arrays++] = (shared_array){p, bytes, decl};
    return p;
}

int cml_cpu_shared_var_of(uint32_t addr, uint32_t *start, const char **decl)
{
    const worker *w = self;
    if (w == NULL)
        return 0;
    for (size_t k = 0; k < w->n_arrays; ++k) {
        uint32_t lo = (uint32_t)(uintptr_t)w->arrays[k].ptr;
        if (addr - lo < w->arrays[k].bytes) {
            *start = lo;
            *decl = w->arrays[k].decl;
            return 1;
        }
    }
    uint32_t dyn = (uint32_t)(uintptr_t)w->dyn_ptr;
    if (w->dyn_ptr != NULL && addr - dyn < w->dyn_bytes) {
        *start = dyn;
        *decl = "extern __shared__ (dynamic)";
        return 1;
    }
    return 0;
}

static grid *running_grid; /* for reports from fibers (one grid at a time) */

/* The fiber f stops (waits or has exited): the next ready fiber after it
 * runs, switched to directly (one switch, not two through the
 * scheduler); after the last one, the scheduler's loop goes on. */
static void yield_to_scheduler(fiber *f)
{
    worker *w = self;
    if (!running_grid->abort)
        for (fiber *next = f + 1, *end = w->fibers + w->n_threads; next < end; ++next)
            if (next->state == F_READY) {
                current = next;
                cml_cpu_coord.thread_idx = next->tid;
                ++w->switches;
                cml_cpu_ctx_switch(&f->ctx, &next->ctx);
                return;
            }
    cml_cpu_ctx_switch(&f->ctx, &w->sched);
}

static void release_barrier(worker *w)
{
    if (cml_cpu_check_mode)
        cml_cpu_check_barrier();
    uint64_t count = w->bar_count, arrived = w->at_barrier;
    for (unsigned i = 0; i < w->n_threads; ++i)
        if (w->fibers[i].state == F_BARRIER) {
            w->fibers[i].state = F_READY;
            w->fibers[i].result = count;
            w->fibers[i].value = arrived;
        }
    w->at_barrier = 0;
    w->bar_count = 0;
}

/* Releases the waiting lanes of `mask` (closed over the masks the waiting
 * lanes gave) once every lane in it waits or has exited. */
static void try_release_warp(worker *w, unsigned warp, unsigned mask)
{
    unsigned waiting = w->warp_waiting[warp], gone = w->warp_gone[warp];
    if (mask & ~(waiting | gone))
        return; /* a lane of the mask itself is still running: the closure below only grows */
    fiber *lanes = &w->fibers[warp * 32];
    unsigned set = mask, grown;
    do {
        grown = set;
        for (unsigned m = set & waiting; m; m &= m - 1)
            grown |= lanes[__builtin_ctz(m)].mask;
        if (grown == set)
            break;
        set = grown;
    } while (1);
    if (set & ~(waiting | gone))
        return;
    unsigned go = set & waiting;
    unsigned ballot = 0;
    for (unsigned m = go; m; m &= m - 1) {
        unsigned l = (unsigned)__builtin_ctz(m);
        if (lanes[l].op == CML_CPU_BALLOT && lanes[l].value != 0)
            ballot |= 1u << l;
    }
    for (unsigned m = go; m; m &= m - 1) {
        fiber *f = &lanes[__builtin_ctz(m)];
        if (f->op == CML_CPU_SHFL) {
            /* A source lane outside the group gives the caller its own value. */
            int s = f->src;
            f->result = s >= 0 && s < 32 && (go >> s & 1u) ? lanes[s].value : f->value;
        } else if (f->op == CML_CPU_BALLOT) {
            f->result = ballot & f->mask;
        } else {
            f->result = 0;
        }
        f->state = F_READY;
    }
    w->warp_waiting[warp] &= ~go;
    if (cml_cpu_check_mode)
        cml_cpu_check_warp_sync(warp, go);
}

static void fiber_main(void *arg)
{
    worker *w = arg;
    for (;;) {
        fiber *f = current;
        running_grid->d->body(running_grid->d->ctx);
        f->state = F_DONE;
        unsigned warp = f->linear / 32, lane = f->linear % 32;
        w->warp_gone[warp] |= 1u << lane;
        --w->alive;
        /* Exited threads count as arrived, at barriers and warp operations. */
        if (w->alive > 0 && w->at_barrier == w->alive)
            release_barrier(w);
        for (unsigned m = w->warp_waiting[warp]; m; m &= m - 1)
            try_release_warp(w, warp, w->fibers[warp * 32 + (unsigned)__builtin_ctz(m)].mask);
        yield_to_scheduler(f);
    }
}

static void arrive_at_barrier(fiber *f, void *pc, int predicate)
{
    worker *w = self;
    f->wait_pc = pc;
    f->state = F_BARRIER;
    w->bar_count += predicate != 0;
    if (++w->at_barrier == w->alive)
        release_barrier(w);
    else
        yield_to_scheduler(f);
}

void cml_cpu_syncthreads(void)
{
    fiber *f = current;
    if (f != NULL)
        arrive_at_barrier(f, __builtin_return_address(0), 0);
}

int cml_cpu_syncthreads_pred(int op, int predicate)
{
    fiber *f = current;
    if (f == NULL)
        return predicate;
    arrive_at_barrier(f, __builtin_return_address(0), predicate);
    /* release_barrier left the count in result, the arrivals in value */
    if (op == CML_CPU_BAR_AND)
        return f->result == f->value;
    if (op == CML_CPU_BAR_OR)
        return f->result != 0;
    return (int)f->result;
}

uint64_t cml_cpu_warp_op(int op, unsigned mask, uint64_t value, int src_lane)
{
    fiber *f = current;
    if (f == NULL)
        return value;
    worker *w = self;
    unsigned warp = f->linear / 32, lane = f->linear % 32;
    f->wait_pc = __builtin_return_address(0);
    f->op = op;
    f->mask = mask | 1u << lane; /* the caller is always part of its own operation */
    f->value = value;
    f->src = src_lane;
    f->state = F_WARP;
    w->warp_waiting[warp] |= 1u << lane;
    try_release_warp(w, warp, f->mask);
    if (f->state != F_READY)
        yield_to_scheduler(f);
    return f->result;
}

unsigned cml_cpu_active_mask(void)
{
    fiber *f = current;
    if (f == NULL)
        return 1;
    unsigned warp = f->linear / 32;
    return ~self->warp_gone[warp];
}

long long cml_cpu_clock64(void)
{
    fiber *f = current;
    if (f == NULL)
        return 0;
    f->clock += 16; /* monotonic per thread; not a time */
    return f->clock;
}

/* Deadlock: no fiber can run and some have not exited. */
static void report_deadlock(worker *w, grid *g)
{
    if (!first_report(g))
        return;
    const cml_cpu_launch_desc *d = g->d;
    unsigned at_bar = 0, at_warp = 0;
    const fiber *first_bar = NULL, *first_warp = NULL;
    for (unsigned i = 0; i < w->n_threads; ++i) {
        const fiber *f = &w->fibers[i];
        if (f->state == F_BARRIER && at_bar++ == 0)
            first_bar = f;
        if (f->state == F_WARP && at_warp++ == 0)
            first_warp = f;
    }
    pthread_mutex_lock(&report_lock);
    fprintf(stderr,
            "cml-cpu: DEADLOCK in kernel %s (launched at %s:%d), block (%u,%u,%u): %u of %u threads have not "
            "exited and none can go on.\n",
            cml_cpu_kernel_name(d), d->file, d->line, w->block.x, w->block.y, w->block.z, w->alive, w->n_threads);
    char where[600], who[100];
    if (first_bar != NULL) {
        cml_cpu_where_is(first_bar->wait_pc, where, sizeof where);
        describe_thread(w, first_bar, who, sizeof who);
        fprintf(stderr, "  %u threads wait at __syncthreads(), first %s at %s\n", at_bar, who, where);
    }
    if (first_warp != NULL) {
        cml_cpu_where_is(first_warp->wait_pc, where, sizeof where);
        describe_thread(w, first_warp, who, sizeof who);
        fprintf(stderr,
                "  %u threads wait in a warp operation (__syncwarp/shuffle/vote), first %s at %s, mask 0x%08x\n",
                at_warp, who, where, first_warp->mask);
    }
    fprintf(stderr,
            "  Likely cause: a barrier inside a branch that not every thread takes, or a warp mask naming lanes "
            "that never arrive.\n");
    pthread_mutex_unlock(&report_lock);
    make_sticky(cudaErrorLaunchFailure);
}

/* Runs one block on worker w to the end (or to a fault). */
static void run_block(worker *w, grid *g, unsigned long long b)
{
    const cml_cpu_launch_desc *d = g->d;
    unsigned n = d->block.x * d->block.y * d->block.z;
    w->block.x = (unsigned)(b % d->grid.x);
    w->block.y = (unsigned)(b / d->grid.x % d->grid.y);
    w->block.z = (unsigned)(b / ((unsigned long long)d->grid.x * d->grid.y));
    cml_cpu_coord.block_idx = w->block;
    cml_cpu_coord.block_dim = d->block;
    cml_cpu_coord.grid_dim = d->grid;
    w->n_threads = w->alive = n;
    w->at_barrier = 0;
    unsigned warps = (n + 31) / 32;
    for (unsigned k = 0; k < warps; ++k) {
        w->warp_waiting[k] = 0;
        unsigned lanes = n - k * 32 >= 32 ? 32 : n - k * 32;
        w->warp_gone[k] = lanes == 32 ? 0 : ~((1u << lanes) - 1u); /* missing lanes count as exited */
    }
    for (unsigned i = 0; i < n; ++i) {
        fiber *f = &w->fibers[i];
        f->state = F_READY;
        f->linear = i;
        f->tid.x = i % d->block.x;
        f->tid.y = i / d->block.x % d->block.y;
        f->tid.z = i / (d->block.x * d->block.y);
        f->clock = 0;
        f->mask = 0;
        /* Stacks aligned to 64 KiB fall in few cache sets: start each
         * fiber's frames at a different offset (a cache colour, up to
         * 15.6 KiB below the top) so that switching through a block's 1024
         * fibers evicts fewer of their frames (251 colours against 63:
         * 13 to 14% less CPU time on lab 01's and 06's 65537-block tests). */
        cml_cpu_ctx_init(&f->ctx, f->stack, stack_bytes - (i % 251) * 64, fiber_main, w);
    }
    w->bar_count = 0;
    if (cml_cpu_check_mode)
        cml_cpu_check_block_begin(d, w->block, w->dyn_ptr, w->dyn_bytes);
    w->in_block = 1;
    if (sigsetjmp(w->escape, 1) != 0) {
        w->in_block = 0;
        current = NULL;
        if (cml_cpu_check_mode)
            cml_cpu_check_block_end(0);
        return; /* a fault: reported by the handler; the block is abandoned */
    }
    while (w->alive > 0 && !g->abort) {
        int ran = 0;
        for (unsigned i = 0; i < n && !g->abort; ++i) {
            fiber *f = &w->fibers[i];
            if (f->state != F_READY)
                continue;
            current = f;
            cml_cpu_coord.thread_idx = f->tid;
            ++w->switches;
            cml_cpu_ctx_switch(&w->sched, &f->ctx);
            ran = 1;
        }
        current = NULL;
        if (!ran && w->alive > 0) {
            report_deadlock(w, g);
            break;
        }
    }
    w->in_block = 0;
    current = NULL;
    if (cml_cpu_check_mode)
        cml_cpu_check_block_end(1);
}

/* Takes blocks from g until none is left (or the grid aborts). */
static void work_on(worker *w, grid *g)
{
    self = w;
    if (!ensure_fibers(w, g->d->block.x * g->d->block.y * g->d->block.z) ||
        !ensure_dynamic_shared(w, g->d->dynamic_smem)) {
        if (first_report(g))
            fprintf(stderr, "cml-cpu: out of memory for fiber stacks or shared memory\n");
        make_sticky(cudaErrorMemoryAllocation);
        return;
    }
    for (;;) {
        unsigned long long b = __atomic_fetch_add(&g->next, 1, __ATOMIC_SEQ_CST);
        if (b >= g->n_blocks || g->abort)
            break;
        run_block(w, g, b);
    }
}

static void *pool_main(void *arg)
{
    worker *w = arg;
    install_altstack(w);
    unsigned long seen = 0;
    pthread_mutex_lock(&pool_lock);
    for (;;) {
        while (pool_generation == seen)
            pthread_cond_wait(&pool_wake, &pool_lock);
        seen = pool_generation;
        grid *g = pool_job;
        pthread_mutex_unlock(&pool_lock);
        work_on(w, g);
        pthread_mutex_lock(&pool_lock);
        if (--pool_busy == 0)
            pthread_cond_signal(&pool_done);
    }
    return NULL;
}

/* A fiber that runs for watchdog_s seconds without reaching a barrier is
 * spinning (threads switch only at barriers, so a spin-wait on another
 * thread never ends here): cut it off. The scheduler only counts switches;
 * this thread looks at the count a few times a second and keeps the time. */
static void *watchdog_main(void *arg)
{
    (void)arg;
    for (;;) {
        usleep(250 * 1000);
        double now = now_ms();
        for (int i = 0; i < n_workers; ++i) {
            worker *w = &workers[i];
            uint64_t seen = w->switches;
            if (!w->in_block || w->thread == 0 || seen != w->watch_seen) {
                w->watch_seen = seen;
                w->watch_since_ms = now;
                continue;
            }
            if (now - w->watch_since_ms > watchdog_s * 1e3) {
                w->watch_since_ms = now; /* once per stall */
                pthread_kill(w->thread, SIGUSR2);
            }
        }
    }
    return NULL;
}

static const char *fault_kind(int sig, const siginfo_t *si, const worker *w, const fiber *f, char *buf, size_t len)
{
    const char *addr = si->si_addr;
    if (sig == SIGUSR2) {
        snprintf(buf, len,
                 "WATCHDOG: a thread ran %.0f s without reaching a barrier (a spin-wait on another thread never "
                 "ends on the CPU path, and is a race on a GPU)",
                 watchdog_s);
        return buf;
    }
    if (sig == SIGFPE) {
        snprintf(buf, len, "%s", si->si_code == FPE_INTDIV ? "integer division by zero" : "arithmetic fault");
        return buf;
    }
    if (w->dyn_map != NULL && addr >= w->dyn_map + w->dyn_cap && addr < w->dyn_map + w->dyn_cap + page) {
        snprintf(buf, len,
                 "out-of-bounds access to dynamic shared memory (extern __shared__, %zu bytes): byte %td past its "
                 "end",
                 w->dyn_bytes, addr - (w->dyn_ptr + w->dyn_bytes));
        return buf;
    }
    if (w->arena != NULL && addr >= w->arena && addr < w->arena + ARENA_BYTES) {
        for (size_t i = 0; i < w->n_arrays; ++i) {
            const shared_array *a = &w->arrays[i];
            char *guard = (char *)(((uintptr_t)(a->ptr + a->bytes) + page - 1) & ~(uintptr_t)(page - 1));
            if (addr >= a->ptr + a->bytes && addr < guard + page) {
                snprintf(buf, len,
                         "out-of-bounds access to shared memory (__shared__ %s, %zu bytes): byte %td past its end",
                         a->decl, a->bytes, addr - (a->ptr + a->bytes));
                return buf;
            }
        }
        snprintf(buf, len, "out-of-bounds access to static shared memory at %p (outside every __shared__ array)",
                 (const void *)addr);
        return buf;
    }
    if (f != NULL && addr >= f->stack - page && addr < f->stack) {
        snprintf(buf, len, "stack overflow of a CUDA thread (48 KiB or more per thread on the CPU path)");
        return buf;
    }
    const allocation *a = mapping_of(addr);
    if (a != NULL) {
        char what[400];
        const char *base = view_of(a, addr);
        describe_alloc(a, what, sizeof what);
        if (addr >= base)
            snprintf(buf, len, "out-of-bounds global access at %p: %td bytes past the end of %s at %p",
                     (const void *)addr, addr - (base + a->bytes), what, (const void *)base);
        else
            snprintf(buf, len, "out-of-bounds global access at %p: %td bytes before %s at %p", (const void *)addr,
                     base - addr, what, (const void *)base);
        return buf;
    }
    snprintf(buf, len,
             "invalid address %p: outside every cudaMalloc allocation (a wild pointer, an index far out of range, "
             "or a host pointer)",
             (const void *)addr);
    return buf;
}

/* Host code (no kernel running on this thread) touched a cudaMalloc
 * allocation, closed to it: one line, and the process ends (the access
 * cannot be completed, and a GPU program would have crashed). */
#define CML_CPU_HOST_ACCESS_STATUS 87
static void host_access_report(const siginfo_t *si, void *uctx, const allocation *a)
{
    const char *addr = si->si_addr;
    const char *did = "accessed", *cannot = "accessible";
#if defined(__x86_64__)
    /* The page-fault error code: bit 1 set for a write. */
    int write = (((ucontext_t *)uctx)->uc_mcontext.gregs[REG_ERR] & 2) != 0;
    did = write ? "wrote to" : "read";
    cannot = write ? "writable" : "readable";
    void *pc = (void *)((ucontext_t *)uctx)->uc_mcontext.gregs[REG_RIP] + 1; /* where_is looks at pc - 1 */
#else
    void *pc = NULL;
    (void)uctx;
#endif
    char place[700], what[400], where[600] = "";
    const char *base = view_of(a, addr);
    describe_alloc(a, what, sizeof what);
    if (addr >= base && addr < base + a->bytes)
        snprintf(place, sizeof place, "inside %s at %p", what, (const void *)base);
    else if (addr >= base)
        snprintf(place, sizeof place, "%td bytes past the end of %s at %p", addr - (base + a->bytes), what,
                 (const void *)base);
    else
        snprintf(place, sizeof place, "%td bytes before %s at %p", base - addr, what, (const void *)base);
    if (pc != NULL) {
        char line[560];
        cml_cpu_where_is(pc, line, sizeof line);
        snprintf(where, sizeof where, ", at %s", line);
    }
    pthread_mutex_lock(&report_lock);
    if (a->decl != NULL)
        fprintf(stderr,
                "cml-cpu: host code %s device memory at %p (%s)%s: a GPU's __device__ and __constant__ variables "
                "are not %s from the host; copy with cudaMemcpyToSymbol or cudaMemcpyFromSymbol, or do the work "
                "in a kernel\n",
                did, (const void *)addr, place, where, cannot);
    else
        fprintf(stderr,
                "cml-cpu: host code %s device memory at %p (%s)%s: a GPU's memory is not %s from the host; copy "
                "it with cudaMemcpy, or do the work in a kernel\n",
                did, (const void *)addr, place, where, cannot);
    /* What the program printed before, unless another thread is printing. */
    if (ftrylockfile(stdout) == 0) {
        fflush_unlocked(stdout);
        funlockfile(stdout);
    }
    _exit(CML_CPU_HOST_ACCESS_STATUS);
}

#if defined(__x86_64__)
/* Whether w is an address in an executable segment of a loaded object. */
static int is_code(const void *w)
{
    Dl_info info;
    struct link_map *map = NULL;
    if (w == NULL || dladdr1(w, &info, (void **)&map, RTLD_DL_LINKMAP) == 0 || map == NULL || info.dli_fbase == NULL)
        return 0;
    const ElfW(Ehdr) *eh = info.dli_fbase;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
    uintptr_t off = (uintptr_t)w - (uintptr_t)map->l_addr;
    for (int i = 0; i < eh->e_phnum; ++i)
        if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X) && off >= ph[i].p_vaddr &&
            off < ph[i].p_vaddr + ph[i].p_memsz)
            return 1;
    return 0;
}

/* The kernel's return address when a thread was stopped inside an access
 * callback, from the stack at the stop: the top word, unless the callback had
 * saved registers first (a compiler that sets up the frame before the
 * callback's check, with a frame pointer that is 0 at a fiber's base: the
 * report then read "at pc (nil)"). So: the first of the top words that is
 * code, and not the callbacks' own; NULL if none. */
static void *return_address_of_hook(void **sp)
{
    for (int k = 0; k < 16; ++k)
        if (is_code(sp[k]) && !cml_cpu_in_access_hook((char *)sp[k] - 1))
            return sp[k];
    return NULL;
}
#endif

static void fault_handler(int sig, siginfo_t *si, void *uctx)
{
    worker *w = self;
    if (w == NULL || !w->in_block) {
        if (sig == SIGUSR2)
            return;
        const allocation *a = sig == SIGSEGV || sig == SIGBUS ? mapping_of(si->si_addr) : NULL;
        if (a != NULL)
            host_access_report(si, uctx, a);
        /* Not in a kernel: host code's own crash, as usual. */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    fiber *f = current;
    void *pc = NULL;
#if defined(__x86_64__)
    pc = (void *)((ucontext_t *)uctx)->uc_mcontext.gregs[REG_RIP] + 1; /* where_is looks at pc - 1 */
    /* The watchdog often stops a spin inside an access callback: with no
     * check on, the callback has pushed nothing, so the top of the stack is
     * the kernel's return address, the line that spins. (By the callbacks'
     * section, not by dladdr: a program's own symbols are not exported, and
     * the report then said "at pc 0x..." about one run in four.) */
    if (sig == SIGUSR2 && cml_cpu_check_mode == 0 && cml_cpu_in_access_hook((char *)pc - 1))
        pc = return_address_of_hook((void **)((ucontext_t *)uctx)->uc_mcontext.gregs[REG_RSP]);
#else
    (void)uctx;
#endif
    grid *g = running_grid;
    if (first_report(g)) {
        char what[400], where[600], who[100] = "no thread";
        fault_kind(sig, si, w, f, what, sizeof what);
        cml_cpu_where_is(pc, where, sizeof where);
        if (f != NULL)
            describe_thread(w, f, who, sizeof who);
        pthread_mutex_lock(&report_lock);
        fprintf(stderr, "cml-cpu: %s\n  in kernel %s (launched at %s:%d), %s\n  at %s\n", what, cml_cpu_kernel_name(g->d),
                g->d->file, g->d->line, who, where);
        pthread_mutex_unlock(&report_lock);
    }
    make_sticky(sig == SIGUSR2   ? cudaErrorLaunchTimeout
                : sig == SIGFPE ? cudaErrorIllegalInstruction
                                : cudaErrorIllegalAddress);
    siglongjmp(w->escape, 1);
}

void cml_cpu_trap(const char *what)
{
    worker *w = self;
    fiber *f = current;
    if (w == NULL || f == NULL)
        return;
    grid *g = running_grid;
    if (first_report(g)) {
        char where[600], who[100];
        cml_cpu_where_is(__builtin_return_address(0), where, sizeof where);
        describe_thread(w, f, who, sizeof who);
        fprintf(stderr, "cml-cpu: %s\n  in kernel %s (launched at %s:%d), %s\n  at %s\n", what, cml_cpu_kernel_name(g->d),
                g->d->file, g->d->line, who, where);
    }
    make_sticky(cudaErrorIllegalInstruction);
    siglongjmp(w->escape, 1);
}

/* A load or store through a pointer its type's alignment forbids (an int4
 * * at a 4-byte offset), which a GPU stops with cudaErrorMisalignedAddress
 * and an x86 mostly performs: the translated kernels are compiled with
 * -fsanitize=alignment -fno-sanitize-recover=alignment (CMakeLists.txt), and
 * the compiler's check calls these (libubsan is not linked). Its data, as
 * GCC and Clang lay it out: the source location, the type, log2 of its
 * alignment and what the access was. In a kernel: a report like a fault's,
 * the sticky error, and the block ends; in host code: the report, and the
 * process ends (a misaligned access in host code is undefined too). */
typedef struct ubsan_location {
    const char *file;
    uint32_t line, column;
} ubsan_location;
typedef struct ubsan_type {
    uint16_t kind, info;
    char name[1];
} ubsan_type;
typedef struct ubsan_mismatch {
    ubsan_location loc;
    const ubsan_type *type;
    unsigned char log_alignment, check_kind;
} ubsan_mismatch;

static void misaligned(const ubsan_mismatch *m, uintptr_t p, void *pc)
{
    static const char *const kinds[] = {"load of", "store to", "reference binding to", "member access within",
                                        "member call on", "constructor call on", "downcast of", "downcast of",
                                        "upcast of", "cast to virtual base of"};
    const char *kind = m->check_kind < sizeof kinds / sizeof kinds[0] ? kinds[m->check_kind] : "access to";
    char what[600], where[300];
    snprintf(what, sizeof what,
             "misaligned address %p: %s type %s, which requires %u-byte alignment (%u bytes past a multiple of "
             "it; a GPU stops the kernel: misaligned address)",
             (void *)p, kind, m->type ? m->type->name : "?", 1u << m->log_alignment,
             (unsigned)(p & ((1u << m->log_alignment) - 1)));
    snprintf(where, sizeof where, "%s:%u:%u", m->loc.file ? m->loc.file : "?", m->loc.line, m->loc.column);
    (void)pc;
    worker *w = self;
    fiber *f = current;
    if (w == NULL || f == NULL) {
        fprintf(stderr, "cml-cpu: %s, in host code at %s\n", what, where);
        fflush(stderr);
        abort();
    }
    grid *g = running_grid;
    if (first_report(g)) {
        char who[100];
        describe_thread(w, f, who, sizeof who);
        fprintf(stderr, "cml-cpu: %s\n  in kernel %s (launched at %s:%d), %s\n  at %s\n", what,
                cml_cpu_kernel_name(g->d), g->d->file, g->d->line, who, where);
    }
    make_sticky(cudaErrorMisalignedAddress);
    siglongjmp(w->escape, 1);
}

void __ubsan_handle_type_mismatch_v1(const ubsan_mismatch *m, uintptr_t p);
void __ubsan_handle_type_mismatch_v1(const ubsan_mismatch *m, uintptr_t p)
{
    misaligned(m, p, __builtin_return_address(0));
}
void __ubsan_handle_type_mismatch_v1_abort(const ubsan_mismatch *m, uintptr_t p);
void __ubsan_handle_type_mismatch_v1_abort(const ubsan_mismatch *m, uintptr_t p)
{
    misaligned(m, p, __builtin_return_address(0));
}

cudaError_t cml_cpu_host_pointer_argument(const cml_cpu_launch_desc *d, int index, const void *p)
{
    fprintf(stderr,
            "cml-cpu: HOST POINTER passed to kernel %s (launched at %s:%d): argument %d is %p, which is not "
            "inside any cudaMalloc allocation. A GPU would fault on it; allocate with cudaMalloc and copy "
            "with cudaMemcpy.\n",
            cml_cpu_kernel_name(d), d->file, d->line, index + 1, p);
    make_sticky(cudaErrorIllegalAddress);
    return sticky_error;
}

cudaError_t cml_cpu_run_grid(const cml_cpu_launch_desc *d)
{
    worker_count();
    if (sticky_error != cudaSuccess)
        return sticky_error;
    unsigned long long threads = (unsigned long long)d->block.x * d->block.y * d->block.z;
    /* A grid of 0 blocks: CUDA 13 on an H200 (driver 580) refused it with
     * cudaErrorInvalidValue, not cudaErrorInvalidConfiguration (labs 08 and
     * 09's tests, a block count rounded down to 0, 2026-12-01). */
    if (d->grid.x == 0 || d->grid.y == 0 || d->grid.z == 0)
        return record(cudaErrorInvalidValue);
    if (threads == 0 || threads > 1024 || d->block.z > 64 || d->grid.y > 65535 || d->grid.z > 65535)
        return record(cudaErrorInvalidConfiguration);
    if (d->dynamic_smem > 227 * 1024)
        return record(cudaErrorInvalidValue);
    grid g = {d, (unsigned long long)d->grid.x * d->grid.y * d->grid.z, 0, 0};
    worker *main_worker = &workers[0];
    if (main_worker->altstack == NULL)
        install_altstack(main_worker);
    main_worker->thread = pthread_self();
    /* Nested use (a host thread other than the first) shares worker 0: the
     * kit launches from one thread. */
    running_grid = &g;
    /* Device memory is open to the kernels until every worker is done with
     * the grid: every way out of a block (its end, a fault's siglongjmp, a
     * deadlock, the watchdog, no memory for stacks) comes back here first. */
    launch_opens(+1);
    int helpers = n_workers - 1;
    if ((unsigned long long)helpers > g.n_blocks - 1)
        helpers = (int)(g.n_blocks - 1);
    if (helpers > 0) {
        pthread_mutex_lock(&pool_lock);
        pool_job = &g;
        pool_busy = n_workers - 1;
        ++pool_generation;
        pthread_cond_broadcast(&pool_wake);
        pthread_mutex_unlock(&pool_lock);
    }
    work_on(main_worker, &g);
    if (helpers > 0) {
        pthread_mutex_lock(&pool_lock);
        while (pool_busy > 0)
            pthread_cond_wait(&pool_done, &pool_lock);
        pthread_mutex_unlock(&pool_lock);
    }
    launch_opens(-1);
    running_grid = NULL;
    self = NULL;
    cml_cpu_check_grid_end(d);
    return sticky_error;
}
