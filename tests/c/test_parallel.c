/* SPDX-License-Identifier: Apache-2.0 */
/* The parallel engine: mk_parallel_memcpy / mk_parallel_memset against guard
 * pages and canaries over sizes and alignments (with chunks shrunk to a page
 * so small sizes cross chunk boundaries), the chunk runner's coverage, that
 * workers really take part, several caller threads on one pool, fork(), pool
 * destruction while idle and right after work, and pools whose threads
 * cannot be created. */
#include "check.h"
#include "memkit.h"
#include "parallel/pool_internal.h"

#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_THREAD__)
/* The fork test's child makes a fresh default pool: new threads after a
 * multi-threaded fork, which is what the library must support. */
const char *__tsan_default_options(void) { return "die_after_fork=0"; }
enum { SLOW = 4 };
#elif defined(__SANITIZE_ADDRESS__)
enum { SLOW = 2 };
#else
enum { SLOW = 1 };
#endif

/* ---- copy and fill against guards and canaries ---- */

static unsigned char *source;   /* random bytes, 64 MiB */
enum { SOURCE_BYTES = 64 << 20 };

/* Copies n bytes from source+soff into dst inside g (canaries around) and
 * checks everything; returns 0 after reporting a failure. */
static int check_copy(mk_pool *pool, const guarded *g, unsigned char *dst, size_t n,
                      size_t soff, uint32_t seed)
{
    canary_fill(g->lo, g->len, seed);
    void *ret = mk_parallel_memcpy(pool, dst, source + soff, n);
    if (ret != dst || memcmp(dst, source + soff, n) != 0) {
        CHECK(0, "memcpy n=%zu dst%%64=%zu src%%64=%zu: %s", n, (size_t)dst & 63, soff & 63,
              ret != dst ? "wrong return value" : "bytes differ");
        return 0;
    }
    long before = canary_check(g->lo, (size_t)(dst - g->lo), seed);
    long after = canary_check(dst + n, (size_t)(g->hi - dst - n), seed);
    if (before >= 0 || after >= 0) {
        CHECK(0, "memcpy n=%zu dst%%64=%zu: wrote outside [dst, dst+n)", n, (size_t)dst & 63);
        return 0;
    }
    return 1;
}

static int check_fill(mk_pool *pool, const guarded *g, unsigned char *dst, size_t n, int c,
                      uint32_t seed)
{
    canary_fill(g->lo, g->len, seed);
    void *ret = mk_parallel_memset(pool, dst, c, n);
    for (size_t i = 0; i < n; i++)
        if (dst[i] != (unsigned char)c) {
            CHECK(0, "memset n=%zu dst%%64=%zu c=%d: byte %zu is 0x%02x", n, (size_t)dst & 63,
                  c, i, dst[i]);
            return 0;
        }
    long before = canary_check(g->lo, (size_t)(dst - g->lo), seed);
    long after = canary_check(dst + n, (size_t)(g->hi - dst - n), seed);
    if (ret != dst || before >= 0 || after >= 0) {
        CHECK(0, "memset n=%zu dst%%64=%zu: %s", n, (size_t)dst & 63,
              ret != dst ? "wrong return value" : "wrote outside [dst, dst+n)");
        return 0;
    }
    return 1;
}

/* Sizes up to a few chunks at every destination alignment, at both ends of
 * a guarded region; the source alignment walks along with a different step. */
static void sweep(mk_pool *pool, unsigned astep)
{
    unsigned long failures = check_failed;
    size_t max = 5 * 4096 + 300;
    guarded g = guarded_alloc(max + 128);
    for (size_t n = 0; n <= max && check_failed == failures;
         n += n < 300 ? 1 : (size_t)(37 * SLOW)) {
        for (unsigned a = 0; a < 64; a += astep * SLOW) {
            uint32_t seed = (uint32_t)(n * 64 + a);
            size_t soff = (n * 7 + a * 13) & 63;
            check_copy(pool, &g, place_low(&g, n, a), n, soff, seed);
            check_copy(pool, &g, place_high(&g, n, a), n, soff + 64, seed + 1);
            check_fill(pool, &g, place_low(&g, n, a), n, (int)(n + a) - 100, seed + 2);
            check_fill(pool, &g, place_high(&g, n, a), n, (int)(n ^ a), seed + 3);
        }
    }
    guarded_free(&g);
    printf("sweep 0..%zu x alignments 0..63 step %u, %u threads, %zu-byte chunks: %s\n", max,
           astep * SLOW, mk_pool_threads(pool), mk_parallel_chunk, check_failed == failures ? "ok" : "FAILED");
}

