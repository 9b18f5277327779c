/* SPDX-License-Identifier: Apache-2.0 */
/* preload-apps: real programs (bench/apps/workloads.sh) timed with and
 * without LD_PRELOAD=libmemkit_preload.so in the lab's interleaved rounds
 * (shuffled order; no warm-up pass: the page cache is warmed once per
 * program), and memkit's speed-up per pair (libc time / memkit time) with
 * its interval: "too noisy to tell" when it spans 1.
 *
 * record=1 compares the preload with and without `memkit record`'s
 * recording on (MEMKIT_RECORD=DIR): what recording adds to whole programs.
 * Arguments: see --help. */
#include "lab.h"
#include "sweep.h"
#include "resources.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>


static const lab_arg args[] = {
    {"runs", LAB_INT, "11", "2", "interleaved pairs per program (fewer than 5: no claims)", 2,
     1000},
    {"preload", LAB_TEXT, NULL, NULL, "the preload library (default: the one built or installed "
                                      "with this program)", 0, 0},
    {"record", LAB_INT, "0", NULL, "1: the preload without and with recording (MEMKIT_RECORD)",
     0, 1},
};

typedef struct {
    char name[32], tool[32], cmd[512];
} workload;

/* Runs cmd in dir through the shell, recording into record_dir if not
 * NULL; returns wall ns, or -1 if it failed. */
static double run_once(const char *dir, const char *cmd, const char *preload, const char *record_dir)
{
    fflush(NULL);   /* or the child's freopen writes our buffered output again */
    double t0 = lab_now_ns();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (chdir(dir) != 0)
            _exit(127);
        if (preload)
            setenv("LD_PRELOAD", preload, 1);
        else
            unsetenv("LD_PRELOAD");
        if (record_dir)
            setenv("MEMKIT_RECORD", record_dir, 1);
        else
            unsetenv("MEMKIT_RECORD");
        if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "r", stdin))
            _exit(127);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    double t = lab_now_ns() - t0;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? t : -1;
}

static int read_workloads(const char *script, workload *w, int max)
{
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "'%s' list", script);
    FILE *f = popen(cmd, "r");
    if (!f)
        return -1;
    int n = 0;
    char line[600];
    while (n < max && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *a = strchr(line, '|'), *b = a ? strchr(a + 1, '|') : NULL;
        if (!a || !b)
            continue;
        *a = *b = '\0';
        snprintf(w[n].name, sizeof w[n].name, "%.31s", line);
        snprintf(w[n].tool, sizeof w[n].tool, "%.31s", a + 1);
        snprintf(w[n].cmd, sizeof w[n].cmd, "%.511s", b + 1);
        n++;
    }
    pclose(f);
    return n;
}

static int have_program(const char *tool)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "command -v '%s' >/dev/null 2>&1", tool);
    return system(cmd) == 0;
}

typedef struct {
    const char *dir, *cmd;
    int failed;
} program;

/* One arm: what LD_PRELOAD and MEMKIT_RECORD are (NULL: unset). */
typedef struct {
    const char *so, *record_dir;
} arm;

/* data: the arm; wall ms. */
static double pass(const lab_method *m, void *arg, int warm)
{
    program *p = arg;
    const arm *a = m->data;
    if (warm)
        return 0;
    double ns = run_once(p->dir, p->cmd, a->so, a->record_dir);
    p->failed |= ns < 0;
    return ns / 1e6;
}

/* The run: the workloads set up in a directory of their own, the two
 * arms, this point's record. */
typedef struct {
    char dir[40], rec_dir[48];
    workload w[16];
    int nw, runs, record;
    arm arms[2];
    lab_method ms[2];
    program p;
    char params[96];
    lab_record tmpl;
} apps;

/* The workloads set up by bench/apps/workloads.sh in a fresh directory,
 * and the environment it asks for (git needs fixed identities).  0, or 2. */
static int set_up_workloads(apps *a)
{
    char script[512], cmd[2048], line[256];
    lab_resource_path("apps/workloads.sh", "bench/apps/workloads.sh", script, sizeof script);
    if (lab_temp_dir("preload-apps", a->dir, sizeof a->dir))
        return 2;
    snprintf(cmd, sizeof cmd, "'%s' setup '%s'", script, a->dir);
    a->nw = system(cmd) == 0 ? read_workloads(script, a->w, 16) : -1;
    if (a->nw <= 0) {
        fprintf(stderr, "error: cannot set up the workloads with %s\n", script);
        return 2;
    }
    snprintf(cmd, sizeof cmd, "'%s' env", script);
    FILE *envf = popen(cmd, "r");
    while (envf && fgets(line, sizeof line, envf)) {
        line[strcspn(line, "\n")] = '\0';
        char *eq = strchr(line, '=');
        if (eq) {
            *eq = '\0';
            setenv(line, eq + 1, 1);
        }
    }
    if (envf)
        pclose(envf);
    return 0;
}

