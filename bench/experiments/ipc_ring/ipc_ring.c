/* SPDX-License-Identifier: Apache-2.0 */
/* The shared-memory message ring (see ipc_ring.h). */
#include "ipc_ring.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HUGE_BYTES ((size_t)2 << 20)
#define PAGE_BYTES ((size_t)4096)
#define MAGIC 0x6d6b6970u              /* "mkip" */
#define SLEEP_NS 10000000L             /* a sleeper checks its peer this often */
#define DEFAULT_SPIN_NS 20000u         /* about one 64 KiB copy: then sleep */
#define MAX_SLOTS 1024u

typedef struct {
    uint32_t written, read;            /* laps; futex words */
    uint32_t sleeping_on_written, sleeping_on_read;
    uint32_t tag;
    uint64_t size, seq, offset;        /* offset of the data from r->data */
} __attribute__((aligned(64))) slot_ctl;

struct ipc_shared {
    uint32_t magic, slots;
    uint32_t closed;
    uint64_t capacity;
    ipc_tally tally __attribute__((aligned(64)));   /* the consumer's line */
    slot_ctl slot[];
};

static size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

/* Slots are packed by the message's size (small messages share few pages,
 * as in a real topic): never more than the capacity's stride, n <= capacity. */
static size_t stride_for(size_t n)
{
    return round_up(n ? n : 1, n >= HUGE_BYTES ? HUGE_BYTES : PAGE_BYTES);
}

uint64_t ipc_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the memory ---- */

/* A descriptor for `bytes` of shared memory that no other process can find:
 * a memfd, or a shm object unlinked while every signal is blocked, so that
 * not even Ctrl-C between the two calls leaves a name in /dev/shm. */
