/* SPDX-License-Identifier: Apache-2.0 */
#include "memset_methods.h"

#include "memkit.h"

#include <string.h>

/* Both are called at the address their ifunc chose (in a PIE, taking the
 * address reads the resolved GOT entry), as size-distributions calls them.
 * Not through a PLT-like `jmp *GOT` stub: through one, byte-identical copies
 * of the same routine placed at different addresses ran 1-64 B calls up to
 * 27% apart on Zen 4 (branch-target-buffer conflicts), so the stub measured
 * where the linker put the code, not the routine.  Through volatile
 * pointers: the compiler may neither inline nor fold them. */
static void *(*volatile glibc_memset)(void *, int, size_t) = memset;
static void *(*volatile memkit_memset)(void *, int, size_t) = mk_memset;

static memset_method table[16];
static size_t count;

const memset_method *memset_methods(size_t *n)
{
    if (!count) {
        table[count++] = (memset_method){"glibc", glibc_memset};
        table[count++] = (memset_method){"mk_memset", memkit_memset};
        size_t nv;
        const mk_variant *v = mk_variants(&nv);
        for (size_t i = 0; i < nv && count < 15; i++)
            if (v[i].op == MK_OP_MEMSET && v[i].usable)
                table[count++] = (memset_method){v[i].name, (memset_method_fn)v[i].fn};
        table[count++] = (memset_method){"old_nt", baseline_old_nt_memset};
    }
    *n = count;
    return table;
}

int memset_method_index(const char *name)
{
    size_t n;
    const memset_method *m = memset_methods(&n);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(m[i].name, name))
            return (int)i;
    return -1;
}
