/* SPDX-License-Identifier: Apache-2.0 */
/* Library-internal declarations shared across src/.
 *
 * The load-time layers, each using only those above it:
 *   cpu.c, rawio.c   cpuid; raw system calls
 *   strategy.c       the per-CPU strategy table (the CPU's row)
 *   variants.c       the variant registry: one row per ISA of isa.def
 *   tunables.c       the tunables' table (memkit_tunables.def), defaults, parsing
 *   config.c         defaults, then the profile, then MEMKIT_TUNABLES
 *   dispatch.c       every ifunc binding, from the configuration and registry */
#ifndef MEMKIT_INTERNAL_H
#define MEMKIT_INTERNAL_H

#include "memkit.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define MK_HIDDEN __attribute__((visibility("hidden")))
#define MK_LIKELY(x) __builtin_expect(!!(x), 1)
#define MK_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Code that may run from an ifunc resolver, before the C library and any
 * sanitizer runtime are initialised: no instrumentation, no libc calls. */
#define MK_EARLY __attribute__((no_sanitize("address", "undefined", "thread")))

/* How many functions mk_op names (memset, memcpy, memmove). */
#define MK_OP_COUNT (MK_OP_MEMMOVE + 1)

/* [dst, dst+n) and [src, src+n) share a byte (two unsigned compares: a
 * distance that wraps is larger than any n). */
static inline __attribute__((always_inline)) int mk_overlaps(const void *dst, const void *src,
                                                             size_t n)
{
    return (uintptr_t)dst - (uintptr_t)src < n || (uintptr_t)src - (uintptr_t)dst < n;
}

/* Debug builds (-DMK_DEBUG_CONTRACTS) check the callers' side of a contract;
 * a violation is reported on stderr and the process traps. */
#ifdef MK_DEBUG_CONTRACTS
#define MK_CONTRACT(cond, msg) \
    do { if (MK_UNLIKELY(!(cond))) { mk_raw_write_stderr("memkit: contract violated: " msg "\n"); __builtin_trap(); } } while (0)
#else
#define MK_CONTRACT(cond, msg) ((void)0)
#endif

/* What a process's first call writes, kept beside the pointers the loader
 * has already written (.data): spread over .bss between large buffers it
 * touched three fresh pages, ~1 us each in a VM. */
#define MK_FIRST_CALL_DATA __attribute__((section(".data.mk_first_call")))

/* ---- cpu.c ---- */
/* Fills the cpuid part of the CPU info (no libc, no allocation: safe from an
 * ifunc resolver).  Idempotent. */
MK_HIDDEN const mk_cpu_info *mk_cpu_early(void);
/* Reads the L2 and L3 sizes into mk_cpu_early()'s record, once. */
MK_HIDDEN void mk_cpu_read_caches(void);

/* ---- rawio.c: raw system calls, usable before libc is up ---- */
/* The file's contents, NUL-terminated, or -1 (open or read failed). */
MK_HIDDEN long mk_raw_read_file(const char *path, char *buf, size_t cap);
/* The same for a regular file only, opened without blocking; otherwise -2
 * (no such file) or -1, with *why ("not a regular file", ...). */
MK_HIDDEN long mk_raw_read_regular_file(const char *path, char *buf, size_t cap,
                                        const char **why);
MK_HIDDEN void mk_raw_write_stderr(const char *s);
/* Whether no page is mapped at p yet (mincore): a buffer never written. */
MK_HIDDEN int mk_raw_page_untouched(const void *p);
/* The process's environment: the C library's own array once libc has started
 * (the preload shim, mk_libc_env), else the initial environment read whole
 * from /proc/self/environ into memory mapped for it. */
typedef struct {
    char *const *vars;   /* libc's environ, or NULL: text holds it */
    char  *text;
    size_t len, cap;
} mk_raw_env;
/* 1 and the environment in e, or 0 when it is not to be read (secure
 * execution: an invoker's settings) or cannot be; mk_raw_env_release after. */
