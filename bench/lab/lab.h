/* SPDX-License-Identifier: Apache-2.0 */
/* The lab's shared C core: command line, arguments, the interleaved method,
 * statistics, the machine fingerprint and the output every experiment
 * follows.  An experiment is its grid and its verdicts; everything about how
 * it measures lives here, once.
 *
 * An experiment is one executable (bench/experiments/exp_<name>.c) whose
 * main() is
 *     return lab_main(argc, argv, &info, run);
 * It prints a human table on stdout, progress on stderr, and — with
 * --jsonl PATH — one JSON object per line: a fingerprint first, then
 * measurements and verdicts, an end record last on success.  Every
 * record's fields, their types and meanings are declared
 * once, in records.def (format 2); `--schema` prints them as JSON, which the
 * Python side reads.
 *
 * Arguments are key=value, declared per experiment in a lab_arg table (with
 * a default and a --quick default); an undeclared key is an error.
 * `--help` lists them; `--describe` prints {"name","seed","description",
 * "args":[...],"processes","quick_processes"} (and "grid": lab_info.grid) as JSON and exits;
 * `--fingerprint` prints the fingerprint record and exits.
 *
 * Several processes: an experiment whose result depends on where code and
 * data were placed (small sizes) sets info.processes.  lab_main then runs
 * it processes-1 more times as fresh executions of itself (new address
 * space layout, own shuffle seed), each writing its raw samples to a
 * private file, and then runs it itself; every record this process emits
 * carries the samples and paired ratios of all processes pooled, and one
 * value per process ("process_samples"), so verdicts see the spread between
 * processes, not only within one (pyperf's worker processes, same reason).
 * Built-in arguments: processes=N; peer=LIB.so,... where info.peer_ops
 * names the functions the experiment races (the lab core loads the
 * libraries before anything runs, every process again: see lab_peers_load);
 * glibc_tunables=SPEC where info.races_glibc (see "glibc tuned" below).
 *
 * glibc tuned: glibc reads GLIBC_TUNABLES once, when a process starts, so
 * glibc under other tunables cannot race in the process that times glibc as
 * shipped.  With glibc_tunables=SPEC the lab runs as many processes again
 * under GLIBC_TUNABLES=SPEC (alternating with the others), in which every
 * method runs as usual; there a method marked lab_method.glibc is glibc
 * tuned, and races as a series of its own (lab_glibc_twin_name), paired
 * round by round with memkit and the other methods of those processes.
 * glibc as shipped and glibc tuned never share a process: between those
 * two there is no pairing, only the processes' values.
 *
 * Arguments are checked before anything runs, once, in the main process
 * (never in each helper): the table (kind, bounds, a finite number, each key
 * at most once, a text's own check), then the experiment's own check of
 * them together (info.check: min <= max, the files they name).
 * `--check-args` does exactly that, loads the peers and exits: 0, or 2 with
 * the one line of what is wrong (`memkit run` asks before running anything). */
#ifndef MEMKIT_LAB_H
#define MEMKIT_LAB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What an experiment declares to the lab (lab_info, lab_method, and
 * sweep.h's lab_point and lab_grid) is written with designated
 * initializers, {.name = ...}: a field added or moved then shifts no
 * experiment's values.  A positional one does not compile
 * (-Werror=designated-init, given to every program built on the lab in
 * bench/CMakeLists.txt).  A lab_arg table stays a table of rows, its
 * columns in this order. */
#if defined(__has_attribute)
#if __has_attribute(designated_init)
#define LAB_DESIGNATED __attribute__((designated_init))
#endif
#endif
#ifndef LAB_DESIGNATED
#define LAB_DESIGNATED
#endif

/* ---- arguments ---- */
typedef enum { LAB_INT, LAB_SIZE, LAB_REAL, LAB_TEXT } lab_arg_kind;

