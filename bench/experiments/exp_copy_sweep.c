/* SPDX-License-Identifier: Apache-2.0 */
/* copy-sweep: every copier of the lab (lab_copiers(): memkit's plus the seed's)
 * copying 32 B .. 64 MiB, in GB/s; and, as its own series, each unaligned
 * copier with the destination misaligned by 1..63 bytes against a
 * page-aligned source, as a multiple of its aligned time.
 *
 * Seed: going-faster-than-memcpy (Shadesmar's copier benchmark).  The
 * misaligned series is the AMD rep movsb case: on Zen 3/4 a `rep movsb`
 * whose destination is a few bytes off an aligned source runs at a fraction
 * of its aligned speed, and a memcpy that uses it for mid sizes inherits
 * the cliff.
 *
 * A third table times small copies whose source and destination end right
 * at an unmapped page, against the same copies mid-page: a masked vector
 * access whose masked-off bytes reach an unmapped page is slow on Zen 4
 * (1-2 us, docs/strategy.md), which is what memkit's page test before its
 * masked path is for, and what a peer without one pays at the end of every
 * mapping followed by a guard page.
 *
 * Method: per size, the lab's interleaved rounds (shuffled order, a
 * warm-up batch before each timed one) in which every copier copies the
 * same buffers (page-aligned, so every copier's contract holds when n is a
 * multiple of its alignment; other sizes print "-") enough times for
 * BATCH_BYTES; GB/s = median over rounds, speed-up over libc per round.
 * One size per batch, so the branch predictor is trained (copies of random
 * sizes: size-distributions).  Misaligned: per copier and offset, rounds of
 * (aligned, misaligned) pairs; the per-pair speed-up's median (< 1: the
 * misaligned copy is slower).  The worst of 63 noisy medians is biased upward (a
 * neighbour's burst lands on some offset: at 4 KiB every offset measures
 * 1.37-1.41x, yet the largest of 63 read 1.45-1.54x), so the few worst
 * offsets are measured again with fresh rounds and the worst of those
 * confirmations is reported; an offset that is really slow stays slow.
 *
 * Peers (peer=LIB.so) race with their own memcpy like the unaligned copiers,
 * in both tables.  Arguments: see --help. */
#include "copy_methods.h"
#include "lab.h"
#include "sweep.h"
#include "memkit.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define BATCH_BYTES ((size_t)8 << 20)
#define MAX_COPIERS 32
#define CONFIRMED_OFFSETS 3   /* worst screening offsets measured again */

#define CLIFF 2.0   /* a misaligned destination (or a page's end) this many times slower: a cliff */

static int check_only(const char *v, char *err, size_t len)
{
    return lab_copier_list_check(v, 0, NULL, err, len);
}

static int check_offsets(const char *v, char *err, size_t len)
{
    return lab_one_of(v, "all|few", err, len);
}

static int check(lab_ctx *ctx) { return lab_check_order(ctx, "min", "max"); }

static const lab_arg args[] = {
    {"min", LAB_SIZE, "32", NULL, "smallest size", 1, 17179869184.0},
    {"max", LAB_SIZE, "64M", "4M", "largest size", 1, 17179869184.0},
    {"only", LAB_TEXT, NULL, NULL, "only these copiers (COPIER,COPIER...)", 0, 0, check_only},
    {"offsets", LAB_TEXT, "all", "few", "misaligned destinations: all (1..63) or few", 0, 0,
     check_offsets},
};

typedef struct {
    size_t min, max;
    const char *only;
    int all_offsets;
} options;

/* The arguments, checked before the run (args[], check). */
static void get_options(lab_ctx *ctx, options *o)
{
    *o = (options){lab_size(ctx, "min"), lab_size(ctx, "max"), lab_text(ctx, "only"),
                   !strcmp(lab_text(ctx, "offsets"), "all")};
}

/* The contestants are methods: a copier (data: its mk_copier) or a peer's
 * memcpy (peer=LIB.so; fn, any alignment). */
typedef void *(*memcpy_fn)(void *, const void *, size_t);

static size_t align_of(const lab_method *m)
{
    return m->data ? ((const mk_copier *)m->data)->align : 1;
}

