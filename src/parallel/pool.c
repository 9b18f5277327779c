/* SPDX-License-Identifier: Apache-2.0 */
/* The thread pool: workers created once, asleep on a condition variable
 * while idle (never spinning), woken for a job, which they and the calling
 * thread share by claiming chunk indices with one atomic add.
 *
 * One job at a time per pool: a caller that finds the pool busy does its
 * work alone instead of queueing, because the workers are already using the
 * memory bandwidth a second job would need.  A child of fork() has none of
 * its parent's threads: it never touches an inherited pool's workers, and
 * gets a fresh default pool. */
#include "pool_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

/* DRAM bandwidth is usually saturated by a few streaming cores (this 2-core
 * Zen 4 VM: 2, see the faults experiment's thread scaling); more threads only
 * add wake-ups and contention.  The `threads` tunable overrides it. */
enum { MK_BANDWIDTH_THREADS = 4 };

typedef struct {
    uintptr_t   base;       /* address of offset 0 */
    uintptr_t   first;      /* base rounded down to the chunk */
    size_t      n, chunk, nchunks;
    mk_chunk_fn fn;
    void       *ctx;
    size_t      next;       /* next chunk index to claim (atomic) */
    unsigned    workers_in; /* workers inside the job (under the pool's lock) */
} job;

struct mk_pool {
    pthread_mutex_t lock;       /* job, generation, stopping, workers_in */
    pthread_cond_t  wake;       /* workers: a new generation (or stop) */
    pthread_cond_t  left;       /* the caller: a worker left the job */
    pthread_mutex_t submit;     /* held by the one caller whose job runs */
    job            *job;
    unsigned long   generation;
    int             stopping;
    unsigned        nworkers;
    unsigned long   fork_gen;   /* fork_generation when created */
    pthread_t      *tids;
};

size_t mk_parallel_chunk = (size_t)2 << 20;  /* a huge page: threads never fault the same THP */

static unsigned long fork_generation;        /* bumped in every forked child */
static mk_pool *default_pool;                /* atomic; see mk_pool_default */
static int limit_threads = -1;

void mk_pool_test_limit_threads(int allowed) { __atomic_store_n(&limit_threads, allowed, __ATOMIC_RELAXED); }

static int inherited(const mk_pool *p)
{
    return p->fork_gen != __atomic_load_n(&fork_generation, __ATOMIC_RELAXED);
}

/* ---- the work ---- */

static void run_chunks(job *j)
{
    uintptr_t end = j->base + j->n;
    for (;;) {
        size_t i = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
        if (i >= j->nchunks)
            return;
        uintptr_t lo = j->first + i * j->chunk, hi = lo + j->chunk;
        if (lo < j->base)
            lo = j->base;
        if (hi > end)
            hi = end;
        j->fn(j->ctx, lo - j->base, hi - lo);
    }
}

