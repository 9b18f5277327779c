/* SPDX-License-Identifier: Apache-2.0 */
/* libmemkit_preload.so: memset, memcpy, memmove, bzero, mempcpy and their
 * fortified forms, backed by memkit's dispatched routines.
 *
 *   LD_PRELOAD=/path/to/libmemkit_preload.so program
 *
 * Each C name jumps to the routine held in a pointer.  The first call picks
 * the variant (the same choice as mk_memset & co.) and stores it; later calls
 * compare the pointer with each variant and take a direct jump to the one it
 * holds (an indirect jump through it, as before, left memmove 5-12% and
 * memset 4% of their speed-up over glibc on the production distributions:
 * Zen 4 predicts direct jumps without the bubble of an indirect one).  The
 * names cannot be GNU indirect functions
 * themselves: a preloaded object is relocated after the libraries it
 * interposes on, so their references would run our resolvers before our own
 * relocations are applied (ld.so warns "Relink ... for IFUNC symbol").
 *
 * Nothing here allocates, locks or recurses into itself (the library is
 * built so that it never calls memset/memcpy), so calls made before main and
 * from any thread all work.  The settings are read at the first call: from
 * libc's environment once libc has started, else from /proc/self/environ by
 * raw system calls.  Nothing runs at load time (the shim links the library's
 * archive, without its ifunc'd mk_* entry points), so a process that never
 * calls these routines pays only the loading of a small object.  To turn the
 * shim off, leave it out of LD_PRELOAD. */
#include "internal.h"
#include "record.h"

#include <stddef.h>

/* ---- the pointers, resolved on first use ---- */

typedef void *(*set_fn)(void *, int, size_t);
typedef void *(*copy_fn)(void *, const void *, size_t);

static void *first_memset(void *dst, int c, size_t n);
static void *first_memcpy(void *dst, const void *src, size_t n);
static void *first_memmove(void *dst, const void *src, size_t n);
/* read by name from the jumps below */
__attribute__((used)) static set_fn memset_impl = first_memset;
__attribute__((used)) static copy_fn memcpy_impl = first_memcpy;
__attribute__((used)) static copy_fn memmove_impl = first_memmove;

/* Racing first calls store the same value: the choice is deterministic.
 * Under `memkit record` (MEMKIT_RECORD set) the value is a counting wrapper
 * around the same routine (record.c). */
static void *first_memset(void *dst, int c, size_t n)
{
    set_fn f = mk_record_memset((set_fn)mk_pick_variant(MK_OP_MEMSET));
    __atomic_store_n(&memset_impl, f, __ATOMIC_RELAXED);
    return f(dst, c, n);
}

/* memcpy is memmove (below) through a pointer of its own, so a recording
 * can tell the two apart, and `memcpy=VARIANT` picks its variant as it does
 * mk_memcpy's. */
static void *first_memcpy(void *dst, const void *src, size_t n)
{
    copy_fn f = mk_record_memcpy((copy_fn)mk_pick_variant(MK_OP_MEMCPY));
    __atomic_store_n(&memcpy_impl, f, __ATOMIC_RELAXED);
    return f(dst, src, n);
}

static void *first_memmove(void *dst, const void *src, size_t n)
{
    copy_fn f = mk_record_memmove((copy_fn)mk_pick_variant(MK_OP_MEMMOVE));
    __atomic_store_n(&memmove_impl, f, __ATOMIC_RELAXED);
    return f(dst, src, n);
}

/* ---- the C names ---- */

void *memset(void *dst, int c, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memcpy(void *dst, const void *src, size_t n);

/* NAME loads NAME_impl and, for each variant of isa.def, jumps directly to
 * ROUTINE_<isa> if that is what it holds; else (the first call, a recording's
 * wrapper) it jumps through it.  rax and r11 carry no argument.  Each entry
 * starts a 64-byte line of its own: packed 16 bytes apart, the three shared
 * lines, and through the shim memset ran the production distributions 4% and
 * memmove 6% slower than with each entry alone (Zen 4, size-distributions
 * ws=hot,l2 with both builds as peers; an entry that jumps straight to its
 * routine is only 0.5-1.5% ahead of this chain).
 * tests/preload/entry_lines.sh checks the layout. */
#define MK_ISA_ROW(isa, flags, needs) \
    "lea " ROUTINE "_" #isa "(%rip), %r11\n\tcmp %r11, %rax\n\tje " ROUTINE "_" #isa "\n\t"
#if defined(__CET__) && (__CET__ & 1)
#define ENDBR "endbr64\n\t"   /* built with -fcf-protection: an indirect branch may land here */
#else
#define ENDBR ""
#endif
#define JUMP_HEAD(name) ".text\n.globl " name "\n.type " name ", @function\n.p2align 6\n" \
    name ":\n\t" ENDBR "mov " name "_impl(%rip), %rax\n\t"
#define JUMP_TAIL(name) "jmp *%rax\n.size " name ", . - " name "\n"

#define ROUTINE "mk_memset"
__asm__(JUMP_HEAD("memset")
#include "isa.def"
        JUMP_TAIL("memset"));
#undef ROUTINE

/* memcpy is memmove: an overlapping memcpy is the caller's bug, and with
 * memkit it stays a correct copy instead of becoming memory corruption. */
#define ROUTINE "mk_memmove"
__asm__(JUMP_HEAD("memmove")
#include "isa.def"
        JUMP_TAIL("memmove"));
__asm__(JUMP_HEAD("memcpy")
#include "isa.def"
        JUMP_TAIL("memcpy"));
#undef ROUTINE
#undef MK_ISA_ROW

void bzero(void *dst, size_t n)
{
    memset(dst, 0, n);
}

void *mempcpy(void *dst, const void *src, size_t n)
{
    return (char *)memcpy(dst, src, n) + n;
}
void *__mempcpy(void *dst, const void *src, size_t n) __attribute__((alias("mempcpy")));

/* ---- fortified entry points (_FORTIFY_SOURCE): the overflow check stays ---- */

extern void __chk_fail(void) __attribute__((noreturn));

/* glibc's own report and abort ("buffer overflow detected") on overflow. */
static inline void check_fits(size_t n, size_t dst_len)
{
    if (MK_UNLIKELY(n > dst_len))
        __chk_fail();
}

void *__memset_chk(void *dst, int c, size_t n, size_t dst_len)
{
    check_fits(n, dst_len);
    return memset(dst, c, n);
}

void *__memcpy_chk(void *dst, const void *src, size_t n, size_t dst_len)
{
    check_fits(n, dst_len);
    return memcpy(dst, src, n);
}

void *__memmove_chk(void *dst, const void *src, size_t n, size_t dst_len)
{
    check_fits(n, dst_len);
    return memmove(dst, src, n);
}

void *__mempcpy_chk(void *dst, const void *src, size_t n, size_t dst_len)
{
    check_fits(n, dst_len);
    return mempcpy(dst, src, n);
}

/* Lets a program (or `memkit`) ask whether the shim is active:
 * dlsym(RTLD_DEFAULT, "memkit_preload_active"). */
int memkit_preload_active(void)
{
    return 1;
}
