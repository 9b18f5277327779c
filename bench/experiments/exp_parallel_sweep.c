/* SPDX-License-Identifier: Apache-2.0 */
/* parallel-sweep: mk_parallel_memcpy and mk_parallel_memset on warm buffers,
 * 1..N threads by size, interleaved (each round times every thread count
 * once).  Where more threads start to pay, and how many saturate memory:
 * the numbers `memkit tune` sets parallel_threshold and threads from.
 * Rounds: the lab's interleaved ones (shuffled thread counts, a warm-up
 * call before each timed batch: it wakes the workers); speed-up over one
 * thread per round.  Arguments: see --help. */
#include "lab.h"
#include "memkit.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>


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

static const lab_arg args[] = {
    {"min", LAB_SIZE, "256K", "1M", "smallest size", 4096, 1e15},
    {"max", LAB_SIZE, "256M", "32M", "largest size", 4096, 1e15},
    {"threads", LAB_INT, NULL, NULL, "most threads (default: 2x the CPUs, at least 4)", 1,
     MAX_THREADS},
};

typedef struct {
    const operation *op;
    mk_pool **pools;
    char *dst;
    const char *src;
    size_t size, reps;
} point;

/* data: the thread count; GB/s. */
static double pass(const lab_method *m, void *arg, int warm)
{
    const point *p = arg;
    mk_pool *pool = p->pools[(uintptr_t)m->data];
    if (warm) {   /* wake the workers */
        p->op->op(pool, p->dst, p->src, p->size);
        return 0;
    }
    double t0 = lab_now_ns();
    for (size_t i = 0; i < p->reps; i++)
        p->op->op(pool, p->dst, p->src, p->size);
    lab_escape(p->dst);
    return (double)p->size * p->reps / (lab_now_ns() - t0);
}

static int check(lab_ctx *ctx) { return lab_check_order(ctx, "min", "max"); }

/* The library keeps small calls on one thread; this sweep wants to see
 * what threads would do there, so it lifts the threshold for itself and
 * runs again (the record keeps the fingerprint of the run as the user
 * started it). */
static void lift_parallel_threshold(lab_ctx *ctx)
{
    if (lab_tunable("parallel_threshold") == 0 || getenv("MEMKIT_PARALLEL_SWEEP_CHILD"))
        return;
    const char *old = getenv("MEMKIT_TUNABLES");
    char spec[1024];
    snprintf(spec, sizeof spec, "%s%sparallel_threshold=0", old ? old : "", old && *old ? ":" : "");
    setenv("MEMKIT_TUNABLES", spec, 1);
    setenv("MEMKIT_PARALLEL_SWEEP_CHILD", "1", 1);
    lab_reexec(ctx);
}

/* A pool of each thread count 1..nthreads, each a method (data: its
 * count).  0, or 2 when a pool cannot be made. */
static int make_pools(unsigned nthreads, mk_pool **pools, lab_method *ms, char (*names)[24])
{
    for (unsigned t = 1; t <= nthreads; t++) {
        if (!(pools[t] = mk_pool_create(t))) {
            fprintf(stderr, "error: cannot create a pool of %u threads\n", t);
            return 2;
        }
        snprintf(names[t - 1], sizeof names[t - 1], "threads=%u", t);
        ms[t - 1] = (lab_method){.name = names[t - 1], .data = (const void *)(uintptr_t)t};
    }
    return 0;
}

/* One size and operation: every thread count in the same interleaved
 * rounds, each recorded against one thread at that size; a table row. */
static void measure_point(lab_ctx *ctx, const lab_method *ms, unsigned nthreads, point *p,
                          const char *label)
{
    double gbs[MAX_THREADS * ROUNDS];
    lab_interleave(ctx, ms, nthreads, ROUNDS, pass, p, gbs);
    printf("%-10s %-16s", label, p->op->name);
    for (unsigned t = 1; t <= nthreads; t++) {
        char params[64], base_params[64];
        snprintf(params, sizeof params, "\"size\":%zu,\"threads\":%u", p->size, t);
        snprintf(base_params, sizeof base_params, "\"size\":%zu,\"threads\":1", p->size);
        lab_record r = {.series = ms[t - 1].name, .params_json = params, .axis = "size",
                        .axis_unit = "B", .metric = p->op->name, .unit = "GB/s",
                        .higher_is_better = 1, .samples = &gbs[(t - 1) * ROUNDS],
                        .n = ROUNDS, .baseline = t > 1 ? "threads=1" : NULL,
                        .baseline_params_json = base_params,
                        .baseline_samples = t > 1 ? gbs : NULL};
        lab_summary s = lab_record_emit(ctx, &r);
        printf(" %11.1f", s.value);
        lab_summary_free(&s);
    }
    printf("\n");
}

static int run(lab_ctx *ctx)
{
    size_t min = lab_size(ctx, "min"), max = lab_size(ctx, "max"), nsizes = 0, k = 0;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned nthreads = lab_text(ctx, "threads") ? (unsigned)lab_int(ctx, "threads")
                        : ncpu * 2 > 4 ? (unsigned)ncpu * 2 : 4;
    if (nthreads > MAX_THREADS)
        nthreads = MAX_THREADS;
    lift_parallel_threshold(ctx);
    mk_pool *pools[MAX_THREADS + 1] = {0};
    lab_method ms[MAX_THREADS];
    char names[MAX_THREADS][24];
    if (make_pools(nthreads, pools, ms, names))
        return 2;
    char *src = lab_alloc(max), *dst = lab_alloc(max);
    memset(src, 1, max);
    for (size_t s = min; s <= max; s *= 2)
        nsizes++;
    printf("%-10s %-16s", "size", "operation");
    for (unsigned t = 1; t <= nthreads; t++)
        printf(" %7u thr", t);
    printf("   (GB/s, median of %d interleaved rounds)\n", ROUNDS);
    for (size_t size = min; size <= max; size *= 2, k++) {
        char sz[32];
        lab_progress(ctx, k, nsizes, lab_fmt_size(size, sz, sizeof sz));
        for (size_t o = 0; o < sizeof operations / sizeof operations[0]; o++) {
            /* ~20 ms of work per sample at 20 GB/s. */
            point p = {&operations[o], pools, dst, src, size, (size_t)(400e6 / (double)size) + 1};
            measure_point(ctx, ms, nthreads, &p, sz);
        }
    }
    lab_progress(ctx, nsizes, nsizes, "done");
    lab_free(src, max);
    lab_free(dst, max);
    for (unsigned t = 1; t <= nthreads; t++)
        mk_pool_destroy(pools[t]);
    return 0;
}

int main(int argc, char **argv)
{
    static const lab_info info = {
        .name = "parallel-sweep",
        .seed = "going-faster-than-memcpy, hardware-and-windows-to-its-limits",
        .description = "parallel copy and fill on warm memory, 1..N threads by size: where "
                       "threads pay off",
        .args = args, .nargs = sizeof args / sizeof args[0], .check = check};
    return lab_main(argc, argv, &info, run);
}
