/* parallel-sweep: mk_parallel_memcpy and mk_parallel_memset on warm buffers,
 * 1..N threads by size, interleaved (each round times every thread count
 * once).  Where more threads start to pay, and how many saturate memory:
 * the numbers `memkit tune` sets parallel_threshold and threads from.
 *
 *   memkit-exp-parallel-sweep [--quick] [min=SIZE] [max=SIZE] [threads=N] */
#include "lab.h"
#include "memkit.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const lab_info info = {
    "parallel-sweep", "going-faster-than-memcpy, hardware-and-windows-to-its-limits",
    "parallel copy and fill on warm memory, 1..N threads by size: where threads pay off"};

typedef struct {
    const char *name;     /* the metric */
    void (*op)(mk_pool *, char *dst, const char *src, size_t n);
} operation;

static void op_copy(mk_pool *p, char *d, const char *s, size_t n) { mk_parallel_memcpy(p, d, s, n); }
static void op_fill(mk_pool *p, char *d, const char *s, size_t n) { (void)s; mk_parallel_memset(p, d, 0x5a, n); }

static const operation operations[] = {
    {"copy_throughput", op_copy},
    {"fill_throughput", op_fill},
};

enum { MAX_THREADS = 16, ROUNDS = 7 };

static int run(lab_ctx *ctx)
{
    size_t min = (size_t)256 << 10, max = (size_t)256 << 20;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned nthreads = ncpu * 2 > 4 ? (unsigned)ncpu * 2 : 4;
    if (ctx->quick)
        min = (size_t)1 << 20, max = (size_t)32 << 20;
    for (int i = 1; i < ctx->argc; i++) {
        const char *a = ctx->argv[i];
        if (!strncmp(a, "min=", 4))
            min = lab_parse_size(a + 4);
        else if (!strncmp(a, "max=", 4))
            max = lab_parse_size(a + 4);
        else if (!strncmp(a, "threads=", 8))
            nthreads = (unsigned)atoi(a + 8);
        else {
            fprintf(stderr, "error: unknown argument '%s' (expected min=SIZE max=SIZE threads=N)\n", a);
            return 2;
        }
    }
    if (min < 4096 || max < min || nthreads < 1 || nthreads > MAX_THREADS) {
        fprintf(stderr, "error: need 4096 <= min <= max and 1 <= threads <= %d\n", MAX_THREADS);
        return 2;
    }
    /* The library keeps small calls on one thread; this sweep wants to see
     * what threads would do there, so it lifts the threshold for itself. */
    if (mk_tunables_get()->parallel_threshold > 0 && !getenv("MEMKIT_PARALLEL_SWEEP_CHILD")) {
        const char *old = getenv("MEMKIT_TUNABLES");
        char spec[1024];
        snprintf(spec, sizeof spec, "%s%sparallel_threshold=0", old ? old : "", old && *old ? ":" : "");
        setenv("MEMKIT_TUNABLES", spec, 1);
        setenv("MEMKIT_PARALLEL_SWEEP_CHILD", "1", 1);
        fflush(NULL);
        execv("/proc/self/exe", ctx->full_argv);
        fprintf(stderr, "error: cannot re-execute to lift parallel_threshold\n");
        return 2;
    }

    mk_pool *pools[MAX_THREADS + 1] = {0};
    for (unsigned t = 1; t <= nthreads; t++)
        if (!(pools[t] = mk_pool_create(t))) {
            fprintf(stderr, "error: cannot create a pool of %u threads\n", t);
            return 2;
        }
    char *src = lab_alloc(max), *dst = lab_alloc(max);
    memset(src, 1, max);

    size_t nsizes = 0;
    for (size_t s = min; s <= max; s *= 2)
        nsizes++;
    printf("%-10s %-16s", "size", "operation");
    for (unsigned t = 1; t <= nthreads; t++)
        printf(" %7u thr", t);
    printf("   (GB/s, median of %d interleaved rounds)\n", ROUNDS);

    size_t k = 0;
    for (size_t size = min; size <= max; size *= 2, k++) {
        char sz[32];
        lab_progress(ctx, k, nsizes, lab_fmt_size(size, sz, sizeof sz));
        /* ~20 ms of work per sample at 20 GB/s. */
        size_t reps = (size_t)(400e6 / (double)size) + 1;
        for (size_t o = 0; o < sizeof operations / sizeof operations[0]; o++) {
            const operation *op = &operations[o];
            double gbs[MAX_THREADS + 1][ROUNDS];
            for (int r = 0; r < ROUNDS; r++)
                for (unsigned t = 1; t <= nthreads; t++) {
                    op->op(pools[t], dst, src, size);   /* wake the workers */
                    double t0 = lab_now_ns();
                    for (size_t i = 0; i < reps; i++)
                        op->op(pools[t], dst, src, size);
                    lab_escape(dst);
                    gbs[t][r] = (double)size * reps / (lab_now_ns() - t0);
                }
            printf("%-10s %-16s", sz, op->name);
            lab_stats one = lab_stats_of(gbs[1], ROUNDS);
            for (unsigned t = 1; t <= nthreads; t++) {
                lab_stats s = t == 1 ? one : lab_stats_of(gbs[t], ROUNDS);
                printf(" %11.1f", s.median);
                char series[24], params[64];
                snprintf(series, sizeof series, "threads=%u", t);
                snprintf(params, sizeof params, "\"size\":%zu,\"threads\":%u", size, t);
                lab_emit(ctx, &(lab_measurement){.series = series, .params_json = params,
                                                 .metric = op->name, .unit = "GB/s",
                                                 .stat = "median", .value = s.median, .s = s,
                                                 .ratio_to = t == 1 ? NULL : "threads=1",
                                                 .ratio = s.median / one.median,
                                                 .ratio_min = s.min / one.max,
                                                 .ratio_max = s.max / one.min});
            }
            printf("\n");
        }
    }
    lab_progress(ctx, nsizes, nsizes, "done");
    lab_free(src, max);
    lab_free(dst, max);
    for (unsigned t = 1; t <= nthreads; t++)
        mk_pool_destroy(pools[t]);
    return 0;
}

int main(int argc, char **argv) { return lab_main(argc, argv, &info, run); }
