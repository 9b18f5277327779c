/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: every usable memcpy/memmove variant, the public copy
 * routines and every usable copier of the lab (lab_copiers()), against the C
 * library's memmove on a shadow copy, with size, source and destination
 * (overlapping or not) taken from the input, inside one guarded region
 * filled with canaries.  A copier
 * must copy when its contract holds and otherwise return EINVAL with the
 * region untouched.
 *
 * The rep movsb and non-temporal paths only run above thresholds, so the
 * target first runs itself again with MEMKIT_TUNABLES lowering them into the
 * fuzzed size range (the library reads the tunables once, at load time). */
#include "copy_methods.h"
#include "fuzz_input.h"
#include "memkit.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_SIZE 20000
#define LOW_THRESHOLDS "rep_movsb_threshold=700:rep_movsb_stop=6000:rep_movsb_align=1:nt_copy_threshold=3000"

typedef void *(*copy_fn)(void *, const void *, size_t);

typedef struct {
    const char *name;
    copy_fn fn;                /* a routine, or */
    const mk_copier *copier;   /* a copier (copy_in) */
} routine;

static routine routines[32];
static size_t nroutines;
static unsigned char *region, *shadow;   /* region: guard pages either side */
static size_t region_len;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_lower_thresholds(*argv, LOW_THRESHOLDS);
    size_t count;
    const mk_variant *v = mk_variants(&count);
    for (size_t i = 0; i < count; i++)
        if ((v[i].op == MK_OP_MEMCPY || v[i].op == MK_OP_MEMMOVE) && v[i].usable)
            routines[nroutines++] = (routine){v[i].name, (copy_fn)v[i].fn, NULL};
    routines[nroutines++] = (routine){"mk_memcpy", mk_memcpy, NULL};
    routines[nroutines++] = (routine){"mk_memmove", mk_memmove, NULL};
    routines[nroutines++] = (routine){"mk_memcpy_nt", mk_memcpy_nt, NULL};
    const mk_copier *c = lab_copiers(&count);
    for (size_t i = 0; i < count && nroutines < 32; i++)
        if (c[i].usable)
            routines[nroutines++] = (routine){c[i].name, NULL, &c[i]};

    guarded g = fuzz_region(2 * MAX_SIZE + 256, &shadow);
    region = g.lo;
    region_len = g.len;
    (void)argc;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = {data, size};
    const routine *r = &routines[fuzz_take(&in, 1) % nroutines];
    size_t n = (fuzz_take(&in, 2) | (size_t)(fuzz_take(&in, 1) & 0x3f) << 16) % (MAX_SIZE + 1);
    /* anywhere in the region, so anything from far apart to full overlap */
    size_t src = fuzz_take(&in, 3) % (region_len - n + 1);
    size_t dst = fuzz_take(&in, 3) % (region_len - n + 1);
    uint8_t canary = (uint8_t)fuzz_take(&in, 1);

    for (size_t i = 0; i < region_len; i++)
        region[i] = shadow[i] = (unsigned char)(canary + i * 131 + (i >> 8));
    unsigned char *d = region + dst, *s = region + src;

    if (r->copier) {
        size_t a = r->copier->align;
        int keeps = ((dst | src | n) & (a - 1)) == 0 && (dst + n <= src || src + n <= dst);
        if (keeps)
            memmove(shadow + dst, shadow + src, n);
        int rc = r->copier->copy_in(d, s, n);
        if (rc != (keeps ? 0 : EINVAL)) {
            fprintf(stderr, "%s n=%zu dst=%zu src=%zu: rc=%d\n", r->name, n, dst, src, rc);
            abort();
        }
    } else {
        memmove(shadow + dst, shadow + src, n);
        void *ret = r->fn(d, s, n);
        if (ret != d) {
            fprintf(stderr, "%s n=%zu dst=%zu src=%zu: returned %p, not dst %p\n", r->name, n,
                    dst, src, ret, (void *)d);
            abort();
        }
    }
    if (memcmp(region, shadow, region_len) != 0) {
        size_t i = 0;
        while (region[i] == shadow[i])
            i++;
        fprintf(stderr, "%s n=%zu dst=region+%zu src=region+%zu: byte region+%zu is 0x%02x, want 0x%02x\n",
                r->name, n, dst, src, i, region[i], shadow[i]);
        abort();
    }
    return 0;
}
