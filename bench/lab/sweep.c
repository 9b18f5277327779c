/* SPDX-License-Identifier: Apache-2.0 */
/* The sweep over a grid (sweep.h): method selection, the loop over the
 * grid and one point's rounds, records and ranking. */
#include "sweep.h"

#include "copy_methods.h"
#include "memset_methods.h"

#include "memkit.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lab_listed(const char *list, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = list; p && (p = strstr(p, name)); p += len)
        if ((p == list || p[-1] == ',') && (p[len] == ',' || p[len] == '\0'))
            return 1;
    return 0;
}

size_t lab_copier_methods(const char *only, const char *always, lab_method *out, size_t cap)
{
    size_t count, k = 0;
    const mk_copier *all = lab_copiers(&count);
    for (size_t i = 0; i < count && k < cap; i++)
        if (all[i].usable && (!only || lab_listed(only, all[i].name) ||
                              lab_listed(always, all[i].name)))
            out[k++] = (lab_method){.name = all[i].name, .data = &all[i],
                                    .glibc = !strcmp(all[i].name, "libc")};
    return k;
}

size_t lab_memset_contestants(lab_ctx *ctx, lab_method *out, size_t cap, unsigned char *skip)
{
    size_t n;
    const memset_method *table = memset_methods(&n);
    for (size_t i = 0; i < n && i < cap; i++)
        out[i] = (lab_method){.name = table[i].name, .fn = (void (*)(void))table[i].fn,
                              .glibc = i == 0};
    n = lab_peer_methods(ctx, LAB_PEER_MEMSET, "", 0, out, n < cap ? n : cap, cap);
    memset(skip, 0, cap);
    int same = memset_method_index(mk_selected_variant(MK_OP_MEMSET));
    if (same >= 0)
        skip[same] = 1;
    return n;
}

size_t lab_method_index(const lab_method *methods, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(methods[i].name, name))
            return i;
    return SIZE_MAX;
}

size_t lab_glibc_index(const lab_method *methods, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (methods[i].glibc)
            return i;
    return SIZE_MAX;
}

size_t lab_methods_at(const lab_method *all, size_t n, size_t size, lab_fits_fn *fits,
                      lab_method *out, size_t *at, unsigned char *unranked)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int runs = !fits || fits(&all[i], size);
        if (at)
            at[i] = runs ? k : SIZE_MAX;
        if (!runs)
            continue;
        out[k] = all[i];
        if (unranked)
            unranked[k] = !lab_ranked_at(&out[k], size);
        k++;
    }
    return k;
}

int lab_sweep_point(lab_ctx *ctx, const lab_point *p, double *samples, lab_summary *sums)
{
    lab_interleave(ctx, p->methods, p->n, p->rounds, p->pass, p->arg, samples);
    if (p->failed && *p->failed)
        return -1;   /* a lost point's samples are not measurements */
    lab_emit_methods(ctx, p->tmpl, p->methods, p->n, p->rounds, samples, p->baseline, sums);
    if (p->ranking && p->memkit != SIZE_MAX)
        lab_ranking_add(p->ranking, p->label, p->methods, p->n, p->memkit, sums, p->unranked);
    return 0;
}

void lab_summaries_free(lab_summary *sums, size_t n)
{
    for (size_t i = 0; i < n; i++)
        lab_summary_free(&sums[i]);
}

long lab_sweep(lab_ctx *ctx, const lab_grid *g, void *state)
{
    double *samples = malloc(g->max_methods * g->max_rounds * sizeof *samples);
    lab_summary *sums = calloc(g->max_methods, sizeof *sums);
    lab_ranking *rk = g->ranking ? lab_ranking_new(g->ranking, g->higher_is_better, g->ordered)
                                 : NULL;
    long measured = 0;
    if (!samples || !sums) {
        fprintf(stderr, "error: out of memory\n");
        measured = -1;
    }
    for (size_t i = 0; measured >= 0 && i < g->npoints; i++) {
        lab_point p = {.baseline = SIZE_MAX, .memkit = SIZE_MAX};
        char what[256] = "";
        int how = g->declare(ctx, state, i, &p, what, sizeof what);
        if (how == LAB_POINT_ERROR)
            measured = -1;
        if (how != LAB_POINT_RUN)
            continue;
        if (!p.ranking)
            p.ranking = rk;
        if (!g->progress_every || i % g->progress_every == 0)
            lab_progress(ctx, i, g->npoints, what[0] ? what : p.label ? p.label : "");
        if (p.n > g->max_methods || p.rounds > g->max_rounds) {
            fprintf(stderr, "error: point %zu declares %zu methods x %zu rounds, the grid "
                            "%zu x %zu\n", i, p.n, p.rounds, g->max_methods, g->max_rounds);
            measured = -1;
            continue;
        }
        if (lab_sweep_point(ctx, &p, samples, sums) < 0) {
            if (g->lost)
                g->lost(ctx, state, i, &p);
            continue;
        }
        if (g->measured)
            g->measured(ctx, state, i, &p, sums, samples);
        lab_summaries_free(sums, p.n);
        measured++;
    }
    if (rk)
        lab_ranking_verdicts(ctx, rk);
    free(samples);
    free(sums);
    return measured;
}
