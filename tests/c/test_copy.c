/* SPDX-License-Identifier: Apache-2.0 */
/* Every memcpy/memmove-family routine the CPU can run:
 *  - disjoint buffers: sizes 0..300 at all 64x64 (dst, src) alignments,
 *    301..4096 at every dst alignment with two src alignments, each buffer at
 *    either end of its own guarded region (over-reads fault too), canaries
 *    around the destination, return values;
 *  - overlaps both ways: every distance up to +-(n+3) for n <= 520, past
 *    the largest straight-line path (8 x 64 and 16 x 32 bytes) (for
 *    n <= 136 both at a page's end and at its start, so that the masked
 *    and the page-crossing small paths each see every distance), random
 *    distances for larger n, against the C library's memmove;
 *  - random large sizes; copies into memory never written (the backward
 *    path for fresh destinations), ending at a guard page or starting right
 *    after one; and the public routines again with the thresholds lowered
 *    so the rep movsb and non-temporal paths run at small sizes. */
#include "check.h"
#include "internal.h"
#include "memkit.h"

#include <stdlib.h>
#include <string.h>

typedef void *(*copy_fn)(void *, const void *, size_t);

typedef struct {
    const char *name;
    copy_fn fn;
    int full;   /* 1: the full alignment matrix; 0: the lighter one */
} routine;

static routine routines[16];
static size_t nroutines;

static void collect(void)
{
    size_t count;
    const mk_variant *v = mk_variants(&count);
    size_t ops = 0;
    for (size_t i = 0; i < count; i++) {
        if (v[i].op != MK_OP_MEMCPY && v[i].op != MK_OP_MEMMOVE)
            continue;
        ops |= 1u << v[i].op;
        if (!v[i].usable)
            continue;
        int seen = 0;   /* memcpy and memmove rows share their functions */
        for (size_t r = 0; r < nroutines; r++)
            seen |= routines[r].fn == (copy_fn)v[i].fn;
        if (!seen)
            routines[nroutines++] = (routine){v[i].name, (copy_fn)v[i].fn, 1};
    }
    CHECK(ops == ((1u << MK_OP_MEMCPY) | (1u << MK_OP_MEMMOVE)),
          "the registry lists memcpy and memmove variants");
    CHECK(nroutines >= 1, "at least one usable copy variant");
    CHECK(strcmp(mk_selected_variant(MK_OP_MEMCPY), "none") != 0, "memcpy has a variant");
    routines[nroutines++] = (routine){"mk_memcpy", mk_memcpy, 0};
    routines[nroutines++] = (routine){"mk_memmove", mk_memmove, 0};
    routines[nroutines++] = (routine){"mk_memcpy_nt", mk_memcpy_nt, 0};
}

/* Canaries are checked in a window this wide on each side of dst; the guard
 * pages catch anything that runs off the region's ends. */
enum { WINDOW = 128 };

typedef struct {
    guarded src, dst;
    size_t cap;
} buffers;

static buffers buffers_for(size_t n)
{
    return (buffers){guarded_alloc(n + 2 * WINDOW), guarded_alloc(n + 2 * WINDOW), n};
}

static void buffers_free(buffers *b)
{
    guarded_free(&b->src);
    guarded_free(&b->dst);
}

/* Copies n bytes between disjoint buffers, src at alignment sa and dst at
 * da, at opposite ends of their regions (which = 0 or 1); checks the bytes,
 * the canaries and the return value. Returns 0 on failure. */
static int check_disjoint(const routine *r, buffers *b, size_t n, unsigned da, unsigned sa,
                          int which, uint32_t seed)
{
    unsigned char *s = which ? place_low(&b->src, n, sa) : place_high(&b->src, n, sa);
    unsigned char *d = which ? place_high(&b->dst, n, da) : place_low(&b->dst, n, da);
    unsigned char *lo = d - WINDOW < b->dst.lo ? b->dst.lo : d - WINDOW;
    unsigned char *hi = d + n + WINDOW > b->dst.hi ? b->dst.hi : d + n + WINDOW;
    canary_fill(s, n, seed ^ 0x5eed);
    canary_fill(lo, (size_t)(hi - lo), seed);
    void *ret = r->fn(d, s, n);
    if (ret != d) {
        CHECK(ret == d, "%s n=%zu: returned %p, not dst %p", r->name, n, ret, (void *)d);
        return 0;
    }
    if (memcmp(d, s, n) != 0) {
        size_t i = 0;
        while (d[i] == s[i])
            i++;
        CHECK(0, "%s n=%zu dst%%64=%u src%%64=%u: byte %zu differs", r->name, n, da, sa, i);
        return 0;
    }
    long bad = canary_check(lo, (size_t)(d - lo), seed);
    if (bad >= 0) {
        CHECK(bad < 0, "%s n=%zu dst%%64=%u src%%64=%u: wrote %ld bytes before dst", r->name, n,
              da, sa, (long)(d - lo) - bad);
        return 0;
    }
    bad = canary_check(d + n, (size_t)(hi - d - n), seed);
    if (bad >= 0) {
        CHECK(bad < 0, "%s n=%zu dst%%64=%u src%%64=%u: wrote byte %ld past the end", r->name,
              n, da, sa, bad);
        return 0;
    }
    check_passed++;
    return 1;
}

