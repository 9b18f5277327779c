/* SPDX-License-Identifier: Apache-2.0 */
/* ipc-copy: the Shadesmar seed's own scenario.  A publisher process copies
 * each message from its memory into a slot of a ring in shared memory
 * (copy_in), a subscriber process copies it out into its memory
 * (copy_out), one handshake per slot (ipc_ring/); every usable
 * copier, and the MT adapter (mk_parallel_copy) over memkit and over the
 * best single-threaded copier, 4 KiB .. 16 MiB, densely in the seed's
 * 512 KiB .. 2 MiB.
 *
 * Method: per size, the lab's interleaved rounds (shuffled order; before
 * each timed batch an untimed lap of the ring by the same copier); a batch
 * starts with an empty ring and ends when the subscriber released its last
 * message.  GB/s = bytes delivered / batch time, median over rounds; the
 * speed-up over libc per round.  Each side's copying time is measured; the rest of the batch is
 * waiting (and the handshake).  Private buffers come from the copier's own
 * alloc; the ring's slots start on pages (2 MiB for large messages), so
 * every copier's alignment holds.  Each copier's first warm-up lap at each
 * size is checked byte for byte by the subscriber; every other message
 * carries its number in its first and last 8 bytes, checked too.
 *
 * The ring is a memfd (nothing in /dev/shm, whatever ends the run) on huge
 * pages where the system gives them (hugetlb reserved, else THP for shmem);
 * the kind obtained is reported.  The MT adapter runs as the library ships
 * it: one thread below the parallel_threshold tunable.
 *
 * Arguments: see --help. */
#include "ipc_ring.h"
#include "copy_methods.h"
#include "lab.h"
#include "memkit.h"
#include "sweep.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_METHODS 32
#define MAX_SIZES 64
#define MAX_ROUNDS 31
#define MT_TAG 0x10000u      /* through mk_parallel_copy */
#define CHECK_TAG 0x20000u   /* the subscriber checks every byte */
#define PILOT_SIZE ((size_t)1 << 20)

static int check_only(const char *v, char *err, size_t len)
{
    return lab_copier_list_check(v, 1, NULL, err, len);
}

static int check_mt(const char *v, char *err, size_t len)
{
    return strcmp(v, "none") ? lab_copier_list_check(v, 1, "best", err, len) : 0;
}

static int check_pages(const char *v, char *err, size_t len)
{
    return lab_one_of(v, "normal|thp|hugetlb", err, len);
}

static int check_backing(const char *v, char *err, size_t len)
{
    return lab_one_of(v, "memfd|shm", err, len);
}

static int check(lab_ctx *ctx) { return lab_check_order(ctx, "min", "max"); }

static const lab_arg args[] = {
    {"min", LAB_SIZE, "4K", NULL, "smallest message", 16, 1 << 30},
    {"max", LAB_SIZE, "16M", "4M", "largest message", 16, 1 << 30},
    {"only", LAB_TEXT, NULL, NULL, "only these copiers, COPIER,... (libc and memkit always run)",
     0, 0, check_only},
    {"mt", LAB_TEXT, "memkit,best", NULL,
     "the MT adapter over these copiers, COPIER,...; best: the pilot's fastest; none", 0, 0,
     check_mt},
    {"slots", LAB_INT, "16", "8", "message slots in the ring", 2, 256},
    {"rounds", LAB_INT, "7", "3", "timed batches per copier and size", 1, 31},
    {"pages", LAB_TEXT, "hugetlb", NULL,
     "the ring's pages: normal, thp or hugetlb (each falls back to the next smaller)", 0, 0,
     check_pages},
    {"backing", LAB_TEXT, "memfd", NULL, "the ring's memory: memfd or shm (unlinked at once)", 0, 0,
     check_backing},
    {"threads", LAB_INT, "0", NULL, "MT adapter threads per process (0: the library's default)",
     0, 1024},
};

typedef struct {
    size_t min, max;
    const char *only, *mt;
    unsigned slots, threads, rounds;
    mk_page_kind pages;
    ipc_backing backing;
} options;

typedef struct {
    char name[48];
    const mk_copier *c;
    unsigned index;     /* in lab_copiers() */
    int mt;
} method;

/* ---- arguments ---- */

/* The arguments, checked before the run (args[], check). */
static void get_options(lab_ctx *ctx, options *o)
{
    const char *pages = lab_text(ctx, "pages"), *backing = lab_text(ctx, "backing");
    *o = (options){lab_size(ctx, "min"), lab_size(ctx, "max"), lab_text(ctx, "only"),
                   lab_text(ctx, "mt"), (unsigned)lab_int(ctx, "slots"),
                   (unsigned)lab_int(ctx, "threads"), (unsigned)lab_int(ctx, "rounds"),
                   !strcmp(pages, "normal") ? MK_PAGES_NORMAL : !strcmp(pages, "thp") ? MK_PAGES_THP
                                                                                     : MK_PAGES_HUGETLB,
                   !strcmp(backing, "shm") ? IPC_BACKING_SHM : IPC_BACKING_MEMFD};
}

