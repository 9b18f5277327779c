/* The copy family's private declarations (src/copy only). */
#ifndef MEMKIT_COPY_H
#define MEMKIT_COPY_H

#include "../internal.h"

/* Copies from this size need the thresholds looked at:
 * min(rep_movsb_threshold, nt_copy_threshold), set by the resolvers. Until
 * then it is 0, which sends large copies through the (correct) slow check. */
MK_HIDDEN extern size_t mk_copy_large_from;

#define COPY_FAMILY(isa)                                                  \
    MK_HIDDEN void *mk_memmove_##isa(void *, const void *, size_t);      \
    MK_HIDDEN void *mk_memcpy_nt_##isa(void *, const void *, size_t);
COPY_FAMILY(avx512)
COPY_FAMILY(avx2)
COPY_FAMILY(sse2)
#undef COPY_FAMILY

#endif
