/* SPDX-License-Identifier: Apache-2.0 */
/* memmove (and so memcpy, which is overlap-safe here), written once and
 * instantiated per vector width (see simd.h): memcpy_sse2.c, memcpy_avx2.c,
 * memcpy_evex.c, memcpy_avx512.c.  Built from named pieces, each written once:
 *   copy_masked        n <= 2V (avx512), 64 (evex): masked loads, then masked
 *                      stores, no branch on n (where no access crosses a
 *                      page)
 *   copy_head_tail     w <= n <= 2w: the first and last w bytes, and
 *   copy_four_pieces   w <= n <= 4w: four overlapping pieces, no branch on
 *                      n (the memset seed's), for one width w (2, 4, 16 or
 *                      V bytes, a piece): loaded before stored
 *   copy_upto64        n <= 64: the one ladder of those pieces
 *   copy_8v            four vectors from each end
 *   copy_block4_fwd,   4 vectors, aligned destination (cached or
 *   copy_block4_bwd    non-temporal stores): the body of every loop
 *   align_forward      where an aligned-destination loop starts
 *   copy_forward, copy_backward, copy_stream, copy_rep_movsb: above 8V,
 *                      the method chosen by the thresholds of the CPU's
 *                      strategy row (src/strategy.c)
 * Every size up to 8V loads all of its source before it stores anything,
 * which makes it overlap-safe without looking at the addresses.
 * Measurements behind the choices: docs/strategy.md.
 * Nothing here calls memcpy except with a constant size (an inline move):
 * the library is built with -fno-tree-loop-distribute-patterns. */
#include "simd.h"
#include "../internal.h"

#include <stdbool.h>
#include <string.h>

#define V MK_VEC_BYTES

/* One piece of w bytes (w a constant: 2, 4, 8, 16 or V) between its load
 * and its store, in the member of its width: after inlining only that
 * register is left (a narrower memcpy into a wider member would leave the
 * piece on the stack). */
typedef struct {
    uint16_t x2;
    uint32_t x4;
    uint64_t x8;
    __m128i  x16;
    vec_t    xv;
} piece;

MK_INLINE piece piece_load(const char *s, size_t w)
{
    piece p;
    if (w == V)
        p.xv = vec_load(s);
    else if (w == 16)
        p.x16 = v16_load(s);
    else if (w == 8)
        memcpy(&p.x8, s, 8);
    else if (w == 4)
        memcpy(&p.x4, s, 4);
    else
        memcpy(&p.x2, s, 2);
    return p;
}

MK_INLINE void piece_store(char *d, piece p, size_t w)
{
    if (w == V)
        vec_store(d, p.xv);
    else if (w == 16)
        v16_store(d, p.x16);
    else if (w == 8)
        memcpy(d, &p.x8, 8);
    else if (w == 4)
        memcpy(d, &p.x4, 4);
    else
        memcpy(d, &p.x2, 2);
}

/* w <= n <= 2w: the first and last w bytes, both loaded before either is
 * stored, so overlap is harmless. */
MK_INLINE void copy_head_tail(char *d, const char *s, size_t n, size_t w)
{
    piece a = piece_load(s, w), b = piece_load(s + n - w, w);
    piece_store(d, a, w);
    piece_store(d + n - w, b, w);
}

/* w <= n <= 4w without a branch on n: four overlapping pieces at 0, n-w,
 * h and n-w-h, where h (w above 2w, else 0) comes from one bit of n - 1,
 * as the MSRC seed's memset places its stores; all loaded before any is
 * stored.  Random sizes mispredict a ladder of 2/4/8/16/32-byte classes
 * (docs/strategy.md, small sizes without masks). */
MK_INLINE void copy_four_pieces(char *d, const char *s, size_t n, size_t w)
{
    size_t h = ((n - 1) & (2 * w)) >> 1;
    piece a = piece_load(s, w), b = piece_load(s + n - w, w);
    piece c = piece_load(s + h, w), e = piece_load(s + n - w - h, w);
    piece_store(d, a, w);
    piece_store(d + n - w, b, w);
    piece_store(d + h, c, w);
    piece_store(d + n - w - h, e, w);
}

