/* SPDX-License-Identifier: Apache-2.0 */
/* The strategy per microarchitecture: every choice that depends on the CPU
 * (the rep stosb / rep movsb windows and the alignment rep movsb needs, the
 * non-temporal thresholds for zero fills, non-zero fills and copies, the
 * small-size method) in one table keyed by vendor and family/model ranges.
 * The first matching row wins; the last matches every CPU.  Each row names
 * its evidence in one line; docs/strategy.md has the measurements behind it,
 * keyed by experiment.  A measured row names its evidence file
 * (data/evidence/<row>.json, docs/evidence.md), from which
 * tests/python/test_evidence.py re-derives its defaults; a row without one
 * is unmeasured, and memkit says so on a CPU that runs it.  A row gives every per-CPU tunable (PER_CPU in
 * memkit_tunables.def) its default, T(name) = rule; a profile or
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
    const char *variant;            /* the routines' ISA (isa.def) when the CPU can run
                                       it; NULL: the first it can run */
    const char *evidence_file;      /* what `memkit tune` measured, in the repository
                                       (docs/evidence.md); NULL: the row is unmeasured */
} row;

#define AMD "AuthenticAMD"
#define INTEL "GenuineIntel"
#define ANY_MODEL {{0, 0}}
#define ALL_MODELS {{0, 255}}
#define SMALL_MASKED "AVX-512: n <= 2V by masked loads/stores, masks without branches; " \
                     "else overlapping-store ladders"
#define SMALL_EVEX "evex (AVX-512, small calls whose data is cold): copies n <= 64 by two masked " \
                   "32-byte vectors, memset n <= 128 by four masked 32-byte stores, none reaching past " \
                   "[d, d+n) from 32 B up; above, 64-byte overlapping-store ladders and loops"