/* Random large sizes with the real chunk size, pool and default pool. */
static void random_large(mk_pool *pool)
{
    uint64_t rng = 0x1234567;
    size_t max = (size_t)(SOURCE_BYTES / 2) / SLOW;
    guarded g = guarded_alloc(max + 128);
    for (int k = 0; k < 8; k++) {
        size_t n = (size_t)(test_rand(&rng) % max);
        unsigned a = (unsigned)(test_rand(&rng) & 63);
        unsigned char *dst = k % 2 ? place_high(&g, n, a) : place_low(&g, n, a);
        mk_pool *p = k % 3 == 2 ? NULL : pool;
        check_copy(p, &g, dst, n, (size_t)(test_rand(&rng) % (SOURCE_BYTES - max)), (uint32_t)k);
        check_fill(p, &g, dst, n, k * 31, (uint32_t)k + 100);
    }
    guarded_free(&g);
}

/* Overlapping copies behave as memmove (mk_memcpy's contract). */
static void overlaps(mk_pool *pool)
{
    size_t n = (size_t)6 << 20;
    unsigned char *buf = malloc(n + 8192), *ref = malloc(n + 8192);
    for (size_t shift = 1; shift <= 4096; shift *= 8)
        for (int dir = 0; dir < 2; dir++) {
            memcpy(buf, source, n + 8192);
            memcpy(ref, source, n + 8192);
            unsigned char *d = dir ? buf + shift : buf, *s = dir ? buf : buf + shift;
            memmove(dir ? ref + shift : ref, dir ? ref : ref + shift, n);
            mk_parallel_memcpy(pool, d, s, n);
            CHECK(memcmp(buf, ref, n + 8192) == 0, "overlapping copy, shift %zu %s", shift,
                  dir ? "forward" : "backward");
        }
    free(buf);
    free(ref);
}

/* ---- the chunk runner ---- */

static void count_piece(void *ctx, size_t off, size_t len)
{
    unsigned char *hits = ctx;
    for (size_t i = off; i < off + len; i++)
        __atomic_fetch_add(&hits[i], 1, __ATOMIC_RELAXED);
}

/* Every byte of [0, n) is handed out exactly once, pieces never cross a
 * chunk boundary of the base address. */
static void coverage(mk_pool *pool)
{
    size_t cap = 70000;
    unsigned char *hits = malloc(cap);
    static const size_t chunks[] = {4096, 8192, 65536};
    for (size_t c = 0; c < 3; c++)
        for (size_t n = 1; n < cap; n = n * 3 + 1)
            for (uintptr_t base = 0; base < 3 * 4096; base += 4096 - 1) {
                memset(hits, 0, n);
                mk_pool_run(pool, base, n, chunks[c], count_piece, hits);
                size_t bad = 0;
                for (size_t i = 0; i < n; i++)
                    bad += hits[i] != 1;
                CHECK(bad == 0, "chunk %zu n=%zu base=%zu: %zu bytes not done exactly once",
                      chunks[c], n, (size_t)base, bad);
            }
    free(hits);
}

/* Whoever takes piece 0 waits until another thread has done a piece: the
 * run finishes only if workers take part. */
typedef struct {
    pthread_t first;
    int       other_done;
} participation;

static void wait_for_other(void *ctx, size_t off, size_t len)
{
    (void)len;
    participation *p = ctx;
    if (off == 0) {
        p->first = pthread_self();
        for (int ms = 0; ms < 5000 && !__atomic_load_n(&p->other_done, __ATOMIC_ACQUIRE); ms++)
            nanosleep(&(struct timespec){0, 1000000}, NULL);
    } else {
        __atomic_store_n(&p->other_done, 1, __ATOMIC_RELEASE);
    }
}

static void workers_take_part(mk_pool *pool)
{
    participation p = {0};
    mk_pool_run(pool, 0, 4 * 4096, 4096, wait_for_other, &p);
    CHECK(p.other_done, "no worker took a piece while the first one waited");
}

/* The public runner: pieces of [base, base + n) within one chunk of the
 * addresses, every byte once, on the pool given and on the default one. */
