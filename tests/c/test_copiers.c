/* SPDX-License-Identifier: Apache-2.0 */
/* Which copiers the library and the lab list; then every usable copier of
 * the lab (the library's and the lab's contestants), both directions: sizes
 * that keep its contract from 0 to 4096 and random large ones, at several
 * contract-keeping placements at both ends of guarded regions, with
 * canaries; every way of breaking the contract (misaligned dst or src, n
 * not a multiple, overlap) must give EINVAL and leave dst untouched; a copy
 * cut at multiples of the alignment and done piece by piece in shuffled
 * order (what a multithreaded adapter does) gives the same bytes; alloc's
 * alignment and size. */
#include "check.h"
#include "copy_methods.h"
#include "memkit.h"

#include <errno.h>
#include <string.h>

enum { WINDOW = 256 };

typedef int (*copy_op)(void *, const void *, size_t);

/* dst at offset k*align from the region's start, or ending within align of
 * its end; src likewise in its own region at the other end. */
static unsigned char *place(const guarded *g, size_t n, size_t align, unsigned k, int high)
{
    if (!high)
        return g->lo + (size_t)k * align;
    uintptr_t p = ((uintptr_t)g->hi - n - (size_t)k * align) & ~(uintptr_t)(align - 1);
    return (unsigned char *)p;
}

static int copy_and_check(const mk_copier *c, copy_op op, const char *dir, guarded *sg,
                          guarded *dg, size_t n, unsigned k, int high, uint32_t seed)
{
    unsigned char *s = place(sg, n, c->align, k, !high);
    unsigned char *d = place(dg, n, c->align, k + 1, high);
    unsigned char *lo = d - WINDOW < dg->lo ? dg->lo : d - WINDOW;
    unsigned char *hi = d + n + WINDOW > dg->hi ? dg->hi : d + n + WINDOW;
    canary_fill(s, n, seed ^ 0xc0feu);
    canary_fill(lo, (size_t)(hi - lo), seed);
    int rc = op(d, s, n);
    int ok = rc == 0 && memcmp(d, s, n) == 0 && canary_check(lo, (size_t)(d - lo), seed) < 0 &&
             canary_check(d + n, (size_t)(hi - d - n), seed) < 0;
    CHECK(ok, "%s %s n=%zu dst%%256=%zu src%%256=%zu: rc=%d, bytes %s, canaries %s", c->name,
          dir, n, (size_t)d & 255, (size_t)s & 255, rc, memcmp(d, s, n) ? "differ" : "ok",
          canary_check(lo, (size_t)(d - lo), seed) < 0 &&
                  canary_check(d + n, (size_t)(hi - d - n), seed) < 0 ? "ok" : "damaged");
    return ok;
}

static void sizes(const mk_copier *c)
{
    size_t failures = check_failed;
    guarded sg = guarded_alloc(4096 + 4 * 256 + WINDOW), dg = guarded_alloc(4096 + 4 * 256 + WINDOW);
    size_t step = c->align;
    for (size_t n = 0; n <= 4096 && check_failed == failures; n += step)
        for (unsigned k = 0; k < (c->align == 1 ? 64u : 3u); k += c->align == 1 ? 5 : 1)
            for (int high = 0; high < 2; high++) {
                uint32_t seed = (uint32_t)(n * 131 + k * 2 + (unsigned)high);
                copy_and_check(c, c->copy_in, "copy_in", &sg, &dg, n, k, high, seed);
                copy_and_check(c, c->copy_out, "copy_out", &dg, &sg, n, k, high, seed + 1);
            }
    guarded_free(&sg);
    guarded_free(&dg);

    uint64_t rng = 0xc0b1e5ull;
    size_t max = (size_t)40 << 20;
    sg = guarded_alloc(max + 1024);
    dg = guarded_alloc(max + 1024);
    for (int i = 0; i < 3 && check_failed == failures; i++) {
        size_t n = (size_t)(test_rand(&rng) % max) >> (i * 6) & ~(c->align - 1);
        copy_and_check(c, c->copy_in, "copy_in", &sg, &dg, n, (unsigned)i, i & 1, (uint32_t)i);
    }
    guarded_free(&sg);
    guarded_free(&dg);
    printf("%-28s sizes 0..4096 step %zu and 3 large, both ends, both directions: %s\n",
           c->name, c->align, check_failed == failures ? "ok" : "FAILED");
}

/* op(dst, src, n) must return EINVAL and leave [dst - WINDOW, dst + n + WINDOW) as it was. */
static void expect_refusal(const mk_copier *c, const char *why, unsigned char *d,
                           const unsigned char *s, size_t n, unsigned char *lo, unsigned char *hi)
{
    canary_fill(lo, (size_t)(hi - lo), 77);
    int rc = c->copy_in(d, s, n);
    long bad = canary_check(lo, (size_t)(hi - lo), 77);
    CHECK(rc == EINVAL && bad < 0, "%s, %s (n=%zu dst%%256=%zu src%%256=%zu): rc=%d, %s",
          c->name, why, n, (size_t)d & 255, (size_t)s & 255, rc,
          bad < 0 ? "nothing written" : "wrote into the buffer");
}

