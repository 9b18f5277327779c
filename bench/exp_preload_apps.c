/* preload-apps: real programs (bench/apps/workloads.sh) timed with and
 * without LD_PRELOAD=libmemkit_preload.so, interleaved run by run, and the
 * ratio of their wall times with its spread.
 *
 *   memkit-exp-preload-apps [--quick] [--preload SO] [--runs N] [--record]
 *
 * --record compares the preload with and without `memkit record`'s
 * recording on (MEMKIT_RECORD=DIR): what recording adds to whole programs. */
#include "lab.h"
#include "resources.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>


static const lab_info info = {
    "preload-apps", "(beyond the seeds)",
    "real programs (sort, gzip, python3, git, tar) with and without the preload shim, interleaved"};

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

static int run(lab_ctx *ctx)
{
    char built_so[4096];
    const char *so = lab_preload_path(built_so, sizeof built_so);
    int runs = ctx->quick ? 3 : 11, record = 0;
    for (int i = 1; i < ctx->argc; i++) {
        if (!strcmp(ctx->argv[i], "--preload") && i + 1 < ctx->argc)
            so = ctx->argv[++i];
        else if (!strcmp(ctx->argv[i], "--runs") && i + 1 < ctx->argc)
            runs = atoi(ctx->argv[++i]);
        else if (!strcmp(ctx->argv[i], "--record"))
            record = 1;
        else {
            fprintf(stderr, "error: unknown argument '%s' (see --help)\n", ctx->argv[i]);
            return 2;
        }
    }
    struct stat st;
    if (!so[0] || stat(so, &st) != 0) {
        fprintf(stderr, "error: preload library '%s' not found (build it, or pass --preload SO)\n", so);
        return 2;
    }
    if (runs < 2 || runs > 1000) {
        fprintf(stderr, "error: --runs must be 2..1000\n");
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

    /* The two arms: libc and the preload, or (--record) the preload without
     * and with recording into DIR/rec. */
    char rec_dir[sizeof dir + 8];
    snprintf(rec_dir, sizeof rec_dir, "%s/rec", dir);
    if (record && mkdir(rec_dir, 0755) != 0) {
        fprintf(stderr, "error: cannot create %s: %s\n", rec_dir, strerror(errno));
        return 2;
    }
    const char *base_so = record ? so : NULL, *rec = record ? rec_dir : NULL;
    const char *base_name = record ? "memkit-preload" : "libc";
    const char *arm_name = record ? "memkit-record" : "memkit-preload";
    const char *with = record ? "recording" : "memkit";
    printf("%-10s %12s %12s %10s %18s\n", "program", record ? "preload ms" : "libc ms",
           record ? "record ms" : "memkit ms", "ratio", "ratio min..max");
    for (int k = 0; k < nw; k++) {
        lab_progress(ctx, (size_t)k, (size_t)nw, w[k].name);
        if (!have_program(w[k].tool)) {
            printf("%-10s skipped: %s is not installed\n", w[k].name, w[k].tool);
            continue;
        }
        double plain[1000], pre[1000], ratio[1000];
        int ok = run_once(dir, w[k].cmd, base_so, NULL) >= 0;   /* warm the page cache */
        for (int r = 0; ok && r < runs; r++) {
            /* Alternate which goes first so drift favours neither. */
            int preload_first = r & 1;
            double a = preload_first ? run_once(dir, w[k].cmd, so, rec)
                                     : run_once(dir, w[k].cmd, base_so, NULL);
            double b = preload_first ? run_once(dir, w[k].cmd, base_so, NULL)
                                     : run_once(dir, w[k].cmd, so, rec);
            plain[r] = preload_first ? b : a;
            pre[r] = preload_first ? a : b;
            ok = plain[r] > 0 && pre[r] > 0;
            ratio[r] = plain[r] / pre[r];
        }
        if (!ok) {
            printf("%-10s FAILED: the program exited with an error\n", w[k].name);
            continue;
        }
        lab_stats sp = lab_stats_scaled(lab_stats_of(plain, (size_t)runs), 1e-6);
        lab_stats sm = lab_stats_scaled(lab_stats_of(pre, (size_t)runs), 1e-6);
        lab_stats sr = lab_stats_of(ratio, (size_t)runs);
        printf("%-10s %12.1f %12.1f %9.3fx %8.3f..%-8.3f\n", w[k].name, sp.median, sm.median,
               sr.median, sr.min, sr.max);
        char params[96];
        snprintf(params, sizeof params, "\"program\":\"%.32s\"", w[k].name);
        /* ratio = baseline time / the arm's: above 1 means the arm is faster. */
        lab_emit(ctx, &(lab_measurement){.series = base_name, .params_json = params,
                                         .metric = "wall_ms", .unit = "ms", .stat = "median",
                                         .value = sp.median, .s = sp});
        lab_emit(ctx, &(lab_measurement){.series = arm_name, .params_json = params,
                                         .metric = "wall_ms", .unit = "ms", .stat = "median",
                                         .value = sm.median, .s = sm, .ratio_to = base_name,
                                         .ratio = sr.median, .ratio_min = sr.min,
                                         .ratio_max = sr.max});
        if (sr.min > 1.0)
            lab_verdict(ctx, "%s: faster with %s in every pair (median %.3fx)", w[k].name, with,
                        sr.median);
        else if (sr.max < 1.0)
            lab_verdict(ctx, "%s: slower with %s in every pair (median %.3fx)", w[k].name, with,
                        sr.median);
        else
            lab_verdict(ctx, "%s: no difference beyond the noise (median %.3fx, range %.3f..%.3f)",
                        w[k].name, sr.median, sr.min, sr.max);
    }
    lab_progress(ctx, (size_t)nw, (size_t)nw, "done");
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "warning: could not remove %s\n", dir);
    return 0;
}

int main(int argc, char **argv) { return lab_main(argc, argv, &info, run); }
