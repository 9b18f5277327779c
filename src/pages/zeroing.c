/* SPDX-License-Identifier: Apache-2.0 */
/* The zeroing service: callers hand back freed blocks and take zeroed ones;
 * background workers zero the returned blocks a grain at a time.
 *
 * The Dawson seed's pathology is 39 threads taking 4 KiB of work at a time
 * from a queue behind a spin lock: the lock's cache line bounces, a preempted
 * holder leaves everyone spinning, and zeroing costs ~25x the CPU it should.
 * The fix is the defaults: few threads awake, big grains, a lock that
 * sleeps.  The other settings stay so the lab can show the difference:
 *
 *   spin    the seed's design: each grain taken from the queue and, once
 *           zero, accounted (and its block moved to the clean list) under a
 *           test-and-test-and-set spin lock; no yield, no futex
 *   mutex   the same bookkeeping under a pthread mutex (waiters sleep)
 *   atomic  grains of the current block claimed with one atomic add and
 *           accounted with another; the mutex only when a block is used up
 *           or done
 *
 * At most `awake` workers zero at once; the others sleep on a condition
 * variable, as do idle workers, whatever the lock kind.
 *
 * A forked child has none of its parent's threads: fork() is held off while
 * a service's lists change (pthread_atfork), and in the child every block
 * not yet zeroed is queued again from its start and new workers start on the
 * service's next use. */
#include "../internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

enum { DEFAULT_THREADS = 2, MAX_THREADS = 1024, MAX_DEFAULT_AWAKE = 4 };
#define DEFAULT_GRAIN ((size_t)1 << 20)

typedef struct block {
    struct block  *next;      /* dirty FIFO, clean list or free records (queue lock) */
    struct block  *all_next;  /* every record, freed at destroy */
    unsigned char *ptr;
    size_t         n;
    size_t         cursor;    /* next offset to claim (atomic kind: atomic) */
    size_t         done;      /* bytes zeroed (atomic) */
    unsigned       claimers;  /* atomic kind: workers holding it outside the lock */
    int            queued;    /* still has grains to claim (queue lock) */
    int            state;     /* REC_* (queue lock) */
} block;

enum { REC_FREE, REC_DIRTY, REC_CLEAN };

struct mk_zeroing {
    mk_zeroing_config cfg;

    /* the work queue */
    int             spin;                 /* MK_LOCK_SPIN */
    pthread_mutex_t qmutex;               /* MK_LOCK_MUTEX, MK_LOCK_ATOMIC */
    block          *dirty_head, *dirty_tail;
    block          *current;              /* atomic kind: claimed without the lock */
    block          *clean, *free_records, *all;

    /* sleeping and draining */
    pthread_mutex_t idle;
    pthread_cond_t  wake, drained;
    size_t          pending;              /* blocks with grains to claim (atomic) */
    size_t          outstanding;          /* blocks put, not yet zeroed (atomic) */
    unsigned        sleepers;             /* workers waiting on wake (idle lock) */
    unsigned        awake, peak_awake;    /* workers zeroing now, at most (idle lock) */
    int             stopping;             /* atomic */

    uint64_t        bytes_zeroed, blocks_zeroed;   /* atomic */
    unsigned        nworkers;             /* atomic */
    pthread_t      *tids;

    int             restart;              /* a forked child's: start workers (atomic) */
    mk_zeroing     *live_prev, *live_next;   /* every service (live_lock) */
};

/* ---- the queue lock ---- */

