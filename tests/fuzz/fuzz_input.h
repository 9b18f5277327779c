/* SPDX-License-Identifier: Apache-2.0 */
/* What the fuzz targets share: reading the input as little-endian fields (a
 * field past the end reads as zero bits) and the guarded region they work in
 * (tests/c/support: PROT_NONE pages on both sides). */
#ifndef MEMKIT_FUZZ_INPUT_H
#define MEMKIT_FUZZ_INPUT_H

#include "check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct {
    const uint8_t *p;
    size_t left;
} fuzz_input;

static inline uint32_t fuzz_take(fuzz_input *in, unsigned bytes)
{
    uint32_t v = 0;
    for (unsigned i = 0; i < bytes && in->left; i++, in->left--)
        v |= (uint32_t)*in->p++ << (8 * i);
    return v;
}

/* A guarded region of at least `bytes` and a shadow of the same length. */
static inline guarded fuzz_region(size_t bytes, unsigned char **shadow)
{
    guarded g = guarded_alloc(bytes);
    *shadow = malloc(g.len);
    if (!*shadow)
        abort();
    return g;
}

/* The large-size paths only run above thresholds: a target runs itself
 * again with MEMKIT_TUNABLES lowering them into its size range (the library
 * reads the tunables once, at load time).  Returns only in the re-run. */
static inline void fuzz_lower_thresholds(char **argv, const char *tunables)
{
    if (getenv("MEMKIT_TUNABLES"))
        return;
    setenv("MEMKIT_TUNABLES", tunables, 1);
    execv("/proc/self/exe", argv);
    perror("fuzz target: re-exec with MEMKIT_TUNABLES");
    exit(1);
}

#endif
