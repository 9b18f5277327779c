/* SPDX-License-Identifier: Apache-2.0 */
/* memmove/memcpy family for the evex build (see simd.h): up to 64 bytes by
 * masked 32-byte accesses, 64-byte vectors above. */
#define MK_VEC_BYTES 64
#define MK_EVEX 1
#include "copy_template.h"
