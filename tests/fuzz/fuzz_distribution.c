/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the distribution-file parser (bench/lab/distribution.c)
 * on any bytes.  Whatever it accepts must be safe to replay: every value
 * drawn lies in its line's domain (an alignment of 0 once divided by zero
 * in size-distributions), the cumulative probabilities rise to exactly 1;
 * whatever it refuses names a line 1..4 and says why.  Seeds: the shipped
 * files (scripts/fuzz.sh, tests/fuzz/fuzz_distribution.seeds). */
#include "distribution.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static lab_distribution sizes, overlap, align, src_align, repeat;

#define REQUIRE(cond, ...)                               \
    do {                                                 \
        if (!(cond)) {                                   \
            fprintf(stderr, "fuzz_distribution: " __VA_ARGS__); \
            fputc('\n', stderr);                         \
            __builtin_trap();                            \
        }                                                \
    } while (0)

static void check_cdf(const lab_distribution *d, const char *what)
{
    REQUIRE(d->n >= 1 && d->n <= LAB_DIST_MAX_POINTS, "%s: %zu points", what, d->n);
    double prev = 0;
    for (size_t i = 0; i < d->n; i++) {
        REQUIRE(d->cdf[i] >= prev && d->cdf[i] <= 1, "%s: cdf[%zu] = %g after %g", what, i, d->cdf[i], prev);
        prev = d->cdf[i];
    }
    REQUIRE(d->cdf[d->n - 1] == 1, "%s: the cdf ends at %.17g", what, d->cdf[d->n - 1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256] = "", warn[1024] = "";
    int line = lab_dist_parse((const char *)data, size, &sizes, &overlap, &align, &src_align, &repeat,
                              err, sizeof err, warn, sizeof warn);
    if (line) {
        REQUIRE(line >= 1 && line <= 5 && err[0], "refused at line %d with '%s'", line, err);
        return 0;
    }
    check_cdf(&sizes, "sizes");
    check_cdf(&overlap, "overlap");
    check_cdf(&align, "alignments");
    if (src_align.n)   /* the optional fourth line */
        check_cdf(&src_align, "source alignments");
    if (repeat.n)      /* the optional fifth */
        check_cdf(&repeat, "repeats");
    uint64_t rng = size + 1;
    for (int i = 0; i < 64; i++) {
        double s = lab_dist_draw(&sizes, &rng), o = lab_dist_draw(&overlap, &rng),
               a = lab_dist_draw(i & 1 && src_align.n ? &src_align : &align, &rng);
        REQUIRE(s >= 0 && s <= (double)LAB_DIST_MAX_SIZE && s == floor(s), "size %g drawn", s);
        REQUIRE(o == 0 || o == 1, "overlap %g drawn", o);
        size_t al = (size_t)a;
        REQUIRE(a == (double)al && al >= 1 && al <= LAB_DIST_MAX_ALIGN && !(al & (al - 1)),
                "alignment %g drawn", a);
        /* size-distributions places a pointer at an odd multiple of al below a line: it divides
         * by the count of those */
        REQUIRE(al == LAB_DIST_MAX_ALIGN || LAB_DIST_MAX_ALIGN / al / 2 > 0, "no offset aligned to %zu", al);
    }
    return 0;
}
