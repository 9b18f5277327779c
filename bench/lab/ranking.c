/* SPDX-License-Identifier: Apache-2.0 */
/* Where memkit stands among the methods timed beside it: per range of
 * consecutive grid points, where it is slower than the fastest other
 * method beyond the noise (the ~95% interval of its paired speed-up
 * below 1/LAB_LOSS_MIN) and by how much, and which method was fastest. */
#include "lab_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TIED 8

typedef struct {
    char label[64], fastest[48], rival[48];
    int verdict;          /* memkit vs the fastest other: 1 faster, -1 slower, 0 noisy */
    double slower;        /* how many times slower memkit was (median, > 1: slower) */
    char tied[MAX_TIED][48];   /* not slower than the fastest beyond the noise */
    size_t ntied;
} point;

struct lab_ranking {
    char what[96], memkit[48];
    int higher, ordered;
    point *p;
    size_t n, cap;
};

lab_ranking *lab_ranking_new(const char *what, int higher_is_better, int ordered)
{
    lab_ranking *rk = calloc(1, sizeof *rk);
    rk->ordered = ordered;
    snprintf(rk->what, sizeof rk->what, "%s", what);
    rk->higher = higher_is_better;
    return rk;
}

static int better(const lab_ranking *rk, double a, double b) { return rk->higher ? a > b : a < b; }

/* A contestant at one point: a method, or glibc tuned, which ran in
 * processes of its own. */
typedef struct {
    const char *name;
    const lab_summary *shipped, *tuned;   /* its series in either kind of process; NULL: none */
    const lab_summary *own;               /* the one it is ranked by */
    double value;                         /* its statistic, as the others' (see twin_value) */
} contestant;

/* glibc tuned's statistic as if timed beside the methods: memkit's there,
 * times memkit's paired speed-up over glibc tuned in the tuned processes.
 * Its own value would carry whatever set the tuned processes apart from the
 * others (a neighbour's load moved values at DRAM by 1.6x between them on a
 * shared 2-vCPU VM); memkit ran in both and carries the pairing across. */
static double twin_value(const lab_ranking *rk, const lab_summary *memkit, const lab_summary *twin)
{
    if (!memkit || !memkit->tuned || !memkit->tuned->has_ratio || !(memkit->tuned->ratio > 0))
        return twin->value;
    return rk->higher ? memkit->value / memkit->tuned->ratio : memkit->value * memkit->tuned->ratio;
}

/* a's speed-up over b: paired where both ran in the same processes (under
 * glibc_tunables= too), else across processes (glibc against glibc tuned). */
static double speedup(const lab_ranking *rk, const contestant *a, const contestant *b, double *lo,
                      double *hi)
{
    if (a->shipped && b->shipped)
        return lab_paired_speedup(a->shipped, b->shipped, rk->higher, lo, hi);
    if (a->tuned && b->tuned)
        return lab_paired_speedup(a->tuned, b->tuned, rk->higher, lo, hi);
    return lab_unpaired_speedup(a->own, b->own, rk->higher, lo, hi);
}

/* a against b by the one rule of every point (lab_interval_verdict); its
 * median too. */
static int interval_vs(const lab_ranking *rk, const contestant *a, const contestant *b,
                       double *median)
{
    double lo, hi, m = speedup(rk, a, b, &lo, &hi);
    if (median)
        *median = m;
    return lab_interval_verdict(lo, hi);
}

int lab_interval_verdict(double lo, double hi)
{
    int j = lab_judge(lo, hi);
    return j < 0 && hi > 1 / LAB_LOSS_MIN ? 0 : j;
}

int lab_point_verdict(const lab_summary *a, const lab_summary *b, int higher_is_better,
                      double *median)
{
    double lo, hi, m = lab_paired_speedup(a, b, higher_is_better, &lo, &hi);
    if (median)
        *median = m;
    return lab_interval_verdict(lo, hi);
}

/* Is `name` the fastest at p, or within its noise? */
static int leads(const point *p, const char *name)
{
    if (!strcmp(p->fastest, name))
        return 1;
    for (size_t i = 0; i < p->ntied; i++)
        if (!strcmp(p->tied[i], name))
            return 1;
    return 0;
}

#define MAX_CONTESTANTS 64

