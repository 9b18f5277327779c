/* Recording for `memkit record`: with MEMKIT_RECORD=DIR in the environment
 * the shim binds memset, memcpy and memmove to wrappers that count each
 * call's size, destination alignment and (copies) overlap, then jump to the
 * routine they would have called anyway.  Without it nothing here runs.
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
 * Like the rest of the shim: raw system calls only, no allocation, no call
 * back into memset/memcpy (the wrappers are those functions). */
#include "record.h"

#include "internal.h"
#include "once.h"

#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>

/* ---- the file layout (python/memkit/recording.py reads it) ---- */

#define REC_EXACT      1024                  /* sizes 0..1023 counted one by one */
#define REC_PER_OCTAVE 8                     /* above: 8 buckets per power of two */
#define REC_LOG        ((64 - 10) * REC_PER_OCTAVE)
#define REC_SLOTS      64                    /* threads per file */
#define REC_HEADER     4096

typedef struct {
    uint64_t size[REC_EXACT + REC_LOG];  /* calls per size (bucket) */
    uint64_t log_sum[REC_LOG];           /* bytes per log bucket: its mean size */
    uint64_t align[8];                   /* [k]: destination aligned to 2^k, k = 6: 64 or more */
    uint64_t overlap;                    /* copies whose source and destination overlap */
    uint64_t reserved[7];
} rec_hist;

enum { REC_MEMSET, REC_MEMCPY, REC_MEMMOVE, REC_OPS };

typedef struct {
    rec_hist op[REC_OPS];
} rec_slot;

#define REC_SLOT_BYTES ((sizeof(rec_slot) + 4095) & ~(size_t)4095)

typedef struct {
    char magic[8];           /* "MKREC01\n" */
    uint32_t header_bytes;   /* where slot 0 starts */
    uint32_t slot_bytes;     /* distance between slots */
    uint32_t slots;          /* capacity */
    uint32_t used;           /* slots claimed */
    uint32_t pid;
    uint32_t first;          /* 1 in the first file of each process image */
    uint32_t exact, per_octave, log_buckets, ops;
    uint32_t cmdline_bytes;  /* /proc/self/cmdline, NUL-separated, from byte 64 */
} rec_header;

#define REC_CMDLINE_AT 64

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

static int rec_once;
static int rec_on;
static char rec_dir[3072];
static rec_state *state;
static rec_slot lost;   /* slot of last resort; its counts are never read */
static __thread rec_slot *tls_slot __attribute__((tls_model("initial-exec")));
static __thread int tls_claiming __attribute__((tls_model("initial-exec")));

static mk_rec_set_fn set_target;
static mk_rec_copy_fn memcpy_target, memmove_target;

static void rec_init(void)
{
    mk_config();   /* the environment is read under the configuration's once */
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
        const char magic[8] = "MKREC01\n";
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
    if (tls_claiming)
        return &lost;
    tls_claiming = 1;
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
    tls_slot = s;
    tls_claiming = 0;
    return s;
}

/* ---- the counting wrappers ---- */

static inline __attribute__((always_inline)) void count(rec_hist *h, const void *dst, size_t n)
{
    if (MK_LIKELY(n < REC_EXACT)) {
        h->size[n]++;
    } else {
        unsigned long e = 63u - (unsigned long)__builtin_clzll(n);   /* >= 10 */
        size_t b = (e - 10) * REC_PER_OCTAVE + ((n >> (e - 3)) & (REC_PER_OCTAVE - 1));
        h->size[REC_EXACT + b]++;
        h->log_sum[b] += n;
    }
    h->align[(unsigned long)__builtin_ctzll((uintptr_t)dst | 64)]++;
}

static inline __attribute__((always_inline)) void count_copy(rec_hist *h, void *dst,
                                                             const void *src, size_t n)
{
    count(h, dst, n);
    uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
    h->overlap += (d > s ? d - s : s - d) < n;
}

/* This thread's slot, or NULL on its first call (or its first after a
 * fork): the wrappers then take their cold path, which claims one; keeping
 * claim() out of their body keeps them free of register saves. */
static inline __attribute__((always_inline)) rec_slot *my_slot(void)
{
    rec_slot *s = tls_slot;
    return MK_LIKELY(s && state->live) ? s : 0;
}

__attribute__((noinline, cold)) static void *rec_memset_first(void *dst, int c, size_t n)
{
    count(&claim()->op[REC_MEMSET], dst, n);
    return set_target(dst, c, n);
}

__attribute__((noinline, cold)) static void *rec_memcpy_first(void *dst, const void *src, size_t n)
{
    count_copy(&claim()->op[REC_MEMCPY], dst, src, n);
    return memcpy_target(dst, src, n);
}

__attribute__((noinline, cold)) static void *rec_memmove_first(void *dst, const void *src, size_t n)
{
    count_copy(&claim()->op[REC_MEMMOVE], dst, src, n);
    return memmove_target(dst, src, n);
}

static void *rec_memset(void *dst, int c, size_t n)
{
    rec_slot *s = my_slot();
    if (MK_UNLIKELY(!s))
        return rec_memset_first(dst, c, n);
    count(&s->op[REC_MEMSET], dst, n);
    return set_target(dst, c, n);
}

static void *rec_memcpy(void *dst, const void *src, size_t n)
{
    rec_slot *s = my_slot();
    if (MK_UNLIKELY(!s))
        return rec_memcpy_first(dst, src, n);
    count_copy(&s->op[REC_MEMCPY], dst, src, n);
    return memcpy_target(dst, src, n);
}

static void *rec_memmove(void *dst, const void *src, size_t n)
{
    rec_slot *s = my_slot();
    if (MK_UNLIKELY(!s))
        return rec_memmove_first(dst, src, n);
    count_copy(&s->op[REC_MEMMOVE], dst, src, n);
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
