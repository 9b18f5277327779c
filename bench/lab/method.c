/* SPDX-License-Identifier: Apache-2.0 */
/* The lab's method: statistics, the interleaved rounds, the paired speed-up. */
#include "lab.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

lab_stats lab_stats_of(double *v, size_t n)
{
    lab_stats s = {0};
    if (n == 0)
        return s;
    qsort(v, n, sizeof *v, cmp_double);
    s.n = n;
    s.min = v[0];
    s.max = v[n - 1];
    s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    s.mean = sum / n;
    size_t k = n / 10 ? n / 10 : 1;   /* MSRC: mean of the fastest 10% */
    sum = 0;
    for (size_t i = 0; i < k; i++)
        sum += v[i];
    s.mean_fastest_10pct = sum / k;
    return s;
}

lab_stats lab_stats_scaled(lab_stats s, double k)
{
    return (lab_stats){s.min * k, s.median * k, s.max * k, s.mean * k,
                       s.mean_fastest_10pct * k, s.n};
}

double lab_stat_value(const double *samples, size_t n, const char *stat, int higher_is_better)
{
    if (n == 0)
        return NAN;
    double *v = malloc(n * sizeof *v);
    memcpy(v, samples, n * sizeof *v);
    lab_stats s = lab_stats_of(v, n);
    double out = s.median;
    if (stat && !strcmp(stat, "mean"))
        out = s.mean;
    else if (stat && !strcmp(stat, "mean_fastest_10pct")) {
        if (higher_is_better) {   /* the fastest are the largest */
            size_t k = n / 10 ? n / 10 : 1;
            double sum = 0;
            for (size_t i = 0; i < k; i++)
                sum += v[n - 1 - i];
            out = sum / k;
        } else
            out = s.mean_fastest_10pct;
    }
    free(v);
    return out;
}

void lab_speedups(const double *x, const double *base, size_t n, int higher_is_better,
                  double *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = higher_is_better ? x[i] / base[i] : base[i] / x[i];
}

void lab_median_interval(const double *sorted, size_t n, double *lo, double *hi)
{
    if (n < 5) {   /* not even all of them on one side would be 95% sure */
        *lo = 0;
        *hi = INFINITY;
        return;
    }
    if (n < 8) {
        *lo = sorted[0];
        *hi = sorted[n - 1];
        return;
    }
    double h = 0.98 * sqrt((double)n);
    long l = (long)floor(n / 2.0 - h), u = (long)ceil(n / 2.0 + h) - 1;
    *lo = sorted[l < 0 ? 0 : l];
    *hi = sorted[u >= (long)n ? (long)n - 1 : u];
}

int lab_judge(double lo, double hi) { return lo > 1 ? 1 : hi < 1 ? -1 : 0; }

void lab_interleave(lab_ctx *ctx, const lab_method *methods, size_t n, size_t rounds,
                    lab_pass_fn *pass, void *arg, double *samples)
{
    size_t *order = malloc(n * sizeof *order);
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    for (size_t r = 0; r < rounds; r++) {
        for (size_t j = n - 1; j > 0 && n > 1; j--) {   /* Fisher-Yates */
            size_t o = lab_rand(&ctx->rng) % (j + 1), t = order[j];
            order[j] = order[o];
            order[o] = t;
        }
        for (size_t j = 0; j < n; j++) {
            const lab_method *m = &methods[order[j]];
            pass(m, arg, 1);
            samples[order[j] * rounds + r] = pass(m, arg, 0);
        }
    }
    free(order);
}

const char *lab_interval_text(double lo, double hi, char *buf, size_t len)
{
    if (lo <= 0 || !isfinite(hi))
        snprintf(buf, len, "no interval: fewer than 5 rounds");
    else
        snprintf(buf, len, "~95%% interval %.2f..%.2fx", lo, hi);
    return buf;
}

double lab_paired_speedup(const lab_summary *a, const lab_summary *b, int higher_is_better,
                          double *lo, double *hi)
{
    size_t m = a->n < b->n ? a->n : b->n;
    if (m == 0) {
        *lo = 0;
        *hi = INFINITY;
        return 1;
    }
    double *up = malloc(m * sizeof *up);
    lab_speedups(a->samples, b->samples, m, higher_is_better, up);
    lab_stats s = lab_stats_of(up, m);
    lab_median_interval(up, m, lo, hi);   /* up is sorted now */
    free(up);
    return s.median;
}

double lab_unpaired_speedup(const lab_summary *a, const lab_summary *b, int higher_is_better,
                            double *lo, double *hi)
{
    *lo = 0;
    *hi = INFINITY;
    if (!a->n || !b->n)
        return 1;
    double range[2][2];   /* a's and b's: their median's interval, widened to their processes */
    const lab_summary *s[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        double *v = malloc(s[k]->n * sizeof *v);
        memcpy(v, s[k]->samples, s[k]->n * sizeof *v);
        lab_stats_of(v, s[k]->n);
        lab_median_interval(v, s[k]->n, &range[k][0], &range[k][1]);
        free(v);
        range[k][0] = fmin(range[k][0], s[k]->process_min);
        range[k][1] = fmax(range[k][1], s[k]->process_max);
    }
    if (range[0][0] <= 0 || range[1][0] <= 0 || !isfinite(range[0][1]) || !isfinite(range[1][1]))
        return higher_is_better ? a->value / b->value : b->value / a->value;
    if (higher_is_better) {
        *lo = range[0][0] / range[1][1];
        *hi = range[0][1] / range[1][0];
        return a->value / b->value;
    }
    *lo = range[1][0] / range[0][1];
    *hi = range[1][1] / range[0][0];
    return b->value / a->value;
}

const char *lab_glibc_twin_name(const char *glibc_name, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s", LAB_GLIBC_TUNED, glibc_name + strcspn(glibc_name, " "));
    return buf;
}
