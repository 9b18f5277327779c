/* memmove (and so memcpy, which is overlap-safe here), written once and
 * instantiated per vector width (see simd.h): memcpy_sse2.c, memcpy_avx2.c,
 * memcpy_avx512.c.
 *
 * The ladder (V = vector bytes):
 *   n <= 16       two overlapping scalar loads, then two stores (8/4/2/1)
 *   16 < n <= 32  two overlapping 16-byte loads, then stores
 *   32 < n <= 64  four 16-byte loads, then stores (only when V is 64)
 *   V < n <= 8V   two, four or eight V-byte loads, then the stores
 *   8V < n        the first and last vectors loaded up front, then an
 *                 aligned-destination loop of 4 vectors, forward or
 *                 backward (backward only when dst lies inside the source),
 *                 then the saved vectors stored
 *   large         rep movsb in [rep_movsb_threshold, rep_movsb_stop) when
 *                 dst and src share their offset in a cache line, else
 *                 non-temporal stores (no overlap, above nt_copy_threshold)
 * Every size up to 8V loads all of its source before it stores anything,
 * which makes it overlap-safe without looking at the addresses.
 * The AVX-512 instantiation does n <= 64 with one masked load and store.
 * Nothing here calls memcpy except with a constant size (an inline move):
 * the library is built with -fno-tree-loop-distribute-patterns. */
#include "simd.h"
#include "copy.h"

#include <string.h>

#define V MK_VEC_BYTES

/* w <= n <= 2w: the first and last w bytes (w a constant 2, 4 or 8), both
 * loaded before either is stored, so overlap is harmless. */
MK_INLINE void copy_head_tail_scalar(char *d, const char *s, size_t n, size_t w)
{
    uint64_t a, b;
    memcpy(&a, s, w);
    memcpy(&b, s + n - w, w);
    memcpy(d, &a, w);
    memcpy(d + n - w, &b, w);
}

/* 0 <= n <= 16. */
MK_INLINE void copy_upto16(char *d, const char *s, size_t n)
{
    if (n >= 8)
        copy_head_tail_scalar(d, s, n, 8);
    else if (n >= 4)
        copy_head_tail_scalar(d, s, n, 4);
    else if (n >= 2)
        copy_head_tail_scalar(d, s, n, 2);
    else if (n == 1)
        *d = *s;
}

/* 16 <= n <= 32. */
MK_INLINE void copy_16_to_32(char *d, const char *s, size_t n)
{
    __m128i a = v16_load(s), b = v16_load(s + n - 16);
    v16_store(d, a);
    v16_store(d + n - 16, b);
}

/* 32 <= n <= 64. */
MK_INLINE void copy_32_to_64(char *d, const char *s, size_t n)
{
    __m128i a = v16_load(s), b = v16_load(s + 16);
    __m128i c = v16_load(s + n - 32), e = v16_load(s + n - 16);
    v16_store(d, a);
    v16_store(d + 16, b);
    v16_store(d + n - 32, c);
    v16_store(d + n - 16, e);
}

/* V <= n <= 2V, 2V <= n <= 4V, 4V <= n <= 8V: the first and the last
 * half of the vectors. Named registers, not an array: an array of vectors
 * makes the compiler realign the stack on every call. */
MK_INLINE void copy_2v(char *d, const char *s, size_t n)
{
    vec_t a = vec_load(s), b = vec_load(s + n - V);
    vec_store(d, a);
    vec_store(d + n - V, b);
}

MK_INLINE void copy_4v(char *d, const char *s, size_t n)
{
    vec_t a = vec_load(s), b = vec_load(s + V);
    vec_t c = vec_load(s + n - 2 * V), e = vec_load(s + n - V);
    vec_store(d, a);
    vec_store(d + V, b);
    vec_store(d + n - 2 * V, c);
    vec_store(d + n - V, e);
}

MK_INLINE void copy_8v(char *d, const char *s, size_t n)
{
    vec_t a = vec_load(s), b = vec_load(s + V), c = vec_load(s + 2 * V), e = vec_load(s + 3 * V);
    vec_t f = vec_load(s + n - 4 * V), g = vec_load(s + n - 3 * V);
    vec_t h = vec_load(s + n - 2 * V), i = vec_load(s + n - V);
    vec_store(d, a);
    vec_store(d + V, b);
    vec_store(d + 2 * V, c);
    vec_store(d + 3 * V, e);
    vec_store(d + n - 4 * V, f);
    vec_store(d + n - 3 * V, g);
    vec_store(d + n - 2 * V, h);
    vec_store(d + n - V, i);
}

