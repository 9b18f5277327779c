/* SPDX-License-Identifier: Apache-2.0 */
/* mk_pages_alloc: anonymous memory on huge pages where the machine gives
 * them, normal pages otherwise, and the caller told which.  A 2 MiB page
 * takes one fault where 4 KiB pages take 512 (the faults experiment shows
 * the cost per MB of each).
 *
 * Every mapping is n rounded up to 2 MiB, whatever it got, so mk_pages_free
 * needs only (p, n) to unmap exactly what was mapped. */
#include "../internal.h"

#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#define HUGE_BYTES ((size_t)2 << 20)   /* the x86-64 PMD page */

static size_t mapping_bytes(size_t n) { return (n + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1); }

/* MAP_HUGETLB succeeds only from the reserved pool (vm.nr_hugepages). */
static void *hugetlb(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* Over-map by one huge page, keep the 2 MiB-aligned part: THP backs only
 * aligned 2 MiB extents. */
static void *aligned_normal(size_t len)
{
    unsigned char *m = mmap(NULL, len + HUGE_BYTES, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    uintptr_t start = ((uintptr_t)m + HUGE_BYTES - 1) & ~(uintptr_t)(HUGE_BYTES - 1);
    size_t head = start - (uintptr_t)m, tail = HUGE_BYTES - head;
    if (head)
        munmap(m, head);
    if (tail)
        munmap((unsigned char *)start + len, tail);
    return (void *)start;
}

void *mk_pages_alloc(size_t n, mk_page_kind want, mk_page_kind *got)
{
    mk_page_kind kind = MK_PAGES_NORMAL;
    void *p = NULL;
    if (n == 0 || n > SIZE_MAX - 2 * HUGE_BYTES) {
        errno = EINVAL;
        return NULL;
    }
    size_t len = mapping_bytes(n);
    if (want == MK_PAGES_HUGETLB && (p = hugetlb(len)))
        kind = MK_PAGES_HUGETLB;
    if (!p) {
        p = aligned_normal(len);
        if (!p)
            return NULL;
        /* MADV_HUGEPAGE fails with EINVAL where the kernel has no THP; with
         * THP "never" it succeeds and does nothing: ask sysfs. */
        if (want != MK_PAGES_NORMAL && madvise(p, len, MADV_HUGEPAGE) == 0) {
            char mode[128];
            long r = mk_raw_read_file("/sys/kernel/mm/transparent_hugepage/enabled", mode,
                                      sizeof mode - 1);
            int never = 0;
            if (r > 0) {
                mode[r] = '\0';
                for (long i = 0; i + 6 < r; i++)
                    if (mode[i] == '[' && mode[i + 1] == 'n' && mode[i + 2] == 'e')
                        never = 1;
            }
            if (!never)
                kind = MK_PAGES_THP;
        }
    }
    if (got)
        *got = kind;
    return p;
}

void mk_pages_free(void *p, size_t n)
{
    if (p && n)
        munmap(p, mapping_bytes(n));
}
