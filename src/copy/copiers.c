/* The copiers: every copy method of the lab behind one interface (see
 * memkit.h for the contract), one row each. */
#include "copiers.h"
#include "../once.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

/* ---- the unaligned methods ---- */

/* The C library's memcpy, found at first use: a direct call would make the
 * library call memcpy, which the preload shim replaces (it would recurse,
 * and the "libc" row would measure memkit). RTLD_NEXT skips this object. */
typedef void *(*copy_fn)(void *, const void *, size_t);
static copy_fn libc_memcpy(void)
{
    static copy_fn fn;
    copy_fn f = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);
    if (!f) {
        f = (copy_fn)dlsym(RTLD_NEXT, "memcpy");
        if (!f)
            f = (copy_fn)dlsym(RTLD_DEFAULT, "memcpy");
        if (!f)
            f = mk_memcpy;
        __atomic_store_n(&fn, f, __ATOMIC_RELEASE);
    }
    return f;
}

static int copy_libc(void *dst, const void *src, size_t n)
{
    if (!copier_accepts(dst, src, n, 1))
        return EINVAL;
    libc_memcpy()(dst, src, n);
    return 0;
}

static int copy_memkit(void *dst, const void *src, size_t n)
{
    if (!copier_accepts(dst, src, n, 1))
        return EINVAL;
    mk_memcpy(dst, src, n);
    return 0;
}

static int copy_memkit_nt(void *dst, const void *src, size_t n)
{
    if (!copier_accepts(dst, src, n, 1))
        return EINVAL;
    mk_memcpy_nt(dst, src, n);
    return 0;
}

/* The seed's Method 1: nothing but the instruction. */
static int copy_rep_movsb(void *dst, const void *src, size_t n)
{
    if (!copier_accepts(dst, src, n, 1))
        return EINVAL;
    __asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
    return 0;
}

/* ---- memory ---- */

/* Aligned to max(align, 64), n rounded up to align: one allocator per
 * alignment in use, so that alloc keeps the seed's one-argument form. */
static void *alloc_aligned(size_t n, size_t align)
{
    size_t a = align < 64 ? 64 : align;
    if (n > SIZE_MAX - a)
        return NULL;
    size_t len = (n + align - 1) & ~(align - 1);
    void *p = NULL;
    return posix_memalign(&p, a, len ? len : a) == 0 ? p : NULL;
}

static void free_aligned(void *p, size_t n)
{
    (void)n;
    free(p);
}

#define ALLOC_FOR(align) \
    static void *alloc_##align(size_t n) { return alloc_aligned(n, align); }
ALLOC_FOR(1)
ALLOC_FOR(32)
ALLOC_FOR(64)
ALLOC_FOR(128)
ALLOC_FOR(256)

/* ---- the table ---- */

#define ROW(name, desc, align, fn, needs) \
    {name, desc, align, needs, alloc_##align, free_aligned, fn, fn}
#define AVX(name, align, desc) ROW(#name, desc, align, mk_copier_##name, MK_NEED_AVX2)
static const struct {
    const char *name, *description;
    size_t align;
    unsigned needs;
    void *(*alloc)(size_t);
    void (*free)(void *, size_t);
    int (*copy_in)(void *, const void *, size_t), (*copy_out)(void *, const void *, size_t);
} rows[] = {
    ROW("libc", "the C library's memcpy", 1, copy_libc, 0),
    ROW("memkit", "mk_memcpy", 1, copy_memkit, 0),
    ROW("memkit_nt", "mk_memcpy_nt: non-temporal stores above 8 vectors", 1, copy_memkit_nt, 0),
    ROW("rep_movsb", "rep movsb alone", 1, copy_rep_movsb, 0),
    AVX(avx_aligned, 32, "aligned 32-byte loads and stores"),
    AVX(avx_aligned_unroll4, 128, "avx_aligned, 4 vectors per iteration"),
    AVX(avx_stream, 32, "streaming loads and non-temporal stores, sfence"),
    AVX(avx_stream_unroll4, 128, "avx_stream, 4 vectors per iteration"),
    AVX(avx_stream_prefetch, 64, "non-temporal stores, the next line prefetched"),
    AVX(avx_stream_prefetch_unroll4, 256, "avx_stream_prefetch, 4 lines per iteration"),
};
#define NROWS (sizeof rows / sizeof rows[0])

static mk_copier table[NROWS];
static int table_once;

static void table_init(void)
{
    const mk_cpu_info *cpu = mk_cpu();
    for (size_t i = 0; i < NROWS; i++)
        table[i] = (mk_copier){rows[i].name, rows[i].description, rows[i].align,
                               mk_cpu_satisfies(cpu, rows[i].needs), rows[i].alloc,
                               rows[i].free, rows[i].copy_in, rows[i].copy_out};
}

const mk_copier *mk_copiers(size_t *count)
{
    mk_once(&table_once, table_init);
    if (count)
        *count = NROWS;
    return table;
}

const mk_copier *mk_copier_find(const char *name)
{
    size_t n;
    const mk_copier *c = mk_copiers(&n);
    for (size_t i = 0; name && i < n; i++)
        if (strcmp(c[i].name, name) == 0)
            return &c[i];
    return NULL;
}