typedef struct {
    const char  *key;        /* "reps" */
    lab_arg_kind kind;       /* LAB_SIZE takes 4096, 64K, 1M, 1G */
    const char  *def;        /* default as typed on the command line; NULL: unset */
    const char  *quick;      /* default under --quick; NULL: def */
    const char  *help;       /* one line */
    double       min, max;   /* bounds of a number; both 0: none */
    /* a text's own check (NULL: any text): 0, or -1 with a message in err */
    int (*check)(const char *value, char *err, size_t errlen);
} lab_arg;

#define LAB_MAX_ARGS 24

typedef struct lab_ctx lab_ctx;

typedef struct LAB_DESIGNATED {
    const char *name;         /* "memset-random" */
    const char *seed;         /* "msrc-faster-amd64-memset" */
    const char *description;  /* one line */
    const lab_arg *args;      /* NULL: it takes no arguments of its own */
    size_t nargs;
    unsigned processes;       /* > 1: run in that many processes (see above) */
    unsigned quick_processes; /* the same under --quick; 0: processes */
    /* The arguments' check together (see above); prints one "error: ..."
     * line and returns non-zero when they do not hold.  NULL: none. */
    int (*check)(lab_ctx *ctx);
    /* 1: it times on one thread, so each of its processes runs pinned to
     * one CPU (the fingerprint's timing_cpu), as pyperf and Google
     * Benchmark advise: no migration between CPUs in the middle of a
     * round.  0 for experiments that start threads or processes of their
     * own (they would inherit the one CPU). */
    int pinned;
    unsigned peer_ops;        /* LAB_PEER_* it races other libraries in: takes peer= */
    int races_glibc;          /* 1: a method is glibc's own (lab_method.glibc): takes glibc_tunables= */
    /* An experiment whose default grid scales with this machine's caches
     * writes it here, as JSON members (no braces): at least "largest" (its
     * largest size, bytes) and "work" (what its default grid moves, in
     * bytes: `memkit run` scales its estimate of the suite by it).
     * `--describe` prints them as "grid".  NULL: the grid is fixed. */
    void (*grid)(FILE *f);
} lab_info;

/* Another library racing as a method (peer=/path/lib.so,...; peers.c):
 * its own exported memset, memcpy and memmove, those it has. */
enum { LAB_PEER_MEMSET, LAB_PEER_MEMCPY, LAB_PEER_MEMMOVE, LAB_PEER_NOPS };
#define LAB_PEER_OP(op) (1u << (op))
typedef struct {
    char name[48];            /* the file's: libaocl-libmem.so.1 -> "aocl-libmem" */
    char path[4096];
    void (*fn[LAB_PEER_NOPS])(void);   /* NULL: not exported by it */
} lab_peer;

struct lab_ctx {
    const lab_info *info;
    int   quick;              /* --quick: reduced grid for smoke tests */
    FILE *jsonl;              /* NULL without --jsonl */
    char **full_argv;         /* the command line as given (for re-executing) */
    double started_ns;
    const char *arg_value[LAB_MAX_ARGS];   /* per info->args entry; NULL: unset */
    /* several processes: this one's index (0-based) and the count */
    unsigned process, nprocesses;
    uint64_t rng;             /* this process's seed for shuffles */
    FILE *raw;                /* a helper process's sample file; NULL in the main one */
    struct lab_pool *pool;    /* the helper processes' samples, in the main one */
    char *fingerprint;        /* the fingerprint members as written (re-executing keeps it) */
    /* the spread between processes, over the records: (max-min)/min of
     * each record's per-process values */
    size_t spread_n;
    double *spread;
    char worst_spread[400];
    const lab_peer *peers;    /* peer=: what was loaded (every process loads them) */
    size_t npeers;
    /* glibc_tunables=: the spec (NULL: none); the processes run under it, in
     * the main process (0 without the spec); whether this one is one of them */
    const char *glibc_tunables;
    unsigned ntuned;
    int tuned;
};

/* ---- the driver (driver.c) ---- */
int lab_main(int argc, char **argv, const lab_info *info, int (*run)(lab_ctx *));
/* Runs this experiment again in this process's place (after the caller
 * changed the environment, e.g. tunables), keeping this run's fingerprint:
 * the record describes the machine as the user ran it. */
