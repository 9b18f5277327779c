#include "memset_methods.h"

#include "memkit.h"

#include <string.h>

/* A program calls glibc's memset through its PLT slot: one indirect jump
 * through the GOT entry the dynamic linker filled with the ifunc's choice.
 * mk_memset's address, taken here, is such a PLT stub too (memkit's ifunc
 * in this executable), so glibc gets the same stub: calls to both cost one
 * indirect call plus one indirect jump, as in a program that calls them. */
__asm__(".text\n"
        ".p2align 4\n"
        ".type glibc_memset_plt, @function\n"
        "glibc_memset_plt:\n"
        "\tjmp *memset@GOTPCREL(%rip)\n"
        ".size glibc_memset_plt, .-glibc_memset_plt\n");
void *glibc_memset_plt(void *, int, size_t);
/* Through a volatile pointer: the compiler may neither inline nor fold it. */
static void *(*volatile glibc_memset)(void *, int, size_t) = glibc_memset_plt;

static memset_method table[16];
static size_t count;

const memset_method *memset_methods(size_t *n)
{
    if (!count) {
        table[count++] = (memset_method){"glibc", glibc_memset};
        table[count++] = (memset_method){"mk_memset", mk_memset};
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