/* The two arms: libc and the preload, or (record=1) the preload without
 * and with recording into DIR/rec.  0, or 2. */
static int set_up_arms(apps *a, const char *so)
{
    snprintf(a->rec_dir, sizeof a->rec_dir, "%s/rec", a->dir);
    if (a->record && mkdir(a->rec_dir, 0755) != 0) {
        fprintf(stderr, "error: cannot create %s: %s\n", a->rec_dir, strerror(errno));
        return 2;
    }
    a->arms[0] = (arm){a->record ? so : NULL, NULL};
    a->arms[1] = (arm){so, a->record ? a->rec_dir : NULL};
    a->ms[0] = (lab_method){.name = a->record ? "memkit-preload" : "libc", .data = &a->arms[0]};
    a->ms[1] = (lab_method){.name = a->record ? "memkit-record" : "memkit-preload", .data = &a->arms[1]};
    return 0;
}

/* Workload k: skipped when its program is missing or fails once untimed
 * (which also warms the page cache). */
static int declare(lab_ctx *ctx, void *state, size_t k, lab_point *pt, char *what, size_t len)
{
    (void)ctx;
    apps *a = state;
    const workload *w = &a->w[k];
    if (!have_program(w->tool)) {
        printf("%-10s skipped: %s is not installed\n", w->name, w->tool);
        return LAB_POINT_SKIP;
    }
    a->p = (program){a->dir, w->cmd, run_once(a->dir, w->cmd, a->arms[0].so, NULL) < 0};
    if (a->p.failed) {
        printf("%-10s FAILED: the program exited with an error\n", w->name);
        return LAB_POINT_SKIP;
    }
    snprintf(what, len, "%s", w->name);
    snprintf(a->params, sizeof a->params, "\"program\":\"%.32s\"", w->name);
    a->tmpl = (lab_record){.params_json = a->params, .metric = "wall_ms", .unit = "ms"};
    *pt = (lab_point){.methods = a->ms, .n = 2, .rounds = (size_t)a->runs, .pass = pass,
                      .arg = &a->p, .tmpl = &a->tmpl, .baseline = 0, .label = w->name,
                      .memkit = SIZE_MAX /* not ranked */, .failed = &a->p.failed};
    return LAB_POINT_RUN;
}

static void lost(lab_ctx *ctx, void *state, size_t k, const lab_point *pt)
{
    (void)ctx, (void)pt;
    printf("%-10s FAILED: the program exited with an error\n", ((apps *)state)->w[k].name);
}

/* A measured workload: its row, and its verdict (slower beyond the noise is
 * a loss of memkit's, in the summary's first lines). */
static void measured(lab_ctx *ctx, void *state, size_t k, const lab_point *pt,
                     const lab_summary *s, const double *samples)
{
    (void)pt, (void)samples;
    const apps *a = state;
    int j = lab_judge(s[1].ratio_lo, s[1].ratio_hi);
    char iv[80];
    printf("%-10s %12.1f %12.1f %9.3fx %8.3f..%-8.3f\n", a->w[k].name, s[0].value, s[1].value,
           s[1].ratio, s[1].ratio_lo, s[1].ratio_hi);
    lab_verdict_kind(ctx, j < 0 && !a->record ? "loss" : NULL,
                     "%s: %s with %s (speed-up %.3fx, %s, %d pairs)", a->w[k].name,
                     j > 0 ? "faster" : j < 0 ? "slower" : "too noisy to tell",
                     a->record ? "recording" : "memkit", s[1].ratio,
                     lab_interval_text(s[1].ratio_lo, s[1].ratio_hi, iv, sizeof iv), a->runs);
}

static int run(lab_ctx *ctx)
{
    static apps a;
    char built_so[4096];
    const char *so = lab_preload_library(lab_text(ctx, "preload"), built_so, sizeof built_so);
    a.runs = (int)lab_int(ctx, "runs");
    a.record = (int)lab_int(ctx, "record");
    if (!so || set_up_workloads(&a) || set_up_arms(&a, so))
        return 2;
    printf("%-10s %12s %12s %10s %18s\n", "program", a.record ? "preload ms" : "libc ms",
           a.record ? "record ms" : "memkit ms", "speed-up", "~95% interval");
    lab_grid grid = {.npoints = (size_t)a.nw, .max_methods = 2, .max_rounds = (size_t)a.runs,
                     .declare = declare, .measured = measured, .lost = lost};
    lab_sweep(ctx, &grid, &a);
    lab_progress(ctx, (size_t)a.nw, (size_t)a.nw, "done");
    lab_remove_dir(a.dir);
    return 0;
}

int main(int argc, char **argv)
{
    static const lab_info info = {
        .name = "preload-apps", .seed = "(beyond the seeds)",
        .description = "real programs (sort, gzip, python3, git, tar) with and without the "
                       "preload shim, interleaved",
        .args = args, .nargs = sizeof args / sizeof args[0]};
    return lab_main(argc, argv, &info, run);
}
