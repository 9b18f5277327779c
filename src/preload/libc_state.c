/* SPDX-License-Identifier: Apache-2.0 */
/* What libc already read when it started, for the shim's start-up: its
 * environment and the cpuid leaves it keeps.  The core library declares
 * these weak (src/internal.h) and asks only where they exist: in the shim,
 * whose first call may come before libc has run (another library's ifunc
 * resolver), and for which every system call and cpuid counts. */
#include "internal.h"

#include <sys/auxv.h>
#if MEMKIT_HAVE_LIBC_CPUID
#include <sys/platform/x86.h>
#endif

extern char **environ;

/* ---- the environment, from libc ---- */

/* libc's environ is set when libc starts, before any program code; a call
 * that comes earlier (another library's ifunc resolver) finds it NULL.  Read
 * from memory, the settings cost a process no system call (the /proc reads
 * cost ~30 us at the first call in a VM). */
MK_EARLY int mk_libc_env(mk_raw_env *e)
{
    char **vars = __atomic_load_n(&environ, __ATOMIC_RELAXED);
    if (!vars)
        return -1;
    if (getauxval(AT_SECURE))
        return 0;
    *e = (mk_raw_env){.vars = vars};
    return 1;
}

/* glibc (2.33 up) keeps the cpuid leaves it read at start-up; each cpuid
 * memkit issues itself traps to the hypervisor in a VM (~4 us). */
MK_EARLY int mk_libc_cpuid(unsigned leaf, unsigned r[4])
{
#if MEMKIT_HAVE_LIBC_CPUID
    unsigned index = leaf == 1 ? CPUID_INDEX_1 : leaf == 7 ? CPUID_INDEX_7 : ~0u;
    const struct cpuid_feature *f = index != ~0u ? __x86_get_cpuid_feature_leaf(index) : 0;
    if (f && (f->cpuid_array[0] | f->cpuid_array[1] | f->cpuid_array[2] | f->cpuid_array[3])) {
        for (int i = 0; i < 4; i++)
            r[i] = f->cpuid_array[i];
        return 1;
    }
#else
    (void)leaf, (void)r;
#endif
    return 0;
}