static void *worker_main(void *arg)
{
    mk_pool *p = arg;
    pthread_mutex_lock(&p->lock);
    unsigned long seen = p->generation;
    for (;;) {
        while (!p->stopping && p->generation == seen)
            pthread_cond_wait(&p->wake, &p->lock);
        if (p->stopping)
            break;
        seen = p->generation;
        job *j = p->job;
        if (!j)
            continue;           /* woke after the job was over */
        j->workers_in++;
        pthread_mutex_unlock(&p->lock);
        run_chunks(j);
        pthread_mutex_lock(&p->lock);
        if (--j->workers_in == 0)
            pthread_cond_signal(&p->left);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

void mk_pool_run(mk_pool *p, uintptr_t base, size_t n, size_t chunk, mk_chunk_fn fn, void *ctx)
{
    if (n == 0)
        return;
    uintptr_t first = base & ~(uintptr_t)(chunk - 1);
    job j = {.base = base, .first = first, .n = n, .chunk = chunk,
             .nchunks = (size_t)((base + n - first + chunk - 1) / chunk), .fn = fn, .ctx = ctx};
    if (j.nchunks < 2 || p->nworkers == 0 || inherited(p) || pthread_mutex_trylock(&p->submit)) {
        run_chunks(&j);
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->job = &j;
    p->generation++;
    if (j.nchunks - 1 >= p->nworkers)
        pthread_cond_broadcast(&p->wake);
    else
        for (size_t k = 1; k < j.nchunks; k++)
            pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->lock);

    run_chunks(&j);

    /* Every chunk is claimed; wait for the workers still finishing theirs
     * (j lives on this stack). */
    pthread_mutex_lock(&p->lock);
    p->job = NULL;
    while (j.workers_in)
        pthread_cond_wait(&p->left, &p->lock);
    pthread_mutex_unlock(&p->lock);
    pthread_mutex_unlock(&p->submit);
}

/* ---- creation and destruction ---- */

static void after_fork_in_child(void);
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static void register_atfork(void) { pthread_atfork(NULL, NULL, after_fork_in_child); }

static unsigned default_threads(void)
{
    unsigned t = mk_config()->threads;
    if (t)
        return t;
    unsigned cpus = mk_usable_cpus();
    return cpus < MK_BANDWIDTH_THREADS ? cpus : MK_BANDWIDTH_THREADS;
}

static int create_worker(mk_pool *p, pthread_t *tid)
{
    int allowed = __atomic_load_n(&limit_threads, __ATOMIC_RELAXED);
    if (allowed >= 0 && p->nworkers >= (unsigned)allowed)
        return EAGAIN;
    return mk_start_background_thread(tid, worker_main, p, "memkit-pool");
}

mk_pool *mk_pool_create(unsigned threads)
{
    pthread_once(&atfork_once, register_atfork);
    if (threads == 0)
        threads = default_threads();
    size_t most = mk_tunable_rows[MK_T_threads].max;   /* no more than the threads tunable allows */
    if (threads > most)
        threads = (unsigned)most;
    mk_pool *p = calloc(1, sizeof *p);
    pthread_t *tids = threads > 1 ? calloc(threads - 1, sizeof *tids) : NULL;
    if (!p || (threads > 1 && !tids)) {
        free(p);
        free(tids);
        return NULL;
    }
    p->tids = tids;
    p->fork_gen = __atomic_load_n(&fork_generation, __ATOMIC_RELAXED);
    pthread_mutex_init(&p->lock, NULL);
    pthread_mutex_init(&p->submit, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->left, NULL);
    /* A worker that cannot be created is simply not there: the pool works
     * with fewer threads, down to the caller alone. */
    while (p->nworkers + 1 < threads && create_worker(p, &p->tids[p->nworkers]) == 0)
        p->nworkers++;
    return p;
}

/* Stops and joins p's workers. */
static void stop_workers(mk_pool *p)
{
    pthread_mutex_lock(&p->lock);
    p->stopping = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (unsigned i = 0; i < p->nworkers; i++)
        pthread_join(p->tids[i], NULL);
}

/* Frees a pool whose workers are stopped, or a parent's pool in a forked
 * child: its workers do not exist here and its locks may be held by threads
 * that never will, so only its memory is freed. */
static void release(mk_pool *p)
{
    if (!inherited(p)) {
        pthread_mutex_destroy(&p->lock);
        pthread_mutex_destroy(&p->submit);
        pthread_cond_destroy(&p->wake);
        pthread_cond_destroy(&p->left);
    }
    free(p->tids);
    free(p);
}

void mk_pool_destroy(mk_pool *p)
{
    if (!p || p == __atomic_load_n(&default_pool, __ATOMIC_ACQUIRE))
        return;   /* the shared pool lives as long as the library */
    if (!inherited(p))
        stop_workers(p);
    release(p);
}

unsigned mk_pool_threads(const mk_pool *p)
{
    if (!p)
        p = mk_pool_default();
    return inherited(p) ? 1 : p->nworkers + 1;
}

/* ---- the shared default pool ---- */

static pthread_mutex_t default_lock = PTHREAD_MUTEX_INITIALIZER;
static mk_pool no_workers = {.lock = PTHREAD_MUTEX_INITIALIZER, .submit = PTHREAD_MUTEX_INITIALIZER,
                             .wake = PTHREAD_COND_INITIALIZER, .left = PTHREAD_COND_INITIALIZER};

static int unloaded;   /* the library's destructor ran (default_lock) */

mk_pool *mk_pool_default(void)
{
    mk_pool *p = __atomic_load_n(&default_pool, __ATOMIC_ACQUIRE);
    if (p)
        return p;
    pthread_mutex_lock(&default_lock);
    p = default_pool;
    if (!p) {
        p = unloaded ? NULL : mk_pool_create(0);
        if (!p) {
            no_workers.fork_gen = __atomic_load_n(&fork_generation, __ATOMIC_RELAXED);
            p = &no_workers;
        }
        __atomic_store_n(&default_pool, p, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&default_lock);
    return p;
}

/* Runs in the child, single-threaded: the parent's default pool stays
 * allocated (its locks may be held by threads that did not come along) and a
 * new one is made on first use. */
static void after_fork_in_child(void)
{
    __atomic_store_n(&fork_generation, fork_generation + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&default_pool, NULL, __ATOMIC_RELAXED);
    pthread_mutex_init(&default_lock, NULL);
}

/* The library is being unloaded (dlclose) or the process is exiting: the
 * default pool's workers would run code about to be unmapped (dlopen, one
 * parallel copy, dlclose crashed 5 times in 6 and leaked a thread per
 * cycle), so they are stopped and joined.  A job in flight is waited for;
 * calls from here on work in the calling thread. */
__attribute__((destructor)) static void stop_default_pool(void)
{
    pthread_mutex_lock(&default_lock);
    unloaded = 1;
    mk_pool *p = default_pool;
    if (p && p != &no_workers) {
        no_workers.fork_gen = __atomic_load_n(&fork_generation, __ATOMIC_RELAXED);
        __atomic_store_n(&default_pool, &no_workers, __ATOMIC_RELEASE);
    } else {
        p = NULL;
    }
    pthread_mutex_unlock(&default_lock);
    if (!p)
        return;
    if (!inherited(p)) {
        pthread_mutex_lock(&p->submit);   /* the job in flight, if any, ends */
        stop_workers(p);
        pthread_mutex_unlock(&p->submit);
    }
    release(p);
}
