/* SPDX-License-Identifier: Apache-2.0 */
/* Where the settings come from, tried as a hostile or careless user would:
 * a profile that is not a regular file (a FIFO must not hang the program,
 * /dev/stdin must not eat its input), a profile with a NUL byte, a settings
 * string past 4 KiB, a setting after a 40 KB variable, a profile path past
 * 255 bytes, a flood of bad settings, and a setuid program run by another
 * user (the invoker's settings and files ignored).  Each case runs this
 * program again as a child, with a time limit, and reads what it reports. */
#include "check.h"
#include "memkit.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { TIME_LIMIT_S = 10 };

static char dir[] = "/tmp/memkit-sources-XXXXXX";
static char self[4096];

typedef struct {
    int hung, status;
    char out[8192], err[16384];
} child_result;

static void read_all(int fd, char *buf, size_t cap)
{
    size_t len = 0;
    ssize_t got;
    lseek(fd, 0, SEEK_SET);
    while (len < cap - 1 && (got = read(fd, buf + len, cap - 1 - len)) > 0)
        len += (size_t)got;
    buf[len] = '\0';
}

static int scratch_fd(const char *name)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        perror(path);
        exit(2);
    }
    return fd;
}

/* Runs `prog --report [mode]` with exactly the environment env (NULL-ended),
 * stdin from stdin_fd (-1: /dev/null), as uid (-1: ours); kills it after
 * TIME_LIMIT_S. */
static child_result run(const char *prog, const char *mode, char **env, int stdin_fd, int uid)
{
    child_result r = {0};
    int fo = scratch_fd("out"), fe = scratch_fd("err");
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int in = stdin_fd >= 0 ? stdin_fd : open("/dev/null", O_RDONLY);
        dup2(in, 0);
        dup2(fo, 1);
        dup2(fe, 2);
        if (uid >= 0 && (setgroups(0, NULL), setresgid((gid_t)uid, (gid_t)uid, (gid_t)uid) != 0 ||
                         setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) != 0))
            _exit(126);
        char *argv[] = {(char *)prog, "--report", (char *)mode, NULL};
        execve(prog, argv, env);
        _exit(127);
    }
    struct timespec tick = {0, 10 * 1000 * 1000};
    for (int waited = 0;; waited++) {
        if (waitpid(pid, &r.status, WNOHANG) == pid)
            break;
        if (waited >= TIME_LIMIT_S * 100) {
            kill(pid, SIGKILL);
            waitpid(pid, &r.status, 0);
            r.hung = 1;
            break;
        }
        nanosleep(&tick, NULL);
    }
    read_all(fo, r.out, sizeof r.out);
    read_all(fe, r.err, sizeof r.err);
    close(fo);
    close(fe);
    return r;
}

static int ok(const child_result *r)
{
    return !r->hung && WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0 &&
           strstr(r->out, "tunables ");
}

static int has(const child_result *r, const char *setting)
{
    return tunables_line_has(r->out, setting);
}

static const char *profile_in_force(const child_result *r)
{
    static char line[4096];
    const char *p = strstr(r->out, "profile ");
    snprintf(line, sizeof line, "%.*s", p ? (int)strcspn(p + 8, "\n") : 0, p ? p + 8 : "");
    return line;
}

static void write_file(const char *path, const char *text, size_t len, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (fd < 0 || write(fd, text, len) != (ssize_t)len) {
        perror(path);
        exit(2);
    }
    close(fd);
}

/* ---- item: profiles that are not regular files ---- */

static void not_regular_files(void)
{
    char fifo[256], profile_env[300];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo: %s", strerror(errno));

    const char *named[] = {fifo, dir, "/dev/null", "/proc/self/mem", "/dev/stdin"};
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
        snprintf(profile_env, sizeof profile_env, "MEMKIT_PROFILE=%s", named[i]);
        char *env[] = {profile_env, NULL};
        child_result r = run(self, NULL, env, -1, -1);
        CHECK(ok(&r), "MEMKIT_PROFILE=%s: %s, status 0x%x", named[i],
              r.hung ? "hung" : "failed", r.status);
        CHECK(profile_in_force(&r)[0] == '\0', "MEMKIT_PROFILE=%s taken as a profile ('%s')",
              named[i], profile_in_force(&r));
        CHECK(count_lines(r.err) == 1 && strstr(r.err, named[i]), "MEMKIT_PROFILE=%s: stderr '%s'",
              named[i], r.err);
    }

    /* A FIFO at the default path, no variable set: no hang, said once. */
    char home[300], conf[400], home_env[310];
    snprintf(home, sizeof home, "%s/home", dir);
    snprintf(conf, sizeof conf, "%s/.config", home);
    mkdir(home, 0700);
    mkdir(conf, 0700);
    snprintf(conf, sizeof conf, "%s/.config/memkit", home);
    mkdir(conf, 0700);
    snprintf(conf, sizeof conf, "%s/.config/memkit/profile", home);
    CHECK(mkfifo(conf, 0600) == 0, "mkfifo: %s", strerror(errno));
    snprintf(home_env, sizeof home_env, "HOME=%s", home);
    char *env[] = {home_env, NULL};
    child_result r = run(self, NULL, env, -1, -1);
    CHECK(ok(&r) && count_lines(r.err) == 1 && strstr(r.err, "not a regular file"),
          "a FIFO at the default path: %s, stderr '%s'", r.hung ? "hung" : "ran", r.err);

    /* /dev/stdin as the profile: the program's input stays its own. */
    int pipefd[2];
    CHECK(pipe(pipefd) == 0, "pipe");
    if (write(pipefd[1], "hi\n", 3) != 3)
        exit(2);
    close(pipefd[1]);
    char *stdin_env[] = {"MEMKIT_PROFILE=/dev/stdin", NULL};
    r = run(self, "stdin", stdin_env, pipefd[0], -1);
    close(pipefd[0]);
    CHECK(ok(&r) && strstr(r.out, "stdin 'hi\n'"), "/dev/stdin as the profile: %s, out '%s'",
          r.hung ? "hung" : "ran", r.out);
}