static void qlock(mk_zeroing *z)
{
    if (z->cfg.lock != MK_LOCK_SPIN) {
        pthread_mutex_lock(&z->qmutex);
        return;
    }
    while (__atomic_exchange_n(&z->spin, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(&z->spin, __ATOMIC_RELAXED))
            __builtin_ia32_pause();
}

static void qunlock(mk_zeroing *z)
{
    if (z->cfg.lock != MK_LOCK_SPIN)
        pthread_mutex_unlock(&z->qmutex);
    else
        __atomic_store_n(&z->spin, 0, __ATOMIC_RELEASE);
}

/* ---- queue operations (queue lock held) ---- */

static block *pop_dirty(mk_zeroing *z)
{
    block *b = z->dirty_head;
    if (b && !(z->dirty_head = b->next))
        z->dirty_tail = NULL;
    return b;
}

/* b has no grains left to claim. */
static void unqueue(mk_zeroing *z, block *b)
{
    if (b->queued) {
        b->queued = 0;
        __atomic_fetch_sub(&z->pending, 1, __ATOMIC_SEQ_CST);
    }
}

/* Atomic kind: b stops being the block claimed from (used up or done). */
static void retire_current(mk_zeroing *z, block *b)
{
    if (__atomic_load_n(&z->current, __ATOMIC_RELAXED) != b)
        return;
    unqueue(z, b);
    __atomic_store_n(&z->current, pop_dirty(z), __ATOMIC_RELEASE);
}

/* ---- claiming a grain ---- */

typedef struct {
    block *b;
    size_t off, len;
} grain;

static int claim_locked(mk_zeroing *z, grain *g)
{
    qlock(z);
    block *b = z->dirty_head;
    if (!b) {
        qunlock(z);
        return 0;
    }
    size_t off = b->cursor, left = b->n - off;
    g->b = b;
    g->off = off;
    g->len = left < z->cfg.grain ? left : z->cfg.grain;
    b->cursor = off + g->len;
    if (b->cursor == b->n) {
        pop_dirty(z);
        unqueue(z, b);
    }
    qunlock(z);
    return 1;
}

/* A record is reused only once no worker holds it (claimers == 0), so a
 * worker that announced itself and then still finds the record current is
 * claiming from the incarnation it thinks it is. */
static int claim_atomic(mk_zeroing *z, grain *g)
{
    for (;;) {
        block *b = __atomic_load_n(&z->current, __ATOMIC_ACQUIRE);
        if (!b) {
            pthread_mutex_lock(&z->qmutex);
            if (!z->current)
                __atomic_store_n(&z->current, pop_dirty(z), __ATOMIC_RELEASE);
            b = z->current;
            pthread_mutex_unlock(&z->qmutex);
            if (!b)
                return 0;
            continue;
        }
        __atomic_fetch_add(&b->claimers, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&z->current, __ATOMIC_SEQ_CST) != b) {
            __atomic_fetch_sub(&b->claimers, 1, __ATOMIC_RELEASE);
            continue;
        }
        size_t off = __atomic_fetch_add(&b->cursor, z->cfg.grain, __ATOMIC_ACQ_REL);
        if (off < b->n) {
            size_t left = b->n - off;
            *g = (grain){b, off, left < z->cfg.grain ? left : z->cfg.grain};
            return 1;   /* claimers dropped once the grain is accounted */
        }
        pthread_mutex_lock(&z->qmutex);
        retire_current(z, b);
        pthread_mutex_unlock(&z->qmutex);
        __atomic_fetch_sub(&b->claimers, 1, __ATOMIC_RELEASE);
    }
}

/* Every grain of b is zero: hand it out (queue lock held). */
static void to_clean_list(mk_zeroing *z, block *b)
{
    b->state = REC_CLEAN;
    b->next = z->clean;
    z->clean = b;
}

/* b is on the clean list: count it, and wake drainers once nothing is left. */
static void block_done(mk_zeroing *z)
{
    __atomic_fetch_add(&z->blocks_zeroed, 1, __ATOMIC_RELAXED);
    if (__atomic_sub_fetch(&z->outstanding, 1, __ATOMIC_ACQ_REL) == 0) {
        pthread_mutex_lock(&z->idle);
        pthread_cond_broadcast(&z->drained);
        pthread_mutex_unlock(&z->idle);
    }
}

/* The grain is zero: account it under the queue lock, as the seed's page
 * lists do for every page (the second trip per grain is part of what 39
 * threads fight over). */
static void finish_locked(mk_zeroing *z, grain g)
{
    block *b = g.b;
    qlock(z);
    __atomic_fetch_add(&z->bytes_zeroed, g.len, __ATOMIC_RELAXED);
    size_t done = __atomic_add_fetch(&b->done, g.len, __ATOMIC_RELAXED);
    int whole = done == b->n;
    if (whole)
        to_clean_list(z, b);
    qunlock(z);
    if (whole)
        block_done(z);
}

/* Atomic kind: account with atomic adds; the lock only for a whole block. */
static void finish_atomic(mk_zeroing *z, grain g)
{
    block *b = g.b;
    size_t n = b->n;   /* read before our grain counts: after, b may be reused */
    __atomic_fetch_add(&z->bytes_zeroed, g.len, __ATOMIC_RELAXED);
    if (__atomic_add_fetch(&b->done, g.len, __ATOMIC_ACQ_REL) == n) {
        qlock(z);
        retire_current(z, b);
        to_clean_list(z, b);
        qunlock(z);
        block_done(z);
    }
    __atomic_fetch_sub(&b->claimers, 1, __ATOMIC_RELEASE);
}

