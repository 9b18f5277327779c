/* SPDX-License-Identifier: Apache-2.0 */
/* memkit-tunables: the library's tunables and its per-CPU strategy table,
 * printed from the library's own tables (memkit_tunables.def,
 * src/strategy.c) as one JSON object, for `memkit env --tunables` and
 * `memkit env --strategies`; README.md's and docs/strategy.md's tables are
 * their Markdown, which tests/python/test_docs.py compares with this.
 *
 *   {"strategy": the row in force,
 *    "tunables": [{name, kind, per_cpu, default (on this CPU), in_force,
 *                  bounds, help}, ...],
 *    "strategies": [{name, matched, defaults: {tunable: "L3/2", ...}}, ...],
 *    "workloads": [{op, family, words}, ...] (workloads.def: what
 *                  `memkit tune` times and --paths takes),
 *    "paths": {"memset": [...], "memcpy": [...]}: the names --paths answers}
 *
 * memkit-tunables --paths SPEC OP SIZE...: the method the library takes for
 * each size under this CPU's defaults with SPEC (MEMKIT_TUNABLES syntax)
 * applied, one a line, as `memkit tune` names them: loop, backward,
 * rep_stosb/rep_movsb, nt (OP a row of workloads.def: set0, set: memset
 * of 0 or 0x5c; copy: 64-byte aligned buffers; copy3: the destination 3
 * bytes off); for pset and pcopy
 * (the parallel engine) "pool" or "one", then the method of the routine it
 * runs (in the pool: each chunk's, or streamed: mk_stream_chunks).  Sizes above 8 vectors: the
 * large path.
 *
 * memkit-tunables --cpu VENDOR FAMILY MODEL L2 L3 [FEATURE,...]: the row another
 * CPU gets and the per-CPU defaults it comes to there (FEATURE: erms, fsrm,
 * amx, avx2, avx512), as {"strategy", "variants" (per function), "evidence_file", "defaults":
 * {name: bytes or null for never}}: how a test reads the table for the CPU
 * an evidence file was measured on (docs/evidence.md). */
/* The library's own tables and decisions, which are what this program
 * prints: it lives with the library (src/diagnostics/, not part of
 * libmemkit) and reads them through src/internal.h, text.h the size grammar
 * it takes. */
#include "internal.h"
#include "text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void refused(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "%s\n", line);
}

/* A path as `memkit tune` names its strategies. */
static const char *path_name(mk_path path, int set)
{
    static const char *const names[] = {[MK_PATH_LOOP] = "loop", [MK_PATH_BACKWARD] = "backward",
                                        [MK_PATH_REP] = "rep", [MK_PATH_STREAM] = "nt"};
    return path == MK_PATH_REP ? (set ? "rep_stosb" : "rep_movsb") : names[path];
}

/* tune's workloads (workloads.def), in its order */
typedef enum {
#define TUNE_WORKLOAD(op, family, words) OP_##op,
#include "workloads.def"
#undef TUNE_WORKLOAD
    NOPS
} op_kind;
static const struct {
    const char *name, *family, *words;
} workloads[NOPS] = {
#define TUNE_WORKLOAD(op, family, words) {#op, #family, words},
#include "workloads.def"
#undef TUNE_WORKLOAD
};

