/* memkit-tune-probe: times memkit's own routines, as configured at load time,
 * for `memkit tune`.
 *
 * The tunables are read once, when the library loads, so each strategy
 * `memkit tune` compares is one of these processes started with its own
 * MEMKIT_TUNABLES (or MEMKIT_PROFILE).  The processes stay alive and are
 * driven one batch at a time over stdin/stdout, so the front end can
 * interleave strategies A B C A B C ... while each keeps its buffers.
 *
 * Commands (one a line), answers (one a line):
 *   tunables                  -> "tunables NAME=VALUE:...  profile PATH"
 *   time OP SIZE REPS [K]     -> nanoseconds for REPS calls, after one untimed call;
 *                                the fastest of K such batches (default 1): the
 *                                machine is shared, and a batch the scheduler
 *                                interrupted says nothing about the routine
 *                                OP: set0 (mk_memset 0), set (mk_memset 0x5c),
 *                                    copy (mk_memcpy, both 64-byte aligned),
 *                                    copy3 (mk_memcpy, destination 3 bytes off),
 *                                    pset (mk_parallel_memset 0x5c, default pool),
 *                                    pcopy (mk_parallel_memcpy, default pool)
 *   pool                      -> the default pool's thread count (the caller included)
 *   quit
 * Usage: memkit-tune-probe MAX_SIZE; memkit-tune-probe --fingerprint prints the
 * machine's fingerprint (the lab's) as JSON. */
#include "lab.h"
#include "memkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dst, *src;
static size_t max_size;

/* One batch; the untimed first call brings the buffers back into the cache
 * (another process ran in between) and the routine's code into the icache. */
static double time_batch(const char *op, size_t n, unsigned long reps)
{
    enum { SET, COPY, PSET, PCOPY } kind;
    if (!strcmp(op, "set0") || !strcmp(op, "set"))
        kind = SET;
    else if (!strcmp(op, "copy") || !strcmp(op, "copy3"))
        kind = COPY;
    else if (!strcmp(op, "pset"))
        kind = PSET;
    else if (!strcmp(op, "pcopy"))
        kind = PCOPY;
    else
        return -1;
    int value = !strcmp(op, "set0") ? 0 : 0x5c;
    char *d = dst + (!strcmp(op, "copy3") ? 3 : 0);
    double t0 = 0;
    for (unsigned long i = 0; i <= reps; i++) {
        if (i == 1)
            t0 = lab_now_ns();
        switch (kind) {
        case SET: mk_memset(d, value, n); break;
        case COPY: mk_memcpy(d, src, n); break;
        case PSET: mk_parallel_memset(NULL, d, value, n); break;
        case PCOPY: mk_parallel_memcpy(NULL, d, src, n); break;
        }
        lab_escape(d);
    }
    return lab_now_ns() - t0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--fingerprint")) {
        printf("{\"type\":\"fingerprint\",");
        lab_write_fingerprint(stdout);
        printf("}\n");
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: memkit-tune-probe MAX_SIZE | --fingerprint  (then commands on stdin)\n");
        return 2;
    }
    max_size = lab_parse_size(argv[1]);
    /* + 4 KiB: room for the misaligned destination. */
    dst = lab_alloc(max_size + 4096);
    src = lab_alloc(max_size + 4096);
    memset(src, 0x3a, max_size);

    char line[256];
    while (fgets(line, sizeof line, stdin)) {
        char op[16];
        unsigned long long n, reps, k = 1;
        if (!strcmp(line, "quit\n")) {
            break;
        } else if (!strcmp(line, "pool\n")) {
            printf("%u\n", mk_pool_threads(NULL));
        } else if (!strcmp(line, "tunables\n")) {
            char tun[1024];
            const mk_tunables *t = mk_tunables_get();
            mk_tunables_format(t, tun, sizeof tun);
            printf("tunables %s  profile %s\n", tun, mk_tunables_profile(t));
        } else if (sscanf(line, "time %15s %llu %llu %llu", op, &n, &reps, &k) >= 3 &&
                   n <= max_size && reps >= 1 && k >= 1) {
            double ns = time_batch(op, (size_t)n, (unsigned long)reps);
            for (unsigned long long i = 1; i < k && ns >= 0; i++) {
                double again = time_batch(op, (size_t)n, (unsigned long)reps);
                ns = again < ns ? again : ns;
            }
            if (ns < 0)
                printf("error: unknown op '%s'\n", op);
            else
                printf("%.0f\n", ns);
        } else {
            printf("error: bad command (max size %zu): %s", max_size, line);
        }
        fflush(stdout);
    }
    return 0;
}
