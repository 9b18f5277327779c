/* SPDX-License-Identifier: Apache-2.0 */
/* dlopen libmemkit.so, one parallel copy through the default pool (its
 * workers start), dlclose; 50 times.  After each dlclose the library must be
 * gone from the address space and no thread of it left behind (workers that
 * outlived the unmapped code crashed the process, and leaked one thread per
 * cycle).  Built without linking memkit: it only dlopens it. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* memkit's own threads (named memkit-*): a sanitizer's helper threads do
 * not count. */
static int threads_now(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d));) {
        char path[300], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = e->d_name[0] != '.' ? fopen(path, "r") : NULL;
        if (f && fgets(comm, sizeof comm, f))
            n += strncmp(comm, "memkit-", 7) == 0;
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    return n;
}

static int still_mapped(const char *path)
{
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    char line[4096];
    int found = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    while (f && fgets(line, sizeof line, f))
        found |= strstr(line, base) != NULL;
    if (f)
        fclose(f);
    return found;
}

int main(int argc, char **argv)
{
    const char *lib = argc > 1 ? argv[1] : "libmemkit.so";
    int cycles = argc > 2 ? atoi(argv[2]) : 50;
    size_t n = (size_t)9 << 20;
    unsigned char *src = malloc(n), *dst = malloc(n);
    for (size_t i = 0; i < n; i++)
        src[i] = (unsigned char)(i * 7 + 1);
    int baseline = threads_now(), failed = 0;
    for (int cycle = 0; cycle < cycles && !failed; cycle++) {
        void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            printf("dlopen %s: %s\n", lib, dlerror());
            return 1;
        }
        void *(*pcopy)(void *, void *, const void *, size_t) =
            (void *(*)(void *, void *, const void *, size_t))dlsym(h, "mk_parallel_memcpy");
        unsigned (*pool_threads)(const void *) = (unsigned (*)(const void *))dlsym(h, "mk_pool_threads");
        memset(dst, 0, n);
        pcopy(NULL, dst, src, n);
        unsigned workers = pool_threads(NULL) - 1;
        if (memcmp(dst, src, n) != 0) {
            printf("cycle %d: the copy is wrong\n", cycle);
            failed = 1;
        }
        if (cycle == 0)
            printf("the default pool has %u workers\n", workers);
        if (workers > 0 && threads_now() != baseline + (int)workers) {
            printf("cycle %d: the pool's %u workers are not all named memkit-*\n", cycle, workers);
            failed = 1;
        }
        dlclose(h);
        if (still_mapped(lib)) {
            printf("cycle %d: %s still mapped after dlclose (nothing was unloaded)\n", cycle, lib);
            failed = 1;
        }
        if (threads_now() != baseline) {
            printf("cycle %d: %d memkit threads after dlclose, %d before dlopen\n", cycle,
                   threads_now(), baseline);
            failed = 1;
        }
    }
    free(src);
    free(dst);
    printf("%d passed, %d failed\n", !failed, failed);
    return failed;
}
