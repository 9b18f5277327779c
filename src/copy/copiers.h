/* SPDX-License-Identifier: Apache-2.0 */
/* The copiers' private pieces: the contract check, the table rows and their
 * allocators.  Shared by the library's copiers (copiers.c) and the lab's
 * contestants (bench/lab/copy_methods.c), so that both tables keep the same
 * contract the same way. */
#ifndef MEMKIT_COPIERS_H
#define MEMKIT_COPIERS_H

#include "../internal.h"

#include <errno.h>

/* 1 when dst, src and n keep a copier's contract (see memkit.h). */
static inline int copier_accepts(void *dst, const void *src, size_t n, size_t align)
{
    uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
    if ((d | s | n) & (align - 1))
        return 0;
    return d - s >= n && s - d >= n;   /* no overlap */
}

typedef int (*copier_fn)(void *dst, const void *src, size_t n);

/* Defines the copier fn that hands any buffers that do not overlap to
 * call(dst, src, n), a memcpy of any alignment. */
#define CALLING_COPIER(fn, call)                        \
    static int fn(void *dst, const void *src, size_t n) \
    {                                                   \
        if (!copier_accepts(dst, src, n, 1))            \
            return EINVAL;                              \
        call(dst, src, n);                              \
        return 0;                                       \
    }

/* One row of a copier table: an mk_copier less `usable`, and what the CPU
 * must provide (MK_NEED_*) for it to be. */
typedef struct {
    const char *name, *description;
    size_t align;
    unsigned needs;
    void *(*alloc)(size_t);
    void (*free)(void *, size_t);
    copier_fn copy_in, copy_out;
} copier_row;

/* Aligned to max(align, 64), n rounded up to align; NULL on failure. */
MK_HIDDEN void *mk_copier_alloc(size_t n, size_t align);
MK_HIDDEN void mk_copier_free(void *p, size_t n);

/* alloc keeps the seed's one-argument form: one allocator per alignment a
 * table uses, named for it (COPIER_ROW finds it by the alignment). */
#define COPIER_ALLOCATOR(align) \
    static void *copier_alloc_##align(size_t n) { return mk_copier_alloc(n, align); }
/* A copier whose copy_in and copy_out are the same function fn. */
#define COPIER_ROW(name, desc, align, fn, needs) \
    {name, desc, align, needs, copier_alloc_##align, mk_copier_free, fn, fn}

/* rows[0..n) as copiers, usable where this CPU has what each needs. */
MK_HIDDEN void mk_copier_table_fill(mk_copier *out, const copier_row *rows, size_t n);
/* The copier of list[0..n) called name, or NULL (the library's and the lab's lookups). */
MK_HIDDEN const mk_copier *mk_copier_named(const mk_copier *list, size_t n, const char *name);

/* The library's streaming copier (copiers_avx2.c). */
MK_HIDDEN int mk_copier_avx_stream_prefetch(void *dst, const void *src, size_t n);

#endif
