/* SPDX-License-Identifier: Apache-2.0 */
/* The zeroing service: every block handed back comes out fully zeroed, once,
 * for every lock kind, thread count and grain (odd grains and block sizes
 * included); none is lost or handed to two callers under concurrent get/put;
 * the counters add up; no more workers zero at once than the awake cap
 * allows; idle workers sleep; destroy with work pending is clean. */
#include "check.h"
#include "memkit.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
enum { SLOW = 4 };
#else
enum { SLOW = 1 };
#endif

static const char *lock_name(mk_lock_kind k)
{
    return k == MK_LOCK_SPIN ? "spin" : k == MK_LOCK_MUTEX ? "mutex" : "atomic";
}

static size_t first_nonzero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return i;
    return n;
}

/* Put `count` dirty blocks (sizes and offsets odd on purpose), drain, take
 * them all back; each must be one of ours, whole, zero, and taken once. */
static void put_drain_get(mk_zeroing_config cfg)
{
    enum { MAXB = 48 };
    size_t count = MAXB / SLOW;
    unsigned char *blocks[MAXB];
    size_t sizes[MAXB], total = 0;
    int taken[MAXB] = {0};
    uint64_t rng = cfg.threads * 131 + cfg.grain + cfg.lock;
    mk_zeroing *z = mk_zeroing_create(&cfg);
    CHECK(z != NULL, "create");
    for (size_t i = 0; i < count; i++) {
        sizes[i] = i % 4 == 0 ? 1 + i : (size_t)(test_rand(&rng) % (3u << 20)) + 1;
        blocks[i] = (unsigned char *)malloc(sizes[i] + 8) + i % 8;
        memset(blocks[i], 0xa0 + (int)i, sizes[i]);
        total += sizes[i];
        mk_zeroing_put(z, blocks[i], sizes[i]);
    }
    mk_zeroing_drain(z);
    mk_zeroing_stats st;
    mk_zeroing_get_stats(z, &st);
    CHECK(st.bytes_zeroed == total && st.blocks_zeroed == count,
          "%s threads=%u grain=%zu: zeroed %llu bytes in %llu blocks, put %zu in %zu",
          lock_name(cfg.lock), cfg.threads, cfg.grain, (unsigned long long)st.bytes_zeroed,
          (unsigned long long)st.blocks_zeroed, total, count);
    size_t got_count = 0, got;
    unsigned char *p;
    while ((p = mk_zeroing_get(z, 1, &got))) {
        size_t i = 0;
        while (i < count && blocks[i] != p)
            i++;
        CHECK(i < count && !taken[i] && got == sizes[i], "%s: got an unknown, repeated or "
              "resized block", lock_name(cfg.lock));
        if (i == count)
            break;
        taken[i] = 1;
        got_count++;
        size_t bad = first_nonzero(p, got);
        CHECK(bad == got, "%s threads=%u grain=%zu: block of %zu has byte %zu non-zero",
              lock_name(cfg.lock), cfg.threads, cfg.grain, got, bad);
    }
    CHECK(got_count == count, "%s: got %zu of %zu blocks back", lock_name(cfg.lock), got_count,
          count);
    mk_zeroing_destroy(z);
    for (size_t i = 0; i < count; i++)
        free(blocks[i] - i % 8);
}

/* ---- callers taking and returning blocks at once ---- */

enum { CALLERS = 4, BLOCKS = 32, BLOCK_BYTES = 256 * 1024 };

typedef struct {
    mk_zeroing *z;
    unsigned    id;
    int         errors;
    unsigned    rounds;
} caller;

static void *caller_main(void *arg)
{
    caller *c = arg;
    uint64_t rng = c->id + 1;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (unsigned r = 0; r < 400 / SLOW; r++) {
        size_t want = (size_t)(test_rand(&rng) % BLOCK_BYTES) + 1, got;
        unsigned char *p = mk_zeroing_get(c->z, want, &got);
        if (!p) {
            sched_yield();
            /* On a loaded machine the workers may not have run yet: a miss
             * before the first block is not a round (up to 20 s). */
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (c->rounds == 0 && now.tv_sec - start.tv_sec < 20)
                r--;
            continue;
        }
        c->rounds++;
        if (got < want || first_nonzero(p, got) != got)
            c->errors++;
        /* Ours alone while we hold it: no worker zeroes it, no caller has it. */
        memset(p, 0x11 * (int)(c->id + 1), got);
        sched_yield();
        for (size_t i = 0; i < got; i += 997)
            if (p[i] != (unsigned char)(0x11 * (c->id + 1)))
                c->errors++;
        mk_zeroing_put(c->z, p, got);
    }
    return NULL;
}

