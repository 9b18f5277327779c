/* SPDX-License-Identifier: Apache-2.0 */
/* Measurement records (format 2, records.def): pooled over the processes,
 * with the paired speed-ups against the baseline and their interval. */
#include "lab_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ,"key":[numbers], ,"key":"text" and ,"key":number: the key a LAB_KEY */
static void json_array(FILE *f, const char *key, const double *v, size_t n)
{
    lab_json_key(f, key, 0);
    fputc('[', f);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputc(',', f);
        lab_json_number(f, v[i]);
    }
    fputc(']', f);
}

static void str_member(FILE *f, const char *key, const char *v)
{
    lab_json_key(f, key, 0);
    lab_json_string(f, v);
}

static void num_member(FILE *f, const char *key, double v)
{
    lab_json_key(f, key, 0);
    lab_json_number(f, v);
}

/* What a record begins with: whose, which series, which point. */
static void write_head(lab_ctx *ctx, const char *series, const char *params)
{
    FILE *f = ctx->jsonl;
    LAB_RECORD_START(f, measurement);
    str_member(f, LAB_KEY(measurement, experiment), ctx->info->name);
    str_member(f, LAB_KEY(measurement, series), series);
    LAB_MEMBER(f, measurement, params);
    fprintf(f, "{%s}", params ? params : "");
}

/* ... and the statistic with its spread; then the ratio, min and max. */
static void write_stat(FILE *f, const char *stat, double value, lab_stats s)
{
    str_member(f, LAB_KEY(measurement, stat), stat ? stat : "median");
    num_member(f, LAB_KEY(measurement, value), value);
    num_member(f, LAB_KEY(measurement, min), s.min);
    num_member(f, LAB_KEY(measurement, median), s.median);
    num_member(f, LAB_KEY(measurement, max), s.max);
}

static void write_ratio(FILE *f, double ratio, double min, double max)
{
    num_member(f, LAB_KEY(measurement, ratio), ratio);
    num_member(f, LAB_KEY(measurement, ratio_min), min);
    num_member(f, LAB_KEY(measurement, ratio_max), max);
}

/* What the processes of one kind measured for a record: samples, ratios,
 * and one value (and median ratio) per process. */
typedef struct {
    lab_vec samples, ratios, values, process_ratios;
} pooled;

/* The record's "tuned" member: its speed-ups over glibc tuned. */
static void write_tuned(FILE *f, const char *baseline, const pooled *p, const lab_summary *t)
{
    LAB_MEMBER(f, measurement, tuned);
    LAB_FIRST(f, tuned, baseline);
    lab_json_string(f, baseline);
    json_array(f, LAB_KEY(tuned, ratios), p->ratios.v, p->ratios.n);
    if (p->process_ratios.n > 1)
        json_array(f, LAB_KEY(tuned, process_ratios), p->process_ratios.v, p->process_ratios.n);
    num_member(f, LAB_KEY(tuned, ratio), t->ratio);
    num_member(f, LAB_KEY(tuned, ratio_lo), t->ratio_lo);
    num_member(f, LAB_KEY(tuned, ratio_hi), t->ratio_hi);
    fputc('}', f);
}

/* tuned_baseline (NULL: none): the record's speed-ups over glibc tuned,
 * t summarizing what `tuned` pooled. */
static void write_record(lab_ctx *ctx, const lab_record *r, const lab_summary *s,
                         const lab_vec *ratios, const lab_vec *process_values,
                         const lab_vec *process_ratios, const char *tuned_baseline,
                         const pooled *tuned, const lab_summary *t)
{
    FILE *f = ctx->jsonl;
    write_head(ctx, r->series, r->params_json);
    LAB_MEMBER(f, measurement, axis);
    if (r->axis) {
        LAB_FIRST(f, axis, name);
        lab_json_string(f, r->axis);
        str_member(f, LAB_KEY(axis, unit), r->axis_unit ? r->axis_unit : "");
        fputc('}', f);
    } else
        fputs("null", f);
    str_member(f, LAB_KEY(measurement, metric), r->metric);
    str_member(f, LAB_KEY(measurement, unit), r->unit);
    str_member(f, LAB_KEY(measurement, better), r->higher_is_better ? "higher" : "lower");
    if (r->contract)
        str_member(f, LAB_KEY(measurement, contract), r->contract);
    write_stat(f, r->stat, s->value, s->s);
    json_array(f, LAB_KEY(measurement, samples), s->samples, s->n);
    if (process_values->n > 1)
        json_array(f, LAB_KEY(measurement, process_samples), process_values->v, process_values->n);
    LAB_MEMBER(f, measurement, baseline);
    if (r->baseline) {
        LAB_FIRST(f, baseline, series);
        lab_json_string(f, r->baseline);
        LAB_MEMBER(f, baseline, params);
        fprintf(f, "{%s}}", r->baseline_params_json ? r->baseline_params_json
                            : r->params_json ? r->params_json : "");
        json_array(f, LAB_KEY(measurement, ratios), ratios->v, ratios->n);
        if (process_ratios->n > 1)
            json_array(f, LAB_KEY(measurement, process_ratios), process_ratios->v, process_ratios->n);
        write_ratio(f, s->ratio, s->ratio_min, s->ratio_max);
        if (tuned_baseline)
            write_tuned(f, tuned_baseline, tuned, t);
    } else
        fputs("null", f);
    fputs("}\n", f);
    fflush(f);
}

