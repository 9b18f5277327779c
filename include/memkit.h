/* SPDX-License-Identifier: Apache-2.0 */
/* memkit — fast memory fill, copy and zero routines for x86-64 Linux.
 *
 * The one public header (memkit_tunables.def, installed beside it, lists the
 * tunables).  Every routine is safe to call before main(), from any thread, and
 * from signal handlers (none of them allocates or locks), except the
 * thread-pool and page-service functions and mk_tunables_copy, which say
 * otherwise.
 */
#ifndef MEMKIT_H
#define MEMKIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MEMKIT_VERSION "0.2.0"

/* The library's own version and the commit it was built from, e.g.
 * "0.2.0 (commit 93ed201)": what is loaded, which MEMKIT_VERSION (the
 * header's) need not be. */
const char *mk_version(void);

/* 1 when the preload library (libmemkit_preload.so) has taken over the C
 * library's memset/memcpy/memmove in this process, else 0.  With the static
 * library the program's own copy answers, so it is always 0 there. */
int memkit_preload_active(void);

/* ---- core routines (chosen once, at load time, for the running CPU) ---- */

void *mk_memset(void *dst, int c, size_t n);
void *mk_memcpy(void *dst, const void *src, size_t n);   /* overlap-safe: behaves as memmove */
void *mk_memmove(void *dst, const void *src, size_t n);
void  mk_zero_aligned16(void *dst, size_t n);            /* dst 16-aligned, n multiple of 16 */
void *mk_memset_nt(void *dst, int c, size_t n);          /* non-temporal (cache-bypassing) */
void *mk_memcpy_nt(void *dst, const void *src, size_t n);
void  mk_memset_explicit(void *dst, int c, size_t n);    /* never removed by the compiler (C23 memset_explicit) */

/* ---- variant registry: every compiled variant, usable or not ---- */

typedef enum { MK_OP_MEMSET, MK_OP_MEMCPY, MK_OP_MEMMOVE } mk_op;
typedef struct { const char *name; mk_op op; int usable; void (*fn)(void); } mk_variant;
const mk_variant *mk_variants(size_t *count);  /* cast fn to the op's signature */

/* The variant each dispatched routine uses (e.g. "avx512"), for reports. */
const char *mk_selected_variant(mk_op op);

/* ---- the CPU, as the library sees it ---- */

typedef struct {
    char     vendor[13];          /* "AuthenticAMD", "GenuineIntel", ... */
    char     brand[49];           /* cpuid brand string, trimmed */
    unsigned family, model, stepping;   /* display family/model (extended fields folded in) */
    unsigned microcode;           /* from /proc/cpuinfo; 0 when unreadable */
    int      has_sse2, has_avx2, has_avx512f, has_avx512bw, has_avx512vl;
    int      has_erms, has_fsrm, has_bmi2;
    int      os_avx, os_avx512;   /* the OS saves the YMM / ZMM state (XGETBV) */
    size_t   l1d_bytes, l2_bytes, l3_bytes;   /* per the cpuid cache leaves; 0 when unknown */
    size_t   line_bytes;
    int      has_amx;             /* AMX-TILE: tells an AMX Xeon whose model number a hypervisor
                                     masks (strategy row intel-xeon-amx); last, so the fields
                                     before it keep their offsets (ABI) */
} mk_cpu_info;

const mk_cpu_info *mk_cpu(void);

/* ---- tunables ----
 * MEMKIT_TUNABLES=name=value:name=value (the syntax of GLIBC_TUNABLES), sizes
 * with K/M/G suffixes.  Read once, at load time; a bad name or value, or one
 * outside the tunable's bounds, is reported once on stderr and the default
 * kept.  Defaults derive from the CPU.
 *
 * A set of tunables is opaque: read it by a tunable's name (the rows of
 * memkit_tunables.def, installed beside this header: each tunable's kind,
 * bounds, default and what it controls), so a new tunable changes no
 * caller's code and not the library's ABI. */
typedef struct mk_tunables mk_tunables;

/* The tunables in force (the library's own: never freed or written). */
const mk_tunables *mk_tunables_get(void);

/* A copy of t on the heap, e.g. of mk_tunables_get() to try settings on
 * with mk_tunables_parse; NULL when out of memory.  Free it with
 * mk_tunables_free (NULL: nothing).  These two allocate: not from a signal
 * handler. */
mk_tunables *mk_tunables_copy(const mk_tunables *t);
void         mk_tunables_free(mk_tunables *t);

