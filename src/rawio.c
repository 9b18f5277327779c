/* Raw system calls for the code that runs before the C library is ready (ifunc
 * resolvers, the preload shim's first calls): no errno, no allocation, no
 * locks, no stdio. */
#include "internal.h"

#include <fcntl.h>
#include <sys/syscall.h>

MK_EARLY static long raw_syscall3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c)
                     : "rcx", "r11", "memory");
    return ret;
}

MK_EARLY long mk_raw_read_file(const char *path, char *buf, size_t cap)
{
    if (cap == 0)
        return -1;
    long fd = raw_syscall3(SYS_open, (long)path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    size_t got = 0;
    while (got < cap - 1) {
        long r = raw_syscall3(SYS_read, fd, (long)(buf + got), (long)(cap - 1 - got));
        if (r == -4 /* EINTR */)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    raw_syscall3(SYS_close, fd, 0, 0);
    buf[got] = '\0';
    return (long)got;
}

MK_EARLY void mk_raw_write_stderr(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    while (n > 0) {
        long r = raw_syscall3(SYS_write, 2, (long)s, (long)n);
        if (r == -4)
            continue;
        if (r <= 0)
            return;
        s += r;
        n -= (size_t)r;
    }
}

MK_EARLY int mk_raw_getenv(const char *name, char *buf, size_t cap)
{
    /* The initial environment is enough: like GLIBC_TUNABLES, memkit's
     * settings are read once at load time, so the file is read once too
     * (callers run inside the configuration's one-time initialisation). */
    static char env[32768];
    static long len = -2;   /* -2: not read yet */
    if (len == -2)
        len = mk_raw_read_file("/proc/self/environ", env, sizeof env);
    if (len <= 0 || cap == 0)
        return 0;
    for (long i = 0; i < len;) {
        long j = 0;
        while (name[j] && i + j < len && env[i + j] == name[j])
            j++;
        if (name[j] == '\0' && i + j < len && env[i + j] == '=') {
            const char *v = env + i + j + 1;
            size_t k = 0;
            while (v + k < env + len && v[k] && k < cap - 1) {
                buf[k] = v[k];
                k++;
            }
            buf[k] = '\0';
            return 1;
        }
        while (i < len && env[i])
            i++;
        i++;
    }
    return 0;
}