/* A peer's copy in a copier's clothes: what the libc and memkit copiers do
 * around their memcpy (a call, the contract's overlap check, a call through
 * a pointer), so that at 32 B the peer is not timed without the wrapper
 * every copier pays. */
__attribute__((noinline)) static int peer_copy_in(memcpy_fn copy, void *dst, const void *src,
                                                  size_t n)
{
    uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
    if (d - s < n || s - d < n)
        return EINVAL;
    copy(dst, src, n);
    return 0;
}

/* One timed batch: reps copies of n bytes; ns per copy. */
static double batch(const lab_method *m, char *dst, const char *src, size_t n, size_t reps)
{
    const mk_copier *c = m->data;
    memcpy_fn copy = (memcpy_fn)m->fn;
    double t0 = lab_now_ns();
    if (c)
        for (size_t r = 0; r < reps; r++) {
            c->copy_in(dst, src, n);
            lab_escape(dst);
        }
    else
        for (size_t r = 0; r < reps; r++) {
            peer_copy_in(copy, dst, src, n);
            lab_escape(dst);
        }
    return (lab_now_ns() - t0) / (double)reps;
}

/* A copier's case against itself in the usual case, as the series "NAME
 * case" (GB/s per round, paired with the usual case's rounds); its summary. */
static lab_summary emit_against_itself(lab_ctx *ctx, const lab_method *m, const char *what,
                                       const char *params, double *gbps, const char *base_params,
                                       double *base_gbps, size_t rounds)
{
    char series[64];
    snprintf(series, sizeof series, "%s %s", m->name, what);
    lab_record r = {.series = series, .params_json = params, .axis = "size", .axis_unit = "B",
                    .metric = "gb_per_s", .unit = "GB/s", .higher_is_better = 1,
                    .samples = gbps, .n = rounds, .baseline = m->name,
                    .baseline_params_json = base_params, .baseline_samples = base_gbps};
    return lab_record_emit(ctx, &r);
}

/* Rounds of (aligned, dst + k) pairs: the misaligned copy's speed-ups
 * (< 1: slower) and, per round, both throughputs. */
static lab_stats offset_speedup(const lab_method *m, char *dst, const char *src, size_t n, int k,
                                size_t rounds, size_t reps, double *off_gbps, double *al_gbps)
{
    double up[64];
    batch(m, dst + k, src, n, 1);
    for (size_t r = 0; r < rounds; r++) {
        al_gbps[r] = (double)n / batch(m, dst, src, n, reps);
        off_gbps[r] = (double)n / batch(m, dst + k, src, n, reps);
    }
    lab_speedups(off_gbps, al_gbps, rounds, 1, up);
    return lab_stats_of(up, rounds);
}

/* The offsets with the `want` lowest screening speed-ups, worst first
 * (each pick's median is overwritten so the next pick skips it). */
static size_t worst_offsets(double *median_of, const int *offsets, size_t noff, int *out,
                            size_t want)
{
    size_t got = 0;
    for (; got < want && got < noff; got++) {
        size_t worst = 0;
        for (size_t i = 1; i < noff; i++)
            if (median_of[i] < median_of[worst])
                worst = i;
        out[got] = offsets[worst];
        median_of[worst] = INFINITY;
    }
    return got;
}

static size_t reps_for(size_t n) { return n >= BATCH_BYTES ? 1 : BATCH_BYTES / n; }
/* The grid: min, then each size twice the last (--quick: 8 times), to max. */
static size_t next_size(lab_ctx *ctx, size_t n) { return n * (ctx->quick ? 8 : 2); }
static size_t rounds_for(lab_ctx *ctx, size_t n)
{
    if (n >= ((size_t)16 << 20))
        return ctx->quick ? 3 : 5;
    return ctx->quick ? 5 : 11;
}

/* Screening rounds per misaligned offset: 3 from 16 MiB (63 offsets of
 * slow copies); below 1 MiB, where a copy takes microseconds, twice the
 * usual rounds cost little and halve the screening's spread. */
static size_t misaligned_rounds(lab_ctx *ctx, size_t n)
{
    if (n >= ((size_t)16 << 20))
        return 3;
    return n < ((size_t)1 << 20) && !ctx->quick ? 2 * rounds_for(ctx, n) : rounds_for(ctx, n);
}

typedef struct {
    char *dst;
    const char *src;
    size_t n, reps;
} sweep_point;

