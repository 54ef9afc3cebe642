/* cml_criterion_main shares the GPUs between GPU test binaries running at
 * once (criterion_main.c): each takes a free slot of one GPU, sees only that
 * GPU, runs no more tests at once than it holds, and waits, with no time
 * limit, where every slot is taken. Run on gpu_lease_fake (two fake GPUs of
 * 8 GiB, one slot each). */
#define _DEFAULT_SOURCE /* mkdtemp, usleep */
#include <criterion/criterion.h>
#include <dirent.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static char g_dir[256];

static void remove_dir(void)
{
    DIR *d = opendir(g_dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        char path[600];
        snprintf(path, sizeof path, "%s/%s", g_dir, e->d_name);
        if (e->d_name[0] != '.')
            unlink(path);
    }
    closedir(d);
    rmdir(g_dir);
}

static void make_dir(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/cml-gpu-lease-XXXXXX");
    cr_assert(mkdtemp(g_dir) != NULL);
}

/* Starts the fake binary as instance `name` (output <dir>/<name>, its
 * stderr <dir>/<name>.err), with the lease's variables set for the test and,
 * from this process's environment, only where the loader and tools are found
 * (a Criterion found through LD_LIBRARY_PATH; not Criterion's own worker
 * variables, which would make the fake act as one of this test's workers). */
static pid_t start(const char *name, const char *gpus)
{
    char out[400], err[400], tmpdir[300], slots[] = "CML_GPU_SLOTS=1", fake[64];
    snprintf(out, sizeof out, "GPU_LEASE_OUT=%s/%s", g_dir, name);
    snprintf(err, sizeof err, "%s/%s.err", g_dir, name);
    snprintf(tmpdir, sizeof tmpdir, "TMPDIR=%s", g_dir);
    snprintf(fake, sizeof fake, "GPU_LEASE_FAKE_GPUS=%s", gpus);
    static char visible[] = "CUDA_VISIBLE_DEVICES=0,1", exe[] = GPU_LEASE_FAKE;
    char *env[8] = {out, tmpdir, slots, fake, visible};
    size_t k = 5;
    static const char *const kept[] = {"LD_LIBRARY_PATH", "PATH"};
    static char kept_var[2][4096];
    for (size_t i = 0; i < 2; ++i) {
        const char *v = getenv(kept[i]);
        if (v != NULL && snprintf(kept_var[i], sizeof kept_var[i], "%s=%s", kept[i], v) < (int)sizeof kept_var[i])
            env[k++] = kept_var[i];
    }
    env[k] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, err, 0x241 /* O_WRONLY|O_CREAT|O_TRUNC */, 0644);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", 1, 0);
    char *argv[] = {exe, NULL};
    pid_t pid;
    cr_assert(posix_spawn(&pid, exe, &fa, NULL, argv, env) == 0);
    posix_spawn_file_actions_destroy(&fa);
    return pid;
}

/* Fails the test, with the fake's stderr, if instance `name` (pid) has
 * ended: it cannot reach what the caller waits for. */
static void still_running(pid_t pid, const char *name)
{
    int st = 0;
    if (waitpid(pid, &st, WNOHANG) != pid)
        return;
    char path[400], buf[2048] = "";
    snprintf(path, sizeof path, "%s/%s.err", g_dir, name);
    FILE *f = fopen(path, "r");
    if (f) {
        buf[fread(buf, 1, sizeof buf - 1, f)] = '\0';
        fclose(f);
    }
    cr_assert_fail("the fake GPU test binary '%s' ended (status %d) before it held a slot; its stderr:\n%s", name,
                   st, buf);
}

/* Waits (readiness, no time limit: CTest's timeout ends a hung test) until
 * <dir>/<name> exists, and reads "GPU jobs" from it; fails at once if the
 * fake (pid) ends first. */
static void wait_for(pid_t pid, const char *name, char *gpu, size_t *jobs)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f;
    while ((f = fopen(path, "r")) == NULL) {
        still_running(pid, name);
        usleep(10000);
    }
    cr_assert(fscanf(f, "%63s %zu", gpu, jobs) == 2);
    fclose(f);
}

static int file_has(const char *name, const char *text)
{
    char path[400], buf[2048] = "";
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return strstr(buf, text) != NULL;
}

static void release(const char *name)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s.release", g_dir, name);
    FILE *f = fopen(path, "w");
    cr_assert(f != NULL);
    fclose(f);
}

static void finish(pid_t pid)
{
    int st = 0;
    cr_assert(waitpid(pid, &st, 0) == pid);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the fake binary ended with status %d", st);
}

Test(gpu_lease, binaries_spread_over_the_gpus_and_wait_for_a_free_slot, .timeout = 120)
{
    make_dir();
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    size_t want_jobs = cores > 2 ? 2 : (size_t)cores;   /* 8 GiB, one slot, 4 GiB a test: 2, at most the cores */
    char ga[64], gb[64], gc[64];
    size_t ja, jb, jc;
    pid_t a = start("a", "2");
    wait_for(a, "a", ga, &ja);
    pid_t b = start("b", "2");
    wait_for(b, "b", gb, &jb);
    cr_expect(strcmp(ga, gb) != 0, "two binaries at once share one GPU (%s) while the other is free", ga);
    cr_expect(strncmp(ga, "GPU-", 4) == 0 && strncmp(gb, "GPU-", 4) == 0, "CUDA_VISIBLE_DEVICES: %s, %s", ga, gb);
    cr_expect_eq(ja, want_jobs, "jobs %zu, expected %zu", ja, want_jobs);
    /* both slots are taken: a third waits, and says so */
    pid_t c = start("c", "2");
    while (!file_has("c.err", "is taken: waiting")) {
        still_running(c, "c");
        usleep(10000);
    }
    cr_expect(!file_has("c", "GPU"), "the third binary ran while every slot was taken");
    release("a");
    finish(a);
    wait_for(c, "c", gc, &jc);
    cr_expect_str_eq(gc, ga, "the third must take the slot that came free");
    release("b");
    release("c");
    finish(b);
    finish(c);
    remove_dir();
}

Test(gpu_lease, a_slot_file_it_makes_is_open_to_every_user, .timeout = 120)
{
    /* Made under a umask of 022, a slot's lock file would be 0644: a kit
     * test binary or grader of another user could not open it to lock. */
    make_dir();
    mode_t old = umask(022);
    char g[64];
    size_t j;
    pid_t a = start("perm", "1");
    umask(old);
    wait_for(a, "perm", g, &j);
    char path[400];
    snprintf(path, sizeof path, "%s/cml-gpu-%s-slot0.lock", g_dir, g);
    struct stat st;
    cr_expect(stat(path, &st) == 0, "no lock file at %s", path);
    cr_expect_eq(st.st_mode & 0777, 0666, "the slot's lock file is %o, not 666", (unsigned)(st.st_mode & 0777));
    release("perm");
    finish(a);
    remove_dir();
}

Test(gpu_lease, one_gpu_one_slot, .timeout = 120)
{
    /* gpu_lease_fake with one GPU and one slot: it runs on that GPU */
    make_dir();
    char g[64];
    size_t j;
    pid_t a = start("one", "1");
    wait_for(a, "one", g, &j);
    cr_expect_str_eq(g, "GPU-00000000-0000-0000-0000-000000000000");
    release("one");
    finish(a);
    remove_dir();
}
