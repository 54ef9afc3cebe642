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
