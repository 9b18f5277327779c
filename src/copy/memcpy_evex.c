/* SPDX-License-Identifier: Apache-2.0 */
/* memmove/memcpy family for the evex build (see simd.h): 32-byte vectors
 * with AVX-512's masked loads and stores. */
#define MK_VEC_BYTES 32
#define MK_EVEX 1
#include "copy_template.h"
