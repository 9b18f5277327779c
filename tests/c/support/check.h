/* SPDX-License-Identifier: Apache-2.0 */
/* Test support: a tiny assertion vocabulary, guard-page buffers, canaries
 * and the list of routines to test.  Every test exits non-zero on the first
 * failure and prints "N passed, N failed" at the end. */
#ifndef MEMKIT_TEST_CHECK_H
#define MEMKIT_TEST_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

extern unsigned long check_passed, check_failed;

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (cond) {                                                         \
            check_passed++;                                                 \
        } else {                                                            \
            check_failed++;                                                 \
            fprintf(stderr, "%s:%d: FAILED: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                   \
            fputc('\n', stderr);                                            \
            if (check_failed >= 20) check_finish();                         \
        }                                                                   \
    } while (0)

/* Prints the closing line and exits 0 if nothing failed. */
_Noreturn void check_finish(void);

/* Newlines in s. */
int count_lines(const char *s);
/* Whether output has a line "tunables a=b:c=d..." (mk_tunables_format's) in
 * which setting ("name=value") is one of the items. */
int tunables_line_has(const char *output, const char *setting);

/* A region of `pages` read-write pages with a PROT_NONE page on each side:
 * any access just outside it faults. */
typedef struct {
    unsigned char *lo;     /* first writable byte (right after the leading guard) */
    unsigned char *hi;     /* one past the last writable byte (the trailing guard) */
    size_t len;            /* hi - lo */
} guarded;

guarded guarded_alloc(size_t bytes);
void    guarded_free(guarded *g);

/* Canaries: fill [p, p+n) with a position-dependent pattern that no fill
 * value reproduces, and check it. check_canary returns the offset of the first
 * damaged byte, or -1. */
void    canary_fill(unsigned char *p, size_t n, uint32_t seed);
long    canary_check(const unsigned char *p, size_t n, uint32_t seed);

/* Random numbers, reproducible from a seed printed on failure. */
uint64_t test_rand(uint64_t *state);

/* The placements a routine is tested at within a guarded region for size n
 * and alignment a (0..63): the region's start right after the leading guard
 * page, and its end within 63 bytes of the trailing one (ending exactly at the
 * guard when a matches). Returns the destination. */
unsigned char *place_low(const guarded *g, size_t n, unsigned a);
unsigned char *place_high(const guarded *g, size_t n, unsigned a);

#endif
