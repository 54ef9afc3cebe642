/* The main() of every Criterion test binary in the kit.
 *
 * Same as Criterion's own, with two additions:
 *  - each skipped test is printed with its reason ("[SKIP] suite::test: no
 *    CUDA device: ..."), so a skip is never silent;
 *  - when every test was skipped, the binary exits with 77, which CTest
 *    reports as "Skipped" (SKIP_RETURN_CODE) instead of "Passed".
 * The parent process never touches CUDA: each test runs in a worker. */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <stdio.h>

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

int main(int argc, char *argv[])
{
    struct criterion_test_set *tests = criterion_initialize();
    int result = 0;
    if (criterion_handle_args(argc, argv, true))
        result = !criterion_run_all_tests(tests);
    criterion_finalize(tests);
    if (result == 0 && g_tests > 0 && g_skipped == g_tests) {
        fprintf(stderr, "all %zu tests skipped\n", g_tests);
        return 77;
    }
    return result;
}
