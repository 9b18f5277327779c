/* SPDX-License-Identifier: Apache-2.0 */
/* The lab's driver: an experiment's command line, its processes and the
 * run from the fingerprint to the end record (see lab.h).  What it stands
 * on (arguments, clocks, records, the fingerprint, ...) is in the files
 * named for each; none of them calls back in here. */
#include "lab_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PEER_HELP "other libraries racing as methods: their own exported memset/memcpy/memmove"
#define GLIBC_TUNABLES_HELP "also race glibc under GLIBC_TUNABLES=SPEC (glibc.NAME=VALUE:...), " \
    "as glibc-tuned, in as many processes again"

static void usage(const lab_info *info, const char *program, FILE *f)
{
    const char *slash = strrchr(program, '/');
    fprintf(f,
            "usage: %s [--quick] [--jsonl PATH] [--describe] [--fingerprint] [--schema] [key=value...]\n"
            "%s%s%s%s\n"
            "  --quick         reduced grid, for smoke tests\n"
            "  --jsonl PATH    also write machine-readable results, one JSON object a line\n"
            "  --describe      print name, seed, description and arguments as JSON and exit\n"
            "  --fingerprint   print this machine's fingerprint as JSON and exit\n"
            "  --schema        print the records' fields (records.def) as JSON and exit\n"
            "  --check-args    check the arguments (and load any peers), exit 0 or 2 with why\n"
            "arguments:\n",
            slash ? slash + 1 : program, info->description, info->seed[0] ? " (seed: " : "",
            info->seed, info->seed[0] ? ")" : "");
    lab_print_args(info, f);
    if (info->peer_ops)
        fprintf(f, "  %-22s %s\n", "peer=LIB.so,...", PEER_HELP);
    if (info->races_glibc)
        fprintf(f, "  %-22s %s\n", "glibc_tunables=SPEC", GLIBC_TUNABLES_HELP);
    if (info->processes > 1)
        fprintf(f, "  %-22s run in N processes, pooled (default %u, --quick %u)\n",
                "processes=N", info->processes,
                info->quick_processes ? info->quick_processes : info->processes);
}

static void describe(const lab_info *info)
{
    static const char *const kinds[] = {"int", "size", "real", "text"};
    printf("{\"name\":");
    lab_json_string(stdout, info->name);
    printf(",\"seed\":");
    lab_json_string(stdout, info->seed);
    printf(",\"description\":");
    lab_json_string(stdout, info->description);
    printf(",\"args\":[");
    for (size_t i = 0; i < info->nargs; i++) {
        const lab_arg *a = &info->args[i];
        printf("%s{\"key\":", i ? "," : "");
        lab_json_string(stdout, a->key);
        printf(",\"kind\":\"%s\",\"default\":", kinds[a->kind]);
        if (a->def)
            lab_json_string(stdout, a->def);
        else
            printf("null");
        printf(",\"quick\":");
        lab_json_string(stdout, a->quick ? a->quick : a->def);
        printf(",\"help\":");
        lab_json_string(stdout, a->help);
        if (a->min || a->max)
            printf(",\"min\":%.15g,\"max\":%.15g", a->min, a->max);
        printf("}");
    }
    if (info->peer_ops) {
        char ops[64];
        printf("%s{\"key\":\"peer\",\"kind\":\"text\",\"default\":null,\"quick\":null,"
               "\"help\":", info->nargs ? "," : "");
        lab_json_string(stdout, PEER_HELP);
        printf(",\"ops\":");
        lab_json_string(stdout, lab_peer_ops_text(info->peer_ops, ops, sizeof ops));
        printf("}");
    }
    if (info->races_glibc) {
        printf("%s{\"key\":\"glibc_tunables\",\"kind\":\"text\",\"default\":null,\"quick\":null,"
               "\"help\":", info->nargs || info->peer_ops ? "," : "");
        lab_json_string(stdout, GLIBC_TUNABLES_HELP);
        printf("}");
    }
    printf("]");
    if (info->grid) {
        printf(",\"grid\":{");
        info->grid(stdout);
        printf("}");
    }
    printf(",\"processes\":%u,\"quick_processes\":%u}\n", info->processes ? info->processes : 1,
           info->quick_processes ? info->quick_processes : info->processes ? info->processes : 1);
}

