/* SPDX-License-Identifier: Apache-2.0 */
/* The machine's fingerprint: what the CPU, kernel, libc and memkit are, and
 * how memkit is configured; the first line of every run's JSONL. */
#include "lab_internal.h"
#include "../../src/internal.h"   /* the strategy table: is the row measured */

#include "memkit.h"

#include <gnu/libc-version.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <unistd.h>

/* ,"key":"text" and ,"key":number, the key a LAB_KEY */
static void str_member(FILE *f, const char *key, const char *v)
{
    lab_json_key(f, key, 0);
    lab_json_string(f, v);
}

static void int_member(FILE *f, const char *key, size_t v)
{
    lab_json_key(f, key, 0);
    fprintf(f, "%zu", v);
}

/* The CPU: who made it, which model, what it can run, its caches. */
static void write_cpu(FILE *f, const mk_cpu_info *c)
{
    char micro[32];
    snprintf(micro, sizeof micro, "0x%x", c->microcode);
    str_member(f, LAB_KEY(fingerprint, cpu_model), c->brand);
    str_member(f, LAB_KEY(fingerprint, vendor), c->vendor);
    int_member(f, LAB_KEY(fingerprint, family), c->family);
    int_member(f, LAB_KEY(fingerprint, model), c->model);
    int_member(f, LAB_KEY(fingerprint, stepping), c->stepping);
    str_member(f, LAB_KEY(fingerprint, microcode), c->microcode ? micro : "unknown");
}

static void write_isa_and_caches(FILE *f, const mk_cpu_info *c)
{
    LAB_MEMBER(f, fingerprint, isa);
    LAB_FIRST(f, isa, sse2);
    fprintf(f, "%d", c->has_sse2);
    int_member(f, LAB_KEY(isa, avx2), c->has_avx2);
    int_member(f, LAB_KEY(isa, avx512f), c->has_avx512f);
    int_member(f, LAB_KEY(isa, avx512bw), c->has_avx512bw);
    int_member(f, LAB_KEY(isa, avx512vl), c->has_avx512vl);
    int_member(f, LAB_KEY(isa, erms), c->has_erms);
    int_member(f, LAB_KEY(isa, fsrm), c->has_fsrm);
    int_member(f, LAB_KEY(isa, amx), c->has_amx);
    int_member(f, LAB_KEY(isa, os_avx), c->os_avx);
    int_member(f, LAB_KEY(isa, os_avx512), c->os_avx512);
    fputc('}', f);
    LAB_MEMBER(f, fingerprint, cache);
    LAB_FIRST(f, cache, l1d);
    fprintf(f, "%zu", c->l1d_bytes);
    int_member(f, LAB_KEY(cache, l2), c->l2_bytes);
    int_member(f, LAB_KEY(cache, l3), c->l3_bytes);
    int_member(f, LAB_KEY(cache, line), c->line_bytes);
    fputc('}', f);
}

/* memkit as it runs here: its version, its settings, its row, its variants. */
static void write_memkit(FILE *f, const mk_cpu_info *c)
{
    char tun[1024];
    mk_tunables_format(mk_tunables_get(), tun, sizeof tun);
    str_member(f, LAB_KEY(fingerprint, memkit_version), MEMKIT_VERSION);
    str_member(f, LAB_KEY(fingerprint, memkit_commit), MEMKIT_GIT_DESCRIBE);
    str_member(f, LAB_KEY(fingerprint, tunables), tun);
    str_member(f, LAB_KEY(fingerprint, profile), mk_tunables_profile(mk_tunables_get()));
    str_member(f, LAB_KEY(fingerprint, strategy), mk_strategy()->name);
    str_member(f, LAB_KEY(fingerprint, strategy_matched), mk_strategy()->matched);
    str_member(f, LAB_KEY(fingerprint, strategy_evidence), mk_strategy()->evidence);
    /* measured: the row has an evidence file in the repository (docs/evidence.md) */
    LAB_MEMBER(f, fingerprint, strategy_measured);
    fputs(mk_strategy_evidence_file_at(mk_strategy_index(c)) ? "true" : "false", f);
    LAB_MEMBER(f, fingerprint, variants);
    LAB_FIRST(f, variants, memset);
    lab_json_string(f, mk_selected_variant(MK_OP_MEMSET));
    str_member(f, LAB_KEY(variants, memcpy), mk_selected_variant(MK_OP_MEMCPY));
    str_member(f, LAB_KEY(variants, memmove), mk_selected_variant(MK_OP_MEMMOVE));
    fputc('}', f);
}

void lab_write_fingerprint(FILE *f)
{
    const mk_cpu_info *c = mk_cpu();
    struct utsname u;
    uname(&u);
    char thp[128] = "unknown", gov[64] = "unknown";
    lab_read_line("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof thp);
    lab_read_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", gov, sizeof gov);
    write_cpu(f, c);
    str_member(f, LAB_KEY(fingerprint, kernel), u.release);
    str_member(f, LAB_KEY(fingerprint, glibc), gnu_get_libc_version());
    write_isa_and_caches(f, c);
    int_member(f, LAB_KEY(fingerprint, cpus_online), (size_t)sysconf(_SC_NPROCESSORS_ONLN));
    str_member(f, LAB_KEY(fingerprint, thp), thp);
    str_member(f, LAB_KEY(fingerprint, governor), gov);
    write_memkit(f, c);
    lab_write_noise_sources(f);
}

size_t lab_tunable(const char *name)
{
    size_t v;
    if (mk_tunables_number(mk_tunables_get(), name, &v) != 0) {
        fprintf(stderr, "error: libmemkit has no size or count tunable '%s'\n", name);
        exit(2);
    }
    return v;
}
