/* SPDX-License-Identifier: Apache-2.0 */
/* memset family, 64-byte vectors. */
#define MK_VEC_BYTES 64
#include "memset_template.h"
