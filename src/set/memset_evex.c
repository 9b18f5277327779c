/* SPDX-License-Identifier: Apache-2.0 */
/* memset family for the evex build (see simd.h): 64-byte vectors, with
 * four masked 32-byte stores for n <= 128. */
#define MK_VEC_BYTES 64
#define MK_EVEX 1
#include "memset_template.h"
