/* SPDX-License-Identifier: Apache-2.0 */
/* fill-regions: throughput of filling a region over and over, by region
 * size (1 KiB .. 1 GiB), with zero against a non-zero value, for every fill
 * method in one table.
 *
 * Seed: cpu-slowed-down-on-wednesday-zero-store.  Some CPUs store all-zero
 * cache lines faster than others once the region spills out of L2 (Intel's
 * "zero store" optimisation, later switched off by a microcode update); on
 * others non-temporal and `rep stosb` zero fills are faster in RAM while a
 * plain vector loop shows nothing.  The verdict says, per method and cache
 * level, where zeros are faster and by how much — so a re-run after a
 * microcode or kernel update shows what changed.
 *
 * Method: per region size, the lab's interleaved rounds over every
 * (method, value) pair, shuffled, each timed batch after a warm-up batch;
 * a batch fills the same region `reps` times (at least BATCH_BYTES in all,
 * one fill for big regions).  Reported: GB/s median over rounds, and for
 * value 0 the zero/non-zero speed-up per round (> 1: zeros faster).  The
 * number of rounds adapts to a per-size time budget, so 1 GiB regions get
 * few repetitions and 4 KiB ones many.  Per value, where memkit is slower
 * than the fastest other method (the ranking verdicts).  Peers
 * (peer=LIB.so) race with their own memset after memkit.
 *
 * Arguments: see --help. */
#include "lab.h"
#include "sweep.h"
#include "memkit.h"

#include <immintrin.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define NONZERO_VALUE 0x5a
#define BATCH_BYTES   ((size_t)16 << 20)   /* >= 16 MiB per timed batch: >> timer resolution */
#define MAX_ROUNDS    15
#define MIN_ROUNDS    3

/* memset's shape, so that a peer's memset (peer=LIB.so) is a method too */
typedef void *fill_fn(void *dst, int c, size_t n);

/* ---- the methods ---- */

/* One loop, written once: 8 vector stores per iteration (256 bytes with
 * AVX2, as the seed's std::fill compiles to), then whole vectors, then
 * bytes.  `store` is a plain or a non-temporal store; `fence` orders the
 * non-temporal ones before the timer reads. */
#define DEFINE_FILL_LOOP(name, attr, vec, splat, store, fence)                  \
    attr static void *name(void *dst, int c, size_t n)                         \
    {                                                                           \
        const vec v = splat((char)c);                                           \
        char *p = dst, *end = p + n;                                            \
        const size_t w = sizeof(vec);                                           \
        for (; (size_t)(end - p) >= 8 * w; p += 8 * w) {                        \
            store((vec *)(p + 0 * w), v); store((vec *)(p + 1 * w), v);         \
            store((vec *)(p + 2 * w), v); store((vec *)(p + 3 * w), v);         \
            store((vec *)(p + 4 * w), v); store((vec *)(p + 5 * w), v);         \
            store((vec *)(p + 6 * w), v); store((vec *)(p + 7 * w), v);         \
        }                                                                       \
        for (; (size_t)(end - p) >= w; p += w)                                  \
            store((vec *)p, v);                                                 \
        fence;                                                                  \
        for (; p < end; p++)                                                    \
            *(volatile char *)p = (char)c;                                      \
        return dst;                                                             \
    }

#define AVX2 __attribute__((target("avx2")))
/* Non-temporal stores need aligned addresses: regions are page-aligned and
 * every region size in the grid is a multiple of 256. */
DEFINE_FILL_LOOP(fill_vector_avx2, AVX2, __m256i, _mm256_set1_epi8, _mm256_storeu_si256, (void)0)
DEFINE_FILL_LOOP(fill_vector_sse2, , __m128i, _mm_set1_epi8, _mm_storeu_si128, (void)0)
DEFINE_FILL_LOOP(fill_nt_avx2, AVX2, __m256i, _mm256_set1_epi8, _mm256_stream_si256, _mm_sfence())
DEFINE_FILL_LOOP(fill_nt_sse2, , __m128i, _mm_set1_epi8, _mm_stream_si128, _mm_sfence())

