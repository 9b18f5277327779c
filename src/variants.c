/* SPDX-License-Identifier: Apache-2.0 */
/* The variant registry: one row per ISA of isa.def, best first, each with
 * every entry point its templates produced (src/set, src/copy), so the
 * routines chosen together are listed together. */
#include "internal.h"
#include "text.h"
#include "once.h"

#define MK_ISA_ROW(isa, flags, needs_)                                                     \
    {.name = #isa, .needs = MK_NEED_##isa, .memset = mk_memset_##isa,                  \
     .memset_nt = mk_memset_nt_##isa, .zero_aligned16 = mk_zero_aligned16_##isa,       \
     .memmove = mk_memmove_##isa, .memcpy_nt = mk_memcpy_nt_##isa},
const mk_variant_row mk_variant_rows[] = {
#include "isa.def"
};
#undef MK_ISA_ROW
const size_t mk_variant_row_count = sizeof mk_variant_rows / sizeof mk_variant_rows[0];

MK_EARLY const mk_variant_row *mk_variant_named(const char *name, size_t len)
{
    for (size_t i = 0; i < mk_variant_row_count; i++) {
        if (mk_text_eq_n(name, len, mk_variant_rows[i].name))
            return &mk_variant_rows[i];
    }
    return 0;
}

MK_EARLY void (*mk_variant_fn(const mk_variant_row *row, mk_op op))(void)
{
    return op == MK_OP_MEMSET ? (void (*)(void))row->memset : (void (*)(void))row->memmove;
}

/* ---- the public list: every row for every op ---- */

static mk_variant listed[MK_OP_COUNT * sizeof mk_variant_rows / sizeof mk_variant_rows[0]];
static int listed_once;

static void list_init(void)
{
    const mk_cpu_info *cpu = mk_cpu_early();
    size_t k = 0;
    for (int op = MK_OP_MEMSET; op <= MK_OP_MEMMOVE; op++)
        for (size_t i = 0; i < mk_variant_row_count; i++) {
            const mk_variant_row *r = &mk_variant_rows[i];
            listed[k++] = (mk_variant){r->name, (mk_op)op, mk_cpu_satisfies(cpu, r->needs),
                                       mk_variant_fn(r, (mk_op)op)};
        }
}

const mk_variant *mk_variants(size_t *count)
{
    mk_once(&listed_once, list_init);
    if (count)
        *count = sizeof listed / sizeof listed[0];
    return listed;
}
