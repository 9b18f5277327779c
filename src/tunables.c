/* MEMKIT_TUNABLES: "name=value:name=value", the syntax of GLIBC_TUNABLES.
 * One table row per tunable; parsing never allocates and never aborts, so it
 * can run from an ifunc resolver in any host program. */
#include "internal.h"
#include "text.h"

#include <stddef.h>

typedef enum { KIND_SIZE, KIND_COUNT, KIND_VARIANT } tunable_kind;

typedef struct {
    const char  *name;
    tunable_kind kind;
    size_t       offset;     /* into mk_tunables */
    mk_op        op;         /* KIND_VARIANT: which family */
    const char  *help;
} tunable_row;

#define ROW(field, kind, op, help) {#field, kind, offsetof(mk_tunables, field), op, help}
static const tunable_row rows[] = {
    ROW(rep_stosb_threshold, KIND_SIZE, 0, "memset: rep stosb from this size"),
    ROW(nt_threshold, KIND_SIZE, 0, "memset (non-zero value): non-temporal stores from this size"),
    ROW(nt_threshold_zero, KIND_SIZE, 0, "memset (zero): non-temporal stores from this size"),
    ROW(rep_movsb_threshold, KIND_SIZE, 0, "memcpy: rep movsb from this size"),
    ROW(rep_movsb_stop, KIND_SIZE, 0, "memcpy: rep movsb below this size"),
    ROW(rep_movsb_align, KIND_SIZE, 0, "memcpy: rep movsb only when dst - src is a multiple of this"),
    ROW(nt_copy_threshold, KIND_SIZE, 0, "memcpy: non-temporal stores from this size"),
    ROW(parallel_threshold, KIND_SIZE, 0, "mk_parallel_*: one thread below this size"),
    ROW(threads, KIND_COUNT, 0, "default thread-pool size (0: derived)"),
    {"memset", KIND_VARIANT, offsetof(mk_tunables, force_memset), MK_OP_MEMSET, "force a memset variant"},
    {"memcpy", KIND_VARIANT, offsetof(mk_tunables, force_memcpy), MK_OP_MEMCPY, "force a memcpy variant"},
    {"memmove", KIND_VARIANT, offsetof(mk_tunables, force_memmove), MK_OP_MEMMOVE, "force a memmove variant"},
};
#define NROWS (sizeof rows / sizeof rows[0])

MK_EARLY void mk_tunables_defaults(mk_tunables *t, const mk_cpu_info *cpu, mk_caches caches)
{
    *t = (mk_tunables){0};
    mk_strategy_defaults(t, cpu, caches);   /* the rep and non-temporal choices: strategy.c */
    t->parallel_threshold = (size_t)4 << 20;
    t->threads = 0;
}

MK_EARLY void mk_tunables_fill_pending(mk_tunables *t, const mk_tunables *full)
{
    for (size_t i = 0; i < NROWS; i++) {
        size_t *field = (size_t *)((char *)t + rows[i].offset);
        if (rows[i].kind == KIND_SIZE && *field == MK_PENDING)
            *field = *(const size_t *)((const char *)full + rows[i].offset);
    }
}

/* "memkit: MEMKIT_TUNABLES: WHAT 'ITEM': WHY", the item escaped. */
MK_EARLY static void report_line(void (*report)(void *, const char *), void *ctx,
                                 const char *what, const char *item, size_t item_len,
                                 const char *why)
{
    char line[320], *p = line, *end = line + sizeof line;
    p = mk_text_append(p, end, "memkit: MEMKIT_TUNABLES: ", (size_t)-1);
    p = mk_text_append(p, end, what, (size_t)-1);
    p = mk_text_append(p, end, " '", 2);
    p = mk_text_append_escaped(p, end, item, item_len < 64 ? item_len : 64);
    p = mk_text_append(p, end, "': ", 3);
    p = mk_text_append(p, end, why, (size_t)-1);
    if (report)
        report(ctx, line);
}

MK_EARLY static void report_problem(void (*report)(void *, const char *), void *ctx,
                                    const char *what, const char *item, size_t item_len,
                                    const char *why)
{
    char reason[160], *p = reason, *end = reason + sizeof reason;
    p = mk_text_append(p, end, why, (size_t)-1);
    mk_text_append(p, end, "; default kept", (size_t)-1);
    report_line(report, ctx, what, item, item_len, reason);
}

/* "4096", "64K", "64KB", "64KiB", "64M", "1G", "never" (SIZE_MAX).  Returns 0
 * on success. */
