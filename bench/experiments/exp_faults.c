/* SPDX-License-Identifier: Apache-2.0 */
/* faults: what pages cost (Kraus, "Bringing The Hardware And Windows To Its
 * Limits"; Dawson's table of fault, free and zero costs per MB).
 *
 * Part 1, one row per (page kind, phase), µs per MB of a REGION-byte
 * mapping: first touch (one write per 4 KiB), warm touch, zeroing with
 * mk_memset, munmap; 4 KiB pages against transparent huge pages; and the
 * three mk_prefault modes on fresh memory.
 * Part 2, the seed's figure: page touch and memcpy (mk_parallel_memcpy) into
 * fresh and into warm memory with 1..N threads of a pool, speed-up over one
 * thread per interleaved round (> 1: faster).
 * Both parts in the lab's interleaved rounds, shuffled; no warm-up pass
 * (every pass maps fresh memory: there is nothing to warm).
 *
 * Arguments: see --help. */
#include "lab.h"
#include "memkit.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_ROUNDS 50
#define MAX_THREADS 16

typedef enum { FIRST_TOUCH, WARM_TOUCH, ZERO, UNMAP, PREFAULT_TOUCH, PREFAULT_POPULATE,
               PREFAULT_LOCK } phase;

typedef struct {
    const char  *name;
    mk_page_kind kind;
    phase        what;
} page_row;

static const page_row page_rows[] = {
    {"first touch, 4 KiB pages", MK_PAGES_NORMAL, FIRST_TOUCH},
    {"first touch, THP", MK_PAGES_THP, FIRST_TOUCH},
    {"warm touch, 4 KiB pages", MK_PAGES_NORMAL, WARM_TOUCH},
    {"warm touch, THP", MK_PAGES_THP, WARM_TOUCH},
    {"zero (mk_memset), 4 KiB pages", MK_PAGES_NORMAL, ZERO},
    {"zero (mk_memset), THP", MK_PAGES_THP, ZERO},
    {"munmap, 4 KiB pages", MK_PAGES_NORMAL, UNMAP},
    {"munmap, THP", MK_PAGES_THP, UNMAP},
    {"prefault touch, 4 KiB pages", MK_PAGES_NORMAL, PREFAULT_TOUCH},
    {"prefault populate, 4 KiB pages", MK_PAGES_NORMAL, PREFAULT_POPULATE},
    {"prefault lock, 4 KiB pages", MK_PAGES_NORMAL, PREFAULT_LOCK},
    {"prefault populate, THP", MK_PAGES_THP, PREFAULT_POPULATE},
};
#define NPAGE_ROWS (sizeof page_rows / sizeof page_rows[0])

static void touch_range(unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i += 4096)
        p[i] = 1;
    lab_escape(p);
}

/* A mapping of the row's page kind; 4 KiB rows say no to THP explicitly so
 * the result does not depend on the system's THP mode. */
static unsigned char *map_kind(mk_page_kind kind, size_t n)
{
    mk_page_kind got;
    unsigned char *p = mk_pages_alloc(n, kind, &got);
    if (!p) {
        fprintf(stderr, "error: cannot map %zu bytes\n", n);
        exit(2);
    }
    if (kind == MK_PAGES_NORMAL)
        madvise(p, n, MADV_NOHUGEPAGE);
    return p;
}

static double time_phase(const page_row *r, size_t n)
{
    unsigned char *p = map_kind(r->kind, n);
    if (r->what != FIRST_TOUCH && r->what < PREFAULT_TOUCH)
        touch_range(p, n);
    double t0 = lab_now_ns();
    int err = 0;
    switch (r->what) {
    case FIRST_TOUCH:
    case WARM_TOUCH: touch_range(p, n); break;
    case ZERO: mk_memset(p, 0, n); lab_escape(p); break;
    case UNMAP: mk_pages_free(p, n); break;
    case PREFAULT_TOUCH: err = mk_prefault(p, n, MK_PREFAULT_TOUCH); break;
    case PREFAULT_POPULATE: err = mk_prefault(p, n, MK_PREFAULT_POPULATE); break;
    case PREFAULT_LOCK: err = mk_prefault(p, n, MK_PREFAULT_LOCK); break;
    }
    double t = lab_now_ns() - t0;
    if (r->what == PREFAULT_LOCK)
        munlock(p, n);
    if (r->what != UNMAP)
        mk_pages_free(p, n);
    return err ? -err : t / 1e3 / (n / 1e6);
}

/* ---- part 2: threads ---- */

typedef enum { TOUCH_FRESH, COPY_FRESH, COPY_WARM, NSCALING } scaling_kind;
static const char *const scaling_names[] = {"page touch, fresh", "memcpy, fresh destination",
                                            "memcpy, warm destination"};

static void touch_piece(void *ctx, size_t off, size_t len) { touch_range((unsigned char *)ctx + off, len); }

