/* SPDX-License-Identifier: Apache-2.0 */
/* Every public routine's binding to its variant, chosen once, at load time.
 *
 * mk_memset & co. are GNU indirect functions: the dynamic loader (or, in a
 * static program, the C library's start-up code) calls the resolver once and
 * binds the symbol to the chosen variant, so a call costs exactly what an
 * ifunc-resolved libc call costs.  Resolvers run before libc is initialised,
 * so everything they reach uses raw system calls only (rawio.c).
 *
 * Each routine is defined under its hidden name (what the library's own
 * calls use, see MK_BIND_LOCALLY) with the public name as an alias: another
 * object exporting mk_memset cannot capture the library's internal calls. */
#include "internal.h"
#include "text.h"

/* The row called name, if this CPU can run it. */
MK_EARLY static const mk_variant_row *usable_named(const char *name, const mk_cpu_info *cpu)
{
    const mk_variant_row *r = mk_variant_named(name, mk_text_len(name));
    return r && mk_cpu_satisfies(cpu, r->needs) ? r : 0;
}

/* The variant forced in the configuration, else the one the CPU's strategy
 * row prefers, else the first in isa.def this CPU can run. */
MK_EARLY const mk_variant_row *mk_pick_variant_row(mk_op op)
{
    const mk_tunables *cfg = mk_config_early();
    const mk_cpu_info *cpu = mk_cpu_early();
    const char *forced = op == MK_OP_MEMSET ? cfg->force_memset
                       : op == MK_OP_MEMCPY ? cfg->force_memcpy : cfg->force_memmove;
    const char *preferred = mk_strategy_variant(cpu, op);
    const mk_variant_row *r = 0;
    if (forced[0])
        r = usable_named(forced, cpu);
    if (!r && preferred)
        r = usable_named(preferred, cpu);
    if (r)
        return r;
    for (size_t i = 0; i < mk_variant_row_count; i++)
        if (mk_cpu_satisfies(cpu, mk_variant_rows[i].needs))
            return &mk_variant_rows[i];
    return &mk_variant_rows[mk_variant_row_count - 1];   /* the baseline ISA */
}

MK_EARLY void (*mk_pick_variant(mk_op op))(void)
{
    return mk_variant_fn(mk_pick_variant_row(op), op);
}

const char *mk_selected_variant(mk_op op)
{
    return mk_pick_variant_row(op)->name;
}

/* ---- the indirect functions ---- */

MK_EARLY static mk_memset_fn resolve_memset(void) { return mk_pick_variant_row(MK_OP_MEMSET)->memset; }
MK_EARLY static mk_memset_fn resolve_memset_nt(void) { return mk_pick_variant_row(MK_OP_MEMSET)->memset_nt; }
MK_EARLY static void (*resolve_zero_aligned16(void))(void *, size_t)
{
    return mk_pick_variant_row(MK_OP_MEMSET)->zero_aligned16;
}
MK_EARLY static mk_memcpy_fn resolve_memcpy(void) { return mk_pick_variant_row(MK_OP_MEMCPY)->memmove; }
MK_EARLY static mk_memcpy_fn resolve_memmove(void) { return mk_pick_variant_row(MK_OP_MEMMOVE)->memmove; }
MK_EARLY static mk_memcpy_fn resolve_memcpy_nt(void) { return mk_pick_variant_row(MK_OP_MEMCPY)->memcpy_nt; }

/* The routine under its hidden name, and the public name as an alias. */
#define ENTRY_POINT(name, resolver)                                            \
    __typeof(name) name __attribute__((ifunc(#resolver)));                     \
    extern __typeof(name) name##_public __asm__(#name)                         \
        __attribute__((alias(MK_LOCAL_NAME(name)), visibility("default")));

ENTRY_POINT(mk_memset, resolve_memset)
ENTRY_POINT(mk_memset_nt, resolve_memset_nt)
ENTRY_POINT(mk_zero_aligned16, resolve_zero_aligned16)
ENTRY_POINT(mk_memcpy, resolve_memcpy)
ENTRY_POINT(mk_memmove, resolve_memmove)
ENTRY_POINT(mk_memcpy_nt, resolve_memcpy_nt)