static void *fill_rep_stosb(void *dst, int c, size_t n)
{
    void *d = dst;
    __asm__ volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(c) : "memory");
    return dst;
}

/* Through a volatile pointer: the compiler must not inline or fold it. */
static void *(*volatile glibc_memset)(void *, int, size_t) = memset;
static void *fill_glibc(void *dst, int c, size_t n) { return glibc_memset(dst, c, n); }
static void *fill_memkit(void *dst, int c, size_t n) { return mk_memset(dst, c, n); }

#define FILL(f) ((void (*)(void))(f))

/* Every method is a row; the AVX2 loops are swapped for SSE2 at run time on
 * CPUs (or kernels) without AVX.  The peers follow memkit. */
enum { VECTOR_LOOP, REP_STOSB, NT_STORES, GLIBC, MEMKIT, MAX_METHODS = MEMKIT + 1 + 12 };
static lab_method methods[MAX_METHODS] = {
    {.name = "vector-loop", .fn = FILL(fill_vector_avx2)},
    {.name = "rep-stosb", .fn = FILL(fill_rep_stosb)},
    {.name = "nt-stores", .fn = FILL(fill_nt_avx2)},
    {.name = "glibc", .fn = FILL(fill_glibc)},
    {.name = "memkit", .fn = FILL(fill_memkit)},
};
static size_t nmethods = MEMKIT + 1;

static const int values[] = {0, NONZERO_VALUE};
enum { NVALUES = 2 };

static void pick_isa(void)
{
    const mk_cpu_info *c = mk_cpu();
    if (c->has_avx2 && c->os_avx)
        return;
    methods[VECTOR_LOOP].fn = FILL(fill_vector_sse2);
    methods[NT_STORES].fn = FILL(fill_nt_sse2);
}

/* ---- the grid ---- */

typedef struct {
    size_t min, max;
    unsigned per_octave;
    double budget_s;   /* per region size */
} grid;

static const lab_arg args[] = {
    {"min", LAB_SIZE, "1K", NULL, "smallest region", 256, 1e15},
    {"max", LAB_SIZE, "1G", "256M", "largest region", 256, 1e15},
    {"per_octave", LAB_INT, "4", "2", "region sizes per doubling", 1, 16},
    {"budget", LAB_REAL, "0.6", "0.1", "seconds of measuring per region size", 0.001, 1e6},
};

/* ---- measuring ---- */

/* A wrong fill must not produce a number: spot-check ends and middle. */
static void check_fill(const char *name, const char *buf, size_t size, int c)
{
    if (buf[0] != (char)c || buf[size / 2] != (char)c || buf[size - 1] != (char)c) {
        fprintf(stderr, "error: method %s left wrong bytes in a %zu-byte region\n", name, size);
        exit(3);
    }
}

typedef struct {
    char *buf;
    size_t size, reps;
} region;

/* One batch of a (method, value) pair; GB/s.  The warm-up batch is one
 * fill, none for regions of a batch on their own (nothing to warm there). */
static double pass(const lab_method *m, void *arg, int warm)
{
    const region *r = arg;
    fill_fn *fn = (fill_fn *)m->fn;
    int c = values[m->kind];
    if (warm) {
        if (r->reps > 1)
            fn(r->buf, c, r->size);
        return 0;
    }
    double t0 = lab_now_ns();
    for (size_t i = 0; i < r->reps; i++) {
        fn(r->buf, c, r->size);
        lab_escape(r->buf);
    }
    double ns = lab_now_ns() - t0;
    check_fill(m->name, r->buf, r->size, c);
    return (double)r->size * r->reps / ns;   /* bytes/ns = GB/s */
}

/* The (method, value) pairs: pairs[m * NVALUES + v]. */
static lab_method pairs[MAX_METHODS * NVALUES];

static size_t rounds_for(region *r, double budget_s)
{
    double t0 = lab_now_ns();   /* one untimed round: caches, TLB, frequency, the estimate */
    for (size_t i = 0; i < nmethods * NVALUES; i++)
        pass(&pairs[i], r, 0);
    double round_s = 2 * (lab_now_ns() - t0) / 1e9;   /* with the warm-ups */
    size_t rounds = round_s > 0 ? (size_t)(budget_s / round_s) : MAX_ROUNDS;
    return rounds < MIN_ROUNDS ? MIN_ROUNDS : rounds > MAX_ROUNDS ? MAX_ROUNDS : rounds;
}

