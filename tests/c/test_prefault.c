/* SPDX-License-Identifier: Apache-2.0 */
/* Page services: mk_prefault's three modes fault a range in and keep its
 * contents, report what the kernel refused (holes, protections, mlock beyond
 * RLIMIT_MEMLOCK) as an errno; populate falls back where the kernel lacks
 * it; mk_pages_alloc reports the kind it got and mk_pages_free unmaps
 * exactly that. */
#include "check.h"
#include "memkit.h"
#include "pages/pages_internal.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

static size_t page;

/* AddressSanitizer replaces mlock with a no-op that succeeds: the lock mode's
 * checks run only without it. */
#if defined(__SANITIZE_ADDRESS__)
static const int lock_works = 0;
#else
static const int lock_works = 1;
#endif

static const char *mode_name(mk_prefault_mode m)
{
    return m == MK_PREFAULT_TOUCH ? "touch" : m == MK_PREFAULT_POPULATE ? "populate" : "lock";
}

static size_t resident_pages(void *p, size_t len)
{
    size_t n = len / page, count = 0;
    unsigned char *vec = malloc(n);
    if (mincore(p, len, vec) != 0) {
        free(vec);
        return (size_t)-1;
    }
    for (size_t i = 0; i < n; i++)
        count += vec[i] & 1;
    free(vec);
    return count;
}

