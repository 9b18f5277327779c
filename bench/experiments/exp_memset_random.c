/* SPDX-License-Identifier: Apache-2.0 */
/* memset-random: the MSRC seed's random-size matrix.  Each row draws 50,000
 * sizes (a multiple of the granularity, min..max) and page offsets
 * (min..max offset from a page boundary) and zeroes a buffer at each in
 * turn, with or without clearing L1 before every call, so the branch
 * predictor cannot learn the sizes.  Every memset method is timed on the
 * same arrays, interleaved (every method once per round, in a shuffled
 * order), one pass of all the sizes per sample; the table shows the seed's
 * statistic, the mean of the fastest 10% of the passes; the verdict compares
 * mk_memset with glibc by the median of the per-round ratios, beside the
 * same code timed twice under two names (the experiment's resolution).
 *
 * With L1 cleared, an eviction sweep runs before each call and each call is
 * timed alone (lfence; rdtsc; call; mfence; lfence; rdtsc: the mfence waits
 * until the stores, which now miss L1, are done).  Those figures include
 * the timing's fixed cost, the same for every method, so their percentages
 * are smaller than the calls' own differences.  (Subtracting an empty
 * function's figure was tried: the remainders were too close to zero to
 * give stable ratios.)
 *
 * Printed: per row, each method's improvement over glibc in % of glibc's
 * time (positive: faster), and the seed's own comparison — its new design
 * (here the 16-byte "sse2" variant) against the old NT memset — beside the
 * percentage the seed published for that row (Broadwell, 2021).
 *
 * 50,000 sizes per row (the seed's choice) is more than a branch predictor
 * learns: a Zen 5 learnt an 8,192-call batch (memcpy 2.5 ns per call at
 * 1,024 calls per batch, 8.7 at 50,000).  Small sizes depend on where code
 * and data landed, so it runs in two processes and pools them.
 * Arguments: see --help. */
#include "lab.h"
#include "memset_methods.h"
#include "sweep.h"
#include "working_set.h"

#include "memkit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    unsigned gran;
    size_t min, max;
    unsigned off_min, off_max;
    int clear_l1;
    double seed_pct;     /* published improvement, new vs old NT memset */
} matrix_row;

