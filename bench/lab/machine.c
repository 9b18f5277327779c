/* SPDX-License-Identifier: Apache-2.0 */
/* What about the machine makes timings noisy, for the fingerprint (and
 * `memkit system-check`, which prints it): turbo/boost, SMT, a hypervisor;
 * and the one CPU single-threaded timing processes are pinned to. */
#include "lab_internal.h"

#include <cpuid.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

int lab_read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (ok)
        buf[strcspn(buf, "\n")] = '\0';
    return ok;
}

int lab_timing_cpu(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set))
        return -1;
    /* The last CPU it may use: CPU 0 serves most device interrupts and
     * housekeeping; the same one every time, so runs stay comparable. */
    for (int c = CPU_SETSIZE - 1; c >= 0; c--)
        if (CPU_ISSET(c, &set))
            return c;
    return -1;
}

int lab_pin_to_timing_cpu(char *why, size_t len)
{
    int cpu = lab_timing_cpu();
    if (cpu < 0) {
        snprintf(why, len, "the CPUs it may run on are unknown: %s", strerror(errno));
        return -1;
    }
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one)) {
        snprintf(why, len, "sched_setaffinity to CPU %d: %s", cpu, strerror(errno));
        return -1;
    }
    return 0;
}

/* "on", "off" or "unknown": whether the CPU may clock above its base. */
static const char *boost(void)
{
    char w[32];
    if (lab_read_line("/sys/devices/system/cpu/cpufreq/boost", w, sizeof w))   /* acpi-cpufreq, amd-pstate */
        return !strcmp(w, "1") ? "on" : "off";
    if (lab_read_line("/sys/devices/system/cpu/intel_pstate/no_turbo", w, sizeof w))
        return !strcmp(w, "0") ? "on" : "off";
    return "unknown";
}

/* "on", "off", "notsupported", ... (the kernel's word) or "unknown". */
static void smt(char *buf, size_t len)
{
    char control[32], active[8];
    if (!lab_read_line("/sys/devices/system/cpu/smt/control", control, sizeof control))
        snprintf(buf, len, "unknown");
    else if (!strcmp(control, "on") && lab_read_line("/sys/devices/system/cpu/smt/active", active, sizeof active))
        snprintf(buf, len, "%s", strcmp(active, "1") ? "on (no sibling online)" : "on");
    else
        snprintf(buf, len, "%s", control);
}

/* "none", or the hypervisor's CPUID signature ("KVMKVMKVM", "Microsoft Hv"). */
static void hypervisor(char *buf, size_t len)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 31))) {
        snprintf(buf, len, "none");
        return;
    }
    __cpuid(0x40000000, a, b, c, d);
    char sig[13];
    memcpy(sig, &b, 4);
    memcpy(sig + 4, &c, 4);
    memcpy(sig + 8, &d, 4);
    sig[12] = '\0';
    size_t n = strlen(sig);
    while (n && sig[n - 1] == ' ')
        sig[--n] = '\0';
    snprintf(buf, len, "%s", n ? sig : "unnamed");
}

void lab_write_noise_sources(FILE *f)
{
    char s[64], hv[32];
    smt(s, sizeof s);
    hypervisor(hv, sizeof hv);
    LAB_MEMBER(f, fingerprint, boost);
    lab_json_string(f, boost());
    LAB_MEMBER(f, fingerprint, smt);
    lab_json_string(f, s);
    LAB_MEMBER(f, fingerprint, hypervisor);
    lab_json_string(f, hv);
    LAB_MEMBER(f, fingerprint, timing_cpu);
    fprintf(f, "%d", lab_timing_cpu());
}