typedef struct {
    const unsigned char *base;
    unsigned char *hits;
    size_t chunk, crossed;
} piece_log;

static void log_piece(void *ctx, size_t off, size_t len)
{
    piece_log *l = ctx;
    uintptr_t first = (uintptr_t)(l->base + off), last = first + len - 1;
    if (first / l->chunk != last / l->chunk)
        __atomic_fetch_add(&l->crossed, 1, __ATOMIC_RELAXED);
    count_piece(l->hits, off, len);
}

static void parallel_for(mk_pool *pool)
{
    size_t cap = 5 * 4096 + 100;
    unsigned char *region = malloc(cap + 4096), *hits = malloc(cap);
    for (int shared = 0; shared < 2; shared++)
        for (size_t n = 0; n < cap; n = n * 2 + 777)
            for (size_t a = 0; a < 4096; a += 1365) {
                piece_log l = {region + a, hits, mk_parallel_chunk, 0};
                memset(hits, 0, cap);
                mk_parallel_for(shared ? NULL : pool, l.base, n, log_piece, &l);
                size_t bad = 0;
                for (size_t i = 0; i < cap; i++)
                    bad += hits[i] != (i < n);
                CHECK(bad == 0 && l.crossed == 0,
                      "mk_parallel_for n=%zu at +%zu: %zu bytes not done exactly once, %zu pieces "
                      "across a chunk", n, a, bad, l.crossed);
            }
    free(region);
    free(hits);
}

/* Idle workers sleep: a pool of 4 uses next to no CPU while nothing runs. */
static void idle_workers_sleep(void)
{
    mk_pool *p = mk_pool_create(4);
    struct timespec a, b;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    nanosleep(&(struct timespec){0, 200000000}, NULL);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    double cpu_ms = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
    CHECK(cpu_ms < 50, "idle pool used %.1f ms of CPU in 200 ms", cpu_ms);
    mk_pool_destroy(p);
}

/* ---- many callers, fork, destroy, no threads ---- */

typedef struct {
    mk_pool *pool;
    unsigned seed;
    int      failures;
} caller_args;

static void *caller_main(void *arg)
{
    caller_args *c = arg;
    uint64_t rng = c->seed;
    size_t cap = 256 * 1024;
    unsigned char *dst = malloc(cap + 64);
    for (int it = 0; it < 300 / SLOW; it++) {
        size_t n = (size_t)(test_rand(&rng) % cap), a = test_rand(&rng) & 63;
        size_t soff = (size_t)(test_rand(&rng) % (SOURCE_BYTES - cap));
        mk_parallel_memcpy(c->pool, dst + a, source + soff, n);
        if (memcmp(dst + a, source + soff, n) != 0)
            c->failures++;
        int v = (int)(test_rand(&rng) & 0xff);
        mk_parallel_memset(c->pool, dst + a, v, n);
        for (size_t i = 0; i < n; i++)
            if (dst[a + i] != v) {
                c->failures++;
                break;
            }
    }
    free(dst);
    return NULL;
}

static void many_callers(mk_pool *pool)
{
    enum { CALLERS = 4 };
    pthread_t t[CALLERS];
    caller_args args[CALLERS];
    for (unsigned i = 0; i < CALLERS; i++) {
        args[i] = (caller_args){i % 2 ? pool : NULL, 1000 + i, 0};
        pthread_create(&t[i], NULL, caller_main, &args[i]);
    }
    for (unsigned i = 0; i < CALLERS; i++) {
        pthread_join(t[i], NULL);
        CHECK(args[i].failures == 0, "caller %u: %d wrong results", i, args[i].failures);
    }
}

/* The child of fork() has none of the parent's workers: its calls must
 * complete (on a fresh default pool or on the calling thread) and give the
 * right bytes; destroying an inherited pool must not wait for them. */
