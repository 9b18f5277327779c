/* SPDX-License-Identifier: Apache-2.0 */
/* Recording for `memkit record`: with MEMKIT_RECORD=DIR in the environment
 * the shim binds memset, memcpy and memmove to wrappers that count each
 * call's size, destination and (copies) source alignment and overlap, and
 * estimate each function's working set (below), then jump to the routine
 * they would have called anyway.  Without it nothing here runs.
 *
 * Where the counts live: each thread owns a slot of plain counters (no lock,
 * no atomic per call) in a file DIR/<pid>.<k>.mkrec mapped MAP_SHARED, so
 * the counts are in the page cache from the moment they are made: a program
 * killed by any signal, SIGKILL included, leaves everything it counted.  A
 * file holds SLOTS threads; the 65th thread starts the process's next file.
 * `memkit record` sums the files when the program ends.
 *
 * Forks: the process-wide state sits in a page marked MADV_WIPEONFORK, so a
 * forked child sees it zeroed (not live, unlocked) and its first call opens
 * the child's own file.  An exec'd image loads the shim afresh (the
 * environment is inherited) and, having the same pid, takes the next free k.
 *
 * The working set, per function and side (destination; copies: source too),
 * is estimated as the size of the region the calls' data is spread over:
 * the lab's own working-set parameter (bench/lab/working_set.h: each call
 * at a random line of an arena of that size per side), so that a replay at
 * the estimate meets the caches as the program's calls did.  How:
 *  - One call in 256 on average is sampled, at random intervals (1..512
 *    calls, drawn at each sample): per call a decrement and a branch, which
 *    is mispredicted at the samples.  That mispredict, with the work thrown
 *    away behind it, is most of the cost: 30-45 ns a sample in
 *    record-overhead, +0.5 ns a call at one in 64, +0.17 at one in 256.  A
 *    fixed interval is no cheaper in a real program (other branches crowd
 *    the history the predictor would need) and aliases with a program's own
 *    period (a loop over 64 buffers sampled every 64th call always shows
 *    the same one); random intervals cannot.
 *  - A sampled call draws lines per side, each uniformly from a part of
 *    the bytes it touches: one per 2 KiB, 1 to 64 (see sample()); each
 *    hashed into a bitmap of REC_WS_BITS bits per side.
 *  - Every REC_WS_WINDOW insertions close a window: its count of bits set
 *    (the distinct lines, by linear counting) goes into a histogram, and the
 *    bitmap starts empty.  The window in progress stays readable.
 * Draws from a region of P lines give D = P (1 - e^(-K/P)) distinct lines
 * in K draws; recording.py inverts that per window (P: the region; D close
 * to K: no reuse seen, a region larger than the window tells: dram).
 * One small buffer gives P of a few lines, a stride over 256 MiB P beyond
 * any cache.  Only memset/memcpy/memmove calls are seen: the program's
 * other accesses compete for the same caches, so this is a lower bound.
 *
 * Like the rest of the shim: raw system calls only, no allocation, no call
 * back into memset/memcpy (the wrappers are those functions). */
#include "record.h"

#include "internal.h"
#include "once.h"

#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>

/* ---- the file layout (python/memkit/recording.py reads it) ---- */

#define REC_VERSION    "03"                  /* 02: before repeats; 01: before source alignments and working sets */
#define REC_EXACT      1024                  /* sizes 0..1023 counted one by one */
#define REC_PER_OCTAVE 8                     /* above: 8 buckets per power of two */
#define REC_LOG        ((64 - 10) * REC_PER_OCTAVE)
#define REC_SLOTS      64                    /* threads per file */
#define REC_HEADER     4096
#define REC_CMDLINE_AT 128                   /* version 01: 64 */

/* The working-set estimate (see the top of this file).  A window of 32768
 * draws, half the bitmap's bits: linear counting stays precise (at most
 * half the bits set; its noise, ~100 lines, is what reuse must exceed), and
 * a full window tells a region of up to ~1M lines (~70 MiB per side) from
 * no reuse at all; a window of K draws, ~K^2/1000 lines (reuse counts
 * beyond 5 standard deviations of the counting's noise: recording.py). */
