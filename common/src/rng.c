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
    rng->state = cml_rng_origin(seed, stream);
    (void)cml_rng_next(rng);
}

uint64_t cml_rng_next(cml_rng *rng)
{
    return cml_rng_mix(rng->state += CML_RNG_GOLDEN);
}

int cml_rng_int(cml_rng *rng, int lo, int hi)
{
    return cml_rng_int_of(cml_rng_next(rng), lo, hi);
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
