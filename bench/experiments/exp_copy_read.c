/* SPDX-License-Identifier: Apache-2.0 */
/* copy-read: a copy that is read right after it is made, by size, against
 * the same copy left alone; non-temporal against cached stores.
 *
 * Why (DESIGN.md: a copy that is read right after is a workload of its
 * own): non-temporal stores skip the read-for-ownership of every destination
 * line and leave the caches to other data, so a copy alone gains from them
 * once it outgrows the cache; but they leave the copy in DRAM, and a
 * program that reads it next pays DRAM reads where cached stores left it in
 * the L2 or L3.  (numpy copying 16 MiB arrays and reading them ran 5-10%
 * slower with memkit preloaded; not for its non-temporal stores, it turned
 * out, but for copying forward into pages never written: dst=fresh, and
 * docs/strategy.md "copy into fresh memory".)  The verdicts say, per size band, which
 * store kind is faster when the copy is read right after (and when it is
 * not), and from which size non-temporal stores win: what nt_copy_threshold
 * should be on this machine.
 *
 * The unit: copy n bytes src -> dst, then (then=read) read the whole
 * destination forward, as a program consuming its copy would (a vectorised
 * sum of 64-bit words, checked against the source's: a wrong copy stops the
 * run); then=none times the copy alone, in the same rounds.  Before each
 * unit, untimed, the destination leaves the caches: a word of each of its
 * pages is overwritten (a copy that skips a page fails the check), then
 * every line is flushed (no line the method before left dirty is written
 * back on this one's time).  dst=cold, the default, leaves it there: a big
 * array's copy goes to memory the program has not touched lately.
 * dst=warm reads it back after the source: memory an allocator hands back
 * right after the program used it (a loop copying into an array freed and
 * allocated again).  dst=fresh copies into memory mapped just before the
 * unit (untimed) and never touched: the copy takes the page faults, and
 * the kernel zeroes each page (huge pages from 4 MiB, MADV_HUGEPAGE, as
 * numpy asks for its large arrays) right before the copy's stores reach
 * it: a new array's first write.  The source is read first (src=warm: in the caches
 * where it fits, as data the program just made or used; above the L3 it is
 * cold anyway) or flushed too (src=cold).  Buffers are page-aligned: the
 * same page offset, as large allocations of one allocator usually are.
 *
 * Methods, the rows of one table: glibc's memcpy; memkit (mk_memcpy, what
 * its thresholds choose); memkit's two store kinds at every size:
 * cached-stores (mk_memcpy called on pieces below its nt_copy_threshold, so
 * it takes its cached path: what nt_copy_threshold=never gives, a tunable
 * read only when the library loads, which cannot be raced in one process
 * beside the default) and nt-stores (mk_memcpy_nt); peers (peer=LIB.so),
 * their memcpy.
 *
 * Method: per size, the lab's interleaved rounds over every (method, then)
 * pair, shuffled; a pass is as many units as make BATCH_BYTES (one from
 * there up), their timed parts summed, after an untimed warm-up unit (none
 * for a unit of a pass on its own); GB/s = bytes copied / time, copy and
 * read; the speed-up over glibc per round.  Arguments: see --help. */
#include "lab.h"
#include "sweep.h"
#include "memkit.h"

#include <immintrin.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define BATCH_BYTES ((size_t)8 << 20)   /* per timed pass: >> the timer, a few ms */
#define GRANULE     256                 /* sizes are whole 256-byte blocks: the sum reads 128 */
#define PAGE        4096
#define POISON      0x5afe5afe5afe5afeull
#define MAX_METHODS 16
#define MAX_SIZES   256
#define FRESH_HUGE  ((size_t)4 << 20)   /* numpy's threshold for MADV_HUGEPAGE */

typedef void *(*memcpy_fn)(void *, const void *, size_t);
#define COPY(f) ((void (*)(void))(f))

/* ---- what follows the copy ---- */

enum { THEN_READ, THEN_NONE, NTHEN };
static const char *const then_names[NTHEN] = {"read", "none"};

static int then_index(const char *name, size_t len)
{
    for (int t = 0; t < NTHEN; t++)
        if (strlen(then_names[t]) == len && !strncmp(name, then_names[t], len))
            return t;
    return -1;
}

