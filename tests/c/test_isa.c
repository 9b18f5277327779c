/* SPDX-License-Identifier: Apache-2.0 */
/* The ISA table (src/isa.def): code built for an ISA runs only where the CPU
 * has every feature its compiler flags allowed (the avx2 files are built with
 * -mbmi2: a CPU with AVX2 but no BMI2 must not run them), and the registry
 * lists one row per ISA with its whole family of entry points. */
#include "check.h"
#include "internal.h"

#include <string.h>

static mk_cpu_info everything(void)
{
    mk_cpu_info c = {0};
    c.has_sse2 = c.has_avx2 = c.has_bmi2 = 1;
    c.has_avx512f = c.has_avx512bw = c.has_avx512vl = 1;
    c.os_avx = c.os_avx512 = 1;
    return c;
}

int main(void)
{
    mk_cpu_info all = everything();
    CHECK(mk_cpu_satisfies(&all, MK_NEED_AVX2) && mk_cpu_satisfies(&all, MK_NEED_AVX512),
          "a CPU with every feature runs every ISA");

    /* Each feature on its own: whoever was compiled with it must need it. */
    static const struct { const char *what; size_t off; int avx2, avx512; } drop[] = {
        {"BMI2", offsetof(mk_cpu_info, has_bmi2), 1, 1},
        {"AVX2", offsetof(mk_cpu_info, has_avx2), 1, 1},
        {"AVX-512F", offsetof(mk_cpu_info, has_avx512f), 0, 1},
        {"AVX-512BW", offsetof(mk_cpu_info, has_avx512bw), 0, 1},
        {"AVX-512VL", offsetof(mk_cpu_info, has_avx512vl), 0, 1},
        {"YMM state", offsetof(mk_cpu_info, os_avx), 1, 0},
        {"ZMM state", offsetof(mk_cpu_info, os_avx512), 0, 1},
    };
    for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++) {
        mk_cpu_info c = all;
        *(int *)((char *)&c + drop[i].off) = 0;
        CHECK(mk_cpu_satisfies(&c, MK_NEED_AVX2) != drop[i].avx2,
              "avx2 code without %s: satisfied=%d", drop[i].what, mk_cpu_satisfies(&c, MK_NEED_AVX2));
        CHECK(mk_cpu_satisfies(&c, MK_NEED_AVX512) != drop[i].avx512,
              "avx512 code without %s: satisfied=%d", drop[i].what,
              mk_cpu_satisfies(&c, MK_NEED_AVX512));
    }

    /* The public list is every registry row for every op, and the routine
     * a row lists for an op is the one dispatched when that row is chosen. */
    size_t count = 0;
    const mk_variant *v = mk_variants(&count);
    size_t rows[3] = {0};
    for (size_t i = 0; i < count; i++) {
        CHECK(v[i].op <= MK_OP_MEMMOVE, "op %d", (int)v[i].op);
        rows[v[i].op]++;
        const mk_variant_row *r = mk_variant_named(v[i].name, strlen(v[i].name));
        CHECK(r && v[i].usable == mk_cpu_satisfies(mk_cpu(), r->needs) &&
                  v[i].fn == mk_variant_fn(r, v[i].op),
              "%s: not its registry row", v[i].name);
    }
    CHECK(rows[0] == rows[1] && rows[1] == rows[2] && rows[0] >= 3,
          "ops list %zu/%zu/%zu variants", rows[0], rows[1], rows[2]);
    for (int op = MK_OP_MEMSET; op <= MK_OP_MEMMOVE; op++) {
        void (*picked)(void) = mk_pick_variant((mk_op)op);
        int found = 0;
        for (size_t i = 0; i < count; i++)
            found += v[i].op == (mk_op)op && v[i].fn == picked && v[i].usable &&
                     strcmp(v[i].name, mk_selected_variant((mk_op)op)) == 0;
        CHECK(found == 1, "op %d: the dispatched routine is listed %d times", op, found);
    }
    check_finish();
}