static const matrix_row rows[] = {
    {1, 1, 1024, 0, 0, 0, 17.74},
    {1, 1, 1024, 0, 0, 1, 17.77},
    {1, 1, 1024, 0, 4095, 0, 16.66},
    {1, 1, 128, 0, 0, 0, 21.99},
    {1, 1, 128, 0, 0, 1, 19.05},
    {1, 1, 128, 0, 4095, 0, 21.66},
    {1, 1, 16, 0, 0, 0, 16.10},
    {1, 1, 16, 0, 0, 1, 15.27},
    {1, 1, 16, 0, 4095, 0, 15.78},
    {1, 1, 256, 0, 0, 0, 20.51},
    {1, 1, 256, 0, 0, 1, 19.62},
    {1, 1, 256, 0, 4095, 0, 18.80},
    {1, 1, 32, 0, 0, 0, 13.28},
    {1, 1, 32, 0, 0, 1, 11.28},
    {1, 1, 32, 0, 4095, 0, 11.97},
    {1, 1, 4096, 0, 0, 0, 34.61},
    {1, 1, 4096, 0, 0, 1, 25.40},
    {1, 1, 4096, 0, 4095, 0, 33.11},
    {1, 1, 512, 0, 0, 0, 19.93},
    {1, 1, 512, 0, 0, 1, 17.64},
    {1, 1, 512, 0, 4095, 0, 19.03},
    {1, 1, 64, 0, 0, 0, 27.91},
    {1, 1, 64, 0, 0, 1, 23.50},
    {1, 1, 64, 0, 4095, 0, 25.40},
    {1, 1, 768, 0, 0, 0, 18.35},
    {1, 1, 768, 0, 0, 1, 17.55},
    {1, 1, 768, 0, 4095, 0, 17.68},
    {16, 1024, 4096, 0, 0, 0, 38.40},
    {16, 1024, 4096, 0, 0, 1, 28.12},
    {16, 1024, 4096, 0, 4095, 0, 36.90},
    {16, 256, 1024, 0, 0, 0, 14.92},
    {16, 256, 1024, 0, 0, 1, 15.21},
    {16, 256, 1024, 0, 4095, 0, 15.01},
    {16, 256, 4096, 0, 0, 0, 35.14},
    {16, 256, 4096, 0, 0, 1, 26.64},
    {16, 256, 4096, 0, 4095, 0, 33.87},
    {16, 256, 512, 0, 0, 0, 12.96},
    {16, 256, 512, 0, 0, 1, 10.08},
    {16, 256, 512, 0, 4095, 0, 14.30},
    {16, 256, 768, 0, 0, 0, 15.25},
    {16, 256, 768, 0, 0, 1, 13.55},
    {16, 256, 768, 0, 4095, 0, 16.13},
    {16, 32, 1024, 0, 0, 0, 16.89},
    {16, 32, 1024, 0, 0, 1, 16.89},
    {16, 32, 1024, 0, 4095, 0, 16.69},
    {16, 32, 128, 0, 0, 0, 23.62},
    {16, 32, 128, 0, 0, 1, 22.00},
    {16, 32, 128, 0, 4095, 0, 22.60},
    {16, 32, 256, 0, 0, 0, 19.06},
    {16, 32, 256, 0, 0, 1, 17.86},
    {16, 32, 256, 0, 4095, 0, 18.61},
    {16, 32, 512, 0, 0, 0, 18.58},
    {16, 32, 512, 0, 0, 1, 16.00},
    {16, 32, 512, 0, 4095, 0, 19.57},
    {16, 32, 64, 0, 0, 0, 25.92},
    {16, 32, 64, 0, 0, 1, 19.96},
    {16, 32, 64, 0, 4095, 0, 23.28},
    {16, 512, 1024, 0, 0, 0, 11.75},
    {16, 512, 1024, 0, 0, 1, 13.80},
    {16, 512, 1024, 0, 4095, 0, 11.46},
    {16, 512, 768, 0, 0, 0, 9.03},
    {16, 512, 768, 0, 0, 1, 11.31},
    {16, 512, 768, 0, 4095, 0, 9.79},
    {16, 64, 1024, 0, 0, 0, 15.57},
    {16, 64, 1024, 0, 0, 1, 16.68},
    {16, 64, 1024, 0, 4095, 0, 16.84},
    {16, 64, 128, 0, 0, 0, 19.55},
    {16, 64, 128, 0, 0, 1, 21.16},
    {16, 64, 128, 0, 4095, 0, 21.18},
    {16, 64, 512, 0, 0, 0, 17.67},
    {16, 64, 512, 0, 0, 1, 15.03},
    {16, 64, 512, 0, 4095, 0, 18.82},
};
enum { NROWS = sizeof rows / sizeof rows[0] };

#define MAX_METHODS 24

#define L1_EVICT_BYTES (64 << 10)   /* 2x a 32 KiB L1d: one sweep evicts it all */

static unsigned char *evict_buf;
static volatile unsigned evict_sink;

static inline void evict_l1(void)
{
    unsigned s = 0;
    for (size_t i = 0; i < L1_EVICT_BYTES; i += 64)
        s += evict_buf[i];
    evict_sink = s;
}

static double tsc_per_ns;

static void calibrate_tsc(void)
{
    double t0 = lab_now_ns();
    uint64_t c0 = lab_rdtsc();
    while (lab_now_ns() - t0 < 20e6)
        ;
    tsc_per_ns = (double)(lab_rdtsc() - c0) / (lab_now_ns() - t0);
}

/* A row's calls: sizes and offsets from buf (hot: the drawn page offsets
 * into one small buffer; cold: each call on a random page of the working
 * set's arena, at the drawn offset in that page). */
typedef struct {
    unsigned char *buf;
    const uint32_t *sizes;
    const uint32_t *offs;     /* windows x count (lab_arena_windows; hot: 1) */
    size_t count, warm, windows, next;
    int clear_l1;
} row_data;

/* One pass over the sizes (the warm-up: the first `warm` of them), placed
 * as the next window says; ns per call.  With L1 cleared, each call is
 * timed on its own, so the eviction stays out of the figure. */
