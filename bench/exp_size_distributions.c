/* size-distributions: memset, memcpy and memmove on measured production
 * size distributions (data/fleet-size-distributions/, see its FORMAT.md):
 * ns per call for glibc and memkit, and memkit's speed-up per distribution.
 *
 * Each file gives the size distribution, the probability that the buffers
 * overlap (memmove) and the distribution of pointer alignments (1, 2, 4 ..
 * 64: the largest power of two dividing the address, capped at 64).  A
 * batch is CALLS calls drawn from them once, up front: size, a destination
 * and a source with exactly the drawn alignment at a random place in a
 * window of WINDOW_LINES cache lines, overlapping with the drawn
 * probability.  Both buffers together stay within L2, so the batch measures
 * the routines, not memory.  The methods run the same batch interleaved
 * (glibc memkit glibc memkit ...); per round, the time ratio of each pair.
 *
 * Arguments: data=DIR or --data DIR (default: $MEMKIT_DATA, else the
 * source tree's data/fleet-size-distributions; `memkit record` writes such
 * directories), rounds=N, only=SUBSTRING. */
#include "lab.h"
#include "resources.h"
#include "memkit.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CALLS        8192
#define PASSES       8      /* over the calls per timed batch: ~0.3 ms, >> timer noise */
#define WINDOW_LINES 64
#define MAX_POINTS   4096

typedef enum { OP_MEMSET, OP_MEMCPY, OP_MEMMOVE, NOPS } op_kind;
static const char *const op_names[NOPS] = {"memset", "memcpy", "memmove"};
static const char *const file_prefix[NOPS] = {"Memset", "Memcpy", "Memmove"};

/* Through volatile pointers: the compiler must not inline or fold them. */
static void *(*volatile glibc_memset)(void *, int, size_t) = memset;
static void *(*volatile glibc_memcpy)(void *, const void *, size_t) = memcpy;
static void *(*volatile glibc_memmove)(void *, const void *, size_t) = memmove;

/* Every method is a row; the first row of an op is the baseline. */
typedef struct {
    op_kind op;
    const char *name;
    void *(*set)(void *, int, size_t);
    void *(*copy)(void *, const void *, size_t);
} method;

static method methods[3 * NOPS];
static size_t nmethods;

static void init_methods(void)
{
    method m[] = {
        {OP_MEMSET, "glibc", glibc_memset, NULL},
        {OP_MEMSET, "memkit", mk_memset, NULL},
        {OP_MEMCPY, "glibc", NULL, glibc_memcpy},
        {OP_MEMCPY, "memkit", NULL, mk_memcpy},
        {OP_MEMMOVE, "glibc", NULL, glibc_memmove},
        {OP_MEMMOVE, "memkit", NULL, mk_memmove},
    };
    nmethods = sizeof m / sizeof m[0];
    memcpy(methods, m, sizeof m);
}

/* ---- the distributions ---- */

typedef struct {
    size_t n;
    double value[MAX_POINTS], cdf[MAX_POINTS];
} distribution;

typedef struct {
    char name[64];
    op_kind op;
    distribution sizes, overlap, align;
} dist_file;

/* One line "x:p,x:p,...": the cumulative distribution of x. */
static int parse_line(const char *line, distribution *d)
{
    d->n = 0;
    double total = 0;
    const char *p = line;
    while (*p && *p != '\n') {
        char *end;
        double x = strtod(p, &end);
        if (end == p || *end != ':' || d->n == MAX_POINTS)
            return -1;
        p = end + 1;
        double prob = strtod(p, &end);
        if (end == p || prob < 0)
            return -1;
        p = end;
        total += prob;
        d->value[d->n] = x;
        d->cdf[d->n++] = total;
        if (*p == ',')
            p++;
    }
    if (d->n == 0 || total <= 0)
        return -1;
    for (size_t i = 0; i < d->n; i++)
        d->cdf[i] /= total;
    return 0;
}

static double draw(const distribution *d, uint64_t *rng)
{
    double u = (double)(lab_rand(rng) >> 11) * 0x1p-53;
    size_t lo = 0, hi = d->n - 1;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (d->cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return d->value[lo];
}

static int load_file(const char *dir, const char *file, op_kind op, dist_file *out)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "error: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    static char line[3][1 << 16];
    int ok = 1;
    for (int i = 0; i < 3 && ok; i++)
        ok = fgets(line[i], sizeof line[i], f) != NULL;
    fclose(f);
    if (!ok || parse_line(line[0], &out->sizes) || parse_line(line[1], &out->overlap) ||
        parse_line(line[2], &out->align)) {
        fprintf(stderr, "error: %s: not three lines of x:p,x:p,... (see FORMAT.md)\n", path);
        return -1;
    }
    snprintf(out->name, sizeof out->name, "%.*s", (int)(strlen(file) - 4), file);
    out->op = op;
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(((const dist_file *)a)->name, ((const dist_file *)b)->name);
}

