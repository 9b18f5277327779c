/* SPDX-License-Identifier: Apache-2.0 */
#include "check.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

unsigned long check_passed, check_failed;

_Noreturn void check_finish(void)
{
    printf("%lu passed, %lu failed\n", check_passed, check_failed);
    fflush(stdout);
    exit(check_failed ? 1 : 0);
}

int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

int tunables_line_has(const char *output, const char *setting)
{
    const char *t = strstr(output, "tunables ");
    if (!t)
        return 0;
    size_t n = strlen(setting);
    const char *end = t + strcspn(t, "\n");
    for (const char *p = t + 9; p < end; p += strcspn(p, ":\n") + 1)
        if (!strncmp(p, setting, n) && (p[n] == ':' || p[n] == '\n' || p[n] == '\0'))
            return 1;
    return 0;
}

guarded guarded_alloc(size_t bytes)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t body = (bytes + page - 1) / page * page;
    unsigned char *m = mmap(NULL, body + 2 * page, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    if (mprotect(m, page, PROT_NONE) || mprotect(m + page + body, page, PROT_NONE)) {
        perror("mprotect");
        exit(2);
    }
    return (guarded){m + page, m + page + body, body};
}

void guarded_free(guarded *g)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    munmap(g->lo - page, g->len + 2 * page);
    g->lo = g->hi = NULL;
}

static inline unsigned char canary_byte(size_t i, uint32_t seed)
{
    uint32_t x = (uint32_t)i * 2654435761u + seed;
    return (unsigned char)(x >> 24 ^ x >> 11 ^ 0x5a);
}

void canary_fill(unsigned char *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = canary_byte((size_t)p + i, seed);
}

long canary_check(const unsigned char *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != canary_byte((size_t)p + i, seed))
            return (long)i;
    return -1;
}

uint64_t test_rand(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

unsigned char *place_low(const guarded *g, size_t n, unsigned a)
{
    (void)n;
    return g->lo + (a & 63);
}

unsigned char *place_high(const guarded *g, size_t n, unsigned a)
{
    uintptr_t last = (uintptr_t)g->hi - n;            /* ends exactly at the guard */
    uintptr_t p = (last & ~(uintptr_t)63) + (a & 63);
    if (p > last)
        p -= 64;
    return (unsigned char *)p;
}
