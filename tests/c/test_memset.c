/* Every memset-family routine the CPU can run, every size 0..4096 at every
 * destination alignment 0..63, at both ends of a guarded region with
 * canaries around, then random large sizes; fill values as memset converts
 * them (c is converted to unsigned char). */
#include "check.h"
#include "memkit.h"

#include <string.h>

typedef void *(*memset_fn)(void *, int, size_t);

typedef struct {
    const char *name;
    memset_fn fn;
    int returns_dst;
} routine;

static void *explicit_wrapper(void *d, int c, size_t n) { mk_memset_explicit(d, c, n); return d; }
static void *zero16_wrapper(void *d, int c, size_t n) { (void)c; mk_zero_aligned16(d, n); return d; }

static routine routines[16];
static size_t nroutines;

static void collect(void)
{
    size_t count;
    const mk_variant *v = mk_variants(&count);
    for (size_t i = 0; i < count; i++)
        if (v[i].op == MK_OP_MEMSET && v[i].usable)
            routines[nroutines++] = (routine){v[i].name, (memset_fn)v[i].fn, 1};
    routines[nroutines++] = (routine){"mk_memset", mk_memset, 1};
    routines[nroutines++] = (routine){"mk_memset_nt", mk_memset_nt, 1};
    routines[nroutines++] = (routine){"mk_memset_explicit", explicit_wrapper, 1};
}

/* Fills [dst, dst+n) inside g, checks the fill, the canaries either side and
 * the return value; returns 0 on failure (already reported). */
static int check_one(const routine *r, const guarded *g, unsigned char *dst, size_t n, int c,
                     uint32_t seed)
{
    canary_fill(g->lo, g->len, seed);
    void *ret = r->fn(dst, c, n);
    unsigned char want = (unsigned char)c;
    int ok = 1;
    if (r->returns_dst && ret != dst) {
        CHECK(ret == dst, "%s n=%zu: returned %p, not dst %p", r->name, n, ret, (void *)dst);
        ok = 0;
    }
    for (size_t i = 0; i < n; i++)
        if (dst[i] != want) {
            CHECK(dst[i] == want, "%s n=%zu align=%zu c=%d: byte %zu is 0x%02x", r->name, n,
                  (size_t)dst & 63, c, i, dst[i]);
            return 0;
        }
    long bad = canary_check(g->lo, (size_t)(dst - g->lo), seed);
    if (bad >= 0) {
        CHECK(bad < 0, "%s n=%zu align=%zu: wrote %ld bytes before dst", r->name, n,
              (size_t)dst & 63, (long)(dst - g->lo) - bad);
        return 0;
    }
    bad = canary_check(dst + n, (size_t)(g->hi - dst - n), seed);
    if (bad >= 0) {
        CHECK(bad < 0, "%s n=%zu align=%zu: wrote byte %ld past the end", r->name, n,
              (size_t)dst & 63, bad);
        return 0;
    }
    return ok;
}

/* Canary filling the whole region per call would make the sweep quadratic
 * in the region; a region just big enough keeps it cheap. */
static void sweep_sizes(void)
{
    static const int values[] = {0, 0xff, -1, -128, 0x1234, 0x5a};
    for (size_t r = 0; r < nroutines; r++) {
        size_t failures = check_failed;
        for (size_t n = 0; n <= 4096 && check_failed == failures; n++) {
            guarded g = guarded_alloc(n + 128);
            for (unsigned a = 0; a < 64; a++) {
                int c = values[(n + a) % 6];
                check_one(&routines[r], &g, place_low(&g, n, a), n, c, (uint32_t)(n * 64 + a));
                check_one(&routines[r], &g, place_high(&g, n, a), n, c, (uint32_t)(n * 64 + a + 1));
            }
            guarded_free(&g);
        }
        printf("%-20s sizes 0..4096 x alignments 0..63 x 2 placements: %s\n", routines[r].name,
               check_failed == failures ? "ok" : "FAILED");
    }
}

