/* SPDX-License-Identifier: Apache-2.0 */
/* Several processes: the helper runs of an experiment and their samples.
 *
 * Where code and data land in memory moves small-size results by up to
 * ±15% between processes of one binary, more than the spread inside one.
 * So an experiment that declares info.processes runs again in fresh
 * executions of itself (each with its own address-space layout and shuffle
 * seed), one after the other, never at once (they would time each other).
 * A helper writes one line per record to a private (unlinked) file: the record's
 * identity, its per-round samples and paired speed-ups.  The main process
 * reads them all, then runs the experiment itself; lab_record_emit pools
 * what every process measured for the same record.
 *
 * Under glibc_tunables= (lab.h, "glibc tuned") as many helpers again run
 * with GLIBC_TUNABLES set, alternating with the others, so that drift over
 * the run falls on both alike; their records carry a mark of their own and
 * pool only with each other. */
#include "lab_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define HELPER_ENV "MEMKIT_LAB_HELPER"

typedef struct {
    char *key;
    lab_vec samples, ratios;
} raw_record;

typedef struct {
    raw_record *rec;
    size_t n, cap, cursor;
} raw_file;

struct lab_pool {
    raw_file *files;
    size_t n;
};

void lab_vec_push(lab_vec *v, const double *x, size_t n)
{
    if (v->n + n > v->cap) {
        v->cap = (v->n + n) * 2 + 16;
        v->v = realloc(v->v, v->cap * sizeof *v->v);
    }
    memcpy(v->v + v->n, x, n * sizeof *x);
    v->n += n;
}

/* series, metric, params and whether glibc ran tuned: what makes two
 * processes' records the same; in the line format's terms (no tab, no
 * newline). */
static char *record_key(const lab_record *r, int tuned)
{
    char *k = NULL;
    if (asprintf(&k, "%s\x1f%s\x1f%s%s", r->series, r->metric, r->params_json ? r->params_json : "",
                 tuned ? "\x1ftuned" : "") < 0)
        abort();
    for (char *p = k; *p; p++)
        if (*p == '\t' || *p == '\n')
            *p = ' ';
    return k;
}

static void write_vec(FILE *f, const double *v, size_t n)
{
    fprintf(f, "\t%zu", n);
    for (size_t i = 0; i < n; i++)
        fprintf(f, " %.17g", v[i]);
}

void lab_raw_write(FILE *f, const lab_record *r, int tuned, const double *ratios)
{
    char *k = record_key(r, tuned);
    fputs(k, f);
    free(k);
    write_vec(f, r->samples, r->n);
    write_vec(f, ratios, ratios ? r->n : 0);
    fputc('\n', f);
}

static int read_vec(char **p, lab_vec *v)
{
    char *end;
    if (**p != '\t')
        return -1;
    size_t n = strtoul(*p + 1, &end, 10);
    *p = end;
    for (size_t i = 0; i < n; i++) {
        double x = strtod(*p, &end);
        if (end == *p)
            return -1;
        lab_vec_push(v, &x, 1);
        *p = end;
    }
    return 0;
}

/* Reads (and closes) the helper's file, from its start. */
static int load_raw(int fd, raw_file *out)
{
    FILE *f = lseek(fd, 0, SEEK_SET) == 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        close(fd);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    while (getline(&line, &cap, f) > 0) {
        char *tab = strchr(line, '\t');
        if (!tab) {
            rc = -1;
            break;
        }
        if (out->n == out->cap) {
            out->cap = out->cap * 2 + 64;
            out->rec = realloc(out->rec, out->cap * sizeof *out->rec);
        }
        raw_record *r = &out->rec[out->n++];
        *r = (raw_record){.key = strndup(line, (size_t)(tab - line))};
        char *p = tab;
        if (read_vec(&p, &r->samples) || read_vec(&p, &r->ratios)) {
            rc = -1;
            break;
        }
    }
    free(line);
    fclose(f);
    return rc;
}

int lab_helper_setup(lab_ctx *ctx)
{
    const char *h = getenv(HELPER_ENV);
    if (!h)
        return 0;
    unsigned index, count;
    int fd, tuned;
    if (sscanf(h, "%u %u %d %d", &index, &count, &fd, &tuned) != 4 || index >= count) {
        fprintf(stderr, "error: bad %s\n", HELPER_ENV);
        exit(2);
    }
    unsetenv(HELPER_ENV);
    ctx->process = index;
    ctx->nprocesses = count;
    ctx->tuned = tuned;
    ctx->raw = fdopen(fd, "w");
    if (!ctx->raw) {
        fprintf(stderr, "error: cannot write the samples file: %s\n", strerror(errno));
        exit(2);
    }
    return 1;
}

/* The helper started: a fresh execution of this program under HELPER_ENV
 * (its index, the count, the inherited samples file, whether tuned) and,
 * tuned, GLIBC_TUNABLES; waited for.  Its pid (< 0: not started), its
 * status in *status. */
static pid_t start_helper(lab_ctx *ctx, char **hargv, unsigned p, unsigned count, int fd,
                          int tuned, int *status)
{
    char env[64];
    snprintf(env, sizeof env, "%u %u %d %d", p, count, fd, tuned);
    fflush(NULL);
    pid_t parent = getpid(), pid = fork();
    if (pid == 0) {
        /* dies with the main process (the front end kills only that one) */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        setenv(HELPER_ENV, env, 1);
        /* read by glibc as the process starts: only a fresh one sees it */
        if (tuned)
            setenv("GLIBC_TUNABLES", ctx->glibc_tunables, 1);
        if (!freopen("/dev/null", "w", stdout))
            _exit(127);
        execv("/proc/self/exe", hargv);
        _exit(127);
    }
    *status = 0;
    while (pid > 0 && waitpid(pid, status, 0) < 0 && errno == EINTR) {
    }
    return pid;
}

