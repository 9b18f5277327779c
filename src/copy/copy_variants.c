/* The memcpy/memmove family's variants, best first, and the resolvers of
 * mk_memcpy, mk_memmove and mk_memcpy_nt.  mk_memcpy is overlap-safe, so both
 * ops list the same functions: a memcpy that assumed no overlap would save
 * one compare on the >8V path only, and turn a caller's bug into corruption. */
#include "copy.h"

#define ROWS(op)                                                                 \
    {"avx512", op, MK_NEED_AVX512, (void (*)(void))mk_memmove_avx512},          \
    {"avx2", op, MK_NEED_AVX2, (void (*)(void))mk_memmove_avx2},                \
    {"sse2", op, 0, (void (*)(void))mk_memmove_sse2}
const mk_variant_def mk_copy_variant_defs[] = {ROWS(MK_OP_MEMCPY), ROWS(MK_OP_MEMMOVE)};
const size_t mk_copy_variant_count = sizeof mk_copy_variant_defs / sizeof mk_copy_variant_defs[0];
#undef ROWS

/* Same order as one op's rows above. */
static const struct {
    mk_memcpy_fn memmove, memcpy_nt;
} families[] = {
    {mk_memmove_avx512, mk_memcpy_nt_avx512},
    {mk_memmove_avx2, mk_memcpy_nt_avx2},
    {mk_memmove_sse2, mk_memcpy_nt_sse2},
};

MK_EARLY static mk_memcpy_fn resolve(mk_op op) { return (mk_memcpy_fn)mk_pick_variant(op); }

MK_EARLY static mk_memcpy_fn resolve_memcpy(void) { return resolve(MK_OP_MEMCPY); }
MK_EARLY static mk_memcpy_fn resolve_memmove(void) { return resolve(MK_OP_MEMMOVE); }
MK_EARLY static mk_memcpy_fn resolve_memcpy_nt(void)
{
    mk_memcpy_fn chosen = resolve(MK_OP_MEMCPY);
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        if (families[i].memmove == chosen)
            return families[i].memcpy_nt;
    return mk_memcpy_nt_sse2;
}

void *mk_memcpy(void *dst, const void *src, size_t n) __attribute__((ifunc("resolve_memcpy")));
void *mk_memmove(void *dst, const void *src, size_t n) __attribute__((ifunc("resolve_memmove")));
void *mk_memcpy_nt(void *dst, const void *src, size_t n) __attribute__((ifunc("resolve_memcpy_nt")));