static int shared_fd(ipc_backing backing, int hugetlb, size_t bytes)
{
    int fd;
    if (backing == IPC_BACKING_MEMFD) {
        fd = memfd_create("memkit-ipc", MFD_CLOEXEC | (hugetlb ? MFD_HUGETLB : 0));
    } else {
        if (hugetlb)
            return -1;   /* /dev/shm is tmpfs, not hugetlbfs */
        static unsigned counter;
        char name[64];
        snprintf(name, sizeof name, "/memkit-ipc-%d-%u", (int)getpid(), counter++);
        sigset_t all, old;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, &old);
        fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0)
            shm_unlink(name);
        sigprocmask(SIG_SETMASK, &old, NULL);
    }
    if (fd >= 0 && ftruncate(fd, (off_t)bytes) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* fd mapped shared at a 2 MiB-aligned address (huge pages need it). */
static unsigned char *map_aligned(int fd, size_t bytes)
{
    unsigned char *res = mmap(NULL, bytes + HUGE_BYTES, PROT_NONE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (res == MAP_FAILED)
        return NULL;
    unsigned char *at = (unsigned char *)round_up((uintptr_t)res, HUGE_BYTES);
    void *p = mmap(at, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
    if (p == MAP_FAILED) {
        munmap(res, bytes + HUGE_BYTES);
        return NULL;
    }
    if (at > res)
        munmap(res, (size_t)(at - res));
    munmap(at + bytes, (size_t)(res + HUGE_BYTES - at));
    return at;
}

/* What the kernel really gave (the advice may have done nothing):
 * KernelPageSize says hugetlb, ShmemPmdMapped/FilePmdMapped say THP. */
static void check_pages(ipc_ring *r)
{
    r->pages = MK_PAGES_NORMAL;
    r->huge_fraction = 0;
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return;
    char line[256];
    int in = 0;
    size_t page_kb = 4, pmd_kb = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            if (in)
                break;
            in = lo == (uintptr_t)r->map;
            continue;
        }
        size_t kb;
        if (in && (sscanf(line, "ShmemPmdMapped: %zu kB", &kb) == 1 ||
                   sscanf(line, "FilePmdMapped: %zu kB", &kb) == 1))
            pmd_kb += kb;
        else if (in && sscanf(line, "KernelPageSize: %zu kB", &kb) == 1)
            page_kb = kb;
    }
    fclose(f);
    if (page_kb >= HUGE_BYTES / 1024) {
        r->pages = MK_PAGES_HUGETLB;
        r->huge_fraction = 1;
    } else if (pmd_kb) {
        r->pages = MK_PAGES_THP;
        r->huge_fraction = (double)pmd_kb * 1024 / (double)r->map_bytes;
    }
}

int ipc_ring_create(ipc_ring *r, unsigned slots, size_t capacity, mk_page_kind want,
                    ipc_backing backing)
{
    memset(r, 0, sizeof *r);
    if (slots < 1 || slots > MAX_SLOTS || capacity < 1 || capacity > ((size_t)1 << 40) / slots)
        return EINVAL;
    size_t stride = stride_for(capacity);
    size_t head = round_up(sizeof(ipc_shared) + slots * sizeof(slot_ctl), HUGE_BYTES);
    size_t bytes = round_up(head + (size_t)slots * stride, HUGE_BYTES);
    int fd = -1, hugetlb = want == MK_PAGES_HUGETLB && backing == IPC_BACKING_MEMFD;
    unsigned char *map = NULL;
    for (; !map && hugetlb >= 0; hugetlb--) {   /* hugetlb first if asked, then normal */
        fd = shared_fd(backing, hugetlb, bytes);
        if (fd < 0)
            continue;
        map = map_aligned(fd, bytes);   /* hugetlb: fails here if the pool is short */
        close(fd);
    }
    if (!map)
        return errno ? errno : ENOMEM;
    r->map = map;
    r->map_bytes = bytes;
    r->hdr = (ipc_shared *)map;
    r->data = map + head;
    r->capacity = capacity;
    r->slots = slots;
    r->backing = backing;
    r->spin_ns = DEFAULT_SPIN_NS;
    if (want != MK_PAGES_NORMAL)
        madvise(r->data, bytes - head, MADV_HUGEPAGE);   /* THP for shmem, where allowed */
    for (size_t i = 0; i < bytes; i += PAGE_BYTES)       /* fault in now, not while timing */
        ((volatile unsigned char *)map)[i] = 0;
    r->hdr->magic = MAGIC;
    r->hdr->slots = slots;
    r->hdr->capacity = capacity;
    check_pages(r);
    return 0;
}

void ipc_ring_destroy(ipc_ring *r)
{
    if (r->map)
        munmap(r->map, r->map_bytes);
    r->map = NULL;
    r->hdr = NULL;
}

const char *ipc_page_kind_name(mk_page_kind k)
{
    return k == MK_PAGES_HUGETLB ? "hugetlb" : k == MK_PAGES_THP ? "thp" : "normal";
}

/* ---- processes ---- */

pid_t ipc_ring_fork(ipc_ring *r)
{
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)   /* the parent died before prctl */
            _exit(1);
        r->peer = parent;
        r->peer_is_child = 0;
    } else if (pid > 0) {
        r->peer = pid;
        r->peer_is_child = 1;
        r->peer_status = -1;
    }
    r->next = 0;
    return pid;
}

static int peer_gone(ipc_ring *r)
{
    if (!r->peer)
        return 0;
    if (!r->peer_is_child)
        return getppid() != r->peer;
    if (r->peer_status != -1)
        return 1;
    int st;
    if (waitpid(r->peer, &st, WNOHANG) == r->peer) {
        r->peer_status = st;
        return 1;
    }
    return 0;
}

int ipc_ring_join(ipc_ring *r)
{
    if (!r->peer_is_child)
        return -1;
    if (r->peer_status == -1) {
        int st;
        while (waitpid(r->peer, &st, 0) < 0 && errno == EINTR)
            ;
        r->peer_status = st;
    }
    return r->peer_status;
}

/* ---- waiting ---- */

static long futex(uint32_t *word, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, word, op, val, ts, NULL, 0);
}

