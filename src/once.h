/* SPDX-License-Identifier: Apache-2.0 */
/* A once-flag usable before libc is up (ifunc resolvers): the first caller
 * runs init, concurrent callers wait the few nanoseconds it takes. */
#ifndef MEMKIT_ONCE_H
#define MEMKIT_ONCE_H

enum { MK_ONCE_NEW = 0, MK_ONCE_BUSY = 1, MK_ONCE_DONE = 2 };

static inline __attribute__((always_inline)) void mk_once(int *state, void (*init)(void))
{
    if (__atomic_load_n(state, __ATOMIC_ACQUIRE) == MK_ONCE_DONE)
        return;
    int expected = MK_ONCE_NEW;
    if (__atomic_compare_exchange_n(state, &expected, MK_ONCE_BUSY, 0,
                                    __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)) {
        init();
        __atomic_store_n(state, MK_ONCE_DONE, __ATOMIC_RELEASE);
        return;
    }
    while (__atomic_load_n(state, __ATOMIC_ACQUIRE) != MK_ONCE_DONE)
        __builtin_ia32_pause();
}

#endif
