/* SPDX-License-Identifier: Apache-2.0 */
/* The MT copier adapter (the Shadesmar seed's MTCopier, fixed): the seed
 * started a thread per call and cut the work at arbitrary offsets, so it
 * could only wrap copiers without an alignment requirement.  Here the work
 * goes to the persistent pool, cut at multiples of the copier's alignment
 * (and of the pool's chunk, a page multiple), which the copier contract
 * says is equivalent to one call. */
#include "pool_internal.h"

#include <errno.h>

typedef struct {
    int (*copy)(void *, const void *, size_t);
    unsigned char       *dst;
    const unsigned char *src;
    int                  err;   /* first error a piece reported (atomic) */
} copier_job;

static void copier_piece(void *ctx, size_t off, size_t len)
{
    copier_job *j = ctx;
    int err = j->copy(j->dst + off, j->src + off, len);
    if (err) {
        int none = 0;
        __atomic_compare_exchange_n(&j->err, &none, err, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    }
}

int mk_parallel_copy(mk_pool *pool, const mk_copier *c, int to_shared, void *dst,
                     const void *src, size_t n)
{
    if (!c || !c->usable || !c->align || (c->align & (c->align - 1)))
        return EINVAL;
    int (*copy)(void *, const void *, size_t) = to_shared ? c->copy_in : c->copy_out;
    size_t a = c->align;
    uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
    /* The contract's checks once, up front, so no piece can fail half-way. */
    if ((d | s | n) & (a - 1) || (n && (d - s < n || s - d < n)))
        return EINVAL;
    if (!mk_pooled(mk_config(), n))
        return copy(dst, src, n);
    copier_job j = {.copy = copy, .dst = dst, .src = src};
    size_t chunk = mk_parallel_chunk > a ? mk_parallel_chunk : a;
    mk_pool_run(pool ? pool : mk_pool_default(), d, n, chunk, copier_piece, &j);
    return __atomic_load_n(&j.err, __ATOMIC_RELAXED);
}
