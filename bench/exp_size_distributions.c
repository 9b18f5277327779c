/* size-distributions: memset, memcpy and memmove on measured production
 * size distributions (data/fleet-size-distributions/, see its FORMAT.md):
 * ns per call for glibc and memkit, and memkit's speed-up per distribution.
 * data=DIR takes any directory of such files (a recorded program's, say):
 * each *.csv whose name says memset, memcpy or memmove, named after it.
 *
 * Each file gives the size distribution, the probability that the buffers
 * overlap (memmove) and the distribution of pointer alignments (1, 2, 4 ..
 * 64: the largest power of two dividing the address, capped at 64).  A
 * batch is CALLS calls drawn from them once, up front: size, a destination
 * and a source with exactly the drawn alignment at a random place in a
 * window of WINDOW_LINES cache lines, overlapping with the drawn
 * probability.  Both buffers together stay within L2, so the batch measures
 * the routines, not memory.  The methods run the same batch in the lab's
 * interleaved rounds; per round, memkit's speed-up over glibc.  Small
 * calls depend on where code and data landed, so it runs in several
 * processes and pools them.  A directory other than the shipped one
 * (data=DIR or $MEMKIT_DATA; `memkit record` writes such directories) is
 * named in every measurement ("data": its absolute path), so the report can
 * find a recording's files.  Arguments: see --help. */
#include "lab.h"
#include "distribution.h"
#include "resources.h"
#include "memkit.h"

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW_LINES 64

typedef enum { OP_MEMSET, OP_MEMCPY, OP_MEMMOVE, NOPS } op_kind;
static const char *const op_names[NOPS] = {"memset", "memcpy", "memmove"};

/* Through volatile pointers: the compiler must not inline or fold them. */
static void *(*volatile glibc_memset)(void *, int, size_t) = memset;
static void *(*volatile glibc_memcpy)(void *, const void *, size_t) = memcpy;
static void *(*volatile glibc_memmove)(void *, const void *, size_t) = memmove;

/* Per op, the methods: glibc (the baseline) and memkit; filled at run
 * time from the volatile pointers, so no call is resolved at compile time. */
enum { KIND_SET, KIND_COPY };
static lab_method op_methods[NOPS][2];

static void init_methods(void)
{
    void (*fn[NOPS][2])(void) = {
        {(void (*)(void))glibc_memset, (void (*)(void))mk_memset},
        {(void (*)(void))glibc_memcpy, (void (*)(void))mk_memcpy},
        {(void (*)(void))glibc_memmove, (void (*)(void))mk_memmove},
    };
    static char names[NOPS][2][24];
    for (int op = 0; op < NOPS; op++)
        for (int i = 0; i < 2; i++) {
            snprintf(names[op][i], sizeof names[op][i], "%s %s", i ? "memkit" : "glibc",
                     op_names[op]);
            op_methods[op][i] = (lab_method){names[op][i], fn[op][i],
                                             op == OP_MEMSET ? KIND_SET : KIND_COPY, NULL, NULL};
        }
}

/* ---- the distributions ---- */

/* The parser and the domain of each line: lab/distribution.h */
typedef lab_distribution distribution;

typedef struct {
    char name[64];
    op_kind op;
    distribution sizes, overlap, align;
} dist_file;

static double draw(const distribution *d, uint64_t *rng) { return lab_dist_draw(d, rng); }

/* The file's distributions; its warnings said when `warn` (once, in the
 * main process's check, not again in every process). */
static int load_file(const char *dir, const char *file, op_kind op, dist_file *out, int warn)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "error: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    static char text[4 << 20];
    size_t len = fread(text, 1, sizeof text, f);
    fclose(f);
    char err[256], warning[512];
    int line = lab_dist_parse(text, len, &out->sizes, &out->overlap, &out->align, err, sizeof err,
                              warning, sizeof warning);
    if (line) {
        fprintf(stderr, "error: %s:%d: %s\n", path, line, err);
        return -1;
    }
    if (warn && warning[0])
        fprintf(stderr, "warning: %s: %s\n", path, warning);
    snprintf(out->name, sizeof out->name, "%.*s", (int)(strlen(file) - 4), file);
    out->op = op;
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(((const dist_file *)a)->name, ((const dist_file *)b)->name);
}

/* The op a file's name says, or -1. */
static int op_of(const char *name)
{
    static const char *const words[NOPS] = {"memset", "memcpy", "memmove"};
    for (int op = 0; op < NOPS; op++)
        if (strcasestr(name, words[op]))
            return op;
    return -1;
}