static int print_paths(const char *spec, const char *op_name, char **sizes, int count)
{
    int op = -1;
    for (int i = 0; i < NOPS; i++)
        if (!strcmp(op_name, workloads[i].name))
            op = i;
    if (op < 0) {
        fprintf(stderr, "memkit-tunables: unknown op %s (", op_name);
        for (int i = 0; i < NOPS; i++)
            fprintf(stderr, "%s%s", i ? ", " : "", workloads[i].name);
        fprintf(stderr, ")\n");
        return 2;
    }
    mk_tunables t;
    mk_tunables_defaults(&t, mk_cpu(), MK_CACHES_KNOWN);
    if (mk_tunables_parse(&t, spec, refused, NULL))
        return 2;
    /* the addresses a copy is judged by: only their distance and alignment count */
    const char *src = (const char *)((uintptr_t)1 << 40), *dst = (const char *)((uintptr_t)1 << 30);
    for (int i = 0; i < count; i++) {
        size_t n;
        if (mk_text_parse_size(sizes[i], strlen(sizes[i]), &n) || n == SIZE_MAX) {
            fprintf(stderr, "memkit-tunables: not a size: %s\n", sizes[i]);
            return 2;
        }
        switch ((op_kind)op) {
        case OP_set0: case OP_set:
            puts(path_name(mk_set_path(&t, n, op == OP_set0 ? 0 : 0x5c), 1));
            break;
        case OP_copy: case OP_copy3:
            puts(path_name(mk_copy_path(&t, dst + (op == OP_copy3 ? 3 : 0), src, n), 0));
            break;
        case OP_pset: case OP_pcopy: {
            int pooled, set = op == OP_pset;
            mk_path path = mk_parallel_path(&t, dst, src, n, set, &pooled);
            printf("%s %s\n", pooled ? "pool" : "one", path_name(path, set));
            break;
        }
        case NOPS:
            break;
        }
    }
    return 0;
}

static void json_string(const char *s);

static void json_string_or_null(const char *s)
{
    if (s)
        json_string(s);
    else
        fputs("null", stdout);
}

/* Row i's variant per function and its evidence file (measured: it has one, docs/evidence.md). */
static void print_row_choices(size_t i)
{
    static const char *const functions[] = {[MK_OP_MEMSET] = "memset", [MK_OP_MEMCPY] = "memcpy",
                                            [MK_OP_MEMMOVE] = "memmove"};
    printf(",\"variants\":{");
    for (mk_op op = MK_OP_MEMSET; op <= MK_OP_MEMMOVE; op++) {
        printf("%s\"%s\":", op == MK_OP_MEMSET ? "" : ",", functions[op]);
        json_string_or_null(mk_strategy_variant_at(i, op));
    }
    putchar('}');
    printf(",\"evidence_file\":");
    json_string_or_null(mk_strategy_evidence_file_at(i));
}

static int print_cpu_defaults(char **argv, int argc)
{
    mk_cpu_info c = {0};
    char *end;
    if (argc < 5 || strlen(argv[0]) >= sizeof c.vendor) {
        fprintf(stderr, "usage: memkit-tunables --cpu VENDOR FAMILY MODEL L2 L3 [FEATURE,...]\n");
        return 2;
    }
    strcpy(c.vendor, argv[0]);
    c.family = (unsigned)strtoul(argv[1], &end, 0);
    c.model = (unsigned)strtoul(argv[2], &end, 0);
    c.l2_bytes = (size_t)strtoull(argv[3], &end, 0);
    c.l3_bytes = (size_t)strtoull(argv[4], &end, 0);
    const char *f = argc > 5 ? argv[5] : "";
    c.has_sse2 = 1;
    c.has_erms = strstr(f, "erms") != NULL;
    c.has_fsrm = strstr(f, "fsrm") != NULL;
    c.has_amx = strstr(f, "amx") != NULL;
    c.has_avx2 = c.has_bmi2 = c.os_avx = strstr(f, "avx2") || strstr(f, "avx512");
    c.has_avx512f = c.has_avx512bw = c.has_avx512vl = c.os_avx512 = strstr(f, "avx512") != NULL;
    mk_tunables t;
    mk_tunables_defaults(&t, &c, MK_CACHES_KNOWN);
    size_t row = mk_strategy_index(&c);
    printf("{\"strategy\":");
    json_string(mk_strategy_at(row)->name);
    print_row_choices(row);
    printf(",\"defaults\":{");
    int first = 1;
    for (size_t i = 0; i < MK_TUNABLE_COUNT; i++) {
        size_t v;
        if (!mk_tunable_rows[i].per_cpu || mk_tunables_number(&t, mk_tunable_rows[i].name, &v))
            continue;
        printf("%s", first ? "" : ",");
        first = 0;
        json_string(mk_tunable_rows[i].name);
        if (v == SIZE_MAX)
            printf(":null");
        else
            printf(":%zu", v);
    }
    printf("}}\n");
    return 0;
}

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

/* "tunables": each row with its default on this CPU (the caches read),
 * what the environment and the profile made of it, its bounds and help. */