/* How a helper that did not end well ended: a signal names the bug
 * (SIGFPE: a division by zero); an exit status follows the helper's own
 * error line. */
static void say_helper_failed(lab_ctx *ctx, unsigned p, unsigned count, int tuned, pid_t pid,
                              int status)
{
    char how[96];
    if (pid < 0)
        snprintf(how, sizeof how, "could not start: %s", strerror(errno));
    else if (WIFSIGNALED(status))
        snprintf(how, sizeof how, "was killed by signal %d, SIG%s (%s)", WTERMSIG(status),
                 sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status)) : "?",
                 strsignal(WTERMSIG(status)));
    else
        snprintf(how, sizeof how, "failed (exit status %d)", WEXITSTATUS(status));
    fprintf(stderr, "error: %s: helper process %u of %u%s %s\n", ctx->info->name, p + 1, count,
            tuned ? " (glibc tuned)" : "", how);
}

/* Helper p, start to finish: its samples file (unlinked: nothing is left
 * behind if either process is killed), its run, its samples loaded into
 * the pool.  0, or -1 said on stderr. */
static int run_helper(lab_ctx *ctx, char **hargv, unsigned p, unsigned nhelpers, int tuned)
{
    char path[] = "/tmp/memkit-lab-samples-XXXXXX";
    int fd = mkstemp(path), status;
    if (fd < 0) {
        fprintf(stderr, "error: cannot create a temporary file: %s\n", strerror(errno));
        return -1;
    }
    unlink(path);
    pid_t pid = start_helper(ctx, hargv, p, nhelpers + 1, fd, tuned, &status);
    if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        say_helper_failed(ctx, p, nhelpers + 1, tuned, pid, status);
        close(fd);
        return -1;
    }
    if (load_raw(fd, &ctx->pool->files[ctx->pool->n++])) {
        fprintf(stderr, "error: %s: unreadable samples from helper process %u\n",
                ctx->info->name, p + 1);
        return -1;
    }
    return 0;
}

int lab_run_helpers(lab_ctx *ctx, int argc, char **argv)
{
    /* the helpers' command line: this one without --jsonl PATH */
    char **hargv = calloc((size_t)argc + 1, sizeof *hargv);
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--jsonl")) {
            i++;
            continue;
        }
        hargv[n++] = argv[i];
    }
    /* the helpers, the tuned ones alternating with the others while both last */
    unsigned nhelpers = ctx->nprocesses - 1 + ctx->ntuned, tuned_left = ctx->ntuned;
    ctx->pool = calloc(1, sizeof *ctx->pool);
    ctx->pool->files = calloc(nhelpers, sizeof *ctx->pool->files);
    int rc = 0;
    for (unsigned p = 0; p < nhelpers && !rc; p++) {
        int tuned = tuned_left && (p % 2 == 0 || tuned_left == nhelpers - p);
        tuned_left -= (unsigned)tuned;
        rc = run_helper(ctx, hargv, p, nhelpers, tuned);
    }
    free(hargv);
    return rc;
}

static raw_record *find(raw_file *f, const char *key)
{
    for (size_t k = 0; k < f->n; k++) {   /* the next one, nearly always */
        size_t i = (f->cursor + k) % f->n;
        if (!strcmp(f->rec[i].key, key)) {
            f->cursor = i + 1;
            return &f->rec[i];
        }
    }
    return NULL;
}

size_t lab_pool_take(lab_ctx *ctx, const lab_record *r, int tuned, lab_vec *samples,
                     lab_vec *ratios, lab_vec *process_values, lab_vec *process_ratios)
{
    if (!ctx->pool)
        return 0;
    char *key = record_key(r, tuned);
    size_t found = 0;
    for (size_t i = 0; i < ctx->pool->n; i++) {
        raw_record *rec = find(&ctx->pool->files[i], key);
        if (!rec || !rec->samples.n)
            continue;
        found++;
        lab_vec_push(samples, rec->samples.v, rec->samples.n);
        double v = lab_stat_value(rec->samples.v, rec->samples.n, r->stat, r->higher_is_better);
        lab_vec_push(process_values, &v, 1);
        if (rec->ratios.n) {
            lab_vec_push(ratios, rec->ratios.v, rec->ratios.n);
            double m = lab_stat_value(rec->ratios.v, rec->ratios.n, "median", 1);
            lab_vec_push(process_ratios, &m, 1);
        }
    }
    free(key);
    return found;
}

void lab_pool_free(lab_ctx *ctx)
{
    if (!ctx->pool)
        return;
    for (size_t i = 0; i < ctx->pool->n; i++) {
        raw_file *f = &ctx->pool->files[i];
        for (size_t k = 0; k < f->n; k++) {
            free(f->rec[k].key);
            free(f->rec[k].samples.v);
            free(f->rec[k].ratios.v);
        }
        free(f->rec);
    }
    free(ctx->pool->files);
    free(ctx->pool);
    ctx->pool = NULL;
}