/* ---- the verdict ---- */

typedef struct {
    const char *name;
    size_t lo, hi;   /* region sizes clearly inside this level */
} level;

/* Sizes near a boundary are partly in both levels; leave them out. */
static size_t make_levels(level *lv)
{
    const mk_cpu_info *c = mk_cpu();
    size_t l1 = c->l1d_bytes ? c->l1d_bytes : 32 << 10;
    size_t l2 = c->l2_bytes ? c->l2_bytes : 1 << 20;
    size_t l3 = c->l3_bytes ? c->l3_bytes : 32 << 20;
    size_t n = 0;
    lv[n++] = (level){"L1", 0, l1 * 3 / 4};
    lv[n++] = (level){"L2", l1 * 3 / 2, l2 * 3 / 4};
    if (l3 > l2)
        lv[n++] = (level){"L3", l2 * 3 / 2, l3 * 3 / 4};
    lv[n++] = (level){"RAM", (l3 > l2 ? l3 : l2) * 2, SIZE_MAX};
    return n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One method's ratios over one level's sizes: their median, how many sizes
 * say zeros are faster / slower in every round or by their median, their
 * spread.  n 0: no size in the level. */
typedef struct {
    size_t n, up, down, up_med, down_med;
    double median, lo, hi;
} level_effect;

static level_effect effect_in(const level *lv, const size_t *sizes, size_t nsizes,
                              const lab_stats (*ratio)[MAX_METHODS], size_t m, double *med)
{
    level_effect e = {.lo = INFINITY};
    for (size_t i = 0; i < nsizes; i++) {
        if (sizes[i] < lv->lo || sizes[i] > lv->hi)
            continue;
        const lab_stats *s = &ratio[i][m];
        med[e.n++] = s->median;
        e.up += s->min > 1.0;
        e.down += s->max < 1.0;
        e.up_med += s->median > 1.0;
        e.down_med += s->median < 1.0;
        e.lo = fmin(e.lo, s->median);
        e.hi = fmax(e.hi, s->median);
    }
    if (e.n) {
        qsort(med, e.n, sizeof *med, cmp_double);
        e.median = e.n % 2 ? med[e.n / 2] : (med[e.n / 2 - 1] + med[e.n / 2]) / 2;
    }
    return e;
}

static void append(char *buf, size_t len, const char *sep, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t len, const char *sep, const char *fmt, ...)
{
    size_t at = strlen(buf);
    if (at)
        at += (size_t)snprintf(buf + at, len - at, "%s", sep);
    va_list ap;
    va_start(ap, fmt);
    if (at < len)
        vsnprintf(buf + at, len - at, fmt, ap);
    va_end(ap);
}

/* Method m's verdict over the levels; its effects added to the summaries. */
static void method_verdict(lab_ctx *ctx, size_t m, const level *lv, size_t nlv,
                           const size_t *sizes, size_t nsizes,
                           const lab_stats (*ratio)[MAX_METHODS], double *med,
                           char *faster_summary, char *slower_summary, size_t summary_len)
{
    char text[768] = "", quiet[128] = "";
    for (size_t l = 0; l < nlv; l++) {
        level_effect e = effect_in(&lv[l], sizes, nsizes, ratio, m, med);
        if (e.n == 0)
            continue;
        double r = e.median;
        if (r >= 1 + LAB_LEVEL_EFFECT && (2 * e.up >= e.n || 5 * e.up_med >= 4 * e.n)) {
            append(text, sizeof text, "; ", "zeros %.2fx faster in %s (%zu sizes, %.2f..%.2fx)", r,
                   lv[l].name, e.n, e.lo, e.hi);
            append(faster_summary, summary_len, ", ", "%s %.2fx in %s", methods[m].name, r, lv[l].name);
        } else if (r <= 1 - LAB_LEVEL_EFFECT && (2 * e.down >= e.n || 5 * e.down_med >= 4 * e.n)) {
            append(text, sizeof text, "; ", "zeros %.2fx slower in %s (%zu sizes, %.2f..%.2fx)",
                   1 / r, lv[l].name, e.n, e.lo, e.hi);
            append(slower_summary, summary_len, ", ", "%s %.2fx in %s", methods[m].name, 1 / r,
                   lv[l].name);
        } else {
            append(quiet, sizeof quiet, ", ", "%s", lv[l].name);
        }
    }
    if (!text[0])
        lab_verdict(ctx, "%s: no zero/non-zero difference beyond %.0f%% in %s", methods[m].name,
                    LAB_LEVEL_EFFECT * 100, quiet);
    else if (quiet[0])
        lab_verdict(ctx, "%s: %s; no difference in %s", methods[m].name, text, quiet);
    else
        lab_verdict(ctx, "%s: %s", methods[m].name, text);
}

/* Per method: the median zero/non-zero ratio of the sizes in each level.  A
 * level counts as an effect when that median is >= 5% off 1 and the sizes
 * agree: at least half of them in every interleaved round (ratio_min > 1,
 * or ratio_max < 1), or 80% of them by their median.  One noisy size does
 * not make a verdict; a small effect seen at every size does. */
static void verdicts(lab_ctx *ctx, const size_t *sizes, size_t nsizes,
                     const lab_stats (*ratio)[MAX_METHODS])
{
    level lv[4];
    size_t nlv = make_levels(lv);
    double *med = malloc(nsizes * sizeof *med);
    char faster_summary[512] = "", slower_summary[512] = "";
    for (size_t m = 0; m < nmethods; m++)
        method_verdict(ctx, m, lv, nlv, sizes, nsizes, ratio, med, faster_summary, slower_summary,
                       sizeof faster_summary);
    if (faster_summary[0])
        lab_verdict(ctx, "zero fills are faster for: %s%s%s", faster_summary,
                    slower_summary[0] ? "; slower for: " : "", slower_summary);
    else
        lab_verdict(ctx, "zero fills are no faster than non-zero fills for any method on this machine%s%s",
                    slower_summary[0] ? "; slower for: " : "", slower_summary);
    free(med);
}

/* ---- main ---- */

static int check(lab_ctx *ctx) { return lab_check_order(ctx, "min", "max"); }

/* Method m at size i: its two records (the zero row carries the paired
 * zero/non-zero speed-up) into sums[value][m], its ratio, its cell of the
 * table. */
static void write_method(lab_ctx *ctx, size_t m, size_t size, size_t rounds, const double *gbps,
                         lab_summary (*sums)[MAX_METHODS], lab_stats *ratio)
{
    char params[NVALUES][96];
    for (int v = 0; v < NVALUES; v++)
        snprintf(params[v], sizeof params[v], "\"size\":%zu,\"value\":%d", size, values[v]);
    for (int v = NVALUES - 1; v >= 0; v--) {
        lab_record rec = {
            .series = methods[m].name, .params_json = params[v], .axis = "size",
            .axis_unit = "B", .metric = "fill_throughput", .unit = "GB/s",
            .higher_is_better = 1, .samples = &gbps[(m * NVALUES + v) * rounds],
            .n = rounds, .baseline = v == 0 ? methods[m].name : NULL,
            .baseline_params_json = params[1],
            .baseline_samples = &gbps[(m * NVALUES + 1) * rounds]};
        sums[v][m] = lab_record_emit(ctx, &rec);
    }
    *ratio = (lab_stats){.median = sums[0][m].ratio, .min = sums[0][m].ratio_min,
                         .max = sums[0][m].ratio_max, .n = rounds};
    printf(" %6.1f/%6.1f %6.2fx", sums[0][m].value, sums[1][m].value, sums[0][m].ratio);
}

/* Size i: every (method, value) pair in the same interleaved rounds, each
 * method's records, both values' ranking points, a row of the table. */
static void measure_region(lab_ctx *ctx, char *buf, size_t size, double budget_s, double *gbps,
                           lab_stats *ratio, lab_ranking **rk)
{
    char what[32];
    lab_fmt_size(size, what, sizeof what);
    region r = {buf, size, size >= BATCH_BYTES ? 1 : (BATCH_BYTES + size - 1) / size};
    size_t rounds = rounds_for(&r, budget_s);
    lab_interleave(ctx, pairs, nmethods * NVALUES, rounds, pass, &r, gbps);
    lab_summary sums[NVALUES][MAX_METHODS];
    printf("%-10s", what);
    for (size_t m = 0; m < nmethods; m++)
        write_method(ctx, m, size, rounds, gbps, sums, &ratio[m]);
    for (int v = 0; v < NVALUES; v++) {
        lab_ranking_add(rk[v], what, methods, nmethods, MEMKIT, sums[v], NULL);
        lab_summaries_free(sums[v], nmethods);
    }
    printf("\n");
    fflush(stdout);
}

static int run(lab_ctx *ctx)
{
    grid g = {lab_size(ctx, "min"), lab_size(ctx, "max"), (unsigned)lab_int(ctx, "per_octave"),
              lab_real(ctx, "budget")};
    pick_isa();
    nmethods = lab_peer_methods(ctx, LAB_PEER_MEMSET, "", 0, methods, MEMKIT + 1, MAX_METHODS);
    for (size_t m = 0; m < nmethods; m++)
        for (int v = 0; v < NVALUES; v++)
            pairs[m * NVALUES + v] = (lab_method){.name = methods[m].name, .fn = methods[m].fn, .kind = v};
    size_t sizes[512];
    /* rounded to 256 bytes: every size is whole vectors for the loops and the
     * non-temporal stores */
    size_t nsizes = lab_octave_sizes(g.min, g.max, g.per_octave, 256, sizes, 512);
    char *buf = lab_alloc(sizes[nsizes - 1]);
    lab_stats (*ratio)[MAX_METHODS] = calloc(nsizes, sizeof *ratio);
    double *gbps = malloc(nmethods * NVALUES * MAX_ROUNDS * sizeof *gbps);
    lab_ranking *rk[NVALUES] = {lab_ranking_new("fill with 0", 1, 1),
                                lab_ranking_new("fill with 0x5a", 1, 1)};
    printf("fill throughput, GB/s: value 0 / value 0x%x, and their ratio (>1: zeros faster)\n",
           NONZERO_VALUE);
    printf("%-10s", "region");
    for (size_t m = 0; m < nmethods; m++)
        printf(" %21.21s", methods[m].name);
    printf("\n");
    for (size_t i = 0; i < nsizes; i++) {
        char what[32];
        lab_progress(ctx, i, nsizes, lab_fmt_size(sizes[i], what, sizeof what));
        measure_region(ctx, buf, sizes[i], g.budget_s, gbps, ratio[i], rk);
    }
    lab_progress(ctx, nsizes, nsizes, "done");
    for (int v = 0; v < NVALUES; v++)   /* where memkit stands first, then the seed's question */
        lab_ranking_verdicts(ctx, rk[v]);
    verdicts(ctx, sizes, nsizes, (const lab_stats(*)[MAX_METHODS])ratio);
    free(gbps);
    free(ratio);
    lab_free(buf, sizes[nsizes - 1]);
    return 0;
}

int main(int argc, char **argv)
{
    static const lab_info info = {
        .name = "fill-regions",
        .seed = "cpu-slowed-down-on-wednesday-zero-store",
        .description = "fill throughput by region size 1 KiB..1 GiB, zero vs non-zero value, "
                       "per fill method (vector loop, rep stosb, non-temporal, glibc, memkit)",
        .args = args,
        .nargs = sizeof args / sizeof args[0],
        .check = check,
        /* Non-temporal stores to regions of a few KiB ran 250 GB/s in one
         * process and 6-20 GB/s in the next (AMD EPYC Zen 5, identical quick
         * runs): a state of the process, which its own rounds cannot show. */
        .processes = 3,
        .pinned = 1,
        .peer_ops = LAB_PEER_OP(LAB_PEER_MEMSET),
    };
    return lab_main(argc, argv, &info, run);
}
