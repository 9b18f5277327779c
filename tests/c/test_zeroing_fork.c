/* SPDX-License-Identifier: Apache-2.0 */
/* The zeroing service in a forked child: the child has none of the parent's
 * workers, yet blocks it hands back are zeroed, mk_zeroing_drain and
 * mk_zeroing_destroy return, and blocks the parent's workers had not finished
 * at fork time are zeroed in the child too.  Every lock kind, with the
 * workers idle at fork time and with a backlog being zeroed.  Each child has
 * a time limit: the inherited service used to hang it forever. */
#include "check.h"
#include "memkit.h"

#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ThreadSanitizer cannot follow it: the child's new workers reuse the
 * stacks, hence the thread ids, of the parent's (glibc reclaims them at
 * fork), which it still counts as running ("dup thread with used id"). */
#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#else
#define UNDER_TSAN 0
#endif

enum { BLOCKS = 6, TIME_LIMIT_S = 10 };
static const size_t block_bytes = (size_t)3 << 20 | 4096 | 100;   /* several grains, odd tail */

static unsigned char *blocks[BLOCKS];

static int all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

/* In the child: whatever was handed back before the fork comes out zeroed,
 * and so do new blocks; drain and destroy return.  Exit code says what
 * failed. */
static int child(mk_zeroing *z, int inherited_blocks)
{
    alarm(TIME_LIMIT_S);
    unsigned char *mine = malloc(block_bytes);
    memset(mine, 0xee, block_bytes);
    mk_zeroing_put(z, mine, block_bytes);
    mk_zeroing_drain(z);
    int got_mine = 0, got_inherited = 0;
    for (;;) {
        size_t got = 0;
        unsigned char *p = mk_zeroing_get(z, 1, &got);
        if (!p)
            break;
        if (got != block_bytes || !all_zero(p, got))
            return 3;
        got_mine += p == mine;
        got_inherited += p != mine;
    }
    mk_zeroing_destroy(z);
    if (!got_mine)
        return 4;
    if (got_inherited != inherited_blocks)
        return 5;
    return 0;
}

static void fork_with(mk_lock_kind lock, int busy)
{
    mk_zeroing_config cfg = {.threads = 2, .grain = 64 << 10, .lock = lock, .awake = 2};
    mk_zeroing *z = mk_zeroing_create(&cfg);
    CHECK(z != NULL, "create");
    for (int i = 0; i < BLOCKS; i++) {
        memset(blocks[i], 0xa5, block_bytes);
        mk_zeroing_put(z, blocks[i], block_bytes);
    }
    if (!busy)
        mk_zeroing_drain(z);   /* workers idle at fork time */
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        _exit(child(z, BLOCKS));
    int status = 0;
    waitpid(pid, &status, 0);
    const char *what = WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ? "hung"
                     : WIFEXITED(status) && WEXITSTATUS(status) == 3 ? "a block not zeroed"
                     : WIFEXITED(status) && WEXITSTATUS(status) == 4 ? "its own block missing"
                     : WIFEXITED(status) && WEXITSTATUS(status) == 5 ? "inherited blocks missing"
                     : "failed";
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "lock kind %d, workers %s at fork: "
          "child %s (status 0x%x)", (int)lock, busy ? "busy" : "idle", what, status);

    /* The parent's service is unaffected. */
    mk_zeroing_drain(z);
    int back = 0;
    size_t got;
    unsigned char *p;
    while ((p = mk_zeroing_get(z, 1, &got)))
        back += got == block_bytes && all_zero(p, got);
    CHECK(back == BLOCKS, "lock kind %d: the parent got %d of %d blocks back zeroed", (int)lock,
          back, BLOCKS);
    mk_zeroing_destroy(z);
}

int main(void)
{
    if (UNDER_TSAN) {
        printf("skip: ThreadSanitizer cannot follow threads started in a forked child that "
               "reuse the parent's thread ids\n");
        return 0;
    }
    for (int i = 0; i < BLOCKS; i++)
        blocks[i] = malloc(block_bytes);
    static const mk_lock_kind kinds[] = {MK_LOCK_MUTEX, MK_LOCK_SPIN, MK_LOCK_ATOMIC};
    for (int round = 0; round < 2; round++)
        for (size_t k = 0; k < 3; k++)
            for (int busy = 0; busy < 2; busy++)
                fork_with(kinds[k], busy);
    for (int i = 0; i < BLOCKS; i++)
        free(blocks[i]);
    check_finish();
}
