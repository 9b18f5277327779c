/* The copiers' private pieces (src/copy only): the contract check and the
 * seed's aligned AVX methods (copiers_avx2.c). */
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

#define AVX_COPIERS(X)                                  \
    X(avx_aligned, 32)                                  \
    X(avx_aligned_unroll4, 128)                         \
    X(avx_stream, 32)                                   \
    X(avx_stream_unroll4, 128)                          \
    X(avx_stream_prefetch, 64)                          \
    X(avx_stream_prefetch_unroll4, 256)
#define DECLARE(name, align) MK_HIDDEN int mk_copier_##name(void *, const void *, size_t);
AVX_COPIERS(DECLARE)
#undef DECLARE

#endif
