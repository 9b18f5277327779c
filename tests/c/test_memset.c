/* SPDX-License-Identifier: Apache-2.0 */
/* Every memset-family routine the CPU can run, every size 0..4096 at every
 * destination alignment 0..63, at both ends of a guarded region with
 * canaries around, then random large sizes up to 64 MiB; fill values as
 * memset converts them (c is converted to unsigned char).
 *
 * The large-size paths (rep stosb, non-temporal stores) only run above
 * thresholds that are far beyond 4096 by default, so the test runs itself
 * again with MEMKIT_TUNABLES lowering them into the swept range: every
 * variant then goes through every path at every alignment. */
#include "check.h"
#include "memkit.h"

#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LOW_THRESHOLDS "rep_stosb_threshold=1000:nt_threshold=2500:nt_threshold_zero=1800"
#define SWEEP_MAX 4096

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
static routine dispatched;      /* mk_memset, for the threshold checks */

static void collect(void)
{
    size_t count;
    const mk_variant *v = mk_variants(&count);
    for (size_t i = 0; i < count; i++)
        if (v[i].op == MK_OP_MEMSET && v[i].usable)
            routines[nroutines++] = (routine){v[i].name, (memset_fn)v[i].fn, 1};
    dispatched = (routine){"mk_memset", mk_memset, 1};
    routines[nroutines++] = dispatched;
    routines[nroutines++] = (routine){"mk_memset_nt", mk_memset_nt, 1};
    routines[nroutines++] = (routine){"mk_memset_explicit", explicit_wrapper, 0};
}

/* Offset of the first byte of [p, p+n) that is not b, or n. */
static size_t first_not(const unsigned char *p, size_t n, unsigned char b)
{
    static unsigned char pattern[256][4096];
    static unsigned char ready[256];
    if (!ready[b]) {
        memset(pattern[b], b, sizeof pattern[b]);
        ready[b] = 1;
    }
    for (size_t off = 0; off < n; off += sizeof pattern[b]) {
        size_t len = n - off < sizeof pattern[b] ? n - off : sizeof pattern[b];
        if (memcmp(p + off, pattern[b], len) != 0)
            for (size_t i = off; i < off + len; i++)
                if (p[i] != b)
                    return i;
    }
    return n;
}