static void print_tunables(void)
{
    static const char *const kinds[] = {
        [MK_KIND_SIZE] = "size", [MK_KIND_COUNT] = "count", [MK_KIND_VARIANT] = "variant"};
    const mk_tunables *in_force = mk_tunables_get();
    mk_tunables defaults;
    mk_tunables_defaults(&defaults, mk_cpu(), MK_CACHES_KNOWN);
    char text[256];
    printf(",\"tunables\":[");
    for (size_t i = 0; i < MK_TUNABLE_COUNT; i++) {
        const mk_tunable_row *r = &mk_tunable_rows[i];
        printf("%s{\"name\":", i ? "," : "");
        json_string(r->name);
        printf(",\"kind\":\"%s\",\"per_cpu\":%s,\"default\":", kinds[r->kind],
               r->per_cpu ? "true" : "false");
        mk_tunable_value_text(r, &defaults, text, text + sizeof text);
        json_string(text);
        printf(",\"in_force\":");
        mk_tunable_value_text(r, in_force, text, text + sizeof text);
        json_string(text);
        printf(",\"bounds\":");
        mk_tunable_bounds_text(r, text, text + sizeof text);
        json_string(text);
        printf(",\"help\":");
        json_string(r->help);
        printf("}");
    }
    printf("]");
}

/* "strategies": each row of the per-CPU table, its choices, whether it was
 * measured, and its rule for each per-CPU tunable. */
static void print_strategies(void)
{
    char text[256];
    printf(",\"strategies\":[");
    for (size_t i = 0; i < mk_strategy_count; i++) {
        printf("%s{\"name\":", i ? "," : "");
        json_string(mk_strategy_at(i)->name);
        printf(",\"matched\":");
        json_string(mk_strategy_at(i)->matched);
        print_row_choices(i);
        printf(",\"measured\":%s", mk_strategy_evidence_file_at(i) ? "true" : "false");
        printf(",\"defaults\":{");
        int first = 1;
        for (size_t t = 0; t < MK_TUNABLE_COUNT; t++) {
            mk_strategy_rule_text(i, t, text, text + sizeof text);
            if (!text[0])   /* not a per-CPU tunable */
                continue;
            printf("%s", first ? "" : ",");
            first = 0;
            json_string(mk_tunable_rows[t].name);
            putchar(':');
            json_string(text);
        }
        printf("}}");
    }
    printf("]");
}

/* "workloads" (workloads.def) and "paths": the names --paths answers with,
 * a memset's, then a copy's. */
static void print_workloads_and_paths(void)
{
    printf(",\"workloads\":[");
    for (int i = 0; i < NOPS; i++) {
        printf("%s{\"op\":", i ? "," : "");
        json_string(workloads[i].name);
        printf(",\"family\":");
        json_string(workloads[i].family);
        printf(",\"words\":");
        json_string(workloads[i].words);
        printf("}");
    }
    static const mk_path paths[] = {MK_PATH_LOOP, MK_PATH_BACKWARD, MK_PATH_REP, MK_PATH_STREAM};
    printf("],\"paths\":{\"memset\":[");
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++)
        if (paths[i] != MK_PATH_BACKWARD) {   /* a fill has no direction */
            printf("%s", i ? "," : "");
            json_string(path_name(paths[i], 1));
        }
    printf("],\"memcpy\":[");
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
        printf("%s", i ? "," : "");
        json_string(path_name(paths[i], 0));
    }
    printf("]}");
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "--paths"))
        return print_paths(argv[2], argv[3], argv + 4, argc - 4);
    if (argc >= 2 && !strcmp(argv[1], "--cpu"))
        return print_cpu_defaults(argv + 2, argc - 2);
    if (argc != 1) {
        fprintf(stderr, "usage: memkit-tunables [--paths SPEC OP SIZE... | --cpu VENDOR FAMILY MODEL L2 L3 "
                        "[FEATURE,...]]\n");
        return 2;
    }
    printf("{\"strategy\":");
    json_string(mk_strategy()->name);
    print_tunables();
    print_strategies();
    print_workloads_and_paths();
    printf("}\n");
    return 0;
}
