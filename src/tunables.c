/* SPDX-License-Identifier: Apache-2.0 */
/* MEMKIT_TUNABLES: "name=value:name=value", the syntax of GLIBC_TUNABLES.
 * The table is memkit_tunables.def's rows; parsing never allocates and never
 * aborts, so it can run from an ifunc resolver in any host program. */
#include "internal.h"
#include "text.h"

#include <stddef.h>
#include <stdlib.h>

/* The .def's columns, as mk_tunable_row's fields. */
#define NEVER SIZE_MAX
#define RANGE(min, max) (min), (max), 0
#define POW2(min, max) (min), (max), 1
#define VARIANTS 0, 0, 0
#define PER_CPU 1, 0
#define FIXED(value) 0, (value)
#define AUTO 0, 0
#define FIELD_SIZE(name) name
#define FIELD_COUNT(name) name
#define FIELD_VARIANT(name) force_##name
#define MK_TUNABLE(name, kind, bounds, def, help) \
    {#name, MK_KIND_##kind, offsetof(mk_tunables, FIELD_##kind(name)), bounds, def, help},
const mk_tunable_row mk_tunable_rows[MK_TUNABLE_COUNT] = {
#include "memkit_tunables.def"
};
#undef MK_TUNABLE

/* The row called name[0..len), or NULL: the parser's lookup and the accessors'. */
MK_EARLY static const mk_tunable_row *row_named_n(const char *name, size_t len)
{
    for (size_t i = 0; i < MK_TUNABLE_COUNT; i++)
        if (mk_text_eq_n(name, len, mk_tunable_rows[i].name))
            return &mk_tunable_rows[i];
    return NULL;
}

/* A size or count into its field. */
MK_EARLY static void set_number(mk_tunables *t, const mk_tunable_row *r, size_t v)
{
    char *field = (char *)t + r->offset;
    if (r->kind == MK_KIND_SIZE)
        *(size_t *)field = v;
    else
        *(unsigned *)field = (unsigned)v;
}

MK_EARLY void mk_tunables_defaults(mk_tunables *t, const mk_cpu_info *cpu, mk_caches caches)
{
    size_t per_cpu[MK_TUNABLE_COUNT];
    mk_strategy_defaults(per_cpu, cpu, caches);
    *t = (mk_tunables){0};   /* auto for the variants */
    for (size_t i = 0; i < MK_TUNABLE_COUNT; i++) {
        const mk_tunable_row *r = &mk_tunable_rows[i];
        if (r->per_cpu)
            set_number(t, r, per_cpu[i]);
        else if (r->kind != MK_KIND_VARIANT)
            set_number(t, r, r->fixed);
    }
}

MK_EARLY void mk_tunables_fill_pending(mk_tunables *t, const mk_tunables *full)
{
    for (const mk_tunable_row *r = mk_tunable_rows; r < mk_tunable_rows + MK_TUNABLE_COUNT; r++) {
        size_t *field = (size_t *)((char *)t + r->offset);
        if (r->kind == MK_KIND_SIZE && *field == MK_PENDING)
            *field = *(const size_t *)((const char *)full + r->offset);
    }
}

/* A size is shown as the parser takes it, a count in decimal. */
MK_EARLY static char *append_number(const mk_tunable_row *r, size_t v, char *p, char *end)
{
    return r->kind == MK_KIND_SIZE ? mk_text_append_size(p, end, v) : mk_text_append_uint(p, end, v);
}

MK_EARLY char *mk_tunable_bounds_text(const mk_tunable_row *r, char *p, char *end)
{
    if (r->kind == MK_KIND_VARIANT)
        return mk_text_append(p, end, "auto or a variant this CPU runs", (size_t)-1);
    if (r->pow2)
        p = mk_text_append(p, end, "a power of two from ", (size_t)-1);
    p = append_number(r, r->min, p, end);
    p = mk_text_append(p, end, " to ", 4);
    return append_number(r, r->max, p, end);
}

MK_EARLY static int in_bounds(const mk_tunable_row *r, size_t v)
{
    return v >= r->min && v <= r->max && (!r->pow2 || (v & (v - 1)) == 0);
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

MK_EARLY static int variant_known(const char *s, size_t n, int *usable)
{
    const mk_variant_row *r = mk_variant_named(s, n);
    if (r)
        *usable = mk_cpu_satisfies(mk_cpu_early(), r->needs);
    return r != 0;
}

typedef void mk_report_fn(void *, const char *);

/* A size or count: VALUE parsed, checked against the row's bounds, set.
 * 0, or 1 with the problem reported. */
MK_EARLY static int apply_number(mk_tunables *t, const mk_tunable_row *row, const char *item,
                                 size_t item_len, const char *val, size_t val_len,
                                 mk_report_fn *report, void *ctx)
{
    size_t v;
    if (mk_text_parse_size(val, val_len, &v) != 0) {
        report_problem(report, ctx, "bad value for", item, item_len,
                       row->kind == MK_KIND_SIZE
                           ? "expected a size such as 4096, 64K, 32M, 1G or never"
                           : "expected a whole number");
        return 1;
    }
    if (row->kind == MK_KIND_SIZE && v >= MK_PENDING)   /* the marker is no size */
        v = SIZE_MAX;
    if (!in_bounds(row, v)) {
        char why[120], *w = why, *end = why + sizeof why;
        w = mk_text_append(w, end, "out of bounds (", (size_t)-1);
        w = mk_tunable_bounds_text(row, w, end);
        mk_text_append(w, end, ")", 1);
        report_problem(report, ctx, "bad value for", item, item_len, why);
        return 1;
    }
    set_number(t, row, v);
    return 0;
}

/* A forced variant: "auto", or a variant this CPU can run.  0, or 1 with
 * the problem reported. */
MK_EARLY static int apply_variant(mk_tunables *t, const mk_tunable_row *row, const char *item,
                                  size_t item_len, const char *val, size_t val_len,
                                  mk_report_fn *report, void *ctx)
{
    char *field = (char *)t + row->offset;
    int usable = 0;
    if (mk_text_eq_n(val, val_len, "auto")) {
        field[0] = '\0';
    } else if (!variant_known(val, val_len, &usable)) {
        report_problem(report, ctx, "unknown variant in", item, item_len,
                       "no such variant (see mk_variants())");
        return 1;
    } else if (!usable) {
        report_problem(report, ctx, "unusable variant in", item, item_len, "this CPU cannot run it");
        return 1;
    } else {
        mk_text_append(field, field + sizeof t->force_memset, val, val_len);
    }
    return 0;
}

/* One NAME=VALUE item of the spec.  glibc's rule for GLIBC_TUNABLES: a
 * name given twice takes the last value; said once per name (given[]
 * counts), not counted as a problem.  0, or 1 with the problem reported. */
MK_EARLY static int apply_item(mk_tunables *t, const char *item, size_t item_len,
                               unsigned char *given, mk_report_fn *report, void *ctx)
{
    size_t name_len = 0;
    while (name_len < item_len && item[name_len] != '=')
        name_len++;
    if (name_len == item_len) {
        report_problem(report, ctx, "setting", item, item_len, "expected name=value");
        return 1;
    }
    const mk_tunable_row *row = row_named_n(item, name_len);
    if (!row) {
        report_problem(report, ctx, "unknown tunable", item, name_len,
                       "not one of memkit's tunables (`memkit env --tunables` lists them; docs/library.md)");
        return 1;
    }
    size_t r = (size_t)(row - mk_tunable_rows);
    if (given[r] == 1)
        report_line(report, ctx, "given twice", item, item_len, "the last value is used");
    given[r] += given[r] < 2;
    const char *val = item + name_len + 1;
    size_t val_len = item_len - name_len - 1;
    return row->kind == MK_KIND_VARIANT
               ? apply_variant(t, row, item, item_len, val, val_len, report, ctx)
               : apply_number(t, row, item, item_len, val, val_len, report, ctx);
}

MK_EARLY int mk_tunables_parse(mk_tunables *t, const char *spec,
                               void (*report)(void *, const char *), void *ctx)
{
    int problems = 0;
    unsigned char given[MK_TUNABLE_COUNT] = {0};
    for (const char *p = spec; p && *p;) {
        const char *item = p;
        while (*p && *p != ':')
            p++;
        size_t item_len = (size_t)(p - item);
        if (*p == ':')
            p++;
        if (item_len)
            problems += apply_item(t, item, item_len, given, report, ctx);
    }
    return problems;
}

/* ---- formatting (for the lab's fingerprint and `memkit env --tunables`) ---- */

/* The row's value in t: sizes in bytes for the fingerprint (its text is
 * compared between runs), as the parser takes them for people. */
static char *append_value(const mk_tunable_row *r, const mk_tunables *t, int for_people,
                          char *p, char *end)
{
    const char *field = (const char *)t + r->offset;
    switch (r->kind) {
    case MK_KIND_SIZE: {
        size_t v = *(const size_t *)field;
        return for_people || v == SIZE_MAX ? mk_text_append_size(p, end, v)
                                           : mk_text_append_uint(p, end, v);
    }
    case MK_KIND_COUNT:
        return mk_text_append_uint(p, end, *(const unsigned *)field);
    case MK_KIND_VARIANT:
        break;
    }
    return mk_text_append(p, end, field[0] ? field : "auto", (size_t)-1);
}

char *mk_tunable_value_text(const mk_tunable_row *r, const mk_tunables *t, char *p, char *end)
{
    return append_value(r, t, 1, p, end);
}

size_t mk_tunables_format(const mk_tunables *t, char *buf, size_t len)
{
    /* Measure into a scratch buffer big enough for every row, then copy. */
    char tmp[1024], *p = tmp, *end = tmp + sizeof tmp;
    for (size_t i = 0; i < MK_TUNABLE_COUNT; i++) {
        if (i)
            p = mk_text_append(p, end, ":", 1);
        p = mk_text_append(p, end, mk_tunable_rows[i].name, (size_t)-1);
        p = mk_text_append(p, end, "=", 1);
        p = append_value(&mk_tunable_rows[i], t, 0, p, end);
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

/* ---- the public accessors: a set of tunables read by a row's name ----
 * Callers outside the library see mk_tunables as an opaque type; these read
 * it through the table, so a new row needs no new function. */

static const mk_tunable_row *row_named(const char *name)
{
    return name ? row_named_n(name, mk_text_len(name)) : NULL;
}

mk_tunables *mk_tunables_copy(const mk_tunables *t)
{
    mk_tunables *copy = t ? malloc(sizeof *copy) : NULL;
    if (copy)
        *copy = *t;
    return copy;
}

void mk_tunables_free(mk_tunables *t) { free(t); }

int mk_tunables_number(const mk_tunables *t, const char *name, size_t *out)
{
    const mk_tunable_row *r = row_named(name);
    if (!t || !r || r->kind == MK_KIND_VARIANT)
        return -1;
    const char *field = (const char *)t + r->offset;
    *out = r->kind == MK_KIND_SIZE ? *(const size_t *)field : *(const unsigned *)field;
    return 0;
}

const char *mk_tunables_variant(const mk_tunables *t, const char *name)
{
    const mk_tunable_row *r = row_named(name);
    if (!t || !r || r->kind != MK_KIND_VARIANT)
        return NULL;
    const char *field = (const char *)t + r->offset;
    return field[0] ? field : "auto";   /* as mk_tunables_parse takes it */
}

const char *mk_tunables_profile(const mk_tunables *t) { return t ? t->profile : NULL; }