static double pass(const lab_method *m, void *arg, int warm)
{
    row_data *d = arg;
    memset_method_fn fn = (memset_method_fn)m->fn;
    size_t count = warm ? d->warm : d->count;
    const uint32_t *offs = d->offs + d->next++ % d->windows * d->count;
    if (d->clear_l1) {
        uint64_t cycles = 0;
        for (size_t i = 0; i < count; i++) {
            evict_l1();
            uint64_t c0 = lab_rdtsc();
            fn(d->buf + offs[i], 0, d->sizes[i]);
            __asm__ volatile("mfence" ::: "memory");
            cycles += lab_rdtsc() - c0;
        }
        lab_escape(d->buf);
        return (double)cycles / tsc_per_ns / (double)count;
    }
    double t0 = lab_now_ns();
    for (size_t i = 0; i < count; i++)
        fn(d->buf + offs[i], 0, d->sizes[i]);
    lab_escape(d->buf);
    return (lab_now_ns() - t0) / (double)count;
}

static void row_label(const matrix_row *r, char *buf, size_t len)
{
    snprintf(buf, len, "gran:%u_minSize:%zu_maxSize:%zu_minOffset:%u_maxOffset:%u_clearL1:%s",
             r->gran, r->min, r->max, r->off_min, r->off_max, r->clear_l1 ? "yes" : "no");
}

/* The row in a verdict's words. */
static void row_words(const matrix_row *r, char *buf, size_t len)
{
    snprintf(buf, len, "%zu..%zu B step %u, offsets %u..%u%s", r->min, r->max, r->gran,
             r->off_min, r->off_max, r->clear_l1 ? ", L1 cleared" : "");
}

static double pct_faster(double ref, double t) { return (ref - t) / ref * 100.0; }

/* Speeds over the rows: geometric mean, lowest and highest, and the row of
 * the lowest. */
typedef struct {
    double log_sum, worst, best;
    size_t n, worst_row;
} speed_tally;

static void tally_add(speed_tally *t, double speed, size_t row)
{
    if (!t->n || speed < t->worst) {
        t->worst = speed;
        t->worst_row = row;
    }
    if (!t->n || speed > t->best)
        t->best = speed;
    t->log_sum += log(speed);
    t->n++;
}

static double tally_geomean(const speed_tally *t) { return exp(t->log_sum / (double)t->n); }

static const lab_arg args[] = {
    {"sizes", LAB_INT, "50000", NULL, "random sizes per row (fewer: a predictor may learn them)",
     100, 10000000},
    {"reps", LAB_INT, "5", "3", "passes per method, per process", 2, 1000},
    {"rows", LAB_TEXT, NULL, NULL, "only the rows whose label contains this text", 0, 0},
    {"step", LAB_INT, "1", "8", "every step-th row of the matrix", 1, NROWS},
    LAB_WS_ARGS("hot,dram", "hot,dram"),
};

/* Whether row ri runs: every step-th row, its label holding only (NULL:
 * any).  Its label into label. */
static int row_selected(size_t ri, size_t step, const char *only, char *label, size_t len)
{
    row_label(&rows[ri], label, len);
    return ri % step == 0 && (!only || strstr(label, only));
}

/* rows= and step= leave a row to run: said before any process starts */
static int check(lab_ctx *ctx)
{
    const char *only = lab_text(ctx, "rows");
    char label[160], shown[160];
    for (size_t ri = 0; ri < NROWS; ri++)
        if (row_selected(ri, (size_t)lab_int(ctx, "step"), only, label, sizeof label))
            return 0;
    fprintf(stderr, "error: memset-random: no row matches rows=%s (with step=%lld)\n",
            lab_printable(only, shown, sizeof shown), lab_int(ctx, "step"));
    return 2;
}

#define HOT_BYTES 4096   /* hot: one buffer, the calls' starts within its first page */

/* mk_memset against glibc over the rows of one working set. */
typedef struct {
    speed_tally paired, seed_stat;
    size_t rows, slower, faster;
    double new_old_sum, seed_sum;
    lab_ranking *rk;
} level_tally;

static void level_verdicts(lab_ctx *ctx, const level_tally *t, const lab_ws *w)
{
    if (!t->rows)
        return;
    char label[160], seed_label[160], where[256];
    row_words(&rows[t->paired.worst_row], label, sizeof label);
    row_words(&rows[t->seed_stat.worst_row], seed_label, sizeof seed_label);
    lab_ws_words(w, where, sizeof where);
    lab_verdict(ctx, "%s: mk_memset (%s) vs glibc over %zu rows, median of the paired per-round "
                     "speed-ups: geometric mean %.3fx, worst row %.3fx (%s); faster beyond the "
                     "noise in %zu rows, slower in %zu, too noisy to tell in %zu; with the "
                     "seed's statistic: %.3fx, worst row %.3fx (%s)",
                where, mk_selected_variant(MK_OP_MEMSET), t->rows, tally_geomean(&t->paired),
                t->paired.worst, label, t->faster, t->slower, t->rows - t->faster - t->slower,
                tally_geomean(&t->seed_stat), t->seed_stat.worst, seed_label);
    if (!w->bytes)   /* the seed measured in cache */
        lab_verdict(ctx, "the seed's new design (sse2 variant) vs the old NT memset: mean %+.1f%% "
                         "here (ws=%s), %+.1f%% published on Broadwell",
                    t->new_old_sum / (double)t->rows, w->name, t->seed_sum / (double)t->rows);
}