/* The fingerprint record: members, as lab_write_fingerprint wrote them
 * (NULL: write them now; a re-executed run keeps its parent's), and the
 * glibc tunables glibc-tuned ran under (NULL: none). */
static void write_fingerprint_record(FILE *f, const char *members, const char *glibc_tunables)
{
    LAB_RECORD_START(f, fingerprint);
    LAB_MEMBER(f, fingerprint, format);
    fprintf(f, "%d", LAB_RECORD_FORMAT);
    if (members)
        fputs(members, f);
    else
        lab_write_fingerprint(f);
    if (glibc_tunables) {
        LAB_MEMBER(f, fingerprint, glibc_tunables);
        lab_json_string(f, glibc_tunables);
    }
    fputs("}\n", f);
}

static char *fingerprint_text(void)
{
    const char *given = getenv("MEMKIT_LAB_FINGERPRINT");
    if (given) {
        char *s = strdup(given);
        unsetenv("MEMKIT_LAB_FINGERPRINT");
        return s;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    lab_write_fingerprint(f);
    fclose(f);
    return buf;
}

void lab_reexec(lab_ctx *ctx)
{
    setenv("MEMKIT_LAB_FINGERPRINT", ctx->fingerprint, 1);
    fflush(NULL);
    execv("/proc/self/exe", ctx->full_argv);
    fprintf(stderr, "error: cannot re-execute %s: %s\n", ctx->full_argv[0], strerror(errno));
    exit(2);
}

/* The driver's own words of the command line; the experiment's key=value
 * words are left in rest for lab_parse_args. */
typedef struct {
    char **rest;
    int nrest;
    long processes;   /* -1: not given */
    const char *peer_list, *jsonl_path;
    int check_only;
} driver_args;

/* -1: go on and run; else the exit status (0 after --help and the like). */
/* The built-in key=value arguments an experiment takes by its lab_info
 * (peer=, glibc_tunables=, processes=), each at most once: 1 taken, 0 not
 * one of them, 2 refused (said on stderr). */
static int builtin_arg(const char *a, lab_ctx *ctx, driver_args *da)
{
    const lab_info *info = ctx->info;
    char err[1024];
    if (info->peer_ops && !strncmp(a, "peer=", 5)) {
        if (da->peer_list) {
            fprintf(stderr, "error: %s: peer given twice: give it once\n", info->name);
            return 2;
        }
        da->peer_list = a + 5;
    } else if (info->races_glibc && !strncmp(a, "glibc_tunables=", 15)) {
        if (ctx->glibc_tunables) {
            fprintf(stderr, "error: %s: glibc_tunables given twice: give it once\n", info->name);
            return 2;
        }
        if (lab_glibc_tunables_check(a + 15, err, sizeof err)) {
            fprintf(stderr, "error: %s: glibc_tunables: %s\n", info->name, err);
            return 2;
        }
        ctx->glibc_tunables = a + 15;
    } else if (info->processes > 1 && !strncmp(a, "processes=", 10)) {
        char *end;
        if (da->processes >= 0) {
            fprintf(stderr, "error: %s: processes given twice: give it once\n", info->name);
            return 2;
        }
        da->processes = strtol(a + 10, &end, 10);
        if (!a[10] || *end || da->processes < 1 || da->processes > 64) {
            fprintf(stderr, "error: %s: processes must be 1..64\n", info->name);
            return 2;
        }
    } else {
        return 0;
    }
    return 1;
}

static int parse_driver_args(int argc, char **argv, lab_ctx *ctx, driver_args *da)
{
    const lab_info *info = ctx->info;
    da->rest[da->nrest++] = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int builtin;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(info, argv[0], stdout);
            return 0;
        } else if (!strcmp(a, "--describe")) {
            describe(info);
            return 0;
        } else if (!strcmp(a, "--fingerprint")) {
            write_fingerprint_record(stdout, NULL, NULL);
            return 0;
        } else if (!strcmp(a, "--schema")) {
            lab_write_schema();
            return 0;
        } else if (!strcmp(a, "--quick")) {
            ctx->quick = 1;
        } else if (!strcmp(a, "--check-args")) {
            da->check_only = 1;
        } else if (!strcmp(a, "--jsonl")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "error: --jsonl needs a path\n");
                return 2;
            }
            da->jsonl_path = argv[++i];
        } else if ((builtin = builtin_arg(a, ctx, da)) == 2) {
            return 2;
        } else if (!builtin) {
            da->rest[da->nrest++] = argv[i];
        }
    }
    return -1;
}