MK_EARLY static int parse_size(const char *s, size_t n, size_t *out)
{
    if (mk_text_eq_n(s, n, "never") || mk_text_eq_n(s, n, "max")) {
        *out = SIZE_MAX;
        return 0;
    }
    if (n == 0)
        return -1;
    size_t v = 0, i = 0;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
        size_t d = (size_t)(s[i] - '0');
        if (v > (SIZE_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    if (i == 0)
        return -1;
    unsigned shift = 0;
    if (i < n) {
        char u = s[i];
        shift = (u == 'k' || u == 'K') ? 10 : (u == 'm' || u == 'M') ? 20
              : (u == 'g' || u == 'G') ? 30 : 99;
        if (shift == 99)
            return -1;
        i++;
        if (i + 1 < n && s[i] == 'i' && s[i + 1] == 'B')   /* "64KiB" */
            i += 2;
        else if (i < n && s[i] == 'B')                      /* "64KB" */
            i++;
    }
    if (i != n || (shift && v > (SIZE_MAX >> shift)))
        return -1;
    *out = v << shift;
    return 0;
}

MK_EARLY static int variant_known(const char *s, size_t n, int *usable)
{
    const mk_variant_row *r = mk_variant_named(s, n);
    if (r)
        *usable = mk_cpu_satisfies(mk_cpu_early(), r->needs);
    return r != 0;
}

MK_EARLY int mk_tunables_parse(mk_tunables *t, const char *spec,
                               void (*report)(void *, const char *), void *ctx)
{
    int problems = 0;
    /* glibc's rule for GLIBC_TUNABLES: a name given twice takes the last
     * value; said once per name, not counted as a problem. */
    unsigned char given[NROWS] = {0};
    const char *p = spec;
    while (p && *p) {
        const char *item = p;
        while (*p && *p != ':')
            p++;
        size_t item_len = (size_t)(p - item);
        if (*p == ':')
            p++;
        if (item_len == 0)
            continue;
        size_t name_len = 0;
        while (name_len < item_len && item[name_len] != '=')
            name_len++;
        if (name_len == item_len) {
            report_problem(report, ctx, "setting", item, item_len, "expected name=value");
            problems++;
            continue;
        }
        const char *val = item + name_len + 1;
        size_t val_len = item_len - name_len - 1;
        const tunable_row *row = NULL;
        for (size_t i = 0; i < NROWS; i++)
            if (mk_text_eq_n(item, name_len, rows[i].name))
                row = &rows[i];
        if (!row) {
            report_problem(report, ctx, "unknown tunable", item, name_len,
                           "not one of memkit's tunables (see README)");
            problems++;
            continue;
        }
        size_t r = (size_t)(row - rows);
        if (given[r] == 1)
            report_line(report, ctx, "given twice", item, item_len, "the last value is used");
        given[r] += given[r] < 2;
        char *field = (char *)t + row->offset;
        size_t v;
        switch (row->kind) {
        case KIND_SIZE:
        case KIND_COUNT:
            if (parse_size(val, val_len, &v) != 0 ||
                (row->kind == KIND_COUNT && v > 4096)) {
                report_problem(report, ctx, "bad value for", item, item_len,
                               row->kind == KIND_SIZE
                                   ? "expected a size such as 4096, 64K, 32M, 1G or never"
                                   : "expected a whole number from 0 to 4096");
                problems++;
            } else if (row->kind == KIND_SIZE) {
                *(size_t *)field = v >= MK_PENDING ? SIZE_MAX : v;
            } else {
                *(unsigned *)field = (unsigned)v;
            }
            break;
        case KIND_VARIANT: {
            int usable = 0;
            if (mk_text_eq_n(val, val_len, "auto")) {
                field[0] = '\0';
            } else if (!variant_known(val, val_len, &usable)) {
                report_problem(report, ctx, "unknown variant in", item, item_len,
                               "no such variant (see mk_variants())");
                problems++;
            } else if (!usable) {
                report_problem(report, ctx, "unusable variant in", item, item_len,
                               "this CPU cannot run it");
                problems++;
            } else {
                mk_text_append(field, field + sizeof t->force_memset, val, val_len);
            }
            break;
        }
        }
    }
    return problems;
}

/* ---- formatting (for the lab's fingerprint) ---- */

static char *put_uint(char *p, char *end, size_t v)
{
    char digits[24];
    int n = 0;
    do digits[n++] = (char)('0' + v % 10); while ((v /= 10) && n < 24);
    while (n > 0 && p < end - 1)
        *p++ = digits[--n];
    *p = '\0';
    return p;
}

size_t mk_tunables_format(const mk_tunables *t, char *buf, size_t len)
{
    /* Measure into a scratch buffer big enough for every row, then copy. */
    char tmp[1024], *p = tmp, *end = tmp + sizeof tmp;
    for (size_t i = 0; i < NROWS; i++) {
        const char *field = (const char *)t + rows[i].offset;
        if (i)
            p = mk_text_append(p, end, ":", 1);
        p = mk_text_append(p, end, rows[i].name, (size_t)-1);
        p = mk_text_append(p, end, "=", 1);
        if (rows[i].kind == KIND_SIZE) {
            size_t v = *(const size_t *)field;
            p = v == SIZE_MAX ? mk_text_append(p, end, "never", 5) : put_uint(p, end, v);
        } else if (rows[i].kind == KIND_COUNT) {
            p = put_uint(p, end, *(const unsigned *)field);
        } else {
            p = mk_text_append(p, end, field[0] ? field : "auto", (size_t)-1);
        }
    }
    size_t need = (size_t)(p - tmp);
    if (len) {
        size_t n = need < len - 1 ? need : len - 1;
        for (size_t i = 0; i < n; i++)
            buf[i] = tmp[i];
        buf[n] = '\0';
    }
    return need;
}