/* Every Memset*.csv, Memcpy*.csv and Memmove*.csv in dir (the fleet's
 * Memset_0.csv .. and a recording's Memset.csv alike), named after its file. */
static dist_file *load_dir(const char *dir, const char *only, size_t *count)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "error: cannot read %s: %s\n", dir, strerror(errno));
        return NULL;
    }
    size_t cap = 16, n = 0;
    dist_file *files = malloc(cap * sizeof *files);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        int op = NOPS;
        for (int k = 0; k < NOPS; k++)
            if (!strncmp(e->d_name, file_prefix[k], strlen(file_prefix[k])))
                op = k;
        if (op == NOPS || len < 5 || len > 60 || strcmp(e->d_name + len - 4, ".csv") ||
            (only && !strstr(e->d_name, only)))
            continue;
        if (n == cap)
            files = realloc(files, (cap *= 2) * sizeof *files);
        if (load_file(dir, e->d_name, (op_kind)op, &files[n]) != 0) {
            closedir(d);
            free(files);
            return NULL;
        }
        n++;
    }
    closedir(d);
    qsort(files, n, sizeof *files, cmp_names);
    *count = n;
    return files;
}

/* ---- one batch ---- */

typedef struct {
    uint32_t n, dst_off, src_off;
} call;

/* An offset in [0, WINDOW_LINES*64) whose alignment is exactly a (64: line). */
static size_t offset_with_alignment(size_t a, uint64_t *rng)
{
    size_t line = (size_t)(lab_rand(rng) % WINDOW_LINES) * 64;
    if (a >= 64)
        return line;
    size_t odd_multiples = 64 / a / 2;   /* a*1, a*3, ... below 64 */
    return line + a * (2 * (size_t)(lab_rand(rng) % odd_multiples) + 1);
}

/* Offsets are into one arena of three parts of max + a window: a
 * non-overlapping call has its source in the first and its destination in
 * the second; an overlapping one (memmove) has its source in the second and
 * its destination within n of it. */
static size_t make_calls(const dist_file *d, call *calls, uint64_t *rng)
{
    size_t max = 0;
    for (size_t i = 0; i < d->sizes.n; i++)
        if (d->sizes.value[i] > max)
            max = (size_t)d->sizes.value[i];
    size_t half = max + WINDOW_LINES * 64 + 64;
    for (size_t i = 0; i < CALLS; i++) {
        size_t n = (size_t)draw(&d->sizes, rng);
        size_t src = offset_with_alignment((size_t)draw(&d->align, rng), rng);
        size_t dst = half + offset_with_alignment((size_t)draw(&d->align, rng), rng);
        if (d->op == OP_MEMMOVE && n > 0 && draw(&d->overlap, rng) >= 1) {
            size_t delta = (size_t)(lab_rand(rng) % n) + 1;
            src += half;   /* room below the source for a backward overlap */
            dst = lab_rand(rng) & 1 ? src + delta : src - delta;
        }
        calls[i] = (call){(uint32_t)n, (uint32_t)dst, (uint32_t)src};
    }
    return 3 * half;
}

static double run_batch(const method *m, char *arena, const call *calls)
{
    double t0 = lab_now_ns();
    for (int pass = 0; pass < PASSES; pass++) {
        if (m->set) {
            for (size_t i = 0; i < CALLS; i++)
                m->set(arena + calls[i].dst_off, (int)i, calls[i].n);
        } else {
            for (size_t i = 0; i < CALLS; i++)
                m->copy(arena + calls[i].dst_off, arena + calls[i].src_off, calls[i].n);
        }
        lab_escape(arena);
    }
    return (lab_now_ns() - t0) / (CALLS * PASSES);
}

/* ---- the experiment ---- */

/* A directory other than the shipped one is named in every measurement
 * ("data": its absolute path), so the report can find a recording's files. */
static char data_param[PATH_MAX + 16];

static void name_data_dir(const char *dir)
{
    char abs[PATH_MAX];
    if (!realpath(dir, abs) || strpbrk(abs, "\"\\\n\t"))
        return;
    snprintf(data_param, sizeof data_param, ",\"data\":\"%s\"", abs);
}

static const char *data_dir(lab_ctx *ctx, const char **only, size_t *rounds)
{
    static char shipped[4096];
    const char *dir = getenv("MEMKIT_DATA");
    int given = dir != NULL;
    if (!dir)
        dir = lab_resource_path("fleet-size-distributions", "data/fleet-size-distributions",
                                shipped, sizeof shipped);
    for (int i = 1; i < ctx->argc; i++) {
        const char *a = ctx->argv[i];
        if (!strcmp(a, "--data") && i + 1 < ctx->argc)
            dir = ctx->argv[++i], given = 1;
        else if (!strncmp(a, "data=", 5))
            dir = a + 5, given = 1;
        else if (!strncmp(a, "rounds=", 7))
            *rounds = (size_t)atol(a + 7);
        else if (!strncmp(a, "only=", 5))
            *only = a + 5;
        else {
            fprintf(stderr, "error: unknown argument '%s' (expected data=DIR, rounds=N, only=TEXT)\n", a);
            return NULL;
        }
    }
    if (!dir)
        fprintf(stderr, "error: no data directory: pass data=DIR or set MEMKIT_DATA\n");
    else if (given)
        name_data_dir(dir);
    if (*rounds < 3 || *rounds > 100000) {
        fprintf(stderr, "error: rounds must be 3..100000\n");
        return NULL;
    }
    return dir;
}

