/* copy-sweep: every copier (mk_copiers(), the seed's methods plus memkit's)
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
 * Method: per size, rounds in which every copier copies the same buffers
 * (page-aligned, so every copier's contract holds when n is a multiple of
 * its alignment; other sizes print "-") enough times for BATCH_BYTES,
 * interleaved A B C ... A B C; GB/s = median over rounds.  Misaligned: per
 * copier and offset, rounds of (aligned, misaligned) pairs; the per-pair
 * time ratio's median.  The worst of 63 noisy medians is biased upward (a
 * neighbour's burst lands on some offset: at 4 KiB every offset measures
 * 1.37-1.41x, yet the largest of 63 read 1.45-1.54x), so the few worst
 * offsets are measured again with fresh rounds and the worst of those
 * confirmations is reported; an offset that is really slow stays slow.
 *
 * Arguments: min=SIZE max=SIZE only=COPIER[,COPIER...] offsets=all|few. */
#include "lab.h"
#include "memkit.h"

#include <stdlib.h>
#include <string.h>

#define BATCH_BYTES ((size_t)8 << 20)
#define MAX_COPIERS 32
#define CONFIRMED_OFFSETS 3   /* worst screening offsets measured again */

typedef struct {
    size_t min, max;
    const char *only;
    int all_offsets;
} options;

static int parse_options(lab_ctx *ctx, options *o)
{
    *o = (options){32, (size_t)64 << 20, NULL, !ctx->quick};
    if (ctx->quick)
        o->max = (size_t)4 << 20;
    for (int i = 1; i < ctx->argc; i++) {
        const char *a = ctx->argv[i];
        if (!strncmp(a, "min=", 4))
            o->min = lab_parse_size(a + 4);
        else if (!strncmp(a, "max=", 4))
            o->max = lab_parse_size(a + 4);
        else if (!strncmp(a, "only=", 5))
            o->only = a + 5;
        else if (!strcmp(a, "offsets=all") || !strcmp(a, "offsets=few"))
            o->all_offsets = a[8] == 'a';
        else {
            fprintf(stderr, "error: unknown argument '%s' (expected min=SIZE max=SIZE "
                            "only=COPIER,... offsets=all|few)\n", a);
            return -1;
        }
    }
    if (o->min < 1 || o->min > o->max || o->max > ((size_t)1 << 34)) {
        fprintf(stderr, "error: need 1 <= min <= max <= 16G\n");
        return -1;
    }
    for (const char *p = o->only; p && *p;) {
        size_t len = strcspn(p, ",");
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)len, p);
        if (!mk_copier_find(name)) {
            fprintf(stderr, "error: no copier called '%s'\n", name);
            return -1;
        }
        p += len + (p[len] == ',');
    }
    return 0;
}

/* only=a,b,c: is name one of them? */
static int selected(const options *o, const char *name)
{
    if (!o->only)
        return 1;
    size_t len = strlen(name);
    for (const char *p = o->only; (p = strstr(p, name)); p += len)
        if ((p == o->only || p[-1] == ',') && (p[len] == ',' || p[len] == '\0'))
            return 1;
    return 0;
}

/* One timed batch: reps copies of n bytes; ns per copy. */
static double batch(const mk_copier *c, char *dst, const char *src, size_t n, size_t reps)
{
    double t0 = lab_now_ns();
    for (size_t r = 0; r < reps; r++) {
        c->copy_in(dst, src, n);
        lab_escape(dst);
    }
    return (lab_now_ns() - t0) / (double)reps;
}

/* Rounds of (aligned, dst + k) pairs; the per-pair time ratios' statistics,
 * and the misaligned times in off_ns. */
static lab_stats offset_ratio(const mk_copier *c, char *dst, const char *src, size_t n, int k,
                              size_t rounds, size_t reps, double *off_ns)
{
    double ratio[64];
    batch(c, dst + k, src, n, 1);
    for (size_t r = 0; r < rounds; r++) {
        double aligned_ns = batch(c, dst, src, n, reps);
        off_ns[r] = batch(c, dst + k, src, n, reps);
        ratio[r] = off_ns[r] / aligned_ns;
    }
    return lab_stats_of(ratio, rounds);
}