/* then=read,none: each known once; the order given is the table's */
static int parse_then(const char *list, int *out, char *err, size_t errlen)
{
    int n = 0;
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        int t = then_index(p, len);
        for (int i = 0; i < n && t >= 0; i++)
            if (out[i] == t) {
                snprintf(err, errlen, "'%.*s' twice", (int)len, p);
                return -1;
            }
        if (t < 0) {
            snprintf(err, errlen, "'%.*s' is neither read nor none", (int)len, p);
            return -1;
        }
        out[n++] = t;
        p += len + (p[len] == ',');
    }
    if (!n) {
        snprintf(err, errlen, "read, none or read,none");
        return -1;
    }
    return n;
}

static int then_check(const char *value, char *err, size_t errlen)
{
    int t[NTHEN + 1];
    return parse_then(value, t, err, errlen) < 0 ? -1 : 0;
}

/* src=: warm or cold; dst=: also fresh */
static int warmth_check(const char *value, char *err, size_t errlen)
{
    return lab_one_of(value, "warm|cold", err, errlen);
}

static int dst_check(const char *value, char *err, size_t errlen)
{
    return lab_one_of(value, "warm|cold|fresh", err, errlen);
}

static const lab_arg args[] = {
    {"min", LAB_SIZE, "256K", NULL, "smallest copy", GRANULE, 1e12},
    {"max", LAB_SIZE, NULL, NULL,
     "largest copy (unset: 4x the L3, at most 512 MiB, never below 2x the L3)", GRANULE, 1e12},
    {"per_octave", LAB_INT, "3", "1", "sizes per doubling", 1, 16},
    {"then", LAB_TEXT, "read,none", NULL,
     "after the copy: read (the whole destination, timed), none (the copy alone), or both",
     0, 0, then_check},
    {"src", LAB_TEXT, "warm", NULL,
     "the source before each copy: warm (read first: cached where it fits) or cold (flushed)",
     0, 0, warmth_check},
    {"dst", LAB_TEXT, "cold", NULL,
     "the destination before each copy: cold (flushed: memory not used lately), warm (read "
     "after the source: memory the allocator hands back right after the program used it) or "
     "fresh (just mapped, never touched: the copy takes the page faults, as a new array's "
     "first write does)",
     0, 0, dst_check},
    {"rounds", LAB_INT, "11", "5",
     "interleaved rounds per size (each process); above 64 MiB fewer, as many bytes as 64 MiB's, "
     "at least 5", 1, 1000},
};

/* The rounds at size n: above TAPER_BYTES a size gets the bytes of
 * TAPER_BYTES' rounds, at least TAPER_MIN rounds (the fewest that make a
 * claim): the sizes beyond the L3 are DRAM alike, and their full rounds
 * were most of the time on a large L3. */
#define TAPER_BYTES ((size_t)64 << 20)
#define TAPER_MIN   5

static size_t rounds_at(size_t n, size_t rounds)
{
    if (n <= TAPER_BYTES)
        return rounds;
    size_t r = (size_t)((double)rounds * (double)TAPER_BYTES / (double)n);
    size_t floor_r = rounds < TAPER_MIN ? rounds : TAPER_MIN;
    return r < floor_r ? floor_r : r;
}

/* The default largest size on this machine (see max=). */
static size_t default_max(void) { return lab_beyond_l3(lab_l3_bytes(), 4); }

/* ---- the methods ---- */

/* mk_memcpy on pieces below its nt_copy_threshold: its cached path at any
 * size (the piece: the largest power of two under the threshold). */
static size_t cached_piece;

static void *copy_cached(void *dst, const void *src, size_t n)
{
    for (size_t done = 0; done < n; done += cached_piece)
        mk_memcpy((char *)dst + done, (const char *)src + done,
                  n - done < cached_piece ? n - done : cached_piece);
    return dst;
}

enum { GLIBC, MEMKIT, CACHED, NT };
static lab_method methods[MAX_METHODS] = {
    {.name = "glibc", .fn = COPY(memcpy), .glibc = 1},
    {.name = "memkit", .fn = COPY(mk_memcpy)},
    {.name = "cached-stores", .fn = COPY(copy_cached)},
    {.name = "nt-stores", .fn = COPY(mk_memcpy_nt)},
};
static size_t nmethods = NT + 1;

