/* SPDX-License-Identifier: Apache-2.0 */
/* CPU detection: cpuid for vendor, family/model, the ISA flags memkit
 * dispatches on and the cache sizes; microcode from /proc/cpuinfo. */
#include "internal.h"
#include "once.h"

#include <cpuid.h>

static mk_cpu_info cpu_info MK_FIRST_CALL_DATA;
static unsigned max_basic_leaf MK_FIRST_CALL_DATA;   /* cpuid leaf 0's */
static int cpu_once MK_FIRST_CALL_DATA;

/* In a VM each cpuid traps to the hypervisor (3.6-5.7 us each on the EPYC
 * VMs, the first in a process ~7 us), paid by every process at its first
 * call: the C library's copy where the preload shim finds one. */
MK_EARLY static void cpuid(unsigned leaf, unsigned sub, unsigned r[4])
{
    if (sub == 0 && mk_libc_cpuid && mk_libc_cpuid(leaf, r))
        return;
    __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
}

MK_EARLY static void copy_regs(char *dst, const unsigned *regs, int n)
{
    for (int i = 0; i < n * 4; i++)
        dst[i] = (char)(regs[i / 4] >> (8 * (i % 4)));
}

/* Leaf 4 (Intel) and 0x8000001D (AMD) describe one cache per subleaf, in
 * the same layout. */
MK_EARLY static size_t cache_bytes(const unsigned r[4])
{
    size_t ways = ((r[1] >> 22) & 0x3ff) + 1;
    size_t parts = ((r[1] >> 12) & 0x3ff) + 1;
    size_t line = (r[1] & 0xfff) + 1;
    size_t sets = (size_t)r[2] + 1;
    return ways * parts * line * sets;
}

/* Every cache of the leaf (the L1d and the line size too). */
MK_EARLY static void read_cache_leaf(mk_cpu_info *c, unsigned leaf)
{
    for (unsigned i = 0; i < 16; i++) {
        unsigned r[4];
        cpuid(leaf, i, r);
        unsigned type = r[0] & 0x1f;
        if (type == 0)
            break;
        if (type == 2) /* instruction cache */
            continue;
        unsigned level = (r[0] >> 5) & 7;
        if (level == 1) c->l1d_bytes = cache_bytes(r), c->line_bytes = (r[1] & 0xfff) + 1;
        if (level == 2) c->l2_bytes = cache_bytes(r);
        if (level == 3) c->l3_bytes = cache_bytes(r);
    }
}

/* The L2 and L3 only, from subleaves 2 and 3 where the CPU numbers its
 * caches L1d, L1i, L2, L3 (every Zen and every Intel core since Nehalem);
 * returns 0 where it does not. */
MK_EARLY static int read_l2_l3(mk_cpu_info *c, unsigned leaf)
{
    unsigned r2[4], r3[4];
    cpuid(leaf, 2, r2);
    cpuid(leaf, 3, r3);
    enum { UNIFIED = 3 };   /* cache type field: 1 data, 2 instruction, 3 unified */
    if ((r2[0] & 0x1f) != UNIFIED || (r3[0] & 0x1f) != UNIFIED)
        return 0;
    if (((r2[0] >> 5) & 7) != 2 || ((r3[0] >> 5) & 7) != 3)
        return 0;
    c->l2_bytes = cache_bytes(r2);
    c->l3_bytes = cache_bytes(r3);
    return 1;
}

MK_EARLY static void read_caches(mk_cpu_info *c, int amd);

MK_EARLY static int is_amd(const mk_cpu_info *c)
{
    return c->vendor[0] == 'A';   /* "AuthenticAMD" */
}

/* The dispatch reads only what it decides on (the vendor, family/model, ISA
 * flags: three cpuid); the L2/L3 come at the first call large enough to
 * need them (mk_config). */
MK_EARLY static void detect(void)
{
    mk_cpu_info *c = &cpu_info;
    unsigned r[4];

    cpuid(0, 0, r);
    unsigned max_leaf = max_basic_leaf = r[0];
    unsigned vendor_regs[3] = {r[1], r[3], r[2]};
    copy_regs(c->vendor, vendor_regs, 3);
    c->vendor[12] = '\0';

    cpuid(1, 0, r);
    unsigned base_family = (r[0] >> 8) & 0xf, base_model = (r[0] >> 4) & 0xf;
    c->family = base_family == 0xf ? base_family + ((r[0] >> 20) & 0xff) : base_family;
    c->model = (base_family == 0x6 || base_family == 0xf)
                   ? (((r[0] >> 16) & 0xf) << 4) + base_model : base_model;
    c->stepping = r[0] & 0xf;
    c->has_sse2 = (r[3] >> 26) & 1;
    int osxsave = (r[2] >> 27) & 1, avx = (r[2] >> 28) & 1;

    if (osxsave && avx) {
        unsigned lo, hi;
        __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        c->os_avx = (lo & 0x6) == 0x6;
        c->os_avx512 = c->os_avx && (lo & 0xe0) == 0xe0;
    }
    if (max_leaf >= 7) {
        cpuid(7, 0, r);
        c->has_avx2 = (r[1] >> 5) & 1;
        c->has_bmi2 = (r[1] >> 8) & 1;
        c->has_erms = (r[1] >> 9) & 1;
        c->has_avx512f = (r[1] >> 16) & 1;
        c->has_avx512bw = (r[1] >> 30) & 1;
        c->has_avx512vl = (r[1] >> 31) & 1;
        c->has_fsrm = (r[3] >> 4) & 1;
        /* AMX-TILE: only Xeons since Sapphire Rapids have it, so it names
         * them where a hypervisor reports another model (0xa7, Rocket Lake's,
         * on a KVM guest of a Sapphire Rapids host). */
        c->has_amx = (r[3] >> 24) & 1;
    }
}

