/* SPDX-License-Identifier: Apache-2.0 */
/* Debug builds (MEMKIT_DEBUG_CONTRACTS) check the caller's side of
 * mk_zero_aligned16's contract — 16-aligned dst, size a multiple of 16 — and
 * trap with one line on stderr.  Each violation runs in a forked child.  In
 * a build without the checks a violation is undefined behaviour, so there
 * only calls that keep the contract are made. */
#include "check.h"
#include "memkit.h"

#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static _Alignas(64) unsigned char buf[512];

/* Runs mk_zero_aligned16(buf + offset, n) in a child; returns its status and
 * what it wrote on stderr. */
static int call_in_child(size_t offset, size_t n, char *err, size_t cap)
{
    int fds[2];
    if (pipe(fds)) {
        perror("pipe");
        exit(2);
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        signal(SIGTRAP, SIG_DFL);
        signal(SIGILL, SIG_DFL);
        mk_zero_aligned16(buf + offset, n);
        _exit(buf[offset] == 0 ? 0 : 3);
    }
    close(fds[1]);
    size_t len = 0;
    ssize_t got;
    while (len < cap - 1 && (got = read(fds[0], err + len, cap - 1 - len)) > 0)
        len += (size_t)got;
    err[len] = '\0';
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
}

/* The trap is __builtin_trap(): SIGILL (ud2) with gcc and clang on x86-64;
 * SIGTRAP is accepted too. */
static int trapped(int status)
{
    return WIFSIGNALED(status) && (WTERMSIG(status) == SIGILL || WTERMSIG(status) == SIGTRAP);
}

int main(void)
{
    char err[1024];
    static const struct { size_t offset, n; } kept[] = {{0, 0}, {0, 16}, {16, 48}, {32, 256}, {0, 496}};
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
        int st = call_in_child(kept[i].offset, kept[i].n, err, sizeof err);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && err[0] == '\0',
              "contract kept (offset %zu, n %zu): status 0x%x, stderr '%s'", kept[i].offset,
              kept[i].n, st, err);
    }
#ifdef MK_DEBUG_CONTRACTS
    static const struct { size_t offset, n; } broken[] = {{8, 64}, {1, 16}, {0, 17}, {0, 8}, {16, 100}, {4, 3}};
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        int st = call_in_child(broken[i].offset, broken[i].n, err, sizeof err);
        CHECK(trapped(st), "contract broken (offset %zu, n %zu): not trapped, status 0x%x",
              broken[i].offset, broken[i].n, st);
        CHECK(strstr(err, "memkit: contract violated: mk_zero_aligned16") != NULL,
              "contract broken (offset %zu, n %zu): stderr '%s'", broken[i].offset, broken[i].n, err);
    }
    printf("debug contracts on: violations trap\n");
#else
    printf("debug contracts off: only calls that keep the contract were made\n");
#endif
    check_finish();
}
