/* SPDX-License-Identifier: Apache-2.0 */
/* The copiers the lab's copy experiments race (copy-sweep, ipc-copy), in one
 * list: the C library's memcpy (the baseline every ratio is against), the
 * library's copiers (mk_copiers(): the ones a user would pick), then the
 * lab's own contestants, which no user would pick: rep movsb alone and the
 * seed's aligned AVX methods the library does not ship.  Every one keeps the
 * copier contract of memkit.h. */
#ifndef MEMKIT_LAB_COPY_METHODS_H
#define MEMKIT_LAB_COPY_METHODS_H

#include "memkit.h"

#include <stddef.h>

/* Every copier, usable or not, in a fixed order. */
const mk_copier *lab_copiers(size_t *count);
/* The copier called name, or NULL. */
const mk_copier *lab_copier_find(const char *name);

/* The lab's AVX contestants (copy_methods_avx2.c), each an instance of the
 * seed's aligned loop (src/copy/copiers_avx2.h):
 *   X(name, align, unroll, stream_load, stream_store, prefetch, description) */
#define LAB_AVX_COPIERS(X)                                                                  \
    X(avx_aligned, 32, 1, 0, 0, 0, "aligned 32-byte loads and stores")                      \
    X(avx_aligned_unroll4, 128, 4, 0, 0, 0, "avx_aligned, 4 vectors per iteration")         \
    X(avx_stream, 32, 1, 1, 1, 0, "streaming loads and non-temporal stores, sfence")        \
    X(avx_stream_unroll4, 128, 4, 1, 1, 0, "avx_stream, 4 vectors per iteration")           \
    X(avx_stream_prefetch_unroll4, 256, 4, 0, 1, 1, "avx_stream_prefetch, 4 lines per iteration")
#define LAB_DECLARE_AVX_COPIER(name, ...) int lab_copy_##name(void *dst, const void *src, size_t n);
LAB_AVX_COPIERS(LAB_DECLARE_AVX_COPIER)
#undef LAB_DECLARE_AVX_COPIER

#endif
