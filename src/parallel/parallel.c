/* mk_parallel_memcpy / mk_parallel_memset: the dispatched single-thread
 * routine on each chunk, chunks spread over a pool.  Below the
 * parallel_threshold tunable waking workers costs more than it saves. */
#include "pool_internal.h"

typedef struct {
    unsigned char       *dst;
    const unsigned char *src;
    int                  c;
} piece_args;

static void copy_piece(void *ctx, size_t off, size_t len)
{
    piece_args *a = ctx;
    mk_memcpy(a->dst + off, a->src + off, len);
}

static void set_piece(void *ctx, size_t off, size_t len)
{
    piece_args *a = ctx;
    mk_memset(a->dst + off, a->c, len);
}

void *mk_parallel_memcpy(mk_pool *pool, void *dst, const void *src, size_t n)
{
    /* Overlapping regions need memmove's ordering, which chunks run in any
     * order cannot give. */
    if (n < mk_config()->parallel_threshold || mk_overlaps(dst, src, n))
        return mk_memcpy(dst, src, n);
    piece_args a = {.dst = dst, .src = src};
    mk_pool_run(pool ? pool : mk_pool_default(), (uintptr_t)dst, n, mk_parallel_chunk,
                copy_piece, &a);
    return dst;
}

void *mk_parallel_memset(mk_pool *pool, void *dst, int c, size_t n)
{
    if (n < mk_config()->parallel_threshold)
        return mk_memset(dst, c, n);
    piece_args a = {.dst = dst, .c = c};
    mk_pool_run(pool ? pool : mk_pool_default(), (uintptr_t)dst, n, mk_parallel_chunk,
                set_piece, &a);
    return dst;
}