/* Every *.csv in dir whose name says its op (and contains `only`). */
static dist_file *load_dir(const char *dir, const char *only, size_t *count, int warn)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "error: cannot read directory %s: %s\n", dir, strerror(errno));
        return NULL;
    }
    size_t cap = 8, n = 0;
    dist_file *files = malloc(cap * sizeof *files);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".csv") || (only && !strstr(e->d_name, only)))
            continue;
        int op = op_of(e->d_name);
        if (op < 0) {
            if (warn)
                fprintf(stderr, "warning: %s/%s: the name says neither memset, memcpy nor "
                                "memmove; skipped\n", dir, e->d_name);
            continue;
        }
        if (n == cap)
            files = realloc(files, (cap = cap * 2 + 8) * sizeof *files);
        if (load_file(dir, e->d_name, (op_kind)op, &files[n], warn) != 0) {
            free(files);
            closedir(d);
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
static size_t make_calls(const dist_file *d, call *calls, size_t ncalls, uint64_t *rng)
{
    size_t max = 0;
    for (size_t i = 0; i < d->sizes.n; i++)
        if (d->sizes.value[i] > max)
            max = (size_t)d->sizes.value[i];
    size_t half = max + WINDOW_LINES * 64 + 64;
    for (size_t i = 0; i < ncalls; i++) {
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

typedef struct {
    char *arena;
    const call *calls;
    size_t ncalls;
} batch;

/* One batch: every call once (the warm-up: a tenth of them); ns per call. */
static double pass(const lab_method *m, void *arg, int warm)
{
    const batch *b = arg;
    size_t n = warm ? b->ncalls / 10 + 1 : b->ncalls;
    char *arena = b->arena;
    const call *c = b->calls;
    double t0 = lab_now_ns();
    if (m->kind == KIND_SET) {
        void *(*set)(void *, int, size_t) = (void *(*)(void *, int, size_t))m->fn;
        for (size_t i = 0; i < n; i++)
            set(arena + c[i].dst_off, (int)i, c[i].n);
    } else {
        void *(*copy)(void *, const void *, size_t) =
            (void *(*)(void *, const void *, size_t))m->fn;
        for (size_t i = 0; i < n; i++)
            copy(arena + c[i].dst_off, arena + c[i].src_off, c[i].n);
    }
    lab_escape(arena);
    return (lab_now_ns() - t0) / (double)n;
}

/* ---- the experiment ---- */

/* ,"data":"/abs/dir" for a directory given by the user, else "" */
static char data_param[PATH_MAX + 16];

static void name_data_dir(const char *dir)
{
    char abs[PATH_MAX];
    if (!realpath(dir, abs) || strpbrk(abs, "\"\\\n\t"))
        return;
    snprintf(data_param, sizeof data_param, ",\"data\":\"%s\"", abs);
}

static const lab_arg args[] = {
    {"data", LAB_TEXT, NULL, NULL, "directory of distribution files (default: $MEMKIT_DATA, "
                                   "else the source tree's data/fleet-size-distributions)", 0, 0},
    {"calls", LAB_INT, "50000", NULL, "calls per batch (fewer: a predictor may learn them)", 100,
     10000000},
    {"rounds", LAB_INT, "31", "7", "interleaved rounds per distribution, per process", 3, 100000},
    {"only", LAB_TEXT, NULL, NULL, "only the files whose name contains this text", 0, 0},
};

/* data=DIR, else $MEMKIT_DATA, else the shipped files; *given: not those */
static const char *data_dir(lab_ctx *ctx, int *given)
{
    static char shipped[4096];
    const char *dir = lab_text(ctx, "data");
    if (!dir)
        dir = getenv("MEMKIT_DATA");
    *given = dir != NULL;
    return dir ? dir : lab_resource_path("fleet-size-distributions",
                                         "data/fleet-size-distributions", shipped, sizeof shipped);
}

/* Every file holds (lab/distribution.h) and there is one: said once, with
 * the file and line at fault, before any process runs. */
static int check(lab_ctx *ctx)
{
    int given;
    const char *dir = data_dir(ctx, &given), *only = lab_text(ctx, "only");
    size_t nfiles = 0;
    dist_file *files = load_dir(dir, only, &nfiles, 1);
    int loaded = files != NULL;
    free(files);
    if (!loaded)
        return 2;
    if (nfiles)
        return 0;
    char pattern[4200], shown[256];
    glob_t parts = {0};
    snprintf(pattern, sizeof pattern, "%s/.parts-*", dir);
    int interrupted = glob(pattern, GLOB_ONLYDIR, NULL, &parts) == 0;
    globfree(&parts);
    fprintf(stderr, "error: no distribution file (*.csv naming memset, memcpy or memmove) in "
                    "%s%s%s%s%s%s\n", dir, only ? " matching only=" : "",
            only ? lab_printable(only, shown, sizeof shown) : "",
            interrupted ? ": it holds an interrupted recording; `memkit record --recover " : "",
            interrupted ? dir : "", interrupted ? "` writes it" : "");
    return 2;
}

static int run(lab_ctx *ctx)
{
    init_methods();
    int given;
    const char *only = lab_text(ctx, "only"), *dir = data_dir(ctx, &given);
    size_t rounds = (size_t)lab_int(ctx, "rounds"), ncalls = (size_t)lab_int(ctx, "calls");
    if (given)
        name_data_dir(dir);
    size_t nfiles = 0;
    dist_file *files = load_dir(dir, only, &nfiles, 0);
    if (!files || !nfiles)   /* check() said why */
        return 2;

    call *calls = malloc(ncalls * sizeof *calls);
    double *ns = malloc(2 * rounds * sizeof *ns);
    double log_sum[NOPS] = {0}, worst[NOPS] = {0};
    const char *worst_name[NOPS] = {0};
    size_t counted[NOPS] = {0}, slower[NOPS] = {0}, faster[NOPS] = {0};
    uint64_t rng = 0x5173aa1b1e5ull;
    lab_ranking *rk[NOPS];
    for (int op = 0; op < NOPS; op++) {
        char what[64];
        snprintf(what, sizeof what, "%s, production size distributions", op_names[op]);
        rk[op] = lab_ranking_new(what, 0, 0);
    }

    printf("size-distributions: %zu calls per batch drawn from each distribution (%s), %zu "
           "rounds x %u processes; speed-up: glibc's time / memkit's, per round\n", ncalls,
           ncalls >= LAB_UNLEARNABLE_CALLS ? "more than a branch predictor can learn"
                                           : "FEWER than 50,000: a predictor may learn them",
           rounds, ctx->nprocesses);
    printf("%-24s %-8s %10s %10s %9s %17s\n", "distribution", "op", "glibc ns", "memkit ns",
           "speed-up", "(~95% interval)");
    for (size_t f = 0; f < nfiles; f++) {
        const dist_file *d = &files[f];
        lab_progress(ctx, f, nfiles, d->name);
        size_t arena_len = make_calls(d, calls, ncalls, &rng);
        batch b = {lab_alloc(arena_len), calls, ncalls};
        const lab_method *m = op_methods[d->op];
        lab_interleave(ctx, m, 2, rounds, pass, &b, ns);
        lab_free(b.arena, arena_len);

        char params[sizeof data_param + 200];
        snprintf(params, sizeof params, "\"distribution\":\"%s\",\"op\":\"%s\",\"calls\":%zu%s",
                 d->name, op_names[d->op], ncalls, data_param);
        lab_record tmpl = {.params_json = params, .metric = "ns_per_call", .unit = "ns"};
        lab_summary sums[2];
        lab_emit_methods(ctx, &tmpl, m, 2, rounds, ns, 0, sums);
        lab_ranking_add(rk[d->op], d->name, m, 2, 1, sums, NULL);
        double up = sums[1].ratio;
        int j = lab_judge(sums[1].ratio_lo, sums[1].ratio_hi);
        printf("%-24s %-8s %10.2f %10.2f %8.3fx %8.3f..%-8.3f%s\n", d->name, op_names[d->op],
               sums[0].value, sums[1].value, up, sums[1].ratio_lo, sums[1].ratio_hi,
               j ? "" : " too noisy to tell");
        log_sum[d->op] += log(up);
        counted[d->op]++;
        faster[d->op] += j > 0;
        slower[d->op] += j < 0;
        if (!worst_name[d->op] || up < worst[d->op])
            worst[d->op] = up, worst_name[d->op] = d->name;
        lab_summary_free(&sums[0]);
        lab_summary_free(&sums[1]);
        fflush(stdout);
    }
    lab_progress(ctx, nfiles, nfiles, "done");
    for (int op = 0; op < NOPS; op++)
        if (counted[op])
            lab_verdict(ctx, "%s: memkit's speed-up over glibc, geometric mean %.3fx over %zu "
                             "distributions (faster beyond the noise in %zu, slower in %zu, too "
                             "noisy to tell in %zu); worst %.3fx (%s)",
                        op_names[op], exp(log_sum[op] / (double)counted[op]), counted[op],
                        faster[op], slower[op], counted[op] - faster[op] - slower[op], worst[op],
                        worst_name[op]);
    for (int op = 0; op < NOPS; op++)
        lab_ranking_verdicts(ctx, rk[op]);
    free(calls);
    free(ns);
    free(files);
    return 0;
}

int main(int argc, char **argv)
{
    static const lab_info info = {
        "size-distributions", "beyond the seeds (production size distributions)",
        "memset, memcpy and memmove on production size distributions (or any given): ns/call, "
        "memkit's speed-up over glibc, 50,000 unlearnable calls per batch, several processes",
        args, sizeof args / sizeof args[0], 3, 2, .check = check, .pinned = 1};
    return lab_main(argc, argv, &info, run);
}