static const row table[] = {
    {.info = {"amd-zen5", "AMD family 26 (Zen 5), every model", SMALL_EVEX,
      "EPYC Zen 5 (family 26 model 2), docs/strategy.md \"Zen 5\": rep stosb from 8 KiB, where "
      "it beats the vector loop only from the L2 in cache but writes lines that come from DRAM "
      "up to 2x faster: production distributions' memset at l1/l2/l3/dram 1.17/1.15/1.12/0.90x "
      "glibc, was 1.22/1.18/1.07/0.76x (memkit tune, over the levels); rep movsb from 32 KiB and "
      "NT zero fills from the L3 kept, NT non-zero fills moved "
      "above 32 MiB (rep stosb 1.24x faster there, 11/12 rounds); rep movsb with dst-src not a "
      "multiple of 64 costs 1.3-1.7x its aligned time, as glibc's copy does, where the vector "
      "loop cost 1.9-2.5x at 32-256 KiB (copy-sweep), so rep_movsb_align is 1; production "
      "distributions at every level (size-distributions ws=): evex 1.66/1.92x glibc in the L3 "
      "and 0.98/0.97x in DRAM for memcpy/memmove where avx512 gave 1.27/1.39x and 0.87/0.84x"},
     .vendor = AMD, .family = {26, 26}, .models = ALL_MODELS,
     .needs_erms = 1, .needs_fsrm = 0,
     T(rep_stosb_threshold) = BYTES(KIB(8)),
     T(rep_movsb_threshold) = BYTES(KIB(32)), T(rep_movsb_stop) = NEVER,
     T(rep_movsb_align) = BYTES(1),
     T(nt_threshold_zero) = L3(1, 1), T(nt_threshold) = L3(5, 4), T(nt_copy_threshold) = L3(1, 2),
     .variant = "evex", .evidence_file = "data/evidence/amd-zen5.json"},
    {.info = {"amd-zen4", "AMD family 25 models 0x10-0x1f, 0x60-0x7f, 0xa0-0xaf (Zen 4)", SMALL_EVEX,
      "copy-sweep, fill-regions on EPYC Zen 4 (family 25 model 17): rep stosb never beat the "
      "vector loop; rep movsb with dst-src not a multiple of 64 ran 5-26x slower; NT zero fills "
      "68-81 GB/s vs 48-64 rep stosb above the L3, and 1.24-1.89x the vector loop already at "
      "16-22.6 MiB (memkit tune, sign test p <= 0.0032); NT non-zero fills (~28 GB/s) lost "
      "1.03-1.34x to cached stores at 32-45 MiB (memkit tune twice, p <= 0.0032); from 2x the L3 "
      "the cached stores' lead comes and goes with the neighbours' memory traffic; small sizes "
      "at random lines of L2-, L3- and DRAM-sized arenas: avx512's 64-byte masked vectors "
      "0.4-0.6x glibc in DRAM, evex 0.9-1.1x (size-distributions ws=); copies read right "
      "after (copy-read): non-temporal from 10-20 MiB with the destination not cached, "
      "20-32 MiB with it cached (a draw at 16 MiB); copied alone they win from L3/2 "
      "(copy-sweep: 1.33x at 16 MiB), so L3/2 stays; no evidence file: these runs predate them, "
      "and the row gets one from memkit tune --evidence on the next Zen 4 drawn (docs/evidence.md)"},
     .vendor = AMD, .family = {25, 25}, .models = {{0x10, 0x1f}, {0x60, 0x7f}, {0xa0, 0xaf}},
     .needs_erms = 0, .needs_fsrm = 0,
     T(rep_stosb_threshold) = NEVER,
     T(rep_movsb_threshold) = NEVER, T(rep_movsb_stop) = NEVER, T(rep_movsb_align) = BYTES(64),
     T(nt_threshold_zero) = L3(1, 2), T(nt_threshold) = L3(2, 1), T(nt_copy_threshold) = L3(1, 2),
     .variant = "evex"},
    {.info = {"amd-zen3", "AMD family 25 models 0x00-0x0f, 0x20-0x2f, 0x40-0x5f (Zen 3)", SMALL_MASKED,
      "EPYC Zen 3 (family 25 model 1), docs/strategy.md \"Zen 3\": memkit tune, fill-regions, "
      "copy-sweep: NT zero fills 1.40-3.21x the loop from 11.3 MiB, non-zero from 16-22.6 MiB, NT "
      "copies 1.39-1.62x from 8 MiB (sign tests p <= 0.00024); rep stosb and rep movsb never won "
      "with confidence, rep movsb with dst-src not a multiple of 64 ran 8-40x slower; memkit tune "
      "--evidence (2026-11-28, commit 20ac8c8) with the row in force moved no threshold, kept "
      "rep stosb off over the levels (geomean 1.10 against 1.02-1.07 from 2-32 KiB) and avx2 "
      "(production distributions' geomean over l1-dram 1.10/1.19/1.18x glibc for "
      "memset/memcpy/memmove, sse2 0.97/1.05/1.07x)"},
     .vendor = AMD, .family = {25, 25}, .models = {{0x00, 0x0f}, {0x20, 0x2f}, {0x40, 0x5f}},
     .needs_erms = 0, .needs_fsrm = 0,
     T(rep_stosb_threshold) = NEVER,
     T(rep_movsb_threshold) = NEVER, T(rep_movsb_stop) = NEVER, T(rep_movsb_align) = BYTES(64),
     T(nt_threshold_zero) = L3(1, 3), T(nt_threshold) = L3(1, 2), T(nt_copy_threshold) = L3(1, 4),
     .variant = "avx2", .evidence_file = "data/evidence/amd-zen3.json"},
    {.info = {"amd", "AMD, any other family/model (Zen 1-2, unmeasured): Zen 4's choices", SMALL_MASKED,
      "Zen 4's measurements (row amd-zen4); the rep instructions stay off as there"},
     .vendor = AMD, .family = {0, 255}, .models = ANY_MODEL,
     .needs_erms = 0, .needs_fsrm = 0,
     T(rep_stosb_threshold) = NEVER,
     T(rep_movsb_threshold) = NEVER, T(rep_movsb_stop) = NEVER, T(rep_movsb_align) = BYTES(64),
     T(nt_threshold_zero) = L3(1, 1), T(nt_threshold) = L3(2, 1), T(nt_copy_threshold) = L3(1, 2)},
    {.info = {"intel-emr", "Intel family 6 model 0xcf (Emerald Rapids)", SMALL_EVEX,
      "memkit tune on a Xeon family 6 model 207, evex forced (evidence/intel-xeon-6-207/tune-evex.txt "
      "lines 13-18): rep stosb from 22.6 KiB (2-16 KiB 1.09-2.37x faster by the loop), rep movsb "
      "16 KiB..32 MiB, NT copies from 32 MiB (1.26-1.68x), NT fills where L3/4 puts them; evex: "
      "lab-size-distributions-evex.txt lines 57-65 against -peers.txt lines 93-107 (l3, dram "
      "0.93-1.02x glibc, avx512 0.69-0.93x)"},
     .vendor = INTEL, .family = {6, 6}, .models = {{0xcf, 0xcf}},
     .needs_erms = 1, .needs_fsrm = 1,
     T(rep_stosb_threshold) = BYTES(23168),
     T(rep_movsb_threshold) = BYTES(KIB(16)), T(rep_movsb_stop) = BYTES(KIB(32768)),
     T(rep_movsb_align) = BYTES(1),
     T(nt_threshold_zero) = L3(1, 4), T(nt_threshold) = L3(1, 4), T(nt_copy_threshold) = BYTES(KIB(32768)),
     .variant = "evex", .evidence_file = "data/evidence/intel-emr.json"},
    {.info = {"intel-xeon-amx", "Intel Xeon with AMX (Sapphire Rapids and later), where no model row matches",
      SMALL_EVEX,
      "memkit tune --dry-run --evidence (2026-11-28, commit 20ac8c8) on a KVM guest reporting Intel "
      "family 6 model 167 with AMX, L3 105 MiB (likely a Sapphire Rapids host, model masked), "
      "docs/strategy.md \"Xeon with AMX\": evex (production distributions' geomean over l1-dram "
      "1.06/1.32/1.42x glibc for memset/memcpy/memmove, avx512 1.01/1.17/1.18x: its copies 0.70-0.81x "
      "in the L3 and DRAM, evex's 0.93-0.97x); rep stosb from 16 KiB (the loop 1.10-2.35x faster at "
      "2-11.3 KiB; over the levels geomean 1.12, from 2 KiB 1.06); rep movsb 22.6 KiB..22.6 MiB (the "
      "loop 1.11-1.74x faster at 2.8-16 KiB, NT copies 1.11x at 22.6 MiB, 12/12 rounds) at any dst-src "
      "(64 faster at 0 of 20 sizes); NT fills at L3/4 (no move); three more tunes that day: evex and "
      "rep movsb from 22.6 KiB each time, rep stosb from 16 or 32 KiB, NT copies from 22.6 MiB in one, "
      "L3/4 in two"},
     .vendor = INTEL, .family = {6, 6}, .models = ANY_MODEL,
     .needs_erms = 1, .needs_fsrm = 1, .needs_amx = 1,
     T(rep_stosb_threshold) = BYTES(KIB(16)),
     T(rep_movsb_threshold) = BYTES(23168), T(rep_movsb_stop) = BYTES(23726592),
     T(rep_movsb_align) = BYTES(1),
     T(nt_threshold_zero) = L3(1, 4), T(nt_threshold) = L3(1, 4), T(nt_copy_threshold) = BYTES(23726592),
     .variant = "evex", .evidence_file = "data/evidence/intel-xeon-amx.json"},
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

MK_EARLY const char *mk_strategy_variant(const mk_cpu_info *cpu)
{
    return row_for(cpu)->variant;
}

MK_EARLY const mk_strategy_info *mk_strategy_for(const mk_cpu_info *cpu)
{
    return &row_for(cpu)->info;
}

const mk_strategy_info *mk_strategy(void) { return mk_strategy_for(mk_cpu_early()); }

/* ---- the table as text (`memkit env --strategies`, docs/strategy.md) ---- */

const size_t mk_strategy_count = NROWS;

const mk_strategy_info *mk_strategy_at(size_t i) { return &table[i].info; }

const char *mk_strategy_variant_at(size_t i) { return table[i].variant; }

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
