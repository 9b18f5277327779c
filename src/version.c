/* SPDX-License-Identifier: Apache-2.0 */
/* What the library is: its version and the commit it was built from. */
#include "internal.h"

#ifndef MK_GIT_DESCRIBE
#define MK_GIT_DESCRIBE "unknown"
#endif

const char *mk_version(void)
{
    return MEMKIT_VERSION " (commit " MK_GIT_DESCRIBE ")";
}

/* The preload library links these same objects and defines the strong
 * memkit_preload_active that answers 1; everywhere else this one answers. */
__attribute__((weak)) int memkit_preload_active(void)
{
    return 0;
}
