/* SPDX-License-Identifier: Apache-2.0 */
/* memkit-tune-experiment: the timings `memkit tune` decides from.  Each
 * configuration of the library it is given (a label and MEMKIT_TUNABLES
 * settings over the process's own) is a method of the lab's one interleave:
 * put in force (mk_config_install) before its warm-up pass, so the
 * configurations take turns in one process, in a shuffled order each
 * round, over several processes pooled.  Not in the lab's suite (its
 * arguments come from `memkit tune`), hence not a memkit-exp- program.
 *
 *   memkit-tune-experiment [--jsonl FILE] configs='LABEL@SPEC;...' cells=OP:SIZE,...
 *                          [rounds=N] [batch=NS] [best_of=K] [processes=N]
 *                          [routines=memkit|glibc]
 *   memkit-tune-experiment --loaded   the library as the environment set it up:
 *       {"tunables": "name=value:...", "profile": PATH or "", "pool_threads": N}
 *
 * OP: a row of src/diagnostics/workloads.def: set0 (mk_memset of 0), set (of 0x5c),
 * copy (mk_memcpy, both 64-byte aligned), copy3 (the destination 3 bytes
 * off), pset, pcopy (mk_parallel_memset/memcpy on a pool of the
 * configuration's `threads`).
 * routines=glibc times the C library's memset and memcpy on the same
 * workloads instead (set0, set, copy, copy3): `memkit tune --glibc` starts
 * a process per GLIBC_TUNABLES setting, which glibc reads only at start-up,
 * and gives it one configuration with no settings.
 * Records: series LABEL, params {"op", "size"}, ns per call, one sample per
 * round, each the fastest of best_of batches of ~batch ns: the machine is
 * shared, and a batch the scheduler interrupted says nothing of the code. */
#include "lab.h"
#include "internal.h"   /* mk_config_install */
#include "memkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_CONFIGS = 16, MAX_CELLS = 512 };

typedef struct {
    char label[64];
    mk_tunables *t;
    mk_pool *pool;            /* for pset/pcopy; created when first needed */
} config;

/* The workloads: src/diagnostics/workloads.def's rows, in its order. */
typedef enum {
#define TUNE_WORKLOAD(op, family, words) OP_##op,
#include "diagnostics/workloads.def"
#undef TUNE_WORKLOAD
    NOPS
} op_kind;
static const char *const op_names[NOPS] = {
#define TUNE_WORKLOAD(op, family, words) #op,
#include "diagnostics/workloads.def"
#undef TUNE_WORKLOAD
};
/* "set0, set, ...": the ops in words, for a refusal */
#define TUNE_WORKLOAD(op, family, words) ", " #op
static const char OP_LIST_ALL[] = ""
#include "diagnostics/workloads.def"
    ;
#undef TUNE_WORKLOAD
#define OP_LIST (OP_LIST_ALL + 2)

typedef struct {
    op_kind op;
    size_t size;
} cell;

static config configs[MAX_CONFIGS];
static size_t nconfigs;
static cell cells[MAX_CELLS];
static size_t ncells;

static void first_problem(void *ctx, const char *line)
{
    char *err = ctx;
    if (!err[0])
        snprintf(err, 256, "%s", line);
}

/* The variants were chosen once, at load (ifunc): a configuration forcing
 * another could not be put in force between batches. */
static int same_variants(const mk_tunables *t)
{
    for (size_t i = 0; i < MK_TUNABLE_COUNT; i++) {
        const char *name = mk_tunable_rows[i].name;
        if (mk_tunable_rows[i].kind == MK_KIND_VARIANT &&
            strcmp(mk_tunables_variant(t, name), mk_tunables_variant(mk_tunables_get(), name)))
            return 0;
    }
    return 1;
}