/* One batch of a copier (the warm-up: an eighth of it); GB/s. */
static double pass(const lab_method *m, void *arg, int warm)
{
    const sweep_point *p = arg;
    size_t reps = warm ? p->reps / 8 + 1 : p->reps;
    return (double)p->n / batch(m, p->dst, p->src, p->n, reps);
}

/* The contestants: the copiers only= names and the peers' memcpy; each
 * copier with an alignment carries its contract (its text in contract_text).
 * Whether any has one, in *restricted. */
static size_t contestants(lab_ctx *ctx, const options *o, lab_method *cs,
                          char (*contract_text)[80], int *restricted)
{
    size_t nc = lab_copier_methods(o->only, NULL, cs, MAX_COPIERS);
    nc = lab_peer_methods(ctx, LAB_PEER_MEMCPY, "", 0, cs, nc, MAX_COPIERS);
    *restricted = 0;
    for (size_t c = 0; c < nc; c++)
        if (align_of(&cs[c]) > 1) {
            snprintf(contract_text[c], sizeof contract_text[c],
                     "buffers aligned to %zu B, sizes a multiple of it", align_of(&cs[c]));
            cs[c].contract = contract_text[c];
            *restricted = 1;
        }
    return nc;
}

static int fits(const lab_method *m, size_t n) { return n % align_of(m) == 0; }

static int column_width(const lab_method *m)
{
    return (int)(strlen(m->name) > 9 ? strlen(m->name) : 9);
}

/* The aligned table's grid (the seed's): per size, the copiers whose
 * contract holds race, libc the baseline, and the point is ranked. */
typedef struct {
    const lab_method *cs;
    size_t nc, at[MAX_COPIERS];    /* at: each copier's place at this point */
    lab_method ms[MAX_COPIERS];
    unsigned char unranked[MAX_COPIERS];
    sweep_point pt;
    lab_record tmpl;
    char label[32], params[96];
    lab_ranking *rk;
} aligned_grid;

static int aligned_point(lab_ctx *ctx, void *state, size_t i, lab_point *p, char *what, size_t len)
{
    aligned_grid *g = state;
    size_t n = g->pt.n = i ? next_size(ctx, g->pt.n) : g->pt.n;
    (void)what, (void)len;
    size_t nm = lab_methods_at(g->cs, g->nc, n, fits, g->ms, g->at, g->unranked);
    g->pt.reps = reps_for(n);
    snprintf(g->params, sizeof g->params, "\"size\":%zu,\"dst_offset\":0", n);
    g->tmpl = (lab_record){.params_json = g->params, .axis = "size", .axis_unit = "B",
                           .metric = "gb_per_s", .unit = "GB/s", .higher_is_better = 1};
    *p = (lab_point){.methods = g->ms, .n = nm, .rounds = rounds_for(ctx, n), .pass = pass,
                     .arg = &g->pt, .tmpl = &g->tmpl, .baseline = lab_glibc_index(g->ms, nm),
                     .ranking = g->rk, .label = lab_fmt_size(n, g->label, sizeof g->label),
                     .memkit = lab_method_index(g->ms, nm, "memkit"), .unranked = g->unranked};
    return LAB_POINT_RUN;
}

static void aligned_row(lab_ctx *ctx, void *state, size_t i, const lab_point *p,
                        const lab_summary *sums, const double *samples)
{
    (void)ctx, (void)i, (void)samples;
    const aligned_grid *g = state;
    printf("%10s", p->label);
    for (size_t c = 0; c < g->nc; c++) {
        if (g->at[c] == SIZE_MAX)
            printf(" %*s", column_width(&g->cs[c]), "-");
        else
            printf(" %*.2f", column_width(&g->cs[c]), sums[g->at[c]].value);
    }
    if (p->baseline != SIZE_MAX && sums[p->baseline].tuned)
        printf(" %11.2f", sums[p->baseline].tuned->value);
    printf("\n");
    fflush(stdout);
}

