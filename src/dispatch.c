/* Picks each public routine's variant once, at load time.
 *
 * mk_memset & co. are GNU indirect functions: the dynamic loader (or, in a
 * static program, the C library's start-up code) calls the resolver once and
 * binds the symbol to the chosen variant, so a call costs exactly what an
 * ifunc-resolved libc call costs.  Resolvers run before libc is initialised,
 * so everything they reach uses raw system calls only (rawio.c). */
#include "internal.h"
#include "once.h"

MK_EARLY size_t mk_variant_def_count(void)
{
    return mk_set_variant_count + mk_copy_variant_count;
}

MK_EARLY const mk_variant_def *mk_variant_def_at(size_t i)
{
    return i < mk_set_variant_count ? &mk_set_variant_defs[i]
                                    : &mk_copy_variant_defs[i - mk_set_variant_count];
}

MK_EARLY static int name_eq(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

MK_EARLY static const mk_variant_def *pick(mk_op op)
{
    const mk_tunables *cfg = mk_config();
    const mk_cpu_info *cpu = mk_cpu_early();
    const char *forced = op == MK_OP_MEMSET ? cfg->force_memset
                       : op == MK_OP_MEMCPY ? cfg->force_memcpy : cfg->force_memmove;
    const mk_variant_def *best = 0;
    for (size_t i = 0; i < mk_variant_def_count(); i++) {
        const mk_variant_def *v = mk_variant_def_at(i);
        if (v->op != op || !mk_cpu_satisfies(cpu, v->needs))
            continue;
        if (forced[0] && name_eq(forced, v->name))
            return v;
        if (!best)
            best = v;   /* tables list the best variant first */
    }
    return best;
}

MK_EARLY void (*mk_pick_variant(mk_op op))(void)
{
    const mk_variant_def *v = pick(op);
    return v ? v->fn : 0;
}

const char *mk_selected_variant(mk_op op)
{
    const mk_variant_def *v = pick(op);
    return v ? v->name : "none";
}

/* ---- the registry ---- */

static mk_variant registry[32];
static size_t registry_count;
static int registry_once;

static void registry_init(void)
{
    const mk_cpu_info *cpu = mk_cpu_early();
    for (size_t i = 0; i < mk_variant_def_count() && registry_count < 32; i++) {
        const mk_variant_def *v = mk_variant_def_at(i);
        registry[registry_count++] =
            (mk_variant){v->name, v->op, mk_cpu_satisfies(cpu, v->needs), v->fn};
    }
}

const mk_variant *mk_variants(size_t *count)
{
    mk_once(&registry_once, registry_init);
    if (count)
        *count = registry_count;
    return registry;
}

/* ---- the indirect functions ---- */

MK_EARLY static mk_memset_fn resolve_memset(void)
{
    return (mk_memset_fn)mk_pick_variant(MK_OP_MEMSET);
}
void *mk_memset(void *dst, int c, size_t n) __attribute__((ifunc("resolve_memset")));