/* A profile of this CPU ("cpu=" line first, as memkit tune writes it; one
 * without says so on stderr) holding body[0..len). */
static void write_profile(const char *path, const char *body, size_t len)
{
    const mk_cpu_info *cpu = mk_cpu();
    char text[512];
    int n = snprintf(text, sizeof text, "cpu=%s family=%u model=%u microcode=0x1\n", cpu->vendor,
                     cpu->family, cpu->model);
    memcpy(text + n, body, len);
    write_file(path, text, (size_t)n + len, 0600);
}

/* ---- item: a NUL byte in a profile ---- */

static void nul_in_profile(void)
{
    char path[300], env_profile[320];
    snprintf(path, sizeof path, "%s/nul-profile", dir);
    static const char text[] = "nt_threshold=5M\n\0rep_stosb_threshold=1\n";
    write_profile(path, text, sizeof text - 1);
    snprintf(env_profile, sizeof env_profile, "MEMKIT_PROFILE=%s", path);
    char *env[] = {env_profile, NULL};
    child_result r = run(self, NULL, env, -1, -1);
    CHECK(ok(&r) && !has(&r, "nt_threshold=5242880") && profile_in_force(&r)[0] == '\0',
          "a profile with a NUL byte was applied: %s", r.out);
    CHECK(count_lines(r.err) == 1 && strstr(r.err, "corrupt"), "NUL byte: stderr '%s'", r.err);

    /* The same without the NUL byte is fine (the test can fail). */
    write_profile(path, text, 16);
    r = run(self, NULL, env, -1, -1);
    CHECK(ok(&r) && has(&r, "nt_threshold=5242880") && r.err[0] == '\0',
          "the profile without the NUL: out '%s' err '%s'", r.out, r.err);
}

/* ---- item: nothing is cut short ---- */

static void long_inputs(void)
{
    /* 4080 colons, then a setting: applied whole, not as "nt_threshold=16". */
    static char spec[4200 + 20];
    size_t n = (size_t)snprintf(spec, sizeof spec, "MEMKIT_TUNABLES=");
    memset(spec + n, ':', 4080);
    snprintf(spec + n + 4080, sizeof spec - n - 4080, "nt_threshold=16777216");
    char *env1[] = {spec, "MEMKIT_PROFILE=none", NULL};
    child_result r = run(self, NULL, env1, -1, -1);
    CHECK(ok(&r) && has(&r, "nt_threshold=16777216") && r.err[0] == '\0',
          "4 KiB+ settings: out '%s' err '%s'", r.out, r.err);

    /* A setting after a 40 KB variable, and one straddling the old 32 KiB
     * boundary. */
    for (size_t big = 40000; big >= 32700; big -= 7300 - 27) {
        static char filler[50000];
        n = (size_t)snprintf(filler, sizeof filler, "FILLER=");
        memset(filler + n, 'x', big);
        filler[n + big] = '\0';
        char *env2[] = {filler, "MEMKIT_TUNABLES=nt_threshold=16777216", "MEMKIT_PROFILE=none",
                        NULL};
        r = run(self, NULL, env2, -1, -1);
        CHECK(ok(&r) && has(&r, "nt_threshold=16777216") && r.err[0] == '\0',
              "setting after a %zu-byte variable: out '%s' err '%s'", big, r.out, r.err);
    }

    /* A profile path over 255 bytes: that file, not a truncated name. */
    char path[1024];
    int len = snprintf(path, sizeof path, "%s/", dir);
    memset(path + len, 'd', 200);
    path[len + 200] = '\0';
    mkdir(path, 0700);
    len += 200;
    len += snprintf(path + len, sizeof path - (size_t)len, "/");
    memset(path + len, 'p', 150);
    path[len + 150] = '\0';
    write_profile(path, "nt_threshold=7M\n", 16);
    char profile_env[1100];
    snprintf(profile_env, sizeof profile_env, "MEMKIT_PROFILE=%s", path);
    char *env3[] = {profile_env, NULL};
    r = run(self, NULL, env3, -1, -1);
    CHECK(ok(&r) && has(&r, "nt_threshold=7340032") && r.err[0] == '\0',
          "a %zu-byte profile path: out '%s' err '%s'", strlen(path), r.out, r.err);
    CHECK(strlen(profile_in_force(&r)) == 255 && !strncmp(profile_in_force(&r), path, 252),
          "long profile path shown as '%s'", profile_in_force(&r));

    /* 120 KB of bad settings: a few lines on stderr, not a thousand. */
    static char junk[120 * 1024 + 32];
    n = (size_t)snprintf(junk, sizeof junk, "MEMKIT_TUNABLES=");
    while (n + 8 < 120 * 1024)
        n += (size_t)snprintf(junk + n, sizeof junk - n, "bogus%d:", (int)(n % 10));
    char *env4[] = {junk, "MEMKIT_PROFILE=none", NULL};
    r = run(self, NULL, env4, -1, -1);
    CHECK(ok(&r) && count_lines(r.err) <= 10 && strstr(r.err, "more problems"),
          "120 KB of junk: %d stderr lines", count_lines(r.err));
}