void lab_ranking_add(lab_ranking *rk, const char *label, const lab_method *methods, size_t n,
                     size_t memkit, const lab_summary *sums, const unsigned char *skip)
{
    /* the methods, then glibc tuned where it ran (lab_record_emit): what a
     * glibc method timed in the tuned processes is glibc tuned, never glibc */
    contestant c[MAX_CONTESTANTS];
    char twins[4][128];
    size_t nc = 0, ntwins = 0;
    for (size_t i = 0; i < n && nc < MAX_CONTESTANTS; i++)
        if (!(skip && skip[i]) && isfinite(sums[i].value))
            c[nc++] = (contestant){methods[i].name, &sums[i],
                                   methods[i].glibc ? NULL : sums[i].tuned, &sums[i], sums[i].value};
    size_t mk = SIZE_MAX;
    for (size_t k = 0; k < nc; k++)
        mk = c[k].shipped == &sums[memkit] ? k : mk;
    for (size_t i = 0; i < n && nc < MAX_CONTESTANTS && ntwins < 4; i++)
        if (methods[i].glibc && sums[i].tuned && !(skip && skip[i]) &&
            isfinite(sums[i].tuned->value))
            c[nc++] = (contestant){lab_glibc_twin_name(methods[i].name, twins[ntwins++],
                                                       sizeof twins[0]),
                                   NULL, sums[i].tuned, sums[i].tuned,
                                   twin_value(rk, mk == SIZE_MAX ? NULL : &sums[memkit],
                                              sums[i].tuned)};
    size_t best = SIZE_MAX, rival = SIZE_MAX;
    for (size_t i = 0; i < nc; i++) {
        if (best == SIZE_MAX || better(rk, c[i].value, c[best].value))
            best = i;
        if (i != mk && (rival == SIZE_MAX || better(rk, c[i].value, c[rival].value)))
            rival = i;
    }
    if (best == SIZE_MAX)
        return;
    if (rk->n == rk->cap) {
        rk->cap = rk->cap * 2 + 32;
        rk->p = realloc(rk->p, rk->cap * sizeof *rk->p);
    }
    point *p = &rk->p[rk->n++];
    *p = (point){.verdict = 1, .slower = 1};
    snprintf(p->label, sizeof p->label, "%s", label);
    snprintf(p->fastest, sizeof p->fastest, "%s", c[best].name);
    snprintf(rk->memkit, sizeof rk->memkit, "%s", methods[memkit].name);
    for (size_t i = 0; i < nc && p->ntied < MAX_TIED; i++)
        if (i != best && interval_vs(rk, &c[i], &c[best], NULL) == 0)
            snprintf(p->tied[p->ntied++], sizeof p->tied[0], "%s", c[i].name);
    if (rival == SIZE_MAX || mk == SIZE_MAX)
        return;
    snprintf(p->rival, sizeof p->rival, "%s", c[rival].name);
    /* memkit's speed-up over the fastest other method */
    double median;
    p->verdict = interval_vs(rk, &c[mk], &c[rival], &median);
    p->slower = 1 / median;
}

/* The last point of the range that starts at i: while the next point's
 * fastest method, or one within its noise, is the one that led at i (noise
 * alone must not cut a range in pieces). */
static size_t range_end(const lab_ranking *rk, size_t i)
{
    size_t j = i;
    while (j + 1 < rk->n && leads(&rk->p[j + 1], rk->p[i].fastest))
        j++;
    return j;
}

/* The ranking as the "fastest" verdict's data, the one judgement the report
 * and the summary read: records.def's ranking and ranking_point. */
static void write_ranking(FILE *f, const void *arg)
{
    const lab_ranking *rk = arg;
    LAB_FIRST(f, ranking, what);
    lab_json_string(f, rk->what);
    LAB_MEMBER(f, ranking, ordered);
    fputs(rk->ordered ? "true" : "false", f);
    LAB_MEMBER(f, ranking, memkit);
    lab_json_string(f, rk->memkit);
    LAB_MEMBER(f, ranking, loss_min);
    lab_json_number(f, LAB_LOSS_MIN);
    LAB_MEMBER(f, ranking, points);
    fputc('[', f);
    for (size_t i = 0; i < rk->n; i++) {
        const point *p = &rk->p[i];
        if (i)
            fputc(',', f);
        LAB_FIRST(f, ranking_point, at);
        lab_json_string(f, p->label);
        LAB_MEMBER(f, ranking_point, fastest);
        lab_json_string(f, p->fastest);
        LAB_MEMBER(f, ranking_point, tied);
        fputc('[', f);
        for (size_t t = 0; t < p->ntied; t++) {
            if (t)
                fputc(',', f);
            lab_json_string(f, p->tied[t]);
        }
        fputc(']', f);
        LAB_MEMBER(f, ranking_point, rival);
        lab_json_string(f, p->rival);
        LAB_MEMBER(f, ranking_point, verdict);
        fprintf(f, "%d", p->verdict);
        LAB_MEMBER(f, ranking_point, slower);
        lab_json_number(f, p->slower);
        fputc('}', f);
    }
    fputs("]", f);
    if (rk->ordered) {   /* [first, last] of each range the verdict's text names */
        LAB_MEMBER(f, ranking, ranges);
        fputc('[', f);
        for (size_t i = 0, j; i < rk->n; i = j + 1) {
            j = range_end(rk, i);
            fprintf(f, "%s[%zu,%zu]", i ? "," : "", i, j);
        }
        fputc(']', f);
    }
    fputc('}', f);
}

