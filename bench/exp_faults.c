/* faults: what pages cost (Kraus, "Bringing The Hardware And Windows To Its
 * Limits"; Dawson's table of fault, free and zero costs per MB).
 *
 * Part 1, one row per (page kind, phase), µs per MB of a REGION-byte
 * mapping: first touch (one write per 4 KiB), warm touch, zeroing with
 * mk_memset, munmap; 4 KiB pages against transparent huge pages; and the
 * three mk_prefault modes on fresh memory.
 * Part 2, the seed's figure: page touch and memcpy (mk_parallel_memcpy) into
 * fresh and into warm memory with 1..N threads of a pool, speed-up over one
 * thread per interleaved round.
 *
 *   memkit-exp-faults [--quick] [--mib N] [--rounds N] [--threads N] */
#include "lab.h"
#include "memkit.h"
#include "parallel/pool_internal.h"

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
    double       us_per_mb[MAX_ROUNDS];
} page_row;

static page_row page_rows[] = {
    {"first touch, 4 KiB pages", MK_PAGES_NORMAL, FIRST_TOUCH, {0}},
    {"first touch, THP", MK_PAGES_THP, FIRST_TOUCH, {0}},
    {"warm touch, 4 KiB pages", MK_PAGES_NORMAL, WARM_TOUCH, {0}},
    {"warm touch, THP", MK_PAGES_THP, WARM_TOUCH, {0}},
    {"zero (mk_memset), 4 KiB pages", MK_PAGES_NORMAL, ZERO, {0}},
    {"zero (mk_memset), THP", MK_PAGES_THP, ZERO, {0}},
    {"munmap, 4 KiB pages", MK_PAGES_NORMAL, UNMAP, {0}},
    {"munmap, THP", MK_PAGES_THP, UNMAP, {0}},
    {"prefault touch, 4 KiB pages", MK_PAGES_NORMAL, PREFAULT_TOUCH, {0}},
    {"prefault populate, 4 KiB pages", MK_PAGES_NORMAL, PREFAULT_POPULATE, {0}},
    {"prefault lock, 4 KiB pages", MK_PAGES_NORMAL, PREFAULT_LOCK, {0}},
    {"prefault populate, THP", MK_PAGES_THP, PREFAULT_POPULATE, {0}},
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
        mk_pool_run(pool, (uintptr_t)dst, n, mk_parallel_chunk, touch_piece, dst);
    else
        mk_parallel_memcpy(pool, dst, src, n);
    double t = lab_now_ns() - t0;
    lab_escape(dst);
    mk_pages_free(dst, n);
    return t;
}

static lab_stats stats(const double *v, int n)
{
    double tmp[MAX_ROUNDS];
    memcpy(tmp, v, (size_t)n * sizeof *v);
    return lab_stats_of(tmp, (size_t)n);
}