/* Sizes 0..4096 (step `step` above 8 vectors of 64 bytes). */
static void sweep_disjoint(const routine *r, size_t step)
{
    size_t failures = check_failed;
    for (size_t n = 0; n <= 4096 && check_failed == failures; n += n < 512 ? 1 : step) {
        buffers b = buffers_for(n);
        for (unsigned da = 0; da < 64; da++) {
            uint32_t seed = (uint32_t)(n * 64 + da);
            if (r->full && n <= 300) {
                for (unsigned sa = 0; sa < 64; sa++)
                    check_disjoint(r, &b, n, da, sa, (int)(sa & 1), seed + sa);
            } else {
                unsigned sa = (da * 7 + (unsigned)n) & 63;
                check_disjoint(r, &b, n, da, sa, (int)(n & 1), seed);
                if (r->full)
                    check_disjoint(r, &b, n, da, 0, (int)(~n & 1), seed + 1);
            }
        }
        buffers_free(&b);
    }
    printf("%-14s disjoint: sizes 0..4096 (step %zu from 512) x dst 0..63 x src (%s): %s\n",
           r->name, step, r->full ? "all 64 up to 300, then 2" : "1", check_failed == failures ? "ok" : "FAILED");
}

/* dst = src + delta inside one guarded region holding both; the whole
 * region is compared with the C library's memmove on a copy of it. */
static int check_overlap(const routine *r, unsigned char *region, unsigned char *ref,
                         size_t len, size_t src_off, long delta, size_t n, uint64_t *rng)
{
    for (size_t i = 0; i < len; i += 8) {
        uint64_t x = test_rand(rng);
        memcpy(region + i, &x, len - i < 8 ? len - i : 8);
    }
    memcpy(ref, region, len);
    unsigned char *s = region + src_off, *d = s + delta;
    memmove(ref + src_off + delta, ref + src_off, n);
    void *ret = r->fn(d, s, n);
    if (ret != d || memcmp(region, ref, len) != 0) {
        size_t i = 0;
        while (i < len && region[i] == ref[i])
            i++;
        CHECK(0, "%s overlap n=%zu delta=%ld src%%64=%zu: %s at region byte %zu (dst at %zu)",
              r->name, n, delta, (size_t)s & 63, ret != d ? "bad return" : "differs", i,
              (size_t)(d - region));
        return 0;
    }
    check_passed++;
    return 1;
}

/* Every distance for n <= exhaustive_upto, then `randoms` random cases. */
static void sweep_overlap(const routine *r, size_t exhaustive_upto, int randoms)
{
    size_t failures = check_failed;
    uint64_t rng = 0x0ddba11ull;
    size_t max = 1 << 20;
    guarded g = guarded_alloc(3 * max + 256);
    unsigned char *ref = malloc(g.len);
    /* every distance for small n; the source at varying alignment so that
     * each distance meets different (dst, src) alignment pairs */
    for (size_t n = 0; n <= exhaustive_upto && check_failed == failures; n++) {
        size_t len = 3 * n + 2 * 64 + 8;
        /* ends at the trailing guard; and, up to the masked sizes (2 x 64),
         * at the start of a page too, where those are taken */
        for (int at_start = 0; at_start <= (n <= 136); at_start++) {
            unsigned char *region = at_start ? g.lo : g.hi - len;
            for (long delta = -(long)n - 3; delta <= (long)n + 3; delta++) {
                size_t src_off = n + 64 + ((size_t)(n * 5 + (size_t)delta) & 63) - 32;
                check_overlap(r, region, ref, len, src_off, delta, n, &rng);
            }
        }
    }
    /* random distances for larger n: short distances, distances near n,
     * and anything between */
    for (int k = 0; k < randoms && check_failed == failures; k++) {
        size_t n = 521 + (size_t)(test_rand(&rng) % (k % 8 ? 8192 : max - 521));
        long span = (long)n + 3;
        uint64_t pick = test_rand(&rng) % 3;
        long mag = pick == 0 ? (long)(test_rand(&rng) % 130)
                 : pick == 1 ? span - (long)(test_rand(&rng) % 130)
                             : (long)(test_rand(&rng) % (uint64_t)span);
        long delta = test_rand(&rng) & 1 ? mag : -mag;
        size_t len = n + (size_t)(mag < 0 ? -mag : mag) + 128;
        unsigned char *region = k & 1 ? g.lo : g.hi - len;
        size_t src_off = 64 + (delta < 0 ? (size_t)-delta : 0) - (size_t)(test_rand(&rng) & 63);
        check_overlap(r, region, ref, len, src_off, delta, n, &rng);
    }
    free(ref);
    guarded_free(&g);
    printf("%-14s overlap: every distance to +-(n+3) for n <= %zu, %d random larger: %s\n",
           r->name, exhaustive_upto, randoms, check_failed == failures ? "ok" : "FAILED");
}