static int caches_once;

MK_EARLY static void read_l2_l3_once(void)
{
    mk_cpu_info *c = &cpu_info;
    int amd = is_amd(c);
    /* Zen (family 0x17 up) always has the 0x8000001D cache leaf. */
    if (amd && c->family >= 0x17 && read_l2_l3(c, 0x8000001Du))
        return;
    if (!amd && max_basic_leaf >= 4 && read_l2_l3(c, 4))
        return;
    read_caches(c, amd);
}

MK_EARLY void mk_cpu_read_caches(void)
{
    mk_cpu_early();
    mk_once(&caches_once, read_l2_l3_once);
}

/* The brand string, and every cache with the L1d and the line size: what
 * the dispatch does not need, read once by mk_cpu(). */
MK_EARLY static void read_caches(mk_cpu_info *c, int amd)
{
    unsigned r[4];
    cpuid(0x80000000u, 0, r);
    unsigned max_ext = r[0];
    if (amd) {
        int topo_ext = 0;
        if (max_ext >= 0x80000001u) {
            cpuid(0x80000001u, 0, r);
            topo_ext = (r[2] >> 22) & 1;
        }
        if (topo_ext && max_ext >= 0x8000001Du)
            read_cache_leaf(c, 0x8000001Du);
        else if (max_ext >= 0x80000006u) {  /* older AMD: legacy leaves */
            cpuid(0x80000005u, 0, r);
            c->l1d_bytes = (size_t)(r[2] >> 24) << 10;
            c->line_bytes = r[2] & 0xff;
            cpuid(0x80000006u, 0, r);
            c->l2_bytes = (size_t)(r[2] >> 16) << 10;
            c->l3_bytes = (size_t)(r[3] >> 18) << 19;
        }
    } else if (max_basic_leaf >= 4) {
        read_cache_leaf(c, 4);
    }
    if (c->line_bytes == 0)
        c->line_bytes = 64;
}

MK_EARLY const mk_cpu_info *mk_cpu_early(void)
{
    mk_once(&cpu_once, detect);
    return &cpu_info;
}

MK_EARLY unsigned mk_cpu_features(const mk_cpu_info *c)
{
    return (c->has_sse2 ? MK_FEAT_SSE2 : 0) | (c->has_avx2 ? MK_FEAT_AVX2 : 0) |
           (c->has_bmi2 ? MK_FEAT_BMI2 : 0) | (c->has_avx512f ? MK_FEAT_AVX512F : 0) |
           (c->has_avx512bw ? MK_FEAT_AVX512BW : 0) | (c->has_avx512vl ? MK_FEAT_AVX512VL : 0) |
           (c->os_avx ? MK_FEAT_OS_AVX : 0) | (c->os_avx512 ? MK_FEAT_OS_AVX512 : 0);
}

MK_EARLY int mk_cpu_satisfies(const mk_cpu_info *c, unsigned needs)
{
    return (mk_cpu_features(c) & needs) == needs;
}

static unsigned parse_microcode(void)
{
    static char text[16384];   /* the first CPU's block is enough */
    if (mk_raw_read_file("/proc/cpuinfo", text, sizeof text) <= 0)
        return 0;
    for (const char *p = text; *p; p++) {
        if ((p == text || p[-1] == '\n') && __builtin_strncmp(p, "microcode", 9) == 0) {
            while (*p && *p != ':' && *p != '\n')
                p++;
            if (*p != ':')
                return 0;
            p++;
            while (*p == ' ' || *p == '\t')
                p++;
            unsigned v = 0;
            int base = 10;
            if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
                base = 16, p += 2;
            for (;; p++) {
                int d = (*p >= '0' && *p <= '9') ? *p - '0'
                      : (base == 16 && *p >= 'a' && *p <= 'f') ? *p - 'a' + 10
                      : (base == 16 && *p >= 'A' && *p <= 'F') ? *p - 'A' + 10 : -1;
                if (d < 0)
                    return v;
                v = v * (unsigned)base + (unsigned)d;
            }
        }
    }
    return 0;
}

static void read_brand(mk_cpu_info *c)
{
    unsigned r[4];
    cpuid(0x80000000u, 0, r);
    if (r[0] < 0x80000004u)
        return;
    unsigned brand[12];
    for (unsigned i = 0; i < 3; i++)
        cpuid(0x80000002u + i, 0, brand + 4 * i);
    copy_regs(c->brand, brand, 12);
    c->brand[48] = '\0';
    int s = 0;                      /* trim leading and trailing blanks */
    while (c->brand[s] == ' ')
        s++;
    int d = 0;
    while (c->brand[s])
        c->brand[d++] = c->brand[s++];
    while (d > 0 && c->brand[d - 1] == ' ')
        d--;
    c->brand[d] = '\0';
}

static int details_once;
static void read_details(void)
{
    mk_cpu_read_caches();
    read_brand(&cpu_info);
    if (cpu_info.l1d_bytes == 0)
        read_caches(&cpu_info, is_amd(&cpu_info));
    cpu_info.microcode = parse_microcode();
}

const mk_cpu_info *mk_cpu(void)
{
    mk_cpu_early();
    mk_once(&details_once, read_details);
    return &cpu_info;
}