/* Remembers how far the processes' values were apart, for the note at
 * the end (lab_spread_note). */
static void note_spread(lab_ctx *ctx, const lab_record *r, double spread)
{
    ctx->spread = realloc(ctx->spread, (ctx->spread_n + 1) * sizeof *ctx->spread);
    double worst = 0;
    for (size_t i = 0; i < ctx->spread_n; i++)
        worst = fmax(worst, ctx->spread[i]);
    if (spread > worst)
        snprintf(ctx->worst_spread, sizeof ctx->worst_spread, "%s, %s {%s}", r->series, r->metric,
                 r->params_json ? r->params_json : "");
    ctx->spread[ctx->spread_n++] = spread;
}

void lab_spread_note(lab_ctx *ctx)
{
    if (!ctx->spread_n || ctx->raw)
        return;
    lab_stats s = lab_stats_of(ctx->spread, ctx->spread_n);
    lab_verdict_kind(ctx, "note", "between the %u processes, a measurement's values were %.1f%% "
                     "apart at the median of %zu measurements, %.1f%% at the 90th percentile, "
                     "%.1f%% at most (%s)", ctx->nprocesses, 100 * s.median, s.n,
                     100 * ctx->spread[(size_t)(0.9 * (double)(s.n - 1))], 100 * s.max,
                     ctx->worst_spread);
    free(ctx->spread);
    ctx->spread = NULL;
    ctx->spread_n = 0;
}

/* The helpers' of r, those under glibc_tunables= (tuned) or the others. */
static size_t pool_helpers(lab_ctx *ctx, const lab_record *r, int tuned, pooled *p)
{
    p->samples.n = p->ratios.n = p->values.n = p->process_ratios.n = 0;
    return lab_pool_take(ctx, r, tuned, &p->samples, &p->ratios, &p->values, &p->process_ratios);
}

/* ... and this process's own, its samples and speed-ups (NULL: none). */
static void pool_own(pooled *p, const lab_record *r, const double *own_ratios)
{
    lab_vec_push(&p->samples, r->samples, r->n);
    double own = lab_stat_value(r->samples, r->n, r->stat, r->higher_is_better);
    lab_vec_push(&p->values, &own, 1);
    if (own_ratios) {
        lab_vec_push(&p->ratios, own_ratios, r->n);
        double m = lab_stat_value(own_ratios, r->n, "median", 1);
        lab_vec_push(&p->process_ratios, &m, 1);
    }
}

/* The summary of what was pooled: the statistic, the processes' spread and,
 * with ratios, their median and its interval (the processes must agree too). */
