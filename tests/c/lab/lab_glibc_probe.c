/* SPDX-License-Identifier: Apache-2.0 */
/* glibc tuned reaches its processes: a probe whose "glibc" method returns,
 * as its sample, 1 + a byte glibc's malloc leaves in a reused chunk: 0
 * where glibc runs as shipped, 0xff ^ P under
 * glibc_tunables=glibc.malloc.perturb=P (glibc fills freed chunks with P
 * and new ones with its complement).  Its "memkit" method returns 1, so
 * memkit's speed-up over glibc in a round is that sample: 1 where glibc
 * runs as shipped, 1 + (0xff ^ P) where it runs tuned.  No clock: it holds
 * on any CPU.  tests/python/test_glibc.py reads its records. */
#include "lab.h"

#include <stdlib.h>
#include <string.h>

enum { GLIBC, MEMKIT };

static double pass(const lab_method *m, void *arg, int warm)
{
    (void)arg;
    (void)warm;
    if (m->kind == MEMKIT)
        return 1;
    /* the same chunk again (glibc's per-thread cache): only the first 16
     * bytes hold its list pointers, the rest what was there before */
    unsigned char *q = malloc(100);
    memset(q, 0, 100);
    free(q);
    unsigned char *p = malloc(100);
    lab_escape(p);   /* what malloc left there is the point: not "uninitialised" */
    double sample = 1 + p[32];
    free(p);
    return sample;
}

static int run(lab_ctx *ctx)
{
    lab_method methods[] = {{.name = "glibc", .kind = GLIBC, .glibc = 1},
                            {.name = "memkit", .kind = MEMKIT}};
    size_t rounds = 5;
    double samples[2 * 5];
    lab_interleave(ctx, methods, 2, rounds, pass, NULL, samples);
    lab_record tmpl = {.params_json = "\"size\":100", .metric = "ns_per_call", .unit = "ns"};
    lab_summary sums[2];
    lab_emit_methods(ctx, &tmpl, methods, 2, rounds, samples, GLIBC, sums);
    lab_ranking *rk = lab_ranking_new("malloc's byte", 0, 0);
    lab_ranking_add(rk, "100 B", methods, 2, MEMKIT, sums, NULL);
    lab_ranking_verdicts(ctx, rk);
    lab_summary_free(&sums[0]);
    lab_summary_free(&sums[1]);
    return 0;
}

int main(int argc, char **argv)
{
    static const lab_info info = {.name = "glibc-probe", .seed = "", .description = "",
                                  .processes = 2, .races_glibc = 1};
    return lab_main(argc, argv, &info, run);
}