/* Sleeps until there is work and fewer than `awake` workers zero it, then
 * counts this one in.  Returns 0 once the service stops. */
static int wait_for_work(mk_zeroing *z)
{
    pthread_mutex_lock(&z->idle);
    while (!z->stopping && (__atomic_load_n(&z->pending, __ATOMIC_SEQ_CST) == 0 ||
                            z->awake >= z->cfg.awake)) {
        z->sleepers++;
        pthread_cond_wait(&z->wake, &z->idle);
        z->sleepers--;
    }
    int go = !z->stopping;
    if (go && ++z->awake > z->peak_awake)
        z->peak_awake = z->awake;
    pthread_mutex_unlock(&z->idle);
    return go;
}

static void *worker_main(void *arg)
{
    mk_zeroing *z = arg;
    int atomic = z->cfg.lock == MK_LOCK_ATOMIC;
    while (wait_for_work(z)) {
        grain g;
        while (!__atomic_load_n(&z->stopping, __ATOMIC_ACQUIRE) &&
               (atomic ? claim_atomic(z, &g) : claim_locked(z, &g))) {
            mk_memset(g.b->ptr + g.off, 0, g.len);
            if (atomic)
                finish_atomic(z, g);
            else
                finish_locked(z, g);
        }
        /* Back in wait_for_work, pending is looked at again under the idle
         * lock: a block put while this worker still counted as awake (so
         * nobody was woken for it) is not left behind. */
        pthread_mutex_lock(&z->idle);
        z->awake--;
        pthread_mutex_unlock(&z->idle);
    }
    return NULL;
}

/* ---- workers, and fork ---- */

static void start_workers(mk_zeroing *z)
{
    unsigned n = 0;
    while (n < z->cfg.threads &&
           mk_start_background_thread(&z->tids[n], worker_main, z, "memkit-zero") == 0)
        n++;
    __atomic_store_n(&z->nworkers, n, __ATOMIC_RELEASE);
}

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static mk_zeroing *live;   /* every service not destroyed (live_lock) */

static void live_remove(mk_zeroing *z)
{
    pthread_mutex_lock(&live_lock);
    if (z->live_prev)
        z->live_prev->live_next = z->live_next;
    else
        live = z->live_next;
    if (z->live_next)
        z->live_next->live_prev = z->live_prev;
    pthread_mutex_unlock(&live_lock);
}

/* fork() waits until no service's lists are half changed. */
static void before_fork(void)
{
    pthread_mutex_lock(&live_lock);
    for (mk_zeroing *z = live; z; z = z->live_next) {
        pthread_mutex_lock(&z->idle);
        qlock(z);
    }
}

static void after_fork_in_parent(void)
{
    for (mk_zeroing *z = live; z; z = z->live_next) {
        qunlock(z);
        pthread_mutex_unlock(&z->idle);
    }
    pthread_mutex_unlock(&live_lock);
}

/* In the child, single-threaded: the locks afresh, and every block not yet
 * zero queued again from its start (grains the parent's workers were zeroing
 * are zeroed again); workers start on the next use (resume_after_fork). */
static void after_fork_in_child(void)
{
    pthread_mutex_init(&live_lock, NULL);
    for (mk_zeroing *z = live; z; z = z->live_next) {
        pthread_mutex_init(&z->qmutex, NULL);
        pthread_mutex_init(&z->idle, NULL);
        pthread_cond_init(&z->wake, NULL);
        pthread_cond_init(&z->drained, NULL);
        z->spin = 0;
        z->dirty_head = z->dirty_tail = z->current = NULL;
        size_t dirty = 0;
        for (block *b = z->all; b; b = b->all_next) {
            b->claimers = 0;
            if (b->state != REC_DIRTY)
                continue;
            b->cursor = b->done = 0;
            b->queued = 1;
            b->next = NULL;
            if (z->dirty_tail)
                z->dirty_tail->next = b;
            else
                z->dirty_head = b;
            z->dirty_tail = b;
            dirty++;
        }
        z->pending = z->outstanding = dirty;
        z->sleepers = z->awake = 0;
        z->nworkers = 0;
        z->restart = 1;
    }
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static void register_atfork(void) { pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child); }

static void live_add(mk_zeroing *z)
{
    pthread_once(&atfork_once, register_atfork);
    pthread_mutex_lock(&live_lock);
    z->live_prev = NULL;
    z->live_next = live;
    if (live)
        live->live_prev = z;
    live = z;
    pthread_mutex_unlock(&live_lock);
}

