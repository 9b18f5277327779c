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

void lab_write_fingerprint(FILE *f)
{
    const mk_cpu_info *c = mk_cpu();
    struct utsname u;
    uname(&u);
    char thp[128] = "unknown", gov[64] = "unknown", tun[1024];
    lab_read_line("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof thp);
    lab_read_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", gov, sizeof gov);
    mk_tunables_format(mk_tunables_get(), tun, sizeof tun);
    char micro[32];
    snprintf(micro, sizeof micro, "0x%x", c->microcode);
    fputs("\"cpu_model\":", f); lab_json_string(f, c->brand);
    fputs(",\"vendor\":", f); lab_json_string(f, c->vendor);
    fprintf(f, ",\"family\":%u,\"model\":%u,\"stepping\":%u", c->family, c->model, c->stepping);
    fputs(",\"microcode\":", f); lab_json_string(f, c->microcode ? micro : "unknown");
    fputs(",\"kernel\":", f); lab_json_string(f, u.release);
    fputs(",\"glibc\":", f); lab_json_string(f, gnu_get_libc_version());
    fprintf(f, ",\"isa\":{\"sse2\":%d,\"avx2\":%d,\"avx512f\":%d,\"avx512bw\":%d,"
               "\"avx512vl\":%d,\"erms\":%d,\"fsrm\":%d,\"os_avx\":%d,\"os_avx512\":%d}",
            c->has_sse2, c->has_avx2, c->has_avx512f, c->has_avx512bw, c->has_avx512vl,
            c->has_erms, c->has_fsrm, c->os_avx, c->os_avx512);
    fprintf(f, ",\"cache\":{\"l1d\":%zu,\"l2\":%zu,\"l3\":%zu,\"line\":%zu}",
            c->l1d_bytes, c->l2_bytes, c->l3_bytes, c->line_bytes);
    fprintf(f, ",\"cpus_online\":%ld", sysconf(_SC_NPROCESSORS_ONLN));
    fputs(",\"thp\":", f); lab_json_string(f, thp);
    fputs(",\"governor\":", f); lab_json_string(f, gov);
    fputs(",\"memkit_version\":", f); lab_json_string(f, MEMKIT_VERSION);
    fputs(",\"memkit_commit\":", f); lab_json_string(f, MEMKIT_GIT_DESCRIBE);
    fputs(",\"tunables\":", f); lab_json_string(f, tun);
    fputs(",\"profile\":", f); lab_json_string(f, mk_tunables_profile(mk_tunables_get()));
    fputs(",\"strategy\":", f); lab_json_string(f, mk_strategy()->name);
    fputs(",\"strategy_matched\":", f); lab_json_string(f, mk_strategy()->matched);
    fputs(",\"strategy_evidence\":", f); lab_json_string(f, mk_strategy()->evidence);
    /* measured: the row has an evidence file in the repository (docs/evidence.md) */
    fprintf(f, ",\"strategy_measured\":%s",
            mk_strategy_evidence_file_at(mk_strategy_index(c)) ? "true" : "false");
    fprintf(f, ",\"variants\":{\"memset\":\"%s\",\"memcpy\":\"%s\",\"memmove\":\"%s\"}",
            mk_selected_variant(MK_OP_MEMSET), mk_selected_variant(MK_OP_MEMCPY),
            mk_selected_variant(MK_OP_MEMMOVE));
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
