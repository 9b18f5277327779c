/* SPDX-License-Identifier: Apache-2.0 */
/* The strategy per microarchitecture: every choice that depends on the CPU
 * (the rep stosb / rep movsb windows and the alignment rep movsb needs, the
 * non-temporal thresholds for zero fills, non-zero fills and copies, the
 * small-size method) in one table keyed by vendor and family/model ranges.
 * The first matching row wins; the last matches every CPU.  A row is values
 * and a one-line why; docs/strategy.md has the measurements behind it.  A
 * measured row names its evidence file (data/evidence/<row>.json,
 * docs/evidence.md), from which tests/python/test_evidence.py re-derives its
 * defaults; a row without one is unmeasured, and memkit says so on a CPU that
 * runs it.  A row gives every per-CPU tunable (PER_CPU in memkit_tunables.def)
 * its default, T(name) = rule, and each function its variant; a profile or
 * MEMKIT_TUNABLES overrides them.  `memkit env --strategies` prints the
 * table (docs/strategy.md holds that output). */
#include "internal.h"
#include "text.h"
#include "once.h"

/* A default: a fixed size, or a fraction of a cache level, or a multiple of
 * the widest vector the dispatched variants use (glibc's rep movsb rule).
 * OF_NONE: the row sets none (test_strategy checks that every row sets
 * each per-CPU tunable, and no other). */
typedef enum { OF_NONE, OF_BYTES, OF_L2, OF_L3, OF_VEC16 } rule_base;
typedef struct {
    rule_base of;
    size_t    num, den;   /* value = base * num / den (OF_BYTES: num) */
} rule;

#define BYTES(n) {OF_BYTES, (n), 1}
#define NEVER BYTES(SIZE_MAX)
#define L2(num, den) {OF_L2, (num), (den)}
#define L3(num, den) {OF_L3, (num), (den)}
#define PER_VEC16(n) {OF_VEC16, (n), 1}   /* n bytes per 16 bytes of vector */
#define KIB(n) ((size_t)(n) << 10)
#define T(name) .sets[MK_T_##name]

typedef struct { unsigned lo, hi; } range;
enum { MAX_RANGES = 4 };

typedef struct {
    mk_strategy_info info;          /* name, matched, small, evidence */
    const char *vendor;             /* cpuid vendor string; NULL: any */
    range       family;
    range       models[MAX_RANGES]; /* {0, 0} ends the list; none: any model */
    int         needs_erms, needs_fsrm;
    int         needs_amx;          /* AMX-TILE: an AMX Xeon whatever model number the
                                       hypervisor reports */
    rule        sets[MK_TUNABLE_COUNT]; /* the per-CPU tunables' defaults, T(name) = ... */
    const char *variant[MK_OP_COUNT]; /* per mk_op (memset, memcpy, memmove): the routines'
                                       ISA (isa.def) when the CPU can run it; NULL: the
                                       first it can run */
    const char *evidence_file;      /* what `memkit tune` measured, in the repository
                                       (docs/evidence.md); NULL: the row is unmeasured */
} row;

#define AMD "AuthenticAMD"
#define INTEL "GenuineIntel"
#define ALL(v) {(v), (v), (v)}   /* one variant for memset, memcpy and memmove */
#define ANY_MODEL {{0, 0}}
#define ALL_MODELS {{0, 255}}
#define SMALL_MASKED "AVX-512: n <= 2V by masked loads/stores, masks without branches; " \
                     "else overlapping-store ladders"
#define SMALL_EVEX "evex (AVX-512, small calls whose data is cold): copies n <= 64 by two masked " \
                   "32-byte vectors, memset n <= 128 by four masked 32-byte stores, none reaching past " \
                   "[d, d+n) from 32 B up; above, 64-byte overlapping-store ladders and loops"

