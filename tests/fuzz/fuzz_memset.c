/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: every usable memset variant and every public fill
 * routine against a byte-loop reference, at a size, offset, value and
 * placement taken from the input, inside a guarded region with canaries.
 *
 * The rep stosb and non-temporal paths only run above thresholds, so the
 * target first runs itself again with MEMKIT_TUNABLES lowering them into the
 * fuzzed size range (the library reads the tunables once, at load time). */
#include "fuzz_input.h"
#include "memkit.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_SIZE 20000
#define LOW_THRESHOLDS "rep_stosb_threshold=700:nt_threshold=3000:nt_threshold_zero=1500"

typedef void *(*memset_fn)(void *, int, size_t);

static void *explicit_wrapper(void *d, int c, size_t n) { mk_memset_explicit(d, c, n); return d; }
static void *zero16_wrapper(void *d, int c, size_t n) { (void)c; mk_zero_aligned16(d, n); return d; }

typedef struct {
    const char *name;
    memset_fn fn;
    int zero16;          /* mk_zero_aligned16: 16-aligned dst, n % 16 == 0, c == 0 */
} routine;

static routine routines[16];
static size_t nroutines;
static unsigned char *region, *shadow;   /* region: guard pages either side */
static size_t region_len;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_lower_thresholds(*argv, LOW_THRESHOLDS);
    size_t count;
    const mk_variant *v = mk_variants(&count);
    for (size_t i = 0; i < count; i++)
        if (v[i].op == MK_OP_MEMSET && v[i].usable)
            routines[nroutines++] = (routine){v[i].name, (memset_fn)v[i].fn, 0};
    routines[nroutines++] = (routine){"mk_memset", mk_memset, 0};
    routines[nroutines++] = (routine){"mk_memset_nt", mk_memset_nt, 0};
    routines[nroutines++] = (routine){"mk_memset_explicit", explicit_wrapper, 0};
    routines[nroutines++] = (routine){"mk_zero_aligned16", zero16_wrapper, 1};

    guarded g = fuzz_region(MAX_SIZE + 64, &shadow);
    region = g.lo;
    region_len = g.len;
    (void)argc;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = {data, size};
    const routine *r = &routines[fuzz_take(&in, 1) % nroutines];
    size_t n = fuzz_take(&in, 2) | (size_t)(fuzz_take(&in, 1) & 0x3f) << 16;
    n %= MAX_SIZE + 1;
    unsigned offset = fuzz_take(&in, 1) & 63;
    int c = (int)fuzz_take(&in, 4);
    int high = fuzz_take(&in, 1) & 1;
    uint8_t canary = (uint8_t)fuzz_take(&in, 1);
    if (r->zero16) {
        n &= ~(size_t)15;
        offset &= ~15u;
        c = 0;
    }
    /* Low: right after the leading guard page; high: ending within 63 bytes
     * of (or exactly at) the trailing one. */
    size_t start = high ? (region_len - n) / 64 * 64 + offset : offset;
    if (start + n > region_len)
        start -= 64;
    unsigned char *dst = region + start;

    for (size_t i = 0; i < region_len; i++)
        region[i] = shadow[i] = (unsigned char)(canary + i * 131);
    for (size_t i = 0; i < n; i++)
        shadow[start + i] = (unsigned char)c;

    void *ret = r->fn(dst, c, n);
    if (ret != dst) {
        fprintf(stderr, "%s n=%zu offset=%zu: returned %p, not dst %p\n", r->name, n, start, ret,
                (void *)dst);
        abort();
    }
    if (memcmp(region, shadow, region_len) != 0) {
        size_t i = 0;
        while (region[i] == shadow[i])
            i++;
        fprintf(stderr, "%s n=%zu c=%d dst=region+%zu: byte region+%zu is 0x%02x, want 0x%02x\n",
                r->name, n, c, start, i, region[i], shadow[i]);
        abort();
    }
    return 0;
}
