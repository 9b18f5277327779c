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
 * Method: per region size, rounds of (method x value) batches, interleaved
 * A0 Ax B0 Bx ...; a batch fills the same region `reps` times (at least
 * BATCH_BYTES in all, one fill for big regions).  Reported: GB/s median over
 * rounds, and for value 0 the zero/non-zero ratio per round (median, min,
 * max).  The number of rounds adapts to a per-size time budget, so 1 GiB
 * regions get few repetitions and 4 KiB ones many.
 *
 * Arguments: min=SIZE max=SIZE per_octave=N budget=SECONDS (per size). */
#include "lab.h"
#include "memkit.h"

#include <immintrin.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NONZERO_VALUE 0x5a
#define BATCH_BYTES   ((size_t)16 << 20)   /* >= 16 MiB per timed batch: >> timer resolution */
#define MAX_ROUNDS    15
#define MIN_ROUNDS    3

typedef void fill_fn(void *dst, int c, size_t n);

/* ---- the methods ---- */

/* One loop, written once: 8 vector stores per iteration (256 bytes with
 * AVX2, as the seed's std::fill compiles to), then whole vectors, then
 * bytes.  `store` is a plain or a non-temporal store; `fence` orders the
 * non-temporal ones before the timer reads. */
#define DEFINE_FILL_LOOP(name, attr, vec, splat, store, fence)                  \
    attr static void name(void *dst, int c, size_t n)                          \
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
    }

#define AVX2 __attribute__((target("avx2")))
/* Non-temporal stores need aligned addresses: regions are page-aligned and
 * every region size in the grid is a multiple of 256. */
DEFINE_FILL_LOOP(fill_vector_avx2, AVX2, __m256i, _mm256_set1_epi8, _mm256_storeu_si256, (void)0)
DEFINE_FILL_LOOP(fill_vector_sse2, , __m128i, _mm_set1_epi8, _mm_storeu_si128, (void)0)
DEFINE_FILL_LOOP(fill_nt_avx2, AVX2, __m256i, _mm256_set1_epi8, _mm256_stream_si256, _mm_sfence())
DEFINE_FILL_LOOP(fill_nt_sse2, , __m128i, _mm_set1_epi8, _mm_stream_si128, _mm_sfence())

static void fill_rep_stosb(void *dst, int c, size_t n)
{
    __asm__ volatile("rep stosb" : "+D"(dst), "+c"(n) : "a"(c) : "memory");
}

/* Through a volatile pointer: the compiler must not inline or fold it. */
static void *(*volatile glibc_memset)(void *, int, size_t) = memset;
static void fill_glibc(void *dst, int c, size_t n) { glibc_memset(dst, c, n); }
static void fill_memkit(void *dst, int c, size_t n) { mk_memset(dst, c, n); }

typedef struct {
    const char *name;
    fill_fn *fn;
} method;

/* Every method is a row; the AVX2 loops are swapped for SSE2 at run time on
 * CPUs (or kernels) without AVX. */
static method methods[] = {
    {"vector-loop", fill_vector_avx2},
    {"rep-stosb", fill_rep_stosb},
    {"nt-stores", fill_nt_avx2},
    {"glibc", fill_glibc},
    {"memkit", fill_memkit},
};
enum { NMETHODS = sizeof methods / sizeof methods[0] };

static const int values[] = {0, NONZERO_VALUE};
enum { NVALUES = 2 };

static void pick_isa(void)
{
    const mk_cpu_info *c = mk_cpu();
    if (c->has_avx2 && c->os_avx)
        return;
    methods[0].fn = fill_vector_sse2;
    methods[2].fn = fill_nt_sse2;
}

/* ---- the grid ---- */

typedef struct {
    size_t min, max;
    unsigned per_octave;
    double budget_s;   /* per region size */
} grid;

static void parse_args(lab_ctx *ctx, grid *g)
{
    for (int i = 1; i < ctx->argc; i++) {
        const char *a = ctx->argv[i];
        if (!strncmp(a, "min=", 4))
            g->min = lab_parse_size(a + 4);
        else if (!strncmp(a, "max=", 4))
            g->max = lab_parse_size(a + 4);
        else if (!strncmp(a, "per_octave=", 11))
            g->per_octave = (unsigned)atoi(a + 11);
        else if (!strncmp(a, "budget=", 7))
            g->budget_s = atof(a + 7);
        else {
            fprintf(stderr, "error: unknown argument '%s' (expected min=SIZE max=SIZE "
                            "per_octave=N budget=SECONDS)\n", a);
            exit(2);
        }
    }
    if (g->min < 256 || g->max < g->min || g->per_octave < 1 || g->per_octave > 16 ||
        !(g->budget_s > 0)) {
        fprintf(stderr, "error: need 256 <= min <= max, 1 <= per_octave <= 16, budget > 0\n");
        exit(2);
    }
}

