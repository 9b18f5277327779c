/* SPDX-License-Identifier: Apache-2.0 */
/* Working sets (see working_set.h): the levels, the arenas, the placement. */
#include "working_set.h"

#include "memkit.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define HUGE_PAGE ((size_t)2 << 20)
#define SMALL_PAGE ((size_t)4096)

/* A cache's size as the fingerprint has it (cpuid), else as the C library
 * says; 0 when neither knows. */
static size_t cache_bytes(size_t from_cpuid, int sysconf_name)
{
    if (from_cpuid)
        return from_cpuid;
    long v = sysconf(sysconf_name);
    return v > 0 ? (size_t)v : 0;
}

/* The one place the levels' sizes are decided. */
static size_t level_bytes(const char *name)
{
    const mk_cpu_info *c = mk_cpu();
    if (!strcmp(name, "l1"))
        return cache_bytes(c->l1d_bytes, _SC_LEVEL1_DCACHE_SIZE) / 4;
    if (!strcmp(name, "l2"))
        return cache_bytes(c->l2_bytes, _SC_LEVEL2_CACHE_SIZE) / 4;
    if (!strcmp(name, "l3"))
        return cache_bytes(c->l3_bytes, _SC_LEVEL3_CACHE_SIZE) / 8;
    if (!strcmp(name, "dram"))
        return cache_bytes(c->l3_bytes, _SC_LEVEL3_CACHE_SIZE) * 2;
    return SIZE_MAX;   /* not a level */
}

/* 262144 -> "256K": an explicit size's name, the same however it was typed. */
static void size_name(size_t n, char *buf, size_t len)
{
    static const char units[] = "GMK";
    for (int i = 0; i < 3; i++) {
        size_t unit = (size_t)1 << (10 * (3 - i));
        if (n % unit == 0) {
            snprintf(buf, len, "%zu%c", n / unit, units[i]);
            return;
        }
    }
    snprintf(buf, len, "%zu", n);
}

int lab_ws_parse(const char *list, lab_ws *out, char *err, size_t errlen)
{
    int n = 0;
    if (!list || !*list)
        return lab_fail(err, errlen, "names no working set (hot, l1, l2, l3, dram or a size)");
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        char word[16];   /* as long as a name */
        if (len >= sizeof word) {
            char shown[64];
            snprintf(word, sizeof word, "%s", p);
            return lab_fail(err, errlen, "unknown working set '%s...'",
                        lab_printable(word, shown, sizeof shown));
        }
        snprintf(word, sizeof word, "%.*s", (int)len, p);
        p += len + (p[len] == ',');
        if (n == LAB_WS_MAX)
            return lab_fail(err, errlen, "lists more than %d working sets", LAB_WS_MAX);
        lab_ws w = {0};
        size_t bytes = level_bytes(word);
        if (!strcmp(word, "hot")) {
            snprintf(w.name, sizeof w.name, "hot");
        } else if (bytes != SIZE_MAX) {
            if (bytes == 0)
                return lab_fail(err, errlen, "%s: this CPU's cache sizes are unknown; give the "
                                         "working set as a size (e.g. 64M)", word);
            snprintf(w.name, sizeof w.name, "%s", word);
            w.bytes = bytes;
        } else if (!lab_try_parse_size(word, &bytes)) {
            if (bytes < 64 || bytes > LAB_WS_LIMIT)
                return lab_fail(err, errlen, "%s: a working set is 64 bytes to 1G", word);
            size_name(bytes, w.name, sizeof w.name);
            w.bytes = bytes;
        } else {
            char shown[64];
            return lab_fail(err, errlen, "unknown working set '%s' (hot, l1, l2, l3, dram, or a "
                                     "size such as 256K or 64M)",
                        lab_printable(word, shown, sizeof shown));
        }
        for (int i = 0; i < n; i++)
            if (!strcmp(out[i].name, w.name))
                return lab_fail(err, errlen, "lists %s twice", w.name);
        out[n++] = w;
    }
    return n;
}

int lab_ws_arg(lab_ctx *ctx, lab_ws *out)
{
    char err[256];
    int n = lab_ws_parse(lab_text(ctx, "ws"), out, err, sizeof err);
    if (n < 0) {
        fprintf(stderr, "error: %s (a ws= its check let through)\n", err);
        exit(70);
    }
    return n;
}

int lab_ws_check(const char *value, char *err, size_t errlen)
{
    lab_ws ws[LAB_WS_MAX];
    return lab_ws_parse(value, ws, err, errlen) < 0 ? -1 : 0;
}

int lab_pages_check(const char *value, char *err, size_t errlen)
{
    return lab_one_of(value, "4k|huge", err, errlen);
}