/* n > 8V, dst not inside (src, src+n): the 4V loop runs upward from the
 * first V-aligned destination address; the first vector and the last 4 are
 * loaded before the loop and stored after it, so a source that the loop
 * overwrites (dst below src) was read first. */
MK_INLINE void copy_forward(char *d, const char *s, size_t n)
{
    vec_t head = vec_load(s);
    vec_t t0 = vec_load(s + n - 4 * V), t1 = vec_load(s + n - 3 * V);
    vec_t t2 = vec_load(s + n - 2 * V), t3 = vec_load(s + n - V);
    char *end = d + n;
    size_t skip = V - ((uintptr_t)d & (V - 1));
    char *p = d + skip;
    const char *q = s + skip;
    for (; p < end - 4 * V; p += 4 * V, q += 4 * V) {
        vec_t a = vec_load(q), b = vec_load(q + V), c = vec_load(q + 2 * V), e = vec_load(q + 3 * V);
        vec_store_a(p, a);
        vec_store_a(p + V, b);
        vec_store_a(p + 2 * V, c);
        vec_store_a(p + 3 * V, e);
    }
    vec_store(end - 4 * V, t0);
    vec_store(end - 3 * V, t1);
    vec_store(end - 2 * V, t2);
    vec_store(end - V, t3);
    vec_store(d, head);
}

/* n > 8V, dst inside (src, src+n): the mirror image, downward from the last
 * V-aligned destination address. */
MK_INLINE void copy_backward(char *d, const char *s, size_t n)
{
    vec_t tail = vec_load(s + n - V);
    vec_t h0 = vec_load(s), h1 = vec_load(s + V), h2 = vec_load(s + 2 * V), h3 = vec_load(s + 3 * V);
    char *p = (char *)align_down((uintptr_t)(d + n), V);
    const char *q = s + (p - d);
    for (; p > d + 4 * V; p -= 4 * V, q -= 4 * V) {
        vec_t a = vec_load(q - V), b = vec_load(q - 2 * V), c = vec_load(q - 3 * V), e = vec_load(q - 4 * V);
        vec_store_a(p - V, a);
        vec_store_a(p - 2 * V, b);
        vec_store_a(p - 3 * V, c);
        vec_store_a(p - 4 * V, e);
    }
    vec_store(d, h0);
    vec_store(d + V, h1);
    vec_store(d + 2 * V, h2);
    vec_store(d + 3 * V, h3);
    vec_store(d + n - V, tail);
}

/* n > 8V, no overlap: non-temporal stores over whole 64-byte-aligned lines
 * (a partly written line would cost a read), the head and the tail through
 * the cache after the fence that orders the streaming stores. The source is
 * prefetched a few lines ahead: measured on Zen 4 it adds a little above the
 * hardware prefetcher's reach (bench/exp_copy_sweep, avx_stream_prefetch). */
#define MK_STREAM_PREFETCH 512
MK_INLINE void copy_stream(char *d, const char *s, size_t n)
{
    char *end = d + n;
    for (size_t i = 0; i < 64; i += V)
        vec_store(d + i, vec_load(s + i));
    char *p = (char *)align_down((uintptr_t)d + 64, 64);
    const char *q = s + (p - d);
    for (; p + 4 * V <= end; p += 4 * V, q += 4 * V) {
        _mm_prefetch(q + MK_STREAM_PREFETCH, _MM_HINT_NTA);
        vec_t a = vec_load(q), b = vec_load(q + V), c = vec_load(q + 2 * V), e = vec_load(q + 3 * V);
        vec_stream(p, a);
        vec_stream(p + V, b);
        vec_stream(p + 2 * V, c);
        vec_stream(p + 3 * V, e);
    }
    _mm_sfence();
    for (size_t i = 4 * V; i > 0; i -= V)
        vec_store(end - i, vec_load(s + n - i));
}

/* No overlap: the first 64 bytes by vectors, the rest by rep movsb to a
 * 64-byte-aligned destination (unaligned rep movsb is the slow case). */
MK_INLINE void copy_rep_movsb(char *d, const char *s, size_t n)
{
    for (size_t i = 0; i < 64; i += V)
        vec_store(d + i, vec_load(s + i));
    char *p = (char *)align_down((uintptr_t)d + 64, 64);
    const char *q = s + (p - d);
    size_t left = (size_t)(d + n - p);
    __asm__ volatile("rep movsb" : "+D"(p), "+S"(q), "+c"(left) : : "memory");
}

