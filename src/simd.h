/* SPDX-License-Identifier: Apache-2.0 */
/* The vector vocabulary the memory-routine templates are written in.
 *
 * A file that instantiates a template defines MK_VEC_BYTES (16, 32 or 64) and
 * is compiled with the matching -m flags (CMake sets them from the file-name
 * suffix: *_sse2.c, *_avx2.c, *_evex.c, *_avx512.c, per the table in isa.def;
 * an *_evex.c file also defines MK_EVEX).  Everything here is static inline,
 * so each instantiation gets code for its own ISA only. */
#ifndef MEMKIT_SIMD_H
#define MEMKIT_SIMD_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#ifndef MK_VEC_BYTES
#error "define MK_VEC_BYTES (16, 32 or 64) before including simd.h"
#endif

#define MK_INLINE static inline __attribute__((always_inline))
#define MK_CAT_(a, b) a##_##b
#define MK_CAT(a, b) MK_CAT_(a, b)

/* How far each family's small path uses masked accesses, without a branch
 * on n (0: the ISA has no masks):
 *   MK_SET_MASKED_BYTES   memset: 2V by two masked stores (avx512); 128 by
 *                         four overlapping 32-byte ones (evex, see below)
 *   MK_SET_MASKED_WIDTH   the bytes of one of those masked stores
 *   MK_COPY_MASKED_BYTES  memcpy/memmove: 2V by two masked vectors (avx512);
 *                         64 by two overlapping 32-byte ones (evex)
 *   MK_COPY_MASKED_WIDTH  the bytes of one of those masked accesses */
#if MK_VEC_BYTES == 16
#define MK_ISA sse2
#define MK_SET_MASKED_BYTES 0
#define MK_COPY_MASKED_BYTES 0
typedef __m128i vec_t;
MK_INLINE vec_t vec_splat(uint8_t b) { return _mm_set1_epi8((char)b); }
MK_INLINE vec_t vec_load(const void *p) { return _mm_loadu_si128((const __m128i *)p); }
MK_INLINE vec_t vec_load_a(const void *p) { return _mm_load_si128((const __m128i *)p); }
MK_INLINE void vec_store(void *p, vec_t v) { _mm_storeu_si128((__m128i *)p, v); }
MK_INLINE void vec_store_a(void *p, vec_t v) { _mm_store_si128((__m128i *)p, v); }
MK_INLINE void vec_stream(void *p, vec_t v) { _mm_stream_si128((__m128i *)p, v); }
#elif MK_VEC_BYTES == 32
#define MK_ISA avx2
#define MK_SET_MASKED_BYTES 0
#define MK_COPY_MASKED_BYTES 0
typedef __m256i vec_t;
MK_INLINE vec_t vec_splat(uint8_t b) { return _mm256_set1_epi8((char)b); }
MK_INLINE vec_t vec_load(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }
MK_INLINE vec_t vec_load_a(const void *p) { return _mm256_load_si256((const __m256i *)p); }
MK_INLINE void vec_store(void *p, vec_t v) { _mm256_storeu_si256((__m256i *)p, v); }
MK_INLINE void vec_store_a(void *p, vec_t v) { _mm256_store_si256((__m256i *)p, v); }
MK_INLINE void vec_stream(void *p, vec_t v) { _mm256_stream_si256((__m256i *)p, v); }
#elif MK_VEC_BYTES == 64
#ifdef MK_EVEX
/* evex, the AVX-512 build for small calls whose data is not in the cache.
 * There every access costs a miss for each line its whole vector spans,
 * masked-off bytes and fully masked accesses included: avx512's two masked
 * 64-byte vectors ran small copies at 0.4-0.6x glibc at random lines of a
 * 64 MiB arena (Zen 4, docs/strategy.md, small sizes when the data is cold).
 * So its small paths mask 32-byte accesses that repeat one access below 32
 * bytes instead of reaching past it: copies up to 64 bytes, memset up to
 * 128.  Above, every line of [s, s+n) is needed anyway, and it runs
 * avx512's 64-byte ladders and loops: built with 32-byte vectors throughout,
 * its copies of 512 B-2 KiB ran 0.68-0.88x glibc on an Intel Xeon 6/207 and
 * ~0.8x on Zen 5, where the 64-byte ones are level. */
