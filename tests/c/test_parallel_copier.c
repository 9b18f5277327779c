/* SPDX-License-Identifier: Apache-2.0 */
/* The MT copier adapter: every usable copier of the lab (the library's and
 * the lab's contestants), both directions, through a pool with chunks of a
 * page (so pieces are many), at sizes that are multiples of the copier's
 * alignment, between a buffer the copier allocated and a guarded user
 * buffer with canaries; contract violations give EINVAL and leave dst
 * alone. */
#include "check.h"
#include "copy_methods.h"
#include "memkit.h"
#include "parallel/pool_internal.h"

#include <errno.h>
#include <string.h>

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
enum { SLOW = 3 };
#else
enum { SLOW = 1 };
#endif

static void one_copier(mk_pool *pool, const mk_copier *c)
{
    size_t a = c->align, max = 9 * 4096 + 5 * 64;
    unsigned long failures = check_failed;
    unsigned char *shared = c->alloc(max);
    guarded g = guarded_alloc(max + 2 * a);
    uint64_t rng = 7;
    unsigned char *src = malloc(max);
    for (size_t i = 0; i < max; i++)
        src[i] = (unsigned char)test_rand(&rng);
    for (size_t n = 0; n <= max && check_failed == failures; n += a * (n < 4 * a ? 1 : 37 * SLOW) ) {
        n -= n % a;
        unsigned char *user = g.lo + a * (n % 3 == 0);   /* aligned, at the low guard or not */
        uint32_t seed = (uint32_t)n;
        /* copy_out: shared -> user, checked against the canaries */
        memcpy(shared, src, n);
        canary_fill(g.lo, g.len, seed);
        int err = mk_parallel_copy(pool, c, 0, user, shared, n);
        CHECK(err == 0 && memcmp(user, src, n) == 0, "%s copy_out n=%zu: err %d or bytes differ",
              c->name, n, err);
        CHECK(canary_check(g.lo, (size_t)(user - g.lo), seed) < 0 &&
                  canary_check(user + n, (size_t)(g.hi - user - n), seed) < 0,
              "%s copy_out n=%zu wrote outside [dst, dst+n)", c->name, n);
        /* copy_in: user -> shared */
        memset(shared, 0, max);
        memcpy(user, src + 1, n);
        err = mk_parallel_copy(pool, c, 1, shared, user, n);
        CHECK(err == 0 && memcmp(shared, src + 1, n) == 0 && (n == max || shared[n] == 0),
              "%s copy_in n=%zu: err %d, wrong bytes or past the end", c->name, n, err);
    }
    if (a > 1) {   /* misaligned dst, src or n: EINVAL, dst untouched */
        memset(g.lo, 0x77, g.len);
        CHECK(mk_parallel_copy(pool, c, 0, g.lo + 1, shared, 8 * a) == EINVAL, "%s: misaligned dst",
              c->name);
        CHECK(mk_parallel_copy(pool, c, 0, g.lo, shared, 8 * a + 1) == EINVAL, "%s: odd n", c->name);
        CHECK(mk_parallel_copy(pool, c, 1, shared, g.lo + 1, 8 * a) == EINVAL, "%s: misaligned src",
              c->name);
        CHECK(g.lo[0] == 0x77 && g.lo[8 * a] == 0x77, "%s: touched dst on EINVAL", c->name);
    }
    CHECK(mk_parallel_copy(pool, c, 0, shared + a, shared, 64 * a) == EINVAL, "%s: overlap", c->name);
    printf("%-22s align %-4zu both directions, %u threads: %s\n", c->name, a, mk_pool_threads(pool),
           check_failed == failures ? "ok" : "FAILED");
    c->free(shared, max);
    guarded_free(&g);
    free(src);
}

int main(void)
{
    mk_config();
    mk_cfg.parallel_threshold = 0;
    mk_parallel_chunk = 4096;
    mk_pool *pool = mk_pool_create(3);
    size_t count;
    const mk_copier *cs = lab_copiers(&count);
    CHECK(count > 0, "no copiers");
    for (size_t i = 0; i < count; i++)
        if (cs[i].usable)
            one_copier(i % 2 ? pool : NULL, &cs[i]);
    CHECK(mk_parallel_copy(pool, NULL, 0, NULL, NULL, 0) == EINVAL, "NULL copier");
    mk_pool_destroy(pool);
    check_finish();
}