MK_HIDDEN int mk_raw_env_open(mk_raw_env *e);
/* NAME's value (NUL-terminated, inside e), or NULL. */
MK_HIDDEN const char *mk_raw_env_get(const mk_raw_env *e, const char *name);
MK_HIDDEN void mk_raw_env_release(mk_raw_env *e);
/* NAME's value copied to buf: 1 if set and it fits whole; 0 if unset, too
 * long (never cut short) or in secure execution (an invoker's setting). */
MK_HIDDEN int mk_raw_getenv(const char *name, char *buf, size_t cap);
/* Whether the program runs with privileges its invoker lacks (setuid,
 * setgid, file capabilities: AT_SECURE); then the environment and the
 * invoker's files are not to be trusted. */
MK_HIDDEN int mk_raw_secure_execution(void);
/* Defined by the preload shim only (weak here): libc's environment and its
 * AT_SECURE, read from memory; 1 (e filled), 0 (secure execution), or -1
 * before libc has started (then the system calls above).  libmemkit's ifunc
 * resolvers always run before that. */
MK_HIDDEN int mk_libc_env(mk_raw_env *e) __attribute__((weak));
/* Also the preload's: cpuid leaf LEAF (subleaf 0) as the C library read it at
 * start-up, into r (eax, ebx, ecx, edx); 0 where it has none. */
MK_HIDDEN int mk_libc_cpuid(unsigned leaf, unsigned r[4]) __attribute__((weak));

/* ---- tunables.c ---- */
/* The tunables: one field per row of memkit_tunables.def, in its order:
 * size_t NAME for a size (SIZE_MAX: never), unsigned NAME for a count, char
 * force_NAME[16] for a variant ("": the best usable).  memkit.h declares the
 * struct only, so the library's code reads the fields directly (the
 * routines' hot paths cost no call) while a new row changes no caller's
 * ABI (callers ask by name: mk_tunables_number and the like). */
struct mk_tunables {
#define MK_TUNABLE(name, kind, bounds, def, help) MK_TUNABLE_FIELD_##kind(name)
#define MK_TUNABLE_FIELD_SIZE(name) size_t name;
#define MK_TUNABLE_FIELD_COUNT(name) unsigned name;
#define MK_TUNABLE_FIELD_VARIANT(name) char force_##name[16];
#include "memkit_tunables.def"
#undef MK_TUNABLE
#undef MK_TUNABLE_FIELD_SIZE
#undef MK_TUNABLE_FIELD_COUNT
#undef MK_TUNABLE_FIELD_VARIANT
    char profile[256];           /* profile file in force ("" = none) */
};
/* A threshold the CPU's row derives from the L2 or L3 size while those are
 * not read yet (see mk_config): in a VM each cpuid traps to the hypervisor
 * (~4 us), and a process that never copies or fills MK_PENDING_FLOOR bytes
 * at once never needs the two that read them. */
#define MK_PENDING ((size_t)-2)
/* Copies from this size look whether their destination was ever written
 * (copy_template.h: untouched memory is copied backward). */
#define MK_FRESH_CHECK_FROM ((size_t)4 << 20)
/* Below every threshold a row derives from a cache (the smallest is a
 * quarter of an L2 of 256 KiB; test_strategy checks every row). */
#define MK_PENDING_FLOOR ((size_t)64 << 10)
typedef enum { MK_CACHES_PENDING, MK_CACHES_KNOWN } mk_caches;
MK_HIDDEN void mk_tunables_defaults(mk_tunables *t, const mk_cpu_info *cpu, mk_caches caches);
/* Each size tunable of t still MK_PENDING takes its value from full. */
MK_HIDDEN void mk_tunables_fill_pending(mk_tunables *t, const mk_tunables *full);
/* The tunables' table, a row per row of memkit_tunables.def; MK_T_<name> is
 * the row's index. */
