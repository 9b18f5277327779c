/* ipc-copy: the Shadesmar seed's own scenario.  A publisher process copies
 * each message from its memory into a slot of a ring in shared memory
 * (copy_in), a subscriber process copies it out into its memory
 * (copy_out), one handshake per slot (bench/ipc_ring.c); every usable
 * copier, and the MT adapter (mk_parallel_copy) over memkit and over the
 * best single-threaded copier, 4 KiB .. 16 MiB, densely in the seed's
 * 512 KiB .. 2 MiB.
 *
 * Method: per size, rounds in which every copier delivers one batch of
 * messages (interleaved, the order rotated each round); a batch starts
 * with an empty ring and ends when the subscriber released its last
 * message.  GB/s = bytes delivered / batch time; the ratio to libc is per
 * round.  Each side's copying time is measured; the rest of the batch is
 * waiting (and the handshake).  Private buffers come from the copier's own
 * alloc; the ring's slots start on pages (2 MiB for large messages), so
 * every copier's alignment holds.  Before the timed rounds each copier
 * sends a batch whose every byte the subscriber checks; timed messages
 * carry their number in their first and last 8 bytes, checked too.
 *
 * The ring is a memfd (nothing in /dev/shm, whatever ends the run) on huge
 * pages where the system gives them (hugetlb reserved, else THP for shmem);
 * the kind obtained is reported.  The MT adapter runs as the library ships
 * it: one thread below the parallel_threshold tunable.
 *
 * Arguments: min=SIZE max=SIZE only=COPIER,...  mt=COPIER,...|best|none
 *            slots=N pages=normal|thp|hugetlb backing=memfd|shm threads=N */
#include "ipc_ring.h"
#include "lab.h"
#include "memkit.h"

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

typedef struct {
    size_t min, max;
    const char *only, *mt;
    unsigned slots, threads;
    mk_page_kind pages;
    ipc_backing backing;
} options;

typedef struct {
    char name[48];
    const mk_copier *c;
    unsigned index;     /* in mk_copiers() */
    int mt;
} method;

/* ---- arguments ---- */

static int name_in_list(const char *list, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = list; p && (p = strstr(p, name)); p += len)
        if ((p == list || p[-1] == ',') && (p[len] == ',' || p[len] == '\0'))
            return 1;
    return 0;
}

static int parse_options(lab_ctx *ctx, options *o)
{
    *o = (options){4096, (size_t)16 << 20, NULL, "memkit,best", 16, 0, MK_PAGES_HUGETLB,
                   IPC_BACKING_MEMFD};
    if (ctx->quick)
        o->max = (size_t)4 << 20, o->slots = 8;
    for (int i = 1; i < ctx->argc; i++) {
        const char *a = ctx->argv[i];
        if (!strncmp(a, "min=", 4))
            o->min = lab_parse_size(a + 4);
        else if (!strncmp(a, "max=", 4))
            o->max = lab_parse_size(a + 4);
        else if (!strncmp(a, "only=", 5))
            o->only = a + 5;
        else if (!strncmp(a, "mt=", 3))
            o->mt = a + 3;
        else if (!strncmp(a, "slots=", 6))
            o->slots = (unsigned)atoi(a + 6);
        else if (!strncmp(a, "threads=", 8))
            o->threads = (unsigned)atoi(a + 8);
        else if (!strcmp(a, "pages=normal") || !strcmp(a, "pages=thp") || !strcmp(a, "pages=hugetlb"))
            o->pages = a[6] == 'n' ? MK_PAGES_NORMAL : a[6] == 't' ? MK_PAGES_THP : MK_PAGES_HUGETLB;
        else if (!strcmp(a, "backing=memfd") || !strcmp(a, "backing=shm"))
            o->backing = a[8] == 'm' ? IPC_BACKING_MEMFD : IPC_BACKING_SHM;
        else {
            fprintf(stderr, "error: unknown argument '%s' (expected min=SIZE max=SIZE "
                            "only=COPIER,... mt=COPIER,...|best|none slots=N "
                            "pages=normal|thp|hugetlb backing=memfd|shm threads=N)\n", a);
            return -1;
        }
    }
    if (o->min < 16 || o->min > o->max || o->max > ((size_t)1 << 30)) {
        fprintf(stderr, "error: need 16 <= min <= max <= 1G\n");
        return -1;
    }
    if (o->slots < 2 || o->slots > 256) {
        fprintf(stderr, "error: need 2 <= slots <= 256\n");
        return -1;
    }
    const char *lists[] = {o->only, strcmp(o->mt, "none") ? o->mt : NULL};
    for (int l = 0; l < 2; l++)
        for (const char *p = lists[l]; p && *p;) {
            size_t len = strcspn(p, ",");
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)len, p);
            const mk_copier *c = mk_copier_find(name);
            if (strcmp(name, "best") && (!c || !c->usable)) {
                fprintf(stderr, "error: no usable copier called '%s'\n", name);
                return -1;
            }
            p += len + (p[len] == ',');
        }
    return 0;
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
    const mk_copier *cs = mk_copiers(&count);
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

