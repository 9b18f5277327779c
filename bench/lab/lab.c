/* The lab's shared C core (see lab.h). */
#include "internal.h"

#include "memkit.h"

#include <errno.h>
#include <gnu/libc-version.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

double lab_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

double lab_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

uint64_t lab_rdtsc(void)
{
    unsigned lo, hi;
    __asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

/* ---- JSON ---- */

void lab_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

void lab_json_number(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

void lab_write_fingerprint(FILE *f)
{
    const mk_cpu_info *c = mk_cpu();
    struct utsname u;
    uname(&u);
    char thp[128] = "unknown", gov[64] = "unknown", tun[1024];
    lab_read_line("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof thp);
    lab_read_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", gov, sizeof gov);
    mk_tunables_format(mk_tunables_get(), tun, sizeof tun);
    char micro[32];
    snprintf(micro, sizeof micro, "0x%x", c->microcode);
    fputs("\"cpu_model\":", f); lab_json_string(f, c->brand);
    fputs(",\"vendor\":", f); lab_json_string(f, c->vendor);
    fprintf(f, ",\"family\":%u,\"model\":%u,\"stepping\":%u", c->family, c->model, c->stepping);
    fputs(",\"microcode\":", f); lab_json_string(f, c->microcode ? micro : "unknown");
    fputs(",\"kernel\":", f); lab_json_string(f, u.release);
    fputs(",\"glibc\":", f); lab_json_string(f, gnu_get_libc_version());
    fprintf(f, ",\"isa\":{\"sse2\":%d,\"avx2\":%d,\"avx512f\":%d,\"avx512bw\":%d,"
               "\"avx512vl\":%d,\"erms\":%d,\"fsrm\":%d,\"os_avx\":%d,\"os_avx512\":%d}",
            c->has_sse2, c->has_avx2, c->has_avx512f, c->has_avx512bw, c->has_avx512vl,
            c->has_erms, c->has_fsrm, c->os_avx, c->os_avx512);
    fprintf(f, ",\"cache\":{\"l1d\":%zu,\"l2\":%zu,\"l3\":%zu,\"line\":%zu}",
            c->l1d_bytes, c->l2_bytes, c->l3_bytes, c->line_bytes);
    fprintf(f, ",\"cpus_online\":%ld", sysconf(_SC_NPROCESSORS_ONLN));
    fputs(",\"thp\":", f); lab_json_string(f, thp);
    fputs(",\"governor\":", f); lab_json_string(f, gov);
    fputs(",\"memkit_version\":", f); lab_json_string(f, MEMKIT_VERSION);
    fputs(",\"memkit_commit\":", f); lab_json_string(f, MEMKIT_GIT_DESCRIBE);
    fputs(",\"tunables\":", f); lab_json_string(f, tun);
    fputs(",\"profile\":", f); lab_json_string(f, mk_tunables_get()->profile);
    fputs(",\"strategy\":", f); lab_json_string(f, mk_strategy()->name);
    fputs(",\"strategy_matched\":", f); lab_json_string(f, mk_strategy()->matched);
    fputs(",\"strategy_evidence\":", f); lab_json_string(f, mk_strategy()->evidence);
    fprintf(f, ",\"variants\":{\"memset\":\"%s\",\"memcpy\":\"%s\",\"memmove\":\"%s\"}",
            mk_selected_variant(MK_OP_MEMSET), mk_selected_variant(MK_OP_MEMCPY),
            mk_selected_variant(MK_OP_MEMMOVE));
    lab_write_noise_sources(f);
}

static void verdict(lab_ctx *ctx, const char *kind, const char *fmt, va_list ap)
{
    if (ctx->raw)   /* a helper process: the main one says what all of them found */
        return;
    char text[4096];
    vsnprintf(text, sizeof text, fmt, ap);
    printf("verdict%s%s: %s\n", kind ? " " : "", kind ? kind : "", text);
    fflush(stdout);
    if (ctx->jsonl) {
        fputs("{\"type\":\"verdict\",\"experiment\":", ctx->jsonl);
        lab_json_string(ctx->jsonl, ctx->info->name);
        if (kind) {
            fputs(",\"kind\":", ctx->jsonl);
            lab_json_string(ctx->jsonl, kind);
        }
        fputs(",\"text\":", ctx->jsonl);
        lab_json_string(ctx->jsonl, text);
        fputs("}\n", ctx->jsonl);
        fflush(ctx->jsonl);
    }
}

void lab_verdict(lab_ctx *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verdict(ctx, NULL, fmt, ap);
    va_end(ap);
}

void lab_verdict_kind(lab_ctx *ctx, const char *kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verdict(ctx, kind, fmt, ap);
    va_end(ap);
}

/* With several processes, one count over all of them: the front end's
 * progress bar moves forward only. */
void lab_progress(lab_ctx *ctx, size_t done, size_t total, const char *what)
{
    double elapsed = (lab_now_ns() - ctx->started_ns) / 1e9;
    size_t np = ctx->nprocesses > 1 ? ctx->nprocesses : 1;
    char label[256];
    if (np > 1)
        snprintf(label, sizeof label, "process %u/%zu: %s", ctx->process + 1, np, what ? what : "");
    else
        snprintf(label, sizeof label, "%s", what ? what : "");
    fprintf(stderr, "progress: %s %zu/%zu %.1fs %s\n", ctx->info->name,
            ctx->process * total + done, total * np, elapsed, label);
    fflush(stderr);
}

/* ---- memory ---- */

void *lab_alloc(size_t n)
{
    void *p = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "error: cannot allocate %zu bytes: %s\n", n, strerror(errno));
        exit(2);
    }
    for (size_t i = 0; i < n; i += 4096)   /* fault it in now, not while timing */
        ((volatile char *)p)[i] = 1;
    return p;
}

void lab_free(void *p, size_t n) { munmap(p, n ? n : 1); }

void lab_flush_caches(void)
{
    static char *buf;
    static size_t len;
    if (!buf) {
        size_t l3 = mk_cpu()->l3_bytes;
        len = 2 * (l3 ? l3 : (size_t)32 << 20);
        buf = lab_alloc(len);
    }
    for (size_t i = 0; i < len; i += 64)
        buf[i]++;
    lab_escape(buf);
}

int lab_try_parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    int shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20
              : *end == 'G' || *end == 'g' ? 30 : 0;
    if (shift)
        end++;
    if (errno || end == s || *end || s[0] == '-' || v > (SIZE_MAX >> shift))
        return -1;
    *out = (size_t)v << shift;
    return 0;
}

