/* SPDX-License-Identifier: Apache-2.0 */
/* The per-CPU strategy table: which row a CPU gets, and the defaults that
 * row gives (Zen 3 and Zen 4 keep the rep instructions off, Zen 5 copies by rep movsb
 * from 32 KiB, an Intel Xeon with AMX takes its measured row whatever model it
 * reports, other Intel follows glibc's thresholds, an unknown CPU the
 * conservative row), and that the running CPU's row is the one in force. */
#include "check.h"
#include "internal.h"

#include <stddef.h>
#include <string.h>

static mk_cpu_info cpu(const char *vendor, unsigned family, unsigned model, int erms, int fsrm)
{
    mk_cpu_info c = {0};
    strcpy(c.vendor, vendor);
    c.family = family;
    c.model = model;
    c.has_sse2 = 1;
    c.has_avx2 = c.has_bmi2 = c.os_avx = 1;   /* every AVX2 CPU has BMI2; the avx2 code needs both */
    c.has_erms = erms;
    c.has_fsrm = fsrm;
    c.l2_bytes = (size_t)1 << 20;
    c.l3_bytes = (size_t)32 << 20;
    return c;
}

/* AMX-TILE (cpuid leaf 7 EDX bit 24): a Xeon since Sapphire Rapids. */
static mk_cpu_info with_amx(mk_cpu_info c)
{
    c.has_amx = 1;
    return c;
}

static void expect_row(mk_cpu_info c, const char *want)
{
    const char *got = mk_strategy_for(&c)->name;
    CHECK(strcmp(got, want) == 0, "%s family %u model 0x%x: row %s, want %s", c.vendor, c.family,
          c.model, got, want);
}

static mk_tunables defaults(mk_cpu_info c)
{
    mk_tunables t;
    mk_tunables_defaults(&t, &c, MK_CACHES_KNOWN);
    return t;
}

/* Tunable i's value in t; the per-CPU ones are sizes (checked below). */
#define FIELD(t, i) (*(const size_t *)((const char *)&(t) + mk_tunable_rows[i].offset))

/* Before the caches are read, a row's cache-sized thresholds are pending and
 * the others final; read with the smallest caches such a CPU has (L2 256 KiB,
 * L3 1 MiB), each pending one is above the floor the routines compare with
 * until then. */
static void pending_until_caches(mk_cpu_info c)
{
    mk_tunables pending, known;
    mk_tunables_defaults(&pending, &c, MK_CACHES_PENDING);
    c.l2_bytes = (size_t)256 << 10;
    c.l3_bytes = (size_t)1 << 20;
    mk_tunables_defaults(&known, &c, MK_CACHES_KNOWN);
    for (size_t i = 0; i < MK_TUNABLE_COUNT; i++) {
        if (!mk_tunable_rows[i].per_cpu)
            continue;
        size_t p = FIELD(pending, i), k = FIELD(known, i);
        CHECK(p == MK_PENDING ? k >= MK_PENDING_FLOOR && k != MK_PENDING : p == k,
              "%s family %u model 0x%x: %s is %zu before the caches are read, %zu after",
              c.vendor, c.family, c.model, mk_tunable_rows[i].name, p, k);
    }
}

/* In this process (the library linked statically, its resolvers run): the
 * caches are read at the first call that needs a cache-sized threshold, and
 * the thresholds then are the row's. */
static void caches_read_at_first_large_call(void)
{
    mk_tunables before = mk_cfg;
    size_t copy_from = mk_copy_large_from;
    int pending = 0;
    for (size_t i = 0; i < MK_TUNABLE_COUNT; i++)
        pending |= mk_tunable_rows[i].per_cpu && FIELD(before, i) == MK_PENDING;
    CHECK(!pending || copy_from <= MK_PENDING_FLOOR,
          "with thresholds pending, copies from %zu B call the large path", copy_from);
    static char a[1 << 20], b[1 << 20];
    mk_memcpy(a, b, sizeof a);
    mk_tunables want;
    mk_tunables_defaults(&want, mk_cpu(), MK_CACHES_KNOWN);
    for (size_t i = 0; i < MK_TUNABLE_COUNT; i++)
        CHECK(!mk_tunable_rows[i].per_cpu || FIELD(mk_cfg, i) == FIELD(want, i),
              "after a 1 MiB copy %s is %zu, the row says %zu", mk_tunable_rows[i].name,
              FIELD(mk_cfg, i), FIELD(want, i));
    printf("this process: %s thresholds pending until its first large call\n",
           pending ? "some" : "no");
}

