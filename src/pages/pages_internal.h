/* SPDX-License-Identifier: Apache-2.0 */
/* Page services' seams for the tests. */
#ifndef MEMKIT_PAGES_INTERNAL_H
#define MEMKIT_PAGES_INTERNAL_H

#include "../internal.h"

/* Non-zero: mk_prefault's populate mode acts as on a kernel without
 * MADV_POPULATE_WRITE (EINVAL), so its fallback runs. */
MK_HIDDEN extern int mk_prefault_test_no_populate;

#endif
