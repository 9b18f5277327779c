/* The copy family's private declarations (src/copy only). */
#ifndef MEMKIT_COPY_H
#define MEMKIT_COPY_H

#include "../internal.h"

#define COPY_FAMILY(isa)                                                  \
    MK_HIDDEN void *mk_memmove_##isa(void *, const void *, size_t);      \
    MK_HIDDEN void *mk_memcpy_nt_##isa(void *, const void *, size_t);
COPY_FAMILY(avx512)
COPY_FAMILY(avx2)
COPY_FAMILY(sse2)
#undef COPY_FAMILY

#endif