/* Where a row's calls land: their offsets (room grown for the windows of
 * the cold working sets), the generator that picks their pages, the hot
 * buffer. */
typedef struct {
    uint32_t *offs;
    size_t room;
    uint64_t rng;
    unsigned char *hot;
} call_sites;

/* The calls of d (their sizes, page_offs their offsets in a page) placed
 * for working set w: on random pages of its arena, as many windows of them
 * as its size needs, or in the hot buffer; its params into ws_params.
 * 0, or -1 out of memory. */
static int place_calls(call_sites *cs, const lab_ws *w, lab_arena *arena,
                       const uint16_t *page_offs, row_data *d, char *ws_params, size_t len)
{
    size_t nsizes = d->count;
    if (!w->bytes) {
        for (size_t i = 0; i < nsizes; i++)
            cs->offs[i] = page_offs[i];
        d->windows = 1;
        d->buf = cs->hot;
        lab_ws_params(w, HOT_BYTES, lab_pages_of(cs->hot, HOT_BYTES), ws_params, len);
        return 0;
    }
    size_t touched = 0;
    for (size_t i = 0; i < nsizes; i++)
        touched += lab_lines_touched(d->sizes[i], page_offs[i] & 63);
    d->windows = lab_arena_windows(arena, 1, touched);
    if (d->windows * nsizes > cs->room) {
        cs->room = d->windows * nsizes;
        d->offs = cs->offs = realloc(cs->offs, cs->room * sizeof *cs->offs);
    }
    if (!cs->offs)
        return -1;
    for (size_t i = 0; i < d->windows * nsizes; i++)
        cs->offs[i] = (uint32_t)lab_arena_place(arena, 0, 4096, page_offs[i % nsizes], 0,
                                                d->sizes[i % nsizes], &cs->rng);
    d->buf = (unsigned char *)arena->base;
    lab_ws_params(w, w->bytes, arena->pages, ws_params, len);
    return 0;
}

/* The grid: every row of the matrix (step=, rows=) at every working set,
 * point i being row i / nws at working set i % nws; the same calls at
 * every working set of a row. */
typedef struct {
    size_t nsizes, step;
    unsigned reps;
    const char *only;
    lab_ws ws[LAB_WS_MAX];
    lab_arena arenas[LAB_WS_MAX];
    size_t nws;
    lab_method methods[MAX_METHODS];
    unsigned char skip[MAX_METHODS];
    size_t nm;
    int i_mk, i_new, i_old, i_same;
    uint32_t *sizes;
    uint16_t *page_offs;
    call_sites sites;
    row_data d;
    level_tally tallies[LAB_WS_MAX];
    speed_tally same_code;   /* the dispatched variant under its two names */
    char params[384], words[128];
    lab_record tmpl;
} random_grid;

/* The memory and the methods every point shares.  0, or 2 out of memory. */
static int setup(lab_ctx *ctx, random_grid *g)
{
    g->nsizes = (size_t)lab_int(ctx, "sizes");
    g->step = (size_t)lab_int(ctx, "step");
    g->reps = (unsigned)lab_int(ctx, "reps");
    g->only = lab_text(ctx, "rows");
    g->nws = (size_t)lab_ws_arg(ctx, g->ws);
    g->nm = lab_memset_contestants(ctx, g->methods, MAX_METHODS, g->skip);
    g->i_mk = memset_method_index("mk_memset");
    g->i_new = memset_method_index("sse2");
    g->i_old = memset_method_index("old_nt");
    g->i_same = memset_method_index(mk_selected_variant(MK_OP_MEMSET));
    g->sizes = malloc(g->nsizes * sizeof *g->sizes);
    g->page_offs = malloc(g->nsizes * sizeof *g->page_offs);
    g->sites = (call_sites){malloc(g->nsizes * sizeof(uint32_t)), g->nsizes, 0x706c616365ull,
                            lab_alloc(HOT_BYTES + 4096 + 64)};
    lab_ws_arenas_new(ctx, g->ws, g->nws, g->arenas, 1, 4096);   /* the largest call: 4 KiB */
    g->d = (row_data){NULL, g->sizes, g->sites.offs, g->nsizes,
                      g->nsizes < 5000 ? g->nsizes : 5000, 1, 0, 0};
    evict_buf = lab_alloc(L1_EVICT_BYTES);
    calibrate_tsc();
    for (size_t w = 0; w < g->nws; w++) {
        char what[256];
        snprintf(what, sizeof what, "memset, random sizes, ws=%s", g->ws[w].name);
        g->tallies[w] = (level_tally){.rk = lab_ranking_new(what, 0, 0)};
    }
    if (!g->sizes || !g->page_offs || !g->sites.offs) {
        fprintf(stderr, "error: out of memory\n");
        return 2;
    }
    return 0;
}

