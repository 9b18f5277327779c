/* SPDX-License-Identifier: Apache-2.0 */
/* memset, written once and instantiated per vector width (see simd.h):
 * memset_sse2.c, memset_avx2.c, memset_evex.c, memset_avx512.c.  Built from
 * named pieces, each store pattern written once:
 *   set_masked       n <= 2V (avx512) or 4V (evex) by masked stores, no
 *                    branch on n
 *   set_below16,     the MSRC seed's overlapping-store ladders (n <= 64; on
 *   set_16_to_64     AVX-512 only where a masked store would cross a page)
 *   set_head_tail    V <= n <= 2V: one store at each end
 *   set_upto_8v      2, 4 or 8 stores from both ends
 *   set_block4       4 aligned stores (cached or non-temporal): every loop's body
 *   set_tail         3 aligned + 1 unaligned store ending exactly at dst+n
 *   set_loop, set_rep_stosb, set_stream: the large methods, chosen by the
 *                    thresholds of the CPU's strategy row (src/strategy.c)
 * Measurements behind the choices: docs/strategy.md.
 * Nothing here calls memset: the library is built with
 * -fno-tree-loop-distribute-patterns, so no loop is turned into a call. */
#include "simd.h"
#include "../internal.h"

#include <stdbool.h>
#include <string.h>

#define V MK_VEC_BYTES

MK_INLINE uint32_t pattern32(int c) { return 0x01010101u * (uint8_t)c; }

/* 0 <= n < 16. */
MK_INLINE void set_below16(char *d, size_t n, int c)
{
    if (n >= 4) {
        /* Seed, "variable size branchless store": offsets 0, n-4, and the
         * pair (4 or 0, n-8 or n-4) chosen by bit 3 of n. */
        uint32_t p = pattern32(c);
        size_t half = (n & 8) >> 1;
        memcpy(d, &p, 4);
        memcpy(d + n - 4, &p, 4);
        memcpy(d + half, &p, 4);
        memcpy(d + n - 4 - half, &p, 4);
        return;
    }
    if (n == 0)
        return;
    d[0] = (char)c;
    if (n >= 2) {
        uint16_t p2 = (uint16_t)pattern32(c);
        memcpy(d + n - 2, &p2, 2);
    }
}

/* 16 <= n <= 64: four overlapping 16-byte stores, offsets chosen by bit 5
 * of n - 1, so 64 joins the class: with 64 a class of its own, random 32,
 * 48 and 64-byte calls mispredicted that branch and ran 1.5x slower (AVX2,
 * Zen 3; docs/strategy.md, small sizes without masks). */
MK_INLINE void set_16_to_64(char *d, size_t n, __m128i x)
{
    size_t half = ((n - 1) & 32) >> 1;
    v16_store(d, x);
    v16_store(d + n - 16, x);
    v16_store(d + half, x);
    v16_store(d + n - 16 - half, x);
}

#if MK_SET_MASKED_BYTES
/* n <= MK_SET_MASKED_BYTES (see simd.h) by masked stores, masks from bzhi
 * and cmovs, no branch on n.  avx512: two vectors, the second masked off
 * below V.  evex: four 32-byte stores at 0, h, t-h and t (t = n-32 clamped
 * at 0, h = 32 above 64), the MSRC seed's overlapping stores with one mask
 * for the sizes below 32, where all four are the same store: none reaches
 * past d+32, and from 32 bytes up none leaves [d, d+n).
 * Only where [d, d+span) stays inside one page (mk_in_page): a masked
 * store crossing a page costs ~200 ns on Zen 4 even when both pages are
 * mapped, and ~1.4 us when the masked-off bytes reach an unmapped one
 * (docs/strategy.md, masked accesses). */
MK_INLINE void set_masked(char *d, size_t n, int c)
{
    vec_t v = vec_splat((uint8_t)c);
#if MK_SET_MASKED_WIDTH == V
    vec_store_n(d, v, n);
    vec_store_n(d + V, v, n > V ? n - V : 0);
#else
    size_t t = n > 32 ? n - 32 : 0, h = n > 64 ? 32 : 0;
    __m256i w = _mm512_castsi512_si256(v);
    v32_store_n(d, w, n);
    v32_store_n(d + h, w, n);
    v32_store_n(d + t - h, w, n);
    v32_store_n(d + t, w, n);
#endif
}
#endif

/* V <= n <= 2V. */
MK_INLINE void set_head_tail(char *d, size_t n, vec_t v)
{
    vec_store(d, v);
    vec_store(d + n - V, v);
}