int lab_pages_huge(const char *pages) { return pages && !strcmp(pages, "huge"); }

/* How many bytes of [p, p + len) the kernel backs with huge pages
 * (AnonHugePages of the mappings overlapping it; they may not have asked). */
static size_t huge_bytes(const void *p, size_t len)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return 0;
    char line[256];
    int in = 0;
    size_t total = 0;
    uintptr_t lo_want = (uintptr_t)p, hi_want = lo_want + len;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        size_t kb;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            in = lo < hi_want && hi > lo_want;
        else if (in && sscanf(line, "AnonHugePages: %zu kB", &kb) == 1)
            total += kb * 1024;
    }
    fclose(f);
    return total;
}

const char *lab_pages_of(const void *p, size_t len)
{
    size_t h = huge_bytes(p, len);
    return h == 0 ? "4k" : h >= len ? "huge" : "mixed";
}

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

void lab_arena_new(lab_arena *a, size_t span, unsigned sides, size_t max_call, int huge)
{
    /* room behind the span for a clamped call: it starts at most a page
     * past its `below` (<= max_call) and reaches `above` (<= max_call) on */
    size_t need = 2 * max_call + SMALL_PAGE;
    size_t stride = round_up(span > need ? span : need, huge ? HUGE_PAGE : SMALL_PAGE);
    *a = (lab_arena){.span = span, .stride = stride, .len = stride * sides, .sides = sides};
    mk_page_kind got;
    a->base = mk_pages_alloc(a->len, huge ? MK_PAGES_THP : MK_PAGES_NORMAL, &got);
    if (!a->base) {
        fprintf(stderr, "error: cannot map %zu bytes for a working set\n", a->len);
        exit(2);
    }
    if (!huge)   /* 4 KiB pages even where THP is "always" */
        madvise(a->base, a->len, MADV_NOHUGEPAGE);
    for (size_t i = 0; i < a->len; i += SMALL_PAGE)   /* fault it in now, not while timing */
        ((volatile char *)a->base)[i] = 1;
    a->pages = lab_pages_of(a->base, a->len);
}

void lab_arena_free(lab_arena *a)
{
    mk_pages_free(a->base, a->len);
    a->base = NULL;
}

void lab_ws_arenas_new(lab_ctx *ctx, const lab_ws *ws, size_t n, lab_arena *arenas,
                       unsigned sides, size_t max_call)
{
    for (size_t w = 0; w < n; w++)
        if (ws[w].bytes)
            lab_arena_new(&arenas[w], ws[w].bytes, sides, max_call,
                          lab_pages_huge(lab_text(ctx, "pages")));
}

void lab_ws_arenas_free(lab_arena *arenas, size_t n)
{
    for (size_t w = 0; w < n; w++)
        if (arenas[w].base)
            lab_arena_free(&arenas[w]);
}

size_t lab_arena_place(const lab_arena *a, unsigned side, size_t granule, size_t in_granule,
                       size_t below, size_t above, uint64_t *rng)
{
    /* o = in_granule + k * granule, k from the first with o >= below to
     * the last with o + above <= span */
    size_t k_lo = below > in_granule ? (below - in_granule + granule - 1) / granule : 0;
    size_t k_hi = 0, k = k_lo;
    if (a->span >= in_granule + above) {
        k_hi = (a->span - in_granule - above) / granule;
        if (k_hi > k_lo)
            k = k_lo + (size_t)(lab_rand(rng) % (k_hi - k_lo + 1));
    }
    return side * a->stride + in_granule + k * granule;
}

size_t lab_arena_windows(const lab_arena *a, unsigned sides, size_t window_bytes)
{
    size_t arenas = a->span * sides;
    size_t k = window_bytes ? (arenas + window_bytes - 1) / window_bytes : 2;
    return k < 2 ? 2 : k > LAB_WS_MAX_WINDOWS ? LAB_WS_MAX_WINDOWS : k;
}

void lab_ws_params(const lab_ws *ws, size_t bytes, const char *pages, char *buf, size_t len)
{
    snprintf(buf, len, ",\"ws\":\"%s\",\"ws_bytes\":%zu,\"pages\":\"%s\"", ws->name, bytes, pages);
}

const char *lab_ws_words(const lab_ws *ws, char *buf, size_t len)
{
    char sz[32];
    if (ws->bytes)
        snprintf(buf, len, "ws=%s (%s per side)", ws->name, lab_fmt_size(ws->bytes, sz, sizeof sz));
    else
        snprintf(buf, len, "ws=%s (in cache)", ws->name);
    return buf;
}