size_t lab_parse_size(const char *s)
{
    size_t v;
    if (lab_try_parse_size(s, &v)) {
        fprintf(stderr, "error: bad size '%s' (expected e.g. 4096, 64K, 1M, 1G)\n", s);
        exit(2);
    }
    return v;
}

const char *lab_fmt_size(size_t n, char *buf, size_t len)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    double v = (double)n;
    while (v >= 1024 && u < 4)
        v /= 1024, u++;
    if (v == (double)(size_t)v)
        snprintf(buf, len, "%zu %s", (size_t)v, units[u]);
    else
        snprintf(buf, len, "%.1f %s", v, units[u]);
    return buf;
}

size_t lab_octave_sizes(size_t min, size_t max, unsigned per_octave, size_t granule, size_t *out,
                        size_t cap)
{
    size_t n = 0;
    for (unsigned k = 0; n < cap; k++) {
        double s = (double)min * pow(2.0, (double)k / per_octave);
        if (s > (double)max * 1.0001)
            break;
        size_t r = (size_t)(s + (double)granule / 2) / granule * granule;
        if (r < granule)
            r = granule;
        if (n == 0 || r != out[n - 1])
            out[n++] = r;
    }
    return n;
}

/* ---- main ---- */

#define PEER_HELP "other libraries racing as methods: their own exported memset/memcpy/memmove"

static void usage(const lab_info *info, FILE *f)
{
    fprintf(f,
            "usage: memkit-exp-%s [--quick] [--jsonl PATH] [--describe] [--fingerprint] [key=value...]\n"
            "%s (seed: %s)\n"
            "  --quick         reduced grid, for smoke tests\n"
            "  --jsonl PATH    also write machine-readable results, one JSON object a line\n"
            "  --describe      print name, seed, description and arguments as JSON and exit\n"
            "  --fingerprint   print this machine's fingerprint as JSON and exit\n"
            "  --check-args    check the arguments (and load any peers), exit 0 or 2 with why\n"
            "arguments:\n",
            info->name, info->description, info->seed);
    lab_print_args(info, f);
    if (info->peer_ops)
        fprintf(f, "  %-22s %s\n", "peer=LIB.so,...", PEER_HELP);
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
    printf("],\"processes\":%u,\"quick_processes\":%u}\n", info->processes ? info->processes : 1,
           info->quick_processes ? info->quick_processes : info->processes ? info->processes : 1);
}

/* The fingerprint members: a re-executed run keeps its parent's. */
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