/* ---- the unit ---- */

/* The read: 64-bit words summed in four vectors (n a multiple of 128), as
 * fast as the caches deliver: 32-byte AVX2 loads where the CPU has them
 * (the compiler's clone, chosen at load time), SSE2 else. */
typedef uint64_t u64x4 __attribute__((vector_size(32)));
__attribute__((target_clones("avx2", "default"), noinline))
static uint64_t sum_words(const void *p, size_t n)
{
    const u64x4 *v = p;
    u64x4 a = {0}, b = {0}, c = {0}, d = {0};
    for (size_t i = 0; i < n / sizeof *v; i += 4) {
        a += v[i];
        b += v[i + 1];
        c += v[i + 2];
        d += v[i + 3];
    }
    a += b + c + d;
    return a[0] + a[1] + a[2] + a[3];
}

static void flush(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i += 64)
        _mm_clflush(p + i);
    _mm_mfence();   /* flushed before the timer starts */
}

typedef struct {
    char *dst;
    const char *src;
    size_t n, units;     /* units per timed pass */
    uint64_t expect;     /* the source's sum */
    int src_warm, dst_warm, dst_fresh;
    const int *then;     /* then[m->kind]: THEN_READ or THEN_NONE */
} point;

/* A destination never touched (dst=fresh), mapped outside the timed part. */
static char *map_fresh(size_t n)
{
    char *d = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (d == MAP_FAILED) {
        perror("error: mmap of a fresh destination");
        exit(3);
    }
    if (n >= FRESH_HUGE)
        madvise(d, n, MADV_HUGEPAGE);   /* refused without THP: 4 KiB pages then */
    return d;
}

/* The source as src= asks: flushed, or read (and checked: it never changes). */
static void prepare_source(const point *p)
{
    if (!p->src_warm)
        flush(p->src, p->n);
    else if (sum_words(p->src, p->n) != p->expect) {
        fprintf(stderr, "error: the source changed\n");
        exit(3);
    }
}

/* The destination poisoned (a copy that skips a page fails the check) and
 * flushed: warm or not, no line the method before left dirty is written
 * back on this one's time. */
static void poison_destination(const point *p)
{
    for (size_t i = 0; i < p->n; i += PAGE)
        *(volatile uint64_t *)(p->dst + i) = POISON;
    *(volatile uint64_t *)(p->dst + p->n - 8) = POISON;
    flush(p->dst, p->n);
}

/* The timed part: the copy into dst and, with then=read, the read; the
 * copy is checked either way. */
static double timed_copy(const lab_method *m, const point *p, char *dst)
{
    int read = p->then[m->kind] == THEN_READ;
    double t0 = lab_now_ns();
    ((memcpy_fn)m->fn)(dst, p->src, p->n);
    uint64_t sum = read ? sum_words(dst, p->n) : 0;
    double ns = lab_now_ns() - t0;
    if (!read)
        sum = sum_words(dst, p->n);
    if (sum != p->expect) {
        fprintf(stderr, "error: method %s copied %zu bytes wrong\n", m->name, p->n);
        exit(3);
    }
    return ns;
}

/* One unit of method m (see the top); the nanoseconds of its timed part. */
static double unit(const lab_method *m, const point *p)
{
    if (!p->dst_fresh) {
        poison_destination(p);
        prepare_source(p);
        if (p->dst_warm) {   /* read after the source: the program's last buffer */
            uint64_t s = sum_words(p->dst, p->n);
            lab_escape(&s);
        }
        return timed_copy(m, p, p->dst);
    }
    prepare_source(p);
    char *dst = map_fresh(p->n);
    double ns = timed_copy(m, p, dst);
    lab_free(dst, p->n);
    return ns;
}

/* A pass: `units` units, GB/s over their timed parts; the warm-up is one
 * unit, none where a pass is one unit (it would only double the time). */
static double pass(const lab_method *m, void *arg, int warm)
{
    const point *p = arg;
    if (warm) {
        if (p->units > 1)
            unit(m, p);
        return 0;
    }
    double ns = 0;
    for (size_t u = 0; u < p->units; u++)
        ns += unit(m, p);
    return (double)p->n * (double)p->units / ns;
}