#define REC_WS_LOG_BITS 16
#define REC_WS_BITS     (1u << REC_WS_LOG_BITS)
#define REC_WS_WINDOW   (REC_WS_BITS / 2)
#define REC_WS_EXACT    128                  /* windows with fewer bits set: one bucket each */
#define REC_WS_STEP     128                  /* above: buckets this wide */
#define REC_WS_BUCKETS  (REC_WS_EXACT + REC_WS_WINDOW / REC_WS_STEP)
#define REC_SAMPLE_SPAN 512                  /* calls from a sample to the next: 1..512, 256.5 on average */
/* Call sites remembered per function and thread.  A branch predictor learns
 * the sizes a call site repeats, which a replay drawing every size afresh
 * would not let it; two sites sharing an entry count fewer repeats, not
 * more. */
#define REC_SITES_LOG   8
#define REC_SITES       (1u << REC_SITES_LOG)

typedef struct {
    uint64_t windows[REC_WS_BUCKETS];      /* closed windows, by their bits set (bucketed) */
    uint64_t windows_set[REC_WS_BUCKETS];  /* their bits set, summed: each bucket's mean */
    uint64_t inserted;                     /* the open window's draws */
    uint64_t set;                          /* the open window's bits set */
    uint64_t half;                         /* version 03: its bits set when its draws were last
                                              a power of two below the window's */
    uint64_t reserved[5];
    uint64_t bits[REC_WS_BITS / 64];       /* the open window's lines, hashed */
    /* version 03: the closed windows' bits set at half their draws, summed
     * per bucket.  One region of P lines fills a window's halves as
     * P (1 - e^(-k/P)) does, so its second half finds fewer new lines than
     * its first; calls that mostly reuse a few lines and now and then
     * touch a line never seen find as many in both: recording.py tells the
     * two apart by them (a share of the calls from beyond the caches). */
    uint64_t windows_half[REC_WS_BUCKETS];
} rec_ws;

enum { REC_DST, REC_SRC, REC_SIDES };

typedef struct {
    /* version 01's histogram, unchanged (src_align was reserved, zero) */
    uint64_t size[REC_EXACT + REC_LOG];  /* calls per size (bucket) */
    uint64_t log_sum[REC_LOG];           /* bytes per log bucket: its mean size */
    uint64_t align[8];                   /* [k]: destination aligned to 2^k, k = 6: 64 or more */
    uint64_t overlap;                    /* copies whose source and destination overlap */
    uint64_t src_align[7];               /* copies: [k]: source aligned to 2^k, as align */
    /* version 02 */
    rec_ws ws[REC_SIDES];                /* memset: the destination's only */
    /* version 03 */
    uint64_t repeats;                    /* calls of the size their call site's previous call had */
    uint32_t site_size[REC_SITES];       /* each call site's last size (by its return address, hashed) */
} rec_hist;

enum { REC_MEMSET, REC_MEMCPY, REC_MEMMOVE, REC_OPS };

typedef struct {
    rec_hist op[REC_OPS];
} rec_slot;

#define REC_SLOT_BYTES ((sizeof(rec_slot) + 4095) & ~(size_t)4095)

typedef struct {
    char magic[8];           /* "MKREC" REC_VERSION "\n": the version */
    uint32_t header_bytes;   /* where slot 0 starts */
    uint32_t slot_bytes;     /* distance between slots */
    uint32_t slots;          /* capacity */
    uint32_t used;           /* slots claimed */
    uint32_t pid;
    uint32_t first;          /* 1 in the first file of each process image */
    uint32_t exact, per_octave, log_buckets, ops;
    uint32_t cmdline_bytes;  /* /proc/self/cmdline, NUL-separated, from REC_CMDLINE_AT */
    /* version 02 */
    uint32_t hist_bytes;     /* from one function's rec_hist to the next */
    uint32_t ws_at;          /* rec_hist.ws, from the start of its rec_hist */
    uint32_t ws_bytes;       /* from one side's rec_ws to the next */
    uint32_t ws_buckets, ws_window, ws_bits;
    /* version 03 */
    uint32_t repeats_at;     /* rec_hist.repeats, from the start of its rec_hist */
    uint32_t ws_half_at;     /* rec_ws.windows_half, from the start of its rec_ws (rec_ws.half:
                                the word after its bits set) */
} rec_header;

