/* SPDX-License-Identifier: Apache-2.0 */
/* The sweep over a grid, from an experiment's declarations: which methods
 * race (only=, the copiers, the peers), which of them can run at a point,
 * and the loop over the grid, each point's interleaved rounds, records and
 * ranking.  An experiment declares its grid (a lab_grid: how many points,
 * what point i is), its methods and its kernel (a lab_pass_fn) and hands
 * them to lab_sweep; how a point is timed and written lives here, once. */
#ifndef MEMKIT_LAB_SWEEP_H
#define MEMKIT_LAB_SWEEP_H

#include "lab.h"

#include <stddef.h>

/* Whether name is one of the words of a "a,b,c" list (NULL: it is not). */
int lab_listed(const char *list, const char *name);

/* The copiers an experiment races, as methods (data: the mk_copier; libc
 * marked glibc's), in lab_copiers()'s order: the usable ones named in only
 * (every usable one when only is NULL) and those named in always; at most
 * cap of them.  The count. */
size_t lab_copier_methods(const char *only, const char *always, lab_method *out, size_t cap);

/* The memset methods (memset_methods(): glibc first, the baseline every
 * ratio is against) and the peers' memset, into out[cap]; skip[cap] set
 * only on the method that is mk_memset's own code under its variant's
 * name: no rival to it.  The count. */
size_t lab_memset_contestants(lab_ctx *ctx, lab_method *out, size_t cap, unsigned char *skip);

/* The index of the method called name in methods[n]; SIZE_MAX: none. */
size_t lab_method_index(const lab_method *methods, size_t n, const char *name);
/* The index of the first glibc method (lab_method.glibc); SIZE_MAX: none. */
size_t lab_glibc_index(const lab_method *methods, size_t n);

/* Whether method m can run at the grid point whose size is size (its
 * contract: an alignment, a whole number of blocks). */
typedef int lab_fits_fn(const lab_method *m, size_t size);

/* The methods of all[n] that fit at size (fits NULL: all), into out, in
 * their order; at[i] (at NULL: not wanted) is all[i]'s place in out, or
 * SIZE_MAX where it does not run; unranked[k] set where out[k] races but
 * does not compete with memkit at that size (lab_ranked_at).  The count. */
size_t lab_methods_at(const lab_method *all, size_t n, size_t size, lab_fits_fn *fits,
                      lab_method *out, size_t *at, unsigned char *unranked);

/* One grid point, declared. */
typedef struct LAB_DESIGNATED {
    const lab_method *methods;   /* those that run at this point */
    size_t n, rounds;
    lab_pass_fn *pass;           /* the kernel: one pass of a method */
    void *arg;
    const lab_record *tmpl;      /* its records' params, metric, unit (lab_emit_methods) */
    size_t baseline;             /* in methods; SIZE_MAX: none */
    lab_ranking *ranking;        /* NULL: not ranked */
    const char *label;           /* the point in the ranking ("4 KiB") */
    size_t memkit;               /* in methods; SIZE_MAX: the point is not ranked */
    const unsigned char *unranked;   /* per method (NULL: every one competes) */
    const int *failed;           /* the kernel sets it when the point is lost (NULL: never) */
} lab_point;

/* Times every method of the point in interleaved rounds (lab_interleave)
 * into samples[n * rounds], writes their records (lab_emit_methods, the
 * summaries into sums[n], which the caller frees with lab_summaries_free)
 * and adds the point to the ranking.  0; -1, nothing written nor ranked,
 * when the kernel set *failed. */
int lab_sweep_point(lab_ctx *ctx, const lab_point *p, double *samples, lab_summary *sums);
void lab_summaries_free(lab_summary *sums, size_t n);

/* A grid, declared: its points 0..npoints-1, what point i is, and what the
 * experiment does with a point's summaries (its table row, tallies of its
 * own).  The lab's core loops over it (lab_sweep). */
typedef struct LAB_DESIGNATED {
    size_t npoints;
    size_t max_methods, max_rounds;   /* the most any point has: the samples' room */
    /* Sets up point i in *p (methods, rounds, kernel and its argument,
     * record template, baseline, label, memkit's index; p->ranking NULL:
     * the grid's) and a progress text in what[len] ("" : the label).
     * Returns LAB_POINT_RUN, LAB_POINT_SKIP (not this point: arguments
     * leave it out) or LAB_POINT_ERROR (said on stderr: the sweep stops). */
    int (*declare)(lab_ctx *ctx, void *state, size_t i, lab_point *p, char *what, size_t len);
    /* Point i measured: its summaries, one per method, and this process's
     * samples (method m's round r at samples[m * p->rounds + r]); NULL:
     * nothing to do. */
    void (*measured)(lab_ctx *ctx, void *state, size_t i, const lab_point *p,
                     const lab_summary *sums, const double *samples);
    /* Point i lost: its kernel set *p->failed, nothing was written (NULL:
     * nothing to say). */
    void (*lost)(lab_ctx *ctx, void *state, size_t i, const lab_point *p);
    /* The ranking of the points that rank memkit (NULL: each point names
     * its own, or none); higher_is_better and ordered as lab_ranking_new. */
    const char *ranking;
    int higher_is_better, ordered;
    size_t progress_every;            /* progress every this many points (0: each) */
} lab_grid;

enum { LAB_POINT_RUN = 0, LAB_POINT_SKIP = 1, LAB_POINT_ERROR = -1 };

/* Every point of the grid in order: declared, timed and written
 * (lab_sweep_point), handed to measured, its summaries freed; progress on
 * stderr before each; the grid's ranking's verdicts at the end.  The points measured,
 * or -1 after a point's LAB_POINT_ERROR. */
long lab_sweep(lab_ctx *ctx, const lab_grid *g, void *state);

#endif