static unsigned char *fresh(size_t pages)
{
    unsigned char *p = mmap(NULL, pages * page, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    madvise(p, pages * page, MADV_NOHUGEPAGE);   /* count 4 KiB pages */
    return p;
}

/* Each mode makes every page of an unaligned range resident and changes no
 * byte (half the pages hold data already). */
static void modes_fault_in_and_keep_contents(void)
{
    for (int m = 0; m < (lock_works ? 3 : 2); m++)
        for (int no_populate = 0; no_populate < (m == MK_PREFAULT_POPULATE ? 2 : 1); no_populate++) {
            size_t pages = 64;
            unsigned char *p = fresh(pages);
            for (size_t i = 0; i < pages; i += 2)
                memset(p + i * page, (int)(i + 1), page);
            mk_prefault_test_no_populate = no_populate;
            int err = mk_prefault(p + 100, pages * page - 200, (mk_prefault_mode)m);
            mk_prefault_test_no_populate = 0;
            CHECK(err == 0, "%s%s: error %d (%s)", mode_name(m), no_populate ? " (no populate)" : "",
                  err, strerror(err));
            CHECK(resident_pages(p, pages * page) == pages, "%s: %zu of %zu pages resident",
                  mode_name(m), resident_pages(p, pages * page), pages);
            int same = 1;
            for (size_t i = 0; i < pages; i++)
                for (size_t j = 0; j < page; j += 511)
                    same &= p[i * page + j] == (i % 2 ? 0 : (unsigned char)(i + 1));
            CHECK(same, "%s changed the contents", mode_name(m));
            if (m == MK_PREFAULT_LOCK)
                munlock(p, pages * page);
            munmap(p, pages * page);
        }
}

static void empty_and_bad_arguments(void)
{
    for (int m = 0; m < 3; m++) {
        CHECK(mk_prefault(NULL, 0, (mk_prefault_mode)m) == 0, "%s of nothing", mode_name(m));
        CHECK(mk_prefault(NULL, 4096, (mk_prefault_mode)m) == EINVAL, "%s of NULL", mode_name(m));
        CHECK(mk_prefault((void *)(UINTPTR_MAX - 100), 4096, (mk_prefault_mode)m) == EINVAL,
              "%s wrapping around", mode_name(m));
    }
    unsigned char *p = fresh(1);
    CHECK(mk_prefault(p, page, (mk_prefault_mode)7) == EINVAL, "unknown mode");
    munmap(p, page);
}

/* A hole in the range: every mode says ENOMEM and nothing crashes. */
static void unmapped_range(void)
{
    unsigned char *p = fresh(3);
    munmap(p + page, page);
    for (int m = 0; m < (lock_works ? 3 : 2); m++) {
        mk_prefault_test_no_populate = 0;
        int err = mk_prefault(p, 3 * page, (mk_prefault_mode)m);
        CHECK(err == ENOMEM, "%s over a hole: %d (%s), expected ENOMEM", mode_name(m), err,
              strerror(err));
    }
    mk_prefault_test_no_populate = 1;   /* the fallback checks too */
    int err = mk_prefault(p, 3 * page, MK_PREFAULT_POPULATE);
    mk_prefault_test_no_populate = 0;
    CHECK(err == ENOMEM, "populate fallback over a hole: %d", err);
    munlock(p, page);
    munmap(p, page);
    munmap(p + 2 * page, page);
}

/* A range the process may not write: touch and populate (and populate's
 * fallback) say EINVAL where a write would raise SIGSEGV, whether the whole
 * range or one page in its middle is protected; lock of PROT_NONE refuses.
 * Nothing is written. */
static void protected_range(void)
{
    static const struct { int prot; const char *name; } prots[] = {
        {PROT_READ, "read-only"}, {PROT_NONE, "PROT_NONE"}};
    for (size_t k = 0; k < 2; k++)
        for (int whole = 0; whole < 2; whole++)
            for (int m = 0; m < 3; m++) {
                int fallback = m == 2;   /* populate without MADV_POPULATE_WRITE */
                mk_prefault_mode mode = m == 0 ? MK_PREFAULT_TOUCH : MK_PREFAULT_POPULATE;
                unsigned char *p = fresh(4);
                memset(p, 0x3c, 4 * page);
                mprotect(whole ? p : p + 2 * page, whole ? 4 * page : page, prots[k].prot);
                mk_prefault_test_no_populate = fallback;
                int err = mk_prefault(p, 4 * page, mode);
                mk_prefault_test_no_populate = 0;
                CHECK(err == EINVAL, "%s%s of a %s %s: %d (%s), expected EINVAL", mode_name(mode),
                      fallback ? " (fallback)" : "", whole ? "wholly" : "partly", prots[k].name,
                      err, strerror(err));
                mprotect(p, 4 * page, PROT_READ);
                CHECK(p[0] == 0x3c && p[4 * page - 1] == 0x3c, "contents changed");
                munmap(p, 4 * page);
            }
    unsigned char *p = fresh(4);
    mprotect(p, 4 * page, PROT_NONE);
    int err = mk_prefault(p, 4 * page, MK_PREFAULT_LOCK);
    CHECK(err != 0 || !lock_works, "lock of a PROT_NONE range succeeded");
    munmap(p, 4 * page);
}

/* A shared file mapping longer than its file: the pages past the end would
 * raise SIGBUS; touch and populate say EFAULT, and work on the pages before. */
static void past_end_of_file(void)
{
    char path[] = "/tmp/memkit-prefault-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0 && ftruncate(fd, (off_t)(2 * page + 100)) == 0, "file: %s", strerror(errno));
    unlink(path);
    unsigned char *p = mmap(NULL, 8 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(p != MAP_FAILED, "mmap: %s", strerror(errno));
    for (int m = 0; m < 3; m++) {
        mk_prefault_mode mode = m == 0 ? MK_PREFAULT_TOUCH : MK_PREFAULT_POPULATE;
        mk_prefault_test_no_populate = m == 2;
        int err = mk_prefault(p, 8 * page, mode);
        int before = mk_prefault(p, 3 * page, mode);
        mk_prefault_test_no_populate = 0;
        CHECK(err == EFAULT, "%s%s past the end of a file: %d (%s), expected EFAULT",
              mode_name(mode), m == 2 ? " (fallback)" : "", err, strerror(err));
        CHECK(before == 0, "%s of the file's own pages: %d (%s)", mode_name(mode), before,
              strerror(before));
    }
    munmap(p, 8 * page);
    close(fd);
}

/* mlock beyond RLIMIT_MEMLOCK, in a child without CAP_IPC_LOCK (root gives
 * it up by becoming nobody): ENOMEM (EPERM where the limit is 0); within the
 * limit it works. */
static void lock_beyond_rlimit(void)
{
    if (!lock_works) {
        printf("lock mode: not checked (mlock is a no-op under AddressSanitizer)\n");
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        if (getuid() == 0 && setuid(65534) != 0)
            _exit(100);
        struct rlimit rl = {64 * 1024, 64 * 1024};
        if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0)
            _exit(101);
        unsigned char *p = fresh(256);
        if (mk_prefault(p, 8 * page, MK_PREFAULT_LOCK) != 0)
            _exit(102);
        munlock(p, 8 * page);
        int err = mk_prefault(p, 256 * page, MK_PREFAULT_LOCK);
        _exit(err > 0 && err < 100 ? err : 103);
    }
    int status;
    waitpid(pid, &status, 0);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    CHECK(code == ENOMEM || code == EPERM, "mlock of 1 MiB under a 64 KiB RLIMIT_MEMLOCK: "
          "child said %d (ENOMEM=%d; 100+: setup failed, 102: lock within the limit failed)",
          code, ENOMEM);
}

static int thp_enabled(void)
{
    char buf[128] = "";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f)
        return 0;
    int ok = fgets(buf, sizeof buf, f) != NULL;
    fclose(f);
    return ok && !strstr(buf, "[never]");
}

