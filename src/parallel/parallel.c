/* SPDX-License-Identifier: Apache-2.0 */
/* mk_parallel_memcpy / mk_parallel_memset: the dispatched single-thread
 * routine on each chunk, chunks spread over a pool.  Below the
 * parallel_threshold tunable waking workers costs more than it saves. */
#include "pool_internal.h"

typedef struct {
    unsigned char       *dst;
    const unsigned char *src;
    int                  c;
    int                  stream;   /* each chunk copied by non-temporal stores */
} piece_args;

static void copy_piece(void *ctx, size_t off, size_t len)
{
    piece_args *a = ctx;
    (a->stream ? mk_memcpy_nt : mk_memcpy)(a->dst + off, a->src + off, len);
}

static void set_piece(void *ctx, size_t off, size_t len)
{
    piece_args *a = ctx;
    mk_memset(a->dst + off, a->c, len);
}

/* Each chunk is a call of its own, but the caches hold the whole copy: the
 * chunks stream when all n bytes would, at twice the threshold (mk_stream_chunks). */
void *mk_parallel_memcpy(mk_pool *pool, void *dst, const void *src, size_t n)
{
    /* Overlapping regions need memmove's ordering, which chunks run in any
     * order cannot give. */
    const mk_tunables *t = mk_config();
    if (!mk_pooled(t, n) || mk_overlaps(dst, src, n))
        return mk_memcpy(dst, src, n);
    piece_args a = {.dst = dst, .src = src, .stream = mk_stream_chunks(t, dst, src, n)};
    mk_pool_run(pool ? pool : mk_pool_default(), (uintptr_t)dst, n, mk_parallel_chunk,
                copy_piece, &a);
    return dst;
}

void *mk_parallel_memset(mk_pool *pool, void *dst, int c, size_t n)
{
    if (!mk_pooled(mk_config(), n))
        return mk_memset(dst, c, n);
    piece_args a = {.dst = dst, .c = c};
    mk_pool_run(pool ? pool : mk_pool_default(), (uintptr_t)dst, n, mk_parallel_chunk,
                set_piece, &a);
    return dst;
}

void mk_parallel_for(mk_pool *pool, const void *base, size_t n, mk_piece_fn *fn, void *ctx)
{
    if (n)
        mk_pool_run(pool ? pool : mk_pool_default(), (uintptr_t)base, n, mk_parallel_chunk, fn, ctx);
}

mk_path mk_parallel_path(const mk_tunables *t, const void *dst, const void *src, size_t n, int set,
                         int *pooled)
{
    *pooled = mk_pooled(t, n);
    size_t each = *pooled && n > mk_parallel_chunk ? mk_parallel_chunk : n;
    if (set)
        return mk_set_path(t, each, 0x5c);
    return *pooled && mk_stream_chunks(t, dst, src, n) ? MK_PATH_STREAM : mk_copy_path(t, dst, src, each);
}