static void print_header(lab_ctx *ctx, const random_grid *g)
{
    printf("memset-random: %zu random sizes per row (%s), %u passes per method x %u "
           "processes, zero fill; %% = time saved against glibc (positive: faster); ws: the "
           "working set (hot: one buffer; else random pages of an arena of that size)\n",
           g->nsizes, lab_learnable_words(g->nsizes),
           g->reps, ctx->nprocesses);
    printf("%4s %5s %5s %4s %4s %3s %-5s |", "gran", "min", "max", "offl", "offh", "L1", "ws");
    for (size_t m = 1; m < g->nm; m++)
        printf(" %9.9s", g->methods[m].name);
    printf(" | %9s %9s\n", "new/old", "seed");
}

/* A row's calls, the same at every working set: its sizes and offsets. */
static void draw_calls(random_grid *g, size_t ri)
{
    const matrix_row *r = &rows[ri];
    uint64_t seed = 0x6d656d7365740000ull + ri;
    size_t steps = (r->max - r->min) / r->gran + 1;
    for (size_t i = 0; i < g->nsizes; i++) {
        g->sizes[i] = (uint32_t)(r->min + r->gran * (lab_rand(&seed) % steps));
        g->page_offs[i] = (uint16_t)(r->off_min + lab_rand(&seed) % (r->off_max - r->off_min + 1));
    }
    g->d.clear_l1 = r->clear_l1;
}

static int declare(lab_ctx *ctx, void *state, size_t i, lab_point *p, char *what, size_t len)
{
    (void)ctx;
    random_grid *g = state;
    size_t ri = i / g->nws, w = i % g->nws;
    const matrix_row *r = &rows[ri];
    char label[160], ws_params[96];
    if (!row_selected(ri, g->step, g->only, label, sizeof label))
        return LAB_POINT_SKIP;
    if (w == 0)
        draw_calls(g, ri);
    snprintf(what, len, "%s ws=%s", label, g->ws[w].name);
    if (place_calls(&g->sites, &g->ws[w], &g->arenas[w], g->page_offs, &g->d, ws_params,
                    sizeof ws_params)) {
        fprintf(stderr, "error: out of memory\n");
        return LAB_POINT_ERROR;
    }
    snprintf(g->params, sizeof g->params,
             "\"granularity\":%u,\"min_size\":%zu,\"max_size\":%zu,\"min_offset\":%u,"
             "\"max_offset\":%u,\"clear_l1\":%s,\"sizes\":%zu%s",
             r->gran, r->min, r->max, r->off_min, r->off_max, r->clear_l1 ? "true" : "false",
             g->nsizes, ws_params);
    g->tmpl = (lab_record){.params_json = g->params, .metric = "ns_per_call", .unit = "ns",
                           .stat = "mean_fastest_10pct"};
    row_words(r, g->words, sizeof g->words);
    *p = (lab_point){.methods = g->methods, .n = g->nm, .rounds = g->reps, .pass = pass,
                     .arg = &g->d, .tmpl = &g->tmpl, .baseline = 0 /* glibc */,
                     .ranking = g->tallies[w].rk, .label = g->words, .memkit = (size_t)g->i_mk,
                     .unranked = g->skip};
    return LAB_POINT_RUN;
}

/* paired: median of the per-round speed-ups (the comparison DESIGN.md asks
 * for); seed: the seed's statistic, each method's own fastest 10%, which on
 * rows of 1-cycle calls picks whichever method had one lucky pass;
 * same_code: the dispatched variant under its two names, mk_memset and its
 * own, timed as two methods: what the experiment cannot resolve. */
