/* cml_args.h: parsing the runners' command-line values. Each returns 1 on
 * success and 0 (leaving *out alone) when the text is not a valid value. */
#ifndef CML_ARGS_H
#define CML_ARGS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A count: "1000003", "2^28", "2^28+1", "2^20-3", "64M" (K, M, G = 2^10,
 * 2^20, 2^30). Must be within [min, max]. */
int cml_parse_count(const char *text, size_t min, size_t max, size_t *out);

/* An integer within [min, max]. */
int cml_parse_int(const char *text, int min, int max, int *out);

/* Steps: "all", "3", "1,4,7" or "2-5" out of 1..nsteps; bit (s-1) of *mask
 * is set for each chosen step s. nsteps <= 31. */
int cml_parse_steps(const char *text, int nsteps, unsigned *mask);

#ifdef __cplusplus
}
#endif
#endif
