/* The CPU path's own bank model (cml_cpu_conflict_degree) against lab 01's
 * reference (solutions/01_shared_banks/bank_model.c, compiled into this test
 * with its functions renamed ref_bank_of / ref_conflict_degree): the same
 * answer on every pattern tried, structured and random, every width. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>

#include "cml_cpu.h"

int ref_conflict_degree(const uint32_t byte_address[32], int access_bytes);

static uint64_t state = 0x9E3779B97F4A7C15ull;
static uint32_t next32(void)
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (uint32_t)(state >> 16);
}

static void same(const uint32_t a[32], int bytes, const char *what)
{
    int mine = cml_cpu_conflict_degree(a, bytes), ref = ref_conflict_degree(a, bytes);
    cr_assert_eq(mine, ref, "%s, %d-byte access: the runtime's model says %d, lab 01's reference %d", what, bytes,
                 mine, ref);
}

Test(bank_model, strides_offsets_and_broadcast_agree_with_lab_01s_reference)
{
    static const int widths[] = {4, 8, 16};
    for (int w = 0; w < 3; ++w) {
        int bytes = widths[w];
        for (uint32_t stride = 0; stride <= 130; ++stride) {
            for (uint32_t base = 0; base < 4096; base += 1024 + 16) {
                uint32_t a[32];
                for (int l = 0; l < 32; ++l)
                    a[l] = (base + stride * (uint32_t)l * (uint32_t)bytes) / (uint32_t)bytes * (uint32_t)bytes;
                char what[64];
                snprintf(what, sizeof what, "stride %u words from byte %u", stride, base);
                same(a, bytes, what);
            }
        }
    }
    uint32_t all_one[32] = {0}; /* every lane on one word: one wavefront */
    same(all_one, 4, "broadcast");
    cr_expect_eq(cml_cpu_conflict_degree(all_one, 4), 1);
}

Test(bank_model, random_patterns_agree_with_lab_01s_reference)
{
    static const int widths[] = {4, 8, 16};
    for (int t = 0; t < 20000; ++t) {
        int bytes = widths[t % 3];
        uint32_t span = 1u << (4 + t % 10), a[32]; /* from a few words (broadcasts) to many banks' worth */
        for (int l = 0; l < 32; ++l)
            a[l] = next32() % span / (uint32_t)bytes * (uint32_t)bytes;
        same(a, bytes, "a random pattern");
    }
}

Test(bank_model, what_no_warp_can_do_is_refused_alike)
{
    uint32_t a[32] = {0};
    a[3] = 6; /* not a multiple of 8 or 16 */
    same(a, 8, "a misaligned lane");
    same(a, 16, "a misaligned lane");
    same(a, 12, "a 12-byte width");
    cr_expect_eq(cml_cpu_conflict_degree(a, 12), -1);
    cr_expect_eq(cml_cpu_conflict_degree(NULL, 4), -1);
}
