/* memset family, 32-byte vectors with AVX-512's masked stores (glibc's
 * "evex"): see isa.def for when it is preferred to 64-byte vectors. */
#define MK_VEC_BYTES 32
#define MK_EVEX 1
#include "memset_template.h"