/* Offset of the first byte where a and b differ, or -1. */
static long first_diff(const unsigned char *a, const unsigned char *b, size_t n)
{
    if (memcmp(a, b, n) == 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return (long)i;
    return -1;
}

/* A guarded region whose every byte holds a canary, and a pristine copy of
 * it: after a call, all of the region outside [dst, dst+n) must still equal
 * the copy, and restoring [dst, dst+n) from it makes the region ready again.
 * That keeps each check linear in the region with memcmp/memcpy speed. */
typedef struct {
    guarded g;
    unsigned char *pristine;
} arena;

static arena arena_new(size_t bytes, uint32_t seed)
{
    arena a = {guarded_alloc(bytes), NULL};
    a.pristine = malloc(a.g.len);
    if (!a.pristine) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    canary_fill(a.g.lo, a.g.len, seed);
    memcpy(a.pristine, a.g.lo, a.g.len);
    return a;
}

static void arena_free(arena *a)
{
    guarded_free(&a->g);
    free(a->pristine);
}

/* Fills [dst, dst+n) inside a, checks the fill, every byte of the region
 * outside it and the return value, then restores the region.  One CHECK per
 * call. */
static int check_one(const routine *r, arena *a, unsigned char *dst, size_t n, int c)
{
    void *ret = r->fn(dst, c, n);
    unsigned char want = (unsigned char)c;
    size_t off = (size_t)(dst - a->g.lo);
    size_t bad = first_not(dst, n, want);
    long before = first_diff(a->g.lo, a->pristine, off);
    long after = first_diff(dst + n, a->pristine + off + n, a->g.len - off - n);
    int ok = (!r->returns_dst || ret == dst) && bad == n && before < 0 && after < 0;
    CHECK(ok, "%s n=%zu align=%zu c=%d: %s%s%s (first bad byte: fill %zd, before dst %ld, after end %ld)",
          r->name, n, (size_t)dst & 63, c, r->returns_dst && ret != dst ? "wrong return value " : "",
          bad != n ? "byte not filled " : "", before >= 0 || after >= 0 ? "wrote outside [dst, dst+n)" : "",
          bad == n ? (ssize_t)-1 : (ssize_t)bad, before < 0 ? -1 : (long)off - before,
          after);
    memcpy(dst, a->pristine + off, n);
    return ok;
}

static const int sweep_values[] = {0, 0xff, -1, -128, 0x1234, 0x5a};

/* Sizes 0..max at all 64 alignments, at both ends of the region. */
static void sweep(const routine *r, size_t max, size_t step)
{
    unsigned long failures = check_failed;
    arena a = arena_new(max + 128, 0x5eed);
    for (size_t n = 0; n <= max && check_failed == failures; n += step)
        for (unsigned al = 0; al < 64; al++) {
            int c = sweep_values[(n + al) % 6];
            check_one(r, &a, place_low(&a.g, n, al), n, c);
            check_one(r, &a, place_high(&a.g, n, al), n, c);
        }
    arena_free(&a);
    printf("%-20s sizes 0..%zu x alignments 0..63 x 2 placements: %s\n", r->name, max,
           check_failed == failures ? "ok" : "FAILED");
}

static void values_convert_as_memset(void)
{
    static const int values[] = {0, 1, 0x7f, 0x80, 0xff, 0x100, 0x1ff, -1, -2, -255, -256,
                                 0x7fffffff, (int)0x80000000, 0x12345678};
    unsigned char ref[200], got[200];
    for (size_t r = 0; r < nroutines; r++)
        for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
            for (size_t n = 0; n < sizeof got - 3; n += 7) {
                memset(ref, 0x33, sizeof ref);
                memset(got, 0x33, sizeof got);
                memset(ref + 3, values[i], n);
                routines[r].fn(got + 3, values[i], n);
                CHECK(memcmp(ref, got, sizeof ref) == 0, "%s value %d n=%zu differs from memset",
                      routines[r].name, values[i], n);
            }
}

/* Random sizes up to 64 MiB, through every path the thresholds in force
 * allow. One region, canary-filled once; each check restores what it
 * changed. */
static void random_large(void)
{
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    size_t max = (size_t)64 << 20;
    arena a = arena_new(max + 4096, 0xb16);
    for (size_t r = 0; r < nroutines; r++)
        for (int k = 0; k < 6; k++) {
            size_t n = (size_t)(test_rand(&seed) % max) >> (k % 3 * 6);
            unsigned al = (unsigned)(test_rand(&seed) & 63);
            int c = (int)(test_rand(&seed) & 0x1ff) - 0x80;
            unsigned char *dst = k % 2 ? place_high(&a.g, n, al) : place_low(&a.g, n, al);
            check_one(&routines[r], &a, dst, n, c);
        }
    arena_free(&a);
}

/* The size tunable in force called name (SIZE_MAX: none by that name). */
static size_t tunable(const char *name)
{
    size_t v = SIZE_MAX;
    CHECK(mk_tunables_number(mk_tunables_get(), name, &v) == 0, "no tunable %s", name);
    return v;
}

/* The dispatched routine at sizes around each threshold in force. */
static void around_thresholds(void)
{
    size_t marks[] = {tunable("rep_stosb_threshold"), tunable("nt_threshold"),
                      tunable("nt_threshold_zero")};
    for (size_t m = 0; m < 3; m++) {
        if (marks[m] == SIZE_MAX || marks[m] > ((size_t)256 << 20) || marks[m] < 2)
            continue;
        arena a = arena_new(marks[m] + 256, (uint32_t)m);
        for (size_t d = 0; d < 3; d++)
            for (unsigned al = 0; al < 64; al += 21) {
                size_t n = marks[m] - 1 + d;
                for (int c = 0; c < 2; c++) {
                    check_one(&dispatched, &a, place_high(&a.g, n, al), n, c * 0x77);
                    check_one(&dispatched, &a, place_low(&a.g, n, al), n, c * 0x77);
                }
            }
        arena_free(&a);
    }
}

static void zero_aligned16(void)
{
    routine z = {"mk_zero_aligned16", zero16_wrapper, 0};
    unsigned long failures = check_failed;
    arena a = arena_new(SWEEP_MAX + 512 + 128, 0x2e70);
    for (size_t n = 0; n <= SWEEP_MAX + 512; n += 16)
        for (unsigned al = 0; al < 64; al += 16) {
            check_one(&z, &a, place_low(&a.g, n, al), n, 0);
            check_one(&z, &a, place_high(&a.g, n, al), n, 0);
        }
    arena_free(&a);
    printf("%-20s sizes 0..%d step 16 x alignments 0,16,32,48: %s\n", z.name, SWEEP_MAX + 512,
           check_failed == failures ? "ok" : "FAILED");
}

static void run_all(void)
{
    values_convert_as_memset();
    for (size_t r = 0; r < nroutines; r++)
        sweep(&routines[r], SWEEP_MAX, 1);
    zero_aligned16();
    around_thresholds();
    random_large();
}

/* The same checks in a child whose thresholds sit inside the sweep. */
static void rerun_with_low_thresholds(const char *self)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("MEMKIT_TUNABLES", LOW_THRESHOLDS, 1);
        execl(self, self, "--low-thresholds", (char *)NULL);
        perror("exec");
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "the run with MEMKIT_TUNABLES=%s failed (status 0x%x)", LOW_THRESHOLDS, status);
}

int main(int argc, char **argv)
{
    collect();
    if (argc > 1 && !strcmp(argv[1], "--low-thresholds")) {
        CHECK(tunable("rep_stosb_threshold") == 1000 && tunable("nt_threshold") == 2500 &&
                  tunable("nt_threshold_zero") == 1800,
              "MEMKIT_TUNABLES=%s not in force", LOW_THRESHOLDS);
        printf("-- again with MEMKIT_TUNABLES=%s\n", LOW_THRESHOLDS);
        run_all();
        check_finish();
    }
    run_all();
    rerun_with_low_thresholds("/proc/self/exe");
    check_finish();
}
