/* SPDX-License-Identifier: Apache-2.0 */
/* The experiments' key=value arguments, checked against each experiment's
 * declared table (see lab.h). */
#include "lab.h"
#include "copy_methods.h"

#include "memkit.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {"N", "SIZE", "X", "TEXT"};

int lab_fail(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
    return -1;
}

/* A number of the argument's kind; -1 when it is not one. */
static int parse_number(const lab_arg *a, const char *v, double *out)
{
    char *end;
    errno = 0;
    switch (a->kind) {
    case LAB_SIZE: {
        size_t s;
        if (lab_try_parse_size(v, &s))
            return -1;
        *out = (double)s;
        return 0;
    }
    case LAB_INT:
        *out = (double)strtoll(v, &end, 10);
        break;
    case LAB_REAL:
        *out = strtod(v, &end);
        break;
    default:
        return 0;
    }
    /* nan and inf parse as numbers, and nan passes any bounds check */
    return errno || end == v || *end || !isfinite(*out) ? -1 : 0;
}

static const char *const expected[] = {"a whole number", "a size, e.g. 4096, 64K, 1M",
                                       "a finite number", "text"};

static int check_value(const lab_arg *a, const char *v, char *err, size_t len)
{
    if (a->kind == LAB_TEXT) {
        char why[512];
        if (a->check && a->check(v, why, sizeof why))
            return lab_fail(err, len, "%s: %s", a->key, why);
        return 0;
    }
    double x = 0;
    char shown[128];
    if (parse_number(a, v, &x))
        return lab_fail(err, len, "bad value '%s' for %s (expected %s)",
                    lab_printable(v, shown, sizeof shown), a->key, expected[a->kind]);
    if ((a->min || a->max) && (x < a->min || x > a->max))
        return lab_fail(err, len, "%s=%s is out of range (%.15g..%.15g)", a->key, v, a->min, a->max);
    return 0;
}

static void known_keys(const lab_info *info, char *buf, size_t len)
{
    buf[0] = '\0';
    for (size_t i = 0; i < info->nargs; i++) {
        size_t l = strlen(buf);
        snprintf(buf + l, len - l, "%s%s=%s", i ? " " : "", info->args[i].key,
                 kind_names[info->args[i].kind]);
    }
}

int lab_parse_args(const lab_info *info, int quick, int argc, char **argv,
                   const char **values, char *err, size_t errlen)
{
    if (info->nargs > LAB_MAX_ARGS)
        return lab_fail(err, errlen, "%s declares %zu arguments (at most %d)", info->name,
                    info->nargs, LAB_MAX_ARGS);
    for (size_t i = 0; i < info->nargs; i++) {
        const lab_arg *a = &info->args[i];
        values[i] = quick && a->quick ? a->quick : a->def;
    }
    const char *given[LAB_MAX_ARGS] = {0};
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i], *eq = strchr(s, '=');
        size_t k = 0, klen = eq ? (size_t)(eq - s) : strlen(s);
        while (k < info->nargs &&
               (strlen(info->args[k].key) != klen || strncmp(info->args[k].key, s, klen)))
            k++;
        if (!eq || k == info->nargs) {
            char keys[512], shown[256];
            known_keys(info, keys, sizeof keys);
            return lab_fail(err, errlen, "%s: unknown argument '%s' (arguments are key=value: %s; "
                                     "see --help)", info->name, lab_printable(s, shown, sizeof shown),
                        keys[0] ? keys : "none");
        }
        /* which one would count is a guess the user should not have to make */
        if (given[k]) {
            char first[128], second[128];
            return lab_fail(err, errlen, "%s given twice (%s=%s, then %s=%s): give it once",
                        info->args[k].key, info->args[k].key,
                        lab_printable(given[k], first, sizeof first), info->args[k].key,
                        lab_printable(eq + 1, second, sizeof second));
        }
        if (check_value(&info->args[k], eq + 1, err, errlen))
            return -1;
        values[k] = given[k] = eq + 1;
    }
    /* the defaults must hold too: a table with a bad default is a bug */
    for (size_t i = 0; i < info->nargs; i++)
        if (values[i] && check_value(&info->args[i], values[i], err, errlen))
            return -1;
    return 0;
}

static size_t arg_index(lab_ctx *ctx, const char *key)
{
    const lab_info *info = ctx->info;
    for (size_t i = 0; i < info->nargs; i++)
        if (!strcmp(info->args[i].key, key))
            return i;
    fprintf(stderr, "error: %s asks for argument '%s', which it does not declare\n", info->name,
            key);
    exit(70);
}

const char *lab_text(lab_ctx *ctx, const char *key) { return ctx->arg_value[arg_index(ctx, key)]; }

static double number(lab_ctx *ctx, const char *key)
{
    size_t i = arg_index(ctx, key);
    double x = 0;
    if (!ctx->arg_value[i] || parse_number(&ctx->info->args[i], ctx->arg_value[i], &x))
        return 0;
    return x;
}

long long lab_int(lab_ctx *ctx, const char *key) { return (long long)number(ctx, key); }
size_t lab_size(lab_ctx *ctx, const char *key) { return (size_t)number(ctx, key); }
double lab_real(lab_ctx *ctx, const char *key) { return number(ctx, key); }