static int run(lab_ctx *ctx)
{
    size_t mib = ctx->quick ? 32 : 256;
    int rounds = ctx->quick ? 1 : 5;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int nthreads = cpus * 2 > 4 ? (int)cpus * 2 : 4;
    for (int i = 1; i < ctx->argc; i++) {
        if (!strcmp(ctx->argv[i], "--mib") && i + 1 < ctx->argc)
            mib = (size_t)atol(ctx->argv[++i]);
        else if (!strcmp(ctx->argv[i], "--rounds") && i + 1 < ctx->argc)
            rounds = atoi(ctx->argv[++i]);
        else if (!strcmp(ctx->argv[i], "--threads") && i + 1 < ctx->argc)
            nthreads = atoi(ctx->argv[++i]);
        else {
            fprintf(stderr, "error: unknown argument '%s' (see --help)\n", ctx->argv[i]);
            return 2;
        }
    }
    if (mib < 8 || mib > 65536 || rounds < 1 || rounds > MAX_ROUNDS || nthreads < 1 ||
        nthreads > MAX_THREADS) {
        fprintf(stderr, "error: --mib must be 8..65536, --rounds 1..%d, --threads 1..%d\n",
                MAX_ROUNDS, MAX_THREADS);
        return 2;
    }
    if (ctx->quick && nthreads > 2)
        nthreads = 2;
    size_t n = mib << 20;
    char params[160], sz[32];

    /* Part 1: rows interleaved round by round, after one untimed pass of
     * huge-page faults: a process's first ones pay for compacting memory
     * into free 2 MiB pages (measured here: ~2 ms/MB once, then ~85 µs/MB). */
    time_phase(&page_rows[1], n);
    for (int r = 0; r < rounds; r++) {
        lab_progress(ctx, (size_t)r, (size_t)rounds * 2, "page costs");
        for (size_t i = 0; i < NPAGE_ROWS; i++)
            page_rows[i].us_per_mb[r] = time_phase(&page_rows[i], n);
    }
    printf("page costs, %s mapping, %d round(s)\n", lab_fmt_size(n, sz, sizeof sz), rounds);
    printf("%-34s %10s %10s %10s\n", "", "µs/MB", "min", "max");
    for (size_t i = 0; i < NPAGE_ROWS; i++) {
        page_row *pr = &page_rows[i];
        if (pr->us_per_mb[0] < 0) {
            printf("%-34s refused by the kernel (errno %d)\n", pr->name, (int)-pr->us_per_mb[0]);
            continue;
        }
        lab_stats s = stats(pr->us_per_mb, rounds);
        printf("%-34s %10.1f %10.1f %10.1f\n", pr->name, s.median, s.min, s.max);
        snprintf(params, sizeof params, "\"bytes\":%zu", n);
        lab_emit(ctx, &(lab_measurement){.series = pr->name, .params_json = params,
                                         .metric = "us_per_mb", .unit = "µs/MB", .stat = "median",
                                         .value = s.median, .s = s});
    }
    double thp_ratio[MAX_ROUNDS];
    for (int r = 0; r < rounds; r++)
        thp_ratio[r] = page_rows[0].us_per_mb[r] / page_rows[1].us_per_mb[r];
    lab_stats tr = stats(thp_ratio, rounds);
    lab_verdict(ctx, "first touch: 4 KiB pages cost %.1fx what THP costs per MB (range %.1f..%.1f)%s",
                tr.median, tr.min, tr.max,
                tr.median < 1.2 ? " - THP may not be in effect (see the fingerprint's thp)" : "");

    /* Part 2: 1..N threads, each thread count a pool made once. */
    mk_pool *pools[MAX_THREADS + 1] = {0};
    for (int t = 1; t <= nthreads; t++)
        pools[t] = mk_pool_create((unsigned)t);
    unsigned char *src = lab_alloc(n);
    for (size_t i = 0; i < n; i += 8)
        src[i] = (unsigned char)i;
    static double ns[NSCALING][MAX_THREADS + 1][MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
        lab_progress(ctx, (size_t)(rounds + r), (size_t)rounds * 2, "threads");
        for (int k = 0; k < NSCALING; k++)
            for (int t = 1; t <= nthreads; t++)
                ns[k][t][r] = time_scaling((scaling_kind)k, pools[t], src, n);
    }
    lab_progress(ctx, (size_t)rounds * 2, (size_t)rounds * 2, "done");
    printf("\n%s with 1..%d threads (pool threads, caller included), %d round(s)\n",
           lab_fmt_size(n, sz, sizeof sz), nthreads, rounds);
    printf("%-28s %7s %10s %10s %12s\n", "", "threads", "ms", "GB/s", "vs 1 thread");
    double speedup2[NSCALING] = {0}, speedup2_min[NSCALING] = {0};
    for (int k = 0; k < NSCALING; k++)
        for (int t = 1; t <= nthreads; t++) {
            double ratio[MAX_ROUNDS];
            for (int r = 0; r < rounds; r++)
                ratio[r] = ns[k][1][r] / ns[k][t][r];
            lab_stats s = lab_stats_scaled(stats(ns[k][t], rounds), 1e-6), q = stats(ratio, rounds);
            printf("%-28s %7d %10.1f %10.2f %11.2fx\n", scaling_names[k], t, s.median,
                   n / 1e6 / s.median, q.median);
            snprintf(params, sizeof params, "\"threads\":%d,\"bytes\":%zu", t, n);
            lab_emit(ctx, &(lab_measurement){.series = scaling_names[k], .params_json = params,
                                             .metric = "ms", .unit = "ms", .stat = "median",
                                             .value = s.median, .s = s, .ratio_to = "1 thread",
                                             .ratio = q.median, .ratio_min = q.min,
                                             .ratio_max = q.max});
            if (t == 2) {
                speedup2[k] = q.median;
                speedup2_min[k] = q.min;
            }
        }
    if (nthreads >= 2) {
        lab_verdict(ctx, "memcpy into fresh memory: 2 threads %.2fx faster than 1 (worst round %.2fx): "
                    "page faults are CPU work the threads share", speedup2[COPY_FRESH],
                    speedup2_min[COPY_FRESH]);
        lab_verdict(ctx, "memcpy into warm memory: 2 threads %.2fx of 1 thread's speed (worst round "
                    "%.2fx): %s", speedup2[COPY_WARM], speedup2_min[COPY_WARM],
                    speedup2[COPY_WARM] >= 0.97 ? "never slower beyond the noise"
                                                : "slower: bandwidth already saturated by one");
        lab_verdict(ctx, "page touch of fresh memory: 2 threads %.2fx faster than 1 (Linux faults "
                    "scale; the seed's Windows did not)", speedup2[TOUCH_FRESH]);
    }
    for (int t = 1; t <= nthreads; t++)
        mk_pool_destroy(pools[t]);
    lab_free(src, n);
    return 0;
}

static const lab_info info = {
    "faults", "hardware-and-windows-to-its-limits-page-faults",
    "µs per MB of first touch, warm touch, zeroing, munmap (4 KiB vs THP), prefault modes; "
    "touch and memcpy into fresh vs warm memory with 1..N threads"};

int main(int argc, char **argv) { return lab_main(argc, argv, &info, run); }