/* ---- the verdicts ---- */

/* nt-stores over cached-stores at one size, paired per round: > 1 the
 * non-temporal copy was faster; judged 1, -1 or 0 (lab_judge). */
typedef struct {
    double ratio;
    int judged;
} store_race;

/* A size as a multiple of the L3: "0.5", "1.26", "0.00781". */
static const char *of_l3(size_t n, size_t l3, char *buf, size_t len)
{
    snprintf(buf, len, "%.3g", (double)n / (double)l3);
    return buf;
}

/* "at 8 MiB (0.25x the L3)" or "from 2 MiB to 8 MiB (0.0625-0.25x the L3)" */
static const char *sizes_text(size_t a, size_t b, size_t l3, char *buf, size_t len)
{
    char sa[32], sb[32], fa[16], fb[16];
    lab_fmt_size(a, sa, sizeof sa);
    of_l3(a, l3, fa, sizeof fa);
    if (a == b)
        snprintf(buf, len, "at %s (%sx the L3)", sa, fa);
    else
        snprintf(buf, len, "from %s to %s (%s-%sx the L3)", sa, lab_fmt_size(b, sb, sizeof sb),
                 fa, of_l3(b, l3, fb, sizeof fb));
    return buf;
}

/* "1.06x" or "1.06-1.34x" */
static const char *factor_text(double lo, double hi, char *buf, size_t len)
{
    if (fabs(hi - lo) < 0.005)
        snprintf(buf, len, "%.2fx", lo);
    else
        snprintf(buf, len, "%.2f-%.2fx", lo, hi);
    return buf;
}

/* Per then mode: first the size from which non-temporal stores won (and
 * cached stores never again, up to the largest size), against memkit's
 * threshold; then the bands of consecutive sizes where one store kind was
 * faster beyond the noise, or neither, and by how much (the range of the
 * sizes' median speed-ups). */
/* The bands of consecutive sizes where one store kind was faster beyond the
 * noise, or neither, and by how much, into bands[len]. */
static void bands_text(const size_t *sizes, size_t nsizes, const store_race *race, size_t l3,
                       char *bands, size_t cap)
{
    char where[160], by[32];
    for (size_t i = 0; i < nsizes;) {
        size_t j = i;
        double lo = race[i].ratio, hi = race[i].ratio;
        while (j + 1 < nsizes && race[j + 1].judged == race[i].judged) {
            j++;
            lo = fmin(lo, race[j].ratio);
            hi = fmax(hi, race[j].ratio);
        }
        size_t len = strlen(bands);
        sizes_text(sizes[i], sizes[j], l3, where, sizeof where);
        if (race[i].judged < 0)
            snprintf(bands + len, cap - len, "%scached faster %s by %s", len ? "; " : "",
                     where, factor_text(1 / hi, 1 / lo, by, sizeof by));
        else if (race[i].judged > 0)
            snprintf(bands + len, cap - len, "%snon-temporal faster %s by %s",
                     len ? "; " : "", where, factor_text(lo, hi, by, sizeof by));
        else
            snprintf(bands + len, cap - len, "%sneither beyond the noise %s "
                     "(non-temporal/cached %s)", len ? "; " : "", where,
                     factor_text(lo, hi, by, sizeof by));
        i = j + 1;
    }
}

