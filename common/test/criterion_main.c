/* The main() of every Criterion test binary in the kit.
 *
 * Same as Criterion's own, with three additions:
 *  - each skipped test is printed with its reason ("[SKIP] suite::test: no
 *    CUDA device: ..."), so a skip is never silent;
 *  - when every test was skipped, the binary exits with 77, which CTest
 *    reports as "Skipped" (SKIP_RETURN_CODE) instead of "Passed";
 *  - a GPU test binary (one linked with gpu_lease.c) shares the GPUs with
 *    the other test binaries running at once: it takes a slot on one GPU
 *    (a lock file per GPU and slot, CML_GPU_SLOTS per GPU, default 2; it
 *    waits for one to come free where all are taken), runs its tests on
 *    that GPU only, and runs no more of them at once than the GPU holds
 *    (its memory over the slots, 4 GiB a test; never more than the cores).
 *    A 64-core host then never starts 64 tests on one GPU, and CTest's
 *    parallel binaries spread over the GPUs. CML_GPU_LEASE=0 turns it off;
 *    Criterion's --jobs still sets the count.
 * The parent process never touches CUDA: each test runs in a worker, and
 * the GPUs are listed by a child process. */
#define _DEFAULT_SOURCE /* flock, O_CLOEXEC, setenv */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <criterion/options.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cml/cml_lock_file.h"
#include "cml/cml_test_lock.h"
#include "gpu_lease.h"

#pragma weak cml_criterion_gpu_inventory

#define GPU_TEST_BYTES (4ull << 30)
#define DEFAULT_SLOTS 2

static size_t g_tests, g_skipped;

ReportHook(POST_TEST)(struct criterion_test_stats *stats)
{
    /* Tests left out by --filter are disabled, and "skipped" too: say
     * nothing of those, and do not count them. */
    if (stats->test->data->disabled)
        return;
    ++g_tests;
    if (stats->test_status == CR_STATUS_SKIPPED) {
        ++g_skipped;
        fprintf(stderr, "[SKIP] %s::%s: %s\n", stats->test->category, stats->test->name,
                stats->message ? stats->message : "(no reason given)");
    }
}

static int read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 0;
        p += n;
        len -= (size_t)n;
    }
    return 1;
}

/* The visible GPUs, listed by a child process (CUDA is never initialized
 * here, in the process that forks the tests). */
static int list_gpus(cml_gpu_info *g)
{
    int fds[2];
    if (pipe(fds) != 0)
        return 0;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return 0;
    }
    if (pid == 0) {
        close(fds[0]);
        int n = cml_criterion_gpu_inventory(g, CML_LEASE_MAX_GPUS);
        if (write(fds[1], &n, sizeof n) == (ssize_t)sizeof n && n > 0)
            (void)!write(fds[1], g, (size_t)n * sizeof *g);
        _exit(0);
    }
    close(fds[1]);
    int n = 0;
    if (!read_all(fds[0], &n, sizeof n) || n < 0 || n > CML_LEASE_MAX_GPUS ||
        (n > 0 && !read_all(fds[0], g, (size_t)n * sizeof *g)))
        n = 0;
    close(fds[0]);
    waitpid(pid, NULL, 0);
    return n;
}

/* Locks the lock file `name` (cml_lock_file.h), made where missing (op
 * LOCK_NB: only if free); the open file holds the lock until the process
 * ends. -1 when not taken (errno says why). */
static int lock_file(const char *name, int nb)
{
    char path[512];
    int fd = cml_lock_file_open(name, path, sizeof path);
    if (fd < 0)
        return -1;
    while (flock(fd, LOCK_EX | nb) != 0) {
        if (errno != EINTR) {
            int e = errno;   /* EWOULDBLOCK: taken */
            close(fd);
            errno = e;
            return -1;
        }
    }
    return fd;
}

/* Locks slot `slot` of a GPU (op LOCK_NB: only if free); the open file is
 * the lease, held until the process ends. -1 when not taken. */
static int take_slot(const char *uuid, int slot, int nb)
{
    char name[160];
    snprintf(name, sizeof name, "cml-gpu-%.47s-slot%d.lock", uuid, slot);   /* a uuid field holds 47 */
    return lock_file(name, nb);
}

int cml_test_gpu_lock(const char *name)
{
    const char *gpu = getenv("CUDA_VISIBLE_DEVICES");
    char file[300];
    snprintf(file, sizeof file, "cml-%s-%s.lock", name, gpu && *gpu ? gpu : "any");
    return lock_file(file, 0);
}

static void share_the_gpus(void)
{
    if (!cml_criterion_gpu_inventory)
        return;   /* not a GPU test binary */
    const char *off = getenv("CML_GPU_LEASE");
    if (off && strcmp(off, "0") == 0)
        return;
    static cml_gpu_info g[CML_LEASE_MAX_GPUS];
    int n = list_gpus(g);
    if (n == 0)
        return;   /* no GPU: every test skips, saying why */
    const char *s = getenv("CML_GPU_SLOTS");
    int slots = s && atoi(s) > 0 ? atoi(s) : DEFAULT_SLOTS;
    int fd = -1, gpu = 0, slot = 0, said = 0;
    for (;;) {   /* the first free slot, lowest first: the GPUs fill evenly */
        for (int k = 0; k < slots && fd < 0; ++k)
            for (int d = 0; d < n && fd < 0; ++d)
                if ((fd = take_slot(g[d].uuid, k, LOCK_NB)) >= 0)
                    gpu = d, slot = k;
        if (fd >= 0 || errno != EWOULDBLOCK)
            break;
        if (!said++)   /* every slot taken: wait until a binary ends (no time limit: they do) */
            fprintf(stderr, "[GPU] every slot of the %d GPU(s) is taken: waiting for one\n", n);
        usleep(50000);
    }
    if (fd < 0)
        fprintf(stderr, "[GPU] cannot lock %s/cml-gpu-*.lock (%s): running on %s without a slot\n", cml_lock_dir(),
                strerror(errno), g[gpu].uuid);
    setenv("CUDA_VISIBLE_DEVICES", g[gpu].uuid, 1);
    if (criterion_options.jobs == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        unsigned long long fit = g[gpu].total / (unsigned long long)slots / GPU_TEST_BYTES;
        size_t jobs = fit < 1 ? 1 : (size_t)fit;
        if (cores > 0 && jobs > (size_t)cores)
            jobs = (size_t)cores;
        criterion_options.jobs = jobs;
    }
    fprintf(stderr, "[GPU] %s (%.0f GiB), slot %d of %d: up to %zu tests at once\n", g[gpu].uuid,
            (double)g[gpu].total / (1024.0 * 1024.0 * 1024.0), slot + 1, slots, criterion_options.jobs);
}

int main(int argc, char *argv[])
{
    struct criterion_test_set *tests = criterion_initialize();
    int result = 0;
    if (criterion_handle_args(argc, argv, true)) {
        share_the_gpus();
        result = !criterion_run_all_tests(tests);
    }
    criterion_finalize(tests);
    if (result == 0 && g_tests > 0 && g_skipped == g_tests) {
        fprintf(stderr, "all %zu tests skipped\n", g_tests);
        return 77;
    }
    return result;
}