/* The offsets with the `want` largest screening medians, worst first
 * (each pick's median is overwritten so the next pick skips it). */
static size_t worst_offsets(double *median_of, const int *offsets, size_t noff, int *out,
                            size_t want)
{
    size_t got = 0;
    for (; got < want && got < noff; got++) {
        size_t best = 0;
        for (size_t i = 1; i < noff; i++)
            if (median_of[i] > median_of[best])
                best = i;
        out[got] = offsets[best];
        median_of[best] = -1;
    }
    return got;
}

static size_t reps_for(size_t n) { return n >= BATCH_BYTES ? 1 : BATCH_BYTES / n; }
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

static void emit_gbps(lab_ctx *ctx, const char *series, size_t n, int offset, double *ns,
                      size_t rounds, const char *ratio_to, lab_stats ratio)
{
    double gbps[64];
    for (size_t r = 0; r < rounds; r++)
        gbps[r] = (double)n / ns[r];
    lab_stats s = lab_stats_of(gbps, rounds);
    char params[96];
    snprintf(params, sizeof params, "\"size\":%zu,\"dst_offset\":%d", n, offset);
    lab_measurement m = {series, params, "gb_per_s", "GB/s", "median", s.median, s,
                         ratio_to, ratio.median, ratio.min, ratio.max};
    lab_emit(ctx, &m);
}