/* n <= 64 by the one ladder of pieces, false (nothing done) for n > 64:
 * the 16-64 class first, by one range test that falls through into its
 * four pieces, as memset's set_upto64_nomask (aligned 32 B copies went
 * from 0.81x glibc's AVX2 code to 1.00x, Xeon 6/167); then 4-15, 2-3, 1.
 * The unmasked builds' small path and the masked ones' where a masked
 * access would cross a page. */
MK_INLINE bool copy_upto64(char *d, const char *s, size_t n)
{
    if (MK_LIKELY(n - 16 <= 64 - 16)) {
        copy_four_pieces(d, s, n, 16);
        return true;
    }
    if (n >= 16)
        return false;
    if (n >= 4)
        copy_four_pieces(d, s, n, 4);
    else if (n >= 2)
        copy_head_tail(d, s, n, 2);
    else if (n == 1)
        *d = *s;
    return true;
}

#if MK_COPY_MASKED_BYTES
_Static_assert(MK_COPY_MASKED_BYTES <= 2 * V, "the masked path's fallback is one head and tail above 64");
/* n <= MK_COPY_MASKED_BYTES, where neither that span of s nor of d crosses
 * a page (a masked access crossing a page is slow: docs/strategy.md):
 * loaded before stored, masks from bzhi and a cmov, no branch on n.
 * avx512: two vectors, the second masked off below V.  evex: two 32-byte
 * accesses at 0 and t = n-32 (clamped at 0) with one mask, the same access
 * twice below 32, so none reaches past s+32 or d+32 (32 bytes on would miss
 * one more line when the data is not cached). */
MK_INLINE void copy_masked(char *d, const char *s, size_t n)
{
#if MK_COPY_MASKED_WIDTH == 32
    size_t t = n > 32 ? n - 32 : 0;
    __m256i a = v32_load_n(s, n), b = v32_load_n(s + t, n);
    v32_store_n(d, a, n);
    v32_store_n(d + t, b, n);
#else
    size_t n2 = n > V ? n - V : 0;
    vec_t a = vec_load_n(s, n), b = vec_load_n(s + V, n2);
    vec_store_n(d, a, n);
    vec_store_n(d + V, b, n2);
#endif
}
#endif

/* 4V < n <= 8V: four vectors from each end.  Named registers, not an
 * array: an array of vectors makes the compiler realign the stack on every
 * call. */
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


/* 4V bytes from q to the V-aligned p: all four loads, then the stores,
 * through the cache or non-temporal (a constant). */
MK_INLINE void copy_block4_fwd(char *p, const char *q, int stream)
{
    vec_t a = vec_load(q), b = vec_load(q + V), c = vec_load(q + 2 * V), e = vec_load(q + 3 * V);
    if (stream) {
        vec_stream(p, a);
        vec_stream(p + V, b);
        vec_stream(p + 2 * V, c);
        vec_stream(p + 3 * V, e);
    } else {
        vec_store_a(p, a);
        vec_store_a(p + V, b);
        vec_store_a(p + 2 * V, c);
        vec_store_a(p + 3 * V, e);
    }
}

/* The 4V bytes below q to the 4V below the V-aligned p, highest first. */
MK_INLINE void copy_block4_bwd(char *p, const char *q)
{
    vec_t a = vec_load(q - V), b = vec_load(q - 2 * V), c = vec_load(q - 3 * V), e = vec_load(q - 4 * V);
    vec_store_a(p - V, a);
    vec_store_a(p - 2 * V, b);
    vec_store_a(p - 3 * V, c);
    vec_store_a(p - 4 * V, e);
}

/* The first a-aligned destination address above d (a whole vector above
 * when d is aligned: the head store covers [d, d+V)) and its source. */
MK_INLINE char *align_forward(char *d, const char **s, size_t a)
{
    size_t skip = a - ((uintptr_t)d & (a - 1));
    *s += skip;
    return d + skip;
}

