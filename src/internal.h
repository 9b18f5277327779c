/* Library-internal declarations shared across src/. */
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

/* Debug builds (-DMK_DEBUG_CONTRACTS) check the callers' side of a contract;
 * a violation is reported on stderr and the process traps. */
#ifdef MK_DEBUG_CONTRACTS
#define MK_CONTRACT(cond, msg) \
    do { if (MK_UNLIKELY(!(cond))) { mk_raw_write_stderr("memkit: contract violated: " msg "\n"); __builtin_trap(); } } while (0)
#else
#define MK_CONTRACT(cond, msg) ((void)0)
#endif

/* ---- cpu.c ---- */
/* Fills the cpuid part of the CPU info (no libc, no allocation: safe from an
 * ifunc resolver).  Idempotent. */
MK_HIDDEN const mk_cpu_info *mk_cpu_early(void);

/* ---- rawio.c: raw system calls, usable before libc is up ---- */
MK_HIDDEN long mk_raw_read_file(const char *path, char *buf, size_t cap);
MK_HIDDEN void mk_raw_write_stderr(const char *s);
/* Value of NAME in the process's initial environment (/proc/self/environ,
 * read on the first call), copied to buf; returns 1 if found.  Not thread-safe:
 * for the configuration's one-time initialisation only. */
MK_HIDDEN int mk_raw_getenv(const char *name, char *buf, size_t cap);

/* ---- tunables.c ---- */
MK_HIDDEN void mk_tunables_defaults(mk_tunables *t, const mk_cpu_info *cpu);

/* ---- strategy.c: the per-CPU table ---- */
/* Sets the microarchitecture-dependent tunables from the CPU's row. */
MK_HIDDEN void mk_strategy_defaults(mk_tunables *t, const mk_cpu_info *cpu);
/* The row a CPU gets (mk_strategy() is this for the running CPU). */
MK_HIDDEN const mk_strategy_info *mk_strategy_for(const mk_cpu_info *cpu);

/* ---- dispatch.c ----
 * The configuration every routine reads: set once by mk_config() (called by
 * the ifunc resolvers, so before any routine runs), constant afterwards. */
MK_HIDDEN extern mk_tunables mk_cfg;
MK_HIDDEN const mk_tunables *mk_config(void);
/* memset sizes from which the thresholds need looking at:
 * min(rep_stosb_threshold, nt_threshold, nt_threshold_zero). */
MK_HIDDEN extern size_t mk_memset_large_from;
/* memcpy sizes from which the thresholds need looking at:
 * min(rep_movsb_threshold, nt_copy_threshold). */
MK_HIDDEN extern size_t mk_copy_large_from;

/* ---- threads.c ---- */
/* Starts one of memkit's background threads (pool workers, zeroing workers):
 * with every signal blocked, since the host program's handlers expect its
 * own threads, and named for ps/top.  Returns pthread_create's error. */
MK_HIDDEN int mk_start_background_thread(pthread_t *tid, void *(*fn)(void *), void *arg,
                                         const char *name);
/* CPUs this process may run on (its affinity mask; online CPUs if that
 * cannot be read), at least 1. */
MK_HIDDEN unsigned mk_usable_cpus(void);

/* ---- the variant tables (src/set, src/copy) ---- */
typedef struct {
    const char *name;        /* "sse2", "avx2", "avx512" */
    mk_op       op;
    unsigned    needs;       /* MK_NEED_* bits the CPU and OS must provide */
    void      (*fn)(void);
} mk_variant_def;

enum { MK_NEED_AVX2 = 1u << 0, MK_NEED_AVX512 = 1u << 1 };

MK_HIDDEN int mk_cpu_satisfies(const mk_cpu_info *cpu, unsigned needs);

/* Each family's table, best variant first; the registry concatenates them. */
MK_HIDDEN extern const mk_variant_def mk_set_variant_defs[];
MK_HIDDEN extern const size_t mk_set_variant_count;
MK_HIDDEN extern const mk_variant_def mk_copy_variant_defs[];
MK_HIDDEN extern const size_t mk_copy_variant_count;

/* All variant definitions, set family first. */
MK_HIDDEN size_t mk_variant_def_count(void);
MK_HIDDEN const mk_variant_def *mk_variant_def_at(size_t i);

/* The best usable variant of op (honouring a forced name in the tunables). */
MK_HIDDEN void (*mk_pick_variant(mk_op op))(void);

typedef void *(*mk_memset_fn)(void *, int, size_t);
typedef void *(*mk_memcpy_fn)(void *, const void *, size_t);

#endif
