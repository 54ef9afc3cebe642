/* cml_lock_file.h: where the kit's flock(2) files are, and how one is
 * opened: `$TMPDIR/<name>` (else /tmp), made where missing and open to
 * every user where this user made it, whatever the umask (the grader's
 * slots and other users' binaries take the same files). Used by the GPU
 * slots of the test binaries (common/test/criterion_main.c) and the GPU
 * turns of every kit process (common/src/gpu_turn.c). Header only: the
 * test binaries' main links nothing of the kit's library. Needs
 * O_CLOEXEC (_POSIX_C_SOURCE 200809L or _DEFAULT_SOURCE). */
#ifndef CML_LOCK_FILE_H
#define CML_LOCK_FILE_H

#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* The folder of the lock files: $TMPDIR, else /tmp. */
static inline const char *cml_lock_dir(void)
{
    const char *dir = getenv("TMPDIR");
    return dir && *dir ? dir : "/tmp";
}

/* Opens (makes) the lock file `name` of cml_lock_dir(), its path in path;
 * -1 (errno says why) when it cannot be. */
static inline int cml_lock_file_open(const char *name, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", cml_lock_dir(), name);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == getuid())
        (void)fchmod(fd, 0666);
    return fd;
}

#endif /* CML_LOCK_FILE_H */
