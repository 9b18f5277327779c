/* SPDX-License-Identifier: Apache-2.0 */
/* The seed's aligned AVX copy methods, written once: a loop over 32-byte
 * vectors with the load (cached or streaming), the store (cached or
 * non-temporal), the prefetch of the next block and the unrolling as
 * compile-time choices.  For *_avx2.c files only (compiled with AVX2): the
 * library's streaming copier (copiers_avx2.c) and the lab's contestants
 * (bench/lab/copy_methods_avx2.c). */
#ifndef MEMKIT_COPIERS_AVX2_H
#define MEMKIT_COPIERS_AVX2_H

#include "copiers.h"

#include <immintrin.h>

/* unroll vectors per step (2*unroll with prefetch: the seed copies a whole
 * 64-byte line per prefetch). n is a multiple of the step. */
static inline __attribute__((always_inline)) void
aligned_copy_loop(char *d, const char *s, size_t n, int unroll, int stream_load,
                  int stream_store, int prefetch)
{
    const size_t step = (size_t)unroll * (prefetch ? 64 : 32);
    for (size_t i = 0; i < n; i += step) {
        if (prefetch)
            for (size_t line = 0; line < step; line += 64)
                _mm_prefetch(s + i + step + line, _MM_HINT_T0);
        for (size_t k = 0; k < step; k += 32) {
            const __m256i *from = (const __m256i *)(s + i + k);
            __m256i v = stream_load ? _mm256_stream_load_si256(from) : _mm256_load_si256(from);
            if (stream_store)
                _mm256_stream_si256((__m256i *)(d + i + k), v);
            else
                _mm256_store_si256((__m256i *)(d + i + k), v);
        }
    }
    if (stream_store)
        _mm_sfence();
}

/* Defines the copier fn: it checks its contract first and, given buffers it
 * cannot handle, returns EINVAL and touches nothing.  The seed's avx_stream
 * uses streaming loads too; its prefetching form loads through the cache
 * what it has just prefetched. */
#define ALIGNED_COPIER(fn, align, unroll, stream_load, stream_store, prefetch)       \
    MK_HIDDEN int fn(void *dst, const void *src, size_t n)                            \
    {                                                                                 \
        if (!copier_accepts(dst, src, n, align))                                      \
            return EINVAL;                                                            \
        aligned_copy_loop(dst, src, n, unroll, stream_load, stream_store, prefetch); \
        return 0;                                                                     \
    }

#endif