static void store_verdict(lab_ctx *ctx, const char *what, const size_t *sizes, size_t nsizes,
                          const store_race *race, size_t l3)
{
    char where[160], bands[3000] = "";
    size_t from = nsizes, last_cached = nsizes;
    for (size_t i = nsizes; i-- > 0 && race[i].judged >= 0;)
        if (race[i].judged > 0)
            from = i;
    for (size_t i = 0; i < nsizes; i++)
        if (race[i].judged < 0)
            last_cached = i;
    bands_text(sizes, nsizes, race, l3, bands, sizeof bands);

    char cross[400], last[160] = "", top[32], sz[32], f[16];
    lab_fmt_size(sizes[nsizes - 1], top, sizeof top);
    if (from == nsizes)
        snprintf(cross, sizeof cross, "non-temporal stores did not win from any size on, up to "
                 "%s (%sx the L3)", top, of_l3(sizes[nsizes - 1], l3, f, sizeof f));
    else
        snprintf(cross, sizeof cross, "non-temporal stores win from %s (%sx the L3) on, up to "
                 "%s", lab_fmt_size(sizes[from], sz, sizeof sz),
                 of_l3(sizes[from], l3, f, sizeof f), top);
    if (last_cached < nsizes)
        snprintf(last, sizeof last, "; cached stores last won %s",
                 sizes_text(sizes[last_cached], sizes[last_cached], l3, where, sizeof where));
    size_t thr = lab_tunable("nt_copy_threshold");
    char t[64] = "never";
    if (thr != SIZE_MAX)
        snprintf(t, sizeof t, "%s (%.3gx the L3)", lab_fmt_size(thr, sz, sizeof sz),
                 (double)thr / (double)l3);
    lab_verdict(ctx, "%s: %s%s; memkit's nt_copy_threshold is %s. Non-temporal (nt-stores) "
                "against cached stores (cached-stores), per size: %s", what, cross, last, t, bands);
}

/* ---- main ---- */

/* A run: its arguments, the (method, then) pairs interleaved in one set of
 * rounds per size, the buffers, the sizes, and per then-mode the ranking
 * and the nt/cached race. */
typedef struct {
    size_t l3, rounds, thr;
    const char *src_kind, *dst_kind;
    int thens[NTHEN + 1], nthen;
    lab_method pairs[MAX_METHODS * NTHEN];
    size_t npairs;
    size_t sizes[MAX_SIZES], nsizes, cap;
    char *src, *dst;
    double *samples, *per_then;
    store_race (*race)[MAX_SIZES];
    lab_ranking *rk[NTHEN];
} copy_read;

/* The piece: below the threshold, so every call takes the cached path (at
 * least a page: a threshold as low is no CPU's, and the note says so). */
static void choose_cached_piece(size_t thr)
{
    for (cached_piece = (size_t)1 << 62; cached_piece >= thr && cached_piece > PAGE;)
        cached_piece >>= 1;
}

static void setup(lab_ctx *ctx, copy_read *c, size_t min, size_t max)
{
    char err[160];   /* then= was checked with the arguments */
    c->l3 = lab_l3_bytes();
    c->src_kind = lab_text(ctx, "src"), c->dst_kind = lab_text(ctx, "dst");
    c->rounds = (size_t)lab_int(ctx, "rounds");
    c->nthen = parse_then(lab_text(ctx, "then"), c->thens, err, sizeof err);
    c->thr = lab_tunable("nt_copy_threshold");
    choose_cached_piece(c->thr);
    nmethods = lab_peer_methods(ctx, LAB_PEER_MEMCPY, "", 0, methods, NT + 1, MAX_METHODS);
    for (size_t m = 0; m < nmethods; m++)
        for (int t = 0; t < c->nthen; t++)
            c->pairs[m * c->nthen + t] = (lab_method){.name = methods[m].name, .fn = methods[m].fn, .kind = t};
    c->npairs = nmethods * (size_t)c->nthen;
    c->nsizes = lab_octave_sizes(min, max, (unsigned)lab_int(ctx, "per_octave"), GRANULE,
                                 c->sizes, MAX_SIZES);
    c->cap = c->sizes[c->nsizes - 1];
    c->src = lab_alloc(c->cap), c->dst = lab_alloc(c->cap);
    uint64_t rng = 0x636f70792d72656full;
    for (size_t i = 0; i < c->cap; i += 8) {
        uint64_t w = lab_rand(&rng);
        memcpy(c->src + i, &w, 8);
    }
    c->samples = malloc(c->npairs * c->rounds * sizeof *c->samples);
    c->per_then = malloc(nmethods * c->rounds * sizeof *c->per_then);
    c->race = calloc(NTHEN, sizeof *c->race);
    for (int t = 0; t < c->nthen; t++)
        c->rk[t] = lab_ranking_new(c->thens[t] == THEN_READ ? "copy, then a read of the copy"
                                                            : "copy alone", 1, 1);
}