static void random_large(const routine *r)
{
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    size_t max = (size_t)36 << 20;   /* above the default non-temporal threshold (L3) */
    buffers b = buffers_for(max);
    for (int k = 0; k < 4; k++) {
        size_t n = (size_t)(test_rand(&rng) % max) >> (k % 3 * 5);
        if (k == 0)
            n = max;
        unsigned da = (unsigned)(test_rand(&rng) & 63), sa = (unsigned)(test_rand(&rng) & 63);
        check_disjoint(r, &b, n, da, sa, k & 1, (uint32_t)k);
    }
    buffers_free(&b);
}

/* Destinations no one has written, from the size that looks: each placed
 * against a guard page (a store past either end faults), the source's
 * bytes checked after.  The test checks that the page was untouched before
 * the call, so the fresh path is the one that ran. */
static void fresh_destinations(const routine *r)
{
    static const size_t extra[] = {0, 1, 63, 4096 + 17, (size_t)5 << 20};
    size_t max = MK_FRESH_CHECK_FROM + ((size_t)5 << 20) + 64;   /* + the source's offset */
    unsigned char *src = malloc(max);
    uint64_t rng = 0x66726573682d6473ull;
    for (size_t i = 0; i < max; i++)
        src[i] = (unsigned char)test_rand(&rng);
    for (size_t e = 0; e < sizeof extra / sizeof extra[0]; e++) {
        size_t n = MK_FRESH_CHECK_FROM + extra[e];
        for (int high = 0; high < 2; high++) {
            guarded g = guarded_alloc(n + 64);
            unsigned a = (unsigned)(test_rand(&rng) & 63);
            unsigned char *d = high ? g.hi - n : g.lo + a;
            const unsigned char *s = src + (test_rand(&rng) & 63);
            CHECK(mk_raw_page_untouched(d + n - 1), "the destination starts untouched");
            r->fn(d, s, n);
            CHECK(memcmp(d, s, n) == 0, "%s: %zu bytes into fresh memory (%s, dst %% 64 = %u)",
                  r->name, n, high ? "ending at a guard page" : "after a guard page",
                  (unsigned)((uintptr_t)d & 63));
            guarded_free(&g);
        }
    }
    free(src);
}

/* The rep movsb and non-temporal paths at sizes the sweep reaches: the
 * thresholds in force are the library's own (the test links it statically). */
static void lowered_thresholds(void)
{
    mk_config();
    mk_tunables saved = mk_cfg;
    size_t saved_from = mk_copy_large_from;
    static const struct { size_t rep_from, rep_stop, align, nt_from; } settings[] = {
        {300, 3000, 64, SIZE_MAX},   /* rep movsb in a window, the loop above it */
        {SIZE_MAX, SIZE_MAX, 64, 600}, /* non-temporal from 600 */
        {0, SIZE_MAX, 64, 2000},     /* rep movsb from the start, then non-temporal */
        {0, SIZE_MAX, 1, SIZE_MAX},  /* rep movsb at any dst - src offset */
    };
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        mk_cfg.rep_movsb_threshold = settings[i].rep_from;
        mk_cfg.rep_movsb_stop = settings[i].rep_stop;
        mk_cfg.rep_movsb_align = settings[i].align;
        mk_cfg.nt_copy_threshold = settings[i].nt_from;
        mk_copy_large_from = 0;
        /* the variants only: the public routines are among them */
        for (size_t r = 0; r < nroutines; r++) {
            if (!routines[r].full)
                continue;
            routine lowered = routines[r];
            lowered.full = 0;
            sweep_disjoint(&lowered, 5);
            sweep_overlap(&lowered, 0, 100);
        }
    }
    mk_cfg = saved;
    mk_copy_large_from = saved_from;
}

int main(void)
{
    collect();
    for (size_t r = 0; r < nroutines; r++) {
        sweep_disjoint(&routines[r], 1);
        sweep_overlap(&routines[r], routines[r].full ? 520 : 64, 200);
        random_large(&routines[r]);
        if (routines[r].fn != mk_memcpy_nt)
            fresh_destinations(&routines[r]);
    }
    printf("thresholds lowered (rep movsb window, non-temporal):\n");
    lowered_thresholds();
    check_finish();
}
