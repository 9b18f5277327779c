/* The lab's shared C core: command line, timing, statistics, the machine
 * fingerprint and the output conventions every experiment follows.
 *
 * An experiment is one executable (bench/exp_<name>.c) whose main() is
 *     return lab_main(argc, argv, &info, run);
 * It prints a human table on stdout, progress on stderr, and — with
 * --jsonl PATH — one JSON object per line:
 *   {"type":"fingerprint", ...}                  first, always
 *   {"type":"measurement", "experiment", "series", "params":{...},
 *    "metric", "unit", "value", "stat", "min", "median", "max", "samples",
 *    ["ratio_to", "ratio", "ratio_min", "ratio_max"]}
 *   {"type":"verdict", "experiment", "text"}
 *   {"type":"end", "experiment", "seconds"}      last, on success
 * `--describe` prints {"name","seed","description"} and exits;
 * `--fingerprint` prints the fingerprint object and exits. */
#ifndef MEMKIT_LAB_H
#define MEMKIT_LAB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    const char *name;         /* "memset-random" */
    const char *seed;         /* "msrc-faster-amd64-memset" */
    const char *description;  /* one line */
} lab_info;

typedef struct {
    const lab_info *info;
    int   quick;              /* --quick: reduced grid for smoke tests */
    FILE *jsonl;              /* NULL without --jsonl */
    int   argc;               /* experiment-specific arguments left over */
    char **argv;
    char **full_argv;         /* the command line as given (for re-executing) */
    double started_ns;
} lab_ctx;

int lab_main(int argc, char **argv, const lab_info *info, int (*run)(lab_ctx *));

/* ---- time ---- */
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

/* ---- output ---- */
typedef struct {
    const char *series;       /* method / variant */
    const char *params_json;  /* e.g. "\"size\":4096,\"value\":0" (no braces) */
    const char *metric;       /* "ns_per_call", "gb_per_s", ... */
    const char *unit;         /* "ns", "GB/s", ... */
    const char *stat;         /* which statistic value is: "median", "mean_fastest_10pct" */
    double value;
    lab_stats s;              /* spread of the samples value came from */
    const char *ratio_to;     /* NULL, or the series the ratio is against */
    double ratio, ratio_min, ratio_max;   /* value / ratio_to's, per interleaved pair */
} lab_measurement;

void lab_emit(lab_ctx *ctx, const lab_measurement *m);
void lab_verdict(lab_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void lab_progress(lab_ctx *ctx, size_t done, size_t total, const char *what);
/* Writes the fingerprint's JSON members (no braces) to f. */
void lab_write_fingerprint(FILE *f);

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
/* Page-aligned, pre-faulted memory of n bytes (exits with a message on failure). */
void *lab_alloc(size_t n);
void  lab_free(void *p, size_t n);
/* Evicts the data caches by writing and reading a buffer of 2x the LLC size. */
void  lab_flush_caches(void);
/* Parses "4096", "64K", "1M"; exits with a message on a bad value. */
size_t lab_parse_size(const char *s);
/* Human size: "4 KiB", "1.5 MiB" into buf. */
const char *lab_fmt_size(size_t n, char *buf, size_t len);

#endif