/* The value of the size or count tunable called name (a size in bytes,
 * SIZE_MAX for never) into *out: 0, or -1 (*out untouched) when no size or
 * count tunable has that name. */
int mk_tunables_number(const mk_tunables *t, const char *name, size_t *out);
/* The variant the variant tunable called name forces ("sse2", ...), or
 * "auto" (the best usable); NULL when no variant tunable has that name.
 * Valid while t is. */
const char *mk_tunables_variant(const mk_tunables *t, const char *name);
/* The path of the profile file t was read from, "" for none.  Valid while t
 * is. */
const char *mk_tunables_profile(const mk_tunables *t);

/* Parses a MEMKIT_TUNABLES-style string into *t (a copy: mk_tunables_copy),
 * starting from its current values.  Each problem is described by one line
 * passed to report (may be NULL).  Returns the number of problems; good
 * settings are applied anyway. */
int mk_tunables_parse(mk_tunables *t, const char *spec,
                      void (*report)(void *ctx, const char *line), void *ctx);

/* Writes "name=value:name=value..." for t's tunables, every row of
 * memkit_tunables.def in its order (sizes in bytes or never: what
 * mk_tunables_parse takes back); returns the length it needed (as snprintf). */
size_t mk_tunables_format(const mk_tunables *t, char *buf, size_t len);

/* The row of the per-CPU strategy table the defaults came from
 * (docs/strategy.md): which microarchitecture, why it matched, the small-size
 * method, and the measurement the row rests on. */
typedef struct {
    const char *name;       /* "amd-zen4", "amd-zen5", "intel-fsrm", ..., "generic" */
    const char *matched;    /* the key that matched, e.g. "AMD family 26 (Zen 5), every model" */
    const char *small;      /* the small-size method */
    const char *evidence;   /* experiment, CPU, figure */
} mk_strategy_info;
const mk_strategy_info *mk_strategy(void);

/* ---- parallel engine ---- */

typedef struct mk_pool mk_pool;
mk_pool *mk_pool_create(unsigned threads);    /* NULL on failure; threads 0 = default */
void     mk_pool_destroy(mk_pool *pool);
unsigned mk_pool_threads(const mk_pool *pool); /* workers + the caller */
/* pool NULL: the library's shared default pool, created on first use. */
void *mk_parallel_memcpy(mk_pool *pool, void *dst, const void *src, size_t n);
void *mk_parallel_memset(mk_pool *pool, void *dst, int c, size_t n);
/* Work of the caller's own over a region, on the same pool: fn(ctx, off,
 * len) for every piece of [base, base + n), cut at the addresses that are
 * multiples of the chunk the routines above use (2 MiB, a huge page), on
 * the pool's workers and the calling thread; returns when every piece is
 * done.  fn must touch only its piece.  No threshold: the caller chose to
 * go parallel (first-touching fresh memory from several threads, say). */
typedef void mk_piece_fn(void *ctx, size_t off, size_t len);
void mk_parallel_for(mk_pool *pool, const void *base, size_t n, mk_piece_fn *fn, void *ctx);

/* ---- page services ---- */

typedef enum { MK_PREFAULT_TOUCH, MK_PREFAULT_POPULATE, MK_PREFAULT_LOCK } mk_prefault_mode;
/* Returns 0, or an errno value saying what the kernel refused; never raises
 * a signal: touch and populate return ENOMEM for an unmapped page, EINVAL
 * for one that may not be written (read-only, PROT_NONE), EFAULT for one past
 * the end of its file; lock returns mlock's errno.  (Without /proc, touch
 * can only check for unmapped pages.) */
int mk_prefault(void *p, size_t n, mk_prefault_mode mode);

typedef enum { MK_PAGES_NORMAL = 0, MK_PAGES_THP = 1, MK_PAGES_HUGETLB = 2 } mk_page_kind;
/* Anonymous mapping of n bytes, huge pages when asked and possible, else
 * normal pages; *got (may be NULL) says what was obtained. NULL on failure. */
void *mk_pages_alloc(size_t n, mk_page_kind want, mk_page_kind *got);
void  mk_pages_free(void *p, size_t n);

