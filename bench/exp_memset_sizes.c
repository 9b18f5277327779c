/* memset-sizes: every memset method at fixed sizes 0..1 MiB, the same size
 * over and over on the same buffer (a trained branch predictor, the MSRC
 * seed's first benchmark).  Per size, rounds of one batch per method,
 * interleaved in rotating order; a batch is enough calls for ~20 us.
 * Statistic: the seed's mean of the fastest 10% of the batches.
 *
 * Arguments: reps=N (batches per method and size, default 31)
 *            max=SIZE (largest size, default 1M). */
#include "lab.h"
#include "memset_methods.h"

#include <stdlib.h>
#include <string.h>

static size_t next_size(size_t n)
{
    if (n < 4)
        return n + 1;
    /* 4, 6, 8, 12, 16, 24, ...: two points per octave, both sides of every
     * power of two the ladder switches on */
    size_t p = (size_t)1 << (63 - __builtin_clzll(n));
    return n == p ? p + p / 2 : 2 * p;
}

static int run(lab_ctx *ctx)
{
    unsigned reps = ctx->quick ? 3 : 31;
    size_t max = ctx->quick ? 64 << 10 : 1 << 20;
    for (int i = 1; i < ctx->argc; i++) {
        const char *a = ctx->argv[i];
        if (!strncmp(a, "reps=", 5) && atoi(a + 5) > 0)
            reps = (unsigned)atoi(a + 5);
        else if (!strncmp(a, "max=", 4))
            max = lab_parse_size(a + 4);
        else {
            fprintf(stderr, "error: unknown argument '%s' (expected reps=N max=SIZE)\n", a);
            return 2;
        }
    }
    size_t nm;
    const memset_method *methods = memset_methods(&nm);
    double *samples = malloc(nm * reps * sizeof *samples);
    double *ratios = malloc(reps * sizeof *ratios);
    unsigned char *buf = lab_alloc(max + 64);
    if (!samples || !ratios) {
        fprintf(stderr, "error: out of memory\n");
        return 2;
    }

    printf("memset-sizes: ns per call (mean of the fastest 10%% of %u batches), fill value 0\n", reps);
    printf("%10s", "size");
    for (size_t m = 0; m < nm; m++)
        printf(" %10.10s", methods[m].name);
    printf(" %12s %10s\n", "mk GB/s", "mk/glibc");

    size_t total = 0;
    for (size_t n = 0; n <= max; n = next_size(n))
        total++;
    size_t done = 0;
    for (size_t n = 0; n <= max; n = next_size(n), done++) {
        if (done % 8 == 0)
            lab_progress(ctx, done, total, "sizes");
        /* ~200 us per batch: long enough that the clock and interrupts fade */
        size_t calls = 200000 / (n / 32 + 4) + 1;
        for (unsigned k = 0; k < reps + 1; k++)
            for (size_t j = 0; j < nm; j++) {
                size_t s = (j + k) % nm;
                memset_method_fn fn = methods[s].fn;
                double t0 = lab_now_ns();
                for (size_t c = 0; c < calls; c++)
                    fn(buf, 0, n);
                lab_escape(buf);
                double t = (lab_now_ns() - t0) / (double)calls;
                if (k > 0)   /* the first round warms up */
                    samples[s * reps + k - 1] = t;
            }
        char params[64], hs[32];
        snprintf(params, sizeof params, "\"size\":%zu,\"value\":0", n);
        double value[16];
        for (size_t s = 0; s < nm; s++) {
            for (unsigned k = 0; k < reps; k++)
                ratios[k] = samples[s * reps + k] / samples[k];
            lab_stats rs = lab_stats_of(ratios, reps);
            lab_stats st = lab_stats_of(&samples[s * reps], reps);
            value[s] = st.mean_fastest_10pct;
            lab_measurement m = {
                .series = methods[s].name, .params_json = params, .metric = "ns_per_call",
                .unit = "ns", .stat = "mean_fastest_10pct", .value = value[s], .s = st,
                .ratio_to = s ? "glibc" : NULL, .ratio = rs.median, .ratio_min = rs.min,
                .ratio_max = rs.max};
            lab_emit(ctx, &m);
            if (n) {
                lab_measurement g = m;
                g.metric = "gb_per_s";
                g.unit = "GB/s";
                g.value = (double)n / value[s];
                g.s.min = (double)n / st.max;   /* the slowest batch */
                g.s.max = (double)n / st.min;
                g.s.median = (double)n / st.median;
                g.s.mean = (double)n / st.mean;
                g.s.mean_fastest_10pct = g.value;
                g.ratio_to = NULL;
                lab_emit(ctx, &g);
            }
        }
        printf("%10s", lab_fmt_size(n, hs, sizeof hs));
        for (size_t s = 0; s < nm; s++)
            printf(" %10.2f", value[s]);
        printf(" %12.2f %9.3fx\n", n ? (double)n / value[1] : 0.0, value[1] / value[0]);
        fflush(stdout);
    }
    free(samples);
    free(ratios);
    return 0;
}

int main(int argc, char **argv)
{
    static const lab_info info = {
        "memset-sizes", "msrc-faster-amd64-memset",
        "every memset method at fixed sizes 0..1 MiB with a trained predictor: ns/call, "
        "GB/s, ratio to glibc"};
    return lab_main(argc, argv, &info, run);
}