enum {
#define MK_TUNABLE(name, kind, bounds, def, help) MK_T_##name,
#include "memkit_tunables.def"
#undef MK_TUNABLE
    MK_TUNABLE_COUNT
};
typedef enum { MK_KIND_SIZE, MK_KIND_COUNT, MK_KIND_VARIANT } mk_tunable_kind;
typedef struct {
    const char     *name;
    mk_tunable_kind kind;
    size_t          offset;      /* into mk_tunables */
    size_t          min, max;    /* the bounds of a size or count */
    int             pow2;        /* ... which must also be a power of two */
    int             per_cpu;     /* the default is the CPU's strategy row's */
    size_t          fixed;       /* else this (auto for a variant) */
    const char     *help;
} mk_tunable_row;
MK_HIDDEN extern const mk_tunable_row mk_tunable_rows[MK_TUNABLE_COUNT];
/* The row's bounds, as the parser's messages and `memkit env --tunables`
 * say them ("0 to never", "a power of two from 1 to 4K"), at p. */
MK_HIDDEN char *mk_tunable_bounds_text(const mk_tunable_row *r, char *p, char *end);
/* The row's value in t for people ("64M", "never", "auto"), at p. */
MK_HIDDEN char *mk_tunable_value_text(const mk_tunable_row *r, const mk_tunables *t, char *p,
                                      char *end);

/* ---- strategy.c: the per-CPU table ---- */
/* The per-CPU tunables' defaults (out[MK_T_name]) from the CPU's row; the
 * others' entries mean nothing. */
MK_HIDDEN void mk_strategy_defaults(size_t out[MK_TUNABLE_COUNT], const mk_cpu_info *cpu,
                                   mk_caches caches);
/* The row a CPU gets (mk_strategy() is this for the running CPU). */
MK_HIDDEN const mk_strategy_info *mk_strategy_for(const mk_cpu_info *cpu);
/* The variant (isa.def row name) the CPU's row prefers; NULL: none. */
MK_HIDDEN const char *mk_strategy_variant(const mk_cpu_info *cpu, mk_op op);
/* The table itself, for `memkit env --strategies` and docs/strategy.md:
 * row i's info, and how it derives tunable t's default ("L3/2", "2 x L3",
 * "32K", "2048 x V/16", "never"; "" when it does not: not a per-CPU
 * tunable), at p. */
MK_HIDDEN extern const size_t mk_strategy_count;
MK_HIDDEN const mk_strategy_info *mk_strategy_at(size_t i);
MK_HIDDEN char *mk_strategy_rule_text(size_t i, size_t t, char *p, char *end);
/* Row i's variant (NULL: the first the CPU runs), its evidence file in the
 * repository (NULL: unmeasured, docs/evidence.md), and the row a CPU gets. */
MK_HIDDEN const char *mk_strategy_variant_at(size_t i, mk_op op);
MK_HIDDEN const char *mk_strategy_evidence_file_at(size_t i);
MK_HIDDEN size_t mk_strategy_index(const mk_cpu_info *cpu);

/* ---- config.c ----
 * The configuration every routine reads: set once by mk_config_early()
 * (called by the ifunc resolvers and the preload's first call, so before any
 * routine runs), its cache-sized thresholds completed once by mk_config()
 * (called by everything else, and by the routines' large-size paths). */
MK_HIDDEN extern mk_tunables mk_cfg;
MK_HIDDEN const mk_tunables *mk_config_early(void);
MK_HIDDEN const mk_tunables *mk_config(void);
/* Puts t in force in place of the configuration (memkit tune's experiment
 * takes turns between configurations in one process this way).  Only while
 * no other thread calls memkit: they would read it half written. */
MK_HIDDEN void mk_config_install(const mk_tunables *t);
/* What a profile's text comes to (mk_profile_read, a function of the text
 * alone; config.c reports it and applies its settings): the settings, or
 * why none apply and the line that decided it. */
typedef enum {
    MK_PROFILE_APPLIES,      /* tied to this CPU model by its cpu= line */
    MK_PROFILE_UNTIED,       /* applies too, but names no CPU model */
    MK_PROFILE_MISSING,      /* no file there (said only of a named one) */
    MK_PROFILE_UNREADABLE,   /* why: not a regular file, too large, ... */
    MK_PROFILE_OTHER_CPU,    /* cpu: what its cpu= line names */
    MK_PROFILE_CORRUPT,      /* a setting refused, or a NUL byte */
} mk_profile_outcome;
typedef struct {
    mk_profile_outcome outcome;
    long line;               /* the line that refused the profile (from 1; 0: none) */
    const char *why;
    char cpu[96];
    mk_tunables settings;    /* base with the profile's settings over it */
} mk_profile_reading;
MK_HIDDEN void mk_profile_read(char *text, long len, const mk_tunables *base,
                               const mk_cpu_info *cpu, mk_profile_reading *r);
