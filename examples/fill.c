/* SPDX-License-Identifier: Apache-2.0 */
/* A program that links memkit: fills, zeroes and clears a buffer, checks
 * the result, and says which variant the library picked for this CPU and
 * from which size it fills with non-temporal stores (a tunable, read by
 * name: mk_tunables is opaque). */
#include <memkit.h>

#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    size_t n = 1 << 20;
    unsigned char *buf = aligned_alloc(64, n);
    if (!buf)
        return 1;
    mk_memset(buf, 0xab, n);
    mk_zero_aligned16(buf, 4096);
    mk_memset_explicit(buf + 4096, 0, 64);   /* e.g. a key: never optimised away */
    size_t nt = 0;
    int ok = buf[0] == 0 && buf[4095] == 0 && buf[4096] == 0 && buf[4159] == 0 &&
             buf[4160] == 0xab && buf[n - 1] == 0xab &&
             mk_tunables_number(mk_tunables_get(), "nt_threshold", &nt) == 0;
    printf("memkit %s (header %s), memset variant %s (non-temporal from %zu bytes), preload %s: %s\n",
           mk_version(), MEMKIT_VERSION, mk_selected_variant(MK_OP_MEMSET), nt,
           memkit_preload_active() ? "active" : "not active", ok ? "ok" : "WRONG");
    free(buf);
    return ok ? 0 : 1;
}