/* The first 64 bytes by vectors: the head a 64-byte-aligned loop starts
 * after (align_forward(d, &q, 64)). */
MK_INLINE void copy_first_line(char *d, const char *s)
{
    for (size_t i = 0; i < 64; i += V)
        vec_store(d + i, vec_load(s + i));
}

/* The last 4V bytes, loaded up front (before a loop may overwrite them
 * when dst is below src) and stored at the end. */
#define COPY_SAVE_TAIL(s, n) \
    vec_t t0 = vec_load(s + n - 4 * V), t1 = vec_load(s + n - 3 * V); \
    vec_t t2 = vec_load(s + n - 2 * V), t3 = vec_load(s + n - V)
#define COPY_STORE_TAIL(end) \
    vec_store(end - 4 * V, t0), vec_store(end - 3 * V, t1), \
    vec_store(end - 2 * V, t2), vec_store(end - V, t3)

/* n > 8V, dst not inside (src, src+n): the 4V loop runs upward from the
 * first V-aligned destination address; the first vector and the last 4 are
 * loaded before the loop and stored after it, so a source that the loop
 * overwrites (dst below src) was read first. */
MK_INLINE void copy_forward(char *d, const char *s, size_t n)
{
    vec_t head = vec_load(s);
    COPY_SAVE_TAIL(s, n);
    char *end = d + n;
    const char *q = s;
    for (char *p = align_forward(d, &q, V); p < end - 4 * V; p += 4 * V, q += 4 * V)
        copy_block4_fwd(p, q, 0);
    COPY_STORE_TAIL(end);
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
    for (; p > d + 4 * V; p -= 4 * V, q -= 4 * V)
        copy_block4_bwd(p, q);
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
 * hardware prefetcher's reach (bench/experiments/exp_copy_sweep.c,
 * avx_stream_prefetch). */
#define MK_STREAM_PREFETCH 512
MK_INLINE void copy_stream(char *d, const char *s, size_t n)
{
    char *end = d + n;
    copy_first_line(d, s);
    const char *q = s;
    char *p = align_forward(d, &q, 64);
    for (; p + 4 * V <= end; p += 4 * V, q += 4 * V) {
        _mm_prefetch(q + MK_STREAM_PREFETCH, _MM_HINT_NTA);
        copy_block4_fwd(p, q, 1);
    }
    _mm_sfence();
    for (size_t i = 4 * V; i > 0; i -= V)
        vec_store(end - i, vec_load(s + n - i));
}

/* No overlap: the first 64 bytes by vectors, the rest by rep movsb to a
 * 64-byte-aligned destination (unaligned rep movsb is the slow case). */
MK_INLINE void copy_rep_movsb(char *d, const char *s, size_t n)
{
    copy_first_line(d, s);
    const char *q = s;
    char *p = align_forward(d, &q, 64);
    size_t left = (size_t)(d + n - p);
    __asm__ volatile("rep movsb" : "+D"(p), "+S"(q), "+c"(left) : : "memory");
}

/* n > 8V: backward when dst lies inside the source (it must), and also
 * when dst is 1..255 bytes above src modulo 4 KiB and backward is safe (no
 * dst-below-src overlap): forward, each load would then match the page
 * offset of a store still in flight (4K aliasing) and wait for it.  At the
 * same page offset (a distance of 0 mod 4 KiB: buffers from the same
 * allocator class, page-aligned buffers) no load meets a pending store of
 * the same offset, and forward runs with the hardware prefetchers.
 * Measurements: docs/strategy.md, copy loop. */
MK_INLINE void copy_loop(char *d, const char *s, size_t n)
{
    uintptr_t ahead = (uintptr_t)d - (uintptr_t)s;
    if (ahead < n || (((ahead - 1) & 4095) < 255 && (uintptr_t)s - (uintptr_t)d >= n))
        copy_backward(d, s, n);
    else
        copy_forward(d, s, n);
}

