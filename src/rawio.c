/* SPDX-License-Identifier: Apache-2.0 */
/* Raw system calls for the code that runs before the C library is ready (ifunc
 * resolvers, the preload shim's first calls): no errno, no malloc, no locks,
 * no stdio. */
#include "internal.h"
#include "text.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

MK_EARLY static long raw_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
    long ret;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}

MK_EARLY static long raw_syscall3(long nr, long a, long b, long c)
{
    return raw_syscall6(nr, a, b, c, 0, 0, 0);
}

enum { RAW_EINTR = 4 };

/* Reads fd to its end into buf[0..cap-1) and closes it; -1 on a read error,
 * cap - 1 (the buffer full) when there may be more. */
MK_EARLY static long read_all_and_close(long fd, char *buf, size_t cap)
{
    size_t got = 0;
    long r = 0;
    while (got < cap - 1) {
        r = raw_syscall3(SYS_read, fd, (long)(buf + got), (long)(cap - 1 - got));
        if (r == -RAW_EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    raw_syscall3(SYS_close, fd, 0, 0);
    buf[got] = '\0';
    return r < 0 ? -1 : (long)got;
}

MK_EARLY long mk_raw_read_file(const char *path, char *buf, size_t cap)
{
    if (cap == 0)
        return -1;
    long fd = raw_syscall3(SYS_open, (long)path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    return read_all_and_close(fd, buf, cap);
}

/* Never blocks: opened non-blocking (a FIFO's open would wait for a writer),
 * and nothing but a regular file is read (a FIFO, a terminal or a device
 * could block, or swallow the program's own input). */
MK_EARLY long mk_raw_read_regular_file(const char *path, char *buf, size_t cap, const char **why)
{
    *why = "open failed";
    if (cap == 0)
        return -1;
    long fd = raw_syscall3(SYS_open, (long)path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0);
    if (fd == -ENOENT || fd == -ENOTDIR)
        *why = "no such file";
    if (fd < 0)
        return fd == -ENOENT || fd == -ENOTDIR ? -2 : -1;
    struct stat st;
    if (raw_syscall3(SYS_fstat, fd, (long)&st, 0) != 0 || !S_ISREG(st.st_mode)) {
        raw_syscall3(SYS_close, fd, 0, 0);
        *why = "not a regular file";
        return -1;
    }
    if ((unsigned long)st.st_size >= cap) {
        raw_syscall3(SYS_close, fd, 0, 0);
        *why = "too large";
        return -1;
    }
    long len = read_all_and_close(fd, buf, cap);
    if (len < 0)
        *why = "read error";
    else if ((size_t)len == cap - 1)    /* grew past its fstat size */
        *why = "too large", len = -1;
    return len;
}

MK_EARLY void mk_raw_write_stderr(const char *s)
{
    size_t n = mk_text_len(s);
    while (n > 0) {
        long r = raw_syscall3(SYS_write, 2, (long)s, (long)n);
        if (r == -RAW_EINTR)
            continue;
        if (r <= 0)
            return;
        s += r;
        n -= (size_t)r;
    }
}

MK_EARLY int mk_raw_page_untouched(const void *p)
{
    unsigned char resident = 1;
    long page = (long)((uintptr_t)p & ~(uintptr_t)4095);
    return raw_syscall3(SYS_mincore, page, 4096, (long)&resident) == 0 && !(resident & 1);
}

/* ---- the initial environment, whole ---- */

MK_EARLY static void *raw_mmap(size_t n)
{
    long p = raw_syscall6(SYS_mmap, 0, (long)n, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p < 0 && p > -4096 ? 0 : (void *)p;
}

/* /proc/self/environ into memory mapped for it (and grown until it fits: the
 * environment may be megabytes, and a fixed buffer once cut off the settings
 * that came after a large variable). */
MK_EARLY static int load_proc_environ(mk_raw_env *e)
{
    *e = (mk_raw_env){0};
    for (size_t cap = (size_t)64 << 10; cap <= ((size_t)1 << 30); cap *= 4) {
        char *buf = raw_mmap(cap);
        if (!buf)
            return 0;
        long len = mk_raw_read_file("/proc/self/environ", buf, cap);
        if (len >= 0 && (size_t)len < cap - 1) {
            *e = (mk_raw_env){.text = buf, .len = (size_t)len, .cap = cap};
            return 1;
        }
        raw_syscall3(SYS_munmap, (long)buf, (long)cap, 0);
        if (len < 0)
            return 0;
    }
    return 0;
}

/* libc's copy costs nothing; the system calls cost ~30 us in a VM (the
 * secure-execution check and the read), paid by every process at its first
 * memset or memcpy under the preload shim. */
MK_EARLY int mk_raw_env_open(mk_raw_env *e)
{
    int libc = mk_libc_env ? mk_libc_env(e) : -1;
    if (libc >= 0)
        return libc;
    return !mk_raw_secure_execution() && load_proc_environ(e);
}

/* The value of one NAME=value entry, if it is NAME's. */
MK_EARLY static const char *value_of(const char *entry, const char *name)
{
    size_t j = 0;
    while (name[j] && entry[j] == name[j])
        j++;
    return name[j] == '\0' && entry[j] == '=' ? entry + j + 1 : 0;
}

MK_EARLY const char *mk_raw_env_get(const mk_raw_env *e, const char *name)
{
    if (e->vars) {
        for (char *const *v = e->vars; *v; v++)
            if (value_of(*v, name))
                return value_of(*v, name);
        return 0;
    }
    for (size_t i = 0; i < e->len;) {   /* entries are NUL-terminated, the last too */
        const char *v = value_of(e->text + i, name);
        if (v)
            return v;
        while (i < e->len && e->text[i])
            i++;
        i++;
    }
    return 0;
}

MK_EARLY void mk_raw_env_release(mk_raw_env *e)
{
    if (e->text)
        raw_syscall3(SYS_munmap, (long)e->text, (long)e->cap, 0);
    *e = (mk_raw_env){0};
}

/* One variable, copied to buf: 1 if set and wholly copied, 0 if unset, too
 * long for buf (never cut short) or in secure execution. */
MK_EARLY int mk_raw_getenv(const char *name, char *buf, size_t cap)
{
    mk_raw_env env;
    if (cap == 0 || !mk_raw_env_open(&env))
        return 0;
    const char *v = mk_raw_env_get(&env, name);
    size_t n = 0;
    while (v && v[n] && n < cap)
        n++;
    int ok = v && n < cap;
    for (size_t i = 0; ok && i <= n; i++)
        buf[i] = v[i];
    mk_raw_env_release(&env);
    return ok;
}

/* ---- secure execution ---- */

/* AT_SECURE from /proc/self/auxv (what glibc's getauxval(AT_SECURE) and
 * __libc_enable_secure say, unavailable this early), or differing real and
 * effective ids.  A process can always read its own auxv unless it was made
 * non-dumpable by gaining privileges (or /proc is missing): then secure. */
MK_EARLY int mk_raw_secure_execution(void)
{
    if (raw_syscall3(SYS_getuid, 0, 0, 0) != raw_syscall3(SYS_geteuid, 0, 0, 0) ||
        raw_syscall3(SYS_getgid, 0, 0, 0) != raw_syscall3(SYS_getegid, 0, 0, 0))
        return 1;
    Elf64_auxv_t aux[64];
    long len = mk_raw_read_file("/proc/self/auxv", (char *)aux, sizeof aux);
    if (len <= 0)
        return 1;
    for (size_t i = 0; i < (size_t)len / sizeof aux[0]; i++) {
        if (aux[i].a_type == AT_NULL)
            break;
        if (aux[i].a_type == AT_SECURE)
            return aux[i].a_un.a_val != 0;
    }
    return 0;
}