/* Powers of two, and from 512 KiB to 2 MiB (the seed's messages) steps of
 * 128 KiB, then 256 KiB. */
static size_t size_grid(const options *o, int quick, size_t *sizes)
{
    size_t k = 0;
    for (size_t n = o->min; n <= o->max && k < MAX_SIZES; ) {
        sizes[k++] = n;
        size_t next = n * 2;
        if (!quick && n >= ((size_t)512 << 10) && n < ((size_t)2 << 20))
            next = n + (n < ((size_t)1 << 20) ? (size_t)128 << 10 : (size_t)256 << 10);
        else if (quick && n < ((size_t)512 << 10))
            next = n * 16 > ((size_t)512 << 10) ? (size_t)512 << 10 : n * 16;
        n = next;
    }
    return k;
}

/* ---- both sides ---- */

static int copy(const method *m, mk_pool *pool, int to_shared, void *dst, const void *src,
                size_t n)
{
    if (m->mt)
        return mk_parallel_copy(pool, m->c, to_shared, dst, src, n);
    return (to_shared ? m->c->copy_in : m->c->copy_out)(dst, src, n);
}

/* Each side's private buffer per copier, from the copier's alloc, faulted in. */
static void *private_buffer(void **bufs, const mk_copier *c, unsigned index, size_t max)
{
    if (!bufs[index]) {
        bufs[index] = c->alloc(max);
        if (!bufs[index]) {
            fprintf(stderr, "error: %s cannot allocate %zu bytes\n", c->name, max);
            _exit(2);
        }
        memset(bufs[index], 0, max);
    }
    return bufs[index];
}

/* The subscriber: until the publisher closes the ring, copies each message
 * out with the copier its tag names and checks it. */
static int subscriber(ipc_ring *r, const options *o)
{
    size_t count;
    const mk_copier *cs = lab_copiers(&count);
    mk_pool *pool = mk_pool_create(o->threads);
    void *bufs[MAX_METHODS] = {0};
    ipc_message msg;
    ipc_status st;
    while ((st = ipc_ring_receive(r, &msg)) == IPC_OK) {
        unsigned index = msg.tag & 0xffff;
        method m = {.c = &cs[index], .index = index, .mt = (msg.tag & MT_TAG) != 0};
        void *dst = private_buffer(bufs, m.c, index, o->max);
        uint64_t t0 = ipc_now_ns();
        int err = copy(&m, pool, 0, dst, msg.data, msg.size);
        uint64_t t1 = ipc_now_ns();
        int bad = err || (msg.tag & CHECK_TAG ? ipc_pattern_errors(dst, msg.size, msg.seq) != 0
                                               : !ipc_stamp_ok(dst, msg.size, msg.seq));
        ipc_ring_release(r, &msg, t1 - t0, bad);
    }
    return st == IPC_CLOSED ? 0 : 3;
}

/* ---- the publisher ---- */

typedef struct {
    double wall_ns, pub_copy_ns, pub_wait_ns, sub_copy_ns;
} batch_time;

typedef struct {
    ipc_ring *r;
    mk_pool *pool;
    void *bufs[MAX_METHODS];
    size_t max;
    uint64_t damaged;
    int failed;          /* the ring failed: the subscriber is gone */
} publisher;

/* count messages of n bytes through method m, from an empty ring to an
 * empty ring.  check: every byte of every message checked. */
static int batch(publisher *p, const method *m, size_t n, size_t count, int check,
                 batch_time *out)
{
    unsigned char *src = private_buffer(p->bufs, m->c, m->index, p->max);
    ipc_tally before = ipc_ring_tally(p->r), after;
    uint64_t copy_ns = 0, wait_ns = 0, t0 = ipc_now_ns();
    for (size_t k = 0; k < count; k++) {
        ipc_message msg;
        uint64_t waited;
        if (ipc_ring_claim(p->r, &msg, n, &waited) != IPC_OK)
            return -1;
        wait_ns += waited;
        if (check)
            ipc_pattern_fill(src, n, msg.seq);
        else
            ipc_stamp(src, n, msg.seq);
        uint64_t c0 = ipc_now_ns();
        if (copy(m, p->pool, 1, msg.data, src, n) != 0)
            return -1;
        copy_ns += ipc_now_ns() - c0;
        ipc_ring_publish(p->r, &msg, m->index | (m->mt ? MT_TAG : 0) | (check ? CHECK_TAG : 0));
    }
    if (ipc_ring_drain(p->r, &after) != IPC_OK)
        return -1;
    *out = (batch_time){(double)(ipc_now_ns() - t0), (double)copy_ns, (double)wait_ns,
                        (double)(after.busy_ns - before.busy_ns)};
    p->damaged += after.bad - before.bad;
    return 0;
}