static int column_width(const lab_method *m)
{
    return (int)(strlen(m->name) > 8 ? strlen(m->name) : 8);
}

static void print_header(const copy_read *c)
{
    printf("copy of n bytes (source %s, destination %s), then: read = a read of the whole copy, "
           "none = nothing; GB/s of n over the timed unit (median of %zu interleaved rounds, fewer "
           "above 64 MiB); "
           "nt/cached: nt-stores' speed-up over cached-stores per round (nt, cached: faster "
           "beyond the noise)\n%10s %7s %5s", c->src_kind, c->dst_kind, c->rounds, "size", "x L3",
           "then");
    for (size_t m = 0; m < nmethods; m++)
        printf(" %*s", column_width(&methods[m]), methods[m].name);
    printf(" %16s\n", "nt/cached");
}

/* Size i's records under the k-th then-mode (its samples picked out of the
 * pairs'), its ranking point, the nt/cached race and its table row. */
static void emit_then(lab_ctx *ctx, copy_read *c, size_t i, int k, size_t rounds_n)
{
    size_t n = c->sizes[i];
    int then = c->thens[k];
    for (size_t m = 0; m < nmethods; m++)
        memcpy(&c->per_then[m * rounds_n], &c->samples[(m * c->nthen + k) * rounds_n],
               rounds_n * sizeof *c->samples);
    char params[160], sz[32], xl3[16];
    lab_fmt_size(n, sz, sizeof sz);
    snprintf(params, sizeof params, "\"size\":%zu,\"then\":\"%s\",\"src\":\"%s\",\"dst\":\"%s\"",
             n, then_names[then], c->src_kind, c->dst_kind);
    lab_record tmpl = {.params_json = params, .axis = "size", .axis_unit = "B",
                       .metric = "gb_per_s", .unit = "GB/s", .higher_is_better = 1};
    lab_summary sums[MAX_METHODS];
    lab_emit_methods(ctx, &tmpl, methods, nmethods, rounds_n, c->per_then, GLIBC, sums);
    lab_ranking_add(c->rk[k], sz, methods, nmethods, MEMKIT, sums, NULL);
    double lo, hi;
    store_race *r = &c->race[then][i];
    r->ratio = lab_paired_speedup(&sums[NT], &sums[CACHED], 1, &lo, &hi);
    r->judged = lab_judge(lo, hi);
    printf("%10s %7s %5s", sz, of_l3(n, c->l3, xl3, sizeof xl3), then_names[then]);
    for (size_t m = 0; m < nmethods; m++)
        printf(" %*.2f", column_width(&methods[m]), sums[m].value);
    printf(" %8.2fx %-6s\n", r->ratio, r->judged > 0 ? "nt" : r->judged < 0 ? "cached" : "");
    lab_summaries_free(sums, nmethods);
}

/* Size i: every pair in the same interleaved rounds, then each then-mode
 * written on its own. */
static void measure_size(lab_ctx *ctx, copy_read *c, size_t i)
{
    size_t n = c->sizes[i];
    char sz[32];
    lab_progress(ctx, i, c->nsizes, lab_fmt_size(n, sz, sizeof sz));
    point p = {c->dst, c->src, n, n >= BATCH_BYTES ? 1 : BATCH_BYTES / n, sum_words(c->src, n),
               !strcmp(c->src_kind, "warm"), !strcmp(c->dst_kind, "warm"),
               !strcmp(c->dst_kind, "fresh"), c->thens};
    size_t rounds_n = rounds_at(n, c->rounds);
    lab_interleave(ctx, c->pairs, c->npairs, rounds_n, pass, &p, c->samples);
    for (int k = 0; k < c->nthen; k++)
        emit_then(ctx, c, i, k, rounds_n);
    fflush(stdout);
}