/* A forked child's service: its workers start on first use; if none can,
 * the blocks waiting for them are zeroed here. */
static void resume_after_fork(mk_zeroing *z)
{
    if (MK_LIKELY(!__atomic_load_n(&z->restart, __ATOMIC_ACQUIRE)))
        return;
    pthread_mutex_lock(&z->idle);
    if (z->restart) {
        start_workers(z);
        __atomic_store_n(&z->restart, 0, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&z->idle);
    if (__atomic_load_n(&z->nworkers, __ATOMIC_ACQUIRE) > 0) {
        pthread_mutex_lock(&z->idle);
        pthread_cond_broadcast(&z->wake);
        pthread_mutex_unlock(&z->idle);
        return;
    }
    qlock(z);
    block *b;
    size_t done = 0;
    while ((b = pop_dirty(z))) {
        mk_memset(b->ptr, 0, b->n);
        b->cursor = b->done = b->n;
        unqueue(z, b);
        to_clean_list(z, b);
        done++;
    }
    qunlock(z);
    while (done--)
        block_done(z);
}

/* ---- the public side ---- */

mk_zeroing *mk_zeroing_create(const mk_zeroing_config *cfg)
{
    mk_zeroing_config c = cfg ? *cfg : (mk_zeroing_config){0};
    if (c.lock != MK_LOCK_MUTEX && c.lock != MK_LOCK_SPIN && c.lock != MK_LOCK_ATOMIC) {
        errno = EINVAL;
        return NULL;
    }
    if (c.threads == 0)
        c.threads = DEFAULT_THREADS;
    if (c.threads > MAX_THREADS)
        c.threads = MAX_THREADS;
    if (c.grain == 0)
        c.grain = DEFAULT_GRAIN;
    /* One Zen 4 core streams zeroes to DRAM at ~27 GB/s, two reach only
     * ~31 GB/s: the second core costs 75% more CPU per GB for 15% more speed
     * (1 GiB backlog, 1 MiB grains).  So half the CPUs at most, which leaves
     * the rest to the program, and no more than the seed's "2-4 threads". */
    if (c.awake == 0) {
        unsigned half = mk_usable_cpus() / 2;
        c.awake = half < 1 ? 1 : half > MAX_DEFAULT_AWAKE ? MAX_DEFAULT_AWAKE : half;
    }
    if (c.awake > c.threads)
        c.awake = c.threads;
    mk_zeroing *z = calloc(1, sizeof *z);
    pthread_t *tids = calloc(c.threads, sizeof *tids);
    if (!z || !tids) {
        free(z);
        free(tids);
        errno = ENOMEM;
        return NULL;
    }
    z->cfg = c;
    z->tids = tids;
    pthread_mutex_init(&z->qmutex, NULL);
    pthread_mutex_init(&z->idle, NULL);
    pthread_cond_init(&z->wake, NULL);
    pthread_cond_init(&z->drained, NULL);
    start_workers(z);
    live_add(z);
    return z;   /* without workers, mk_zeroing_put zeroes in the caller */
}

void mk_zeroing_destroy(mk_zeroing *z)
{
    if (!z)
        return;
    live_remove(z);
    pthread_mutex_lock(&z->idle);
    __atomic_store_n(&z->stopping, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&z->wake);
    pthread_mutex_unlock(&z->idle);
    for (unsigned i = 0; i < z->nworkers; i++)
        pthread_join(z->tids[i], NULL);
    for (block *b = z->all, *next; b; b = next) {
        next = b->all_next;
        free(b);
    }
    pthread_mutex_destroy(&z->qmutex);
    pthread_mutex_destroy(&z->idle);
    pthread_cond_destroy(&z->wake);
    pthread_cond_destroy(&z->drained);
    free(z->tids);
    free(z);
}

/* A free record no worker still holds, or a new one (queue lock held). */
static block *new_record(mk_zeroing *z)
{
    for (block **pp = &z->free_records; *pp; pp = &(*pp)->next)
        if (__atomic_load_n(&(*pp)->claimers, __ATOMIC_SEQ_CST) == 0) {
            block *b = *pp;
            *pp = b->next;
            return b;
        }
    block *b = calloc(1, sizeof *b);
    if (b) {
        b->all_next = z->all;
        z->all = b;
    }
    return b;
}

/* The block joins the clean list (zeroed already, in the caller) or the
 * dirty queue for the workers.  Under the queue lock. */
static void enqueue(mk_zeroing *z, block *b, void *p, size_t n, int background)
{
    b->ptr = p;
    b->n = n;
    b->next = NULL;
    b->state = background ? REC_DIRTY : REC_CLEAN;
    __atomic_store_n(&b->done, background ? 0 : n, __ATOMIC_RELAXED);
    __atomic_store_n(&b->cursor, background ? 0 : n, __ATOMIC_RELEASE);
    b->queued = background;
    if (!background) {
        b->next = z->clean;
        z->clean = b;
        return;
    }
    __atomic_fetch_add(&z->outstanding, 1, __ATOMIC_RELAXED);   /* before a worker can finish it */
    if (z->dirty_tail)
        z->dirty_tail->next = b;
    else
        z->dirty_head = b;
    z->dirty_tail = b;
    __atomic_fetch_add(&z->pending, 1, __ATOMIC_SEQ_CST);
}

/* Wake no more sleepers than the block has grains or the awake cap
 * allows: a worker woken for nothing costs a context switch and then
 * fights over the queue (the seed's threads all woke together and
 * fought).  Waking them all is one broadcast: N signals under the idle
 * lock let the woken trickle in one at a time. */
static void wake_workers(mk_zeroing *z, size_t n)
{
    size_t grains = (n - 1) / z->cfg.grain + 1;
    pthread_mutex_lock(&z->idle);
    size_t wake = z->cfg.awake - z->awake;   /* awake <= cfg.awake (idle lock) */
    if (wake > grains)
        wake = grains;
    if (wake >= z->sleepers && z->sleepers)
        pthread_cond_broadcast(&z->wake);
    else
        for (size_t k = 0; k < wake; k++)
            pthread_cond_signal(&z->wake);
    pthread_mutex_unlock(&z->idle);
}

void mk_zeroing_put(mk_zeroing *z, void *p, size_t n)
{
    if (!z || !p || n == 0)
        return;
    resume_after_fork(z);
    int background = __atomic_load_n(&z->nworkers, __ATOMIC_ACQUIRE) > 0;
    if (!background) {   /* no worker could be created: zero it here */
        mk_memset(p, 0, n);
        __atomic_fetch_add(&z->bytes_zeroed, n, __ATOMIC_RELAXED);
        __atomic_fetch_add(&z->blocks_zeroed, 1, __ATOMIC_RELAXED);
    }
    qlock(z);
    block *b = new_record(z);
    if (!b) {   /* no memory for a record: zero it now, it cannot be kept */
        qunlock(z);
        if (background)
            mk_memset(p, 0, n);
        return;
    }
    enqueue(z, b, p, n, background);
    qunlock(z);
    if (background)
        wake_workers(z, n);
}

void *mk_zeroing_get(mk_zeroing *z, size_t n, size_t *got)
{
    void *p = NULL;
    size_t size = 0;
    if (z) {
        resume_after_fork(z);
        qlock(z);
        for (block **pp = &z->clean; *pp; pp = &(*pp)->next)
            if ((*pp)->n >= n) {
                block *b = *pp;
                *pp = b->next;
                p = b->ptr;
                size = b->n;
                b->state = REC_FREE;
                b->next = z->free_records;
                z->free_records = b;
                break;
            }
        qunlock(z);
    }
    if (got)
        *got = size;
    return p;
}

void mk_zeroing_drain(mk_zeroing *z)
{
    if (!z)
        return;
    resume_after_fork(z);
    pthread_mutex_lock(&z->idle);
    while (__atomic_load_n(&z->outstanding, __ATOMIC_ACQUIRE))
        pthread_cond_wait(&z->drained, &z->idle);
    pthread_mutex_unlock(&z->idle);
}

void mk_zeroing_get_stats(mk_zeroing *z, mk_zeroing_stats *out)
{
    if (!out)
        return;
    *out = (mk_zeroing_stats){0};
    if (!z)
        return;
    out->bytes_zeroed = __atomic_load_n(&z->bytes_zeroed, __ATOMIC_RELAXED);
    out->blocks_zeroed = __atomic_load_n(&z->blocks_zeroed, __ATOMIC_RELAXED);
    pthread_mutex_lock(&z->idle);
    out->peak_awake = z->peak_awake;
    pthread_mutex_unlock(&z->idle);
    for (unsigned i = 0; i < z->nworkers; i++) {
        clockid_t clock;
        struct timespec ts;
        if (pthread_getcpuclockid(z->tids[i], &clock) == 0 && clock_gettime(clock, &ts) == 0)
            out->worker_cpu_seconds += ts.tv_sec + ts.tv_nsec / 1e9;
    }
}
