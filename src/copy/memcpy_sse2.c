/* SPDX-License-Identifier: Apache-2.0 */
/* memmove/memcpy family, 16-byte vectors. */
#define MK_VEC_BYTES 16
#include "copy_template.h"