/* glibc read its tunables from this very environment as it started: a
 * glibc-tuned process must have been started under them, and glibc as
 * shipped must not run under any.  0 when it holds. */
static int check_glibc_environment(const lab_ctx *ctx, int helper)
{
    const char *in_force = getenv("GLIBC_TUNABLES"), *name = ctx->info->name;
    if (ctx->tuned && (!in_force || !ctx->glibc_tunables || strcmp(in_force, ctx->glibc_tunables))) {
        fprintf(stderr, "error: %s: a glibc-tuned process started without GLIBC_TUNABLES=%s\n",
                name, ctx->glibc_tunables ? ctx->glibc_tunables : "");
        return 2;
    }
    if (!helper && ctx->glibc_tunables && in_force) {
        fprintf(stderr, "error: %s: GLIBC_TUNABLES is set (%s): glibc would not run as shipped; "
                        "unset it to race glibc_tunables= against glibc as shipped\n",
                name, in_force);
        return 2;
    }
    return 0;
}

/* The notes every run ends with, then its end record. */
static void finish_run(lab_ctx *ctx)
{
    if (ctx->ntuned)
        lab_verdict_kind(ctx, "note", "%s: glibc under GLIBC_TUNABLES=%s, timed in %u processes of "
                         "its own, paired round by round with the methods beside it there; against "
                         "glibc as shipped it is compared across processes, not paired",
                         LAB_GLIBC_TUNED, ctx->glibc_tunables, ctx->ntuned);
    lab_peer_notes(ctx);
    lab_spread_note(ctx);
    if (ctx->jsonl) {
        LAB_RECORD_START(ctx->jsonl, end);
        LAB_MEMBER(ctx->jsonl, end, experiment);
        lab_json_string(ctx->jsonl, ctx->info->name);
        LAB_MEMBER(ctx->jsonl, end, processes);
        fprintf(ctx->jsonl, "%u", ctx->nprocesses);
        LAB_MEMBER(ctx->jsonl, end, seconds);
        fprintf(ctx->jsonl, "%.3f}\n", (lab_now_ns() - ctx->started_ns) / 1e9);
    }
}

/* The arguments made good, in every process: the peers loaded, the
 * experiment's own check run once (in the main process).  0, or 2 after
 * one line on stderr. */
static int load_and_check(lab_ctx *ctx, const driver_args *da, int helper)
{
    const lab_info *info = ctx->info;
    if (da->peer_list) {   /* before anything runs, in every process */
        char err[4352];
        lab_peer *peers;
        if (lab_peers_load(da->peer_list, info->peer_ops, &peers, &ctx->npeers, err, sizeof err)) {
            fprintf(stderr, "error: %s: %s\n", info->name, err);
            return 2;
        }
        ctx->peers = peers;
    }
    /* once, before any helper starts: the helpers run what the main process
     * checked, and a refusal is one line, not one per process */
    return !helper && info->check && info->check(ctx) ? 2 : 0;
}

/* What a run that will time needs: the CPU pinned, the records' file
 * opened.  0, or 2 after one line on stderr. */
