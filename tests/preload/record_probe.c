/* SPDX-License-Identifier: Apache-2.0 */
/* A program with known memset/memcpy/memmove calls, for `memkit record`'s
 * tests (tests/python/test_record.py).  Each call goes out through the PLT
 * (-fno-builtin), so the preload shim sees exactly these:
 *
 *   record_probe [K]      K x (1000 memsets of 100 bytes, 500 memcpys of
 *                         4096, 300 overlapping memmoves of 24), K = 1
 *   record_probe fork     the calls, then again in a forked child
 *   record_probe threads  the calls in each of 4 threads at once
 *   record_probe hang     the calls, "ready PID" on stdout, then sleeps until killed
 *   record_probe large    memsets beyond the exact sizes: 10 of 5000 and 10 of
 *                         5002 bytes (one bucket), 2 of 1 MiB
 *   record_probe stdin    copies standard input to standard output, one
 *                         memcpy per line, then exits with status 3
 *   record_probe srcalign memcpys of 64 bytes to 64-aligned destinations:
 *                         300 from odd sources, 100 from 8-aligned ones;
 *                         200 memmoves from 2-aligned sources, apart
 *   record_probe ws-small 200,000 memcpys of 64 bytes, always between the
 *                         same two lines
 *   record_probe ws-stride 4 passes of memcpys of 4 KiB from each page of
 *                         256 MiB in turn (mapped, never written: the zero
 *                         page behind it) into one small buffer */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile size_t n_set = 100, n_cpy = 4096, n_move = 24;

static void calls(void)
{
    static char a[8192] __attribute__((aligned(64))), b[8192] __attribute__((aligned(64)));
    for (int i = 0; i < 1000; i++)
        memset(a + 64, i, n_set);            /* destination 64-aligned */
    for (int i = 0; i < 500; i++)
        memcpy(b + 8, a + 2048, n_cpy);      /* destination 8-aligned */
    for (int i = 0; i < 300; i++)
        memmove(a + 16 + 4, a + 16, n_move);   /* overlapping; destination 4-aligned */
}

static void *thread_body(void *arg)
{
    (void)arg;
    calls();
    return NULL;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "1";
    if (!strcmp(mode, "fork")) {
        calls();   /* the child starts with the parent's counters mapped */
        pid_t pid = fork();
        if (pid == 0) {
            calls();
            _exit(0);
        }
        int status;
        waitpid(pid, &status, 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
    if (!strcmp(mode, "threads")) {
        pthread_t t[4];
        for (int i = 0; i < 4; i++)
            pthread_create(&t[i], NULL, thread_body, NULL);
        for (int i = 0; i < 4; i++)
            pthread_join(t[i], NULL);
        return 0;
    }
    if (!strcmp(mode, "hang")) {
        calls();
        printf("ready %d\n", (int)getpid());
        fflush(stdout);
        for (;;)
            pause();
    }
    if (!strcmp(mode, "large")) {
        static char big[1 << 20];
        volatile size_t sizes[3] = {5000, 5002, 1 << 20};
        for (int i = 0; i < 10; i++) {
            memset(big, i, sizes[0]);
            memset(big, i, sizes[1]);
        }
        memset(big, 1, sizes[2]);
        memset(big, 2, sizes[2]);
        return 0;
    }
    if (!strcmp(mode, "srcalign")) {
        static char a[8192] __attribute__((aligned(64))), b[8192] __attribute__((aligned(64)));
        for (int i = 0; i < 300; i++)
            memcpy(b + 64, a + 64 * (i % 32) + 1 + 2 * (i % 16), 64);   /* odd sources */
        for (int i = 0; i < 100; i++)
            memcpy(b + 128, a + 64 * (i % 32) + 8, 64);                  /* 8-aligned */
        for (int i = 0; i < 200; i++)
            memmove(b + 4096, a + 64 * (i % 32) + 2, n_move);            /* 2-aligned */
        return 0;
    }
    if (!strcmp(mode, "ws-small")) {
        static char a[128] __attribute__((aligned(64)));
        volatile size_t n = 64;
        for (int i = 0; i < 200000; i++)
            memcpy(a, a + 64, n);
        return 0;
    }
    if (!strcmp(mode, "ws-stride")) {
        size_t span = (size_t)256 << 20;
        char *big = mmap(NULL, span, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        static char small[4096];
        if (big == MAP_FAILED)
            return 1;
        for (int pass = 0; pass < 4; pass++)
            for (size_t at = 0; at < span; at += 4096)
                memcpy(small, big + at, sizeof small);
        return 0;
    }
    if (!strcmp(mode, "stdin")) {
        char line[4096], out[4096];
        while (fgets(line, sizeof line, stdin)) {
            size_t n = strlen(line);
            memcpy(out, line, n);
            fwrite(out, 1, n, stdout);
        }
        return 3;
    }
    for (int k = atoi(mode); k > 0; k--)
        calls();
    return 0;
}
