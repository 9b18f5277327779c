/* SPDX-License-Identifier: Apache-2.0 */
/* Pinning: an experiment declaring itself single-threaded (info.pinned) has
 * each of its processes, the helpers too, on one CPU, the one the
 * fingerprint names; one that starts threads of its own keeps every CPU.
 *   lab_pinning_probe           pinned, 2 processes: exit 0 if each was on one CPU
 *   lab_pinning_probe threaded  not pinned: exit 0 if it kept every CPU it had */
#include "lab.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

static int allowed_before;

static int run_pinned(lab_ctx *ctx)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) || CPU_COUNT(&set) != 1) {
        fprintf(stderr, "error: process %u of %u may run on %d CPUs\n", ctx->process + 1,
                ctx->nprocesses, CPU_COUNT(&set));
        return 1;
    }
    /* the fingerprint's timing_cpu is this very CPU */
    char *fp = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&fp, &len);
    lab_write_fingerprint(f);
    fclose(f);
    int cpu = -1;
    const char *at = strstr(fp, "\"timing_cpu\":");
    if (at)
        cpu = atoi(at + strlen("\"timing_cpu\":"));
    free(fp);
    if (cpu < 0 || !CPU_ISSET(cpu, &set)) {
        fprintf(stderr, "error: pinned, but not to the fingerprint's timing_cpu %d\n", cpu);
        return 1;
    }
    return 0;
}

static int run_threaded(lab_ctx *ctx)
{
    (void)ctx;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) || CPU_COUNT(&set) != allowed_before) {
        fprintf(stderr, "error: an experiment with threads of its own was pinned (%d of %d CPUs)\n",
                CPU_COUNT(&set), allowed_before);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    cpu_set_t set;
    sched_getaffinity(0, sizeof set, &set);
    allowed_before = CPU_COUNT(&set);
    static const lab_info pinned = {.name = "pinning-probe", .seed = "", .description = "",
                                    .processes = 2, .pinned = 1};
    static const lab_info threaded = {.name = "threaded-probe", .seed = "", .description = ""};
    if (argc > 1 && !strcmp(argv[1], "threaded"))
        return lab_main(1, argv, &threaded, run_threaded);
    return lab_main(argc, argv, &pinned, run_pinned);
}