static size_t messages_per_batch(lab_ctx *ctx, const options *o, size_t n)
{
    size_t bytes = ctx->quick ? (size_t)4 << 20 : (size_t)32 << 20, k = bytes / n;
    return k > 2 * o->slots ? k : 2 * o->slots;
}

static int fits(const method *m, size_t n) { return n % m->c->align == 0; }

/* The results of one size: per method and round. */
typedef struct {
    double gbps[MAX_METHODS][MAX_ROUNDS];
    batch_time t[MAX_METHODS][MAX_ROUNDS];
} size_result;

/* The checked batch, then `rounds` interleaved timed batches. */
static int measure_size(lab_ctx *ctx, publisher *p, const options *o, const method *ms,
                        size_t nm, size_t n, size_t rounds, size_result *res)
{
    size_t count = messages_per_batch(ctx, o, n);
    batch_time bt;
    for (size_t i = 0; i < nm; i++)
        if (fits(&ms[i], n) && batch(p, &ms[i], n, o->slots + 1, 1, &bt))
            return -1;
    for (size_t r = 0; r < rounds; r++)
        for (size_t j = 0; j < nm; j++) {
            size_t i = (j + r) % nm;
            if (!fits(&ms[i], n))
                continue;
            if (batch(p, &ms[i], n, count, 0, &res->t[i][r]))
                return -1;
            res->gbps[i][r] = (double)(n * count) / res->t[i][r].wall_ns;
        }
    return 0;
}

/* The best single-threaded copier: a short interleaved pilot at 1 MiB. */
static const method *pilot_best(lab_ctx *ctx, publisher *p, const options *o,
                                const method *ms, size_t nm, size_result *res)
{
    size_t n = PILOT_SIZE < o->max ? PILOT_SIZE : o->max;
    n -= n % 256;
    if (measure_size(ctx, p, o, ms, nm, n, 3, res))
        return NULL;
    const method *best = NULL;
    double best_gbps = 0;
    for (size_t i = 0; i < nm; i++)
        if (fits(&ms[i], n)) {
            double g = lab_stats_of(res->gbps[i], 3).median;
            if (g > best_gbps)
                best_gbps = g, best = &ms[i];
        }
    return best;
}

/* ---- output ---- */

static int width(const method *m) { return strlen(m->name) > 9 ? (int)strlen(m->name) : 9; }

static void header(const char *title, const method *ms, size_t nm)
{
    printf("\n%s\n%10s", title, "size");
    for (size_t i = 0; i < nm; i++)
        printf(" %*s", width(&ms[i]), ms[i].name);
    printf("\n");
}

/* Per round: a / b; their statistics. */
static lab_stats paired(const double *a, const double *b, size_t rounds)
{
    double q[MAX_ROUNDS];
    for (size_t r = 0; r < rounds; r++)
        q[r] = a[r] / b[r];
    return lab_stats_of(q, rounds);
}

static void emit(lab_ctx *ctx, const char *series, const char *params, const char *metric,
                 const char *unit, double *v, size_t rounds, const char *ratio_to, lab_stats ratio)
{
    lab_stats s = lab_stats_of(v, rounds);
    lab_measurement m = {series, params, metric, unit, "median", s.median, s,
                         ratio_to, ratio.median, ratio.min, ratio.max};
    lab_emit(ctx, &m);
}

/* What one size's results say, kept for the verdicts. */
typedef struct {
    double ratio[MAX_METHODS];      /* median GB/s ratio to libc; 0: not run */
    double vs_base[MAX_METHODS];    /* MT methods: median ratio to their base */
    double pub_copy[MAX_METHODS], sub_copy[MAX_METHODS], pub_wait[MAX_METHODS];
    double gbps[MAX_METHODS], us[MAX_METHODS];
} size_summary;

