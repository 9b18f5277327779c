/* SPDX-License-Identifier: Apache-2.0 */
/* Working sets: where an experiment's calls land, hot or cold.
 *
 * `hot` is each experiment's own small layout (its buffers stay in L1/L2:
 * the routine, not memory, is measured).  Every other level puts each call
 * at a random place of an arena sized to a cache level, one arena per side
 * (source and destination), so that most calls miss the caches above that
 * level, as production calls do (fleetbench's working-set levels):
 *
 *   l1 = L1d / 4, l2 = L2 / 4, l3 = L3 / 8, dram = 2 x L3   (per side)
 *
 * (the cache sizes as the fingerprint reports them, mk_cpu(); on a Zen 4
 * EPYC with 32 KiB L1d, 1 MiB L2, 32 MiB L3: 8 KiB, 256 KiB, 4 MiB,
 * 64 MiB), or an explicit size (256K, 64M).  The fractions leave room for
 * the other side, the call array and the stack in the level named.  The
 * hardware prefetchers get random lines at the cold levels: that is meant.
 *
 * Arenas are on 4 KiB pages (MADV_NOHUGEPAGE) unless pages=huge asks for
 * transparent huge pages (MADV_HUGEPAGE); either way pre-faulted, and the
 * page size the kernel actually gave is what the records carry. */
#ifndef MEMKIT_LAB_WORKING_SET_H
#define MEMKIT_LAB_WORKING_SET_H

#include "lab.h"

#define LAB_WS_MAX 8
/* Largest explicit working set: offsets into two sides stay below 4 GiB
 * (experiments keep them in 32 bits, as their hot call arrays always did). */
#define LAB_WS_LIMIT ((size_t)1 << 30)

typedef struct {
    char name[16];   /* "hot", "l1", "l2", "l3", "dram", or a size ("256K") */
    size_t bytes;    /* per side; 0 for hot (the experiment's own layout) */
} lab_ws;

/* The declared arguments, the same in every experiment that takes them:
 * LAB_WS_ARGS("hot,l3,dram", "hot,dram") in its lab_arg table. */
#define LAB_WS_ARGS(def, quick)                                                                \
    {"ws", LAB_TEXT, def, quick,                                                               \
     "working sets: hot (small buffers, in cache), l1, l2, l3, dram (random lines of an "     \
     "arena per side of L1d/4, L2/4, L3/8, 2xL3) or sizes (256K, 64M), comma-separated",      \
     0, 0, lab_ws_check},                                                                      \
    {"pages", LAB_TEXT, "4k", NULL,                                                            \
     "the cold arenas' pages: 4k, or huge (transparent huge pages where the kernel gives them)", \
     0, 0, lab_pages_check}

/* "hot,l3,64M" into out[] (at most LAB_WS_MAX); the count, or -1 with a
 * message in err (unknown level, bad or out-of-range size, a repeat). */
int lab_ws_parse(const char *list, lab_ws *out, char *err, size_t errlen);
/* The working sets of the experiment's declared ws= argument (LAB_WS_ARGS)
 * into out[]; the count.  Its check already refused a bad list, so one
 * here is the lab's bug: said, and the process exits 70. */
int lab_ws_arg(lab_ctx *ctx, lab_ws *out);
/* The argument checks of LAB_WS_ARGS (lab_arg.check). */
int lab_ws_check(const char *value, char *err, size_t errlen);
int lab_pages_check(const char *value, char *err, size_t errlen);

/* The arenas of one cold working set: `sides` of them (1: memset's
 * destination; 2: a copy's source, then its destination) in one mapping,
 * each `span` bytes where calls are placed plus room behind it for calls
 * larger than the span (see lab_arena_place).  Offsets are from base. */
typedef struct {
    char *base;
    size_t span;         /* the working set per side */
    size_t stride;       /* from one side's start to the next's */
    size_t len;          /* the mapping */
    unsigned sides;
    const char *pages;   /* what the kernel gave: "4k", "huge" or "mixed" */
} lab_arena;

/* Maps, advises and pre-faults; max_call: the largest call size to be
 * placed (a call's below + above, see lab_arena_place, stays within twice
 * it: an overlapping copy's distance is under its size); huge: pages=huge.
 * Exits with a message when the memory is not there. */
void lab_arena_new(lab_arena *a, size_t span, unsigned sides, size_t max_call, int huge);
void lab_arena_free(lab_arena *a);
/* An arena for each cold working set of ws[n] (hot: none, base NULL), as
 * the experiment's pages= argument asks; and all of them freed. */
void lab_ws_arenas_new(lab_ctx *ctx, const lab_ws *ws, size_t n, lab_arena *arenas,
                       unsigned sides, size_t max_call);
void lab_ws_arenas_free(lab_arena *arenas, size_t n);
/* pages=huge? (the argument's value; NULL: 4k) */
int lab_pages_huge(const char *pages);

/* A random offset o (from a->base) in side `side` with
 * o % granule == in_granule whose call [o - below, o + above) stays inside
 * that side's span: a random line (granule 64) or page (4096) for a call of
 * n bytes is below = 0, above = n.  A call that cannot fit (larger than the
 * span) is clamped to the lowest such o and runs on into the room behind
 * the span: its working set is then the call itself. */
size_t lab_arena_place(const lab_arena *a, unsigned side, size_t granule, size_t in_granule,
                       size_t below, size_t above, uint64_t *rng);

/* A batch replayed over and over keeps its own lines cached, whatever the
 * arena: 50,000 small calls touch a few MiB, which an L3 holds.  So a cold
 * batch comes in several windows, the same calls placed afresh in each,
 * replayed in turn (each pass the next window; a warm-up pass and the
 * timed pass after it in different ones); this many that together they
 * touch as many bytes as the sides they use hold (2 to
 * LAB_WS_MAX_WINDOWS): by the time a window comes back, the others have
 * pushed its lines out of the caches above the level.  window_bytes: what
 * one window touches, in whole lines, over those sides. */
#define LAB_WS_MAX_WINDOWS 32
size_t lab_arena_windows(const lab_arena *a, unsigned sides, size_t window_bytes);

/* The bytes of whole lines a call of n bytes at in_line (0..63) touches. */
static inline size_t lab_lines_touched(size_t n, size_t in_line)
{
    return n ? (in_line + n + 63) / 64 * 64 : 0;
}

/* The working set in a verdict's words: "ws=l3 (4 MiB per side)",
 * "ws=hot (in cache)"; into buf, returned. */
const char *lab_ws_words(const lab_ws *ws, char *buf, size_t len);

/* What backs [p, p + len): "4k", "huge" (transparent huge pages
 * throughout) or "mixed", as /proc/self/smaps says. */
const char *lab_pages_of(const void *p, size_t len);

/* The params members every record of a working set carries (no braces,
 * leading comma): ,"ws":"l3","ws_bytes":4194304,"pages":"4k" */
void lab_ws_params(const lab_ws *ws, size_t bytes, const char *pages, char *buf, size_t len);

#endif