/* n > 8V: backward when dst lies inside the source (it must), and also
 * when dst is less than 256 bytes above src modulo 4 KiB and backward is
 * safe (no dst-below-src overlap): forward, each load would then match the
 * page offset of a store still in flight (4K aliasing) and wait for it.
 * Zen 4, 8 KiB with dst%4096 = src%4096 + 54: 2.7x the aligned time
 * forward, ~1.1x backward (bench/exp_copy_sweep, misaligned series).
 * With dst and src at different cache-line offsets one access in every
 * 64 bytes crosses a line, and on Zen 4 that sets the L1-resident floor:
 * 4 KiB at dst = src + k (mod 4 KiB) takes 1.37-1.41x the aligned time in
 * either direction (1.2-1.3x at other page distances); k = 32 splits no
 * 32-byte half and runs at 1.00x.  Measured no better: aligning the source
 * instead (split stores), 32-byte halves, loads further ahead of stores,
 * and aligned loads joined by a byte permute (vpermt2b costs 1.26x even
 * with both sides aligned). */
MK_INLINE void copy_loop(char *d, const char *s, size_t n)
{
    uintptr_t ahead = (uintptr_t)d - (uintptr_t)s;
    if (ahead < n || ((ahead & (4096 - 256)) == 0 && (uintptr_t)s - (uintptr_t)d >= n))
        copy_backward(d, s, n);
    else
        copy_forward(d, s, n);
}

/* rep movsb only where dst - src is a multiple of the strategy's alignment
 * (64 on AMD: with the destination aligned the source then is too, else
 * Zen 4 runs 5x..25x slower; see docs/strategy.md, row amd-zen4). */
MK_INLINE int rep_movsb_aligned(const char *d, const char *s, size_t align)
{
    return (((uintptr_t)d - (uintptr_t)s) & (align - 1)) == 0;
}

MK_INLINE int overlaps(const char *d, const char *s, size_t n)
{
    return (uintptr_t)d - (uintptr_t)s < n || (uintptr_t)s - (uintptr_t)d < n;
}

/* n > 8V from mk_copy_large_from up: picks the method by the thresholds. */
static __attribute__((noinline)) void *MK_FN(copy_large)(char *d, const char *s, size_t n)
{
    const mk_tunables *t = &mk_cfg;   /* set before any variant could be picked */
    if ((uintptr_t)d - (uintptr_t)s < n)
        copy_backward(d, s, n);
    else if (n >= t->rep_movsb_threshold && n < t->rep_movsb_stop && !overlaps(d, s, n) &&
             rep_movsb_aligned(d, s, t->rep_movsb_align))
        copy_rep_movsb(d, s, n);
    else if (n >= t->nt_copy_threshold && !overlaps(d, s, n))
        copy_stream(d, s, n);
    else
        copy_loop(d, s, n);
    return d;
}

MK_HIDDEN void *MK_FN(mk_memmove)(void *dst, const void *src, size_t n)
{
    char *d = dst;
    const char *s = src;
#ifdef MK_HAVE_MASKED_STORES
    if (n <= V) {
        vec_store_n(d, vec_load_n(s, n), n);
        return dst;
    }
#else
    if (n <= 16) {
        copy_upto16(d, s, n);
        return dst;
    }
    if (n <= 32) {
        copy_16_to_32(d, s, n);
        return dst;
    }
    if (V >= 64 && n <= 64) {
        copy_32_to_64(d, s, n);
        return dst;
    }
#endif
    if (n <= 2 * V) {
        copy_2v(d, s, n);
        return dst;
    }
    if (n <= 4 * V) {
        copy_4v(d, s, n);
        return dst;
    }
    if (n <= 8 * V) {
        copy_8v(d, s, n);
        return dst;
    }
    if (MK_UNLIKELY(n >= mk_copy_large_from))
        return MK_FN(copy_large)(d, s, n);   /* a tail call: no frame here */
    copy_loop(d, s, n);
    return dst;
}

/* Non-temporal above 8V whatever the thresholds say; overlapping buffers
 * take the ordinary path (streaming stores would race their own loads). */
MK_HIDDEN void *MK_FN(mk_memcpy_nt)(void *dst, const void *src, size_t n)
{
    if (n <= 8 * V || overlaps(dst, src, n))
        return MK_FN(mk_memmove)(dst, src, n);
    copy_stream(dst, src, n);
    return dst;
}

#undef V