static int fits(const lab_method *lm, size_t n)
{
    return n % ((const method *)lm->data)->c->align == 0;
}

/* One size's interleaved rounds: the lab calls pass() per method, a warm-up
 * lap then a timed batch; the batch's parts are kept per method and round. */
typedef struct {
    publisher *p;
    const lab_method *lm;
    size_t n, count, laps;
    size_t done[MAX_METHODS];                    /* timed batches so far */
    unsigned char checked[MAX_METHODS];          /* its warm-up lap was checked */
    batch_time t[MAX_METHODS][MAX_ROUNDS];
} size_run;

static double pass(const lab_method *lm, void *arg, int warm)
{
    size_run *s = arg;
    size_t i = (size_t)(lm - s->lm);
    const method *m = lm->data;
    batch_time bt;
    if (s->p->failed)
        return NAN;
    if (warm) {   /* one lap of the ring; the first checked byte for byte */
        if (batch(s->p, m, s->n, s->laps, !s->checked[i], &bt))
            s->p->failed = 1;
        s->checked[i] = 1;
        return 0;
    }
    batch_time *t = &s->t[i][s->done[i]++];
    if (batch(s->p, m, s->n, s->count, 0, t)) {
        s->p->failed = 1;
        return NAN;
    }
    return (double)(s->n * s->count) / t->wall_ns;
}

static size_t messages_per_batch(lab_ctx *ctx, const options *o, size_t n)
{
    size_t bytes = ctx->quick ? (size_t)4 << 20 : (size_t)32 << 20, k = bytes / n;
    return k > 2 * o->slots ? k : 2 * o->slots;
}

/* The methods that can copy n-byte messages, as the lab's method table. */
static size_t methods_for(const method *ms, size_t nm, size_t n, lab_method *lm)
{
    lab_method all[MAX_METHODS];
    for (size_t i = 0; i < nm; i++)
        all[i] = (lab_method){.name = ms[i].name, .kind = ms[i].mt, .data = &ms[i]};
    return lab_methods_at(all, nm, n, fits, lm, NULL, NULL);
}

/* The best single-threaded copier: a short interleaved pilot at 1 MiB. */
static const method *pilot_best(lab_ctx *ctx, publisher *p, const options *o,
                                const method *ms, size_t nm, size_run *s)
{
    size_t n = PILOT_SIZE < o->max ? PILOT_SIZE : o->max;
    n -= n % 256;
    lab_method lm[MAX_METHODS];
    size_t k = methods_for(ms, nm, n, lm);
    double gbps[MAX_METHODS * 3];
    *s = (size_run){.p = p, .lm = lm, .n = n, .count = messages_per_batch(ctx, o, n),
                    .laps = o->slots};
    lab_interleave(ctx, lm, k, 3, pass, s, gbps);
    if (p->failed)
        return NULL;
    const method *best = NULL;
    double best_gbps = 0;
    for (size_t i = 0; i < k; i++) {
        double g = lab_stat_value(&gbps[i * 3], 3, "median", 1);
        if (g > best_gbps)
            best_gbps = g, best = lm[i].data;
    }
    return best;
}

/* ---- output ---- */

/* What one size's results say, for the tables and the verdicts (per method
 * of the full list; gbps 0: not run at this size). */
typedef struct {
    double gbps[MAX_METHODS], us[MAX_METHODS];
    double ratio[MAX_METHODS], ratio_lo[MAX_METHODS], ratio_hi[MAX_METHODS];   /* over libc */
    double vs_base[MAX_METHODS];    /* MT methods: median speed-up over their base */
    double pub_copy[MAX_METHODS], sub_copy[MAX_METHODS], pub_wait[MAX_METHODS];
} size_summary;

/* Method i's time per message and each side's shares of the batch time:
 * their records, their values into value[4]. */