/* What the three memkit-made methods are on this machine. */
static void methods_note(lab_ctx *ctx, size_t thr)
{
    char piece[160] = "whole (its nt_copy_threshold is never)", t[32] = "never", sz[32];
    if (thr != SIZE_MAX) {
        lab_fmt_size(thr, t, sizeof t);
        snprintf(piece, sizeof piece, "on pieces of %s, %s", lab_fmt_size(cached_piece, sz, sizeof sz),
                 cached_piece < thr ? "below that threshold"
                                    : "not below that threshold (no piece under a page): NOT cached");
    }
    lab_verdict_kind(ctx, "note", "memkit is mk_memcpy as dispatched (non-temporal from its "
                     "nt_copy_threshold, %s); cached-stores is mk_memcpy called %s, so it takes "
                     "its cached path at every size; nt-stores is mk_memcpy_nt (non-temporal at "
                     "every size); glibc's memcpy chooses by its own thresholds", t, piece);
}

static void verdicts(lab_ctx *ctx, copy_read *c)
{
    methods_note(ctx, c->thr);
    for (int k = 0; k < c->nthen; k++)
        lab_ranking_verdicts(ctx, c->rk[k]);
    for (int k = 0; k < c->nthen; k++) {
        char what[160];
        snprintf(what, sizeof what, "%s (source %s, destination %s)",
                 c->thens[k] == THEN_READ ? "copy, then a read of the copy" : "copy alone",
                 c->src_kind, c->dst_kind);
        store_verdict(ctx, what, c->sizes, c->nsizes, c->race[c->thens[k]], c->l3);
    }
}

static void release(copy_read *c)
{
    free(c->race);
    free(c->per_then);
    free(c->samples);
    lab_free(c->src, c->cap);
    lab_free(c->dst, c->cap);
}

static int run(lab_ctx *ctx)
{
    size_t min = lab_size(ctx, "min"), max = lab_text(ctx, "max") ? lab_size(ctx, "max") : default_max();
    if (max < min) {
        fprintf(stderr, "error: need min <= max\n");
        return 2;
    }
    static copy_read c;
    setup(ctx, &c, min, max);
    print_header(&c);
    for (size_t i = 0; i < c.nsizes; i++)
        measure_size(ctx, &c, i);
    lab_progress(ctx, c.nsizes, c.nsizes, "done");
    verdicts(ctx, &c);
    release(&c);
    return 0;
}

/* The default grid on this machine, for --describe: its largest size and
 * the bytes its units copy (every method and then mode, both processes; a
 * unit's flush, sums and read scale with them), which `memkit run`'s
 * estimate scales by. */
static const char *default_of(const char *key)
{
    for (size_t i = 0; i < sizeof args / sizeof args[0]; i++)
        if (!strcmp(args[i].key, key))
            return args[i].def;
    return NULL;
}

static void grid(FILE *f)
{
    size_t sizes[MAX_SIZES], max = default_max(), rounds = (size_t)atoi(default_of("rounds"));
    size_t n = lab_octave_sizes(lab_parse_size(default_of("min")), max,
                                (unsigned)atoi(default_of("per_octave")), GRANULE, sizes, MAX_SIZES);
    double work = 0;
    for (size_t i = 0; i < n; i++) {
        size_t units = sizes[i] >= BATCH_BYTES ? 1 : BATCH_BYTES / sizes[i];
        work += (double)rounds_at(sizes[i], rounds) * (double)(units + (units > 1)) * (double)sizes[i];
    }
    fprintf(f, "\"largest\":%zu,\"sizes\":%zu,\"work\":%.0f", max, n,
            work * 2 /* processes */ * 4 /* methods */ * NTHEN);
}

/* min <= max, said before any process starts (unset max: 4 x the L3,
 * checked when it is known) */
static int check(lab_ctx *ctx)
{
    return lab_text(ctx, "max") ? lab_check_order(ctx, "min", "max") : 0;
}

int main(int argc, char **argv)
{
    static const lab_info info = {
        .name = "copy-read",
        .seed = "(beyond the seeds)",
        .description = "a copy read right after it is made (and the copy alone), 256 KiB..4x the "
                       "L3 (at most 512 MiB, at least 2x the L3): non-temporal against cached "
                       "stores, glibc, memkit, peers",
        .args = args,
        .nargs = sizeof args / sizeof args[0],
        .processes = 2,
        .quick_processes = 1,
        .check = check,
        .pinned = 1,
        .peer_ops = LAB_PEER_OP(LAB_PEER_MEMCPY),
        .races_glibc = 1,
        .grid = grid,
    };
    return lab_main(argc, argv, &info, run);
}