static double time_scaling(scaling_kind k, mk_pool *pool, const unsigned char *src, size_t n)
{
    unsigned char *dst = map_kind(MK_PAGES_NORMAL, n);
    if (k == COPY_WARM)
        touch_range(dst, n);
    double t0 = lab_now_ns();
    if (k == TOUCH_FRESH)
        mk_parallel_for(pool, dst, n, touch_piece, dst);
    else
        mk_parallel_memcpy(pool, dst, src, n);
    double t = lab_now_ns() - t0;
    lab_escape(dst);
    mk_pages_free(dst, n);
    return t;
}

typedef struct {
    size_t n;
    mk_pool **pools;
    const unsigned char *src;
} job;

static double page_pass(const lab_method *m, void *arg, int warm)
{
    const job *j = arg;
    return warm ? 0 : time_phase(m->data, j->n);
}

/* kind: the scaling kind; data: the thread count. */
static double scaling_pass(const lab_method *m, void *arg, int warm)
{
    const job *j = arg;
    if (warm)
        return 0;
    size_t t = (size_t)(uintptr_t)m->data;
    return time_scaling((scaling_kind)m->kind, j->pools[t], j->src, j->n) / 1e6;   /* ms */
}

static const lab_arg args[] = {
    {"mib", LAB_INT, "256", "32", "mapping size in MiB", 8, 65536},
    {"rounds", LAB_INT, "5", "1", "interleaved rounds (fewer than 5: no claims)", 1, MAX_ROUNDS},
    {"threads", LAB_INT, NULL, "2", "most threads (default: 2x the CPUs, at least 4)", 1,
     MAX_THREADS},
};

/* "faster (~95% interval 1.70..1.90x)", or "too noisy to tell (...)" */
static const char *judged(const lab_summary *s)
{
    static char buf[4][128];
    static int next;
    char *b = buf[next++ % 4], iv[80];
    int j = lab_judge(s->ratio_lo, s->ratio_hi);
    snprintf(b, sizeof buf[0], "%s (%s)", j > 0 ? "faster" : j < 0 ? "slower" : "too noisy to tell",
             lab_interval_text(s->ratio_lo, s->ratio_hi, iv, sizeof iv));
    return b;
}

/* Part 1: every (page kind, phase) row in the same interleaved rounds,
 * after one untimed pass of huge-page faults: a process's first ones pay
 * for compacting memory into free 2 MiB pages (measured here: ~2 ms/MB
 * once, then ~85 µs/MB).  us[row * rounds + round]. */
static void measure_page_costs(lab_ctx *ctx, size_t n, int rounds, double *us)
{
    time_phase(&page_rows[1], n);
    lab_method rows[NPAGE_ROWS];
    for (size_t i = 0; i < NPAGE_ROWS; i++)
        rows[i] = (lab_method){.name = page_rows[i].name, .kind = (int)i, .data = &page_rows[i]};
    job j = {n, NULL, NULL};
    lab_progress(ctx, 0, 2, "page costs");
    lab_interleave(ctx, rows, NPAGE_ROWS, (size_t)rounds, page_pass, &j, us);
}

/* Part 1's table and records; THP rows against the same phase with 4 KiB
 * pages, and the first touch's verdict. */
static void write_page_costs(lab_ctx *ctx, size_t n, int rounds, const double *us)
{
    char params[160], sz[32];
    printf("page costs, %s mapping, %d round(s)\n", lab_fmt_size(n, sz, sizeof sz), rounds);
    printf("%-34s %10s %10s %10s\n", "", "µs/MB", "min", "max");
    snprintf(params, sizeof params, "\"bytes\":%zu", n);
    for (size_t i = 0; i < NPAGE_ROWS; i++) {
        const page_row *pr = &page_rows[i];
        if (us[i * rounds] < 0) {
            printf("%-34s refused by the kernel (errno %d)\n", pr->name, (int)-us[i * rounds]);
            continue;
        }
        int base = pr->kind == MK_PAGES_THP && i > 0 && page_rows[i - 1].what == pr->what
                       ? (int)i - 1 : -1;
        lab_record r = {.series = pr->name, .params_json = params, .metric = "us_per_mb",
                        .unit = "µs/MB", .samples = &us[i * rounds], .n = (size_t)rounds,
                        .baseline = base >= 0 ? page_rows[base].name : NULL,
                        .baseline_samples = base >= 0 ? &us[base * rounds] : NULL};
        lab_summary s = lab_record_emit(ctx, &r);
        printf("%-34s %10.1f %10.1f %10.1f\n", pr->name, s.value, s.s.min, s.s.max);
        if (i == 1)
            lab_verdict(ctx, "first touch: THP's speed-up per MB over 4 KiB pages %.1fx: %s%s",
                        s.ratio, judged(&s),
                        s.ratio < 1.2 ? " - THP may not be in effect (see the fingerprint's thp)"
                                      : "");
        lab_summary_free(&s);
    }
}

/* Part 2: 1..N threads, each thread count a pool made once, every (kind,
 * threads) cell in the same interleaved rounds.  ms[cell * rounds + round]. */
