/* SPDX-License-Identifier: Apache-2.0 */
/* mk_memset_explicit must clear a buffer even when the compiler can prove
 * nobody reads it afterwards — the case where a plain memset of a dying
 * local array is deleted as a dead store (and a secret stays on the stack).
 *
 * Technique: hold_secret() puts a secret in a local array, lets it escape to
 * a reader, clears it and returns; scan_stack() then reads the stack area
 * that frame occupied (below its own frame) and looks for the secret. */
#include "check.h"
#include "memkit.h"

#include <string.h>

#define SECRET_LEN 256
#define SCAN_BYTES 16384

static volatile unsigned char secret_seed = 0xa7;

static unsigned char secret_byte(size_t i, unsigned char seed)
{
    return (unsigned char)(seed ^ (i * 29 + 11) ^ (i >> 3));
}

__attribute__((noinline)) static unsigned reader(const unsigned char *p, size_t n)
{
    unsigned h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    __asm__ volatile("" : : "r"(p) : "memory");
    return h;
}

/* The clear below is the last use of buf: a dead store to the compiler. */
__attribute__((noinline, no_sanitize("address"))) static unsigned hold_secret(void)
{
    unsigned char buf[SECRET_LEN];
    unsigned char seed = secret_seed;
    for (size_t i = 0; i < SECRET_LEN; i++)
        buf[i] = secret_byte(i, seed);
    unsigned h = reader(buf, sizeof buf);
    mk_memset_explicit(buf, 0, sizeof buf);
    return h;
}

/* How many SECRET_LEN/4-byte runs of the secret the SCAN_BYTES below this
 * frame hold (a stack the callee just used, still mapped). */
__attribute__((noinline, no_sanitize("address"))) static int scan_stack(void)
{
    const volatile unsigned char *top = (const volatile unsigned char *)__builtin_frame_address(0);
    const volatile unsigned char *p = top - SCAN_BYTES;
    unsigned char seed = secret_seed, first = secret_byte(0, seed);
    int found = 0;
    for (size_t off = 0; off + SECRET_LEN / 4 <= SCAN_BYTES; off++) {
        if (p[off] != first)
            continue;
        size_t k = 1;
        while (k < SECRET_LEN / 4 && p[off + k] == secret_byte(k, seed))
            k++;
        found += k == SECRET_LEN / 4;
    }
    return found;
}

/* A control: the same frame without the clear must leave the secret where
 * scan_stack finds it, or the test could not fail. */
__attribute__((noinline, no_sanitize("address"))) static unsigned hold_secret_uncleared(void)
{
    unsigned char buf[SECRET_LEN];
    unsigned char seed = secret_seed;
    for (size_t i = 0; i < SECRET_LEN; i++)
        buf[i] = secret_byte(i, seed);
    return reader(buf, sizeof buf);
}

__attribute__((noinline)) static void wipe_stack(void)
{
    volatile unsigned char area[SCAN_BYTES + 4096];
    for (size_t i = 0; i < sizeof area; i++)
        area[i] = 0;
}

int main(void)
{
    wipe_stack();
    unsigned h = hold_secret_uncleared();
    int control = scan_stack();
    CHECK(control > 0, "control: secret not found on the stack (h=%x): the scan cannot see it", h);

    wipe_stack();
    h = hold_secret();
    int left = scan_stack();
    CHECK(left == 0, "mk_memset_explicit's clear was removed: %d copies of the secret left (h=%x)",
          left, h);

    unsigned char b[64];
    memset(b, 1, sizeof b);
    mk_memset_explicit(b + 1, 0x1ff, 62);
    CHECK(b[0] == 1 && b[1] == 0xff && b[62] == 0xff && b[63] == 1, "fill bounds");
    printf("stack scan: control found %d, after mk_memset_explicit %d\n", control, left);
    check_finish();
}