static const row table[] = {
    {.info = {"amd-zen5", "AMD family 26 (Zen 5), every model", SMALL_EVEX,
      "docs/strategy.md \"Zen 5\": rep stosb from 8 KiB, rep movsb from 32 KiB at any offset"},
     .vendor = AMD, .family = {26, 26}, .models = ALL_MODELS,
     .needs_erms = 1, .needs_fsrm = 0,
     T(rep_stosb_threshold) = BYTES(KIB(8)),
     T(rep_movsb_threshold) = BYTES(KIB(32)), T(rep_movsb_stop) = NEVER,
     T(rep_movsb_align) = BYTES(1),
     T(nt_threshold_zero) = L3(1, 1), T(nt_threshold) = L3(5, 4), T(nt_copy_threshold) = L3(1, 2),
     .variant = ALL("evex"), .evidence_file = "data/evidence/amd-zen5.json"},
    {.info = {"amd-zen4", "AMD family 25 models 0x10-0x1f, 0x60-0x7f, 0xa0-0xaf (Zen 4)", SMALL_EVEX,
      "docs/strategy.md \"Zen 4\": rep stosb from 4 KiB; memmove avx2 (evex's at the floor in DRAM)"},
     .vendor = AMD, .family = {25, 25}, .models = {{0x10, 0x1f}, {0x60, 0x7f}, {0xa0, 0xaf}},
     .needs_erms = 0, .needs_fsrm = 0,
     T(rep_stosb_threshold) = BYTES(KIB(4)),
     T(rep_movsb_threshold) = NEVER, T(rep_movsb_stop) = NEVER, T(rep_movsb_align) = BYTES(64),
     T(nt_threshold_zero) = L3(1, 2), T(nt_threshold) = L3(2, 1), T(nt_copy_threshold) = L3(1, 2),
     .variant = {[MK_OP_MEMSET] = "evex", [MK_OP_MEMCPY] = "evex", [MK_OP_MEMMOVE] = "avx2"},
     .evidence_file = "data/evidence/amd-zen4.json"},
    {.info = {"amd-zen3", "AMD family 25 models 0x00-0x0f, 0x20-0x2f, 0x40-0x5f (Zen 3)", SMALL_MASKED,
      "docs/strategy.md \"Zen 3\": the rep instructions never won; rep movsb 8-40x slower misaligned"},
     .vendor = AMD, .family = {25, 25}, .models = {{0x00, 0x0f}, {0x20, 0x2f}, {0x40, 0x5f}},
     .needs_erms = 0, .needs_fsrm = 0,
     T(rep_stosb_threshold) = NEVER,
     T(rep_movsb_threshold) = NEVER, T(rep_movsb_stop) = NEVER, T(rep_movsb_align) = BYTES(64),
     T(nt_threshold_zero) = L3(1, 3), T(nt_threshold) = L3(1, 2), T(nt_copy_threshold) = L3(1, 4),
     .variant = ALL("avx2"), .evidence_file = "data/evidence/amd-zen3.json"},
    {.info = {"amd", "AMD, any other family/model (Zen 1-2, unmeasured): Zen 4's choices", SMALL_MASKED,
      "Zen 4's measurements (row amd-zen4); the rep instructions stay off as there"},
     .vendor = AMD, .family = {0, 255}, .models = ANY_MODEL,
     .needs_erms = 0, .needs_fsrm = 0,
     T(rep_stosb_threshold) = NEVER,
     T(rep_movsb_threshold) = NEVER, T(rep_movsb_stop) = NEVER, T(rep_movsb_align) = BYTES(64),
     T(nt_threshold_zero) = L3(1, 1), T(nt_threshold) = L3(2, 1), T(nt_copy_threshold) = L3(1, 2)},
    {.info = {"intel-emr", "Intel family 6 model 0xcf (Emerald Rapids)", SMALL_EVEX,
      "docs/strategy.md \"Emerald Rapids\": rep stosb from 22.6 KiB, rep movsb 16 KiB..32 MiB"},
     .vendor = INTEL, .family = {6, 6}, .models = {{0xcf, 0xcf}},
     .needs_erms = 1, .needs_fsrm = 1,
     T(rep_stosb_threshold) = BYTES(23168),
     T(rep_movsb_threshold) = BYTES(KIB(16)), T(rep_movsb_stop) = BYTES(KIB(32768)),
     T(rep_movsb_align) = BYTES(1),
     T(nt_threshold_zero) = L3(1, 4), T(nt_threshold) = L3(1, 4), T(nt_copy_threshold) = BYTES(KIB(32768)),
     .variant = ALL("evex"), .evidence_file = "data/evidence/intel-emr.json"},
    {.info = {"intel-xeon-amx", "Intel Xeon with AMX (Sapphire Rapids and later), where no model row matches",
      SMALL_EVEX,
      "docs/strategy.md \"Xeon with AMX\": rep stosb from 16 KiB, rep movsb 22.6 KiB..22.6 MiB"},
     .vendor = INTEL, .family = {6, 6}, .models = ANY_MODEL,
     .needs_erms = 1, .needs_fsrm = 1, .needs_amx = 1,
     T(rep_stosb_threshold) = BYTES(KIB(16)),
     T(rep_movsb_threshold) = BYTES(23168), T(rep_movsb_stop) = BYTES(23726592),
     T(rep_movsb_align) = BYTES(1),
     T(nt_threshold_zero) = L3(1, 4), T(nt_threshold) = L3(1, 4), T(nt_copy_threshold) = BYTES(23726592),
     .variant = ALL("evex"), .evidence_file = "data/evidence/intel-xeon-amx.json"},
    {.info = {"intel-fsrm", "Intel with FSRM (Ice Lake and later)", SMALL_MASKED,
      "glibc 2.38+ x86 defaults (dl-cacheinfo.h): rep_movsb_threshold 2112 with FSRM, "
      "rep_stosb_threshold 2048, non_temporal_threshold L3/4 and rep movsb below it"},
     .vendor = INTEL, .family = {6, 255}, .models = ANY_MODEL,
     .needs_erms = 1, .needs_fsrm = 1,
     T(rep_stosb_threshold) = BYTES(2048),
     T(rep_movsb_threshold) = BYTES(2112), T(rep_movsb_stop) = L3(1, 4),
     T(rep_movsb_align) = BYTES(1),
     T(nt_threshold_zero) = L3(1, 4), T(nt_threshold) = L3(1, 4), T(nt_copy_threshold) = L3(1, 4)},
    {.info = {"intel-erms", "Intel with ERMS, without FSRM", SMALL_MASKED,
      "glibc 2.38+ x86 defaults: rep_movsb_threshold 2048 * (VEC_SIZE / 16), rep_stosb_threshold "
      "2048, non_temporal_threshold L3/4 and rep movsb below it"},
     .vendor = INTEL, .family = {6, 255}, .models = ANY_MODEL,
     .needs_erms = 1, .needs_fsrm = 0,
     T(rep_stosb_threshold) = BYTES(2048),
     T(rep_movsb_threshold) = PER_VEC16(2048), T(rep_movsb_stop) = L3(1, 4),
     T(rep_movsb_align) = BYTES(1),
     T(nt_threshold_zero) = L3(1, 4), T(nt_threshold) = L3(1, 4), T(nt_copy_threshold) = L3(1, 4)},
    {.info = {"generic", "no row for this CPU: conservative", SMALL_MASKED,
      "no rep instructions (slow on some CPUs); NT from the L3 for fills, L3/2 for copies "
      "(source and destination both in the cache)"},
     .vendor = 0, .family = {0, ~0u}, .models = ANY_MODEL,
     .needs_erms = 0, .needs_fsrm = 0,
     T(rep_stosb_threshold) = NEVER,
     T(rep_movsb_threshold) = NEVER, T(rep_movsb_stop) = NEVER, T(rep_movsb_align) = BYTES(64),
     T(nt_threshold_zero) = L3(1, 1), T(nt_threshold) = L3(1, 1), T(nt_copy_threshold) = L3(1, 2)},
};
#define NROWS (sizeof table / sizeof table[0])