/* ---- copiers: copy methods behind one interface ----
 * A copier moves bytes between a "shared" buffer it allocated and a user
 * buffer (copy_in: user -> shared, copy_out: shared -> user; the same thing
 * on one device).  Contract, for users and for adapters that wrap copiers:
 *  - align: dst, src and n must all be multiples of it (1: any).  alloc(n)
 *    returns memory aligned to max(align, 64) with room for n rounded up to
 *    align; free it with the same copier's free(p, n).
 *  - copy_in/copy_out return 0 when done, or EINVAL without touching dst
 *    when the buffers break the contract (misaligned, n not a multiple,
 *    dst and src overlapping).  They never write outside [dst, dst+n).
 *  - Splitting: copying [0,n) equals copying the pieces [a,b) for any cut
 *    points that are multiples of align, in any order, from any threads; so
 *    an adapter may cut a copy into chunks at multiples of align (better:
 *    of a page) and run them in parallel.  Each call ends with whatever
 *    fence its stores need (sfence after non-temporal stores): once a call
 *    returns, its stores are ordered like ordinary ones, so joining the
 *    workers with a release/acquire handshake publishes the whole copy.
 *  - usable: the CPU can run it; calling an unusable copier is a bug.
 * Safe from any thread; none keeps state between calls. */
typedef struct {
    const char *name;          /* "memkit", "memkit_nt", "avx_stream_prefetch" */
    const char *description;   /* one line */
    size_t      align;         /* power of two; dst, src and n multiples of it */
    int         usable;
    void *(*alloc)(size_t n);                                 /* NULL on failure */
    void  (*free)(void *p, size_t n);
    int   (*copy_in)(void *dst, const void *src, size_t n);   /* user -> shared */
    int   (*copy_out)(void *dst, const void *src, size_t n);  /* shared -> user */
} mk_copier;

/* The library's copiers, usable or not, in a fixed order.  When to pick each
 * (the lab raced them against more methods on Zen 4; see the README):
 *  - "memkit" (mk_memcpy, any alignment): by default; for ipc-copy's 512 KiB
 *    to 2 MiB messages no copier beat the C library's memcpy by 5%.
 *  - "memkit_nt" (mk_memcpy_nt, any alignment): copies from about half the
 *    L3 up that nothing reads right after (copy-read: non-temporal wins).
 *  - "avx_stream_prefetch" (AVX2; 64-byte aligned buffers and sizes): large
 *    messages between processes, from 4 MiB (ipc-copy: 1.57x the C library's
 *    memcpy; the non-temporal copiers led there, 1.5-1.7x). */
const mk_copier *mk_copiers(size_t *count);
/* The copier called name, or NULL. */
const mk_copier *mk_copier_find(const char *name);

/* ---- parallel engine: the MT copier adapter ----
 * Runs any copier's copy_in (to_shared 1) or copy_out (0) over a pool (NULL:
 * the default pool), cut at multiples of max(copier->align, the pool's
 * chunk); one thread below the parallel_threshold tunable.  Returns 0, or
 * EINVAL without touching dst when the buffers break the copier's contract. */
int mk_parallel_copy(mk_pool *pool, const mk_copier *copier, int to_shared,
                     void *dst, const void *src, size_t n);

/* ---- zeroing service ---- */

typedef enum { MK_LOCK_MUTEX = 0, MK_LOCK_SPIN = 1, MK_LOCK_ATOMIC = 2 } mk_lock_kind;
typedef struct {
    unsigned     threads;        /* background workers (default 2) */
    size_t       grain;          /* bytes a worker zeroes per claim (default 1 MiB) */
    mk_lock_kind lock;           /* how the work queue is protected (default mutex) */
    unsigned     awake;          /* workers zeroing at once, the others sleep (default:
                                    half the usable CPUs, 1 to 4; >= threads: no cap) */
} mk_zeroing_config;
typedef struct {
    uint64_t bytes_zeroed;
    uint64_t blocks_zeroed;
    double   worker_cpu_seconds;
    unsigned peak_awake;         /* most workers ever zeroing at once */
} mk_zeroing_stats;

typedef struct mk_zeroing mk_zeroing;
mk_zeroing *mk_zeroing_create(const mk_zeroing_config *cfg);  /* cfg NULL: defaults */
void        mk_zeroing_destroy(mk_zeroing *z);
/* Hand back a freed block of n bytes; the service zeroes it in the background. */
void        mk_zeroing_put(mk_zeroing *z, void *block, size_t n);
/* Take a zeroed block of at least n bytes, or NULL if none is ready. */
void       *mk_zeroing_get(mk_zeroing *z, size_t n, size_t *got);
/* Wait until every block handed back has been zeroed. */
void        mk_zeroing_drain(mk_zeroing *z);
void        mk_zeroing_get_stats(mk_zeroing *z, mk_zeroing_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* MEMKIT_H */