static void tally_point(random_grid *g, size_t ri, level_tally *t, const lab_summary *sums,
                        double new_old)
{
    const lab_summary *mk = &sums[g->i_mk];
    tally_add(&t->paired, mk->ratio, ri);
    int j = lab_judge(mk->ratio_lo, mk->ratio_hi);
    t->faster += j > 0;
    t->slower += j < 0;
    tally_add(&t->seed_stat, sums[0].value / mk->value, ri);
    if (g->i_same >= 0) {
        size_t n = sums[g->i_same].n < mk->n ? sums[g->i_same].n : mk->n;
        double *up = malloc(n * sizeof *up);
        lab_speedups(sums[g->i_same].samples, mk->samples, n, 0, up);
        tally_add(&g->same_code, lab_stat_value(up, n, "median", 1), ri);
        free(up);
    }
    t->new_old_sum += new_old;
    t->seed_sum += rows[ri].seed_pct;
    t->rows++;
}

/* A measured point: its row of the table, its tallies. */
static void measured(lab_ctx *ctx, void *state, size_t i, const lab_point *p,
                     const lab_summary *sums, const double *samples)
{
    (void)ctx, (void)p, (void)samples;
    random_grid *g = state;
    size_t ri = i / g->nws, w = i % g->nws;
    const matrix_row *r = &rows[ri];
    printf("%4u %5zu %5zu %4u %4u %3s %-5s |", r->gran, r->min, r->max, r->off_min, r->off_max,
           r->clear_l1 ? "yes" : "no", g->ws[w].name);
    for (size_t m = 1; m < g->nm; m++)
        printf(" %+8.1f%%", pct_faster(sums[0].value, sums[m].value));
    double new_old = g->i_new >= 0 && g->i_old >= 0
                         ? pct_faster(sums[g->i_old].value, sums[g->i_new].value)
                         : NAN;
    printf(" | %+8.1f%% %+8.2f%%\n", new_old, r->seed_pct);
    fflush(stdout);
    tally_point(g, ri, &g->tallies[w], sums, new_old);
}

/* Per working set, mk_memset against glibc over the rows; the experiment's
 * resolution; the rankings. */
static void verdicts(lab_ctx *ctx, random_grid *g)
{
    for (size_t w = 0; w < g->nws; w++)
        level_verdicts(ctx, &g->tallies[w], &g->ws[w]);
    if (g->same_code.n)
        lab_verdict(ctx, "resolution: the same code timed as two methods (mk_memset and %s) "
                         "measured %.3fx..%.3fx across the rows",
                    mk_selected_variant(MK_OP_MEMSET), g->same_code.worst, g->same_code.best);
    for (size_t w = 0; w < g->nws; w++)
        lab_ranking_verdicts(ctx, g->tallies[w].rk);
}

static void release(random_grid *g)
{
    lab_ws_arenas_free(g->arenas, g->nws);
    free(g->sizes);
    free(g->page_offs);
    free(g->sites.offs);
}

static int run(lab_ctx *ctx)
{
    static random_grid g;
    if (setup(ctx, &g))
        return 2;
    print_header(ctx, &g);
    lab_grid grid = {.npoints = NROWS * g.nws, .max_methods = g.nm, .max_rounds = g.reps,
                     .declare = declare, .measured = measured};
    long measured_points = lab_sweep(ctx, &grid, &g);
    if (measured_points == 0)
        fprintf(stderr, "error: no row matches '%s'\n", g.only ? g.only : "");
    if (measured_points > 0)
        verdicts(ctx, &g);
    release(&g);
    return measured_points > 0 ? 0 : 2;
}

int main(int argc, char **argv)
{
    static const lab_info info = {
        .name = "memset-random", .seed = "msrc-faster-amd64-memset",
        .description = "the MSRC random-size matrix: 50,000 random sizes per row, every memset "
                       "method interleaved, % improvement over glibc per row, new vs old NT "
                       "memset beside the seed",
        .args = args, .nargs = sizeof args / sizeof args[0],
        /* 2 processes: its 24 rows with L1 cleared cost ~40 s per process */
        .processes = 2, .quick_processes = 2, .check = check, .pinned = 1,
        .peer_ops = LAB_PEER_OP(LAB_PEER_MEMSET), .races_glibc = 1};
    return lab_main(argc, argv, &info, run);
}