/* Sizes min * 2^(k/per_octave), rounded to 256 bytes, duplicates dropped. */
static size_t make_sizes(const grid *g, size_t *out, size_t cap)
{
    size_t n = 0;
    for (unsigned k = 0; n < cap; k++) {
        double s = (double)g->min * pow(2.0, (double)k / g->per_octave);
        if (s > (double)g->max * 1.0001)
            break;
        size_t r = ((size_t)(s + 128) / 256) * 256;
        if (n == 0 || r != out[n - 1])
            out[n++] = r;
    }
    return n;
}

/* ---- measuring ---- */

static double time_batch(fill_fn *fn, char *buf, int c, size_t size, size_t reps)
{
    double t0 = lab_now_ns();
    for (size_t r = 0; r < reps; r++) {
        fn(buf, c, size);
        lab_escape(buf);
    }
    return lab_now_ns() - t0;
}

/* A wrong fill must not produce a number: spot-check ends and middle. */
static void check_fill(const char *name, const char *buf, size_t size, int c)
{
    if (buf[0] != (char)c || buf[size / 2] != (char)c || buf[size - 1] != (char)c) {
        fprintf(stderr, "error: method %s left wrong bytes in a %zu-byte region\n", name, size);
        exit(3);
    }
}

typedef struct {
    double gbps[NMETHODS][NVALUES][MAX_ROUNDS];
    double ratio[NMETHODS][MAX_ROUNDS];   /* zero / non-zero throughput, per round */
    size_t rounds;
} size_result;

