/* SPDX-License-Identifier: Apache-2.0 */
/* memset family, 32-byte vectors. */
#define MK_VEC_BYTES 32
#include "memset_template.h"
