/* SPDX-License-Identifier: Apache-2.0 */
#include "copy_methods.h"

#include "copy/copiers.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* glibc's memcpy, called at the address its ifunc chose, through a volatile
 * pointer (not inlined, not folded), as memset_methods.c calls memset. */
static void *(*volatile libc_memcpy)(void *, const void *, size_t) = memcpy;

CALLING_COPIER(copy_libc, libc_memcpy)

/* The seed's Method 1: nothing but the instruction. */
static inline void rep_movsb(void *dst, const void *src, size_t n)
{
    __asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}
CALLING_COPIER(copy_rep_movsb, rep_movsb)

COPIER_ALLOCATOR(1)
COPIER_ALLOCATOR(32)
COPIER_ALLOCATOR(128)
COPIER_ALLOCATOR(256)

#define AVX_ROW(name, align, unroll, stream_load, stream_store, prefetch, description) \
    COPIER_ROW(#name, description, align, lab_copy_##name, MK_NEED_AVX2),
static const copier_row baseline = COPIER_ROW("libc", "the C library's memcpy", 1, copy_libc, 0);
static const copier_row contestants[] = {
    COPIER_ROW("rep_movsb", "rep movsb alone", 1, copy_rep_movsb, 0),
    LAB_AVX_COPIERS(AVX_ROW)
};
#define NCONTESTANTS (sizeof contestants / sizeof contestants[0])

static mk_copier *table;
static size_t count;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
    size_t nlib;
    const mk_copier *lib = mk_copiers(&nlib);
    table = malloc((1 + nlib + NCONTESTANTS) * sizeof *table);
    if (!table)
        abort();
    mk_copier_table_fill(&table[count++], &baseline, 1);
    for (size_t i = 0; i < nlib; i++)
        table[count++] = lib[i];
    mk_copier_table_fill(&table[count], contestants, NCONTESTANTS);
    count += NCONTESTANTS;
}

const mk_copier *lab_copiers(size_t *n)
{
    pthread_once(&table_once, table_init);
    if (n)
        *n = count;
    return table;
}

const mk_copier *lab_copier_find(const char *name)
{
    size_t n;
    const mk_copier *c = lab_copiers(&n);
    return mk_copier_named(c, n, name);
}