/* memset sizes from which the thresholds need looking at:
 * min(rep_stosb_threshold, nt_threshold, nt_threshold_zero). */
MK_HIDDEN extern size_t mk_memset_large_from;
/* memcpy sizes from which the thresholds need looking at:
 * min(rep_movsb_threshold, nt_copy_threshold, MK_FRESH_CHECK_FROM). */
MK_HIDDEN extern size_t mk_copy_large_from;

/* ---- the large-size methods, by the thresholds ----
 * Which method a memset or copy above 8 vectors takes under tunables t,
 * decided here once: set_large and copy_large switch on it, and `memkit
 * tune` asks it (memkit-tunables --paths) instead of keeping a copy of the
 * rules.  A copy into memory never written goes backward instead of
 * MK_PATH_LOOP or MK_PATH_STREAM: that depends on the pages, not on t
 * (copy_template.h, destination_untouched). */
typedef enum { MK_PATH_LOOP, MK_PATH_BACKWARD, MK_PATH_REP, MK_PATH_STREAM } mk_path;

static inline __attribute__((always_inline)) mk_path mk_set_path(const mk_tunables *t, size_t n,
                                                                 int c)
{
    if (n >= ((uint8_t)c == 0 ? t->nt_threshold_zero : t->nt_threshold))
        return MK_PATH_STREAM;
    return n >= t->rep_stosb_threshold ? MK_PATH_REP : MK_PATH_LOOP;
}

/* Backward when dst lies inside the source (it must); rep movsb only where
 * dst - src is a multiple of rep_movsb_align (64 on AMD: the destination
 * aligned, the source is too, else Zen 4 runs 5x..25x slower; see
 * docs/strategy.md, row amd-zen4); streaming stores never over an overlap
 * (they would race their own loads). */
static inline __attribute__((always_inline)) mk_path mk_copy_path(const mk_tunables *t,
                                                                  const void *d, const void *s,
                                                                  size_t n)
{
    uintptr_t ahead = (uintptr_t)d - (uintptr_t)s;
    if (ahead < n)
        return MK_PATH_BACKWARD;
    int apart = !mk_overlaps(d, s, n);
    if (n >= t->rep_movsb_threshold && n < t->rep_movsb_stop && apart &&
        (ahead & (t->rep_movsb_align - 1)) == 0)
        return MK_PATH_REP;
    return n >= t->nt_copy_threshold && apart ? MK_PATH_STREAM : MK_PATH_LOOP;
}

/* What an n-byte mk_parallel_memset (set) or mk_parallel_memcpy takes under
 * t: *pooled, whether it runs on the pool (else the caller does it all),
 * and the path of the routine it runs (in the pool: each chunk's, or
 * streamed).  Asked by memkit-tunables --paths; parallel.c's own decision. */
MK_HIDDEN mk_path mk_parallel_path(const mk_tunables *t, const void *dst, const void *src, size_t n,
                                   int set, int *pooled);

/* ---- threads.c ---- */
/* Starts one of memkit's background threads (pool workers, zeroing workers):
 * with every signal blocked, since the host program's handlers expect its
 * own threads, and named for ps/top.  Returns pthread_create's error. */
MK_HIDDEN int mk_start_background_thread(pthread_t *tid, void *(*fn)(void *), void *arg,
                                         const char *name);
/* CPUs this process may run on (its affinity mask; online CPUs if that
 * cannot be read), at least 1. */
MK_HIDDEN unsigned mk_usable_cpus(void);