/* Every row sets a default for each per-CPU tunable (a size) and for no
 * other: the table has a column per row of memkit_tunables.def marked
 * PER_CPU, and a row that forgot one would give "never" without a word. */
static void every_row_sets_the_per_cpu_tunables(void)
{
    for (size_t t = 0; t < MK_TUNABLE_COUNT; t++) {
        const mk_tunable_row *r = &mk_tunable_rows[t];
        CHECK(!r->per_cpu || r->kind == MK_KIND_SIZE, "%s: per CPU but not a size", r->name);
        for (size_t i = 0; i < mk_strategy_count; i++) {
            char text[64];
            mk_strategy_rule_text(i, t, text, text + sizeof text);
            CHECK(!text[0] == !r->per_cpu, "row %s: %s is %s", mk_strategy_at(i)->name, r->name,
                  r->per_cpu ? "not set" : "set, but not per CPU");
        }
    }
}

/* How docs/strategy.md's table shows a row's defaults. */
static const char *rule_text(const char *row, size_t t)
{
    static char text[64];
    text[0] = '\0';
    for (size_t i = 0; i < mk_strategy_count; i++)
        if (!strcmp(mk_strategy_at(i)->name, row))
            mk_strategy_rule_text(i, t, text, text + sizeof text);
    return text;
}