static void measure_size(char *buf, size_t size, double budget_s, size_result *res)
{
    size_t reps = size >= BATCH_BYTES ? 1 : (BATCH_BYTES + size - 1) / size;
    /* Warm-up round (caches, TLB, frequency), also the time estimate. */
    double t0 = lab_now_ns();
    for (int m = 0; m < NMETHODS; m++)
        for (int v = 0; v < NVALUES; v++)
            time_batch(methods[m].fn, buf, values[v], size, reps);
    double round_s = (lab_now_ns() - t0) / 1e9;
    size_t rounds = round_s > 0 ? (size_t)(budget_s / round_s) : MAX_ROUNDS;
    rounds = rounds < MIN_ROUNDS ? MIN_ROUNDS : rounds > MAX_ROUNDS ? MAX_ROUNDS : rounds;

    for (size_t r = 0; r < rounds; r++)
        for (int m = 0; m < NMETHODS; m++) {
            /* Alternate which value goes first, so neither always follows the other. */
            for (int i = 0; i < NVALUES; i++) {
                int v = (int)((i + r) % NVALUES);
                double ns = time_batch(methods[m].fn, buf, values[v], size, reps);
                check_fill(methods[m].name, buf, size, values[v]);
                res->gbps[m][v][r] = (double)size * reps / ns;   /* bytes/ns = GB/s */
            }
            res->ratio[m][r] = res->gbps[m][0][r] / res->gbps[m][1][r];
        }
    res->rounds = rounds;
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

/* Per method: the median zero/non-zero ratio of the sizes in each level.  A
 * level counts as an effect when that median is >= 5% off 1 and the sizes
 * agree: at least half of them in every interleaved round (ratio_min > 1,
 * or ratio_max < 1), or 80% of them by their median.  One noisy size does
 * not make a verdict; a small effect seen at every size does. */
#define EFFECT 0.05
static void verdicts(lab_ctx *ctx, const size_t *sizes, size_t nsizes, const lab_stats (*ratio)[NMETHODS])
{
    level lv[4];
    size_t nlv = make_levels(lv);
    double *med = malloc(nsizes * sizeof *med);
    char faster_summary[512] = "", slower_summary[512] = "";
    for (int m = 0; m < NMETHODS; m++) {
        char text[768] = "", quiet[128] = "";
        for (size_t l = 0; l < nlv; l++) {
            size_t n = 0, up = 0, down = 0, up_med = 0, down_med = 0;
            double lo = INFINITY, hi = 0;
            for (size_t i = 0; i < nsizes; i++) {
                if (sizes[i] < lv[l].lo || sizes[i] > lv[l].hi)
                    continue;
                const lab_stats *s = &ratio[i][m];
                med[n++] = s->median;
                up += s->min > 1.0;
                down += s->max < 1.0;
                up_med += s->median > 1.0;
                down_med += s->median < 1.0;
                lo = fmin(lo, s->median);
                hi = fmax(hi, s->median);
            }
            if (n == 0)
                continue;
            qsort(med, n, sizeof *med, cmp_double);
            double r = n % 2 ? med[n / 2] : (med[n / 2 - 1] + med[n / 2]) / 2;
            size_t len = strlen(text);
            if (r >= 1 + EFFECT && (2 * up >= n || 5 * up_med >= 4 * n)) {
                snprintf(text + len, sizeof text - len, "%szeros %.2fx faster in %s (%zu sizes, %.2f..%.2fx)",
                         len ? "; " : "", r, lv[l].name, n, lo, hi);
                size_t fl = strlen(faster_summary);
                snprintf(faster_summary + fl, sizeof faster_summary - fl, "%s%s %.2fx in %s",
                         fl ? ", " : "", methods[m].name, r, lv[l].name);
            } else if (r <= 1 - EFFECT && (2 * down >= n || 5 * down_med >= 4 * n)) {
                snprintf(text + len, sizeof text - len, "%szeros %.2fx slower in %s (%zu sizes, %.2f..%.2fx)",
                         len ? "; " : "", 1 / r, lv[l].name, n, lo, hi);
                size_t sl = strlen(slower_summary);
                snprintf(slower_summary + sl, sizeof slower_summary - sl, "%s%s %.2fx in %s",
                         sl ? ", " : "", methods[m].name, 1 / r, lv[l].name);
            } else {
                size_t ql = strlen(quiet);
                snprintf(quiet + ql, sizeof quiet - ql, "%s%s", ql ? ", " : "", lv[l].name);
            }
        }
        if (!text[0])
            lab_verdict(ctx, "%s: no zero/non-zero difference beyond %.0f%% in %s", methods[m].name,
                        EFFECT * 100, quiet);
        else if (quiet[0])
            lab_verdict(ctx, "%s: %s; no difference in %s", methods[m].name, text, quiet);
        else
            lab_verdict(ctx, "%s: %s", methods[m].name, text);
    }
    if (faster_summary[0])
        lab_verdict(ctx, "zero fills are faster for: %s%s%s", faster_summary,
                    slower_summary[0] ? "; slower for: " : "", slower_summary);
    else
        lab_verdict(ctx, "zero fills are no faster than non-zero fills for any method on this machine%s%s",
                    slower_summary[0] ? "; slower for: " : "", slower_summary);
    free(med);
}

/* ---- main ---- */

static int run(lab_ctx *ctx)
{
    grid g = {1 << 10, (size_t)1 << 30, 4, 0.6};
    if (ctx->quick)
        g = (grid){1 << 10, (size_t)256 << 20, 2, 0.1};
    parse_args(ctx, &g);
    pick_isa();

    size_t sizes[512];
    size_t nsizes = make_sizes(&g, sizes, 512);
    char *buf = lab_alloc(sizes[nsizes - 1]);
    lab_stats (*ratio)[NMETHODS] = calloc(nsizes, sizeof *ratio);
    size_result *res = malloc(sizeof *res);

    printf("fill throughput, GB/s: value 0 / value 0x%x, and their ratio (>1: zeros faster)\n",
           NONZERO_VALUE);
    printf("%-10s", "region");
    for (int m = 0; m < NMETHODS; m++)
        printf(" %21s", methods[m].name);
    printf("\n");

    for (size_t i = 0; i < nsizes; i++) {
        char what[32], name[32];
        lab_fmt_size(sizes[i], what, sizeof what);
        lab_progress(ctx, i, nsizes, what);
        measure_size(buf, sizes[i], g.budget_s, res);
        printf("%-10s", what);
        for (int m = 0; m < NMETHODS; m++) {
            lab_stats s0 = lab_stats_of(res->gbps[m][0], res->rounds);
            lab_stats s1 = lab_stats_of(res->gbps[m][1], res->rounds);
            ratio[i][m] = lab_stats_of(res->ratio[m], res->rounds);
            for (int v = 0; v < NVALUES; v++) {
                char params[96];
                snprintf(params, sizeof params, "\"size\":%zu,\"value\":%d", sizes[i], values[v]);
                lab_measurement mm = {
                    .series = methods[m].name, .params_json = params, .metric = "fill_throughput",
                    .unit = "GB/s", .stat = "median", .value = v ? s1.median : s0.median,
                    .s = v ? s1 : s0,
                };
                if (v == 0) {   /* the zero row carries the interleaved zero/non-zero ratio */
                    snprintf(name, sizeof name, "%s value=%d", methods[m].name, NONZERO_VALUE);
                    mm.ratio_to = name;
                    mm.ratio = ratio[i][m].median;
                    mm.ratio_min = ratio[i][m].min;
                    mm.ratio_max = ratio[i][m].max;
                }
                lab_emit(ctx, &mm);
            }
            printf(" %6.1f/%6.1f %6.2fx", s0.median, s1.median, ratio[i][m].median);
        }
        printf("\n");
        fflush(stdout);
    }
    lab_progress(ctx, nsizes, nsizes, "done");
    verdicts(ctx, sizes, nsizes, (const lab_stats(*)[NMETHODS])ratio);
    free(res);
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
    };
    return lab_main(argc, argv, &info, run);
}
