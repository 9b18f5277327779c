/* SPDX-License-Identifier: Apache-2.0 */
/* memmove/memcpy family, 32-byte vectors. */
#define MK_VEC_BYTES 32
#include "copy_template.h"
