/* Tests of lab 01's bank model (bank_model.c), steps 1-3. Plain C: no GPU
 * needed, so they run everywhere, CI included. Built twice: against your
 * labs/01_shared_banks/bank_model.c and against the reference solution.
 *
 * Every expected value here comes from an independent way of counting (the
 * pattern's arithmetic, worked out in the comment beside it), never from
 * the model itself. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include <cml/cml_rng.h>
#include <cml/cml_test.h>
#include "banks.h"

/* lane i -> base + stride * i (bytes) */
static void strided(uint32_t *addr, uint32_t base, uint32_t stride_bytes)
{
    for (int i = 0; i < BANKS_WARP; ++i)
        addr[i] = base + stride_bytes * (uint32_t)i;
}

static void expect_degree(const uint32_t *addr, int bytes, int expected, const char *pattern, const char *hint)
{
    int got = conflict_degree(addr, bytes);
    cr_expect_eq(got, expected, "%s, %d-byte access: expected %d wavefront%s, got %d (%s)", pattern, bytes,
                 expected, expected == 1 ? "" : "s", got, hint);
}

/* ------------------------------------------------------------ step 1 */

/* What a wrong bank_of(addr) = got most likely does, as a hint: it names
 * the mistake, never the formula (the student writes that). */
static const char *bank_hint(uint32_t addr, int got)
{
    if (got < 0 || got >= BANKS_COUNT)
        return got == -1 ? "still the skeleton's -1: see TODO(step 1) in bank_model.c; a bank is a number "
                           "from 0 to 31"
                         : "a bank is a number from 0 to 31";
    if ((uint32_t)got == addr % 32)
        return "that is the byte address modulo 32: divide by the 4-byte word size first";
    if ((uint32_t)got == (addr / 4) % 16)
        return "the right word, but count the banks again (banks.h: BANKS_COUNT)";
    return "which 4-byte word holds this byte, and which of the 32 banks holds that word?";
}

Test(step1, bank_of_counts_4_byte_words_round_32_banks)
{
    struct { uint32_t addr; int bank; } cases[] = {
        {0, 0}, {3, 0}, {4, 1}, {7, 1}, {124, 31}, {127, 31}, {128, 0}, {132, 1},
        {4 * 33, 1}, {4 * 1000 + 2, 1000 % 32}, {0xFFFFFFFCu, 31}, {48 * 1024, 0}, {48 * 1024 + 68, 17},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        int got = bank_of(cases[k].addr);
        cr_expect_eq(got, cases[k].bank, "bank_of(%u): expected bank %d, got %d (%s)", cases[k].addr,
                     cases[k].bank, got, bank_hint(cases[k].addr, got));
    }
}

Test(step1, every_byte_of_a_word_is_in_the_same_bank)
{
    cml_rng rng;
    cml_rng_init(&rng, cml_test_seed(), 11);  /* the grader's hidden run: other words */
    int reports = 0;
    for (int k = 0; k < 1000 && reports < 5; ++k) {
        uint32_t word = (uint32_t)cml_rng_int(&rng, 0, 1 << 20);
        int bank = bank_of(4 * word);
        if (bank != (int)(word % 32)) {
            cr_expect_fail("bank_of(%u) = %d, expected %u (the bank of word %u)", 4 * word, bank, word % 32, word);
            ++reports;
        }
        for (uint32_t byte = 1; byte < 4 && reports < 5; ++byte)
            if (bank_of(4 * word + byte) != bank) {
                cr_expect_fail("bytes %u and %u are in one word but bank_of gives %d and %d", 4 * word,
                               4 * word + byte, bank, bank_of(4 * word + byte));
                ++reports;
            }
    }
}

/* ------------------------------------------------------------ step 2 */

Test(step2, a_stride_of_s_words_gives_gcd_of_s_and_32_way_conflicts)
{
    /* Lanes i and i + 32/g collide when g = gcd(s, 32): 32 lanes over 32/g
     * banks, g distinct words in each. */
    static const struct { uint32_t stride; int degree; } cases[] = {
        {1, 1}, {2, 2}, {3, 1}, {4, 4}, {5, 1}, {6, 2}, {8, 8}, {12, 4},
        {16, 16}, {24, 8}, {31, 1}, {32, 32}, {33, 1}, {34, 2}, {64, 32}, {96, 32},
    };
    uint32_t addr[BANKS_WARP];
    char name[64];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        strided(addr, 0, 4 * cases[k].stride);
        snprintf(name, sizeof name, "stride %u words", cases[k].stride);
        expect_degree(addr, 4, cases[k].degree, name, "count distinct words per bank; the largest count wins");
    }
}