static void values_convert_as_memset(void)
{
    static const int values[] = {0, 1, 0x7f, 0x80, 0xff, 0x100, 0x1ff, -1, -2, -255, -256,
                                 0x7fffffff, (int)0x80000000, 0x12345678};
    unsigned char ref[200], got[200];
    for (size_t r = 0; r < nroutines; r++)
        for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
            for (size_t n = 0; n < sizeof got; n += 7) {
                memset(ref, 0x33, sizeof ref);
                memset(got, 0x33, sizeof got);
                memset(ref + 3, values[i], n > sizeof ref - 3 ? sizeof ref - 3 : n);
                routines[r].fn(got + 3, values[i], n > sizeof got - 3 ? sizeof got - 3 : n);
                CHECK(memcmp(ref, got, sizeof ref) == 0, "%s value %d n=%zu differs from memset",
                      routines[r].name, values[i], n);
            }
}

static void random_large(void)
{
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    size_t max = (size_t)64 << 20;
    guarded g = guarded_alloc(max + 4096);
    for (size_t r = 0; r < nroutines; r++)
        for (int k = 0; k < 6; k++) {
            size_t n = (size_t)(test_rand(&seed) % max) >> (k % 3 * 6);
            unsigned a = (unsigned)(test_rand(&seed) & 63);
            int c = (int)(test_rand(&seed) & 0x1ff) - 0x80;
            unsigned char *dst = k % 2 ? place_high(&g, n, a) : place_low(&g, n, a);
            memset(g.lo, 0xee, g.len);
            routines[r].fn(dst, c, n);
            unsigned char want = (unsigned char)c;
            size_t bad = n;
            for (size_t i = 0; i < n; i++)
                if (dst[i] != want) { bad = i; break; }
            CHECK(bad == n, "%s n=%zu a=%u: byte %zu not filled", routines[r].name, n, a, bad);
            int before = 1, after = 1;
            for (unsigned char *p = g.lo; p < dst; p++) before &= *p == 0xee;
            for (unsigned char *p = dst + n; p < g.hi; p++) after &= *p == 0xee;
            CHECK(before && after, "%s n=%zu a=%u: wrote outside [dst, dst+n)", routines[r].name,
                  n, a);
        }
    guarded_free(&g);
}

/* The non-temporal and rep-stosb paths only run above thresholds: force them
 * low in a child environment is the tunables test's job; here the dispatched
 * routine is checked at sizes around each threshold in force. */
static void around_thresholds(void)
{
    const mk_tunables *t = mk_tunables_get();
    size_t marks[] = {t->rep_stosb_threshold, t->nt_threshold, t->nt_threshold_zero};
    for (size_t m = 0; m < 3; m++) {
        if (marks[m] == SIZE_MAX || marks[m] > ((size_t)256 << 20))
            continue;
        guarded g = guarded_alloc(marks[m] + 256);
        for (size_t d = 0; d < 3; d++)
            for (unsigned a = 0; a < 64; a += 21) {
                size_t n = marks[m] - 1 + d;
                for (int c = 0; c < 2; c++)
                    check_one(&routines[nroutines - 3], &g, place_high(&g, n, a), n, c * 0x77,
                              (uint32_t)(n + a));
            }
        guarded_free(&g);
    }
}

static void zero_aligned16(void)
{
    routine z = {"mk_zero_aligned16", zero16_wrapper, 0};
    for (size_t n = 0; n <= 4096 + 512; n += 16) {
        guarded g = guarded_alloc(n + 128);
        for (unsigned a = 0; a < 64; a += 16) {
            check_one(&z, &g, place_low(&g, n, a), n, 0, (uint32_t)n);
            check_one(&z, &g, place_high(&g, n, a), n, 0, (uint32_t)n + 1);
        }
        guarded_free(&g);
    }
    printf("%-20s sizes 0..4608 step 16 x alignments 0,16,32,48: ok so far\n", z.name);
}

int main(void)
{
    collect();
    values_convert_as_memset();
    sweep_sizes();
    zero_aligned16();
    around_thresholds();
    random_large();
    check_finish();
}