static void emit_parts(lab_ctx *ctx, const options *o, const char *params, const lab_method *lm,
                       size_t i, const size_run *s, double *value)
{
    static const struct {
        const char *metric, *unit;
        int higher;
    } parts[] = {{"us_per_message", "us", 0},
                 {"publisher_copy_share", "%", 1},
                 {"publisher_wait_share", "%", 0},
                 {"subscriber_copy_share", "%", 1}};
    size_t rounds = o->rounds;
    double v[4][MAX_ROUNDS];
    for (size_t r = 0; r < rounds; r++) {
        const batch_time *t = &s->t[i][r];
        v[0][r] = t->wall_ns / 1e3 / (double)s->count;
        v[1][r] = 100 * t->pub_copy_ns / t->wall_ns;
        v[2][r] = 100 * t->pub_wait_ns / t->wall_ns;
        v[3][r] = 100 * t->sub_copy_ns / t->wall_ns;
    }
    for (int p = 0; p < 4; p++) {
        lab_record rec = {.series = lm[i].name, .params_json = params, .axis = "size",
                          .axis_unit = "B", .metric = parts[p].metric, .unit = parts[p].unit,
                          .higher_is_better = parts[p].higher, .samples = v[p], .n = rounds};
        lab_summary ps = lab_record_emit(ctx, &rec);
        value[p] = ps.value;
        lab_summary_free(&ps);
    }
}

/* An MT method i's median speed-up over its own base, round by round. */
static double over_base(const lab_method *lm, size_t k, size_t i, const double *gbps,
                        size_t rounds, double previous)
{
    const method *m = lm[i].data;
    for (size_t b = 0; b < k; b++) {
        const method *mb = lm[b].data;
        if (!mb->mt && mb->c == m->c) {
            double q[MAX_ROUNDS];
            lab_speedups(&gbps[i * rounds], &gbps[b * rounds], rounds, 1, q);
            previous = lab_stat_value(q, rounds, "median", 1);
        }
    }
    return previous;
}

/* Records of one size beside its GB/s (lab_sweep_point wrote those, sums):
 * per method the time per message and each side's shares of the batch
 * time; what the tables and verdicts need into sum. */
static void report_size(lab_ctx *ctx, const options *o, const char *params, const method *ms,
                        const lab_method *lm, size_t k, size_t n, const double *gbps,
                        size_run *s, const lab_summary *sums, size_summary *sum)
{
    size_t libc = lab_method_index(lm, k, "libc");
    for (size_t i = 0; i < k; i++) {
        size_t g = (size_t)((const method *)lm[i].data - ms);
        double value[4];
        emit_parts(ctx, o, params, lm, i, s, value);
        sum->gbps[g] = sums[i].value;
        sum->us[g] = value[0];
        sum->pub_copy[g] = value[1];
        sum->pub_wait[g] = value[2];
        sum->sub_copy[g] = value[3];
        sum->ratio[g] = i == libc ? 1 : sums[i].has_ratio ? sums[i].ratio : 0;
        if (ms[g].mt && n < lab_tunable("parallel_threshold"))
            sum->ratio[g] = 0;   /* one thread: its base copier again, not a candidate */
        sum->ratio_lo[g] = sums[i].has_ratio ? sums[i].ratio_lo : 1;
        sum->ratio_hi[g] = sums[i].has_ratio ? sums[i].ratio_hi : 1;
        if (ms[g].mt)
            sum->vs_base[g] = over_base(lm, k, i, gbps, o->rounds, sum->vs_base[g]);
    }
}

static int width(const method *m) { return strlen(m->name) > 9 ? (int)strlen(m->name) : 9; }

static void print_tables(const method *ms, size_t nm, const size_t *sizes, size_t ns,
                         const size_summary *sum)
{
    static const char *titles[] = {
        "delivered GB/s (median of interleaved rounds; '-': size not a multiple of the "
        "copier's alignment)",
        "time per message, us",
        "share of the time copying, publisher/subscriber %"};
    for (int t = 0; t < 3; t++) {
        printf("\n%s\n%10s", titles[t], "size");
        for (size_t i = 0; i < nm; i++)
            printf(" %*s", width(&ms[i]), ms[i].name);
        printf("\n");
        for (size_t k = 0; k < ns; k++) {
            char sz[32], cell[32];
            printf("%10s", lab_fmt_size(sizes[k], sz, sizeof sz));
            for (size_t i = 0; i < nm; i++) {
                if (!sum[k].gbps[i])
                    snprintf(cell, sizeof cell, "-");
                else if (t == 0)
                    snprintf(cell, sizeof cell, "%.2f", sum[k].gbps[i]);
                else if (t == 1)
                    snprintf(cell, sizeof cell, "%.1f", sum[k].us[i]);
                else
                    snprintf(cell, sizeof cell, "%.0f/%.0f", sum[k].pub_copy[i], sum[k].sub_copy[i]);
                printf(" %*s", width(&ms[i]), cell);
            }
            printf("\n");
        }
    }
}

/* ---- verdicts ---- */

