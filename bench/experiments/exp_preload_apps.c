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

static int run(lab_ctx *ctx)
{
    char built_so[4096];
    const char *so = lab_text(ctx, "preload");
    if (!so)
        so = lab_preload_path(built_so, sizeof built_so);
    int runs = (int)lab_int(ctx, "runs");
    struct stat st;
    if (!so || !so[0] || stat(so, &st) != 0) {
        fprintf(stderr, "error: preload library '%s' not found (build it, or pass preload=SO)\n",
                so ? so : "");
        return 2;
    }
    char script[512], dir[] = "/tmp/memkit-preload-apps-XXXXXX", cmd[2048];
    lab_resource_path("apps/workloads.sh", "bench/apps/workloads.sh", script, sizeof script);
    if (!mkdtemp(dir)) {
        fprintf(stderr, "error: cannot create a temporary directory: %s\n", strerror(errno));
        return 2;
    }
    snprintf(cmd, sizeof cmd, "'%s' setup '%s'", script, dir);
    workload w[16];
    int nw = system(cmd) == 0 ? read_workloads(script, w, 16) : -1;
    if (nw <= 0) {
        fprintf(stderr, "error: cannot set up the workloads with %s\n", script);
        return 2;
    }
    snprintf(cmd, sizeof cmd, "'%s' env", script);   /* git needs fixed identities */
    FILE *envf = popen(cmd, "r");
    char line[256];
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

    /* The two arms: libc and the preload, or (record=1) the preload without
     * and with recording into DIR/rec. */
    int record = (int)lab_int(ctx, "record");
    char rec_dir[sizeof dir + 8];
    snprintf(rec_dir, sizeof rec_dir, "%s/rec", dir);
    if (record && mkdir(rec_dir, 0755) != 0) {
        fprintf(stderr, "error: cannot create %s: %s\n", rec_dir, strerror(errno));
        return 2;
    }
    const arm arms[2] = {{record ? so : NULL, NULL}, {so, record ? rec_dir : NULL}};
    const lab_method ms[2] = {{record ? "memkit-preload" : "libc", NULL, 0, &arms[0], NULL},
                              {record ? "memkit-record" : "memkit-preload", NULL, 0, &arms[1], NULL}};
    const char *with = record ? "recording" : "memkit";
    double *ms_of = malloc(2 * (size_t)runs * sizeof *ms_of);
    printf("%-10s %12s %12s %10s %18s\n", "program", record ? "preload ms" : "libc ms",
           record ? "record ms" : "memkit ms", "speed-up", "~95% interval");
    for (int k = 0; k < nw; k++) {
        lab_progress(ctx, (size_t)k, (size_t)nw, w[k].name);
        if (!have_program(w[k].tool)) {
            printf("%-10s skipped: %s is not installed\n", w[k].name, w[k].tool);
            continue;
        }
        /* warm the page cache */
        program p = {dir, w[k].cmd, run_once(dir, w[k].cmd, arms[0].so, NULL) < 0};
        if (!p.failed)
            lab_interleave(ctx, ms, 2, (size_t)runs, pass, &p, ms_of);
        if (p.failed) {
            printf("%-10s FAILED: the program exited with an error\n", w[k].name);
            continue;
        }
        char params[96];
        snprintf(params, sizeof params, "\"program\":\"%.32s\"", w[k].name);
        lab_record tmpl = {.params_json = params, .metric = "wall_ms", .unit = "ms"};
        lab_summary s[2];
        lab_emit_methods(ctx, &tmpl, ms, 2, (size_t)runs, ms_of, 0, s);
        int j = lab_judge(s[1].ratio_lo, s[1].ratio_hi);
        printf("%-10s %12.1f %12.1f %9.3fx %8.3f..%-8.3f\n", w[k].name, s[0].value, s[1].value,
               s[1].ratio, s[1].ratio_lo, s[1].ratio_hi);
        char iv[80];
        /* slower beyond the noise is a loss of memkit's, in the summary's first lines */
        lab_verdict_kind(ctx, j < 0 && !record ? "loss" : NULL,
                         "%s: %s with %s (speed-up %.3fx, %s, %d pairs)", w[k].name,
                         j > 0 ? "faster" : j < 0 ? "slower" : "too noisy to tell", with, s[1].ratio,
                         lab_interval_text(s[1].ratio_lo, s[1].ratio_hi, iv, sizeof iv), runs);
        lab_summary_free(&s[0]);
        lab_summary_free(&s[1]);
    }
    free(ms_of);
    lab_progress(ctx, (size_t)nw, (size_t)nw, "done");
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "warning: could not remove %s\n", dir);
    return 0;
}

int main(int argc, char **argv)
{
    static const lab_info info = {
        "preload-apps", "(beyond the seeds)",
        "real programs (sort, gzip, python3, git, tar) with and without the preload shim, "
        "interleaved",
        args, sizeof args / sizeof args[0], 0, 0};
    return lab_main(argc, argv, &info, run);
}
