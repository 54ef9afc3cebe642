#include "cml/cml_rng.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cml_seed(uint64_t *seed, char *err, size_t errlen)
{
    const char *text = getenv("CML_SEED");
    if (text == NULL || *text == '\0') {
        *seed = CML_DEFAULT_SEED;
        return 1;
    }
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 0);
    if (errno != 0 || end == text || *end != '\0' || text[0] == '-') {
        snprintf(err, errlen, "CML_SEED=\"%s\" is not a number (use decimal or 0x hex)", text);
        return 0;
    }
    *seed = (uint64_t)v;
    return 1;
}

void cml_rng_init(cml_rng *rng, uint64_t seed, uint64_t stream)
{
    /* Mix the stream in so that (seed, 1) and (seed + 1, 0) differ. */
    rng->state = seed ^ (stream * UINT64_C(0xD1B54A32D192ED03));
    (void)cml_rng_next(rng);
}

uint64_t cml_rng_next(cml_rng *rng)
{
    uint64_t z = (rng->state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

int cml_rng_int(cml_rng *rng, int lo, int hi)
{
    uint64_t span = (uint64_t)((int64_t)hi - (int64_t)lo) + 1;
    /* Multiply-shift: bias below 2^-32 for the spans the labs use. */
    uint64_t r = (cml_rng_next(rng) >> 32) * span >> 32;
    return (int)((int64_t)lo + (int64_t)r);
}

float cml_rng_float(cml_rng *rng, float lo, float hi)
{
    float u = (float)(cml_rng_next(rng) >> 40) * (1.0f / 16777216.0f); /* [0, 1) */
    float v = lo + (hi - lo) * u;
    return v < hi ? v : lo;
}

void cml_fill_int(int *a, size_t n, int lo, int hi, uint64_t seed, uint64_t stream)
{
    cml_rng rng;
    cml_rng_init(&rng, seed, stream);
    for (size_t i = 0; i < n; ++i)
        a[i] = cml_rng_int(&rng, lo, hi);
}

void cml_fill_float(float *a, size_t n, float lo, float hi, uint64_t seed, uint64_t stream)
{
    cml_rng rng;
    cml_rng_init(&rng, seed, stream);
    for (size_t i = 0; i < n; ++i)
        a[i] = cml_rng_float(&rng, lo, hi);
}