int lab_main(int argc, char **argv, const lab_info *info, int (*run)(lab_ctx *))
{
    lab_ctx ctx = {.info = info, .full_argv = argv, .started_ns = lab_now_ns(), .nprocesses = 1};
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    int nrest = 0;
    long processes = -1;
    const char *peer_list = NULL, *jsonl_path = NULL;
    int check_only = 0;
    rest[nrest++] = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(info, stdout);
            return 0;
        } else if (!strcmp(a, "--describe")) {
            describe(info);
            return 0;
        } else if (!strcmp(a, "--fingerprint")) {
            printf("{\"type\":\"fingerprint\",\"format\":2,");
            lab_write_fingerprint(stdout);
            printf("}\n");
            return 0;
        } else if (!strcmp(a, "--quick")) {
            ctx.quick = 1;
        } else if (!strcmp(a, "--check-args")) {
            check_only = 1;
        } else if (info->peer_ops && !strncmp(a, "peer=", 5)) {
            if (peer_list) {
                fprintf(stderr, "error: %s: peer given twice: give it once\n", info->name);
                return 2;
            }
            peer_list = a + 5;
        } else if (!strcmp(a, "--jsonl")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "error: --jsonl needs a path\n");
                return 2;
            }
            jsonl_path = argv[++i];
        } else if (info->processes > 1 && !strncmp(a, "processes=", 10)) {
            char *end;
            if (processes >= 0) {
                fprintf(stderr, "error: %s: processes given twice: give it once\n", info->name);
                return 2;
            }
            processes = strtol(a + 10, &end, 10);
            if (!a[10] || *end || processes < 1 || processes > 64) {
                fprintf(stderr, "error: %s: processes must be 1..64\n", info->name);
                return 2;
            }
        } else {
            rest[nrest++] = argv[i];
        }
    }
    ctx.argc = nrest;
    ctx.argv = rest;
    if (info->args) {
        char err[1024];
        if (lab_parse_args(info, ctx.quick, nrest - 1, rest + 1, ctx.arg_value, err, sizeof err)) {
            fprintf(stderr, "error: %s\n", err);
            return 2;
        }
    }
    int helper = lab_helper_setup(&ctx);
    if (peer_list) {   /* before anything runs, in every process */
        char err[4352];
        lab_peer *peers;
        if (lab_peers_load(peer_list, info->peer_ops, &peers, &ctx.npeers, err, sizeof err)) {
            fprintf(stderr, "error: %s: %s\n", info->name, err);
            return 2;
        }
        ctx.peers = peers;
    }
    /* once, before any helper starts: the helpers run what the main process
     * checked, and a refusal is one line, not one per process */
    if (!helper && info->check && info->check(&ctx))
        return 2;
    if (check_only)
        return 0;
    if (info->pinned) {   /* before the helpers: they inherit it, and pin themselves anyway */
        char why[160];
        if (lab_pin_to_timing_cpu(why, sizeof why) && !helper)
            fprintf(stderr, "warning: %s: not pinned to one CPU (%s): a process may move between "
                            "CPUs while it times\n", info->name, why);
    }
    /* opened once the arguments hold: a refused run leaves no file */
    if (jsonl_path) {
        ctx.jsonl = strcmp(jsonl_path, "-") ? fopen(jsonl_path, "w") : stdout;
        if (!ctx.jsonl) {
            fprintf(stderr, "error: cannot write %s: %s\n", jsonl_path, strerror(errno));
            return 2;
        }
    }
    if (info->processes > 1 && processes < 0)
        processes = ctx.quick && info->quick_processes ? info->quick_processes : info->processes;
    ctx.rng = 0x6c61622d6d656d6bull;
    if (!helper && processes > 1) {
        ctx.nprocesses = (unsigned)processes;
        ctx.process = ctx.nprocesses - 1;   /* the helpers are the ones before */
        if (lab_run_helpers(&ctx, argc, argv))
            return 2;
    }
    ctx.rng ^= 0x9e3779b97f4a7c15ull * (ctx.process + 1);
    if (!ctx.raw) {
        ctx.fingerprint = fingerprint_text();
        if (ctx.jsonl) {
            fprintf(ctx.jsonl, "{\"type\":\"fingerprint\",\"format\":2,%s}\n", ctx.fingerprint);
            fflush(ctx.jsonl);
        }
    }
    int rc = run(&ctx);
    if (rc == 0) {
        lab_peer_notes(&ctx);
        lab_spread_note(&ctx);
    }
    if (rc == 0 && ctx.jsonl) {
        fputs("{\"type\":\"end\",\"experiment\":", ctx.jsonl);
        lab_json_string(ctx.jsonl, info->name);
        fprintf(ctx.jsonl, ",\"processes\":%u,\"seconds\":%.3f}\n", ctx.nprocesses,
                (lab_now_ns() - ctx.started_ns) / 1e9);
    }
    if (ctx.jsonl && ctx.jsonl != stdout)
        fclose(ctx.jsonl);
    if (ctx.raw && fclose(ctx.raw) != 0)
        rc = rc ? rc : 2;
    lab_pool_free(&ctx);
    free((void *)ctx.peers);
    free(ctx.fingerprint);
    free(rest);
    return rc;
}

int lab_copier_list_check(const char *list, int usable_only, const char *extra, char *err,
                          size_t errlen)
{
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ",");
        char name[64], shown[256];
        snprintf(name, sizeof name, "%.*s", (int)len, p);
        const mk_copier *c = mk_copier_find(name);
        if (!(extra && !strcmp(name, extra)) && (!c || (usable_only && !c->usable))) {
            snprintf(err, errlen, "no %scopier called '%s'", usable_only ? "usable " : "",
                     lab_printable(name, shown, sizeof shown));
            return -1;
        }
        p += len + (p[len] == ',');
    }
    return 0;
}
