/* gpu_turn.c: the kit's processes share a GPU, and one has it alone when
 * it must (cml/cml_gpu_turn.h). */
#define _POSIX_C_SOURCE 200809L
#include "cml/cml_gpu_turn.h"
#include "cml/cml_lock_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

static int g_share = -1;         /* the `.use` file held shared */
static char g_shared[64] = "";   /* its GPU */

void cml_gpu_uuid_text(const unsigned char u[16], char *buf, size_t cap)
{
    snprintf(buf, cap, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
             u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

const char *cml_gpu_shared(void) { return g_shared; }

static int held_outside(void)
{
    const char *h = getenv("CML_GPU_HELD");
    return h != NULL && strcmp(h, "1") == 0;
}

/* The lock file `cml-gpu-<uuid>.<kind>` (cml_lock_file.h), opened; -1
 * when it cannot be. */
static int open_file(const char *uuid, const char *kind, char *path, size_t cap)
{
    char name[160];
    snprintf(name, sizeof name, "cml-gpu-%s.%s", uuid, kind);
    return cml_lock_file_open(name, path, cap);
}

/* flock(fd, op), waiting; says once on stderr that it waits (what for).
 * 0 with errno where it cannot be taken. */
static int take(int fd, int op, const char *path, const char *what)
{
    while (flock(fd, op | LOCK_NB) != 0) {
        if (errno == EINTR)
            continue;
        if (errno != EWOULDBLOCK)
            return 0;
        fprintf(stderr, "[GPU] %s (%s)\n", what, path);
        while (flock(fd, op) != 0)
            if (errno != EINTR)
                return 0;
        break;
    }
    return 1;
}

void cml_gpu_share(const char *uuid)
{
    if (held_outside() || uuid == NULL || uuid[0] == '\0' || g_share >= 0)
        return;
    char path[512];
    int gate = open_file(uuid, "gate", path, sizeof path);
    if (gate < 0)
        return;   /* a read-only $TMPDIR: shared unheld */
    if (take(gate, LOCK_SH, path, "another of the kit's processes has this GPU alone (Nsight Compute, or "
                                  "a grader timing): waiting for it")) {
        int use = open_file(uuid, "use", path, sizeof path);
        if (use >= 0 && take(use, LOCK_SH, path, "waiting to share the GPU")) {
            g_share = use;
            snprintf(g_shared, sizeof g_shared, "%s", uuid);
        } else if (use >= 0) {
            close(use);
        }
    }
    close(gate);   /* the gate's share is for the moment of taking the `.use` file */
}

int cml_gpu_alone(const char *uuid, cml_gpu_alone_hold *h, char *why, size_t cap)
{
    h->gate = h->use = -1;
    h->was_shared = 0;
    if (held_outside())
        return 1;
    char path[512] = "";
    h->was_shared = g_share >= 0 && strcmp(uuid, g_shared) == 0;
    if (h->was_shared)
        flock(g_share, LOCK_UN);   /* two of the kit's processes that want it alone must not wait on each other */
    h->gate = open_file(uuid, "gate", path, sizeof path);
    if (h->gate >= 0 && take(h->gate, LOCK_EX, path, "another of the kit's processes has this GPU alone: waiting")) {
        h->use = h->was_shared ? g_share : open_file(uuid, "use", path, sizeof path);
        if (h->use >= 0 && take(h->use, LOCK_EX, path, "waiting for the kit's other processes on this GPU to end"))
            return 1;
    }
    snprintf(why, cap, "cannot lock %.300s (%s)", path, strerror(errno));
    cml_gpu_alone_end(h);
    return 0;
}

void cml_gpu_alone_end(cml_gpu_alone_hold *h)
{
    if (h->was_shared)
        flock(g_share, LOCK_SH);   /* the gate still held: no one else has it alone meanwhile */
    else if (h->use >= 0)
        close(h->use);
    if (h->gate >= 0)
        close(h->gate);
    h->gate = h->use = -1;
    h->was_shared = 0;
}