static void aligned_sweep(lab_ctx *ctx, const options *o, const lab_method *cs, size_t nc,
                          char *dst, const char *src, size_t nsizes, lab_ranking *rk)
{
    printf("copy throughput, GB/s (median of interleaved rounds, one size per batch: a trained "
           "predictor; '-': size not a multiple of the copier's alignment)\n%10s", "size");
    for (size_t c = 0; c < nc; c++)
        printf(" %*s", column_width(&cs[c]), cs[c].name);
    if (ctx->ntuned)   /* in processes of its own: libc there, under glibc_tunables= */
        printf(" %11s", LAB_GLIBC_TUNED);
    printf("\n");
    static aligned_grid g;
    g = (aligned_grid){.cs = cs, .nc = nc, .pt = {dst, src, o->min, 0}, .rk = rk};
    lab_grid grid = {.npoints = nsizes, .max_methods = MAX_COPIERS, .max_rounds = 64,
                     .declare = aligned_point, .measured = aligned_row};
    lab_sweep(ctx, &grid, &g);
}

/* A copier's worst misaligned destination at n bytes: every offset screened,
 * the worst few confirmed with three times the rounds (a confirmation's
 * median must not be as noisy as the screening it corrects); its record's
 * summary, the offset in *worst_k. */
static lab_summary worst_offset(lab_ctx *ctx, const options *o, const lab_method *m, char *dst,
                                const char *src, size_t n, int *worst_k)
{
    static const int few[] = {1, 3, 8, 17, 32, 63};
    size_t rounds = misaligned_rounds(ctx, n), reps = reps_for(n);
    double off_gbps[64], al_gbps[64], worst_off[64], worst_al[64], median_of[63];
    double worst_up = INFINITY;
    int offsets[63], confirm[CONFIRMED_OFFSETS];
    size_t noff = o->all_offsets ? 63 : sizeof few / sizeof few[0];
    *worst_k = 1;
    for (size_t i = 0; i < noff; i++) {
        offsets[i] = o->all_offsets ? (int)i + 1 : few[i];
        median_of[i] = offset_speedup(m, dst, src, n, offsets[i], rounds, reps, off_gbps,
                                      al_gbps).median;
    }
    size_t nconfirm = worst_offsets(median_of, offsets, noff, confirm, CONFIRMED_OFFSETS),
           confirm_rounds = 3 * rounds < 63 ? 3 * rounds : 63;
    for (size_t i = 0; i < nconfirm; i++) {
        lab_stats up = offset_speedup(m, dst, src, n, confirm[i], confirm_rounds, reps, off_gbps,
                                      al_gbps);
        if (up.median < worst_up) {
            *worst_k = confirm[i], worst_up = up.median;
            memcpy(worst_off, off_gbps, confirm_rounds * sizeof *worst_off);
            memcpy(worst_al, al_gbps, confirm_rounds * sizeof *worst_al);
        }
    }
    char params[96], base_params[96];
    snprintf(params, sizeof params, "\"size\":%zu,\"dst_offset\":%d", n, *worst_k);
    snprintf(base_params, sizeof base_params, "\"size\":%zu,\"dst_offset\":0", n);
    return emit_against_itself(ctx, m, "misaligned-dst", params, worst_off, base_params, worst_al,
                               confirm_rounds);
}

/* The misaligned table: each unaligned copier's worst offset per size; the
 * slowest of 4 KiB .. 1 MiB per copier kept in worst_of (at worst_size). */
static void misaligned_sweep(lab_ctx *ctx, const options *o, const lab_method *cs, size_t nc,
                             char *dst, const char *src, size_t nsizes, lab_summary *worst_of,
                             size_t *worst_size)
{
    printf("\nmisaligned destination (source page-aligned): worst time / aligned time (> 1: "
           "slower) over dst offsets %s (the %d worst measured again)\n%10s",
           o->all_offsets ? "1..63" : "1,3,8,17,32,63", CONFIRMED_OFFSETS, "size");
    for (size_t c = 0; c < nc; c++)
        if (align_of(&cs[c]) == 1)
            printf(" %16s", cs[c].name);
    printf("\n");
    size_t done = 0;
    for (size_t n = o->min; n <= o->max; n = next_size(ctx, n), done++) {
        char sz[32];
        lab_progress(ctx, done, nsizes, "misaligned destination");
        printf("%10s", lab_fmt_size(n, sz, sizeof sz));
        for (size_t c = 0; c < nc; c++) {
            if (align_of(&cs[c]) != 1)
                continue;
            int worst_k;
            lab_summary s = worst_offset(ctx, o, &cs[c], dst, src, n, &worst_k);
            printf(" %9.2fx @%-+4d", 1 / s.ratio, worst_k);   /* the time ratio: a cliff reads big */
            if (n >= 4096 && n <= ((size_t)1 << 20) &&
                (!worst_of[c].has_ratio || s.ratio < worst_of[c].ratio)) {
                lab_summary_free(&worst_of[c]);
                worst_of[c] = s, worst_size[c] = n;
            } else
                lab_summary_free(&s);
        }
        printf("\n");
        fflush(stdout);
    }
}

