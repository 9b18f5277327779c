/* memmove/memcpy family, 32-byte vectors with AVX-512's masked loads and
 * stores (glibc's "evex"): see isa.def for when it is preferred. */
#define MK_VEC_BYTES 32
#define MK_EVEX 1
#include "copy_template.h"
