/* SPDX-License-Identifier: Apache-2.0 */
/* Starting memkit's background threads (see internal.h). */
#include "internal.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

int mk_start_background_thread(pthread_t *tid, void *(*fn)(void *), void *arg, const char *name)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = pthread_create(tid, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!err)
        pthread_setname_np(*tid, name);
    return err;
}

unsigned mk_usable_cpus(void)
{
    cpu_set_t set;
    long cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set)
                                                            : sysconf(_SC_NPROCESSORS_ONLN);
    return cpus < 1 ? 1 : (unsigned)cpus;
}
