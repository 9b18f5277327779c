/* The memcpy/memmove family's variants, best first. */
#include "../internal.h"

const mk_variant_def mk_copy_variant_defs[1];
const size_t mk_copy_variant_count = 0;