static int parse_configs(const char *v, char *err, size_t errlen)
{
    for (size_t i = 0; i < nconfigs; i++)
        mk_tunables_free(configs[i].t);
    nconfigs = 0;
    for (const char *p = v; *p;) {
        const char *end = strchr(p, ';'), *at = strchr(p, '@');
        if (!end)
            end = p + strlen(p);
        if (!at || at > end || at == p || (size_t)(at - p) >= sizeof configs[0].label)
            return lab_fail(err, errlen, "each configuration is LABEL@SETTINGS (a label of 1..63 "
                                         "characters), separated by ';'");
        if (nconfigs == MAX_CONFIGS)
            return lab_fail(err, errlen, "at most %d configurations", MAX_CONFIGS);
        config *c = &configs[nconfigs++];
        memset(c, 0, sizeof *c);
        memcpy(c->label, p, (size_t)(at - p));
        char spec[2048], problem[256] = "";
        if ((size_t)(end - at) > sizeof spec)
            return lab_fail(err, errlen, "configuration %s: settings too long", c->label);
        memcpy(spec, at + 1, (size_t)(end - at - 1));
        spec[end - at - 1] = 0;
        c->t = mk_tunables_copy(mk_tunables_get());
        if (!c->t)
            return lab_fail(err, errlen, "out of memory");
        if (spec[0] && mk_tunables_parse(c->t, spec, first_problem, problem))
            return lab_fail(err, errlen, "configuration %s: %s", c->label, problem);
        if (!same_variants(c->t))
            return lab_fail(err, errlen, "configuration %s forces a variant: variants are chosen at "
                                         "load time, not between batches", c->label);
        p = *end ? end + 1 : end;
    }
    return nconfigs ? 0 : lab_fail(err, errlen, "no configuration");
}

/* The C library's routines at the addresses their ifuncs chose, through
 * volatile pointers (not inlined, not folded), as the lab's glibc methods
 * call them (bench/lab/memset_methods.c). */
static void *(*volatile glibc_memset)(void *, int, size_t) = memset;
static void *(*volatile glibc_memcpy)(void *, const void *, size_t) = memcpy;
static int time_glibc;   /* routines=glibc */

static int check_routines(const char *v, char *err, size_t errlen)
{
    return lab_one_of(v, "memkit|glibc", err, errlen);
}

static int parse_cells(const char *v, char *err, size_t errlen)
{
    ncells = 0;
    char item[64];
    for (const char *p = v; *p;) {
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof item)
            return lab_fail(err, errlen, "each cell is OP:SIZE, separated by ','");
        memcpy(item, p, len);
        item[len] = 0;
        char *colon = strchr(item, ':');
        size_t size;
        int op = -1;
        if (colon) {
            *colon = 0;
            for (int i = 0; i < NOPS; i++)
                if (!strcmp(item, op_names[i]))
                    op = i;
        }
        if (op < 0 || lab_try_parse_size(colon + 1, &size) || size == 0)
            return lab_fail(err, errlen, "not a cell: %.60s (OP:SIZE, OP one of %s, SIZE above 0)",
                            p, OP_LIST);
        if (ncells == MAX_CELLS)
            return lab_fail(err, errlen, "at most %d cells", MAX_CELLS);
        cells[ncells++] = (cell){(op_kind)op, size};
        p += len + (p[len] == ',');
    }
    return ncells ? 0 : lab_fail(err, errlen, "no cell");
}

static const lab_arg args[] = {
    {"configs", LAB_TEXT, NULL, NULL, "LABEL@SETTINGS;...: the configurations compared", 0, 0,
     parse_configs},
    {"cells", LAB_TEXT, NULL, NULL, "OP:SIZE,...: the workloads and sizes timed", 0, 0, parse_cells},
    {"rounds", LAB_INT, "4", "2", "interleaved rounds per process", 2, 1000},
    {"batch", LAB_REAL, "7e5", "1e5", "the length of a timed batch, ns", 1e3, 1e9},
    {"best_of", LAB_INT, "3", NULL, "each sample: the fastest of this many batches", 1, 100},
    {"routines", LAB_TEXT, "memkit", NULL,
     "whose memset/memcpy: memkit (under each configuration) or glibc (as GLIBC_TUNABLES set it up)", 0, 0,
     check_routines},
};