static void append(char *buf, size_t len, const char *fmt, const char *a, const char *b)
{
    size_t l = strlen(buf);
    if (l + 1 < len)
        snprintf(buf + l, len - l, fmt, a, b);
}

/* The "loss" verdicts: each run of consecutive points where memkit was
 * slower beyond the noise (each point alone when the points are not an
 * axis), and, when there is none, a note saying so. */
static void loss_verdicts(lab_ctx *ctx, const lab_ranking *rk)
{
    size_t losses = 0, noisy = 0;
    for (size_t i = 0; i < rk->n;) {
        if (rk->p[i].verdict >= 0) {
            noisy += rk->p[i].verdict == 0;
            i++;
            continue;
        }
        size_t j = i, worst = i;
        char rivals[160] = "";
        for (; j < rk->n && rk->p[j].verdict < 0 && (rk->ordered || j == i); j++) {
            if (rk->p[j].slower > rk->p[worst].slower)
                worst = j;
            if (!strstr(rivals, rk->p[j].rival))
                append(rivals, sizeof rivals, "%s%s", *rivals ? ", " : "", rk->p[j].rival);
        }
        if (j - i == 1)
            lab_verdict_kind(ctx, "loss", "%s: %s is %.2fx slower than %s at %s (beyond the noise)",
                             rk->what, rk->memkit, rk->p[i].slower, rk->p[i].rival, rk->p[i].label);
        else
            lab_verdict_kind(ctx, "loss", "%s: %s is slower than the fastest other method (%s) "
                             "beyond the noise from %s to %s (%zu points): up to %.2fx slower "
                             "(%s at %s)", rk->what, rk->memkit, rivals, rk->p[i].label,
                             rk->p[j - 1].label, j - i, rk->p[worst].slower, rk->p[worst].rival,
                             rk->p[worst].label);
        losses += j - i;
        i = j;
    }
    if (!losses && rk->n && rk->memkit[0])
        lab_verdict_kind(ctx, "note", "%s: %s is nowhere slower than the fastest other method "
                         "beyond the noise (points: %zu, too noisy to tell: %zu)",
                         rk->what, rk->memkit, rk->n, noisy);
}

/* Who was fastest where, on an axis: ranges of consecutive points one
 * method leads (or ties within the noise: noise alone must not cut a range
 * in pieces). */
static void fastest_ranges(const lab_ranking *rk, char *text, size_t len)
{
    for (size_t i = 0; i < rk->n;) {
        size_t j = range_end(rk, i);
        append(text, len, "%s%s at ", *text ? "; " : "", rk->p[i].fastest);
        if (j == i)
            append(text, len, "%s%s", rk->p[i].label, "");
        else
            append(text, len, "%s..%s", rk->p[i].label, rk->p[j].label);
        i = j + 1;
    }
}

/* Who was fastest where, off an axis: per method, the points it won (named
 * when there are few). */
static void fastest_counts(const lab_ranking *rk, char *text, size_t len)
{
    for (size_t i = 0; i < rk->n; i++) {
        size_t won = 0, k;
        for (k = 0; k < i && strcmp(rk->p[k].fastest, rk->p[i].fastest); k++)
            ;
        if (k < i)   /* counted with its first point */
            continue;
        for (k = i; k < rk->n; k++)
            won += !strcmp(rk->p[k].fastest, rk->p[i].fastest);
        char count[48];
        snprintf(count, sizeof count, "%zu of %zu", won, rk->n);
        append(text, len, "%s%s in ", *text ? "; " : "", rk->p[i].fastest);
        append(text, len, "%s%s", count, won <= 4 ? ": " : "");
        for (k = i; k < rk->n && won <= 4; k++)
            if (!strcmp(rk->p[k].fastest, rk->p[i].fastest))
                append(text, len, "%s(%s)", k == i ? "" : ", ", rk->p[k].label);
    }
}

void lab_ranking_verdicts(lab_ctx *ctx, lab_ranking *rk)
{
    loss_verdicts(ctx, rk);
    char text[3500] = "";
    if (rk->ordered)
        fastest_ranges(rk, text, sizeof text);
    else
        fastest_counts(rk, text, sizeof text);
    if (*text)
        lab_verdict_data(ctx, "fastest", write_ranking, rk, "%s, fastest by the statistic%s: %s",
                         rk->what, rk->ordered ? " (a range goes on while its method is within "
                                                 "the noise of the fastest)" : "", text);
    free(rk->p);
    free(rk);
}