static void after_fork(mk_pool *pool)
{
    unsigned char *warm = malloc(1 << 20);
    mk_parallel_memcpy(NULL, warm, source, 1 << 20);   /* the default pool exists */
    free(warm);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(20);   /* a hang shows up as a signal */
        size_t n = (size_t)8 << 20;
        unsigned char *dst = malloc(n);
        int bad = 0;
        mk_parallel_memcpy(pool, dst, source + 3, n);
        bad |= memcmp(dst, source + 3, n) != 0;
        mk_parallel_memcpy(NULL, dst, source + 5, n);
        bad |= memcmp(dst, source + 5, n) != 0;
        mk_parallel_memset(NULL, dst, 7, n);
        for (size_t i = 0; i < n; i += 4093)
            bad |= dst[i] != 7;
        bad |= mk_pool_threads(pool) != 1;        /* the parent's workers are not here */
        bad |= mk_pool_threads(NULL) < 1;
        mk_pool_destroy(pool);
        _exit(bad ? 3 : 0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "forked child: status 0x%x", status);
    /* and the parent's pool still works */
    size_t n = (size_t)8 << 20;
    unsigned char *dst = malloc(n);
    mk_parallel_memcpy(pool, dst, source + 11, n);
    CHECK(memcmp(dst, source + 11, n) == 0, "parent's pool after fork");
    free(dst);
}

static void destroy_idle_and_busy(void)
{
    unsigned char *dst = malloc(64 * 4096);
    for (int i = 0; i < 40 / SLOW; i++) {
        mk_pool *p = mk_pool_create((unsigned)(i % 5 + 1));
        CHECK(p != NULL, "mk_pool_create(%d)", i % 5 + 1);
        if (i % 2) {  /* right after work */
            mk_parallel_memcpy(p, dst, source, 64 * 4096);
            CHECK(memcmp(dst, source, 64 * 4096) == 0, "copy before destroy");
        }
        mk_pool_destroy(p);
    }
    mk_pool_destroy(NULL);   /* harmless */
    free(dst);
}

static void threads_cannot_be_created(void)
{
    for (int allowed = 0; allowed <= 2; allowed++) {
        mk_pool_test_limit_threads(allowed);
        mk_pool *p = mk_pool_create(4);
        mk_pool_test_limit_threads(-1);
        CHECK(p && mk_pool_threads(p) == (unsigned)allowed + 1,
              "threads for %d workers: %u", allowed, p ? mk_pool_threads(p) : 0);
        guarded g = guarded_alloc(100000);
        check_copy(p, &g, g.lo + 5, 99000, 9, 77);
        check_fill(p, &g, g.lo + 1, 99000, 0x3c, 78);
        guarded_free(&g);
        mk_pool_destroy(p);
    }
}

static void default_pool(void)
{
    unsigned t = mk_pool_threads(NULL);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t asked = 0;   /* the threads tunable: 0 unless MEMKIT_TUNABLES sets it */
    CHECK(mk_tunables_number(mk_tunables_get(), "threads", &asked) == 0, "no threads tunable");
    CHECK((t >= 1 && t <= 4 && (long)t <= (cpus > 1 ? cpus : 1)) || asked,
          "default pool has %u threads on %ld CPUs", t, cpus);
}

int main(void)
{
    source = malloc(SOURCE_BYTES);
    uint64_t rng = 42;
    for (size_t i = 0; i < SOURCE_BYTES; i += 8) {
        uint64_t v = test_rand(&rng);
        memcpy(source + i, &v, 8);
    }
    mk_config();
    size_t threshold = mk_cfg.parallel_threshold;
    mk_pool *pool = mk_pool_create(3);
    CHECK(pool && mk_pool_threads(pool) == 3, "mk_pool_create(3)");

    default_pool();
    coverage(pool);
    workers_take_part(pool);
    idle_workers_sleep();

    /* Below the threshold: single-threaded, still right (test_copy and
     * test_memset cover every alignment of these routines). */
    sweep(pool, 16);
    /* Everything through the pool, chunks of one page. */
    mk_cfg.parallel_threshold = 0;
    mk_parallel_chunk = 4096;
    parallel_for(pool);
    sweep(pool, 3);
    /* Every copy's chunks streamed (mk_stream_chunks). */
    mk_tunables saved = mk_cfg, streamed = mk_cfg;
    streamed.nt_copy_threshold = streamed.nt_threshold = streamed.nt_threshold_zero = 0;
    mk_config_install(&streamed);
    sweep(pool, 5);
    mk_config_install(&saved);
    many_callers(pool);
    threads_cannot_be_created();
    destroy_idle_and_busy();
    mk_parallel_chunk = (size_t)2 << 20;
    random_large(pool);
    mk_config_install(&streamed);
    random_large(pool);
    mk_config_install(&saved);
    overlaps(pool);
    after_fork(pool);
    mk_cfg.parallel_threshold = threshold;
    mk_pool_destroy(pool);
    free(source);
    check_finish();
}
