/* SPDX-License-Identifier: Apache-2.0 */
/* memset family, 16-byte vectors. */
#define MK_VEC_BYTES 16
#include "memset_template.h"