/* V < n: stores from the front issued before each size test, so that a
 * mispredicted test (sizes are often random) leaves them done, as glibc
 * orders its AVX-512 memset; measured in memset-random, rows of random
 * sizes spanning 64..1024.  n <= 8V: 2, 4 or 8 stores, half from each end,
 * in ascending address order, returns true.  n > 8V: sets [d, d+4V) and
 * returns false. */
MK_INLINE bool set_upto_8v(char *d, size_t n, vec_t v)
{
    char *end = d + n;
    if (MK_LIKELY(n <= 2 * V)) {
        set_head_tail(d, n, v);
        return true;
    }
    vec_store(d, v);
    vec_store(d + V, v);
    if (n <= 4 * V) {
        vec_store(end - 2 * V, v);
        vec_store(end - V, v);
        return true;
    }
    vec_store(d + 2 * V, v);
    vec_store(d + 3 * V, v);
    if (n > 8 * V)
        return false;
    vec_store(end - 4 * V, v);
    vec_store(end - 3 * V, v);
    vec_store(end - 2 * V, v);
    vec_store(end - V, v);
    return true;
}


/* 4V bytes at the V-aligned p: through the cache, or non-temporal (a
 * constant, so each caller's loop gets only its kind of store). */
MK_INLINE void set_block4(char *p, vec_t v, int stream)
{
    for (size_t i = 0; i < 4 * V; i += V) {
        if (stream)
            vec_stream(p + i, v);
        else
            vec_store_a(p + i, v);
    }
}

/* Where the tail starts: the first V-aligned address at or above end - 4V
 * (so a loop that stops there wastes no store when end is aligned). */
MK_INLINE char *tail_start(char *end)
{
    return (char *)align_up((uintptr_t)(end - 4 * V), V);
}

/* The last bytes from tail_start(end), dst <= end - 4V: 3 aligned stores
 * + 1 unaligned ending exactly at end (seed, "efficiently set trailing
 * bytes"). */
MK_INLINE void set_tail(char *end, vec_t v)
{
    char *t = tail_start(end);
    vec_store_a(t, v);
    vec_store_a(t + V, v);
    vec_store_a(t + 2 * V, v);
    vec_store(end - V, v);
}

/* n > 8V, [d, d+4V) already set: an aligned 4-store loop from the
 * aligned address below d+4V, then the tail. */
MK_INLINE void set_after_head(char *d, size_t n, vec_t v)
{
    char *end = d + n;
    char *t = tail_start(end);
    for (char *p = (char *)align_down((uintptr_t)d, V) + 4 * V; p < t; p += 4 * V)
        set_block4(p, v, 0);
    set_tail(end, v);
}

/* n > 8V: 4 head stores, the aligned loop, the tail. */
MK_INLINE void set_loop(char *d, size_t n, vec_t v)
{
    for (size_t i = 0; i < 4 * V; i += V)
        vec_store(d + i, v);
    set_after_head(d, n, v);
}

/* First 64 bytes by vector stores, the rest by rep stosb from a 64-byte
 * aligned address: unaligned rep stosb runs about half speed (seed). */
MK_INLINE void set_rep_stosb(char *d, size_t n, vec_t v, int c)
{
    for (size_t i = 0; i < 64; i += V)
        vec_store(d + i, v);
    char *p = (char *)align_down((uintptr_t)d + 64, 64);
    size_t left = (size_t)(d + n - p);
    __asm__ volatile("rep stosb" : "+D"(p), "+c"(left) : "a"(c) : "memory");
}

/* n >= 4V: non-temporal 4-store loop over whole aligned blocks, then the
 * tail through the cache, after the fence that orders the streaming stores. */
MK_INLINE void set_stream(char *d, size_t n, vec_t v)
{
    char *end = d + n;
    vec_store(d, v);
    char *p = (char *)align_down((uintptr_t)d + V, V);
    for (; p + 4 * V <= end; p += 4 * V)
        set_block4(p, v, 1);
    _mm_sfence();
    set_tail(end, v);
}

/* Sizes from mk_memset_large_from up: picks the method by the thresholds.
 * Takes c, not a vector: a vector argument would travel in zmm0, which the
 * AVX-512 build keeps clean (see CMakeLists.txt). */
static __attribute__((noinline)) void MK_FN(set_large)(char *d, size_t n, int c)
{
    mk_path path = mk_set_path(mk_config(), n, c);   /* the first large call reads the caches */
    vec_t v = vec_splat((uint8_t)c);
    if (path == MK_PATH_STREAM)
        set_stream(d, n, v);
    else if (path == MK_PATH_REP)
        set_rep_stosb(d, n, v, c);
    else
        set_loop(d, n, v);
}

