/* Lab 01, part 1: a model of shared-memory banks, in plain C (no GPU).
 *
 * Steps 1-3 (the table is BANKS_STEPS in banks.h; `banks_run --list`):
 *   1 bank_of        the bank of a byte address: 32 banks of 4-byte words
 *   2 degree_4byte   a warp's 4-byte access: wavefronts, with broadcast
 *   3 degree_wide    8- and 16-byte accesses: half- and quarter-warp phases
 *
 * Test it (no GPU needed; see README.md in this folder):
 *   cmake --build --preset default
 *   ./build/test_banks_model              # which model steps pass
 *   ./build/banks_run --model             # the model's answer per pattern
 *
 * The runner uses your model to predict the cost of each access pattern it
 * then measures on the GPU (steps 4-7 are in banks.cu).
 */
#include "banks.h"

#include <stddef.h>

// TODO(step 1): return the bank of byte address byte_address. Banks are 4
// bytes wide and there are BANKS_COUNT of them: bytes 0-3 are in bank 0,
// bytes 4-7 in bank 1, ..., bytes 124-127 in bank 31, bytes 128-131 in bank
// 0 again. Every byte of a word is in the same bank.
int bank_of(uint32_t byte_address)
{
    // TODO(step 1): bank = which 4-byte word, modulo the number of banks.
    (void)byte_address;
    return -1;
}

// TODO(step 2): the wavefronts of ONE phase: lanes first .. first+lanes-1,
// each touching `words` consecutive 4-byte words from its address. For each
// bank, count the distinct words the phase touches in it (two lanes on the
// same word are one read: broadcast). The phase needs as many passes as its
// busiest bank has distinct words; at least 1.
// Hint: at most 32 lanes x 4 words = 128 words; a small array of the words
// already seen per bank is plenty.
static int phase_wavefronts(const uint32_t *byte_address, int first, int lanes, int words)
{
    // TODO(step 2): distinct words per bank in this phase; the busiest bank wins.
    (void)byte_address;
    (void)first;
    (void)lanes;
    (void)words;
    return 0;
}

// TODO(step 3): the whole warp. Check the input (see banks.h: NULL, a width
// other than 4, 8 or 16, a misaligned address: return -1). A 4-byte access
// is one phase of 32 lanes. An 8-byte access is 2 phases of 16 lanes and a
// 16-byte access 4 phases of 8 lanes (each phase moves at most 128 bytes);
// add up the phases' wavefronts.
// (Until you do, the stub below answers 4-byte accesses with your step-2
// phase_wavefronts, so the step-2 tests can pass before this step.)
int conflict_degree(const uint32_t byte_address[BANKS_WARP], int access_bytes)
{
    // TODO(step 3): check the input, then add up the phases.
    if (byte_address == NULL || access_bytes != 4)
        return 0;
    return phase_wavefronts(byte_address, 0, BANKS_WARP, 1);
}
