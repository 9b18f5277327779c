/* SPDX-License-Identifier: Apache-2.0 */
/* hot-copies: every copier from 4 KiB to 1 MiB in GB/s, the buffers hot.
 * The example of docs/architecture.md ("How an experiment is written"),
 * built and run by the tests (lab_example_experiment) so that the page
 * stays true; not an experiment of the suite (copy-sweep asks this and
 * more). */
#include "lab.h"
#include "sweep.h"

#include "memkit.h"

#define MAX_COPIERS 32
#define POINTS 9   /* 4 KiB, 8 KiB, ... 1 MiB */

static const lab_arg args[] = {
    {"rounds", LAB_INT, "11", "3", "interleaved rounds per size", 2, 63},
    {"only", LAB_TEXT, NULL, NULL, "only these copiers (COPIER,COPIER...)"},
};

typedef struct {   /* the grid's state: the methods, the buffers, this point */
    lab_method all[MAX_COPIERS], at[MAX_COPIERS];
    size_t nall, rounds, n;
    char *dst, *src, params[32], label[32];
    lab_record tmpl;
} hot_copies;

static double copy_once(const lab_method *m, void *arg, int warm)   /* the kernel */
{
    (void)warm;
    const hot_copies *h = arg;
    double t0 = lab_now_ns();
    ((const mk_copier *)m->data)->copy_in(h->dst, h->src, h->n);
    lab_escape(h->dst);
    return (double)h->n / (lab_now_ns() - t0);
}

/* a copier with an alignment runs where it divides the size */
static int fits(const lab_method *m, size_t n) { return n % ((const mk_copier *)m->data)->align == 0; }

static int declare(lab_ctx *ctx, void *state, size_t i, lab_point *p, char *what, size_t len)
{
    (void)ctx, (void)what, (void)len;
    hot_copies *h = state;
    h->n = (size_t)4096 << i;
    snprintf(h->params, sizeof h->params, "\"size\":%zu", h->n);
    h->tmpl = (lab_record){.params_json = h->params, .axis = "size", .axis_unit = "B",
                           .metric = "gb_per_s", .unit = "GB/s", .higher_is_better = 1};
    size_t nm = lab_methods_at(h->all, h->nall, h->n, fits, h->at, NULL, NULL);
    *p = (lab_point){.methods = h->at, .n = nm, .rounds = h->rounds, .pass = copy_once, .arg = h,
                     .tmpl = &h->tmpl, .baseline = lab_glibc_index(h->at, nm),
                     .label = lab_fmt_size(h->n, h->label, sizeof h->label),
                     .memkit = lab_method_index(h->at, nm, "memkit")};
    return LAB_POINT_RUN;
}

static void measured(lab_ctx *ctx, void *state, size_t i, const lab_point *p,
                     const lab_summary *sums, const double *samples)
{
    (void)ctx, (void)state, (void)i, (void)samples;
    printf("%10s", p->label);
    for (size_t m = 0; m < p->n; m++)
        printf("  %s %.2f", p->methods[m].name, sums[m].value);
    printf("\n");
}

static int run(lab_ctx *ctx)
{
    static hot_copies h;
    h.nall = lab_copier_methods(lab_text(ctx, "only"), NULL, h.all, MAX_COPIERS);
    h.rounds = (size_t)lab_int(ctx, "rounds");
    h.dst = lab_alloc((size_t)1 << 20);
    h.src = lab_alloc((size_t)1 << 20);
    lab_grid grid = {.npoints = POINTS, .max_methods = MAX_COPIERS, .max_rounds = 63,
                     .declare = declare, .measured = measured,
                     .ranking = "copy, hot buffers", .higher_is_better = 1, .ordered = 1};
    printf("copy throughput, GB/s (median of interleaved rounds)\n");
    return lab_sweep(ctx, &grid, &h) < 0 ? 2 : 0;   /* then the verdicts: "loss", "fastest" */
}

int main(int argc, char **argv)
{
    static const lab_info info = {.name = "hot-copies", .seed = "going-faster-than-memcpy",
                                  .description = "every copier 4 KiB..1 MiB in GB/s, hot buffers",
                                  .args = args, .nargs = sizeof args / sizeof args[0],
                                  .pinned = 1, .races_glibc = 1};
    return lab_main(argc, argv, &info, run);
}
