/* SPDX-License-Identifier: Apache-2.0 */
/* Sizes: parsed from arguments ("64K"), shown to people ("64 KiB"), and
 * laid out as a grid (so many per octave). */
#include "lab.h"
#include "text.h"

#include "memkit.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The tunables' grammar (text.h), less "never": an argument's size is a size. */
int lab_try_parse_size(const char *s, size_t *out)
{
    size_t v;
    if (mk_text_parse_size(s, strlen(s), &v) || v == SIZE_MAX)
        return -1;
    *out = v;
    return 0;
}

size_t lab_parse_size(const char *s)
{
    size_t v;
    if (lab_try_parse_size(s, &v)) {
        fprintf(stderr, "error: bad size '%s' (expected e.g. 4096, 64K, 1M, 1G)\n", s);
        exit(2);
    }
    return v;
}

const char *lab_fmt_size(size_t n, char *buf, size_t len)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    double v = (double)n;
    while (v >= 1024 && u < 4)
        v /= 1024, u++;
    if (v == (double)(size_t)v)
        snprintf(buf, len, "%zu %s", (size_t)v, units[u]);
    else
        snprintf(buf, len, "%.1f %s", v, units[u]);
    return buf;
}

size_t lab_octave_sizes(size_t min, size_t max, unsigned per_octave, size_t granule, size_t *out,
                        size_t cap)
{
    size_t n = 0;
    for (unsigned k = 0; n < cap; k++) {
        double s = (double)min * pow(2.0, (double)k / per_octave);
        if (s > (double)max * 1.0001)
            break;
        size_t r = (size_t)(s + (double)granule / 2) / granule * granule;
        if (r < granule)
            r = granule;
        if (n == 0 || r != out[n - 1])
            out[n++] = r;
    }
    return n;
}

size_t lab_l3_bytes(void)
{
    const char *given = getenv("MEMKIT_LAB_L3");
    size_t l3;
    if (given && !lab_try_parse_size(given, &l3) && l3)
        return l3;
    l3 = mk_cpu()->l3_bytes;
    return l3 ? l3 : (size_t)32 << 20;
}

size_t lab_beyond_l3(size_t l3, unsigned times)
{
    size_t n = times * l3 < LAB_GRID_CAP ? times * l3 : LAB_GRID_CAP;
    return n < 2 * l3 ? 2 * l3 : n;
}