typedef struct {
    cell c;
    char *dst, *src;
    unsigned long reps;
    long best_of;
} job;

/* reps calls of f; always inlined with f a constant, so memkit's routine is
 * called directly, as a program calls it (glibc's through its volatile
 * pointer, which keeps the compiler from expanding memset/memcpy itself). */
static inline __attribute__((always_inline)) void set_reps(void *(*f)(void *, int, size_t), char *d,
                                                           int value, size_t n, unsigned long reps)
{
    for (unsigned long i = 0; i < reps; i++, lab_escape(d))
        f(d, value, n);
}

static inline __attribute__((always_inline)) void copy_reps(void *(*f)(void *, const void *, size_t),
                                                            char *d, const char *s, size_t n,
                                                            unsigned long reps)
{
    for (unsigned long i = 0; i < reps; i++, lab_escape(d))
        f(d, s, n);
}

/* reps calls of the cell's workload, timed (the op's switch outside the loop) */
static double batch_ns(const config *cfg, const job *j, unsigned long reps)
{
    size_t n = j->c.size;
    char *d = j->dst + (j->c.op == OP_copy3 ? 3 : 0);
    const char *s = j->src;
    int value = j->c.op == OP_set0 ? 0 : 0x5c;
    double t0 = lab_now_ns();
    switch (j->c.op) {
    case OP_set0: case OP_set:
        if (time_glibc)
            set_reps(glibc_memset, d, value, n, reps);
        else
            set_reps(mk_memset, d, value, n, reps);
        break;
    case OP_copy: case OP_copy3:
        if (time_glibc)
            copy_reps(glibc_memcpy, d, s, n, reps);
        else
            copy_reps(mk_memcpy, d, s, n, reps);
        break;
    case OP_pset:
        for (unsigned long i = 0; i < reps; i++, lab_escape(d))
            mk_parallel_memset(cfg->pool, d, value, n);
        break;
    case OP_pcopy:
        for (unsigned long i = 0; i < reps; i++, lab_escape(d))
            mk_parallel_memcpy(cfg->pool, d, s, n);
        break;
    case NOPS: break;
    }
    return lab_now_ns() - t0;
}

/* The configuration goes in force before its warm-up pass, which
 * lab_interleave runs right before each timed pass of the same method. */
static double pass(const lab_method *m, void *arg, int warm)
{
    const config *cfg = m->data;
    job *j = arg;
    if (warm) {   /* the buffers back in the cache, the code in the icache */
        mk_config_install(cfg->t);
        batch_ns(cfg, j, 1);
        return 0;
    }
    double best = batch_ns(cfg, j, j->reps);
    for (long k = 1; k < j->best_of; k++) {
        double again = batch_ns(cfg, j, j->reps);
        best = again < best ? again : best;
    }
    return best / (double)j->reps;
}

/* Calls per batch for a cell: ~batch ns under its fastest configuration
 * (the same for every configuration, so each sample is the same work). */
static unsigned long reps_for(job *j, double batch)
{
    double fastest = 1e300;
    for (size_t i = 0; i < nconfigs; i++) {
        mk_config_install(configs[i].t);
        batch_ns(&configs[i], j, 1);
        double ns = batch_ns(&configs[i], j, 1);
        fastest = ns < fastest ? ns : fastest;
    }
    double reps = batch / (fastest > 1 ? fastest : 1);
    return reps < 1 ? 1 : reps > 1e6 ? 1000000 : (unsigned long)reps;
}