typedef struct {
    const char *name;
    size_t lo, hi;
} size_range;

static const size_range ranges[] = {
    {"4 KiB..256 KiB", 4096, (size_t)256 << 10},
    {"512 KiB..2 MiB (the seed's messages)", (size_t)512 << 10, (size_t)2 << 20},
    {"4 MiB..16 MiB", (size_t)4 << 20, (size_t)16 << 20},
};

/* Method i over libc across the sizes in [lo, hi]: the geometric mean of
 * the per-size speed-ups, their smallest and largest, and at how many
 * sizes the speed-up's interval lay wholly above 1 (faster) or below;
 * 0 when it ran at none. */
typedef struct {
    double mean, min, max;
    size_t sizes, faster, slower;
} range_view;

static range_view range_ratio(const size_t *sizes, size_t ns, const size_summary *sum, size_t i,
                              size_t lo, size_t hi)
{
    range_view v = {0, 1e9, 0, 0, 0, 0};
    double logsum = 0;
    for (size_t s = 0; s < ns; s++)
        if (sizes[s] >= lo && sizes[s] <= hi && sum[s].ratio[i] > 0) {
            double q = sum[s].ratio[i];
            logsum += log(q), v.sizes++;
            v.min = q < v.min ? q : v.min;
            v.max = q > v.max ? q : v.max;
            int j = lab_judge(sum[s].ratio_lo[i], sum[s].ratio_hi[i]);
            v.faster += j > 0, v.slower += j < 0;
        }
    if (v.sizes)
        v.mean = exp(logsum / (double)v.sizes);
    return v;
}

/* The MT adapter splits nothing below parallel_threshold (it is its base
 * copier there): whether it pays is judged from that size on. */
static void mt_verdict(lab_ctx *ctx, const method *m, size_t i, const size_t *sizes, size_t ns,
                       const size_summary *sum)
{
    size_t threshold = lab_tunable("parallel_threshold"), first = 0, from = 0, best = 0;
    while (first < ns && sizes[first] < threshold)
        first++;
    char sz[32], bsz[32], tsz[32];
    lab_fmt_size(threshold, tsz, sizeof tsz);
    if (first == ns) {
        lab_verdict_kind(ctx, "note", "%s runs one thread below parallel_threshold=%s, above every size "
                             "measured: it was %s", m->name, tsz, m->c->name);
        return;
    }
    int pays = 0;
    for (size_t k = first; k < ns; k++) {
        if (sum[k].vs_base[i] >= 1.05 && !pays)
            from = k;
        pays = sum[k].vs_base[i] >= 1.05;
        if (sum[k].vs_base[i] > sum[best].vs_base[i] || best < first)
            best = k;
    }
    lab_fmt_size(sizes[best], bsz, sizeof bsz);
    if (pays)
        lab_verdict_kind(ctx, "note", "%s pays from %s on (5%% or more over %s at every size from there; "
                             "best %.2fx at %s; one thread below parallel_threshold=%s)",
                m->name, lab_fmt_size(sizes[from], sz, sizeof sz), m->c->name,
                sum[best].vs_base[i], bsz, tsz);
    else
        lab_verdict_kind(ctx, "note", "%s does not pay here: from parallel_threshold=%s on it is at best "
                             "%.2fx %s (at %s), %.2fx at %s",
                m->name, tsz, sum[best].vs_base[i], m->c->name, bsz, sum[ns - 1].vs_base[i],
                lab_fmt_size(sizes[ns - 1], sz, sizeof sz));
}

/* Per range of sizes, the fastest method over libc (and memkit beside it);
 * the best in the seed's range into *seed and *seed_best. */
static void range_verdicts(lab_ctx *ctx, const method *ms, size_t nm, size_t libc, size_t memkit,
                           const size_t *sizes, size_t ns, const size_summary *sum,
                           range_view *seed, const char **seed_best)
{
    for (size_t g = 0; g < sizeof ranges / sizeof ranges[0]; g++) {
        range_view best = {0}, v;
        size_t bi = 0;
        for (size_t i = 0; i < nm; i++)
            if (i != libc && (v = range_ratio(sizes, ns, sum, i, ranges[g].lo, ranges[g].hi)).mean >
                                 best.mean)
                best = v, bi = i;
        if (!best.sizes)
            continue;
        range_view mk = range_ratio(sizes, ns, sum, memkit, ranges[g].lo, ranges[g].hi);
        lab_verdict_kind(ctx, "fastest",
                         "%s: fastest %s, %.2fx libc's GB/s (geometric mean; per size "
                         "%.2f..%.2fx, faster beyond the noise at %zu of %zu sizes, slower at "
                         "%zu); memkit %.2fx",
                         ranges[g].name, ms[bi].name, best.mean, best.min, best.max, best.faster,
                         best.sizes, best.slower, mk.mean);
        if (g == 1)
            *seed = best, *seed_best = ms[bi].name;
    }
}

