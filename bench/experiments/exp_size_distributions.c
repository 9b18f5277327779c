/* SPDX-License-Identifier: Apache-2.0 */
/* size-distributions: memset, memcpy and memmove on measured production
 * size distributions (data/fleet-size-distributions/, see its FORMAT.md):
 * ns per call for glibc and memkit, and memkit's speed-up per distribution.
 * data=DIR takes any directory of such files (a recorded program's, say):
 * each *.csv whose name says memset, memcpy or memmove, named after it.
 *
 * Each file gives the size distribution, the probability that the buffers
 * overlap (memmove) and the distribution of pointer alignments (1, 2, 4 ..
 * 64: the largest power of two dividing the address, capped at 64), and
 * optionally the source's alignments apart (a fourth line: `memkit record`
 * writes it; else the sources draw from the third line too).  A batch is
 * CALLS calls drawn from them once, up front: size, a destination and a
 * source with exactly the drawn alignment at a random place in a
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
#include "sweep.h"
#include "working_set.h"
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

/* Per op, the methods: glibc (the baseline), memkit, then the peers
 * (peer=) that export the op; filled at run time from the volatile
 * pointers, so no call is resolved at compile time. */
enum { KIND_SET, KIND_COPY };
enum { BASELINE, MEMKIT, MAX_METHODS = 2 + 14 };
static lab_method op_methods[NOPS][MAX_METHODS];
static size_t op_nmethods[NOPS];
/* op_kind in the peers' terms */
static const int peer_op[NOPS] = {LAB_PEER_MEMSET, LAB_PEER_MEMCPY, LAB_PEER_MEMMOVE};

static void init_methods(lab_ctx *ctx)
{
    void (*fn[NOPS][2])(void) = {
        {(void (*)(void))glibc_memset, (void (*)(void))mk_memset},
        {(void (*)(void))glibc_memcpy, (void (*)(void))mk_memcpy},
        {(void (*)(void))glibc_memmove, (void (*)(void))mk_memmove},
    };
    static char names[NOPS][2][24];
    for (int op = 0; op < NOPS; op++) {
        int kind = op == OP_MEMSET ? KIND_SET : KIND_COPY;
        for (int i = 0; i < 2; i++) {
            snprintf(names[op][i], sizeof names[op][i], "%s %s", i ? "memkit" : "glibc",
                     op_names[op]);
            op_methods[op][i] = (lab_method){.name = names[op][i], .fn = fn[op][i], .kind = kind,
                                             .glibc = i == BASELINE};
        }
        char suffix[16];
        snprintf(suffix, sizeof suffix, " %s", op_names[op]);
        op_nmethods[op] = lab_peer_methods(ctx, peer_op[op], suffix, kind, op_methods[op], 2,
                                           MAX_METHODS);
    }
}

/* ---- the distributions ---- */

/* The parser and the domain of each line: lab/distribution.h */
typedef lab_distribution distribution;

