/* SPDX-License-Identifier: Apache-2.0 */
/* record-overhead: what `memkit record` adds to a call.  The same program
 * (this one, re-executed as a child) calls memset, memcpy and memmove
 * under the preload shim, once without and once with recording on
 * (MEMKIT_RECORD=DIR), processes interleaved A B B A A B ...; per series,
 * ns per call of both and their paired difference and ratio.
 *
 * Recording is chosen once per process (the shim binds its wrappers at the
 * first call), so the pairs are processes, not batches.
 *
 *   memkit-exp-record-overhead [--quick] [preload=SO] [rounds=N]
 * A child is this program again with CHILD_ENV set. */
#include "lab.h"
#include "sweep.h"
#include "resources.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>


#define CHILD_ENV "MEMKIT_RECORD_OVERHEAD_CHILD"
#define CALLS   4096     /* sizes per batch, from a pre-drawn array */
#define BATCHES 15       /* per series and process; their median */

typedef enum { SET, CPY, MOVE } op_kind;
typedef struct {
    const char *name;
    op_kind op;
    size_t min, max;   /* sizes drawn uniformly from [min, max] */
    int passes;        /* over the sizes per timed batch: ~0.3 ms or more */
} series;

static const series all_series[] = {
    {"memset 0-256", SET, 0, 256, 16},
    {"memcpy 0-256", CPY, 0, 256, 16},
    {"memmove 0-256", MOVE, 0, 256, 16},
    {"memcpy 2K-8K", CPY, 2048, 8192, 1},   /* the logarithmic buckets */
};
#define NSERIES (sizeof all_series / sizeof all_series[0])

/* Through the PLT into the shim, as any program's calls. */
static void *(*volatile set_fn)(void *, int, size_t) = memset;
static void *(*volatile cpy_fn)(void *, const void *, size_t) = memcpy;
static void *(*volatile move_fn)(void *, const void *, size_t) = memmove;

/* The child: ns per call of every series, one line each. */
static int child(void)
{
    static uint32_t sizes[CALLS];
    char *buf = lab_alloc(3 * 8192 + 128);
    uint64_t rng = 0x7ec0bd;
    for (size_t s = 0; s < NSERIES; s++) {
        const series *se = &all_series[s];
        for (size_t i = 0; i < CALLS; i++)
            sizes[i] = (uint32_t)(se->min + lab_rand(&rng) % (se->max - se->min + 1));
        double ns[BATCHES];
        for (int b = -2; b < BATCHES; b++) {   /* two warm-up batches */
            double t0 = lab_now_ns();
            for (int p = 0; p < se->passes; p++) {
                for (size_t i = 0; i < CALLS; i++) {
                    size_t off = i & 63;   /* every destination alignment */
                    if (se->op == SET)
                        set_fn(buf + off, (int)i, sizes[i]);
                    else if (se->op == CPY)
                        cpy_fn(buf + off, buf + 8192 + 64, sizes[i]);
                    else
                        move_fn(buf + off, buf + off + 512, sizes[i]);
                }
                lab_escape(buf);
            }
            if (b >= 0)
                ns[b] = (lab_now_ns() - t0) / (CALLS * se->passes);
        }
        printf("%zu %.4f\n", s, lab_stats_of(ns, BATCHES).median);
    }
    return 0;
}