/* Whether the seed's advice (stick to memcpy) holds for its messages. */
static void seed_verdict(lab_ctx *ctx, const range_view *seed, const char *seed_best)
{
    if (seed->mean < 1.05 || seed->faster * 2 <= seed->sizes)
        lab_verdict_kind(ctx, "note",
                         "the seed's advice, stick to memcpy, holds here: for 512 KiB..2 MiB "
                         "messages no copier beats libc by 5%% at most sizes beyond the "
                         "noise (best %s, %.2fx, faster at %zu of %zu sizes)",
                         seed_best, seed->mean, seed->faster, seed->sizes);
    else
        lab_verdict_kind(ctx, "note",
                         "the seed's advice, stick to memcpy, does not hold here: %s "
                         "delivers 512 KiB..2 MiB messages %.2fx as fast as libc (faster "
                         "beyond the noise at %zu of %zu sizes)",
                         seed_best, seed->mean, seed->faster, seed->sizes);
}

/* Copy vs wait, at the seed's 1 MiB (or the nearest). */
static void share_verdict(lab_ctx *ctx, size_t libc, const size_t *sizes, size_t ns,
                          const size_summary *sum)
{
    for (size_t k = 0; k < ns; k++)
        if (sizes[k] >= PILOT_SIZE || k == ns - 1) {
            char sz[32];
            lab_verdict_kind(ctx, "note",
                             "at %s with libc the publisher copies %.0f%% of the time and waits "
                             "%.0f%%, the subscriber copies %.0f%%; %.1f us per message",
                             lab_fmt_size(sizes[k], sz, sizeof sz), sum[k].pub_copy[libc],
                             sum[k].pub_wait[libc], sum[k].sub_copy[libc], sum[k].us[libc]);
            break;
        }
}

static void verdicts(lab_ctx *ctx, const method *ms, size_t nm, size_t libc, size_t memkit,
                     const size_t *sizes, size_t ns, const size_summary *sum)
{
    range_view seed = {0};
    const char *seed_best = NULL;
    range_verdicts(ctx, ms, nm, libc, memkit, sizes, ns, sum, &seed, &seed_best);
    if (seed_best)
        seed_verdict(ctx, &seed, seed_best);
    for (size_t i = 0; i < nm; i++)
        if (ms[i].mt)
            mt_verdict(ctx, &ms[i], i, sizes, ns, sum);
    share_verdict(ctx, libc, sizes, ns, sum);
}

/* ---- run ---- */

static size_t add_method(method *ms, size_t nm, const mk_copier *all, size_t index, int mt)
{
    for (size_t i = 0; i < nm; i++)
        if (ms[i].index == index && ms[i].mt == mt)
            return nm;
    ms[nm] = (method){.c = &all[index], .index = (unsigned)index, .mt = mt};
    snprintf(ms[nm].name, sizeof ms[nm].name, "%s%s", mt ? "mt:" : "", all[index].name);
    return nm + 1;
}

static void read_setting(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f || !fgets(buf, (int)len, f))
        snprintf(buf, len, "unknown");
    else
        buf[strcspn(buf, "\n")] = '\0';
    if (f)
        fclose(f);
}

/* The single-threaded copiers: those only= names, libc and memkit always. */
static size_t choose_copiers(const options *o, method *ms)
{
    size_t count, nm = 0;
    const mk_copier *all = lab_copiers(&count);
    lab_method chosen[MAX_METHODS / 2];
    size_t k = lab_copier_methods(o->only, "libc,memkit", chosen, MAX_METHODS / 2);
    for (size_t i = 0; i < k; i++)
        nm = add_method(ms, nm, all, (size_t)((const mk_copier *)chosen[i].data - all), 0);
    return nm;
}

static size_t copier_at(const method *ms, size_t nm, const char *name)
{
    for (size_t i = 0; i < nm; i++)
        if (!ms[i].mt && !strcmp(ms[i].c->name, name))
            return i;
    return 0;
}

/* What the system gave the ring: its page kind and the settings behind it. */
typedef struct {
    char pages[64], thp[128], reserved[32];
} ring_pages;