typedef struct {
    char name[64];
    op_kind op;
    distribution sizes, overlap, align;
    distribution src_align;   /* the optional fourth line; n == 0: the sources draw from align */
    distribution repeat;      /* the optional fifth; n == 0: every size drawn afresh */
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
    int line = lab_dist_parse(text, len, &out->sizes, &out->overlap, &out->align,
                              &out->src_align, &out->repeat, err, sizeof err, warning,
                              sizeof warning);
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

/* What the timed loop reads: offsets from one base (hot: the window arena;
 * cold: the working set's arenas, source side then destination side). */
typedef struct {
    uint32_t n, dst_off, src_off;
} call;

/* What a call is, whatever the working set: its size, where in a cache
 * line each pointer starts (the drawn alignment) and, for an overlapping
 * memmove, dst - src.  Drawn once per distribution, so every working set
 * replays the same calls, only placed elsewhere. */
typedef struct {
    uint32_t n, src_window, dst_window;   /* offsets in the hot window; & 63: in the line */
    int32_t overlap;                      /* dst - src; 0: apart */
} call_shape;

/* An offset in [0, WINDOW_LINES*64) whose alignment is exactly a (64: line). */
static size_t offset_with_alignment(size_t a, uint64_t *rng)
{
    size_t line = (size_t)(lab_rand(rng) % WINDOW_LINES) * 64;
    if (a >= 64)
        return line;
    size_t odd_multiples = 64 / a / 2;   /* a*1, a*3, ... below 64 */
    return line + a * (2 * (size_t)(lab_rand(rng) % odd_multiples) + 1);
}

/* batch=: a distribution of large calls draws no fewer calls than this a
 * batch (its sizes are then too few to stand for it: the replay says so). */
#define MIN_CALLS 8
#define TEXT_(x) #x
#define TEXT(x) TEXT_(x)

/* Calls per batch of d: `calls`, or fewer where batch_bytes (0: no bound)
 * would not hold them at d's mean size: 50,000 of numpy's 16 MiB copies
 * were 800 GB a batch, while each small function needs its 50,000. */
static size_t calls_for(const dist_file *d, size_t calls, size_t batch_bytes)
{
    double mean = 0;
    for (size_t i = 0; i < d->sizes.n; i++)
        mean += d->sizes.value[i] * (d->sizes.cdf[i] - (i ? d->sizes.cdf[i - 1] : 0));
    if (!batch_bytes || mean * (double)calls <= (double)batch_bytes)
        return calls;
    size_t fit = (size_t)((double)batch_bytes / mean);
    return fit < MIN_CALLS ? MIN_CALLS : fit;
}

static size_t largest_size(const dist_file *d)
{
    size_t max = 0;
    for (size_t i = 0; i < d->sizes.n; i++)
        if (d->sizes.value[i] > max)
            max = (size_t)d->sizes.value[i];
    return max;
}

/* The sizes of a batch, stratified: call i takes its size at a random
 * place in its own 1/ncalls of the cumulative distribution, the strata in a
 * random order.  A batch of a few large calls (batch=) then holds each size
 * in its share: 12 independent draws from numpy's memmoves, two thirds of
 * them 16 MiB, held anywhere from 5 to 11 such calls, and the replay's ns
 * per call moved 4x between two recordings of the same program. */
static void stratified_sizes(const distribution *sizes, size_t *out, size_t ncalls, uint64_t *rng)
{
    for (size_t i = 0; i < ncalls; i++)
        out[i] = i;
    for (size_t i = ncalls; i > 1; i--) {
        size_t j = (size_t)(lab_rand(rng) % i), t = out[i - 1];
        out[i - 1] = out[j];
        out[j] = t;
    }
    for (size_t i = 0; i < ncalls; i++) {
        double u = ((double)out[i] + (double)(lab_rand(rng) >> 11) * 0x1p-53) / (double)ncalls;
        out[i] = (size_t)lab_dist_at(sizes, u < 1 ? u : 0x1.fffffffffffffp-1);
    }
}

static void make_shapes(const dist_file *d, call_shape *shapes, size_t *sizes, size_t ncalls,
                        uint64_t *rng)
{
    stratified_sizes(&d->sizes, sizes, ncalls, rng);
    for (size_t i = 0; i < ncalls; i++) {
        /* A recorded program's call sites repeat their sizes this often
         * (the fifth line), and a branch predictor learns the repeats: the
         * replay repeats the previous call's size as often. */
        size_t n = i && d->repeat.n && draw(&d->repeat, rng) >= 1 ? shapes[i - 1].n : sizes[i];
        size_t src = offset_with_alignment(
            (size_t)draw(d->src_align.n ? &d->src_align : &d->align, rng), rng);
        size_t dst = offset_with_alignment((size_t)draw(&d->align, rng), rng);
        int32_t overlap = 0;
        if (d->op == OP_MEMMOVE && n > 0 && draw(&d->overlap, rng) >= 1) {
            int32_t delta = (int32_t)(lab_rand(rng) % n) + 1;
            overlap = lab_rand(rng) & 1 ? delta : -delta;
        }
        shapes[i] = (call_shape){(uint32_t)n, (uint32_t)src, (uint32_t)dst, overlap};
    }
}

/* hot: offsets into one arena of three parts of max + a window: a
 * non-overlapping call has its source in the first and its destination in
 * the second; an overlapping one (memmove) has its source in the second and
 * its destination within n of it.  Returns the arena's size. */
static size_t place_hot(const dist_file *d, const call_shape *sh, call *calls, size_t ncalls)
{
    size_t half = largest_size(d) + WINDOW_LINES * 64 + 64;
    for (size_t i = 0; i < ncalls; i++) {
        size_t src = sh[i].src_window, dst = half + sh[i].dst_window;
        if (sh[i].overlap) {
            src += half;   /* room below the source for a backward overlap */
            dst = src + (size_t)(ptrdiff_t)sh[i].overlap;
        }
        calls[i] = (call){sh[i].n, (uint32_t)dst, (uint32_t)src};
    }
    return 3 * half;
}

enum { SRC_SIDE, DST_SIDE, SIDES };

/* cold: in how many windows the calls come (lab_arena_windows) */
static size_t cold_windows(const lab_arena *a, const dist_file *d, const call_shape *sh,
                           size_t ncalls)
{
    size_t touched = 0;
    for (size_t i = 0; i < ncalls; i++)
        touched += lab_lines_touched(sh[i].n, sh[i].dst_window & 63) +
                   (d->op == OP_MEMSET ? 0 : lab_lines_touched(sh[i].n, sh[i].src_window & 63));
    return lab_arena_windows(a, d->op == OP_MEMSET ? 1 : SIDES, touched);
}

/* cold: each pointer at a random line of its own side's arena, at the
 * drawn place in the line; an overlapping memmove's pair together in the
 * destination's arena.  The calls once per window, each placed afresh. */
static void place_cold(const lab_arena *a, const call_shape *sh, call *calls, size_t ncalls,
                       size_t windows, uint64_t *rng)
{
    for (size_t i = 0; i < windows * ncalls; i++) {
        const call_shape *c = &sh[i % ncalls];
        size_t n = c->n, src_in = c->src_window & 63, src, dst;
        if (c->overlap > 0) {
            src = lab_arena_place(a, DST_SIDE, 64, src_in, 0, n + (size_t)c->overlap, rng);
            dst = src + (size_t)c->overlap;
        } else if (c->overlap < 0) {
            src = lab_arena_place(a, DST_SIDE, 64, src_in, (size_t)-c->overlap, n, rng);
            dst = src - (size_t)-c->overlap;
        } else {
            src = lab_arena_place(a, SRC_SIDE, 64, src_in, 0, n, rng);
            dst = lab_arena_place(a, DST_SIDE, 64, c->dst_window & 63, 0, n, rng);
        }
        calls[i] = (call){(uint32_t)n, (uint32_t)dst, (uint32_t)src};
    }
}

typedef struct {
    char *arena;
    const call *calls;      /* windows x ncalls */
    size_t ncalls, windows, next;
} batch;

/* One batch: every call once (the warm-up: a tenth of them), from the next
 * window (hot: the only one); ns per call. */
static double pass(const lab_method *m, void *arg, int warm)
{
    batch *b = arg;
    size_t n = warm ? b->ncalls / 10 + 1 : b->ncalls;
    char *arena = b->arena;
    const call *c = b->calls + b->next++ % b->windows * b->ncalls;
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
    {"batch", LAB_SIZE, NULL, NULL, "at most this many bytes a batch: a distribution of larger "
                                    "mean size draws fewer calls, at least " TEXT(MIN_CALLS)
                                    " (`memkit record`'s replays set it)", 0, 0},
    {"rounds", LAB_INT, "31", "7", "interleaved rounds per distribution, per process", 3, 100000},
    {"only", LAB_TEXT, NULL, NULL, "only the files whose name contains this text", 0, 0},
    LAB_WS_ARGS("hot,l1,l2,l3,dram", "hot,dram"),
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
    if (!dir) {
        fprintf(stderr, "error: no data directory: pass data=DIR or set MEMKIT_DATA\n");
        return 2;
    }
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

/* One op at one working set, over the distributions: each method's
 * speed-ups over glibc (their logs summed), memkit's judgements and its
 * worst distribution, and the ranking among all methods (fed by lab_sweep). */
typedef struct {
    double log_sum[MAX_METHODS], log_sum_tuned;   /* tuned: memkit's over glibc tuned */
    size_t n, n_tuned, faster, slower;
    double worst;
    const char *worst_name;
    lab_ranking *rk;
} tally;

static void tally_add(tally *t, const dist_file *d, size_t nm, const lab_summary *sums)
{
    for (size_t i = 1; i < nm; i++)
        t->log_sum[i] += log(sums[i].ratio);
    if (sums[MEMKIT].tuned && sums[MEMKIT].tuned->has_ratio) {
        t->log_sum_tuned += log(sums[MEMKIT].tuned->ratio);
        t->n_tuned++;
    }
    int j = lab_judge(sums[MEMKIT].ratio_lo, sums[MEMKIT].ratio_hi);
    t->faster += j > 0;
    t->slower += j < 0;
    if (!t->n++ || sums[MEMKIT].ratio < t->worst)
        t->worst = sums[MEMKIT].ratio, t->worst_name = d->name;
}

static void tally_verdicts(lab_ctx *ctx, tally *t, int op, const lab_ws *w)
{
    if (!t->n)
        return;
    char where[256], peers[512] = "", tuned[160] = "";
    lab_ws_words(w, where, sizeof where);
    if (t->n_tuned)
        snprintf(tuned, sizeof tuned, "; over glibc tuned (paired in its own processes): %.3fx",
                 exp(t->log_sum_tuned / (double)t->n_tuned));
    for (size_t i = 2; i < op_nmethods[op]; i++) {
        size_t l = strlen(peers);
        snprintf(peers + l, sizeof peers - l, "; %s: %.3fx", op_methods[op][i].name,
                 exp(t->log_sum[i] / (double)t->n));
    }
    lab_verdict(ctx, "%s, %s: memkit's speed-up over glibc, geometric mean %.3fx over %zu "
                     "distributions (faster beyond the noise in %zu, slower in %zu, too noisy to "
                     "tell in %zu); worst %.3fx (%s)%s%s",
                op_names[op], where, exp(t->log_sum[MEMKIT] / (double)t->n), t->n, t->faster,
                t->slower, t->n - t->faster - t->slower, t->worst, t->worst_name, tuned, peers);
}

/* The grid: every distribution file at every working set, point i being
 * file i / nws at working set i % nws; the same calls at every working set
 * of a file. */
typedef struct {
    dist_file *files;
    size_t nfiles, nws, rounds, ncalls, batch_bytes;
    lab_ws ws[LAB_WS_MAX];
    lab_arena arenas[LAB_WS_MAX];
    call *calls;
    size_t calls_room;        /* grown for the windows of the cold working sets */
    call_shape *shapes;
    size_t *sizes, nc;        /* nc: this file's calls */
    uint64_t rng, place_rng;
    batch b;
    size_t hot_len;           /* the hot arena of this point (b.arena), freed once measured */
    tally tallies[NOPS][LAB_WS_MAX];
    char params[sizeof data_param + 300];
    lab_record tmpl;
} dist_grid;

/* The files and the memory every point shares.  0, or 2 (said). */
static int setup(lab_ctx *ctx, dist_grid *g)
{
    init_methods(ctx);
    int given;
    const char *dir = data_dir(ctx, &given);
    g->rounds = (size_t)lab_int(ctx, "rounds");
    g->ncalls = (size_t)lab_int(ctx, "calls");
    g->batch_bytes = lab_text(ctx, "batch") ? lab_size(ctx, "batch") : 0;
    g->nws = (size_t)lab_ws_arg(ctx, g->ws);
    if (given)
        name_data_dir(dir);
    g->files = load_dir(dir, lab_text(ctx, "only"), &g->nfiles, 0);
    if (!g->files || !g->nfiles)   /* check() said why */
        return 2;
    size_t max_call = 0;   /* the cold working sets' arenas fit every file's largest call */
    for (size_t f = 0; f < g->nfiles; f++)
        if (largest_size(&g->files[f]) > max_call)
            max_call = largest_size(&g->files[f]);
    lab_ws_arenas_new(ctx, g->ws, g->nws, g->arenas, SIDES, max_call);
    g->calls_room = g->ncalls;
    g->calls = malloc(g->calls_room * sizeof *g->calls);
    g->shapes = malloc(g->ncalls * sizeof *g->shapes);
    g->sizes = malloc(g->ncalls * sizeof *g->sizes);
    g->rng = 0x5173aa1b1e5ull, g->place_rng = 0x706c616365ull;
    for (int op = 0; op < NOPS; op++)
        for (size_t w = 0; w < g->nws; w++) {
            char what[256];
            snprintf(what, sizeof what, "%s at ws=%s, production size distributions",
                     op_names[op], g->ws[w].name);
            g->tallies[op][w] = (tally){.rk = lab_ranking_new(what, 0, 0)};
        }
    return 0;
}

static void print_header(lab_ctx *ctx, const dist_grid *g)
{
    printf("size-distributions: %zu calls per batch drawn from each distribution (%s%s), %zu "
           "rounds x %u processes; speed-up: glibc's time / memkit's, per round; ws: the working "
           "set (hot: in cache; else random lines of an arena per side of that size)%s\n",
           g->ncalls, lab_learnable_words(g->ncalls),
           g->batch_bytes ? "; fewer where a batch would pass batch= bytes: its params say" : "",
           g->rounds, ctx->nprocesses,
           ctx->npeers ? "; each peer: ns per call and speed-up over glibc" : "");
    printf("%-24s %-8s %-5s %10s %10s %9s %17s", "distribution", "op", "ws", "glibc ns",
           "memkit ns", "speed-up", "(~95% interval)");
    if (ctx->ntuned)   /* glibc tuned's ns, memkit's speed-up over it (its own processes) */
        printf(" %10s %9s", "tuned ns", "vs tuned");
    for (size_t p = 0; p < ctx->npeers; p++)   /* ns per call and speed-up over glibc */
        printf(" %19.19s", ctx->peers[p].name);
    printf("\n");
}

/* The file's calls placed for working set w (cold: on random lines of its
 * arena, in as many windows as it needs; hot: in an arena of their own);
 * the working set's params into ws_params.  0, or -1 out of memory. */
static int place_calls(dist_grid *g, const dist_file *d, size_t w, char *ws_params, size_t len)
{
    g->b = (batch){NULL, g->calls, g->nc, 1, 0};
    g->hot_len = 0;
    if (!g->ws[w].bytes) {
        g->hot_len = place_hot(d, g->shapes, g->calls, g->nc);
        g->b.arena = lab_alloc(g->hot_len);
        lab_ws_params(&g->ws[w], WINDOW_LINES * 64, lab_pages_of(g->b.arena, g->hot_len),
                      ws_params, len);
        return 0;
    }
    g->b.windows = cold_windows(&g->arenas[w], d, g->shapes, g->nc);
    if (g->b.windows * g->nc > g->calls_room) {
        g->calls_room = g->b.windows * g->nc;
        g->b.calls = g->calls = realloc(g->calls, g->calls_room * sizeof *g->calls);
    }
    if (!g->calls) {
        fprintf(stderr, "error: out of memory for %zu calls\n", g->calls_room);
        return -1;
    }
    place_cold(&g->arenas[w], g->shapes, g->calls, g->nc, g->b.windows, &g->place_rng);
    g->b.arena = g->arenas[w].base;
    lab_ws_params(&g->ws[w], g->ws[w].bytes, g->arenas[w].pages, ws_params, len);
    return 0;
}

static int declare(lab_ctx *ctx, void *state, size_t i, lab_point *p, char *what, size_t len)
{
    (void)ctx;
    dist_grid *g = state;
    const dist_file *d = &g->files[i / g->nws];
    size_t w = i % g->nws;
    char ws_params[96];
    if (w == 0) {
        g->nc = calls_for(d, g->ncalls, g->batch_bytes);
        make_shapes(d, g->shapes, g->sizes, g->nc, &g->rng);
    }
    snprintf(what, len, "%s (ws=%s)", d->name, g->ws[w].name);
    if (place_calls(g, d, w, ws_params, sizeof ws_params))
        return LAB_POINT_ERROR;
    snprintf(g->params, sizeof g->params,
             "\"distribution\":\"%s\",\"op\":\"%s\",\"calls\":%zu%s%s", d->name,
             op_names[d->op], g->nc, ws_params, data_param);
    g->tmpl = (lab_record){.params_json = g->params, .metric = "ns_per_call", .unit = "ns"};
    *p = (lab_point){.methods = op_methods[d->op], .n = op_nmethods[d->op], .rounds = g->rounds,
                     .pass = pass, .arg = &g->b, .tmpl = &g->tmpl, .baseline = BASELINE,
                     .ranking = g->tallies[d->op][w].rk, .label = d->name, .memkit = MEMKIT};
    return LAB_POINT_RUN;
}

/* A measured point: its tallies and its row of the table. */
static void measured(lab_ctx *ctx, void *state, size_t i, const lab_point *p,
                     const lab_summary *sums, const double *samples)
{
    (void)samples;
    dist_grid *g = state;
    const dist_file *d = &g->files[i / g->nws];
    size_t w = i % g->nws;
    const lab_summary *mk = &sums[MEMKIT];
    if (g->hot_len)
        lab_free(g->b.arena, g->hot_len);
    tally_add(&g->tallies[d->op][w], d, p->n, sums);
    printf("%-24s %-8s %-5s %10.2f %10.2f %8.3fx %8.3f..%-8.3f", d->name, op_names[d->op],
           g->ws[w].name, sums[BASELINE].value, mk->value, mk->ratio, mk->ratio_lo, mk->ratio_hi);
    if (sums[BASELINE].tuned && mk->tuned)
        printf(" %10.2f %8.3fx", sums[BASELINE].tuned->value, mk->tuned->ratio);
    for (size_t k = 0, m = 2; k < ctx->npeers; k++)   /* the peers' methods, in order */
        if (ctx->peers[k].fn[peer_op[d->op]]) {
            printf(" %10.2f %7.3fx", sums[m].value, sums[m].ratio);
            m++;
        } else
            printf(" %19s", "-");
    printf("%s\n", lab_judge(mk->ratio_lo, mk->ratio_hi) ? "" : " too noisy to tell");
    fflush(stdout);
}

static void verdicts(lab_ctx *ctx, dist_grid *g)
{
    for (int op = 0; op < NOPS; op++)
        for (size_t w = 0; w < g->nws; w++)
            tally_verdicts(ctx, &g->tallies[op][w], op, &g->ws[w]);
    for (int op = 0; op < NOPS; op++)
        for (size_t w = 0; w < g->nws; w++)
            lab_ranking_verdicts(ctx, g->tallies[op][w].rk);
}

static void release(dist_grid *g)
{
    lab_ws_arenas_free(g->arenas, g->nws);
    free(g->calls);
    free(g->shapes);
    free(g->sizes);
    free(g->files);
}

static int run(lab_ctx *ctx)
{
    static dist_grid g;
    if (setup(ctx, &g))
        return 2;
    print_header(ctx, &g);
    size_t npoints = g.nfiles * g.nws;
    lab_grid grid = {.npoints = npoints, .max_methods = MAX_METHODS, .max_rounds = g.rounds,
                     .declare = declare, .measured = measured};
    if (lab_sweep(ctx, &grid, &g) < 0)
        return 2;
    lab_progress(ctx, npoints, npoints, "done");
    verdicts(ctx, &g);
    release(&g);
    return 0;
}

int main(int argc, char **argv)
{
    static const lab_info info = {
        .name = "size-distributions", .seed = "beyond the seeds (production size distributions)",
        .description = "memset, memcpy and memmove on production size distributions (or any "
                       "given): ns/call, memkit's speed-up over glibc, 50,000 unlearnable calls "
                       "per batch, several processes, hot and cold working sets",
        .args = args, .nargs = sizeof args / sizeof args[0], .processes = 3, .quick_processes = 2,
        .check = check, .pinned = 1,
        .peer_ops = LAB_PEER_OP(LAB_PEER_MEMSET) | LAB_PEER_OP(LAB_PEER_MEMCPY) |
                    LAB_PEER_OP(LAB_PEER_MEMMOVE),
        .races_glibc = 1};
    return lab_main(argc, argv, &info, run);
}
