/* SPDX-License-Identifier: Apache-2.0 */
/* Memory an experiment times on, and a way to evict it from the caches. */
#include "lab.h"

#include "memkit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

void *lab_alloc(size_t n)
{
    void *p = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "error: cannot allocate %zu bytes: %s\n", n, strerror(errno));
        exit(2);
    }
    for (size_t i = 0; i < n; i += 4096)   /* fault it in now, not while timing */
        ((volatile char *)p)[i] = 1;
    return p;
}

void lab_free(void *p, size_t n) { munmap(p, n ? n : 1); }

void lab_flush_caches(void)
{
    static char *buf;
    static size_t len;
    if (!buf) {
        size_t l3 = mk_cpu()->l3_bytes;
        len = 2 * (l3 ? l3 : (size_t)32 << 20);
        buf = lab_alloc(len);
    }
    for (size_t i = 0; i < len; i += 64)
        buf[i]++;
    lab_escape(buf);
}