/* The ring, and what the system gave it, said. */
static int open_ring(const options *o, ipc_ring *ring, ring_pages *rp)
{
    int err = ipc_ring_create(ring, o->slots, o->max, o->pages, o->backing);
    if (err) {
        fprintf(stderr, "error: cannot map the ring (%u x %zu bytes): %s\n", o->slots, o->max,
                strerror(err));
        return 2;
    }
    read_setting("/sys/kernel/mm/transparent_hugepage/shmem_enabled", rp->thp, sizeof rp->thp);
    read_setting("/proc/sys/vm/nr_hugepages", rp->reserved, sizeof rp->reserved);
    snprintf(rp->pages, sizeof rp->pages, "%s", ipc_page_kind_name(ring->pages));
    printf("ring: %u slots of up to %zu bytes in a %s, on %s pages (%.0f%% huge; shmem THP: %s; "
           "hugetlb pages reserved: %s)\n",
           o->slots, o->max, o->backing == IPC_BACKING_MEMFD ? "memfd" : "POSIX shm object",
           rp->pages, 100 * ring->huge_fraction, rp->thp, rp->reserved);
    return 0;
}

/* The MT adapters: over the copiers mt= names, "best" found by a pilot.
 * The new count; SIZE_MAX: the ring failed in the pilot. */
static size_t add_mt_adapters(lab_ctx *ctx, publisher *pub, const options *o, method *ms,
                              size_t nm, size_t ns, size_run *srun)
{
    size_t count, singles = nm;
    const mk_copier *all = lab_copiers(&count);
    if (!strcmp(o->mt, "none"))
        return nm;
    for (size_t i = 0; i < singles; i++)
        if (lab_listed(o->mt, ms[i].c->name))
            nm = add_method(ms, nm, all, ms[i].index, 1);
    if (lab_listed(o->mt, "best")) {
        lab_progress(ctx, 0, ns + 1, "pilot: the best single-threaded copier at 1 MiB");
        const method *best = pilot_best(ctx, pub, o, ms, singles, srun);
        if (!best)
            return SIZE_MAX;
        printf("pilot at %zu KiB: the best single-threaded copier is %s\n",
               (PILOT_SIZE < o->max ? PILOT_SIZE : o->max) >> 10, best->name);
        nm = add_method(ms, nm, all, best->index, 1);
    }
    return nm;
}

/* The grid's state: the sizes and methods, the ring's publisher, the
 * current point's methods, record and size run, and each size's summary. */
typedef struct {
    const options *o;
    const char *pages;
    publisher *pub;
    const method *ms;
    size_t nm;
    const size_t *sizes;
    size_run *srun;
    lab_ranking *rk;
    size_summary *sum;
    lab_method lm[MAX_METHODS];
    size_t nk;
    char sz[32], params[160];
    lab_record tmpl;
} ipc_grid;

/* Point 0 is the pilot, run before the sweep (its place in the progress
 * count); point k + 1 is the k-th size, the copiers whose alignment it
 * fits.  A ring lost at the last point ends the sweep. */
static int declare(lab_ctx *ctx, void *state, size_t i, lab_point *p, char *what, size_t len)
{
    (void)what, (void)len;
    ipc_grid *g = state;
    if (i == 0)
        return LAB_POINT_SKIP;
    if (g->pub->failed)
        return LAB_POINT_ERROR;   /* join_subscriber says how */
    size_t n = g->sizes[i - 1];
    lab_fmt_size(n, g->sz, sizeof g->sz);
    g->nk = methods_for(g->ms, g->nm, n, g->lm);
    *g->srun = (size_run){.p = g->pub, .lm = g->lm, .n = n,
                          .count = messages_per_batch(ctx, g->o, n), .laps = g->o->slots};
    snprintf(g->params, sizeof g->params, "\"size\":%zu,\"slots\":%u,\"pages\":\"%s\"", n,
             g->o->slots, g->pages);
    g->tmpl = (lab_record){.params_json = g->params, .axis = "size", .axis_unit = "B",
                           .metric = "gb_per_s", .unit = "GB/s", .higher_is_better = 1};
    *p = (lab_point){.methods = g->lm, .n = g->nk, .rounds = g->o->rounds, .pass = pass,
                     .arg = g->srun, .tmpl = &g->tmpl,
                     .baseline = lab_method_index(g->lm, g->nk, "libc"), .ranking = g->rk,
                     .label = g->sz, .memkit = lab_method_index(g->lm, g->nk, "memkit"),
                     .failed = &g->pub->failed};
    return LAB_POINT_RUN;
}

/* A measured size: its other records and summary (report_size). */
static void measured(lab_ctx *ctx, void *state, size_t i, const lab_point *p,
                     const lab_summary *sums, const double *samples)
{
    (void)p;
    ipc_grid *g = state;
    report_size(ctx, g->o, g->params, g->ms, g->lm, g->nk, g->sizes[i - 1], samples, g->srun,
                sums, &g->sum[i - 1]);
}

