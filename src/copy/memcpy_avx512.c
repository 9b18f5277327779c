/* SPDX-License-Identifier: Apache-2.0 */
/* memmove/memcpy family, 64-byte vectors. */
#define MK_VEC_BYTES 64
#include "copy_template.h"