static void concurrent_get_put(mk_lock_kind lock, unsigned threads, size_t grain)
{
    mk_zeroing_config cfg = {threads, grain, lock, 0};
    mk_zeroing *z = mk_zeroing_create(&cfg);
    unsigned char *blocks[BLOCKS];
    for (int i = 0; i < BLOCKS; i++) {
        blocks[i] = malloc(BLOCK_BYTES);
        memset(blocks[i], 0xee, BLOCK_BYTES);
        mk_zeroing_put(z, blocks[i], BLOCK_BYTES);
    }
    pthread_t t[CALLERS];
    caller c[CALLERS];
    for (unsigned i = 0; i < CALLERS; i++) {
        c[i] = (caller){z, i, 0, 0};
        pthread_create(&t[i], NULL, caller_main, &c[i]);
    }
    unsigned rounds = 0;
    for (unsigned i = 0; i < CALLERS; i++) {
        pthread_join(t[i], NULL);
        CHECK(c[i].errors == 0, "%s: caller %u saw %d bad blocks", lock_name(lock), i,
              c[i].errors);
        rounds += c[i].rounds;
    }
    mk_zeroing_drain(z);
    int seen[BLOCKS] = {0}, count = 0, bad = 0;
    size_t got;
    unsigned char *p;
    while ((p = mk_zeroing_get(z, 1, &got))) {
        for (int i = 0; i < BLOCKS; i++)
            if (blocks[i] == p)
                seen[i]++;
        bad += first_nonzero(p, got) != got;
        count++;
    }
    int once = 1;
    for (int i = 0; i < BLOCKS; i++)
        once &= seen[i] == 1;
    CHECK(count == BLOCKS && once && !bad, "%s threads=%u grain=%zu: %d blocks back "
          "(of %d), each once: %d, %d not zero", lock_name(lock), threads, grain, count, BLOCKS,
          once, bad);
    CHECK(rounds > 0, "%s: no caller ever got a block", lock_name(lock));
    mk_zeroing_destroy(z);
    for (int i = 0; i < BLOCKS; i++)
        free(blocks[i]);
}

static void idle_workers_sleep(void)
{
    mk_zeroing_config cfg = {8, 4096, MK_LOCK_SPIN, 8};
    mk_zeroing *z = mk_zeroing_create(&cfg);
    unsigned char *b = malloc(1 << 20);
    mk_zeroing_put(z, b, 1 << 20);
    mk_zeroing_drain(z);
    mk_zeroing_stats before, after;
    mk_zeroing_get_stats(z, &before);
    CHECK(before.worker_cpu_seconds > 0, "worker CPU time not counted");
    nanosleep(&(struct timespec){0, 200000000}, NULL);
    mk_zeroing_get_stats(z, &after);
    double ms = (after.worker_cpu_seconds - before.worker_cpu_seconds) * 1e3;
    CHECK(ms < 20, "8 idle workers used %.1f ms of CPU in 200 ms", ms);
    mk_zeroing_destroy(z);
    free(b);
}

/* Many workers, many small grains: without the cap every sleeper would be
 * woken for a block this big and zero at once.  With it, no more than
 * `awake` ever do, and all the work still gets done. */
