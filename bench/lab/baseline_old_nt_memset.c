/* SPDX-License-Identifier: Apache-2.0 */
/* Benchmark-only baseline: the Windows ("NT") memset that the MSRC seed
 * replaced, rebuilt from the seed's description of it (SSE2, no rep stosb):
 *   - under 80 bytes, loops of one store per iteration (16-byte stores from
 *     16 bytes up, 8-byte stores below, then bytes);
 *   - a branch before each trailing store (skip it if already filled);
 *   - from 80 bytes: one unaligned 16-byte store, the destination aligned to
 *     16, a loop of 8 aligned stores (128 bytes) per iteration, then a
 *     16-byte-at-a-time trailing loop, then the branch-guarded last store.
 * It exists so memset-random can set the seed's own "new against old" table
 * beside this machine's.  Not part of the library. */
#include "memset_methods.h"

#include <emmintrin.h>
#include <stdint.h>
#include <string.h>

/* Its loops must stay loops, not calls to memset. */
#define KEEP_LOOPS __attribute__((optimize("no-tree-loop-distribute-patterns")))

KEEP_LOOPS void *baseline_old_nt_memset(void *dst, int c, size_t n)
{
    unsigned char *d = dst, *end = d + n;
    uint64_t pattern = 0x0101010101010101ull * (uint8_t)c;   /* the imul */
    __m128i x = _mm_set1_epi64x((long long)pattern);
    if (n < 80) {
        if (n >= 16) {
            do {
                _mm_storeu_si128((__m128i *)d, x);
                d += 16;
            } while (end - d >= 16);
            if (d != end)
                _mm_storeu_si128((__m128i *)(end - 16), x);
            return dst;
        }
        for (; end - d >= 8; d += 8)
            memcpy(d, &pattern, 8);
        for (; d != end; d++)
            *(volatile unsigned char *)d = (unsigned char)c;
        return dst;
    }
    _mm_storeu_si128((__m128i *)d, x);
    d = (unsigned char *)(((uintptr_t)d + 16) & ~(uintptr_t)15);
    for (; end - d >= 128; d += 128) {
        _mm_store_si128((__m128i *)d, x);
        _mm_store_si128((__m128i *)(d + 16), x);
        _mm_store_si128((__m128i *)(d + 32), x);
        _mm_store_si128((__m128i *)(d + 48), x);
        _mm_store_si128((__m128i *)(d + 64), x);
        _mm_store_si128((__m128i *)(d + 80), x);
        _mm_store_si128((__m128i *)(d + 96), x);
        _mm_store_si128((__m128i *)(d + 112), x);
    }
    for (; end - d >= 16; d += 16)
        _mm_store_si128((__m128i *)d, x);
    if (d != end)
        _mm_storeu_si128((__m128i *)(end - 16), x);
    return dst;
}