void lab_print_args(const lab_info *info, FILE *f)
{
    for (size_t i = 0; i < info->nargs; i++) {
        const lab_arg *a = &info->args[i];
        char head[64];
        snprintf(head, sizeof head, "%s=%s", a->key, kind_names[a->kind]);
        fprintf(f, "  %-22s %s (default %s", head, a->help, a->def ? a->def : "unset");
        if (a->quick)
            fprintf(f, ", --quick %s", a->quick);
        fprintf(f, ")\n");
    }
}

/* ---- for the experiments' own checks ---- */

const char *lab_printable(const char *s, char *buf, size_t len)
{
    size_t o = 0;
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        int control = c < 0x20 || c == 0x7f;
        if (o + (control ? 4 : 1) >= len)   /* what fits, whole, and the NUL */
            break;
        if (control)
            o += (size_t)snprintf(buf + o, len - o, "\\x%02x", c);
        else
            buf[o++] = (char)c;
    }
    if (len)
        buf[o] = '\0';
    return buf;
}

int lab_one_of(const char *v, const char *choices, char *err, size_t errlen)
{
    for (const char *p = choices; *p;) {
        size_t len = strcspn(p, "|");
        if (strlen(v) == len && !strncmp(p, v, len))
            return 0;
        p += len + (p[len] == '|');
    }
    char shown[64];
    return lab_fail(err, errlen, "'%s' is not one of %s", lab_printable(v, shown, sizeof shown), choices);
}

int lab_check_order(lab_ctx *ctx, const char *lo, const char *hi)
{
    if (lab_size(ctx, lo) <= lab_size(ctx, hi))
        return 0;
    fprintf(stderr, "error: %s: %s=%s is above %s=%s\n", ctx->info->name, lo, lab_text(ctx, lo), hi,
            lab_text(ctx, hi));
    return 2;
}

int lab_copier_list_check(const char *list, int usable_only, const char *extra, char *err,
                          size_t errlen)
{
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ",");
        char name[64], shown[256];
        snprintf(name, sizeof name, "%.*s", (int)len, p);
        const mk_copier *c = lab_copier_find(name);
        if (!(extra && !strcmp(name, extra)) && (!c || (usable_only && !c->usable))) {
            snprintf(err, errlen, "no %scopier called '%s'", usable_only ? "usable " : "",
                     lab_printable(name, shown, sizeof shown));
            return -1;
        }
        p += len + (p[len] == ',');
    }
    return 0;
}

/* name[0..len) is glibc.NAMESPACE.NAME: "glibc" and at least two more
 * parts, none empty */
static int glibc_own(const char *name, size_t len)
{
    size_t parts = 0;
    for (size_t i = 0, start = 0; i <= len; i++)
        if (i == len || name[i] == '.') {
            if (i == start)
                return 0;
            parts++;
            start = i + 1;
        }
    return parts >= 3 && len > 6 && !strncmp(name, "glibc.", 6);
}

/* glibc's tunables whose value is text; every other one takes an integer,
 * read as strtoul reads it (decimal, 0x hex, 0 octal), up to SIZE_MAX
 * (python/memkit/lab/glibc.py's TEXT_TUNABLES and check_tunables) */
static const char *const glibc_text_tunables[] = {"glibc.cpu.hwcaps", "glibc.cpu.x86_ibt", "glibc.cpu.x86_shstk"};

static int glibc_text_tunable(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof glibc_text_tunables / sizeof *glibc_text_tunables; i++)
        if (strlen(glibc_text_tunables[i]) == len && !strncmp(name, glibc_text_tunables[i], len))
            return 1;
    return 0;
}

/* v[0..n) is an integer glibc can hold, 0 to 2^64-1, written as strtoul
 * reads it with base 0 (decimal, 0x hex, 0 octal), and nothing else: no
 * sign, no blank, no trailing letter */
static int glibc_integer(const char *v, size_t n)
{
    char buf[32], *end;
    if (n == 0 || n >= sizeof buf || v[0] < '0' || v[0] > '9')
        return 0;
    memcpy(buf, v, n);
    buf[n] = 0;
    errno = 0;
    (void)strtoull(buf, &end, 0);
    return *end == 0 && errno != ERANGE;
}

int lab_glibc_tunables_check(const char *spec, char *err, size_t errlen)
{
    char shown[256];
    if (!*spec)
        return lab_fail(err, errlen, "no tunable given (glibc.NAME=VALUE:...)");
    for (const char *p = spec; *p;) {
        size_t len = strcspn(p, ":");
        const char *eq = memchr(p, '=', len);
        char item[256];
        snprintf(item, sizeof item, "%.*s", (int)len, p);
        lab_printable(item, shown, sizeof shown);
        /* glibc ignores what it does not know without a word: say it here */
        if (!len)
            return lab_fail(err, errlen, "an empty item in '%s'", spec);
        if (!eq || eq == p + len - 1)
            return lab_fail(err, errlen, "'%s' is not NAME=VALUE", shown);
        if (!glibc_own(p, (size_t)(eq - p)))
            return lab_fail(err, errlen, "'%s': only glibc's own tunables (glibc.NAMESPACE.NAME=VALUE)",
                            shown);
        for (const char *c = p; c < p + len; c++)
            if ((unsigned char)*c <= ' ' || *c == 0x7f)
                return lab_fail(err, errlen, "'%s' holds a space or a control character", shown);
        if (!glibc_text_tunable(p, (size_t)(eq - p)) && !glibc_integer(eq + 1, (size_t)(p + len - eq - 1)))
            return lab_fail(err, errlen, "'%s': not an integer from 0 to 18446744073709551615 (decimal or 0x hex)",
                            shown);
        p += len + (p[len] == ':');
    }
    return 0;
}
