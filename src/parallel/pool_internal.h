/* SPDX-License-Identifier: Apache-2.0 */
/* The thread pool's library-internal side: the chunk runner the parallel
 * routines and the copier adapter share, and the seams the tests use to
 * reach paths a healthy machine never takes. */
#ifndef MEMKIT_POOL_INTERNAL_H
#define MEMKIT_POOL_INTERNAL_H

#include "../internal.h"

/* Does the piece [off, off+len) of a job; must touch nothing else. */
typedef void (*mk_chunk_fn)(void *ctx, size_t off, size_t len);

/* Runs fn over [0, n) cut at the addresses base + off that are multiples of
 * `chunk` (a power of two), on the pool's workers and the calling thread;
 * returns when every piece is done.  The calling thread works alone when the
 * pool is busy with another caller's job, was inherited across fork(), or has
 * no workers. */
MK_HIDDEN void mk_pool_run(mk_pool *pool, uintptr_t base, size_t n, size_t chunk,
                           mk_chunk_fn fn, void *ctx);

/* The shared default pool: created on first use, and afresh in a forked
 * child.  Never NULL (without memory it is a pool with no workers). */
MK_HIDDEN mk_pool *mk_pool_default(void);

/* The chunk the parallel routines cut work into (a power of two, at least a
 * page).  Tests lower it to reach chunk boundaries with small sizes. */
MK_HIDDEN extern size_t mk_parallel_chunk;

/* Whether an n-byte call of the parallel engine (or the copier adapter) runs
 * on the pool: below parallel_threshold, waking workers costs more than it
 * saves, and the caller does it all. */
static inline int mk_pooled(const mk_tunables *t, size_t n)
{
    return n >= t->parallel_threshold;
}

/* Whether mk_parallel_memcpy's chunks of an n-byte copy stream: where all n
 * bytes would (mk_copy_path), from twice the threshold.  Each chunk alone
 * would take the loop, but the caches hold the whole copy: Zen 4, 2 threads,
 * 2 MiB chunks, against loop chunks, 1.44-1.54x at 32 MiB, 1.70-1.80x at
 * 54 MiB, 1.85-1.89x at 108 MiB; from the threshold itself (16 MiB, whose
 * 32 MiB of buffers stay in the L3 between calls) 0.67-0.73x.  Fills keep
 * each chunk's own path: two threads' plain stores outran non-temporal ones
 * (0.72-0.92x at 64-108 MiB).  docs/strategy.md, parallel chunks. */
static inline int mk_stream_chunks(const mk_tunables *t, const void *d, const void *s, size_t n)
{
    return n / 2 >= t->nt_copy_threshold && mk_copy_path(t, d, s, n) == MK_PATH_STREAM;
}

/* Test seam: every pool created from now on gets at most `allowed` workers,
 * pthread_create "failing" with EAGAIN for the rest; -1 (default) turns the
 * simulation off. */
MK_HIDDEN void mk_pool_test_limit_threads(int allowed);

#endif