static int pin_and_open(lab_ctx *ctx, const driver_args *da, int helper)
{
    const lab_info *info = ctx->info;
    if (info->pinned) {   /* before the helpers: they inherit it, and pin themselves anyway */
        char why[160];
        if (lab_pin_to_timing_cpu(why, sizeof why) && !helper)
            fprintf(stderr, "warning: %s: not pinned to one CPU (%s): a process may move between "
                            "CPUs while it times\n", info->name, why);
    }
    /* opened once the arguments hold: a refused run leaves no file */
    if (da->jsonl_path) {
        ctx->jsonl = strcmp(da->jsonl_path, "-") ? fopen(da->jsonl_path, "w") : stdout;
        if (!ctx->jsonl) {
            fprintf(stderr, "error: cannot write %s: %s\n", da->jsonl_path, strerror(errno));
            return 2;
        }
    }
    return 0;
}

/* The main process starts the others (processes=, glibc_tunables=) and
 * every process takes its own shuffle seed.  0, or 2 when a helper failed. */
static int start_processes(lab_ctx *ctx, const driver_args *da, int helper, int argc, char **argv)
{
    const lab_info *info = ctx->info;
    long processes = da->processes;
    if (info->processes > 1 && processes < 0)
        processes = ctx->quick && info->quick_processes ? info->quick_processes : info->processes;
    ctx->rng = 0x6c61622d6d656d6bull;
    if (processes < 1)
        processes = 1;
    if (!helper && ctx->glibc_tunables)
        ctx->ntuned = (unsigned)processes;   /* as many, so both are judged alike */
    if (!helper && (processes > 1 || ctx->ntuned)) {
        ctx->nprocesses = (unsigned)processes;
        ctx->process = ctx->nprocesses - 1 + ctx->ntuned;   /* the helpers are the ones before */
        if (lab_run_helpers(ctx, argc, argv))
            return 2;
    }
    ctx->rng ^= 0x9e3779b97f4a7c15ull * (ctx->process + 1);
    return 0;
}

static int drive(int argc, char **argv, lab_ctx *ctx, driver_args *da, int (*run)(lab_ctx *))
{
    int rc = parse_driver_args(argc, argv, ctx, da);
    if (rc >= 0)
        return rc;
    char arg_err[1024];
    if (lab_parse_args(ctx->info, ctx->quick, da->nrest - 1, da->rest + 1, ctx->arg_value,
                       arg_err, sizeof arg_err)) {
        fprintf(stderr, "error: %s\n", arg_err);
        return 2;
    }
    int helper = lab_helper_setup(ctx);
    if (check_glibc_environment(ctx, helper) || load_and_check(ctx, da, helper))
        return 2;
    if (da->check_only)
        return 0;
    if (pin_and_open(ctx, da, helper) || start_processes(ctx, da, helper, argc, argv))
        return 2;
    if (!ctx->raw) {
        ctx->fingerprint = fingerprint_text();
        if (ctx->jsonl) {
            write_fingerprint_record(ctx->jsonl, ctx->fingerprint, ctx->glibc_tunables);
            fflush(ctx->jsonl);
        }
    }
    rc = run(ctx);
    if (rc == 0)
        finish_run(ctx);
    return rc;
}

int lab_main(int argc, char **argv, const lab_info *info, int (*run)(lab_ctx *))
{
    lab_ctx ctx = {.info = info, .full_argv = argv, .started_ns = lab_now_ns(), .nprocesses = 1};
    driver_args da = {.rest = calloc((size_t)argc + 1, sizeof *da.rest), .processes = -1};
    int rc = drive(argc, argv, &ctx, &da, run);
    if (ctx.jsonl && ctx.jsonl != stdout)
        fclose(ctx.jsonl);
    if (ctx.raw && fclose(ctx.raw) != 0)
        rc = rc ? rc : 2;
    lab_pool_free(&ctx);
    free((void *)ctx.peers);
    free(ctx.fingerprint);
    free(da.rest);
    return rc;
}
