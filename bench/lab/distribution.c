/* SPDX-License-Identifier: Apache-2.0 */
/* Distribution files: parsing and drawing (see distribution.h). */
#include "distribution.h"

#include "lab.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the fourth line (the sources' alignments) and the fifth (repeats) are optional */
enum { LINE_SIZES, LINE_OVERLAP, LINE_ALIGN, LINE_SRC_ALIGN, LINE_REPEAT, NLINES };
static const char *const line_names[NLINES] = {"sizes", "overlap", "alignments",
                                               "source alignments", "repeats"};

static int say(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    return -1;
}

/* Whether x may stand on line `line`; else why not, in err. */
static int in_domain(int line, double x, char *err, size_t errlen)
{
    switch (line) {
    case LINE_SIZES:
        if (x < 0 || x != floor(x) || x > (double)LAB_DIST_MAX_SIZE)
            return say(err, errlen, "size %g is not a whole number of bytes from 0 to %zu", x,
                       LAB_DIST_MAX_SIZE);
        return 0;
    case LINE_OVERLAP:
        if (x != 0 && x != 1)
            return say(err, errlen, "overlap %g is neither 0 (apart) nor 1 (overlapping)", x);
        return 0;
    case LINE_REPEAT:
        if (x != 0 && x != 1)
            return say(err, errlen, "repeat %g is neither 0 (a new size) nor 1 (its call site's last)", x);
        return 0;
    default: {
        size_t a = x >= 1 && x <= LAB_DIST_MAX_ALIGN && x == floor(x) ? (size_t)x : 0;
        if (!a || (a & (a - 1)))
            return say(err, errlen, "alignment %g is not a power of two from 1 to %d", x,
                       LAB_DIST_MAX_ALIGN);
        return 0;
    }
    }
}

/* One line (NUL-terminated, no newline) into d; 0, or -1 with why in err. */
static int parse_line(int line, const char *text, lab_distribution *d, char *err, size_t errlen,
                      double *sum)
{
    d->n = 0;
    double total = 0;
    const char *p = text;
    while (*p) {
        char *end;
        double x = strtod(p, &end);
        if (end == p || *end != ':' || !isfinite(x))
            return say(err, errlen, "%s: entry %zu is not x:p", line_names[line], d->n + 1);
        if (d->n == LAB_DIST_MAX_POINTS)
            return say(err, errlen, "%s: more than %d entries", line_names[line],
                       LAB_DIST_MAX_POINTS);
        if (in_domain(line, x, err, errlen))
            return -1;
        p = end + 1;
        double prob = strtod(p, &end);
        if (end == p || !isfinite(prob) || prob < 0 || (*end && *end != ','))
            return say(err, errlen, "the probability of %g is not a number of at least 0", x);
        p = *end ? end + 1 : end;
        total += prob;
        d->value[d->n] = x;
        d->cdf[d->n++] = total;
    }
    if (d->n == 0)
        return say(err, errlen, "%s: no x:p entries", line_names[line]);
    if (!(total > 0) || !isfinite(total))
        return say(err, errlen, "%s: the probabilities sum to %g", line_names[line], total);
    for (size_t i = 0; i < d->n; i++)
        d->cdf[i] /= total;
    d->cdf[d->n - 1] = 1;   /* whatever the rounding: every draw finds a value */
    *sum = total;
    return 0;
}

int lab_dist_parse(const char *text, size_t len, lab_distribution *sizes,
                   lab_distribution *overlap, lab_distribution *align,
                   lab_distribution *src_align, lab_distribution *repeat, char *err,
                   size_t errlen, char *warn, size_t warnlen)
{
    lab_distribution *lines[NLINES] = {sizes, overlap, align, src_align, repeat};
    warn[0] = '\0';
    src_align->n = 0;
    repeat->n = 0;
    const char *p = text, *end = text + len;
    for (int i = 0; i < NLINES; i++) {
        if (i >= LINE_SRC_ALIGN) {   /* absent or blank: none (the sources draw from line 3) */
            const char *q = p;
            while (q < end && (*q == ' ' || *q == '\t' || *q == '\r'))
                q++;
            if (q >= end)
                break;
            if (*q == '\n') {
                p = q + 1;
                continue;
            }
        }
        if (p >= end) {
            say(err, errlen, "missing: the file needs three lines (sizes, overlap, alignments; "
                             "see FORMAT.md), this one has %d", i);
            return i + 1;
        }
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = (size_t)((nl ? nl : end) - p);
        while (n && (p[n - 1] == '\r' || p[n - 1] == ' '))   /* CRLF, trailing blanks */
            n--;
        char *copy = malloc(n + 1);   /* strtod reads to a NUL */
        if (!copy)
            return say(err, errlen, "out of memory"), i + 1;
        memcpy(copy, p, n);
        copy[n] = '\0';
        double sum = 1;
        int bad = memchr(copy, '\0', n) != NULL ? say(err, errlen, "a NUL byte")
                                                : parse_line(i, copy, lines[i], err, errlen, &sum);
        free(copy);
        if (bad)
            return i + 1;
        if (fabs(sum - 1) > LAB_DIST_SUM_TOLERANCE) {
            size_t used = strlen(warn);
            snprintf(warn + used, warnlen - used, "%sline %d (%s): the probabilities sum to %.6g, "
                     "not 1; scaled to 1", used ? "; " : "", i + 1, line_names[i], sum);
        }
        p = nl ? nl + 1 : end;
    }
    return 0;
}

double lab_dist_draw(const lab_distribution *d, uint64_t *rng)
{
    return lab_dist_at(d, (double)(lab_rand(rng) >> 11) * 0x1p-53);
}

double lab_dist_at(const lab_distribution *d, double u)
{
    size_t lo = 0, hi = d->n - 1;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (d->cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return d->value[lo];
}