/* The poster's half of the handshake: the new value, then a wake-up if the
 * waiter went to sleep (seq_cst on both sides: either the waiter sees the
 * new value, or the poster sees it sleeping). */
static void post(uint32_t *word, uint32_t value, uint32_t *sleeping)
{
    __atomic_store_n(word, value, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(sleeping, __ATOMIC_SEQ_CST)) {
        __atomic_store_n(sleeping, 0, __ATOMIC_RELAXED);
        futex(word, FUTEX_WAKE, 1, NULL);
    }
}

static ipc_status wait_for(ipc_ring *r, uint32_t *word, uint32_t want, uint32_t *sleeping,
                           int stop_when_closed, uint64_t *waited_ns)
{
    *waited_ns = 0;
    if (__atomic_load_n(word, __ATOMIC_ACQUIRE) == want)
        return IPC_OK;
    uint64_t t0 = ipc_now_ns();
    ipc_status st = IPC_OK;
    for (unsigned i = 1;; i++) {
        if (__atomic_load_n(word, __ATOMIC_ACQUIRE) == want)
            goto done;
        __builtin_ia32_pause();
        if (i % 64 == 0 && ipc_now_ns() - t0 > r->spin_ns)
            break;
    }
    for (;;) {
        __atomic_store_n(sleeping, 1, __ATOMIC_SEQ_CST);
        uint32_t v = __atomic_load_n(word, __ATOMIC_SEQ_CST);
        if (v == want)
            break;
        if (stop_when_closed && __atomic_load_n(&r->hdr->closed, __ATOMIC_ACQUIRE)) {
            if (__atomic_load_n(word, __ATOMIC_ACQUIRE) != want)
                st = IPC_CLOSED;
            break;
        }
        struct timespec ts = {0, SLEEP_NS};
        if (futex(word, FUTEX_WAIT, v, &ts) != 0 && errno == ETIMEDOUT && peer_gone(r)) {
            st = IPC_PEER_GONE;
            break;
        }
    }
    __atomic_store_n(sleeping, 0, __ATOMIC_RELAXED);
done:
    *waited_ns = ipc_now_ns() - t0;
    return st;
}

/* ---- producer ---- */

ipc_status ipc_ring_claim(ipc_ring *r, ipc_message *m, size_t n, uint64_t *waited_ns)
{
    if (n > r->capacity)
        return IPC_TOO_BIG;
    unsigned s = (unsigned)(r->next % r->slots);
    slot_ctl *c = &r->hdr->slot[s];
    *waited_ns = 0;
    /* Slots of another size overlap the messages still in the others: let
     * the consumer finish those first. */
    size_t stride = stride_for(n);
    if (stride != r->stride && r->next > 0) {
        uint64_t t0 = ipc_now_ns();
        ipc_status st = ipc_ring_drain(r, NULL);
        *waited_ns += ipc_now_ns() - t0;
        if (st != IPC_OK)
            return st;
    }
    r->stride = stride;
    size_t off = s * stride;
    uint32_t lap = (uint32_t)(r->next / r->slots);
    uint64_t w;
    ipc_status st = wait_for(r, &c->read, lap, &c->sleeping_on_read, 0, &w);
    *waited_ns += w;
    if (st != IPC_OK)
        return st;
    c->offset = off;
    *m = (ipc_message){.size = n, .seq = r->next, .data = r->data + off};
    return IPC_OK;
}

void ipc_ring_publish(ipc_ring *r, ipc_message *m, uint32_t tag)
{
    slot_ctl *c = &r->hdr->slot[m->seq % r->slots];
    c->size = m->size;
    c->seq = m->seq;
    c->tag = tag;
    m->tag = tag;
    post(&c->written, (uint32_t)(m->seq / r->slots) + 1, &c->sleeping_on_written);
    r->next = m->seq + 1;
}