/* ---- item: secure execution ---- */

static void setuid_program(void)
{
    if (geteuid() != 0) {
        printf("skip setuid: needs root to make a setuid-root copy of this test\n");
        return;
    }
    struct statvfs fs;
    if (statvfs(dir, &fs) == 0 && (fs.f_flag & ST_NOSUID)) {
        printf("skip setuid: %s is on a nosuid file system\n", dir);
        return;
    }
    /* A setuid-root copy of this program, a file only root may read as its
     * profile, and settings; run by "nobody". */
    char copy[300], secret[300], profile_env[320];
    snprintf(copy, sizeof copy, "%s/setuid-copy", dir);
    snprintf(secret, sizeof secret, "%s/root-only", dir);
    int in = open(self, O_RDONLY), out = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0700);
    char buf[65536];
    ssize_t got;
    while (in >= 0 && out >= 0 && (got = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)got) != got)
            exit(2);
    close(in);
    close(out);
    CHECK(chown(copy, 0, 0) == 0 && chmod(copy, 04755) == 0 && chmod(dir, 0755) == 0,
          "setuid copy: %s", strerror(errno));
    write_file(secret, "nt_threshold=3M\n", 16, 0600);
    snprintf(profile_env, sizeof profile_env, "MEMKIT_PROFILE=%s", secret);
    char *env[] = {"MEMKIT_TUNABLES=threads=7:nt_threshold=5M", profile_env, NULL};

    /* Run by root (not secure): the settings apply; the check can fail. */
    child_result mine = run(copy, "ids", env, -1, -1);
    CHECK(ok(&mine) && has(&mine, "threads=7"), "root's own run ignored its settings: %s",
          mine.out);

    child_result r = run(copy, "ids", env, -1, 65534);
    if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 126) {
        printf("skip setuid: cannot switch to uid 65534\n");
        return;
    }
    if (!strstr(r.out, "euid 0 ")) {
        printf("skip setuid: the copy did not run as root (%s)\n", r.out);
        return;
    }
    CHECK(ok(&r) && !has(&r, "threads=7") && !has(&r, "nt_threshold=5242880") &&
              !has(&r, "nt_threshold=3145728") && profile_in_force(&r)[0] == '\0',
          "a setuid program honoured its invoker's settings: %s", r.out);
    CHECK(r.err[0] == '\0', "setuid: stderr '%s'", r.err);
}

/* ---- the child ---- */

static int report_main(const char *mode)
{
    unsigned char buf[3000];
    mk_memset(buf, 1, sizeof buf);
    char tun[2048];
    mk_tunables_format(mk_tunables_get(), tun, sizeof tun);
    printf("tunables %s\nprofile %s\n", tun, mk_tunables_profile(mk_tunables_get()));
    if (mode && !strcmp(mode, "stdin")) {
        char in[64] = "";
        ssize_t got = read(0, in, sizeof in - 1);
        in[got > 0 ? got : 0] = '\0';
        printf("stdin '%s'\n", in);
    }
    if (mode && !strcmp(mode, "ids"))
        printf("euid %d uid %d\n", (int)geteuid(), (int)getuid());
    return buf[2999] == 1 ? 0 : 3;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--report"))
        return report_main(argc > 2 ? argv[2] : NULL);
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0 || !mkdtemp(dir)) {
        perror("setup");
        return 2;
    }
    self[n] = '\0';
    not_regular_files();
    nul_in_profile();
    long_inputs();
    setuid_program();
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    check_finish();
}
