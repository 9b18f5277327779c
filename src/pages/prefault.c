/* SPDX-License-Identifier: Apache-2.0 */
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
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
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

/* Whether every page of [lo, lo+len) of a file mapping can be read: one
 * process_vm_readv of one byte per page, which fails where an access would
 * raise SIGBUS (past the end of the file) instead of raising it.  0, EFAULT,
 * or 0 where the call is not allowed (seccomp): then unchecked. */
static int file_pages_exist(uintptr_t lo, size_t len, size_t page)
{
    enum { BATCH = 512 };
    struct iovec remote[BATCH];
    char sink[BATCH];
    struct iovec local = {sink, BATCH};
    for (size_t off = 0; off < len;) {
        size_t k = 0;
        for (; k < BATCH && off < len; k++, off += page)
            remote[k] = (struct iovec){(void *)(lo + off), 1};
        local.iov_len = k;
        ssize_t got = process_vm_readv(getpid(), &local, 1, remote, k, 0);
        if (got < 0 && (errno == ENOSYS || errno == EPERM))
            return 0;
        if (got != (ssize_t)k)
            return EFAULT;
    }
    return 0;
}

/* What touching [lo, hi) would run into, from /proc/self/maps, as the kernel
 * says it for MADV_POPULATE_WRITE: ENOMEM for a hole, EINVAL for a page that
 * may not be written (read-only, PROT_NONE), EFAULT past the end of a mapped
 * file (SIGBUS).  -1: the maps cannot be read. */
static int check_mappings(uintptr_t lo, uintptr_t hi, size_t page)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[8192];
    size_t have = 0;
    uintptr_t covered = lo;   /* [lo, covered) checked */
    int err = 0, eof = 0;
    while (!err && covered < hi) {
        char *nl = memchr(buf, '\n', have);
        if (!nl) {
            if (eof || have == sizeof buf)
                break;
            ssize_t got = read(fd, buf + have, sizeof buf - have);
            if (got <= 0)
                eof = 1;
            else
                have += (size_t)got;
            continue;
        }
        *nl = '\0';
        unsigned long start, end, inode;
        char perms[8];
        if (sscanf(buf, "%lx-%lx %7s %*s %*s %lu", &start, &end, perms, &inode) == 4 &&
            end > covered && start < hi) {
            if (start > covered)
                err = ENOMEM;
            else if (perms[1] != 'w')
                err = EINVAL;
            else if (inode != 0) {
                uintptr_t to = end < hi ? end : hi;
                err = file_pages_exist(covered, to - covered, page);
            }
            covered = end;
        }
        size_t used = (size_t)(nl + 1 - buf);   /* shift the rest down */
        for (size_t i = used; i < have; i++)
            buf[i - used] = buf[i];
        have -= used;
    }
    close(fd);
    return err ? err : covered < hi ? ENOMEM : 0;
}

/* A hole would fault the toucher, and so would a page it may not write or
 * one past the end of its file: checked first, reported as an errno. */
static int touch(unsigned char *lo, size_t len, size_t page)
{
    int err = check_mappings((uintptr_t)lo, (uintptr_t)lo + len, page);
    if (err < 0) {   /* no /proc: holes are all mincore can tell */
        unsigned char vec[256];
        for (size_t off = 0; off < len; off += 256 * page) {
            size_t part = len - off < 256 * page ? len - off : 256 * page;
            if (mincore(lo + off, part, vec) != 0)
                return errno;
        }
        err = 0;
    }
    if (err)
        return err;
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