ipc_status ipc_ring_drain(ipc_ring *r, ipc_tally *t)
{
    /* The last `slots` messages are the only ones that can be unread. */
    uint64_t first = r->next > r->slots ? r->next - r->slots : 0;
    for (uint64_t m = first; m < r->next; m++) {
        slot_ctl *c = &r->hdr->slot[m % r->slots];
        uint64_t w;
        ipc_status st = wait_for(r, &c->read, (uint32_t)(m / r->slots) + 1,
                                 &c->sleeping_on_read, 0, &w);
        if (st != IPC_OK)
            return st;
    }
    if (t)
        *t = ipc_ring_tally(r);
    return IPC_OK;
}

void ipc_ring_close(ipc_ring *r)
{
    __atomic_store_n(&r->hdr->closed, 1, __ATOMIC_SEQ_CST);
    for (unsigned s = 0; s < r->slots; s++)
        if (__atomic_load_n(&r->hdr->slot[s].sleeping_on_written, __ATOMIC_SEQ_CST))
            futex(&r->hdr->slot[s].written, FUTEX_WAKE, 1, NULL);
}

/* ---- consumer ---- */

ipc_status ipc_ring_receive(ipc_ring *r, ipc_message *m)
{
    slot_ctl *c = &r->hdr->slot[r->next % r->slots];
    uint64_t w;
    ipc_status st = wait_for(r, &c->written, (uint32_t)(r->next / r->slots) + 1,
                             &c->sleeping_on_written, 1, &w);
    r->hdr->tally.wait_ns += w;
    if (st != IPC_OK)
        return st;
    *m = (ipc_message){.size = c->size, .tag = c->tag, .seq = c->seq, .data = r->data + c->offset};
    return IPC_OK;
}

void ipc_ring_release(ipc_ring *r, const ipc_message *m, uint64_t busy_ns, int bad)
{
    ipc_tally *t = &r->hdr->tally;
    t->messages++;
    t->busy_ns += busy_ns;
    t->bad += bad != 0;
    slot_ctl *c = &r->hdr->slot[m->seq % r->slots];
    post(&c->read, (uint32_t)(m->seq / r->slots) + 1, &c->sleeping_on_read);
    r->next = m->seq + 1;
}

ipc_tally ipc_ring_tally(const ipc_ring *r)
{
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return r->hdr->tally;
}

/* ---- message contents ---- */

static uint64_t pattern_word(uint64_t seq, uint64_t i)
{
    uint64_t x = (seq + 1) * 0x9E3779B97F4A7C15ull ^ (i + 1) * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 31;
    return x * 0x94D049BB133111EBull;
}

void ipc_pattern_fill(void *p, size_t n, uint64_t seq)
{
    unsigned char *b = p;
    size_t words = n / 8;
    for (size_t i = 0; i < words; i++) {
        uint64_t w = pattern_word(seq, i);
        memcpy(b + 8 * i, &w, 8);
    }
    uint64_t tail = pattern_word(seq, words);
    for (size_t j = 8 * words; j < n; j++)
        b[j] = (unsigned char)(tail >> (8 * (j % 8)));
}

size_t ipc_pattern_errors(const void *p, size_t n, uint64_t seq)
{
    const unsigned char *b = p;
    size_t words = n / 8, bad = 0;
    for (size_t i = 0; i < words; i++) {
        uint64_t w;
        memcpy(&w, b + 8 * i, 8);
        bad += w != pattern_word(seq, i);
    }
    uint64_t tail = pattern_word(seq, words);
    for (size_t j = 8 * words; j < n; j++)
        bad += b[j] != (unsigned char)(tail >> (8 * (j % 8)));
    return bad;
}

void ipc_stamp(void *p, size_t n, uint64_t seq)
{
    if (n < 16)
        return;
    memcpy(p, &seq, 8);
    memcpy((unsigned char *)p + n - 8, &seq, 8);
}

int ipc_stamp_ok(const void *p, size_t n, uint64_t seq)
{
    if (n < 16)
        return 1;
    uint64_t a, b;
    memcpy(&a, p, 8);
    memcpy(&b, (const unsigned char *)p + n - 8, 8);
    return a == seq && b == seq;
}