#define MK_ISA evex
#define MK_SET_MASKED_BYTES 128
#define MK_SET_MASKED_WIDTH 32
#define MK_COPY_MASKED_BYTES 64
#define MK_COPY_MASKED_WIDTH 32
#else
#define MK_ISA avx512
#define MK_SET_MASKED_BYTES (2 * MK_VEC_BYTES)
#define MK_SET_MASKED_WIDTH MK_VEC_BYTES
#define MK_COPY_MASKED_BYTES (2 * MK_VEC_BYTES)
#define MK_COPY_MASKED_WIDTH MK_VEC_BYTES
#endif
typedef __m512i vec_t;
MK_INLINE vec_t vec_splat(uint8_t b) { return _mm512_set1_epi8((char)b); }
MK_INLINE vec_t vec_load(const void *p) { return _mm512_loadu_si512(p); }
MK_INLINE vec_t vec_load_a(const void *p) { return _mm512_load_si512(p); }
MK_INLINE void vec_store(void *p, vec_t v) { _mm512_storeu_si512(p, v); }
MK_INLINE void vec_store_a(void *p, vec_t v) { _mm512_store_si512(p, v); }
MK_INLINE void vec_stream(void *p, vec_t v) { _mm512_stream_si512((void *)p, v); }
/* Bytes [0, n) of a vector, n <= 64 (bzhi: no branch).  Masked-off bytes
 * never fault and are never written, but an access whose vector crosses a
 * page is slow (see mk_in_page's callers). */
MK_INLINE __mmask64 vec_mask(size_t n) { return _bzhi_u64(~0ull, (unsigned)n); }
MK_INLINE void vec_store_n(void *p, vec_t v, size_t n) { _mm512_mask_storeu_epi8(p, vec_mask(n), v); }
MK_INLINE vec_t vec_load_n(const void *p, size_t n) { return _mm512_maskz_loadu_epi8(vec_mask(n), p); }
/* 32-byte masked accesses (AVX-512VL) beside the 64-byte vectors: bytes
 * [0, n) of the 32, all of them for n >= 32 (up to 255). */
MK_INLINE __mmask32 v32_mask(size_t n) { return _bzhi_u32(~0u, (unsigned)n); }
MK_INLINE void v32_store_n(void *p, __m256i v, size_t n) { _mm256_mask_storeu_epi8(p, v32_mask(n), v); }
MK_INLINE __m256i v32_load_n(const void *p, size_t n) { return _mm256_maskz_loadu_epi8(v32_mask(n), p); }
#else
#error "MK_VEC_BYTES must be 16, 32 or 64"
#endif

/* The ISA-suffixed name of a template's entry point: MK_FN(mk_memset) is
 * mk_memset_avx2 in the AVX2 instantiation. */
#define MK_FN(name) MK_CAT(name, MK_ISA)

/* 16-byte pieces, for the small-size ladders of every width. */
MK_INLINE __m128i v16_splat(uint8_t b) { return _mm_set1_epi8((char)b); }
MK_INLINE void v16_store(void *p, __m128i v) { _mm_storeu_si128((__m128i *)p, v); }
MK_INLINE __m128i v16_load(const void *p) { return _mm_loadu_si128((const __m128i *)p); }
/* [p, p+span) lies inside one 4 KiB page (span <= 4096). */
MK_INLINE int mk_in_page(const void *p, size_t span)
{
    return ((uintptr_t)p & 4095) <= 4096 - span;
}

/* Both [a, a+span) and [b, b+span) lie inside one page each: bit 12 flips
 * from a to a+span-1 only when they cross.  One test and branch for the
 * two: small copies through the preload ran 4% faster than with two
 * mk_in_page tests (Zen 4, production distributions in L1). */
MK_INLINE int mk_both_in_page(const void *a, const void *b, size_t span)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return !(((x ^ (x + span - 1)) | (y ^ (y + span - 1))) & 4096);
}

MK_INLINE uintptr_t align_down(uintptr_t p, size_t a) { return p & ~(uintptr_t)(a - 1); }
MK_INLINE uintptr_t align_up(uintptr_t p, size_t a) { return (p + a - 1) & ~(uintptr_t)(a - 1); }

#endif