/* The sizes through the lab's sweep.  0; 1 where the ring failed. */
static int sweep(lab_ctx *ctx, const options *o, const char *pages, publisher *pub,
                 const method *ms, size_t nm, const size_t *sizes, size_t ns, size_run *srun,
                 lab_ranking *rk, size_summary *sum)
{
    static ipc_grid g;
    g = (ipc_grid){.o = o, .pages = pages, .pub = pub, .ms = ms, .nm = nm, .sizes = sizes,
                   .srun = srun, .rk = rk, .sum = sum};
    lab_grid grid = {.npoints = ns + 1, .max_methods = MAX_METHODS, .max_rounds = o->rounds,
                     .declare = declare, .measured = measured};
    return lab_sweep(ctx, &grid, &g) == (long)ns ? 0 : 1;
}

/* The subscriber's end: rc, or 1 where it failed or messages arrived damaged. */
static int join_subscriber(ipc_ring *ring, const publisher *pub, int rc)
{
    ipc_ring_close(ring);
    int status = ipc_ring_join(ring);
    if (rc) {
        fprintf(stderr, "error: the subscriber %s\n",
                WIFSIGNALED(status) ? "was killed" : "stopped answering");
    } else if (!WIFEXITED(status) || WEXITSTATUS(status)) {
        fprintf(stderr, "error: the subscriber failed (status %d)\n", status);
        rc = 1;
    } else if (pub->damaged) {
        fprintf(stderr, "error: %llu messages arrived damaged\n",
                (unsigned long long)pub->damaged);
        rc = 1;
    }
    return rc;
}

/* The publisher's side, the subscriber forked: the MT adapters (a pilot
 * may choose one), the sweep, the tables and the verdicts.  0; 1 where the
 * ring failed. */
static int publish(lab_ctx *ctx, const options *o, const ring_pages *rp, publisher *pub,
                   method *ms, size_t nm, const size_t *sizes, size_t ns)
{
    static size_run srun;
    static size_summary sum[MAX_SIZES];
    size_t libc = copier_at(ms, nm, "libc"), memkit = copier_at(ms, nm, "memkit");
    nm = add_mt_adapters(ctx, pub, o, ms, nm, ns, &srun);
    if (nm == SIZE_MAX)
        return 1;
    printf("MT adapter: %u threads per process, one below parallel_threshold=%zu\n",
           mk_pool_threads(pub->pool), lab_tunable("parallel_threshold"));
    lab_ranking *rk = lab_ranking_new("ipc messages, delivered GB/s", 1, 1);
    if (sweep(ctx, o, rp->pages, pub, ms, nm, sizes, ns, &srun, rk, sum))
        return 1;
    lab_progress(ctx, ns + 1, ns + 1, "done");
    print_tables(ms, nm, sizes, ns, sum);
    lab_ranking_verdicts(ctx, rk);
    verdicts(ctx, ms, nm, libc, memkit, sizes, ns, sum);
    lab_verdict_kind(ctx, "note",
                     "the ring was on %s pages (shmem THP setting: %s; hugetlb pages "
                     "reserved: %s)", rp->pages, rp->thp, rp->reserved);
    return 0;
}

static int run(lab_ctx *ctx)
{
    options o;
    get_options(ctx, &o);
    method ms[MAX_METHODS];
    size_t nm = choose_copiers(&o, ms);
    size_t sizes[MAX_SIZES], ns = size_grid(&o, ctx->quick, sizes);
    ipc_ring ring;
    ring_pages rp;
    if (open_ring(&o, &ring, &rp))
        return 2;
    pid_t pid = ipc_ring_fork(&ring);
    if (pid < 0) {
        fprintf(stderr, "error: fork: %s\n", strerror(errno));
        return 2;
    }
    if (pid == 0)
        _exit(subscriber(&ring, &o));

    static publisher pub;
    pub = (publisher){.r = &ring, .pool = mk_pool_create(o.threads), .max = o.max};
    int rc = publish(ctx, &o, &rp, &pub, ms, nm, sizes, ns);
    rc = join_subscriber(&ring, &pub, rc);
    mk_pool_destroy(pub.pool);
    ipc_ring_destroy(&ring);
    return rc;
}

int main(int argc, char **argv)
{
    static const lab_info info = {
        .name = "ipc-copy", .seed = "going-faster-than-memcpy",
        .description = "messages through a shared-memory ring between two processes: every "
                       "copier and the MT adapter, 4 KiB..16 MiB, GB/s delivered",
        .args = args, .nargs = sizeof args / sizeof args[0], .processes = 1, .quick_processes = 1,
        .check = check};
    return lab_main(argc, argv, &info, run);
}
