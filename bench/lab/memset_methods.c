#include "memset_methods.h"

#include "memkit.h"

#include <string.h>

/* A program calls memset (or mk_memset) through its PLT slot: one indirect
 * jump through the GOT entry that the loader filled with the ifunc's
 * choice.  Both are called here through identical stubs of that shape, so
 * neither pays for a call sequence the other does not (taking mk_memset's
 * address directly would give the linker's canonical PLT entry, with its
 * own placement in .plt, and glibc's address would skip the PLT).
 * Through volatile pointers: the compiler may neither inline nor fold them. */
#define GOT_STUB(stub, target)                                              \
    __asm__(".text\n.p2align 5\n.type " #stub ", @function\n" #stub ":\n"  \
            "\tjmp *" #target "@GOTPCREL(%rip)\n.size " #stub ", .-" #stub "\n"); \
    void *stub(void *, int, size_t);
GOT_STUB(glibc_memset_stub, memset)
GOT_STUB(mk_memset_stub, mk_memset)
static void *(*volatile glibc_memset)(void *, int, size_t) = glibc_memset_stub;
static void *(*volatile memkit_memset)(void *, int, size_t) = mk_memset_stub;

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
