/* SPDX-License-Identifier: Apache-2.0 */
/* The memset methods the lab's memset experiments compare, in one table:
 * glibc's memset (the reference), memkit's dispatched mk_memset, every
 * memset variant this CPU can run, and the benchmark-only "old NT memset"
 * baseline (baseline_old_nt_memset.c). */
#ifndef MEMKIT_LAB_MEMSET_METHODS_H
#define MEMKIT_LAB_MEMSET_METHODS_H

#include <stddef.h>

typedef void *(*memset_method_fn)(void *, int, size_t);

typedef struct {
    const char *name;          /* "glibc", "mk_memset", "avx512", ..., "old_nt" */
    memset_method_fn fn;
} memset_method;

/* The table; methods[0] is glibc, the one every ratio is against. */
const memset_method *memset_methods(size_t *count);
/* Index of a method by name, or -1. */
int memset_method_index(const char *name);

/* The seed's pre-2021 Windows memset, rebuilt from its description. */
void *baseline_old_nt_memset(void *dst, int c, size_t n);

#endif