static int run(lab_ctx *ctx)
{
    size_t rounds = (size_t)lab_int(ctx, "rounds"), max = 0;
    double batch = lab_real(ctx, "batch");
    time_glibc = !strcmp(lab_text(ctx, "routines"), "glibc");
    lab_method methods[MAX_CONFIGS];
    for (size_t i = 0; i < nconfigs; i++)
        methods[i] = (lab_method){.name = configs[i].label, .data = &configs[i]};
    for (size_t c = 0; c < ncells; c++) {
        max = cells[c].size > max ? cells[c].size : max;
        for (size_t i = 0; (cells[c].op == OP_pset || cells[c].op == OP_pcopy) && i < nconfigs; i++) {
            size_t threads = 0;
            if (!configs[i].pool && (mk_tunables_number(configs[i].t, "threads", &threads) ||
                                     !(configs[i].pool = mk_pool_create((unsigned)threads)))) {
                fprintf(stderr, "error: tune: cannot start the pool of %s\n", configs[i].label);
                return 2;
            }
        }
    }
    /* + 4 KiB: room for the misaligned destination */
    job j = {.dst = lab_alloc(max + 4096), .src = lab_alloc(max + 4096),
             .best_of = (long)lab_int(ctx, "best_of")};
    memset(j.src, 0x3a, max);
    double *samples = malloc(nconfigs * rounds * sizeof *samples);
    lab_summary sums[MAX_CONFIGS];
    for (size_t c = 0; c < ncells; c++) {
        char what[64], params[96];
        snprintf(what, sizeof what, "%s %zu B", op_names[cells[c].op], cells[c].size);
        lab_progress(ctx, c, ncells, what);
        j.c = cells[c];
        j.reps = reps_for(&j, batch);
        lab_interleave(ctx, methods, nconfigs, rounds, pass, &j, samples);
        snprintf(params, sizeof params, "\"op\":\"%s\",\"size\":%zu", op_names[cells[c].op],
                 cells[c].size);
        lab_record tmpl = {.params_json = params, .axis = "size", .axis_unit = "B",
                           .metric = "ns_per_call", .unit = "ns"};
        lab_emit_methods(ctx, &tmpl, methods, nconfigs, rounds, samples, SIZE_MAX, sums);
        printf("%-6s %12zu", op_names[cells[c].op], cells[c].size);
        for (size_t i = 0; i < nconfigs; i++) {
            printf("  %s %.1f ns", configs[i].label, sums[i].value);
            lab_summary_free(&sums[i]);
        }
        putchar('\n');
        fflush(stdout);
    }
    lab_progress(ctx, ncells, ncells, "done");
    free(samples);
    for (size_t i = 0; i < nconfigs; i++) {
        mk_pool_destroy(configs[i].pool);
        mk_tunables_free(configs[i].t);
    }
    return 0;
}

static int check(lab_ctx *ctx)
{
    if (!lab_text(ctx, "configs") || !lab_text(ctx, "cells")) {
        fprintf(stderr, "error: tune: configs= and cells= are needed (see --help)\n");
        return 2;
    }
    /* glibc has no thread pool: its workloads are memset's and memcpy's */
    for (size_t c = 0; !strcmp(lab_text(ctx, "routines"), "glibc") && c < ncells; c++)
        if (cells[c].op == OP_pset || cells[c].op == OP_pcopy) {
            fprintf(stderr, "error: tune: routines=glibc times set0, set, copy and copy3, not %s\n",
                    op_names[cells[c].op]);
            return 2;
        }
    return 0;
}

/* What the library made of the environment: the tunables in force, the
 * profile it read and the default pool's size. */
static int print_loaded(void)
{
    const mk_tunables *t = mk_tunables_get();
    size_t need = mk_tunables_format(t, NULL, 0) + 1;
    char *text = malloc(need);
    mk_tunables_format(t, text, need);
    printf("{\"tunables\":");
    lab_json_string(stdout, text);
    printf(",\"profile\":");
    lab_json_string(stdout, mk_tunables_profile(t));
    printf(",\"pool_threads\":%u}\n", mk_pool_threads(NULL));
    free(text);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--loaded"))
        return print_loaded();
    static const lab_info info = {
        .name = "tune", .seed = "",
        .description = "memkit's own routines under each configuration memkit tune compares, "
                       "interleaved in one process: ns per call",
        .args = args, .nargs = sizeof args / sizeof args[0], .processes = 3, .quick_processes = 1,
        .check = check, .pinned = 0};
    return lab_main(argc, argv, &info, run);
}