static void awake_cap(mk_lock_kind lock, unsigned threads, unsigned awake, unsigned limit)
{
    mk_zeroing_config cfg = {threads, 4096, lock, awake};
    mk_zeroing *z = mk_zeroing_create(&cfg);
    enum { N = 4, BYTES = 4 << 20 };
    unsigned char *b[N];
    for (int i = 0; i < N; i++) {
        b[i] = malloc(BYTES);
        memset(b[i], 0x77, BYTES);
        mk_zeroing_put(z, b[i], BYTES);
    }
    mk_zeroing_drain(z);
    mk_zeroing_stats st;
    mk_zeroing_get_stats(z, &st);
    CHECK(st.peak_awake >= 1 && st.peak_awake <= limit, "%s threads=%u awake=%u: %u workers "
          "zeroed at once (limit %u)", lock_name(lock), threads, awake, st.peak_awake, limit);
    CHECK(st.blocks_zeroed == N && st.bytes_zeroed == (uint64_t)N * BYTES,
          "%s awake=%u: %llu of %d blocks zeroed", lock_name(lock), awake,
          (unsigned long long)st.blocks_zeroed, N);
    size_t got, count = 0;
    unsigned char *p;
    while ((p = mk_zeroing_get(z, 1, &got)))
        count += first_nonzero(p, got) == got;
    CHECK(count == N, "%s awake=%u: %zu of %d blocks came back zero", lock_name(lock), awake,
          count, N);
    mk_zeroing_destroy(z);
    for (int i = 0; i < N; i++)
        free(b[i]);
}

/* The default cap: half the usable CPUs, 1 to 4. */
static unsigned default_awake(void)
{
    cpu_set_t set;
    unsigned half = sched_getaffinity(0, sizeof set, &set) == 0 ? (unsigned)CPU_COUNT(&set) / 2 : 1;
    return half < 1 ? 1 : half > 4 ? 4 : half;
}

static void edges(void)
{
    mk_zeroing_config bad = {2, 4096, (mk_lock_kind)9, 0};
    errno = 0;
    CHECK(mk_zeroing_create(&bad) == NULL && errno == EINVAL, "unknown lock kind accepted");
    mk_zeroing *z = mk_zeroing_create(NULL);   /* the defaults */
    CHECK(z != NULL, "create with defaults");
    size_t got = 123;
    CHECK(mk_zeroing_get(z, 1, &got) == NULL && got == 0, "get from an empty service");
    unsigned char *small = malloc(100);
    memset(small, 1, 100);
    mk_zeroing_put(z, small, 100);
    mk_zeroing_put(z, NULL, 100);    /* ignored */
    mk_zeroing_put(z, small, 0);     /* ignored */
    mk_zeroing_drain(z);
    CHECK(mk_zeroing_get(z, 101, &got) == NULL, "got a block smaller than asked");
    unsigned char *p = mk_zeroing_get(z, 100, &got);
    CHECK(p == small && got == 100 && first_nonzero(p, 100) == 100, "small block round trip");
    mk_zeroing_stats st;
    mk_zeroing_get_stats(z, &st);
    CHECK(st.blocks_zeroed == 1 && st.bytes_zeroed == 100, "counters after one block");
    /* destroy with work still queued: no hang, no crash */
    unsigned char *big = malloc(32 << 20);
    mk_zeroing_put(z, big, 32 << 20);
    mk_zeroing_destroy(z);
    mk_zeroing_destroy(NULL);
    mk_zeroing_drain(NULL);
    CHECK(mk_zeroing_get(NULL, 1, &got) == NULL, "get from NULL");
    free(big);
    free(small);
}

int main(void)
{
    static const mk_lock_kind locks[] = {MK_LOCK_MUTEX, MK_LOCK_SPIN, MK_LOCK_ATOMIC};
    static const unsigned threads[] = {1, 3, 9};
    static const size_t grains[] = {4096, 4095, 65536, 1 << 20};
    for (int l = 0; l < 3; l++) {
        for (int t = 0; t < 3; t++)
            for (int g = 0; g < 4; g++)
                put_drain_get((mk_zeroing_config){threads[t], grains[g], locks[l], threads[t]});
        concurrent_get_put(locks[l], 3, 4096);
        concurrent_get_put(locks[l], 2, 1 << 20);
        printf("%-6s: put/drain/get over threads x grains, concurrent get/put: %s\n",
               lock_name(locks[l]), check_failed ? "FAILED" : "ok");
    }
    for (int l = 0; l < 3; l++) {
        awake_cap(locks[l], 16, 2, 2);
        awake_cap(locks[l], 16, 0, default_awake());
    }
    idle_workers_sleep();
    edges();
    check_finish();
}
