/* Starting memkit's background threads (see internal.h). */
#include "internal.h"

#include <pthread.h>
#include <signal.h>

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