static void report_size(lab_ctx *ctx, const options *o, const char *pages, const method *ms,
                        size_t nm, size_t libc, size_t n, size_t rounds, size_result *res,
                        size_summary *sum)
{
    char params[160];
    snprintf(params, sizeof params, "\"size\":%zu,\"slots\":%u,\"pages\":\"%s\"", n, o->slots,
             pages);
    size_t count = messages_per_batch(ctx, o, n);
    for (size_t i = 0; i < nm; i++) {
        if (!fits(&ms[i], n))
            continue;
        double us[MAX_ROUNDS], pc[MAX_ROUNDS], sc[MAX_ROUNDS], pw[MAX_ROUNDS];
        for (size_t r = 0; r < rounds; r++) {
            batch_time *t = &res->t[i][r];
            us[r] = t->wall_ns / 1e3 / (double)count;
            pc[r] = 100 * t->pub_copy_ns / t->wall_ns;
            sc[r] = 100 * t->sub_copy_ns / t->wall_ns;
            pw[r] = 100 * t->pub_wait_ns / t->wall_ns;
        }
        lab_stats none = {0}, ratio = none;
        int has_libc = i != libc && fits(&ms[libc], n);
        if (has_libc)
            ratio = paired(res->gbps[i], res->gbps[libc], rounds);
        sum->ratio[i] = i == libc ? 1 : has_libc ? ratio.median : 0;
        if (ms[i].mt && n < mk_tunables_get()->parallel_threshold)
            sum->ratio[i] = 0;   /* one thread: its base copier again, not a candidate */
        if (ms[i].mt)
            for (size_t b = 0; b < nm; b++)
                if (!ms[b].mt && ms[b].c == ms[i].c)
                    sum->vs_base[i] = paired(res->gbps[i], res->gbps[b], rounds).median;
        emit(ctx, ms[i].name, params, "gb_per_s", "GB/s", res->gbps[i], rounds,
             has_libc ? "libc" : NULL, ratio);
        emit(ctx, ms[i].name, params, "us_per_message", "us", us, rounds, NULL, none);
        emit(ctx, ms[i].name, params, "publisher_copy_share", "%", pc, rounds, NULL, none);
        emit(ctx, ms[i].name, params, "publisher_wait_share", "%", pw, rounds, NULL, none);
        emit(ctx, ms[i].name, params, "subscriber_copy_share", "%", sc, rounds, NULL, none);
        sum->gbps[i] = lab_stats_of(res->gbps[i], rounds).median;
        sum->us[i] = lab_stats_of(us, rounds).median;
        sum->pub_copy[i] = lab_stats_of(pc, rounds).median;
        sum->sub_copy[i] = lab_stats_of(sc, rounds).median;
        sum->pub_wait[i] = lab_stats_of(pw, rounds).median;
    }
}