/* One child process; fills ns[NSERIES]; 0 on success. */
static int run_child(const char *so, const char *record_dir, double *ns)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        setenv("LD_PRELOAD", so, 1);
        if (record_dir)
            setenv("MEMKIT_RECORD", record_dir, 1);
        else
            unsetenv("MEMKIT_RECORD");
        setenv(CHILD_ENV, "1", 1);
        execl("/proc/self/exe", "memkit-exp-record-overhead", (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    FILE *f = fdopen(fd[0], "r");
    size_t got = 0, s;
    double v;
    while (f && fscanf(f, "%zu %lf", &s, &v) == 2)
        if (s < NSERIES)
            ns[s] = v, got++;
    if (f)
        fclose(f);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 && got == NSERIES ? 0 : -1;
}

static const lab_arg args[] = {
    {"rounds", LAB_INT, "15", "3", "process pairs, each without and with recording", 2, 1000},
    {"preload", LAB_TEXT, NULL, NULL, "the preload library (default: the build's or the installed one)", 0, 0},
};

/* rounds process pairs, each a child without and with recording into dir,
 * in alternating order so drift favours neither; each child's ns per call
 * into plain / rec[round * NSERIES + series].  0, or 1 when a child failed. */
static int measure_pairs(lab_ctx *ctx, const char *so, const char *dir, size_t rounds,
                         double *plain, double *rec)
{
    for (size_t r = 0; r < rounds; r++) {
        lab_progress(ctx, r, rounds, "process pairs");
        int rec_first = r & 1;
        for (int k = 0; k < 2; k++) {
            int recording = k == 0 ? rec_first : !rec_first;
            double *into = recording ? &rec[r * NSERIES] : &plain[r * NSERIES];
            if (run_child(so, recording ? dir : NULL, into) != 0) {
                fprintf(stderr, "error: the child process failed\n");
                return 1;
            }
        }
    }
    lab_progress(ctx, rounds, rounds, "done");
    return 0;
}

/* Series s's records (plain, recording paired with it, the recording's cost
 * per call) and its row; the cost's median. */
static double write_series(lab_ctx *ctx, size_t s, size_t rounds, const double *plain,
                           const double *rec, double *a, double *b, double *d)
{
    for (size_t r = 0; r < rounds; r++) {
        a[r] = plain[r * NSERIES + s];
        b[r] = rec[r * NSERIES + s];
        d[r] = b[r] - a[r];
    }
    char params[96];
    snprintf(params, sizeof params, "\"calls\":\"%s\"", all_series[s].name);
    lab_record tmpl = {.params_json = params, .metric = "ns_per_call", .unit = "ns", .n = rounds};
    lab_record r_plain = tmpl, r_rec = tmpl, r_cost = tmpl;
    r_plain.series = "preload", r_plain.samples = a;
    r_rec.series = "preload+record", r_rec.samples = b;
    r_rec.baseline = "preload", r_rec.baseline_samples = a;
    r_cost.series = "recording cost", r_cost.metric = "extra_ns_per_call", r_cost.samples = d;
    lab_summary sums[3] = {lab_record_emit(ctx, &r_plain), lab_record_emit(ctx, &r_rec),
                           lab_record_emit(ctx, &r_cost)};
    /* ratio: recording's speed-up over plain, < 1 is its cost */
    lab_stats sd = sums[2].s;
    printf("%-16s %10.2f %12.2f %10.2f %7.2f..%-8.2f %8.3fx\n", all_series[s].name,
           sums[0].s.median, sums[1].s.median, sd.median, sd.min, sd.max, sums[1].ratio);
    lab_summaries_free(sums, 3);
    return sd.median;
}

static void write_table(lab_ctx *ctx, size_t rounds, const double *plain, const double *rec)
{
    printf("%-16s %10s %12s %10s %16s %9s\n", "series", "plain ns", "recording ns", "extra ns",
           "(min..max pairs)", "ratio");
    double *a = malloc(rounds * sizeof *a), *b = malloc(rounds * sizeof *b);
    double *d = malloc(rounds * sizeof *d);
    double worst = 0;
    const char *worst_name = "";
    for (size_t s = 0; s < NSERIES; s++) {
        double cost = write_series(ctx, s, rounds, plain, rec, a, b, d);
        if (cost > worst)
            worst = cost, worst_name = all_series[s].name;
    }
    lab_verdict(ctx, "recording costs at most %.2f ns per call (median of %zu process pairs; %s)",
                worst, rounds, worst_name);
    free(a);
    free(b);
    free(d);
}

static int run(lab_ctx *ctx)
{
    char built_so[4096], dir[64];
    const char *so = lab_preload_library(lab_text(ctx, "preload"), built_so, sizeof built_so);
    size_t rounds = (size_t)lab_int(ctx, "rounds");
    if (!so || lab_temp_dir("record-overhead", dir, sizeof dir))
        return 2;
    double *plain = calloc(rounds * NSERIES, sizeof *plain);
    double *rec = calloc(rounds * NSERIES, sizeof *rec);
    int rc = measure_pairs(ctx, so, dir, rounds, plain, rec);
    lab_remove_dir(dir);
    if (rc == 0)
        write_table(ctx, rounds, plain, rec);
    free(plain);
    free(rec);
    return rc;
}

int main(int argc, char **argv)
{
    static const lab_info info = {
        .name = "record-overhead", .seed = "(beyond the seeds)",
        .description = "ns per memset/memcpy/memmove call under the preload shim with and without "
                       "memkit record",
        .args = args, .nargs = sizeof args / sizeof args[0],
        /* A few ns a call: per-round samples of one process cannot be judged
         * between runs (placement moves them more); three processes can. */
        .processes = 3};
    if (getenv(CHILD_ENV))
        return child();
    return lab_main(argc, argv, &info, run);
}