static lab_summary summarize(lab_ctx *ctx, const lab_record *r, const pooled *p, size_t nprocesses)
{
    lab_summary s = {.nprocesses = nprocesses};
    s.samples = malloc((p->samples.n + 1) * sizeof *s.samples);
    memcpy(s.samples, p->samples.v, p->samples.n * sizeof *s.samples);
    s.n = p->samples.n;
    s.value = lab_stat_value(p->samples.v, p->samples.n, r->stat, r->higher_is_better);
    double *tmp = malloc((p->samples.n + p->ratios.n + 1) * sizeof *tmp);
    memcpy(tmp, p->samples.v, p->samples.n * sizeof *tmp);
    s.s = lab_stats_of(tmp, p->samples.n);
    memcpy(tmp, p->values.v, p->values.n * sizeof *tmp);
    lab_stats ps = lab_stats_of(tmp, p->values.n);
    s.process_min = ps.min;
    s.process_max = ps.max;
    if (p->values.n > 1 && ps.min > 0)
        note_spread(ctx, r, (ps.max - ps.min) / ps.min);
    if (p->ratios.n) {
        s.has_ratio = 1;
        memcpy(tmp, p->ratios.v, p->ratios.n * sizeof *tmp);
        lab_stats rs = lab_stats_of(tmp, p->ratios.n);   /* tmp now sorted */
        s.ratio = rs.median;
        s.ratio_min = rs.min;
        s.ratio_max = rs.max;
        lab_median_interval(tmp, p->ratios.n, &s.ratio_lo, &s.ratio_hi);
        for (size_t i = 0; i < p->process_ratios.n; i++) {
            s.ratio_lo = fmin(s.ratio_lo, p->process_ratios.v[i]);
            s.ratio_hi = fmax(s.ratio_hi, p->process_ratios.v[i]);
        }
    }
    free(tmp);
    return s;
}

lab_summary lab_record_emit(lab_ctx *ctx, const lab_record *r)
{
    static pooled shipped, tuned;
    double *own_ratios = NULL;
    if (r->baseline && r->baseline_samples) {
        own_ratios = malloc((r->n ? r->n : 1) * sizeof *own_ratios);
        lab_speedups(r->samples, r->baseline_samples, r->n, r->higher_is_better, own_ratios);
    }
    if (ctx->raw)
        lab_raw_write(ctx->raw, r, ctx->tuned, own_ratios);

    size_t n = pool_helpers(ctx, r, 0, &shipped) + 1;
    pool_own(&shipped, r, own_ratios);
    free(own_ratios);
    lab_summary s = summarize(ctx, r, &shipped, n);
    /* the same series in the processes under glibc_tunables= (the main
     * process is not one of them) */
    size_t nt = ctx->ntuned && !ctx->raw ? pool_helpers(ctx, r, 1, &tuned) : 0;
    if (nt) {
        s.tuned = malloc(sizeof *s.tuned);
        *s.tuned = summarize(ctx, r, &tuned, nt);
        s.tuned->has_ratio = s.tuned->has_ratio && r->baseline;
    }
    if (ctx->jsonl && !ctx->raw) {
        int with_tuned = s.tuned && s.tuned->has_ratio && r->tuned_baseline;
        write_record(ctx, r, &s, &shipped.ratios, &shipped.values, &shipped.process_ratios,
                     with_tuned ? r->tuned_baseline : NULL, &tuned, s.tuned);
        if (s.tuned && r->glibc_twin) {   /* glibc tuned: a series of its own */
            lab_record twin = *r;
            twin.series = r->glibc_twin;
            twin.baseline = NULL;
            write_record(ctx, &twin, s.tuned, &tuned.ratios, &tuned.values,
                         &tuned.process_ratios, NULL, NULL, NULL);
        }
    }
    return s;
}

void lab_emit_methods(lab_ctx *ctx, const lab_record *tmpl, const lab_method *methods,
                      size_t n, size_t rounds, const double *samples, size_t baseline,
                      lab_summary *out)
{
    char twin[128], base_twin[128];
    for (size_t i = 0; i < n; i++) {
        lab_record r = *tmpl;
        r.series = methods[i].name;
        r.glibc_twin = methods[i].glibc ? lab_glibc_twin_name(r.series, twin, sizeof twin) : NULL;
        r.tuned_baseline = baseline < n && baseline != i && methods[baseline].glibc
                               ? lab_glibc_twin_name(methods[baseline].name, base_twin,
                                                     sizeof base_twin)
                               : NULL;
        r.contract = methods[i].contract;
        r.samples = &samples[i * rounds];
        r.n = rounds;
        if (baseline < n && baseline != i) {
            r.baseline = methods[baseline].name;
            r.baseline_samples = &samples[baseline * rounds];
        } else {
            r.baseline = NULL;
            r.baseline_samples = NULL;
        }
        lab_summary s = lab_record_emit(ctx, &r);
        if (out)
            out[i] = s;
        else
            lab_summary_free(&s);
    }
}

void lab_summary_free(lab_summary *s)
{
    free(s->samples);
    s->samples = NULL;
    if (s->tuned) {
        lab_summary_free(s->tuned);
        free(s->tuned);
        s->tuned = NULL;
    }
}
