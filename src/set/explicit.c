/* SPDX-License-Identifier: Apache-2.0 */
/* mk_memset_explicit: a fill the compiler may not remove (C23 memset_explicit). */
#include "../internal.h"

void mk_memset_explicit(void *dst, int c, size_t n)
{
    mk_memset(dst, c, n);
    /* The compiler must assume the asm reads all of memory through dst, so
     * the stores above cannot be removed as dead. */
    __asm__ volatile("" : : "r"(dst) : "memory");
}