static void refusals(const mk_copier *c)
{
    size_t failures = check_failed;
    guarded g = guarded_alloc(3 * 4096);
    unsigned char *mid = g.lo + 4096;
    size_t a = c->align, n = 4 * (a > 64 ? a : 64);
    unsigned char src_buf[4096] __attribute__((aligned(4096)));
    memset(src_buf, 0x3c, sizeof src_buf);
    if (a > 1) {
        for (size_t off = 1; off < a; off += off < 8 ? 1 : 7) {
            expect_refusal(c, "misaligned dst", mid + off, src_buf, n, g.lo, g.hi);
            expect_refusal(c, "misaligned src", mid, src_buf + off, n, g.lo, g.hi);
            expect_refusal(c, "n not a multiple", mid, src_buf, n + off, g.lo, g.hi);
        }
    }
    /* overlap both ways, and the same buffer */
    for (size_t delta = 0; delta < n; delta += a > 16 ? a : 16) {
        expect_refusal(c, "overlap, dst above src", mid + delta, mid, n, g.lo, g.hi);
        expect_refusal(c, "overlap, dst below src", mid, mid + delta, n, g.lo, g.hi);
    }
    guarded_free(&g);
    printf("%-28s refuses misaligned, ragged and overlapping buffers untouched: %s\n", c->name,
           check_failed == failures ? "ok" : "FAILED");
}

/* What an adapter does: cut at multiples of align (here also odd multiples,
 * not pages: the contract allows any), copy the pieces in shuffled order. */
static void pieces(const mk_copier *c)
{
    size_t n = 64 * 1024;
    unsigned char *s = c->alloc(n), *whole = c->alloc(n), *parts = c->alloc(n);
    CHECK(s && whole && parts, "%s alloc(%zu)", c->name, n);
    if (!s || !whole || !parts)
        return;
    CHECK(((uintptr_t)s & (c->align - 1)) == 0 && ((uintptr_t)s & 63) == 0,
          "%s alloc: %p not aligned to %zu and 64", c->name, (void *)s, c->align);
    uint64_t rng = 0x91ecull;
    for (size_t i = 0; i < n; i++)
        s[i] = (unsigned char)test_rand(&rng);
    memset(whole, 0, n);
    memset(parts, 0, n);
    CHECK(c->copy_in(whole, s, n) == 0, "%s whole copy", c->name);
    size_t cuts[34], ncuts = 0;
    cuts[ncuts++] = 0;
    for (int i = 0; i < 32; i++)
        cuts[ncuts++] = (size_t)(test_rand(&rng) % (n / c->align)) * c->align;
    cuts[ncuts++] = n;
    for (size_t i = 1; i < ncuts; i++)   /* sort */
        for (size_t j = i; j > 0 && cuts[j - 1] > cuts[j]; j--) {
            size_t t = cuts[j];
            cuts[j] = cuts[j - 1];
            cuts[j - 1] = t;
        }
    for (size_t i = ncuts - 1; i > 0; i--) {   /* pieces last to first */
        int rc = c->copy_out(parts + cuts[i - 1], s + cuts[i - 1], cuts[i] - cuts[i - 1]);
        CHECK(rc == 0, "%s piece [%zu, %zu): rc=%d", c->name, cuts[i - 1], cuts[i], rc);
    }
    CHECK(memcmp(whole, s, n) == 0 && memcmp(parts, s, n) == 0,
          "%s: pieces at multiples of %zu give the whole copy", c->name, c->align);
    c->free(s, n);
    c->free(whole, n);
    c->free(parts, n);
}

/* list[0..count) names exactly the copiers in names (in any order), and
 * find(name) gives each from that list. */
static void lists_exactly(const char *what, const mk_copier *list, size_t count,
                          const mk_copier *(*find)(const char *), const char *const *names,
                          size_t nnames)
{
    CHECK(count == nnames, "%s: %zu copiers, expected %zu", what, count, nnames);
    for (size_t i = 0; i < nnames; i++) {
        const mk_copier *c = find(names[i]);
        CHECK(c && c >= list && c < list + count, "%s: copier %s listed and found", what,
              names[i]);
    }
    CHECK(find("no-such-copier") == NULL && find(NULL) == NULL, "%s: unknown names give NULL",
          what);
}

static void lists(void)
{
    /* What a user would pick: memkit.h says when. */
    static const char *const library[] = {"memkit", "memkit_nt", "avx_stream_prefetch"};
    /* What copy-sweep and ipc-copy race: the library's and the lab's own. */
    static const char *const lab[] = {"libc", "memkit", "memkit_nt", "rep_movsb",
                                      "avx_aligned", "avx_aligned_unroll4", "avx_stream",
                                      "avx_stream_unroll4", "avx_stream_prefetch",
                                      "avx_stream_prefetch_unroll4"};
    size_t count;
    const mk_copier *c = mk_copiers(&count);
    lists_exactly("mk_copiers", c, count, mk_copier_find, library,
                  sizeof library / sizeof library[0]);
    c = lab_copiers(&count);
    lists_exactly("lab_copiers", c, count, lab_copier_find, lab, sizeof lab / sizeof lab[0]);
    CHECK(!strcmp(c[0].name, "libc"), "lab_copiers: libc, the baseline, first");
}

int main(void)
{
    lists();
    size_t count;
    const mk_copier *c = lab_copiers(&count);
    for (size_t i = 0; i < count; i++) {
        CHECK(c[i].align && (c[i].align & (c[i].align - 1)) == 0, "%s: align %zu is a power of two",
              c[i].name, c[i].align);
        if (!c[i].usable) {
            printf("%-28s not usable on this CPU: skipped\n", c[i].name);
            continue;
        }
        sizes(&c[i]);
        refusals(&c[i]);
        pieces(&c[i]);
    }
    check_finish();
}
