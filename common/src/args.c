#include "cml/cml_args.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Unsigned decimal at *p (no sign), advancing p. */
static int read_uint(const char **p, unsigned long long *v)
{
    if (!isdigit((unsigned char)**p))
        return 0;
    char *end = NULL;
    errno = 0;
    *v = strtoull(*p, &end, 10);
    if (errno != 0)
        return 0;
    *p = end;
    return 1;
}

int cml_parse_count(const char *text, size_t min, size_t max, size_t *out)
{
    const char *p = text;
    unsigned long long v = 0, k = 0;
    if (text == NULL || !read_uint(&p, &v))
        return 0;
    if (*p == '^') {
        if (v != 2)
            return 0;
        ++p;
        if (!read_uint(&p, &k) || k > 62)
            return 0;
        v = 1ULL << k;
        if (*p == '+' || *p == '-') {
            char sign = *p++;
            unsigned long long m = 0;
            if (!read_uint(&p, &m))
                return 0;
            if (sign == '-' && m > v)
                return 0;
            v = sign == '+' ? v + m : v - m;
        }
    } else if (*p == 'K' || *p == 'M' || *p == 'G') {
        unsigned shift = *p == 'K' ? 10 : *p == 'M' ? 20 : 30;
        if (v > (UINT64_MAX >> shift))
            return 0;
        v <<= shift;
        ++p;
    }
    if (*p != '\0' || v < min || v > max)
        return 0;
    *out = (size_t)v;
    return 1;
}

int cml_parse_int(const char *text, int min, int max, int *out)
{
    if (text == NULL || *text == '\0')
        return 0;
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return 0;
    *out = (int)v;
    return 1;
}

int cml_parse_steps(const char *text, int nsteps, unsigned *mask)
{
    if (text == NULL || nsteps < 1 || nsteps > 31)
        return 0;
    if (strcmp(text, "all") == 0) {
        *mask = (1u << nsteps) - 1u;
        return 1;
    }
    unsigned m = 0;
    const char *p = text;
    for (;;) {
        unsigned long long a = 0, b = 0;
        if (!read_uint(&p, &a))
            return 0;
        b = a;
        if (*p == '-') {
            ++p;
            if (!read_uint(&p, &b))
                return 0;
        }
        if (a < 1 || b < a || b > (unsigned long long)nsteps)
            return 0;
        for (unsigned long long s = a; s <= b; ++s)
            m |= 1u << (s - 1);
        if (*p == '\0')
            break;
        if (*p++ != ',')
            return 0;
    }
    *mask = m;
    return 1;
}