Test(step2, lanes_on_the_same_word_share_one_read)
{
    uint32_t addr[BANKS_WARP];
    strided(addr, 4 * 7, 0);
    expect_degree(addr, 4, 1, "every lane on word 7", "broadcast: one word read once serves every lane");
    /* Pairs of lanes share a word: words 0..15, each read twice. */
    for (int i = 0; i < BANKS_WARP; ++i)
        addr[i] = 4u * (uint32_t)(i / 2);
    expect_degree(addr, 4, 1, "lanes 2k and 2k+1 on word k", "broadcast: same word, not a conflict");
    /* Four lanes per word, words 0..7. */
    for (int i = 0; i < BANKS_WARP; ++i)
        addr[i] = 4u * (uint32_t)(i / 4);
    expect_degree(addr, 4, 1, "lanes 4k..4k+3 on word k", "broadcast");
    /* 16 lanes on word 0 and 16 lanes on word 32, both in bank 0. */
    for (int i = 0; i < BANKS_WARP; ++i)
        addr[i] = i < 16 ? 0u : 128u;
    expect_degree(addr, 4, 2, "half the warp on word 0, half on word 32", "two distinct words in bank 0");
}

/* Words far apart in one bank are distinct words, however far: a model
 * that looks only at the low bits of an address (a window of the
 * address, a 16-bit index) would call them one word, a broadcast. Shared
 * memory on an H100 reaches 227 KiB, so 16 KiB and 32 KiB apart are real. */
Test(step2, words_16_kib_apart_in_one_bank_are_different_words)
{
    uint32_t addr[BANKS_WARP];
    for (int i = 0; i < BANKS_WARP; ++i)
        addr[i] = i < 16 ? 0u : 16384u;  /* words 0 and 4096: both in bank 0 */
    expect_degree(addr, 4, 2, "half the warp on byte 0, half on byte 16384 (16 KiB)",
                  "two different words of bank 0, 16 KiB apart: not a broadcast");
    for (int i = 0; i < BANKS_WARP; ++i)
        addr[i] = 16384u * (uint32_t)(i % 3) + 4u * (uint32_t)(i / 3 % 2);  /* banks 0 and 1, 3 words each */
    expect_degree(addr, 4, 3, "bytes 0, 16384 and 32768 (and +4)",
                  "three different words in bank 0 (and three in bank 1), 16 KiB apart");
    for (int i = 0; i < BANKS_WARP; ++i)
        addr[i] = 16384u * (uint32_t)i + 4u * (uint32_t)i;  /* word 4097i: bank i */
    expect_degree(addr, 4, 1, "lane i at byte 16388i (up to 497 KiB)", "32 lanes, 32 different banks");
}

Test(step2, counts_the_busiest_bank_of_an_irregular_pattern)
{
    uint32_t addr[BANKS_WARP];
    /* Lane i reads word (i * 32 + i % 3) ... lanes with equal i % 3 share
     * a bank: 11 lanes (i % 3 == 0), 11 and 10. */
    for (int i = 0; i < BANKS_WARP; ++i)
        addr[i] = 4u * (uint32_t)(i * 32 + i % 3);
    expect_degree(addr, 4, 11, "word 32i + i%3", "bank 0 holds 11 distinct words");
    /* The 32x32 tile read by column, and fixed by padding and by swizzle. */
    for (int i = 0; i < BANKS_WARP; ++i)
        addr[i] = 4u * (uint32_t)(i * 32 + 5);
    expect_degree(addr, 4, 32, "float tile[32][32], column 5", "every row starts in bank 0");
    for (int i = 0; i < BANKS_WARP; ++i)
        addr[i] = 4u * (uint32_t)(i * 33 + 5);
    expect_degree(addr, 4, 1, "float tile[32][33], column 5", "padding shifts each row by one bank");
    for (int i = 0; i < BANKS_WARP; ++i)
        addr[i] = 4u * (uint32_t)(i * 32 + (5 ^ i));
    expect_degree(addr, 4, 1, "tile[i][5 ^ i]", "the swizzle puts each row's column in another bank");
}

Test(step2, agrees_with_a_brute_force_count_on_random_warps)
{
    cml_rng rng;
    cml_rng_init(&rng, cml_test_seed(), 12);  /* the grader's hidden run: other words */
    uint32_t addr[BANKS_WARP];
    for (int trial = 0; trial < 300; ++trial) {
        int span = trial % 3 == 0 ? 64 : 4096;  /* few words: many broadcasts */
        for (int i = 0; i < BANKS_WARP; ++i)
            addr[i] = 4u * (uint32_t)cml_rng_int(&rng, 0, span);
        /* brute force: for each bank, count words w with w % 32 == bank
         * that some lane reads */
        int worst = 1;
        for (int bank = 0; bank < 32; ++bank) {
            int words = 0;
            for (int i = 0; i < BANKS_WARP; ++i) {
                uint32_t w = addr[i] / 4;
                int first = (int)(w % 32) == bank;
                for (int j = 0; j < i && first; ++j)
                    first = addr[j] / 4 != w;
                words += first;
            }
            worst = words > worst ? words : worst;
        }
        int got = conflict_degree(addr, 4);
        if (got != worst) {
            cr_expect_fail("random warp %d (lane 0 at byte %u, lane 1 at %u, ...): expected %d, got %d", trial,
                           addr[0], addr[1], worst, got);
            break;
        }
    }
}

