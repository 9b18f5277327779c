/* SPDX-License-Identifier: Apache-2.0 */
/* Runs under LD_PRELOAD=libmemkit_preload.so (see tests/preload.cmake) and
 * checks the shim: memset & co. resolve into it, work before main and from
 * threads, give memcpy memmove's safety, and keep the fortified overflow
 * checks. Linked against libc only, like any program a user preloads into. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned long passed, failed;
#define CHECK(cond, ...) do { if (cond) passed++; else { failed++; \
    fprintf(stderr, "%s:%d: FAILED: %s: ", __FILE__, __LINE__, #cond); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

/* Sizes the compiler cannot see, so every call is a real call. */
static volatile size_t vsize[4] = {0, 7, 300, 70000};

static unsigned char early_buf[70000];
static int early_ok;

__attribute__((constructor(101))) static void before_main(void)
{
    memset(early_buf, 0x5a, vsize[3]);
    memcpy(early_buf + 1, early_buf + 100, vsize[2]);
    early_ok = early_buf[0] == 0x5a && early_buf[vsize[3] - 1] == 0x5a;
}

static const char *object_of(void *fn)
{
    Dl_info info;
    return dladdr(fn, &info) && info.dli_fname ? info.dli_fname : "?";
}

static void *thread_body(void *arg)
{
    unsigned char *buf = malloc(1 << 20);
    long ok = 1;
    for (int round = 0; round < 200; round++) {
        size_t n = (size_t)(round * 4099) % (1 << 19) + vsize[1];
        memset(buf, round, n);
        memmove(buf + 3, buf, n);
        for (size_t i = 3; i < n + 3; i += 997)
            ok &= buf[i] == (unsigned char)round;
    }
    free(buf);
    (void)arg;
    return (void *)ok;
}

extern void *__memcpy_chk(void *, const void *, size_t, size_t);
extern void *__memset_chk(void *, int, size_t, size_t);

static int dies_with_abort(int which)
{
    pid_t pid = fork();
    if (pid == 0) {
        char dst[16], src[64] = {0};
        close(2);   /* keep "buffer overflow detected" out of the test log */
        if (which == 0)
            __memcpy_chk(dst, src, vsize[2] / 10, sizeof dst);
        else
            __memset_chk(dst, 0, vsize[2] / 10, sizeof dst);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

int main(void)
{
    int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "memkit_preload_active");
    CHECK(active && active(), "memkit_preload_active not found: is LD_PRELOAD set?");
    CHECK(strstr(object_of((void *)memset), "memkit_preload") != NULL, "memset is from %s",
          object_of((void *)memset));
    CHECK(strstr(object_of((void *)memcpy), "memkit_preload") != NULL, "memcpy is from %s",
          object_of((void *)memcpy));
    CHECK(early_ok, "memset/memcpy before main gave wrong bytes");

    /* memcpy with overlap behaves as memmove (memkit's promise). */
    char text[64] = "abcdefghijklmnopqrstuvwxyz";
    memcpy(text + 2, text, vsize[2] / 12);      /* 25 bytes, overlapping */
    CHECK(memcmp(text, "ababcdefghijklmnopqrstuvwxy", 27) == 0, "overlapping memcpy: %s", text);

    char pc[8] = "xxxxxxx";
    CHECK(mempcpy(pc, "abc", vsize[1] - 4) == pc + 3 && memcmp(pc, "abcxxxx", 7) == 0,
          "mempcpy");
    bzero(pc, vsize[1] - 4);
    CHECK(memcmp(pc, "\0\0\0xxxx", 7) == 0, "bzero");

    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, thread_body, NULL);
    for (int i = 0; i < 4; i++) {
        void *ok;
        pthread_join(t[i], &ok);
        CHECK(ok == (void *)1, "thread %d saw wrong bytes", i);
    }
    CHECK(dies_with_abort(0), "__memcpy_chk did not abort on overflow");
    CHECK(dies_with_abort(1), "__memset_chk did not abort on overflow");
    printf("%lu passed, %lu failed\n", passed, failed);
    return failed != 0;
}