static long hugetlb_free_pages(void)
{
    char line[256];
    long v = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    while (f && fgets(line, sizeof line, f))
        sscanf(line, "HugePages_Free: %ld", &v);
    if (f)
        fclose(f);
    return v;
}

static void huge_page_allocation(void)
{
    static const size_t sizes[] = {1, 4096, (size_t)2 << 20, (size_t)5 << 20 | 123};
    for (int want = 0; want < 3; want++)
        for (size_t i = 0; i < 4; i++) {
            size_t n = sizes[i];
            mk_page_kind got = (mk_page_kind)99;
            unsigned char *p = mk_pages_alloc(n, (mk_page_kind)want, &got);
            CHECK(p != NULL, "mk_pages_alloc(%zu, %d) failed", n, want);
            if (!p)
                continue;
            mk_page_kind expect = want == MK_PAGES_NORMAL ? MK_PAGES_NORMAL
                                : want == MK_PAGES_HUGETLB && hugetlb_free_pages() > 0 ? MK_PAGES_HUGETLB
                                : thp_enabled() ? MK_PAGES_THP : MK_PAGES_NORMAL;
            /* hugetlb pages can run out between the look and the mmap */
            CHECK(got == expect || (want == MK_PAGES_HUGETLB && got == MK_PAGES_THP),
                  "want %d n=%zu: got %d, expected %d", want, n, (int)got, (int)expect);
            CHECK(got == MK_PAGES_NORMAL || ((uintptr_t)p & ((2u << 20) - 1)) == 0,
                  "huge pages not 2 MiB aligned");
            memset(p, 0xa5, n);
            CHECK(p[0] == 0xa5 && p[n - 1] == 0xa5, "memory not usable");
            mk_pages_free(p, n);
            size_t span = (n + page - 1) / page * page;
            CHECK(resident_pages(p, span) == (size_t)-1 && errno == ENOMEM,
                  "mk_pages_free left the mapping");
        }
    CHECK(mk_pages_alloc(0, MK_PAGES_THP, NULL) == NULL, "zero bytes");
    CHECK(mk_pages_alloc(SIZE_MAX - 10, MK_PAGES_NORMAL, NULL) == NULL, "impossible size");
    mk_pages_free(NULL, 0);
}

int main(void)
{
    page = (size_t)sysconf(_SC_PAGESIZE);
    modes_fault_in_and_keep_contents();
    empty_and_bad_arguments();
    unmapped_range();
    protected_range();
    past_end_of_file();
    lock_beyond_rlimit();
    huge_page_allocation();
    check_finish();
}