static int run(lab_ctx *ctx)
{
    init_methods();
    const char *only = NULL;
    size_t rounds = ctx->quick ? 21 : 201;
    const char *dir = data_dir(ctx, &only, &rounds);
    if (!dir)
        return 2;
    size_t nfiles;
    dist_file *files = load_dir(dir, only, &nfiles);
    if (!files)
        return 2;
    if (nfiles == 0) {
        fprintf(stderr, "error: no distribution in %s matches only=%s\n", dir, only);
        return 2;
    }

    call *calls = malloc(CALLS * sizeof *calls);
    double *ns = malloc(nmethods * rounds * sizeof *ns);
    double *ratio = malloc(rounds * sizeof *ratio), *scratch = malloc(rounds * sizeof *scratch);
    double log_sum[NOPS] = {0}, worst[NOPS] = {0};
    const char *worst_name[NOPS] = {0};
    size_t counted[NOPS] = {0};
    uint64_t rng = 0x5173aa1b1e5ull;

    printf("%-14s %-8s %10s %10s %9s %17s\n", "distribution", "op", "glibc ns", "memkit ns",
           "speed-up", "(min..max pairs)");
    for (size_t f = 0; f < nfiles; f++) {
        const dist_file *d = &files[f];
        lab_progress(ctx, f, nfiles, d->name);
        size_t arena_len = make_calls(d, calls, &rng);
        char *arena = lab_alloc(arena_len);
        size_t first = 0, count = 0;   /* this op's rows in methods[] */
        for (size_t m = 0; m < nmethods; m++)
            if (methods[m].op == d->op && !count++)
                first = m;
        for (size_t m = 0; m < count; m++)   /* warm the caches and the predictors */
            run_batch(&methods[first + m], arena, calls);
        for (size_t r = 0; r < rounds; r++)
            for (size_t m = 0; m < count; m++)
                ns[m * rounds + r] = run_batch(&methods[first + m], arena, calls);
        lab_free(arena, arena_len);

        lab_stats base = lab_stats_of(memcpy(scratch, ns, rounds * sizeof *scratch), rounds);
        for (size_t m = 0; m < count; m++) {
            for (size_t r = 0; r < rounds; r++)
                ratio[r] = ns[m * rounds + r] / ns[r];
            lab_stats rs = lab_stats_of(ratio, rounds);
            lab_stats s = lab_stats_of(memcpy(scratch, &ns[m * rounds], rounds * sizeof *scratch), rounds);
            char params[sizeof data_param + 160];
            snprintf(params, sizeof params, "\"distribution\":\"%s\",\"op\":\"%s\",\"calls\":%d%s",
                     d->name, op_names[d->op], CALLS, data_param);
            char series[64];
            snprintf(series, sizeof series, "%s %s", methods[first + m].name, op_names[d->op]);
            char base_series[64];
            snprintf(base_series, sizeof base_series, "%s %s", methods[first].name, op_names[d->op]);
            lab_measurement out = {series, params, "ns_per_call", "ns", "median", s.median, s,
                                   m ? base_series : NULL, rs.median, rs.min, rs.max};
            lab_emit(ctx, &out);
            if (m == count - 1) {   /* memkit, the last row of its op */
                double up = 1 / rs.median;
                printf("%-14s %-8s %10.2f %10.2f %8.3fx %8.3f..%-8.3f\n", d->name,
                       op_names[d->op], base.median, s.median, up, 1 / rs.max, 1 / rs.min);
                log_sum[d->op] += log(up);
                counted[d->op]++;
                if (!worst_name[d->op] || up < worst[d->op])
                    worst[d->op] = up, worst_name[d->op] = d->name;
            }
        }
        fflush(stdout);
    }
    lab_progress(ctx, nfiles, nfiles, "done");
    for (int op = 0; op < NOPS; op++)
        if (counted[op])
            lab_verdict(ctx, "%s: memkit vs glibc speed-up, geometric mean %.3fx over %zu "
                             "distributions; worst %.3fx (%s)",
                        op_names[op], exp(log_sum[op] / (double)counted[op]), counted[op],
                        worst[op], worst_name[op]);
    free(calls);
    free(ns);
    free(ratio);
    free(scratch);
    free(files);
    return 0;
}

int main(int argc, char **argv)
{
    static const lab_info info = {
        "size-distributions", "beyond the seeds (production size distributions)",
        "memset, memcpy and memmove on production size distributions: ns/call, memkit vs glibc"};
    return lab_main(argc, argv, &info, run);
}