MK_EARLY static int matches(const row *r, const mk_cpu_info *c)
{
    if (r->vendor && !mk_text_eq(r->vendor, c->vendor))
        return 0;
    if (c->family < r->family.lo || c->family > r->family.hi)
        return 0;
    if ((r->needs_erms && !c->has_erms) || (r->needs_fsrm && !c->has_fsrm) ||
        (r->needs_amx && !c->has_amx))
        return 0;
    if (r->models[0].lo == 0 && r->models[0].hi == 0)
        return 1;
    for (int i = 0; i < MAX_RANGES && (r->models[i].lo || r->models[i].hi); i++)
        if (c->model >= r->models[i].lo && c->model <= r->models[i].hi)
            return 1;
    return 0;
}

MK_EARLY static const row *row_for(const mk_cpu_info *c)
{
    for (size_t i = 0; i < NROWS; i++)
        if (matches(&table[i], c))
            return &table[i];
    return &table[NROWS - 1];
}

/* The widest vector a dispatched variant may use. */
MK_EARLY static size_t vector_bytes(const mk_cpu_info *c)
{
    return mk_cpu_satisfies(c, MK_NEED_AVX512) ? 64 : mk_cpu_satisfies(c, MK_NEED_AVX2) ? 32 : 16;
}

MK_EARLY static size_t eval(rule r, const mk_cpu_info *c, mk_caches caches)
{
    if (r.of == OF_BYTES)
        return r.num;
    if (r.of == OF_NONE)   /* not a per-CPU tunable: the caller keeps its own */
        return SIZE_MAX;
    if ((r.of == OF_L2 || r.of == OF_L3) && caches == MK_CACHES_PENDING)
        return MK_PENDING;
    size_t base = r.of == OF_L2    ? (c->l2_bytes ? c->l2_bytes : KIB(1024))
                : r.of == OF_L3    ? (c->l3_bytes ? c->l3_bytes : KIB(8192))
                                   : vector_bytes(c) / 16;
    return base * r.num / r.den;
}