/* n <= 64 without masked stores (or where they would cross a page). */
MK_INLINE void set_small(char *d, size_t n, int c)
{
    if (n < 16)
        set_below16(d, n, c);
    else
        set_16_to_64(d, n, v16_splat((uint8_t)c));
}

#if !MK_SET_MASKED_BYTES
/* n <= 64 without masks: false for n > 64.  The 16-64 class is tested
 * first, by one range test that falls through into its four stores: behind
 * tests at 64 and 16 (two taken branches) AVX2 fills of 32-64 B ran
 * 0.81-1.00x glibc's AVX2 code, after 1.50x (Xeon 6/167; Zen 3 reported
 * 0.64-0.67x before).  Two 32-byte stores from 32 B, glibc's shape, add a
 * test at 32 that random 1-128 B sizes mispredict (docs/strategy.md, small
 * sizes without masks). */
MK_INLINE bool set_upto64_nomask(char *d, size_t n, int c)
{
    if (MK_LIKELY(n - 16 <= 64 - 16)) {
        set_16_to_64(d, n, v16_splat((uint8_t)c));
        return true;
    }
    if (n < 16) {
        set_below16(d, n, c);
        return true;
    }
    return false;
}
#endif

/* The entry falls through into the masked path (no taken branch);
 * every path it jumps to starts a 64-byte line (-falign-jumps=64 for the
 * GCC build of the AVX-512 file, see CMakeLists.txt): with a path
 * straddling a line, calls of 1..128 bytes took one cycle more in ~9. */
MK_HIDDEN __attribute__((aligned(64))) void *MK_FN(mk_memset)(void *dst, int c, size_t n)
{
    char *d = dst;
#if MK_SET_MASKED_BYTES
    if (n <= MK_SET_MASKED_BYTES) {
        if (MK_LIKELY(mk_in_page(d, MK_SET_MASKED_BYTES))) {
            set_masked(d, n, c);
            return dst;
        }
        if (n <= 64)
            set_small(d, n, c);
        else
            set_upto_8v(d, n, vec_splat((uint8_t)c));
        return dst;
    }
#endif
#if !MK_SET_MASKED_BYTES
    if (set_upto64_nomask(d, n, c))
        return dst;
#endif
    vec_t v = vec_splat((uint8_t)c);
    if (set_upto_8v(d, n, v))
        return dst;
    if (MK_UNLIKELY(n >= __atomic_load_n(&mk_memset_large_from, __ATOMIC_RELAXED))) {
        MK_FN(set_large)(d, n, c);
        return dst;
    }
    set_after_head(d, n, v);
    return dst;
}

/* Always non-temporal above 4V, whatever the thresholds say. */
MK_HIDDEN void *MK_FN(mk_memset_nt)(void *dst, int c, size_t n)
{
    if (n < 4 * V)
        return MK_FN(mk_memset)(dst, c, n);
    set_stream(dst, n, vec_splat((uint8_t)c));
    return dst;
}

/* The seed's heap-zero routine: 16-aligned dst, n a multiple of 16, zero
 * only: no pattern, no head alignment, tail stores overlap fully or not. */
MK_HIDDEN void MK_FN(mk_zero_aligned16)(void *dst, size_t n)
{
    MK_CONTRACT(((uintptr_t)dst & 15) == 0 && (n & 15) == 0,
                "mk_zero_aligned16 needs a 16-aligned dst and a multiple of 16 bytes");
    char *d = dst;
    __m128i z = _mm_setzero_si128();
    if (n < 64) {
        /* 0, 16, 32, 48: stores at 0 and n-16, and at 16 and n-32 if n >= 32 */
        if (n == 0)
            return;
        size_t half = (n & 32) >> 1;
        _mm_store_si128((__m128i *)d, z);
        _mm_store_si128((__m128i *)(d + n - 16), z);
        _mm_store_si128((__m128i *)(d + half), z);
        _mm_store_si128((__m128i *)(d + n - 16 - half), z);
        return;
    }
    if (n > 8 * V || MK_UNLIKELY(n >= __atomic_load_n(&mk_memset_large_from, __ATOMIC_RELAXED))) {
        MK_FN(mk_memset)(dst, 0, n);
        return;
    }
    set_upto_8v(d, n, vec_splat(0));
}

#undef V
