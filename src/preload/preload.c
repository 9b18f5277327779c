/* libmemkit_preload.so: memset, memcpy, memmove, bzero, mempcpy and their
 * fortified forms, backed by memkit's dispatched routines.
 *
 *   LD_PRELOAD=/path/to/libmemkit_preload.so program
 *
 * The C names are GNU indirect functions bound by the same resolvers as
 * mk_memset & co., so a program's call costs what its libc call did and
 * works from the first relocation on: before main, before libc has finished
 * starting, from every thread.  Nothing here allocates, locks, recurses into
 * itself (the library is built so that it never calls memset/memcpy) or reads
 * the environment through libc (the tunables come from /proc/self/environ by
 * raw system calls).  To turn it off, leave it out of LD_PRELOAD: there is
 * no run-time switch, because reading one safely this early would cost every
 * call a check. */
#include "internal.h"

#include <stddef.h>

/* ---- resolvers ---- */

typedef void *(*set_fn)(void *, int, size_t);
typedef void *(*copy_fn)(void *, const void *, size_t);

MK_EARLY static set_fn resolve_set(void) { return (set_fn)mk_pick_variant(MK_OP_MEMSET); }
MK_EARLY static copy_fn resolve_copy(void) { return (copy_fn)mk_pick_variant(MK_OP_MEMMOVE); }

/* memcpy may be memmove: an overlapping memcpy is the caller's bug, and with
 * memkit it stays a correct copy instead of becoming memory corruption. */
void *memset(void *dst, int c, size_t n) __attribute__((ifunc("resolve_set")));
void *memcpy(void *dst, const void *src, size_t n) __attribute__((ifunc("resolve_copy")));
void *memmove(void *dst, const void *src, size_t n) __attribute__((ifunc("resolve_copy")));

void bzero(void *dst, size_t n)
{
    memset(dst, 0, n);
}

void *mempcpy(void *dst, const void *src, size_t n)
{
    return (char *)memcpy(dst, src, n) + n;
}
void *__mempcpy(void *dst, const void *src, size_t n) __attribute__((alias("mempcpy")));

/* ---- fortified entry points (_FORTIFY_SOURCE): the overflow check stays ---- */

extern void __chk_fail(void) __attribute__((noreturn));

void *__memset_chk(void *dst, int c, size_t n, size_t dst_len)
{
    if (MK_UNLIKELY(n > dst_len))
        __chk_fail();
    return memset(dst, c, n);
}

void *__memcpy_chk(void *dst, const void *src, size_t n, size_t dst_len)
{
    if (MK_UNLIKELY(n > dst_len))
        __chk_fail();
    return memcpy(dst, src, n);
}

void *__memmove_chk(void *dst, const void *src, size_t n, size_t dst_len)
{
    if (MK_UNLIKELY(n > dst_len))
        __chk_fail();
    return memmove(dst, src, n);
}

void *__mempcpy_chk(void *dst, const void *src, size_t n, size_t dst_len)
{
    if (MK_UNLIKELY(n > dst_len))
        __chk_fail();
    return mempcpy(dst, src, n);
}

/* Lets a program (or `memkit`) ask whether the shim is active:
 * dlsym(RTLD_DEFAULT, "memkit_preload_active"). */
int memkit_preload_active(void)
{
    return 1;
}