static void rules_as_text(void)
{
    static const struct { const char *row; size_t t; const char *want; } cases[] = {
        {"amd-zen4", MK_T_nt_threshold, "2 x L3"}, {"amd-zen4", MK_T_nt_threshold_zero, "L3/2"},
        {"amd-zen3", MK_T_nt_threshold_zero, "L3/3"}, {"amd-zen5", MK_T_rep_stosb_threshold, "8K"},
        {"amd-zen5", MK_T_rep_movsb_threshold, "32K"}, {"amd-zen5", MK_T_rep_movsb_stop, "never"},
        {"amd-zen5", MK_T_rep_movsb_align, "1"}, {"intel-fsrm", MK_T_rep_movsb_threshold, "2112"},
        {"intel-erms", MK_T_rep_movsb_threshold, "2048 x V/16"}, {"generic", MK_T_threads, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(!strcmp(rule_text(cases[i].row, cases[i].t), cases[i].want), "%s %s: '%s', want '%s'",
              cases[i].row, mk_tunable_rows[cases[i].t].name, rule_text(cases[i].row, cases[i].t),
              cases[i].want);
}

static void keep_line(void *ctx, const char *line) { snprintf(ctx, 512, "%s", line); }

/* A row's defaults are within the tunables' bounds: the parser takes them
 * back without a word. */
static void defaults_within_bounds(mk_cpu_info c)
{
    mk_tunables t = defaults(c);
    char text[1024], why[512] = "";
    mk_tunables_format(&t, text, sizeof text);
    CHECK(mk_tunables_parse(&t, text, keep_line, why) == 0, "row %s: a default is out of bounds: %s",
          mk_strategy_for(&c)->name, why);
}

/* The row's variant for op is name (NULL: none, the first the CPU runs). */
static int runs(const mk_cpu_info *c, mk_op op, const char *name)
{
    const char *v = mk_strategy_variant(c, op);
    return name ? v && strcmp(v, name) == 0 : v == NULL;
}

static int runs_all(const mk_cpu_info *c, const char *name)
{
    return runs(c, MK_OP_MEMSET, name) && runs(c, MK_OP_MEMCPY, name) && runs(c, MK_OP_MEMMOVE, name);
}

int main(void)
{
    caches_read_at_first_large_call();   /* first: nothing has asked for mk_config() yet */
    expect_row(cpu("AuthenticAMD", 25, 0x11, 1, 1), "amd-zen4");   /* Genoa */
    expect_row(cpu("AuthenticAMD", 25, 0x61, 1, 1), "amd-zen4");   /* Raphael */
    expect_row(cpu("AuthenticAMD", 25, 0xa0, 1, 1), "amd-zen4");   /* Bergamo */
    expect_row(cpu("AuthenticAMD", 25, 0x01, 1, 1), "amd-zen3");   /* Milan */
    expect_row(cpu("AuthenticAMD", 25, 0x21, 1, 1), "amd-zen3");   /* Vermeer */
    expect_row(cpu("AuthenticAMD", 25, 0x50, 1, 1), "amd-zen3");   /* Cezanne */
    expect_row(cpu("AuthenticAMD", 23, 0x31, 0, 0), "amd");        /* Rome: Zen 2 */
    expect_row(cpu("AuthenticAMD", 26, 0x02, 1, 1), "amd-zen5");   /* Turin */
    expect_row(cpu("AuthenticAMD", 26, 0x44, 1, 1), "amd-zen5");   /* Granite Ridge */
    expect_row(cpu("GenuineIntel", 6, 0xcf, 1, 1), "intel-emr");   /* Emerald Rapids: measured */
    expect_row(with_amx(cpu("GenuineIntel", 6, 0xcf, 1, 1)), "intel-emr");   /* its model row first */
    /* AMX, whatever the model: the KVM guest the row was measured on reports
     * 0xa7 (Rocket Lake's); Sapphire Rapids (0x8f) and Granite Rapids (0xad)
     * run the row unmeasured by their own silicon */
    expect_row(with_amx(cpu("GenuineIntel", 6, 0xa7, 1, 1)), "intel-xeon-amx");
    expect_row(with_amx(cpu("GenuineIntel", 6, 0x8f, 1, 1)), "intel-xeon-amx");
    expect_row(with_amx(cpu("GenuineIntel", 6, 0xad, 1, 1)), "intel-xeon-amx");
    expect_row(cpu("GenuineIntel", 6, 0xa7, 1, 1), "intel-fsrm");  /* Rocket Lake: no AMX */
    expect_row(cpu("GenuineIntel", 6, 0x6a, 1, 1), "intel-fsrm");  /* Ice Lake-SP: no AMX */
    expect_row(with_amx(cpu("GenuineIntel", 6, 0x8f, 1, 0)), "intel-erms");  /* no FSRM */
    expect_row(cpu("GenuineIntel", 6, 0x55, 1, 0), "intel-erms");  /* Skylake-SP */
    expect_row(cpu("GenuineIntel", 6, 0x1a, 0, 0), "generic");     /* Nehalem: no ERMS */
    expect_row(cpu("HygonGenuine", 24, 0x01, 1, 0), "generic");

    /* Zen 4's 64-byte accesses are two 32-byte halves and Zen 5's small masked
     * 64-byte stores lose in the L3 and DRAM: their routines are evex's; the
     * rows not measured keep the first variant the CPU can run. */
    mk_cpu_info genoa = cpu("AuthenticAMD", 25, 0x11, 1, 1), turin = cpu("AuthenticAMD", 26, 0x02, 1, 1);
    mk_cpu_info rkl = cpu("GenuineIntel", 6, 0xa7, 1, 1), hygon = cpu("HygonGenuine", 24, 0x01, 1, 0);
    CHECK(runs(&genoa, MK_OP_MEMSET, "evex") && runs(&genoa, MK_OP_MEMCPY, "evex"),
          "Zen 4's memset and memcpy run the evex routines");
    CHECK(runs(&genoa, MK_OP_MEMMOVE, "avx2"),
          "Zen 4's memmove runs avx2 (its evidence: evex 0.85x glibc in DRAM, at the floor)");
    CHECK(runs_all(&turin, "evex"), "Zen 5 runs the evex routines (its evidence: the production distributions)");
    CHECK(runs_all(&rkl, NULL) && runs_all(&hygon, NULL),
          "Rocket Lake (intel-fsrm) and an unknown CPU keep the first variant they can run");
    CHECK(mk_variant_named("evex", 4) != NULL, "the evex routines are built");
    mk_cpu_info emr = cpu("GenuineIntel", 6, 0xcf, 1, 1);
    CHECK(runs_all(&emr, "evex"),
          "Emerald Rapids runs the evex routines (its evidence: the production distributions)");
    mk_cpu_info spr = with_amx(cpu("GenuineIntel", 6, 0xa7, 1, 1));
    CHECK(runs_all(&spr, "evex"),
          "a Xeon with AMX runs the evex routines (its evidence: avx512's copies 0.70-0.81x glibc "
          "in the L3 and DRAM)");
    mk_cpu_info milan = cpu("AuthenticAMD", 25, 0x01, 1, 1);
    CHECK(runs_all(&milan, "avx2"), "Zen 3 runs the avx2 routines (its evidence: sse2 lower at every level)");
    /* measured: the row names its evidence file (tests/python/test_evidence.py reads it) */
    CHECK(mk_strategy_evidence_file_at(mk_strategy_index(&emr)) != NULL, "intel-emr names its evidence file");
    CHECK(mk_strategy_evidence_file_at(mk_strategy_index(&milan)) != NULL, "amd-zen3 names its evidence file");
    CHECK(mk_strategy_evidence_file_at(mk_strategy_index(&spr)) != NULL,
          "intel-xeon-amx names its evidence file");
    CHECK(mk_strategy_evidence_file_at(mk_strategy_index(&genoa)) != NULL, "amd-zen4 names its evidence file");
    CHECK(mk_strategy_evidence_file_at(mk_strategy_index(&rkl)) == NULL, "intel-fsrm has none");
    mk_cpu_info rows[] = {genoa, turin, rkl, hygon, emr, milan, spr,
                          cpu("AuthenticAMD", 23, 0x31, 0, 0), cpu("GenuineIntel", 6, 0x55, 1, 0),
                          cpu("GenuineIntel", 6, 0x1a, 0, 0)};
    /* Every row is reachable: an unmeasured one by one of these CPUs, a
     * measured one by its evidence file's CPU (tests/python/test_evidence.py
     * checks that CPU gets it), so a new measured row needs no line here. */
    int met[64] = {0};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        pending_until_caches(rows[i]);
        defaults_within_bounds(rows[i]);
        met[mk_strategy_index(&rows[i])] = 1;
    }
    CHECK(mk_strategy_count <= sizeof met / sizeof met[0], "%zu rows", mk_strategy_count);
    for (size_t r = 0; r < mk_strategy_count && r < sizeof met / sizeof met[0]; r++)
        CHECK(met[r] || mk_strategy_evidence_file_at(r), "no CPU here meets the unmeasured row %s",
              mk_strategy_at(r)->name);
    every_row_sets_the_per_cpu_tunables();
    rules_as_text();

    mk_tunables z4 = defaults(cpu("AuthenticAMD", 25, 0x11, 1, 1));
    CHECK(z4.rep_stosb_threshold == 4096 && z4.rep_movsb_threshold == SIZE_MAX,
          "Zen 4: rep stosb from 4 KiB (its evidence, over the levels), no rep movsb (%zu, %zu)",
          z4.rep_stosb_threshold, z4.rep_movsb_threshold);
    CHECK(z4.nt_threshold == (size_t)64 << 20 && z4.nt_threshold_zero == (size_t)16 << 20 &&
              z4.nt_copy_threshold == (size_t)16 << 20,
          "Zen 4: non-temporal from 2x the L3 for non-zero fills, L3/2 for zero fills and copies "
          "(%zu, %zu, %zu)", z4.nt_threshold, z4.nt_threshold_zero, z4.nt_copy_threshold);

    mk_tunables z3 = defaults(cpu("AuthenticAMD", 25, 0x01, 1, 1));
    CHECK(z3.rep_stosb_threshold == SIZE_MAX && z3.rep_movsb_threshold == SIZE_MAX &&
              z3.nt_threshold_zero == ((size_t)32 << 20) / 3 && z3.nt_threshold == (size_t)16 << 20 &&
              z3.nt_copy_threshold == (size_t)8 << 20,
          "Zen 3: no rep instructions; non-temporal from L3/3 for zero fills, L3/2 for "
          "non-zero fills, L3/4 for copies (%zu, %zu, %zu)",
          z3.nt_threshold_zero, z3.nt_threshold, z3.nt_copy_threshold);

    mk_tunables z5 = defaults(cpu("AuthenticAMD", 26, 0x02, 1, 1));
    CHECK(z5.rep_movsb_threshold == 32768 && z5.rep_movsb_stop == SIZE_MAX &&
              z5.rep_movsb_align == 1,
          "Zen 5: rep movsb from 32 KiB up, at any line offset (%zu, %zu, %zu)",
          z5.rep_movsb_threshold, z5.rep_movsb_stop, z5.rep_movsb_align);
    CHECK(z5.rep_stosb_threshold == 8192, "Zen 5: rep stosb from 8 KiB, for lines that come from DRAM (%zu)",
          z5.rep_stosb_threshold);

    mk_cpu_info skx = cpu("GenuineIntel", 6, 0x55, 1, 0);
    mk_tunables ti = defaults(skx);
    CHECK(ti.rep_movsb_threshold == 4096 && ti.rep_stosb_threshold == 2048 &&
              ti.rep_movsb_stop == (size_t)8 << 20 && ti.nt_copy_threshold == (size_t)8 << 20,
          "Intel ERMS with AVX2: glibc's 2048 * 32/16, 2048, L3/4 (%zu, %zu, %zu)",
          ti.rep_movsb_threshold, ti.rep_stosb_threshold, ti.rep_movsb_stop);
    skx.has_avx512f = skx.has_avx512bw = skx.has_avx512vl = skx.os_avx512 = skx.has_bmi2 = 1;
    CHECK(defaults(skx).rep_movsb_threshold == 8192, "Intel ERMS with AVX-512: 2048 * 64/16");
    CHECK(defaults(cpu("GenuineIntel", 6, 0xa7, 1, 1)).rep_movsb_threshold == 2112,
          "Intel FSRM: 2112");

    mk_tunables amx = defaults(spr);
    CHECK(amx.rep_stosb_threshold == 16384 && amx.rep_movsb_threshold == 23168 &&
              amx.rep_movsb_stop == 23726592 && amx.nt_copy_threshold == 23726592 &&
              amx.rep_movsb_align == 1,
          "Xeon with AMX: rep stosb from 16 KiB, rep movsb 22.6 KiB..22.6 MiB at any offset, NT "
          "copies from 22.6 MiB (%zu, %zu, %zu, %zu, %zu)", amx.rep_stosb_threshold,
          amx.rep_movsb_threshold, amx.rep_movsb_stop, amx.nt_copy_threshold, amx.rep_movsb_align);
    CHECK(amx.nt_threshold == (size_t)8 << 20 && amx.nt_threshold_zero == (size_t)8 << 20,
          "Xeon with AMX: NT fills from L3/4 (%zu, %zu)", amx.nt_threshold, amx.nt_threshold_zero);

    mk_cpu_info zen5_no_erms = cpu("AuthenticAMD", 26, 0x02, 0, 0);
    CHECK(defaults(zen5_no_erms).rep_movsb_threshold == SIZE_MAX &&
              defaults(zen5_no_erms).rep_stosb_threshold == SIZE_MAX,
          "no ERMS: no rep instructions whatever the row");

    mk_cpu_info unknown = cpu("GenuineIotel", 1, 0, 1, 1);
    unknown.l3_bytes = 0;
    mk_tunables g = defaults(unknown);
    CHECK(g.rep_stosb_threshold == SIZE_MAX && g.rep_movsb_threshold == SIZE_MAX &&
              g.nt_threshold == (size_t)8 << 20,
          "unknown CPU, unknown L3: no rep, non-temporal from an assumed 8 MiB L3");

    /* The running CPU: its row is the one reported, and (without a profile
     * or MEMKIT_TUNABLES) the one whose values are in force. */
    const mk_strategy_info *s = mk_strategy();
    CHECK(s == mk_strategy_for(mk_cpu()) && s->name[0] && s->matched[0] && s->evidence[0] &&
              s->small[0],
          "mk_strategy() describes the running CPU's row");
    printf("this CPU: %s (%s)\n", s->name, s->matched);
    check_finish();
}