/* ---- cpu.c: the features the ISA table (isa.def) asks for ---- */
enum {
    MK_FEAT_SSE2 = 1u << 0, MK_FEAT_AVX2 = 1u << 1, MK_FEAT_BMI2 = 1u << 2,
    MK_FEAT_AVX512F = 1u << 3, MK_FEAT_AVX512BW = 1u << 4, MK_FEAT_AVX512VL = 1u << 5,
    MK_FEAT_OS_AVX = 1u << 6, MK_FEAT_OS_AVX512 = 1u << 7,
};
/* What one ISA's code needs (MK_NEED_AVX2: whatever a *_avx2.c file needs). */
#define F(feature) MK_FEAT_##feature
#define MK_ISA_ROW(suffix, flags, needs) enum { MK_NEED_##suffix = (needs) };
#include "isa.def"
#undef MK_ISA_ROW
#undef F
#define MK_NEED_AVX2 MK_NEED_avx2
#define MK_NEED_AVX512 MK_NEED_avx512

/* The MK_FEAT_* bits this CPU and OS provide. */
MK_HIDDEN unsigned mk_cpu_features(const mk_cpu_info *cpu);
/* Whether the CPU and OS provide every feature in needs. */
MK_HIDDEN int mk_cpu_satisfies(const mk_cpu_info *cpu, unsigned needs);

typedef void *(*mk_memset_fn)(void *, int, size_t);
typedef void *(*mk_memcpy_fn)(void *, const void *, size_t);

/* Every ISA's entry points, as its templates (src/set, src/copy) define them. */
#define MK_ISA_ROW(isa, flags, needs)                                          \
    MK_HIDDEN void *mk_memset_##isa(void *, int, size_t);                  \
    MK_HIDDEN void *mk_memset_nt_##isa(void *, int, size_t);               \
    MK_HIDDEN void mk_zero_aligned16_##isa(void *, size_t);                \
    MK_HIDDEN void *mk_memmove_##isa(void *, const void *, size_t);        \
    MK_HIDDEN void *mk_memcpy_nt_##isa(void *, const void *, size_t);
#include "isa.def"
#undef MK_ISA_ROW

/* ---- variants.c: the variant registry ----
 * One row per ISA of isa.def, best first, with the whole family of entry
 * points built for it: choosing a row chooses them all together. */
typedef struct {
    const char  *name;        /* the ISA: "avx512", "evex", "avx2", "sse2" */
    unsigned     needs;       /* MK_FEAT_* bits */
    mk_memset_fn memset, memset_nt;
    void       (*zero_aligned16)(void *, size_t);
    mk_memcpy_fn memmove, memcpy_nt;   /* memcpy is memmove (overlap-safe) */
} mk_variant_row;
MK_HIDDEN extern const mk_variant_row mk_variant_rows[];
MK_HIDDEN extern const size_t mk_variant_row_count;
/* The row called name[0..len), or NULL. */
MK_HIDDEN const mk_variant_row *mk_variant_named(const char *name, size_t len);
/* The row's routine for op (cast to the op's signature). */
MK_HIDDEN void (*mk_variant_fn(const mk_variant_row *row, mk_op op))(void);

/* ---- dispatch.c: every ifunc binding ---- */
/* The row op runs: the one forced in the configuration, else the one the
 * CPU's strategy row prefers, else the first usable in isa.def. */
MK_HIDDEN const mk_variant_row *mk_pick_variant_row(mk_op op);
MK_HIDDEN void (*mk_pick_variant(mk_op op))(void);

/* Calls from inside the library bind to the library's own routines, not to
 * whatever object exports the same public name first (a preload, another
 * copy of memkit): each is referred to by a hidden name that dispatch.c
 * defines beside the public one (glibc's hidden_proto, by hand). */
#define MK_LOCAL_NAME(name) #name "_local"
#define MK_BIND_LOCALLY(name) extern __typeof(name) name __asm__(MK_LOCAL_NAME(name)) MK_HIDDEN;
MK_BIND_LOCALLY(mk_memset)
MK_BIND_LOCALLY(mk_memcpy)
MK_BIND_LOCALLY(mk_memmove)
MK_BIND_LOCALLY(mk_memset_nt)
MK_BIND_LOCALLY(mk_memcpy_nt)
MK_BIND_LOCALLY(mk_zero_aligned16)

#endif