_Static_assert(sizeof(rec_header) <= REC_CMDLINE_AT, "the command line follows the header");

/* ---- raw system calls ---- */

static long sys6(long nr, long a, long b, long c, long d, long e, long f)
{
    long ret;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    __asm__ volatile("syscall" : "=a"(ret)
                     : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}
#define sys3(nr, a, b, c) sys6(nr, (long)(a), (long)(b), (long)(c), 0, 0, 0)

/* ---- process-wide state ---- */

typedef struct {
    int live;          /* 0 in a new image and, wiped, in a forked child */
    int lock;
    int failed;        /* the files could not be made: count into `lost` */
    unsigned parts;    /* files this process made */
    rec_header *file;  /* the file whose slots are being handed out */
} rec_state;

static int rec_once MK_FIRST_CALL_DATA;
static int rec_on MK_FIRST_CALL_DATA;
static char rec_dir[3072];
static rec_state *state;
static rec_slot lost;   /* slot of last resort; its counts are never read */
/* A thread's own: its slot and the sampling beside it, on the line the
 * wrappers read anyway. */
typedef struct {
    rec_slot *slot;
    int64_t countdown;   /* calls before the next sample; below 0: sample this one */
    uint64_t rng;        /* xorshift64 state; 0 before the thread's first sample */
    int claiming;
} rec_thread;
static __thread rec_thread tls __attribute__((tls_model("initial-exec")));

static mk_rec_set_fn set_target;
static mk_rec_copy_fn memcpy_target, memmove_target;

static void rec_init(void)
{
    mk_config_early();   /* the environment is read under the configuration's once */
    if (!mk_raw_getenv("MEMKIT_RECORD", rec_dir, sizeof rec_dir) || !rec_dir[0])
        return;
    long p = sys6(SYS_mmap, 0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p < 0 && p > -4096) {
        mk_raw_write_stderr("memkit: recording off: no memory for its state\n");
        return;
    }
    if (sys3(SYS_madvise, p, 4096, MADV_WIPEONFORK) != 0)
        mk_raw_write_stderr("memkit: this kernel lacks MADV_WIPEONFORK: forked children's "
                            "calls are counted in their parent's file, approximately\n");
    state = (rec_state *)p;
    rec_on = 1;
}

static int recording(void)
{
    mk_once(&rec_once, rec_init);
    return rec_on;
}

static char *put_str(char *p, char *end, const char *s)
{
    while (*s && p < end)
        *p++ = *s++;
    return p;
}

static char *put_uint(char *p, char *end, unsigned long v)
{
    char digits[24];
    int n = 0;
    do
        digits[n++] = (char)('0' + v % 10);
    while ((v /= 10) && n < 24);
    while (n > 0 && p < end)
        *p++ = digits[--n];
    return p;
}

/* A new file DIR/<pid>.<k>.mkrec (the first free k), sized and mapped. */
static rec_header *new_part(int first)
{
    long pid = sys3(SYS_getpid, 0, 0, 0);
    size_t bytes = REC_HEADER + REC_SLOTS * REC_SLOT_BYTES;
    for (unsigned long k = 0; k < 4096; k++) {
        char path[sizeof rec_dir + 64], *end = path + sizeof path - 1;
        char *p = put_str(path, end, rec_dir);
        p = put_str(p, end, "/");
        p = put_uint(p, end, (unsigned long)pid);
        p = put_str(p, end, ".");
        p = put_uint(p, end, k);
        p = put_str(p, end, ".mkrec");
        *p = '\0';
        long fd = sys3(SYS_open, path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd == -17 /* EEXIST: an earlier image of this pid */)
            continue;
        if (fd < 0)
            return 0;
        long m = -1;
        if (sys3(SYS_ftruncate, fd, bytes, 0) == 0)
            m = sys6(SYS_mmap, 0, (long)bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        sys3(SYS_close, fd, 0, 0);
        if (m < 0 && m > -4096)
            return 0;
        rec_header *h = (rec_header *)m;
        const char magic[8] = "MKREC" REC_VERSION "\n";
        for (int i = 0; i < 8; i++)
            h->magic[i] = magic[i];
        h->header_bytes = REC_HEADER;
        h->slot_bytes = (uint32_t)REC_SLOT_BYTES;
        h->slots = REC_SLOTS;
        h->pid = (uint32_t)pid;
        h->first = (uint32_t)first;
        h->exact = REC_EXACT;
        h->per_octave = REC_PER_OCTAVE;
        h->log_buckets = REC_LOG;
        h->ops = REC_OPS;
        h->hist_bytes = (uint32_t)sizeof(rec_hist);
        h->ws_at = (uint32_t)offsetof(rec_hist, ws);
        h->ws_bytes = (uint32_t)sizeof(rec_ws);
        h->ws_buckets = REC_WS_BUCKETS;
        h->ws_window = REC_WS_WINDOW;
        h->ws_bits = REC_WS_BITS;
        h->repeats_at = (uint32_t)offsetof(rec_hist, repeats);
        h->ws_half_at = (uint32_t)offsetof(rec_ws, windows_half);
        long got = mk_raw_read_file("/proc/self/cmdline", (char *)h + REC_CMDLINE_AT,
                                    REC_HEADER - REC_CMDLINE_AT);
        h->cmdline_bytes = got > 0 ? (uint32_t)got : 0;
        return h;
    }
    return 0;
}

/* A thread's first counted call, or the first after a fork: its slot.  A
 * signal handler's call made while this thread is in here counts into the
 * discarded slot instead of waiting for the lock its own thread holds. */
__attribute__((noinline, cold)) static rec_slot *claim(void)
{
    if (tls.claiming)
        return &lost;
    tls.claiming = 1;
    rec_state *st = state;
    while (__atomic_exchange_n(&st->lock, 1, __ATOMIC_ACQUIRE))
        __builtin_ia32_pause();
    if (!st->live) {   /* a new image, or the child of a fork: files of its own */
        st->file = 0;
        st->parts = 0;
        st->failed = 0;
        st->live = 1;
    }
    if (!st->failed && (!st->file || st->file->used == st->file->slots)) {
        st->file = new_part(st->parts == 0);
        if (st->file) {
            st->parts++;
        } else {
            st->failed = 1;
            mk_raw_write_stderr("memkit: cannot write recording files into MEMKIT_RECORD=");
            mk_raw_write_stderr(rec_dir);
            mk_raw_write_stderr("; this process's calls are not recorded\n");
        }
    }
    rec_slot *s = &lost;
    if (!st->failed) {
        rec_header *h = st->file;
        s = (rec_slot *)((char *)h + h->header_bytes + (size_t)h->used * h->slot_bytes);
        __atomic_store_n(&h->used, h->used + 1, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&st->lock, 0, __ATOMIC_RELEASE);
    tls.slot = s;
    tls.claiming = 0;
    return s;
}

/* ---- the counting wrappers ---- */

/* The shim jumps to the wrappers (preload.c), so their return address is
 * the program's call site. */
#define CALL_SITE ((uintptr_t)__builtin_return_address(0))

/* k of "aligned to 2^k", 0..6 (64 or more) */
static inline __attribute__((always_inline)) unsigned long align_log(const void *p)
{
    return (unsigned long)__builtin_ctzll((uintptr_t)p | 64);
}

/* site: the caller's return address */
static inline __attribute__((always_inline)) void count(rec_hist *h, const void *dst, size_t n,
                                                        uintptr_t site)
{
    uint32_t *last = &h->site_size[(site * 0x9e3779b97f4a7c15ull) >> (64 - REC_SITES_LOG)];
    uint32_t n32 = n < UINT32_MAX ? (uint32_t)n : UINT32_MAX;
    h->repeats += *last == n32;
    *last = n32;
    if (MK_LIKELY(n < REC_EXACT)) {
        h->size[n]++;
    } else {
        unsigned long e = 63u - (unsigned long)__builtin_clzll(n);   /* >= 10 */
        size_t b = (e - 10) * REC_PER_OCTAVE + ((n >> (e - 3)) & (REC_PER_OCTAVE - 1));
        h->size[REC_EXACT + b]++;
        h->log_sum[b] += n;
    }
    h->align[align_log(dst)]++;
}

static inline __attribute__((always_inline)) void count_copy(rec_hist *h, void *dst,
                                                             const void *src, size_t n,
                                                             uintptr_t site)
{
    count(h, dst, n, site);
    h->src_align[align_log(src)]++;
    uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
    h->overlap += (d > s ? d - s : s - d) < n;
}

/* One draw into a side's window (see the top of the file): the line's bit,
 * and at REC_WS_WINDOW draws the window closes into the histogram.  The
 * counters are reset before the bits, so a program killed in between
 * leaves an empty open window, not a wrong one. */
static void ws_draw(rec_ws *w, uintptr_t addr)
{
    /* A mixing hash (MurmurHash3's finaliser), random-like, as linear
     * counting assumes: Fibonacci hashing alone spreads a run of lines too
     * evenly, fewer collisions than counted on, more lines than there are. */
    uint64_t x = addr >> 6;
    x = (x ^ (x >> 33)) * 0xff51afd7ed558ccdull;
    x = (x ^ (x >> 33)) * 0xc4ceb9fe1a85ec53ull;
    uint64_t bit = (x ^ (x >> 33)) >> (64 - REC_WS_LOG_BITS);
    uint64_t *word = &w->bits[bit >> 6], mask = 1ull << (bit & 63);
    w->set += !(*word & mask);
    *word |= mask;
    uint64_t k = ++w->inserted;
    if (k < REC_WS_WINDOW) {
        if (!(k & (k - 1)))   /* a program too short to close a window still has two points */
            w->half = w->set;
        return;
    }
    uint64_t set = w->set;
    size_t b = set < REC_WS_EXACT ? set : REC_WS_EXACT - 1 + set / REC_WS_STEP;
    w->windows[b]++;
    w->windows_set[b] += set;
    w->windows_half[b] += w->half;
    w->inserted = 0;
    w->set = 0;
    w->half = 0;
    for (size_t i = 0; i < REC_WS_BITS / 64; i++)
        w->bits[i] = 0;
}

static uint64_t next_random(uint64_t seed)
{
    uint64_t r = tls.rng ? tls.rng : seed | 1;   /* xorshift64 */
    r ^= r << 13;
    r ^= r >> 7;
    r ^= r << 17;
    return tls.rng = r;
}

/* A sampled call: the next sample's distance, then its draws: lines of
 * each side, each at a random place in the call's bytes (the same on both
 * sides). */
static void sample(rec_slot *s, int op, const void *dst, const void *src, size_t n)
{
    rec_hist *h = &s->op[op];
    tls.countdown = (int64_t)(next_random((uintptr_t)s * 0x9e3779b97f4a7c15ull) % REC_SAMPLE_SPAN);
    if (!n)
        return;   /* touches nothing */
    /* One draw per 2 KiB of the call, at least one, at most 64 (from 128
     * KiB): a large call reused is reuse that one draw in its 4096 lines
     * would rarely show, and a draw (~10 ns a side) costs less than copying
     * its 2 KiB.  One draw in each of as many equal parts of the call:
     * draws of one call never meet each other, which would pass for reuse. */
    size_t draws = n >> 11 < 1 ? 1 : n >> 11 > 64 ? 64 : n >> 11, part = n / draws;
    for (size_t i = 0; i < draws; i++) {
        uint64_t r = next_random(0);
        size_t at = i * part + (size_t)(((unsigned __int128)(r >> 8) * part) >> 56);   /* in part i */
        ws_draw(&h->ws[REC_DST], (uintptr_t)dst + at);
        if (op != REC_MEMSET)
            ws_draw(&h->ws[REC_SRC], (uintptr_t)src + at);
    }
}

/* This thread's slot, or NULL on its first call (or its first after a
 * fork): the wrappers then take their slow path, which claims one. */
static inline __attribute__((always_inline)) rec_slot *my_slot(void)
{
    rec_slot *s = tls.slot;
    return MK_LIKELY(s && state->live) ? s : 0;
}

/* The wrappers' slow path, kept out of their body so that the fast path
 * has no register saves: a thread's first call (it claims its slot; that
 * call is sampled too) and every sampled call.  Counts and samples. */
static inline __attribute__((always_inline)) void count_sampled(int op, void *dst,
                                                                const void *src, size_t n,
                                                                uintptr_t site)
{
    rec_slot *s = my_slot();
    if (!s)
        s = claim();
    if (op == REC_MEMSET)
        count(&s->op[op], dst, n, site);
    else
        count_copy(&s->op[op], dst, src, n, site);
    sample(s, op, dst, src, n);
}

__attribute__((noinline)) static void *rec_memset_slow(void *dst, int c, size_t n, uintptr_t site)
{
    count_sampled(REC_MEMSET, dst, NULL, n, site);
    return set_target(dst, c, n);
}

__attribute__((noinline)) static void *rec_memcpy_slow(void *dst, const void *src, size_t n, uintptr_t site)
{
    count_sampled(REC_MEMCPY, dst, src, n, site);
    return memcpy_target(dst, src, n);
}

__attribute__((noinline)) static void *rec_memmove_slow(void *dst, const void *src, size_t n, uintptr_t site)
{
    count_sampled(REC_MEMMOVE, dst, src, n, site);
    return memmove_target(dst, src, n);
}

/* The fast path's slot: this thread's, when no sample is due; else NULL
 * (the slow path). */
static inline __attribute__((always_inline)) rec_slot *unsampled_slot(void)
{
    rec_slot *s = my_slot();
    return MK_LIKELY(s && --tls.countdown >= 0) ? s : 0;
}

static void *rec_memset(void *dst, int c, size_t n)
{
    rec_slot *s = unsampled_slot();
    if (MK_UNLIKELY(!s))
        return rec_memset_slow(dst, c, n, CALL_SITE);
    count(&s->op[REC_MEMSET], dst, n, CALL_SITE);
    return set_target(dst, c, n);
}

static void *rec_memcpy(void *dst, const void *src, size_t n)
{
    rec_slot *s = unsampled_slot();
    if (MK_UNLIKELY(!s))
        return rec_memcpy_slow(dst, src, n, CALL_SITE);
    count_copy(&s->op[REC_MEMCPY], dst, src, n, CALL_SITE);
    return memcpy_target(dst, src, n);
}

static void *rec_memmove(void *dst, const void *src, size_t n)
{
    rec_slot *s = unsampled_slot();
    if (MK_UNLIKELY(!s))
        return rec_memmove_slow(dst, src, n, CALL_SITE);
    count_copy(&s->op[REC_MEMMOVE], dst, src, n, CALL_SITE);
    return memmove_target(dst, src, n);
}

/* ---- binding (racing first calls store the same values) ---- */

mk_rec_set_fn mk_record_memset(mk_rec_set_fn plain)
{
    if (!recording())
        return plain;
    __atomic_store_n(&set_target, plain, __ATOMIC_RELEASE);
    return rec_memset;
}

mk_rec_copy_fn mk_record_memcpy(mk_rec_copy_fn plain)
{
    if (!recording())
        return plain;
    __atomic_store_n(&memcpy_target, plain, __ATOMIC_RELEASE);
    return rec_memcpy;
}

mk_rec_copy_fn mk_record_memmove(mk_rec_copy_fn plain)
{
    if (!recording())
        return plain;
    __atomic_store_n(&memmove_target, plain, __ATOMIC_RELEASE);
    return rec_memmove;
}
