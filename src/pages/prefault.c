/* mk_prefault: take a region's page faults now, in one place, instead of
 * scattered over the code that first writes it (the Kraus seed: faults are
 * CPU work, cheapest done by one thread or in one system call).
 *
 *   touch     one thread writes each page (an atomic add of 0: the contents
 *             stay, even if another thread writes the page meanwhile)
 *   populate  MADV_POPULATE_WRITE (Linux 5.14): the kernel faults the range
 *             in for writing without a trip to user space per page; where the
 *             kernel lacks it, touch
 *   lock      mlock: populated and kept resident; fails beyond
 *             RLIMIT_MEMLOCK without CAP_IPC_LOCK */
#include "pages_internal.h"

#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

int mk_prefault_test_no_populate;   /* test seam: act as a kernel without it */

static size_t page_size(void)
{
    static size_t page;
    size_t p = __atomic_load_n(&page, __ATOMIC_RELAXED);
    if (!p) {
        p = (size_t)sysconf(_SC_PAGESIZE);
        __atomic_store_n(&page, p, __ATOMIC_RELAXED);
    }
    return p;
}

/* A hole in the range would fault the toucher; mincore says ENOMEM first.
 * (A mapping without write permission still faults: touch is for memory the
 * caller is about to write.) */
static int touch(unsigned char *lo, size_t len, size_t page)
{
    unsigned char vec[256];
    for (size_t off = 0; off < len; off += 256 * page) {
        size_t part = len - off < 256 * page ? len - off : 256 * page;
        if (mincore(lo + off, part, vec) != 0)
            return errno;
    }
    for (size_t off = 0; off < len; off += page)
        __atomic_fetch_add(lo + off, 0, __ATOMIC_RELAXED);
    return 0;
}

/* Whether the kernel knows MADV_POPULATE_WRITE: asked once with an empty
 * range, which the kernel accepts for any advice it knows.  (EINVAL from the
 * real call means something else: a mapping it cannot populate for writing,
 * such as a read-only one, which touching would crash on.) */
static int populate_supported(void)
{
    static int known;   /* 0 unknown, 1 yes, 2 no */
    if (__atomic_load_n(&mk_prefault_test_no_populate, __ATOMIC_RELAXED))
        return 0;
    int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (!k) {
        static char probe[4096] __attribute__((aligned(4096)));
        k = madvise(probe, 0, MADV_POPULATE_WRITE) == 0 ? 1 : 2;
        __atomic_store_n(&known, k, __ATOMIC_RELAXED);
    }
    return k == 1;
}

static int populate(unsigned char *lo, size_t len, size_t page)
{
    if (!populate_supported())
        return touch(lo, len, page);
    while (madvise(lo, len, MADV_POPULATE_WRITE) != 0)
        if (errno != EINTR && errno != EAGAIN)
            return errno;
    return 0;
}

int mk_prefault(void *p, size_t n, mk_prefault_mode mode)
{
    if (n == 0)
        return 0;
    size_t page = page_size();
    uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(page - 1);
    if (!p || (uintptr_t)p + n < (uintptr_t)p || (uintptr_t)p + n > UINTPTR_MAX - page)
        return EINVAL;
    uintptr_t hi = ((uintptr_t)p + n + page - 1) & ~(uintptr_t)(page - 1);
    size_t len = hi - lo;
    switch (mode) {
    case MK_PREFAULT_TOUCH:
        return touch((unsigned char *)lo, len, page);
    case MK_PREFAULT_POPULATE:
        return populate((unsigned char *)lo, len, page);
    case MK_PREFAULT_LOCK:
        return mlock((void *)lo, len) == 0 ? 0 : errno;
    }
    return EINVAL;
}
