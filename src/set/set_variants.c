/* The memset family's variants, best first, and the resolvers of the
 * routines that follow memset's choice (non-temporal fill, aligned zero). */
#include "../internal.h"

#define SET_FAMILY(isa) \
    MK_HIDDEN void *mk_memset_##isa(void *, int, size_t); \
    MK_HIDDEN void *mk_memset_nt_##isa(void *, int, size_t); \
    MK_HIDDEN void mk_zero_aligned16_##isa(void *, size_t);
SET_FAMILY(avx512)
SET_FAMILY(avx2)
SET_FAMILY(sse2)

#define ROW(isa, needs) {#isa, MK_OP_MEMSET, needs, (void (*)(void))mk_memset_##isa}
const mk_variant_def mk_set_variant_defs[] = {
    ROW(avx512, MK_NEED_AVX512),
    ROW(avx2, MK_NEED_AVX2),
    ROW(sse2, 0),
};
const size_t mk_set_variant_count = sizeof mk_set_variant_defs / sizeof mk_set_variant_defs[0];

/* Same order as mk_set_variant_defs. */
static const struct {
    mk_memset_fn memset_nt;
    void (*zero_aligned16)(void *, size_t);
} companions[] = {
    {mk_memset_nt_avx512, mk_zero_aligned16_avx512},
    {mk_memset_nt_avx2, mk_zero_aligned16_avx2},
    {mk_memset_nt_sse2, mk_zero_aligned16_sse2},
};

MK_EARLY static size_t chosen_index(void)
{
    void (*fn)(void) = mk_pick_variant(MK_OP_MEMSET);
    for (size_t i = 0; i < mk_set_variant_count; i++)
        if (mk_set_variant_defs[i].fn == fn)
            return i;
    return mk_set_variant_count - 1;
}

MK_EARLY static mk_memset_fn resolve_memset_nt(void) { return companions[chosen_index()].memset_nt; }
MK_EARLY static void (*resolve_zero_aligned16(void))(void *, size_t)
{
    return companions[chosen_index()].zero_aligned16;
}

void *mk_memset_nt(void *dst, int c, size_t n) __attribute__((ifunc("resolve_memset_nt")));
void mk_zero_aligned16(void *dst, size_t n) __attribute__((ifunc("resolve_zero_aligned16")));

void mk_memset_explicit(void *dst, int c, size_t n)
{
    mk_memset(dst, c, n);
    /* The compiler must assume the asm reads all of memory through dst, so
     * the stores above cannot be removed as dead (C23 memset_explicit). */
    __asm__ volatile("" : : "r"(dst) : "memory");
}