void lab_reexec(lab_ctx *ctx);

/* ---- arguments (args.c) ---- */
/* The value of a declared argument (the default, the quick default, or what
 * was given).  Asking for an undeclared key is a bug: the program stops. */
long long   lab_int(lab_ctx *ctx, const char *key);
size_t      lab_size(lab_ctx *ctx, const char *key);
double      lab_real(lab_ctx *ctx, const char *key);
const char *lab_text(lab_ctx *ctx, const char *key);   /* NULL when unset */

/* err[0..len) = the formatted reason; returns -1 (a refusal's one line). */
int lab_fail(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Checks key=value arguments against a table and fills values[] (one per
 * table entry); returns 0, or -1 with a message in err.  lab_main uses it;
 * exposed for the tests. */
int lab_parse_args(const lab_info *info, int quick, int argc, char **argv,
                   const char **values, char *err, size_t errlen);
/* For a text argument's check: 0 when v is one of the words of choices
 * ("normal|thp|hugetlb"), else -1 and what was expected in err. */
int lab_one_of(const char *v, const char *choices, char *err, size_t errlen);
/* glibc_tunables=SPEC: 0 when SPEC is glibc.NAME=VALUE items joined by ':'
 * (GLIBC_TUNABLES' syntax, only glibc's own tunables), else -1 and which
 * item is not, in err. */
int lab_glibc_tunables_check(const char *spec, char *err, size_t errlen);
/* For info.check: 0 when the size argument lo is at most hi, else says so
 * (one "error:" line) and returns 2. */
int lab_check_order(lab_ctx *ctx, const char *lo, const char *hi);
/* Text a user gave, fit to echo on a terminal: control characters (a
 * newline, an escape sequence) as \xNN.  Into buf; returns buf. */
const char *lab_printable(const char *s, char *buf, size_t len);
/* A "COPIER,..." argument: 0 if every name is a copier of lab_copiers() (a
 * usable one if usable_only) or equals extra (may be NULL); else -1 and
 * which name is not, in err. */
int lab_copier_list_check(const char *list, int usable_only, const char *extra, char *err,
                          size_t errlen);

/* ---- time (clock.c) ---- */
double   lab_now_ns(void);            /* CLOCK_MONOTONIC */
double   lab_cpu_ns(void);            /* CLOCK_PROCESS_CPUTIME_ID */
uint64_t lab_rdtsc(void);

/* ---- statistics over samples (the array is sorted in place) ---- */
typedef struct {
    double min, median, max, mean, mean_fastest_10pct;
    size_t n;
} lab_stats;
lab_stats lab_stats_of(double *samples, size_t n);
/* The same statistics in another unit: every field times k (n unchanged). */
lab_stats lab_stats_scaled(lab_stats s, double k);

/* ---- the method ---- */

/* A method an experiment times: its name, its function (cast back by the
 * experiment to the signature `kind` says), and any data it needs. */
typedef struct LAB_DESIGNATED {
    const char *name;
    void (*fn)(void);
    int kind;                 /* the experiment's own: which signature, what operation */
    const void *data;         /* e.g. the mk_copier behind it */
    const char *contract;     /* NULL: any input; else what it needs ("aligned to 32 B, ...") */
    int glibc;                /* 1: glibc's own routine: under glibc_tunables= it races tuned too */
} lab_method;

/* The series of glibc tuned: the glibc method's name with its first word
 * (glibc, libc) replaced, "glibc memcpy" -> "glibc-tuned memcpy". */
#define LAB_GLIBC_TUNED "glibc-tuned"
const char *lab_glibc_twin_name(const char *glibc_name, char *buf, size_t len);

/* A method with a contract (aligned buffers, whole blocks) is ranked against
 * memkit only from this size up: below it, its loop runs inline in its
 * caller, without the call and the size dispatch that any memcpy pays, and
 * issue #10 compares memkit with such plain loops from 4 KiB. */
#define LAB_CONTRACT_RANKED_FROM 4096
/* Whether m competes with memkit in a ranking at n bytes (see above). */
static inline int lab_ranked_at(const lab_method *m, size_t n)
{
    return !m->contract || n >= LAB_CONTRACT_RANKED_FROM;
}

/* One pass of method m: timed, it returns the sample in the metric's unit;
 * warm, it is the untimed warm-up pass before it (it may do less work). */
typedef double lab_pass_fn(const lab_method *m, void *arg, int warm);

/* Rounds in which every method runs once in a freshly shuffled order (so no
 * method always follows the same one: a fixed order skewed results by 6%),
 * each timed pass right after an untimed warm-up pass of the same method
 * (the predictors and caches then hold its state, not its predecessor's).
 * samples[i * rounds + r]: method i's sample of round r. */
void lab_interleave(lab_ctx *ctx, const lab_method *methods, size_t n, size_t rounds,
                    lab_pass_fn *pass, void *arg, double *samples);

/* The paired per-round speed-up of x over base, into out: > 1 means x was
 * faster in that round (base/x for times, x/base for throughputs).  The one
 * place a ratio is computed. */
void lab_speedups(const double *x, const double *base, size_t n, int higher_is_better,
                  double *out);

/* ---- peers (peers.c) ---- */
/* Loads peer=LIST for an experiment racing `ops` (LAB_PEER_OP bits): each
 * file with dlopen(RTLD_NOW | RTLD_LOCAL), its functions by dlsym on that
 * handle and kept only when dladdr places them in that very file (not in
 * glibc, which the handle reaches too).  0, or -1 with one line in err: a
 * file missing, not a loadable library, or exporting none of the ops. */
int lab_peers_load(const char *list, unsigned ops, lab_peer **out, size_t *n, char *err,
                   size_t errlen);
/* Appends to methods[n..cap) one method per peer exporting `op`, named
 * "<peer><suffix>" (" memcpy", or "" where the experiment's method names
 * carry no op), of the given kind; returns the new count.  A name taken by
 * an earlier method gets "-2", "-3". */
size_t lab_peer_methods(lab_ctx *ctx, int op, const char *suffix, int kind, lab_method *methods,
                        size_t n, size_t cap);

/* ---- output ---- */
void lab_json_string(FILE *f, const char *s);   /* s quoted and escaped */

typedef struct {
    const char *series;       /* method / variant */
    const char *params_json;  /* members without braces: "\"size\":4096,\"value\":0" */
    const char *axis;         /* numeric axis name ("size"), NULL: none */
    const char *axis_unit;    /* "B" */
    const char *metric;       /* "ns_per_call", "gb_per_s", ... */
    const char *unit;         /* "ns", "GB/s", ... */
    int higher_is_better;
    const char *stat;         /* "median" (NULL), "mean_fastest_10pct", "mean" */
    const double *samples;    /* one per round, in the metric's unit */
    size_t n;
    const char *baseline;     /* the baseline's series; NULL: none */
    const char *baseline_params_json;   /* NULL: the same params */
    const double *baseline_samples;     /* paired with samples, round by round */
    const char *contract;     /* the series' method's contract (lab_method); NULL: none */
    /* under glibc_tunables= (lab_emit_methods sets them): the series is glibc's
     * and this is its tuned twin's name; the baseline is glibc's and this is
     * the twin the series is paired with in the tuned processes.  NULL: none */
    const char *glibc_twin, *tuned_baseline;
} lab_record;

/* What was emitted, over every process: the statistic, the pooled samples
 * (the caller's: lab_summary_free) and the speed-up vs the baseline
 * with an interval of its median (~95%, widened to the processes' own
 * medians: one process disagreeing makes it "too noisy to tell"). */
typedef struct lab_summary_ {
    double value;
    lab_stats s;
    double *samples;          /* round by round, process after process */
    size_t n, nprocesses;
    double process_min, process_max;   /* the processes' values' spread */
    int has_ratio;
    double ratio, ratio_min, ratio_max, ratio_lo, ratio_hi;
    /* under glibc_tunables=, in the main process: the same series in the
     * tuned processes, its ratio over glibc tuned (a glibc series': its
     * twin, emitted as a record of its own); NULL: none */
    struct lab_summary_ *tuned;
} lab_summary;

lab_summary lab_record_emit(lab_ctx *ctx, const lab_record *r);
void lab_summary_free(lab_summary *s);

/* The paired per-round speed-up of a over b, two series timed in the same
 * rounds (their summaries' samples, pooled round by round): its median, and
 * the ~95% interval of that median in *lo, *hi (lab_judge says which way it
 * lies).  Without rounds: 1, and an interval that makes no claim. */
double lab_paired_speedup(const lab_summary *a, const lab_summary *b, int higher_is_better,
                          double *lo, double *hi);
/* The same for two series timed in different processes (glibc against glibc
 * tuned): the ratio of their values, and an interval that holds only where
 * the two medians' intervals, widened to their processes' values, do not
 * overlap. */
double lab_unpaired_speedup(const lab_summary *a, const lab_summary *b, int higher_is_better,
                            double *lo, double *hi);

/* Every method of one grid point in one go: series = the method's name,
 * baseline = methods[baseline] (SIZE_MAX: none), the rest from tmpl; the
 * summaries into out[n]. */
void lab_emit_methods(lab_ctx *ctx, const lab_record *tmpl, const lab_method *methods,
                      size_t n, size_t rounds, const double *samples, size_t baseline,
                      lab_summary *out);

/* The statistic `stat` of samples, "fastest" meaning the lowest times or the
 * highest throughputs. */
double lab_stat_value(const double *samples, size_t n, const char *stat, int higher_is_better);

/* An interval holding the median of n sorted values with ~95% confidence:
 * order statistics n/2 -+ 0.98 sqrt(n) (normal approximation to the
 * binomial); 5 to 7 values, their whole range (94-98%); fewer, unbounded
 * (no claim can be made from them). */
void lab_median_interval(const double *sorted, size_t n, double *lo, double *hi);

/* "~95% interval 1.02..1.10x", or that there is none (too few rounds). */
const char *lab_interval_text(double lo, double hi, char *buf, size_t len);

/* Where an interval of speed-ups lies: 1 all above 1 (faster), -1 all
 * below (slower), 0 it spans 1 (too noisy to tell).  The lab's judging
 * constants below, and memkit/judge.py on the Python side, are the only
 * ones (docs/judging.md). */
int lab_judge(double lo, double hi);
/* A loss verdict needs memkit slower by at least this much too: a 1% gap at
 * 48 KiB between one loop and the same loop elsewhere is placement. */
#define LAB_LOSS_MIN 1.02
/* The one rule of every ranking point (ranking.c), on the interval of a's
 * speed-up over b: 1 faster, -1 slower (beyond the noise and by at least
 * LAB_LOSS_MIN), 0 neither. */
int lab_interval_verdict(double lo, double hi);
/* That rule for a against b timed in the same rounds, with the median paired
 * speed-up in *median (NULL: not wanted); tests/python/test_judge_recorded.py
 * holds it to the verdicts of recorded runs. */
int lab_point_verdict(const lab_summary *a, const lab_summary *b, int higher_is_better,
                      double *median);
/* An effect over a cache level (fill-regions' zero vs non-zero) needs the
 * level's median ratio this far off 1, and its sizes agreeing. */
#define LAB_LEVEL_EFFECT 0.05

/* ---- verdicts and progress (messages.c) ---- */
void lab_verdict(lab_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A verdict of a kind: "loss", "fastest", "note" (records.def). */
void lab_verdict_kind(lab_ctx *ctx, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void lab_progress(lab_ctx *ctx, size_t done, size_t total, const char *what);

/* ---- the fingerprint (fingerprint.c) ---- */
/* Writes the fingerprint's JSON members to f, each with its leading comma. */
void lab_write_fingerprint(FILE *f);
/* The size or count tunable called name in force (mk_tunables_number);
 * exits with an error when the library has none by that name. */
size_t lab_tunable(const char *name);

/* ---- where memkit stands: per grid point, over the points ---- */
/* Feed every grid point's summaries (from lab_emit_methods); the verdicts
 * then say, per range of consecutive points, where memkit was slower than
 * the fastest other method beyond the noise and by how much (kind "loss"),
 * and which method was fastest where (kind "fastest"). */
typedef struct lab_ranking lab_ranking;
/* ordered: the points are an axis in order (sizes), so ranges make sense;
 * else each point is its own (matrix rows). */
lab_ranking *lab_ranking_new(const char *what, int higher_is_better, int ordered);
/* label: the point ("768 B"); memkit: its index in methods; skip[i] set:
 * method i is not a candidate at this point (NULL: all are). */
void lab_ranking_add(lab_ranking *rk, const char *label, const lab_method *methods, size_t n,
                     size_t memkit, const lab_summary *sums, const unsigned char *skip);
void lab_ranking_verdicts(lab_ctx *ctx, lab_ranking *rk);   /* and frees it */

/* ---- helpers ---- */
/* Keeps the compiler from deleting or hoisting work on p (results escape). */
static inline void lab_escape(void *p) { __asm__ volatile("" : : "g"(p) : "memory"); }
/* xorshift64*: reproducible pseudo-random numbers for size arrays. */
static inline uint64_t lab_rand(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1DULL;
}
/* Calls per batch for random sizes: more than a branch predictor learns.
 * (A Zen 5 learnt an 8,192-call batch: glibc memcpy 2.5 ns per call at
 * 1,024 calls per batch, 8.7 at 50,000; the MSRC seed used 50,000.) */
#define LAB_UNLEARNABLE_CALLS 50000
/* What a batch of `calls` random sizes is to a predictor, in a table's
 * header: "more than a branch predictor can learn", or the warning. */
static inline const char *lab_learnable_words(size_t calls)
{
    return calls >= LAB_UNLEARNABLE_CALLS ? "more than a branch predictor can learn"
                                          : "FEWER than 50,000: a predictor may learn them";
}

/* ---- memory (memory.c) ---- */
/* Page-aligned, pre-faulted memory of n bytes (exits with a message on failure). */
void *lab_alloc(size_t n);
void  lab_free(void *p, size_t n);
/* Evicts the data caches by writing and reading a buffer of 2x the LLC size. */
void  lab_flush_caches(void);

/* ---- the grid's bound (sizes.c) ---- */
/* The L3 a grid scales with: this CPU's (mk_cpu), else 32 MiB; $MEMKIT_LAB_L3
 * (a size) stands in for it where CPUID misreports the L3 a process sees,
 * and lets the tests try a machine with a huge one. */
size_t lab_l3_bytes(void);
/* The largest size of a default grid that must reach beyond the L3:
 * times x the L3, at most LAB_GRID_CAP, but never below 2x the L3 (what
 * judging beyond it needs).  The one rule that bounds the default suite's
 * time on a machine with a huge L3 (a Xeon's 260 MiB made copy-read's 4x
 * 1 GiB and 13 minutes). */
#define LAB_GRID_CAP ((size_t)512 << 20)
size_t lab_beyond_l3(size_t l3, unsigned times);

/* ---- sizes (sizes.c) ---- */
/* Parses "4096", "64K", "1M"; exits with a message on a bad value. */
size_t lab_parse_size(const char *s);
/* The same, returning -1 on a bad value. */
int lab_try_parse_size(const char *s, size_t *out);
/* Human size: "4 KiB", "1.5 MiB" into buf. */
const char *lab_fmt_size(size_t n, char *buf, size_t len);
/* Sizes from min to max, per_octave of them per doubling (min * 2^(k/per_octave)),
 * each rounded to the nearest multiple of granule (at least granule), repeats
 * dropped; into out[cap]; the count. */
size_t lab_octave_sizes(size_t min, size_t max, unsigned per_octave, size_t granule, size_t *out,
                        size_t cap);

#endif
