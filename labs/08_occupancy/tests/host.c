/* Host tests of lab 08's check and its diagnosis: what a wrong y says
 * about the mistake that made it. No GPU needed; these run in CI. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "occupancy_host.h"

enum { N = 1001, DEGREE = 31 };

static float x[N], coef[OCC_MAX_DEGREE + 1], y[N];

/* x in [-1, 1), DEGREE + 1 coefficients, and y the right answer. */
static void right_answer(void)
{
    occupancy_make_data(x, N, coef, DEGREE, 20261122, 8);
    for (int i = 0; i < N; ++i) {
        double bound;
        y[i] = (float)occupancy_ref(x[i], coef, DEGREE, &bound);
    }
}

/* The check's message for y; asserts that y was found wrong. */
static const char *diagnosis(int step)
{
    static char msg[1000];
    occupancy_check chk;
    cr_assert(occupancy_compare(x, coef, DEGREE, y, N, &chk) > 0, "the wrong y passed the check");
    return occupancy_describe(&chk, step, msg, sizeof msg);
}

Test(check, the_right_answer_passes)
{
    right_answer();
    occupancy_check chk;
    cr_assert_eq(occupancy_compare(x, coef, DEGREE, y, N, &chk), 0);
}

Test(check, coefficients_in_reverse_order_are_named)
{
    right_answer();
    float reversed[DEGREE + 1];
    for (int k = 0; k <= DEGREE; ++k)
        reversed[k] = coef[DEGREE - k];
    for (int i = 0; i < N; ++i) {
        double bound;
        y[i] = (float)occupancy_ref(x[i], reversed, DEGREE, &bound);
    }
    const char *msg = diagnosis(1);
    cr_assert(strstr(msg, "Likely cause: the coefficients in reverse order") != NULL, "%s", msg);
}

Test(check, every_power_one_too_high_is_named)
{
    right_answer();
    for (int i = 0; i < N; ++i)
        y[i] *= x[i];
    const char *msg = diagnosis(2);
    cr_assert(strstr(msg, "Likely cause: every power one too high") != NULL, "%s", msg);
}

/* One element the classic mistake would give, one it would not: no name,
 * the catch-all diagnosis. */
Test(check, a_name_needs_every_wrong_element)
{
    right_answer();
    y[10] *= x[10];
    y[20] += 1.0f;
    const char *msg = diagnosis(2);
    cr_assert(strstr(msg, "Likely cause: a wrong value: coef[k] goes with x^k") != NULL, "%s", msg);
}

Test(check, a_wrong_value_of_no_known_shape_gets_the_catch_all)
{
    right_answer();
    for (int i = 0; i < N; i += 7)
        y[i] = -y[i] + 0.5f;
    const char *msg = diagnosis(1);
    cr_assert(strstr(msg, "Likely cause: a wrong value: coef[k] goes with x^k") != NULL, "%s", msg);
}

Test(check, an_unwritten_tail_is_the_grid_not_the_sum)
{
    right_answer();
    uint32_t poison = OCCUPANCY_POISON_BITS;
    for (int i = N - 5; i < N; ++i)
        memcpy(&y[i], &poison, 4);
    const char *msg = diagnosis(4);
    cr_assert(strstr(msg, "Likely cause: the grid stops short of n") != NULL, "%s", msg);
}