/* Per unaligned copier, the verdict on its worst case (worst_of[c], at
 * worst_size[c]): "NAME: <costs> 1.40x <than> (at SIZE; speed-up
 * [lo..hi]): a cliff ..."; frees the summaries. */
static void slowdown_verdicts(lab_ctx *ctx, const lab_method *cs, size_t nc, lab_summary *worst_of,
                              const size_t *worst_size, const char *costs, const char *than)
{
    for (size_t c = 0; c < nc; c++) {
        const lab_summary *w = &worst_of[c];
        if (align_of(&cs[c]) != 1 || !w->has_ratio)
            continue;
        char sz[32], iv[80];
        double slow = 1 / w->ratio;
        int j = lab_judge(w->ratio_lo, w->ratio_hi);
        lab_verdict(ctx, "%s: %s %.2fx %s (at %s; speed-up %s)%s", cs[c].name, costs, slow, than,
                    lab_fmt_size(worst_size[c], sz, sizeof sz),
                    lab_interval_text(w->ratio_lo, w->ratio_hi, iv, sizeof iv),
                    j == 0   ? ": no slower beyond the noise"
                    : j > 0  ? ": faster"
                    : slow >= CLIFF ? ": a cliff (2x or more)"
                                    : ": slower, but no cliff (under 2x)");
        lab_summary_free(&worst_of[c]);
    }
}


/* The page-end table's sizes: the small copies a masked path takes. */
static const size_t page_end_sizes[] = {1, 8, 16, 31, 48, 64, 100};
static const size_t page_end_sizes_quick[] = {16, 48};

/* One page with an unmapped page after it, per side: copies end at the
 * boundary (at) or the same bytes' place in the line mid-page (mid). */
typedef struct {
    char *map[2];   /* the source's and the destination's two pages */
} guarded_pages;

static int guarded_pages_new(guarded_pages *g)
{
    for (int i = 0; i < 2; i++) {
        g->map[i] = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                         -1, 0);
        if (g->map[i] == MAP_FAILED || mprotect(g->map[i] + 4096, 4096, PROT_NONE))
            return -1;
        memset(g->map[i], 0x5a, 4096);
    }
    return 0;
}

static void guarded_pages_free(guarded_pages *g)
{
    for (int i = 0; i < 2; i++)
        if (g->map[i] && g->map[i] != MAP_FAILED)
            munmap(g->map[i], 2 * 4096);
}

/* Rounds of (mid-page, page-end) pairs of n-byte copies by m; the
 * page-end copy's record against the mid-page one (its speed-up < 1:
 * slower).  Few reps: a slow case takes microseconds each. */
static lab_summary page_end_point(lab_ctx *ctx, const lab_method *m, const guarded_pages *g,
                                  size_t n)
{
    size_t rounds = ctx->quick ? 5 : 11, reps = 2000;
    const char *src_end = g->map[0] + 4096 - n, *src_mid = src_end - 2048;
    char *dst_end = g->map[1] + 4096 - n, *dst_mid = dst_end - 2048;
    double at[64], mid[64];
    batch(m, dst_end, src_end, n, 1);
    for (size_t r = 0; r < rounds; r++) {
        mid[r] = (double)n / batch(m, dst_mid, src_mid, n, reps);
        at[r] = (double)n / batch(m, dst_end, src_end, n, reps);
    }
    char params[96], base_params[96];
    snprintf(params, sizeof params, "\"size\":%zu,\"at\":\"page-end\"", n);
    snprintf(base_params, sizeof base_params, "\"size\":%zu,\"at\":\"mid-page\"", n);
    return emit_against_itself(ctx, m, "page-end", params, at, base_params, mid, rounds);
}

