/* cml_rng.h: seeded, reproducible random data. Never seeded from the clock:
 * the seed comes from CML_SEED or the kit's public default, and is printed. */
#ifndef CML_RNG_H
#define CML_RNG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CML_DEFAULT_SEED UINT64_C(20261122)

/* The seed in force: the CML_SEED environment variable (decimal or 0x hex)
 * or CML_DEFAULT_SEED when unset. Returns 0 and writes a message to err when
 * CML_SEED is set but is not a number. */
int cml_seed(uint64_t *seed, char *err, size_t errlen);

/* splitmix64: small, fast, and good enough for test data. */
typedef struct cml_rng { uint64_t state; } cml_rng;

#ifdef __CUDACC__
#define CML_RNG_HD __host__ __device__
#else
#define CML_RNG_HD
#endif

#define CML_RNG_GOLDEN UINT64_C(0x9E3779B97F4A7C15)

/* splitmix64's output function: a draw is the mix of the state, and the
 * state advances by CML_RNG_GOLDEN a draw. */
static inline CML_RNG_HD uint64_t cml_rng_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* The state of (seed, stream) before cml_rng_init's first, discarded draw:
 * the stream mixed in so that (seed, 1) and (seed + 1, 0) differ. */
static inline CML_RNG_HD uint64_t cml_rng_origin(uint64_t seed, uint64_t stream)
{
    return seed ^ (stream * UINT64_C(0xD1B54A32D192ED03));
}

/* Draw i (from 0) of (seed, stream) at once, what the (i + 1)-th
 * cml_rng_next after cml_rng_init returns: any thread of a kernel makes
 * any word of cml_fill_int's data (lab 04's 8 GiB case, red_big.cu). */
static inline CML_RNG_HD uint64_t cml_rng_draw(uint64_t seed, uint64_t stream, uint64_t i)
{
    return cml_rng_mix(cml_rng_origin(seed, stream) + (i + 2) * CML_RNG_GOLDEN);
}

/* cml_rng_int's integer in [lo, hi] from a draw r (multiply-shift: bias
 * below 2^-32 for the spans the labs use). */
static inline CML_RNG_HD int cml_rng_int_of(uint64_t r, int lo, int hi)
{
    uint64_t span = (uint64_t)((int64_t)hi - (int64_t)lo) + 1;
    return (int)((int64_t)lo + (int64_t)((r >> 32) * span >> 32));
}

/* A generator for (seed, stream): different streams give independent data
 * from one seed (e.g. one stream per test case). */
void cml_rng_init(cml_rng *rng, uint64_t seed, uint64_t stream);
uint64_t cml_rng_next(cml_rng *rng);
/* Uniform integer in [lo, hi], lo <= hi. */
int cml_rng_int(cml_rng *rng, int lo, int hi);
/* Uniform float in [lo, hi) with all 24 mantissa bits random. */
float cml_rng_float(cml_rng *rng, float lo, float hi);

/* Fill a[0..n) from (seed, stream). */
void cml_fill_int(int *a, size_t n, int lo, int hi, uint64_t seed, uint64_t stream);
void cml_fill_float(float *a, size_t n, float lo, float hi, uint64_t seed, uint64_t stream);

#ifdef __cplusplus
}
#endif
#endif