/* ------------------------------------------------------------ step 3 */

Test(step3, rejects_bad_widths_misaligned_addresses_and_null)
{
    uint32_t addr[BANKS_WARP];
    strided(addr, 0, 16);
    int widths[] = {0, 1, 2, 3, 5, 12, 32, -4};
    for (size_t k = 0; k < sizeof widths / sizeof widths[0]; ++k)
        cr_expect_eq(conflict_degree(addr, widths[k]), -1, "an access of %d bytes does not exist: expected -1",
                     widths[k]);
    strided(addr, 2, 4);
    cr_expect_eq(conflict_degree(addr, 4), -1, "4-byte access at byte 2: misaligned, expected -1");
    strided(addr, 0, 8);
    addr[17] = 4;
    cr_expect_eq(conflict_degree(addr, 8), -1, "8-byte access at byte 4 (lane 17): misaligned, expected -1");
    strided(addr, 0, 16);
    addr[31] = 8;
    cr_expect_eq(conflict_degree(addr, 16), -1, "16-byte access at byte 8 (lane 31): misaligned, expected -1");
    cr_expect_eq(conflict_degree(NULL, 4), -1, "NULL addresses: expected -1");
}

Test(step3, wide_accesses_are_served_a_half_or_a_quarter_warp_at_a_time)
{
    uint32_t addr[BANKS_WARP];
    /* Consecutive: each phase moves 128 bytes over all 32 banks once. */
    strided(addr, 0, 8);
    expect_degree(addr, 8, 2, "double v = d[i]", "two half-warp phases of one wavefront each");
    strided(addr, 0, 16);
    expect_degree(addr, 16, 4, "float4 v = f4[i]", "four quarter-warp phases of one wavefront each");
    /* Stride of 2 doubles (16 bytes): in a half warp lanes i and i+8 meet. */
    strided(addr, 0, 16);
    expect_degree(addr, 8, 4, "d[2i]", "per half warp: 16 lanes x 2 words over 16 banks = 2 per bank");
    /* Stride of 32 words: every lane in banks 0-1 (8-byte) or 0-3 (16-byte). */
    strided(addr, 0, 128);
    expect_degree(addr, 8, 32, "8 bytes at 128i", "each half warp: 16 distinct words in bank 0");
    expect_degree(addr, 16, 32, "16 bytes at 128i", "each quarter warp: 8 distinct words in bank 0");
}

Test(step3, phases_are_counted_apart_and_added)
{
    uint32_t addr[BANKS_WARP];
    /* Lanes i and i + 16 read the same double: within each half warp the
     * access is conflict-free, and the two halves are two phases. */
    for (int i = 0; i < BANKS_WARP; ++i)
        addr[i] = 8u * (uint32_t)(i % 16);
    expect_degree(addr, 8, 2, "d[i % 16]", "the two half warps are separate phases: 1 + 1");
    /* The first half warp conflict-free, the second all on bank 0-1. */
    for (int i = 0; i < BANKS_WARP; ++i)
        addr[i] = i < 16 ? 8u * (uint32_t)i : 256u * (uint32_t)i;
    expect_degree(addr, 8, 1 + 16, "d[i] then d[32i]", "phase 1: 1 wavefront; phase 2: 16 words in bank 0");
    /* 16-byte: quarter warp q reads 8 float4 at stride 32 words: 8-way. */
    for (int i = 0; i < BANKS_WARP; ++i)
        addr[i] = 16u * (uint32_t)(i % 8) * 8u;
    expect_degree(addr, 16, 4 * 8, "float4 at 128 (i % 8)", "each quarter warp: 8 words in each of banks 0-3");
    /* A same-word broadcast inside a 16-byte phase. */
    strided(addr, 64, 0);
    expect_degree(addr, 16, 4, "every lane on one float4", "one wavefront per quarter-warp phase");
}

Test(step3, four_byte_accesses_stay_one_phase)
{
    uint32_t addr[BANKS_WARP];
    /* Lanes 0-15 on words 0..15, lanes 16-31 on words 32..47: in one phase
     * banks 0-15 hold two words each. */
    for (int i = 0; i < BANKS_WARP; ++i)
        addr[i] = 4u * (uint32_t)(i < 16 ? i : i + 16);
    expect_degree(addr, 4, 2, "words i and i+32 by half warps", "a 4-byte access is ONE phase of 32 lanes");
}