/* The page-end table and, per unaligned copier, its worst size's verdict. */
static void page_end_sweep(lab_ctx *ctx, const lab_method *cs, size_t nc)
{
    guarded_pages g = {{NULL, NULL}};
    if (guarded_pages_new(&g)) {
        lab_verdict_kind(ctx, "note",
                         "page-end table skipped: no page could be unmapped after a buffer (%s)",
                         strerror(errno));
        guarded_pages_free(&g);
        return;
    }
    const size_t *sizes = ctx->quick ? page_end_sizes_quick : page_end_sizes;
    size_t nsizes = ctx->quick ? sizeof page_end_sizes_quick / sizeof *sizes
                               : sizeof page_end_sizes / sizeof *sizes;
    printf("\ncopies ending at an unmapped page (source and destination): time / the same copy "
           "mid-page (> 1: slower)\n%10s", "size");
    for (size_t c = 0; c < nc; c++)
        if (align_of(&cs[c]) == 1)
            printf(" %*s", column_width(&cs[c]), cs[c].name);
    printf("\n");
    lab_summary worst[MAX_COPIERS] = {0};
    size_t worst_n[MAX_COPIERS] = {0};
    for (size_t i = 0; i < nsizes; i++) {
        char sz[32];
        printf("%10s", lab_fmt_size(sizes[i], sz, sizeof sz));
        for (size_t c = 0; c < nc; c++) {
            if (align_of(&cs[c]) != 1)
                continue;
            lab_summary s = page_end_point(ctx, &cs[c], &g, sizes[i]);
            printf(" %*.2fx", column_width(&cs[c]) - 1, 1 / s.ratio);
            if (!worst[c].has_ratio || s.ratio < worst[c].ratio) {
                lab_summary_free(&worst[c]);
                worst[c] = s, worst_n[c] = sizes[i];
            } else
                lab_summary_free(&s);
        }
        printf("\n");
        fflush(stdout);
    }
    slowdown_verdicts(ctx, cs, nc, worst, worst_n,
                      "a small copy ending at an unmapped page takes at most", "its mid-page time");
    guarded_pages_free(&g);
}

static int run(lab_ctx *ctx)
{
    options o;
    get_options(ctx, &o);
    lab_method cs[MAX_COPIERS];
    char contract_text[MAX_COPIERS][80];
    int restricted;
    size_t nc = contestants(ctx, &o, cs, contract_text, &restricted);
    size_t cap = o.max + 4096;
    char *src = lab_alloc(cap), *dst = lab_alloc(cap);
    memset(src, 0x5a, cap);
    size_t nsizes = 0;
    for (size_t n = o.min; n <= o.max; n = next_size(ctx, n))
        nsizes++;

    lab_ranking *rk = lab_ranking_new("copy, aligned buffers", 1, 1);
    aligned_sweep(ctx, &o, cs, nc, dst, src, nsizes, rk);
    if (restricted)
        printf("copiers with an alignment need aligned buffers and whole blocks and run their loop "
               "inline: ranked against memkit from %d KiB up\n", LAB_CONTRACT_RANKED_FROM >> 10);
    lab_summary worst_of[MAX_COPIERS] = {0};   /* the slowest, 4 KiB .. 1 MiB */
    size_t worst_size[MAX_COPIERS] = {0};
    misaligned_sweep(ctx, &o, cs, nc, dst, src, nsizes, worst_of, worst_size);
    lab_progress(ctx, nsizes, nsizes, "done");
    slowdown_verdicts(ctx, cs, nc, worst_of, worst_size, "a misaligned destination costs at most",
                      "the aligned time for 4 KiB..1 MiB");
    page_end_sweep(ctx, cs, nc);
    lab_ranking_verdicts(ctx, rk);
    lab_free(src, cap);
    lab_free(dst, cap);
    return 0;
}

int main(int argc, char **argv)
{
    static const lab_info info = {
        .name = "copy-sweep", .seed = "going-faster-than-memcpy",
        .description = "every copier 32 B..64 MiB in GB/s, the misaligned-destination slowdown, "
                       "and small copies ending at an unmapped page",
        .args = args, .nargs = sizeof args / sizeof args[0], .check = check, .pinned = 1,
        .peer_ops = LAB_PEER_OP(LAB_PEER_MEMCPY), .races_glibc = 1};
    return lab_main(argc, argv, &info, run);
}