static void measure_scaling(lab_ctx *ctx, size_t n, int rounds, int nthreads, double *ms)
{
    mk_pool *pools[MAX_THREADS + 1] = {0};
    for (int t = 1; t <= nthreads; t++)
        pools[t] = mk_pool_create((unsigned)t);
    unsigned char *src = lab_alloc(n);
    for (size_t i = 0; i < n; i += 8)
        src[i] = (unsigned char)i;
    lab_method cells[NSCALING * MAX_THREADS];
    size_t ncells = 0;
    for (int k = 0; k < NSCALING; k++)
        for (int t = 1; t <= nthreads; t++)
            cells[ncells++] = (lab_method){.name = scaling_names[k], .kind = k,
                                           .data = (const void *)(uintptr_t)t};
    job j = {n, pools, src};
    lab_progress(ctx, 1, 2, "threads");
    lab_interleave(ctx, cells, ncells, (size_t)rounds, scaling_pass, &j, ms);
    lab_progress(ctx, 2, 2, "done");
    for (int t = 1; t <= nthreads; t++)
        mk_pool_destroy(pools[t]);
    lab_free(src, n);
}

/* Part 2's table and records, each thread count against one thread; the
 * two-thread summaries kept in two[] for the verdicts. */
static void write_scaling(lab_ctx *ctx, size_t n, int rounds, int nthreads, const double *ms,
                          lab_summary *two)
{
    char params[160], base_params[160], sz[32];
    printf("\n%s with 1..%d threads (pool threads, caller included), %d round(s)\n",
           lab_fmt_size(n, sz, sizeof sz), nthreads, rounds);
    printf("%-28s %7s %10s %10s %12s\n", "", "threads", "ms", "GB/s", "vs 1 thread");
    snprintf(base_params, sizeof base_params, "\"threads\":1,\"bytes\":%zu", n);
    for (int k = 0; k < NSCALING; k++)
        for (int t = 1; t <= nthreads; t++) {
            const double *own = &ms[(size_t)(k * nthreads + t - 1) * rounds];
            const double *one = &ms[(size_t)(k * nthreads) * rounds];
            snprintf(params, sizeof params, "\"threads\":%d,\"bytes\":%zu", t, n);
            lab_record r = {.series = scaling_names[k], .params_json = params, .axis = "threads",
                            .axis_unit = "", .metric = "ms", .unit = "ms", .samples = own,
                            .n = (size_t)rounds, .baseline = t > 1 ? scaling_names[k] : NULL,
                            .baseline_params_json = base_params,
                            .baseline_samples = t > 1 ? one : NULL};
            lab_summary s = lab_record_emit(ctx, &r);
            printf("%-28s %7d %10.1f %10.2f %11.2fx\n", scaling_names[k], t, s.value,
                   n / 1e6 / s.value, t > 1 ? s.ratio : 1.0);
            if (t == 2)
                two[k] = s;
            else
                lab_summary_free(&s);
        }
}

static void scaling_verdicts(lab_ctx *ctx, const lab_summary *two)
{
    lab_verdict(ctx, "memcpy into fresh memory: 2 threads' speed-up over 1: %.2fx: %s; page "
                "faults are CPU work the threads share", two[COPY_FRESH].ratio,
                judged(&two[COPY_FRESH]));
    lab_verdict(ctx, "memcpy into warm memory: 2 threads' speed-up over 1: %.2fx: %s%s",
                two[COPY_WARM].ratio, judged(&two[COPY_WARM]),
                lab_judge(two[COPY_WARM].ratio_lo, two[COPY_WARM].ratio_hi) < 0
                    ? " (bandwidth already saturated by one)" : "");
    lab_verdict(ctx, "page touch of fresh memory: 2 threads' speed-up over 1: %.2fx: %s (Linux "
                "faults scale; the seed's Windows did not)", two[TOUCH_FRESH].ratio,
                judged(&two[TOUCH_FRESH]));
}

static int run(lab_ctx *ctx)
{
    size_t n = (size_t)lab_int(ctx, "mib") << 20;
    int rounds = (int)lab_int(ctx, "rounds");
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int nthreads = lab_text(ctx, "threads") ? (int)lab_int(ctx, "threads")
                   : cpus * 2 > 4 ? (int)cpus * 2 : 4;
    if (nthreads > MAX_THREADS)
        nthreads = MAX_THREADS;
    static double us[NPAGE_ROWS * MAX_ROUNDS], ms[NSCALING * MAX_THREADS * MAX_ROUNDS];
    measure_page_costs(ctx, n, rounds, us);
    write_page_costs(ctx, n, rounds, us);
    measure_scaling(ctx, n, rounds, nthreads, ms);
    lab_summary two[NSCALING] = {0};
    write_scaling(ctx, n, rounds, nthreads, ms, two);
    if (nthreads >= 2)
        scaling_verdicts(ctx, two);
    for (int k = 0; k < NSCALING; k++)
        lab_summary_free(&two[k]);
    return 0;
}

static const lab_info info = {
    .name = "faults", .seed = "hardware-and-windows-to-its-limits-page-faults",
    .description = "µs per MB of first touch, warm touch, zeroing, munmap (4 KiB vs THP), prefault "
                   "modes; touch and memcpy into fresh vs warm memory with 1..N threads",
    .args = args, .nargs = sizeof args / sizeof args[0]};

int main(int argc, char **argv) { return lab_main(argc, argv, &info, run); }
