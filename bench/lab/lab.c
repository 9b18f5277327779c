/* The lab's shared C core (see lab.h). */
#include "lab.h"

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

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

lab_stats lab_stats_of(double *v, size_t n)
{
    lab_stats s = {0};
    if (n == 0)
        return s;
    qsort(v, n, sizeof *v, cmp_double);
    s.n = n;
    s.min = v[0];
    s.max = v[n - 1];
    s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    s.mean = sum / n;
    size_t k = n / 10 ? n / 10 : 1;   /* MSRC: mean of the fastest 10% */
    sum = 0;
    for (size_t i = 0; i < k; i++)
        sum += v[i];
    s.mean_fastest_10pct = sum / k;
    return s;
}

lab_stats lab_stats_scaled(lab_stats s, double k)
{
    return (lab_stats){s.min * k, s.median * k, s.max * k, s.mean * k,
                       s.mean_fastest_10pct * k, s.n};
}

/* ---- JSON ---- */

static void json_string(FILE *f, const char *s)
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

static void json_number(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

static int read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (ok)
        buf[strcspn(buf, "\n")] = '\0';
    return ok;
}

void lab_write_fingerprint(FILE *f)
{
    const mk_cpu_info *c = mk_cpu();
    struct utsname u;
    uname(&u);
    char thp[128] = "unknown", gov[64] = "unknown", tun[1024];
    read_line("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof thp);
    read_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", gov, sizeof gov);
    mk_tunables_format(mk_tunables_get(), tun, sizeof tun);
    char micro[32];
    snprintf(micro, sizeof micro, "0x%x", c->microcode);
    fputs("\"cpu_model\":", f); json_string(f, c->brand);
    fputs(",\"vendor\":", f); json_string(f, c->vendor);
    fprintf(f, ",\"family\":%u,\"model\":%u,\"stepping\":%u", c->family, c->model, c->stepping);
    fputs(",\"microcode\":", f); json_string(f, c->microcode ? micro : "unknown");
    fputs(",\"kernel\":", f); json_string(f, u.release);
    fputs(",\"glibc\":", f); json_string(f, gnu_get_libc_version());
    fprintf(f, ",\"isa\":{\"sse2\":%d,\"avx2\":%d,\"avx512f\":%d,\"avx512bw\":%d,"
               "\"avx512vl\":%d,\"erms\":%d,\"fsrm\":%d,\"os_avx\":%d,\"os_avx512\":%d}",
            c->has_sse2, c->has_avx2, c->has_avx512f, c->has_avx512bw, c->has_avx512vl,
            c->has_erms, c->has_fsrm, c->os_avx, c->os_avx512);
    fprintf(f, ",\"cache\":{\"l1d\":%zu,\"l2\":%zu,\"l3\":%zu,\"line\":%zu}",
            c->l1d_bytes, c->l2_bytes, c->l3_bytes, c->line_bytes);
    fprintf(f, ",\"cpus_online\":%ld", sysconf(_SC_NPROCESSORS_ONLN));
    fputs(",\"thp\":", f); json_string(f, thp);
    fputs(",\"governor\":", f); json_string(f, gov);
    fputs(",\"memkit_version\":", f); json_string(f, MEMKIT_VERSION);
    fputs(",\"memkit_commit\":", f); json_string(f, MEMKIT_GIT_DESCRIBE);
    fputs(",\"tunables\":", f); json_string(f, tun);
    fputs(",\"profile\":", f); json_string(f, mk_tunables_get()->profile);
    fputs(",\"strategy\":", f); json_string(f, mk_strategy()->name);
    fputs(",\"strategy_matched\":", f); json_string(f, mk_strategy()->matched);
    fprintf(f, ",\"variants\":{\"memset\":\"%s\",\"memcpy\":\"%s\",\"memmove\":\"%s\"}",
            mk_selected_variant(MK_OP_MEMSET), mk_selected_variant(MK_OP_MEMCPY),
            mk_selected_variant(MK_OP_MEMMOVE));
}

void lab_emit(lab_ctx *ctx, const lab_measurement *m)
{
    FILE *f = ctx->jsonl;
    if (!f)
        return;
    fputs("{\"type\":\"measurement\",\"experiment\":", f);
    json_string(f, ctx->info->name);
    fputs(",\"series\":", f); json_string(f, m->series);
    fprintf(f, ",\"params\":{%s}", m->params_json ? m->params_json : "");
    fputs(",\"metric\":", f); json_string(f, m->metric);
    fputs(",\"unit\":", f); json_string(f, m->unit);
    fputs(",\"stat\":", f); json_string(f, m->stat);
    fputs(",\"value\":", f); json_number(f, m->value);
    fputs(",\"min\":", f); json_number(f, m->s.min);
    fputs(",\"median\":", f); json_number(f, m->s.median);
    fputs(",\"max\":", f); json_number(f, m->s.max);
    fprintf(f, ",\"samples\":%zu", m->s.n);
    if (m->ratio_to) {
        fputs(",\"ratio_to\":", f); json_string(f, m->ratio_to);
        fputs(",\"ratio\":", f); json_number(f, m->ratio);
        fputs(",\"ratio_min\":", f); json_number(f, m->ratio_min);
        fputs(",\"ratio_max\":", f); json_number(f, m->ratio_max);
    }
    fputs("}\n", f);
    fflush(f);
}

void lab_verdict(lab_ctx *ctx, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    printf("verdict: %s\n", text);
    fflush(stdout);
    if (ctx->jsonl) {
        fputs("{\"type\":\"verdict\",\"experiment\":", ctx->jsonl);
        json_string(ctx->jsonl, ctx->info->name);
        fputs(",\"text\":", ctx->jsonl);
        json_string(ctx->jsonl, text);
        fputs("}\n", ctx->jsonl);
        fflush(ctx->jsonl);
    }
}

void lab_progress(lab_ctx *ctx, size_t done, size_t total, const char *what)
{
    double elapsed = (lab_now_ns() - ctx->started_ns) / 1e9;
    fprintf(stderr, "progress: %s %zu/%zu %.1fs %s\n", ctx->info->name, done, total, elapsed,
            what ? what : "");
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

size_t lab_parse_size(const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    int shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20
              : *end == 'G' || *end == 'g' ? 30 : 0;
    if (shift)
        end++;
    if (errno || end == s || *end || s[0] == '-') {
        fprintf(stderr, "error: bad size '%s' (expected e.g. 4096, 64K, 1M, 1G)\n", s);
        exit(2);
    }
    return (size_t)v << shift;
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

/* ---- main ---- */

static void usage(const lab_info *info, FILE *f)
{
    fprintf(f,
            "usage: memkit-exp-%s [--quick] [--jsonl PATH] [--describe] [--fingerprint] [ARGS...]\n"
            "%s (seed: %s)\n"
            "  --quick         reduced grid, for smoke tests\n"
            "  --jsonl PATH    also write machine-readable results, one JSON object a line\n"
            "  --describe      print name, seed and description as JSON and exit\n"
            "  --fingerprint   print this machine's fingerprint as JSON and exit\n",
            info->name, info->description, info->seed);
}

int lab_main(int argc, char **argv, const lab_info *info, int (*run)(lab_ctx *))
{
    lab_ctx ctx = {.info = info, .full_argv = argv, .started_ns = lab_now_ns()};
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    int nrest = 0;
    rest[nrest++] = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(info, stdout);
            return 0;
        } else if (!strcmp(a, "--describe")) {
            printf("{\"name\":");
            json_string(stdout, info->name);
            printf(",\"seed\":");
            json_string(stdout, info->seed);
            printf(",\"description\":");
            json_string(stdout, info->description);
            printf("}\n");
            return 0;
        } else if (!strcmp(a, "--fingerprint")) {
            printf("{\"type\":\"fingerprint\",");
            lab_write_fingerprint(stdout);
            printf("}\n");
            return 0;
        } else if (!strcmp(a, "--quick")) {
            ctx.quick = 1;
        } else if (!strcmp(a, "--jsonl")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "error: --jsonl needs a path\n");
                return 2;
            }
            const char *path = argv[++i];
            ctx.jsonl = strcmp(path, "-") ? fopen(path, "w") : stdout;
            if (!ctx.jsonl) {
                fprintf(stderr, "error: cannot write %s: %s\n", path, strerror(errno));
                return 2;
            }
        } else {
            rest[nrest++] = argv[i];
        }
    }
    ctx.argc = nrest;
    ctx.argv = rest;
    if (ctx.jsonl) {
        fputs("{\"type\":\"fingerprint\",", ctx.jsonl);
        lab_write_fingerprint(ctx.jsonl);
        fputs("}\n", ctx.jsonl);
        fflush(ctx.jsonl);
    }
    int rc = run(&ctx);
    if (rc == 0 && ctx.jsonl) {
        fputs("{\"type\":\"end\",\"experiment\":", ctx.jsonl);
        json_string(ctx.jsonl, info->name);
        fprintf(ctx.jsonl, ",\"seconds\":%.3f}\n", (lab_now_ns() - ctx.started_ns) / 1e9);
    }
    if (ctx.jsonl && ctx.jsonl != stdout)
        fclose(ctx.jsonl);
    free(rest);
    return rc;
}