MK_EARLY void mk_strategy_defaults(size_t out[MK_TUNABLE_COUNT], const mk_cpu_info *cpu,
                                   mk_caches caches)
{
    const row *r = row_for(cpu);
    for (size_t i = 0; i < MK_TUNABLE_COUNT; i++)
        out[i] = eval(r->sets[i], cpu, caches);
    /* Without ERMS the rep instructions are microcoded byte loops. */
    if (!cpu->has_erms)
        out[MK_T_rep_stosb_threshold] = out[MK_T_rep_movsb_threshold] = SIZE_MAX;
}

MK_EARLY const char *mk_strategy_variant(const mk_cpu_info *cpu, mk_op op)
{
    return row_for(cpu)->variant[op];
}

MK_EARLY const mk_strategy_info *mk_strategy_for(const mk_cpu_info *cpu)
{
    return &row_for(cpu)->info;
}

const mk_strategy_info *mk_strategy(void) { return mk_strategy_for(mk_cpu_early()); }

/* ---- the table as text (`memkit env --strategies`, docs/strategy.md) ---- */

const size_t mk_strategy_count = NROWS;

const mk_strategy_info *mk_strategy_at(size_t i) { return &table[i].info; }

const char *mk_strategy_variant_at(size_t i, mk_op op) { return table[i].variant[op]; }

const char *mk_strategy_evidence_file_at(size_t i) { return table[i].evidence_file; }

size_t mk_strategy_index(const mk_cpu_info *cpu) { return (size_t)(row_for(cpu) - table); }

char *mk_strategy_rule_text(size_t i, size_t t, char *p, char *end)
{
    rule r = table[i].sets[t];
    *p = '\0';
    switch (r.of) {
    case OF_NONE:
        return p;
    case OF_BYTES:
        return mk_text_append_size(p, end, r.num);
    case OF_VEC16:                          /* glibc's "2048 * (VEC_SIZE / 16)" */
        p = mk_text_append_uint(p, end, r.num);
        return mk_text_append(p, end, " x V/16", (size_t)-1);
    case OF_L2:
    case OF_L3:
        break;
    }
    if (r.num != 1) {                       /* "2 x L3", "3/2 x L3" */
        p = mk_text_append_uint(p, end, r.num);
        if (r.den != 1) {
            p = mk_text_append(p, end, "/", 1);
            p = mk_text_append_uint(p, end, r.den);
        }
        p = mk_text_append(p, end, " x ", 3);
    }
    p = mk_text_append(p, end, r.of == OF_L2 ? "L2" : "L3", 2);
    if (r.num == 1 && r.den != 1) {         /* "L3/2" */
        p = mk_text_append(p, end, "/", 1);
        p = mk_text_append_uint(p, end, r.den);
    }
    return p;
}