static int run(lab_ctx *ctx)
{
    options o;
    if (parse_options(ctx, &o))
        return 2;
    size_t count;
    const mk_copier *all = mk_copiers(&count);
    const mk_copier *cs[MAX_COPIERS];
    size_t nc = 0;
    for (size_t i = 0; i < count && nc < MAX_COPIERS; i++)
        if (all[i].usable && selected(&o, all[i].name))
            cs[nc++] = &all[i];

    size_t cap = o.max + 4096;
    char *src = lab_alloc(cap), *dst = lab_alloc(cap);
    memset(src, 0x5a, cap);
    size_t nsizes = 0;
    for (size_t n = o.min; n <= o.max; n *= ctx->quick ? 8 : 2)
        nsizes++;

    /* aligned throughput, the seed's table */
    printf("copy throughput, GB/s (median of interleaved rounds; '-': size not a multiple of "
           "the copier's alignment)\n%10s", "size");
    for (size_t c = 0; c < nc; c++)
        printf(" %*s", (int)(strlen(cs[c]->name) > 9 ? strlen(cs[c]->name) : 9), cs[c]->name);
    printf("\n");
    double *ns = malloc(MAX_COPIERS * 64 * sizeof *ns);
    size_t done = 0;
    for (size_t n = o.min; n <= o.max; n *= ctx->quick ? 8 : 2, done++) {
        char sz[32];
        lab_progress(ctx, done, nsizes, lab_fmt_size(n, sz, sizeof sz));
        size_t rounds = rounds_for(ctx, n), reps = reps_for(n);
        for (size_t c = 0; c < nc; c++)   /* warm-up: fault in, train */
            if (n % cs[c]->align == 0)
                batch(cs[c], dst, src, n, 1);
        for (size_t r = 0; r < rounds; r++)
            for (size_t c = 0; c < nc; c++)
                if (n % cs[c]->align == 0)
                    ns[c * 64 + r] = batch(cs[c], dst, src, n, reps);
        printf("%10s", sz);
        for (size_t c = 0; c < nc; c++) {
            int w = (int)(strlen(cs[c]->name) > 9 ? strlen(cs[c]->name) : 9);
            if (n % cs[c]->align) {
                printf(" %*s", w, "-");
                continue;
            }
            lab_stats none = {0};
            emit_gbps(ctx, cs[c]->name, n, 0, &ns[c * 64], rounds, NULL, none);
            double g[64];
            for (size_t r = 0; r < rounds; r++)
                g[r] = (double)n / ns[c * 64 + r];
            printf(" %*.2f", w, lab_stats_of(g, rounds).median);
        }
        printf("\n");
        fflush(stdout);
    }

    /* misaligned destination: each unaligned copier, worst offset per size */
    static const int few[] = {1, 3, 8, 17, 32, 63};
    printf("\nmisaligned destination (source page-aligned): worst time / aligned time over "
           "dst offsets %s (the %d worst measured again)\n%10s",
           o.all_offsets ? "1..63" : "1,3,8,17,32,63", CONFIRMED_OFFSETS, "size");
    for (size_t c = 0; c < nc; c++)
        if (cs[c]->align == 1)
            printf(" %16s", cs[c]->name);
    printf("\n");
    double worst_overall[MAX_COPIERS] = {0};
    done = 0;
    for (size_t n = o.min; n <= o.max; n *= ctx->quick ? 8 : 2, done++) {
        char sz[32];
        lab_progress(ctx, done, nsizes, "misaligned destination");
        size_t rounds = misaligned_rounds(ctx, n), reps = reps_for(n);
        printf("%10s", lab_fmt_size(n, sz, sizeof sz));
        for (size_t c = 0; c < nc; c++) {
            if (cs[c]->align != 1)
                continue;
            double off_ns[64], worst_ns[64], median_of[63];
            lab_stats worst_ratio = {0};
            int worst_k = 1, offsets[63], confirm[CONFIRMED_OFFSETS];
            size_t noff = o.all_offsets ? 63 : sizeof few / sizeof few[0];
            for (size_t i = 0; i < noff; i++) {
                offsets[i] = o.all_offsets ? (int)i + 1 : few[i];
                median_of[i] = offset_ratio(cs[c], dst, src, n, offsets[i], rounds, reps,
                                            off_ns).median;
            }
            /* three times the rounds: a confirmation's median must not be
             * as noisy as the screening it corrects */
            size_t nconfirm = worst_offsets(median_of, offsets, noff, confirm, CONFIRMED_OFFSETS),
                   confirm_rounds = 3 * rounds < 63 ? 3 * rounds : 63;
            for (size_t i = 0; i < nconfirm; i++) {
                lab_stats rs = offset_ratio(cs[c], dst, src, n, confirm[i], confirm_rounds, reps,
                                            off_ns);
                if (rs.median > worst_ratio.median) {
                    worst_k = confirm[i], worst_ratio = rs;
                    memcpy(worst_ns, off_ns, confirm_rounds * sizeof *worst_ns);
                }
            }
            char series[64], base[64];
            snprintf(series, sizeof series, "%s misaligned-dst", cs[c]->name);
            snprintf(base, sizeof base, "%s", cs[c]->name);
            /* the protocol's ratio is of the values: GB/s misaligned / aligned */
            lab_stats inv = worst_ratio;
            inv.median = 1 / worst_ratio.median;
            inv.min = 1 / worst_ratio.max;
            inv.max = 1 / worst_ratio.min;
            emit_gbps(ctx, series, n, worst_k, worst_ns, confirm_rounds, base, inv);
            double worst = worst_ratio.median;
            printf(" %9.2fx @%-+4d", worst, worst_k);
            if (n >= 4096 && n <= ((size_t)1 << 20) && worst > worst_overall[c])
                worst_overall[c] = worst;
        }
        printf("\n");
        fflush(stdout);
    }
    lab_progress(ctx, nsizes, nsizes, "done");
    for (size_t c = 0; c < nc; c++)
        if (cs[c]->align == 1 && worst_overall[c] > 0)
            lab_verdict(ctx, "%s: a misaligned destination costs at most %.2fx the aligned time "
                             "for 4 KiB..1 MiB%s", cs[c]->name, worst_overall[c],
                        worst_overall[c] > 1.5 ? " (a cliff)" : "");
    free(ns);
    lab_free(src, cap);
    lab_free(dst, cap);
    return 0;
}

int main(int argc, char **argv)
{
    static const lab_info info = {
        "copy-sweep", "going-faster-than-memcpy",
        "every copier 32 B..64 MiB in GB/s, and the misaligned-destination slowdown"};
    return lab_main(argc, argv, &info, run);
}
