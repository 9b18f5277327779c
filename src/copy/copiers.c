/* SPDX-License-Identifier: Apache-2.0 */
/* The library's copiers: the copy methods a user would pick, behind one
 * interface (see memkit.h for the contract and when to pick each), one row
 * each.  The lab's other contestants are in bench/lab/copy_methods.c. */
#include "copiers.h"
#include "../once.h"

#include <stdlib.h>
#include <string.h>

CALLING_COPIER(copy_memkit, mk_memcpy)
CALLING_COPIER(copy_memkit_nt, mk_memcpy_nt)

/* ---- memory, for every copier table ---- */

MK_HIDDEN void *mk_copier_alloc(size_t n, size_t align)
{
    size_t a = align < 64 ? 64 : align;
    if (n > SIZE_MAX - a)
        return NULL;
    size_t len = (n + align - 1) & ~(align - 1);
    void *p = NULL;
    return posix_memalign(&p, a, len ? len : a) == 0 ? p : NULL;
}

MK_HIDDEN void mk_copier_free(void *p, size_t n)
{
    (void)n;
    free(p);
}

MK_HIDDEN void mk_copier_table_fill(mk_copier *out, const copier_row *rows, size_t n)
{
    const mk_cpu_info *cpu = mk_cpu();
    for (size_t i = 0; i < n; i++)
        out[i] = (mk_copier){rows[i].name, rows[i].description, rows[i].align,
                             mk_cpu_satisfies(cpu, rows[i].needs), rows[i].alloc,
                             rows[i].free, rows[i].copy_in, rows[i].copy_out};
}

MK_HIDDEN const mk_copier *mk_copier_named(const mk_copier *list, size_t n, const char *name)
{
    for (size_t i = 0; name && i < n; i++)
        if (strcmp(list[i].name, name) == 0)
            return &list[i];
    return NULL;
}

/* ---- the table ---- */

COPIER_ALLOCATOR(1)
COPIER_ALLOCATOR(64)

static const copier_row rows[] = {
    COPIER_ROW("memkit", "mk_memcpy", 1, copy_memkit, 0),
    COPIER_ROW("memkit_nt", "mk_memcpy_nt: non-temporal stores above 8 vectors", 1,
               copy_memkit_nt, 0),
    COPIER_ROW("avx_stream_prefetch", "non-temporal stores, the next line prefetched", 64,
               mk_copier_avx_stream_prefetch, MK_NEED_AVX2),
};
#define NROWS (sizeof rows / sizeof rows[0])

static mk_copier table[NROWS];
static int table_once;

static void table_init(void)
{
    mk_copier_table_fill(table, rows, NROWS);
}

const mk_copier *mk_copiers(size_t *count)
{
    mk_once(&table_once, table_init);
    if (count)
        *count = NROWS;
    return table;
}

const mk_copier *mk_copier_find(const char *name)
{
    size_t n;
    const mk_copier *c = mk_copiers(&n);
    return mk_copier_named(c, n, name);
}
