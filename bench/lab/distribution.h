/* SPDX-License-Identifier: Apache-2.0 */
/* Distribution files (data/fleet-size-distributions/FORMAT.md), as
 * size-distributions replays them and `memkit record` writes them: three
 * or four lines of "x:p,x:p,...", x occurring with probability p.
 *
 *   line 1  call sizes in bytes (whole numbers up to LAB_DIST_MAX_SIZE)
 *   line 2  whether source and destination overlap: 0 or 1
 *   line 3  the destination's alignment: the largest power of two dividing
 *           its address, 1 to 64 (64: a cache line or more); of both
 *           pointers when there is no fourth line
 *   line 4  optional (absent or blank: none): the source's alignment apart
 *           (memcpy, memmove), in the domain of line 3; `memkit record`
 *           writes it
 *   line 5  optional (absent or blank: none): whether a call repeats the
 *           size of its call site's previous call, 0 or 1; `memkit record`
 *           writes it, and a replay repeats the previous call's size that
 *           often, so that a branch predictor meets the repeats a program's
 *           call sites give it
 *
 * A value out of its line's domain (an alignment of 0 divides by zero when
 * offsets are drawn) refuses the file, naming the line; probabilities that
 * do not sum to 1 are scaled to 1 with a warning.  Apart from the
 * experiment so that a fuzzer reaches it (tests/fuzz/fuzz_distribution.c). */
#ifndef MEMKIT_LAB_DISTRIBUTION_H
#define MEMKIT_LAB_DISTRIBUTION_H

#include <stddef.h>
#include <stdint.h>

#define LAB_DIST_MAX_POINTS 4096
/* Calls address their buffers by 32-bit offsets into arenas of 3x the
 * largest size. */
#define LAB_DIST_MAX_SIZE ((size_t)1 << 30)
#define LAB_DIST_MAX_ALIGN 64
/* Probabilities summing to 1 within this are as written (files carry six
 * digits: 0.999999); further off, the file is likely not what was meant. */
#define LAB_DIST_SUM_TOLERANCE 0.01

/* One line: its values and their cumulative probabilities (the last 1). */
typedef struct {
    size_t n;
    double value[LAB_DIST_MAX_POINTS], cdf[LAB_DIST_MAX_POINTS];
} lab_distribution;

/* Parses a file's text (len bytes; no terminating NUL needed) into its
 * three lines, the optional fourth into src_align (n == 0: none, the
 * sources draw from align) and the optional fifth into repeat (n == 0:
 * none, every size drawn afresh).  Returns 0, or the number of the line at fault (1-based)
 * with why in err.  warn gets what was accepted but looks wrong ("" if
 * nothing). */
int lab_dist_parse(const char *text, size_t len, lab_distribution *sizes,
                   lab_distribution *overlap, lab_distribution *align,
                   lab_distribution *src_align, lab_distribution *repeat, char *err,
                   size_t errlen, char *warn, size_t warnlen);

/* A value of d drawn by its probabilities. */
double lab_dist_draw(const lab_distribution *d, uint64_t *rng);

/* The value of d at cumulative probability u in [0, 1): the smallest
 * whose cdf reaches u (lab_dist_draw at a uniform u). */
double lab_dist_at(const lab_distribution *d, double u);

#endif