/* A destination no one has written yet (a new buffer: numpy's new arrays,
 * a grown vector): the kernel zeroes each of its pages at the copy's first
 * store there, the subpages of a huge page in the order that leaves the
 * faulting one last.  Copied backward, the first store lands at the end of
 * each page: into fresh huge pages 1.27-1.41x faster than forward at 2-64
 * MiB, 1.10x with 4 KiB pages, and ahead of non-temporal stores (Zen 4,
 * docs/strategy.md "copy into fresh memory").  The mincore that tells costs
 * 1-2 us: from MK_FRESH_CHECK_FROM only. */
MK_INLINE int destination_untouched(const char *d, const char *s, size_t n)
{
    return n >= MK_FRESH_CHECK_FROM && !mk_overlaps(d, s, n) && mk_raw_page_untouched(d + n - 1);
}

/* n > 8V from mk_copy_large_from up: the method by the thresholds
 * (mk_copy_path), backward into memory never written. */
static __attribute__((noinline)) void *MK_FN(copy_large)(char *d, const char *s, size_t n)
{
    mk_path path = mk_copy_path(mk_config(), d, s, n);   /* the first large call reads the caches */
    if (path == MK_PATH_BACKWARD || (path != MK_PATH_REP && destination_untouched(d, s, n)))
        copy_backward(d, s, n);
    else if (path == MK_PATH_REP)
        copy_rep_movsb(d, s, n);
    else if (path == MK_PATH_STREAM)
        copy_stream(d, s, n);
    else
        copy_loop(d, s, n);
    return d;
}

/* The destination's line at p asked for before anything is stored, so its
 * miss overlaps the loads' (a store's own miss seems to wait its turn in
 * the store buffer).  The first line on entry; the last above the small
 * paths (65 bytes up, avx512 129), where it is more often another line:
 * asked below, it cost 3-5% hot for little.  Production distributions at
 * random lines of 13 / 210 MiB per side (Xeon 6/167, evex): memcpy 0.93 ->
 * 1.10 / 0.97 -> 1.25x glibc, memmove 0.90 -> 1.01 / 0.95 -> 1.23, hot
 * unchanged (docs/strategy.md).  t0 rather than prefetchw: as fast there,
 * and no CPU feature to check; a prefetch never faults. */
MK_INLINE void prefetch_line(const char *p)
{
    _mm_prefetch(p, _MM_HINT_T0);
}

MK_HIDDEN void *MK_FN(mk_memmove)(void *dst, const void *src, size_t n)
{
    char *d = dst;
    const char *s = src;
    prefetch_line(d);
#if MK_COPY_MASKED_BYTES
    if (MK_LIKELY(n <= MK_COPY_MASKED_BYTES)) {
        if (MK_LIKELY(mk_both_in_page(d, s, MK_COPY_MASKED_BYTES)))
            copy_masked(d, s, n);
        else if (!copy_upto64(d, s, n))
            copy_head_tail(d, s, n, V);   /* 64 < n <= MK_COPY_MASKED_BYTES <= 2V */
        return dst;
    }
#else
    if (copy_upto64(d, s, n))
        return dst;
#endif
    prefetch_line(d + n - 1);
    if (n <= 2 * V) {
        copy_head_tail(d, s, n, V);
        return dst;
    }
    if (n <= 4 * V) {
        copy_four_pieces(d, s, n, V);
        return dst;
    }
    if (n <= 8 * V) {
        copy_8v(d, s, n);
        return dst;
    }
    if (MK_UNLIKELY(n >= __atomic_load_n(&mk_copy_large_from, __ATOMIC_RELAXED)))
        return MK_FN(copy_large)(d, s, n);   /* a tail call: no frame here */
    copy_loop(d, s, n);
    return dst;
}

/* Non-temporal above 8V whatever the thresholds say; overlapping buffers
 * take the ordinary path (streaming stores would race their own loads). */
MK_HIDDEN void *MK_FN(mk_memcpy_nt)(void *dst, const void *src, size_t n)
{
    if (n <= 8 * V || mk_overlaps(dst, src, n))
        return MK_FN(mk_memmove)(dst, src, n);
    copy_stream(dst, src, n);
    return dst;
}

#undef V