static void print_tables(const method *ms, size_t nm, const size_t *sizes, size_t ns,
                         const size_summary *sum)
{
    static const char *titles[] = {
        "delivered GB/s (median of interleaved rounds; '-': size not a multiple of the "
        "copier's alignment)",
        "time per message, us",
        "share of the time copying, publisher/subscriber %"};
    for (int t = 0; t < 3; t++) {
        header(titles[t], ms, nm);
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

/* Geometric mean of method i's ratio to libc over the sizes in [lo, hi],
 * with the smallest and largest; 0 when it ran at none. */
static double range_ratio(const size_t *sizes, size_t ns, const size_summary *sum, size_t i,
                          size_t lo, size_t hi, double *min, double *max)
{
    double logsum = 0;
    size_t k = 0;
    *min = 1e9, *max = 0;
    for (size_t s = 0; s < ns; s++)
        if (sizes[s] >= lo && sizes[s] <= hi && sum[s].ratio[i] > 0) {
            double q = sum[s].ratio[i];
            logsum += log(q), k++;
            *min = q < *min ? q : *min;
            *max = q > *max ? q : *max;
        }
    return k ? exp(logsum / (double)k) : 0;
}

/* The MT adapter splits nothing below parallel_threshold (it is its base
 * copier there): whether it pays is judged from that size on. */
static void mt_verdict(lab_ctx *ctx, const method *m, size_t i, const size_t *sizes, size_t ns,
                       const size_summary *sum)
{
    size_t threshold = mk_tunables_get()->parallel_threshold, first = 0, from = 0, best = 0;
    while (first < ns && sizes[first] < threshold)
        first++;
    char sz[32], bsz[32], tsz[32];
    lab_fmt_size(threshold, tsz, sizeof tsz);
    if (first == ns) {
        lab_verdict(ctx, "%s runs one thread below parallel_threshold=%s, above every size "
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
        lab_verdict(ctx, "%s pays from %s on (5%% or more over %s at every size from there; "
                             "best %.2fx at %s; one thread below parallel_threshold=%s)",
                m->name, lab_fmt_size(sizes[from], sz, sizeof sz), m->c->name,
                sum[best].vs_base[i], bsz, tsz);
    else
        lab_verdict(ctx, "%s does not pay here: from parallel_threshold=%s on it is at best "
                             "%.2fx %s (at %s), %.2fx at %s",
                m->name, tsz, sum[best].vs_base[i], m->c->name, bsz, sum[ns - 1].vs_base[i],
                lab_fmt_size(sizes[ns - 1], sz, sizeof sz));
}

static void verdicts(lab_ctx *ctx, const method *ms, size_t nm, size_t libc, size_t memkit,
                     const size_t *sizes, size_t ns, const size_summary *sum)
{
    int seed_range_seen = 0;
    double seed_best = 0;
    const char *seed_best_name = NULL;
    for (size_t g = 0; g < sizeof ranges / sizeof ranges[0]; g++) {
        double best = 0, bmin = 0, bmax = 0, mk = 0, mmin, mmax;
        size_t bi = 0;
        for (size_t i = 0; i < nm; i++) {
            double lo, hi, q = range_ratio(sizes, ns, sum, i, ranges[g].lo, ranges[g].hi, &lo, &hi);
            if (q > best)
                best = q, bi = i, bmin = lo, bmax = hi;
        }
        if (!best)
            continue;
        mk = range_ratio(sizes, ns, sum, memkit, ranges[g].lo, ranges[g].hi, &mmin, &mmax);
        lab_verdict(ctx, "%s: fastest %s, %.2fx libc's GB/s (per size %.2f..%.2fx); memkit %.2fx",
                    ranges[g].name, ms[bi].name, best, bmin, bmax, mk);
        if (g == 1)
            seed_range_seen = 1, seed_best = best, seed_best_name = ms[bi].name;
    }
    if (seed_range_seen) {
        if (seed_best < 1.05)
            lab_verdict(ctx, "the seed's advice, stick to memcpy, holds here: no copier beats "
                             "libc by 5%% for 512 KiB..2 MiB messages (best %s, %.2fx)",
                        seed_best_name, seed_best);
        else
            lab_verdict(ctx, "the seed's advice, stick to memcpy, does not hold here: %s "
                             "delivers 512 KiB..2 MiB messages %.2fx as fast as libc",
                        seed_best_name, seed_best);
    }
    for (size_t i = 0; i < nm; i++)
        if (ms[i].mt)
            mt_verdict(ctx, &ms[i], i, sizes, ns, sum);
    for (size_t k = 0; k < ns; k++)   /* copy vs wait, at the seed's 1 MiB (or the nearest) */
        if (sizes[k] >= PILOT_SIZE || k == ns - 1) {
            char sz[32];
            lab_verdict(ctx, "at %s with libc the publisher copies %.0f%% of the time and waits "
                             "%.0f%%, the subscriber copies %.0f%%; %.1f us per message",
                        lab_fmt_size(sizes[k], sz, sizeof sz), sum[k].pub_copy[libc],
                        sum[k].pub_wait[libc], sum[k].sub_copy[libc], sum[k].us[libc]);
            break;
        }
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

static int run(lab_ctx *ctx)
{
    options o;
    if (parse_options(ctx, &o))
        return 2;
    size_t count;
    const mk_copier *all = mk_copiers(&count);
    method ms[MAX_METHODS];
    size_t nm = 0;
    for (size_t i = 0; i < count && nm < MAX_METHODS / 2; i++)
        if (all[i].usable && (!o.only || name_in_list(o.only, all[i].name) ||
                              !strcmp(all[i].name, "libc") || !strcmp(all[i].name, "memkit")))
            nm = add_method(ms, nm, all, i, 0);
    size_t libc = 0, memkit = 0;
    for (size_t i = 0; i < nm; i++) {
        if (!strcmp(ms[i].c->name, "libc"))
            libc = i;
        if (!strcmp(ms[i].c->name, "memkit"))
            memkit = i;
    }
    size_t sizes[MAX_SIZES], ns = size_grid(&o, ctx->quick, sizes);

    ipc_ring ring;
    int err = ipc_ring_create(&ring, o.slots, o.max, o.pages, o.backing);
    if (err) {
        fprintf(stderr, "error: cannot map the ring (%u x %zu bytes): %s\n", o.slots, o.max,
                strerror(err));
        return 2;
    }
    char thp[128], reserved[32], pages[64];
    read_setting("/sys/kernel/mm/transparent_hugepage/shmem_enabled", thp, sizeof thp);
    read_setting("/proc/sys/vm/nr_hugepages", reserved, sizeof reserved);
    snprintf(pages, sizeof pages, "%s", ipc_page_kind_name(ring.pages));
    printf("ring: %u slots of up to %zu bytes in a %s, on %s pages (%.0f%% huge; shmem THP: %s; "
           "hugetlb pages reserved: %s)\n",
           o.slots, o.max, o.backing == IPC_BACKING_MEMFD ? "memfd" : "POSIX shm object",
           pages, 100 * ring.huge_fraction, thp, reserved);

    pid_t pid = ipc_ring_fork(&ring);
    if (pid < 0) {
        fprintf(stderr, "error: fork: %s\n", strerror(errno));
        return 2;
    }
    if (pid == 0)
        _exit(subscriber(&ring, &o));

    static publisher pub;
    static size_result res;
    static size_summary sum[MAX_SIZES];
    pub = (publisher){.r = &ring, .pool = mk_pool_create(o.threads), .max = o.max};
    int rc = 0;
    size_t rounds = ctx->quick ? 3 : 7;

    /* the MT adapters: over the named copiers, "best" found by a pilot */
    if (strcmp(o.mt, "none")) {
        size_t singles = nm;
        for (size_t i = 0; i < singles; i++)
            if (name_in_list(o.mt, ms[i].c->name))
                nm = add_method(ms, nm, all, ms[i].index, 1);
        if (name_in_list(o.mt, "best")) {
            lab_progress(ctx, 0, ns + 1, "pilot: the best single-threaded copier at 1 MiB");
            const method *best = pilot_best(ctx, &pub, &o, ms, singles, &res);
            if (!best) {
                rc = 1;
                goto out;
            }
            printf("pilot at %zu KiB: the best single-threaded copier is %s\n",
                   (PILOT_SIZE < o.max ? PILOT_SIZE : o.max) >> 10, best->name);
            nm = add_method(ms, nm, all, best->index, 1);
        }
    }
    char thr[16];
    snprintf(thr, sizeof thr, "%u", mk_pool_threads(pub.pool));
    printf("MT adapter: %s threads per process, one below parallel_threshold=%zu\n", thr,
           mk_tunables_get()->parallel_threshold);

    for (size_t k = 0; k < ns; k++) {
        char sz[32];
        lab_progress(ctx, k + 1, ns + 1, lab_fmt_size(sizes[k], sz, sizeof sz));
        memset(&res, 0, sizeof res);
        if (measure_size(ctx, &pub, &o, ms, nm, sizes[k], rounds, &res)) {
            rc = 1;
            goto out;
        }
        report_size(ctx, &o, pages, ms, nm, libc, sizes[k], rounds, &res, &sum[k]);
    }
    lab_progress(ctx, ns + 1, ns + 1, "done");
    print_tables(ms, nm, sizes, ns, sum);
    verdicts(ctx, ms, nm, libc, memkit, sizes, ns, sum);
    lab_verdict(ctx, "the ring was on %s pages (shmem THP setting: %s; hugetlb pages reserved: %s)",
                pages, thp, reserved);
out:
    ipc_ring_close(&ring);
    int status = ipc_ring_join(&ring);
    if (rc) {
        fprintf(stderr, "error: the subscriber %s\n",
                WIFSIGNALED(status) ? "was killed" : "stopped answering");
    } else if (!WIFEXITED(status) || WEXITSTATUS(status)) {
        fprintf(stderr, "error: the subscriber failed (status %d)\n", status);
        rc = 1;
    } else if (pub.damaged) {
        fprintf(stderr, "error: %llu messages arrived damaged\n",
                (unsigned long long)pub.damaged);
        rc = 1;
    }
    mk_pool_destroy(pub.pool);
    ipc_ring_destroy(&ring);
    return rc;
}

int main(int argc, char **argv)
{
    static const lab_info info = {
        "ipc-copy", "going-faster-than-memcpy",
        "messages through a shared-memory ring between two processes: every copier and the MT "
        "adapter, 4 KiB..16 MiB, GB/s delivered"};
    return lab_main(argc, argv, &info, run);
}
