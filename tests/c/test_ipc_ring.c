/* SPDX-License-Identifier: Apache-2.0 */
/* The ipc-copy experiment's shared-memory ring (bench/experiments/ipc_ring/), on fake
 * small grids: messages arrive intact (every byte checked) through every
 * usable copier of the lab and the MT adapter, from parent to child and from child to
 * parent, over more laps than the ring has slots and with the message size
 * changing under way; a consumer that dies does not hang its producer, a
 * producer that dies does not hang its consumer (child or parent), and no
 * name is left in /dev/shm, with either backing. */
#include "check.h"
#include "copy_methods.h"
#include "ipc_ring.h"
#include "memkit.h"
#include "parallel/pool_internal.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { SLOTS = 4, LAPS = 3 };
#define CAPACITY ((size_t)3 * 4096 + 256)
#define MT_TAG 0x10000u   /* tag = copier index | MT_TAG: through mk_parallel_copy */

/* Sizes for copier c: odd ones where it takes any, and a change of size
 * (hence of slot spacing) every few messages. */
static size_t size_of(const mk_copier *c, uint64_t seq)
{
    static const size_t sizes[] = {1, 4096, 13, CAPACITY, 8191, 64, 3 * 4096, 777};
    size_t n = sizes[(seq / 3) % (sizeof sizes / sizeof sizes[0])];
    n -= n % c->align;
    return n ? n : c->align;
}

static int copy(const mk_copier *c, int mt, mk_pool *pool, int to_shared, void *dst,
                const void *src, size_t n)
{
    if (mt)
        return mk_parallel_copy(pool, c, to_shared, dst, src, n);
    return (to_shared ? c->copy_in : c->copy_out)(dst, src, n);
}

/* Every usable copier, plain and MT, SLOTS * LAPS + 1 messages each; the
 * data through the copier's own buffers.  Returns the number published, or
 * 0 when the ring failed. */
static uint64_t produce(ipc_ring *r, mk_pool *pool)
{
    size_t count;
    const mk_copier *cs = lab_copiers(&count);
    uint64_t sent = 0;
    for (size_t i = 0; i < count; i++) {
        if (!cs[i].usable)
            continue;
        unsigned char *src = cs[i].alloc(CAPACITY);
        for (int mt = 0; mt < 2; mt++)
            for (int k = 0; k < SLOTS * LAPS + 1; k++) {
                ipc_message m;
                uint64_t waited;
                size_t n = size_of(&cs[i], r->next);
                if (ipc_ring_claim(r, &m, n, &waited) != IPC_OK)
                    return 0;
                ipc_pattern_fill(src, n, m.seq);
                if (copy(&cs[i], mt, pool, 1, m.data, src, n) != 0)
                    return 0;
                ipc_ring_publish(r, &m, (uint32_t)i | (mt ? MT_TAG : 0));
                sent++;
            }
        cs[i].free(src, CAPACITY);
    }
    return sent;
}

/* Until closed: copies each message out with the copier its tag names and
 * checks every byte.  Returns the status that ended it. */
static ipc_status consume(ipc_ring *r, mk_pool *pool)
{
    size_t count;
    const mk_copier *cs = lab_copiers(&count);
    unsigned char *dst[64] = {0};
    ipc_message m;
    ipc_status st;
    while ((st = ipc_ring_receive(r, &m)) == IPC_OK) {
        const mk_copier *c = &cs[m.tag & 0xffff];
        if (!dst[m.tag & 0xffff])
            dst[m.tag & 0xffff] = c->alloc(CAPACITY);
        unsigned char *d = dst[m.tag & 0xffff];
        memset(d, 0, CAPACITY);
        int err = copy(c, (m.tag & MT_TAG) != 0, pool, 0, d, m.data, m.size);
        int bad = err || m.size != size_of(c, m.seq) || ipc_pattern_errors(d, m.size, m.seq);
        if (bad)
            fprintf(stderr, "message %llu (%s, %zu bytes) damaged\n", (unsigned long long)m.seq,
                    c->name, m.size);
        ipc_ring_release(r, &m, 1, bad);
    }
    for (size_t i = 0; i < count && i < 64; i++)
        if (dst[i])
            cs[i].free(dst[i], CAPACITY);
    return st;
}

static const char *backing_name(ipc_backing b) { return b == IPC_BACKING_MEMFD ? "memfd" : "shm"; }

/* One direction: the parent produces (parent_produces) or consumes. */
static void transfer(ipc_backing backing, int parent_produces)
{
    ipc_ring r;
    CHECK(ipc_ring_create(&r, SLOTS, CAPACITY, MK_PAGES_THP, backing) == 0, "create");
    pid_t pid = ipc_ring_fork(&r);
    CHECK(pid >= 0, "fork");
    mk_pool *pool = mk_pool_create(3);   /* after fork: each side its own workers */
    int producer = (pid > 0) == parent_produces;
    if (producer) {
        uint64_t sent = produce(&r, pool);
        ipc_tally t = {0};
        ipc_status st = ipc_ring_drain(&r, &t);
        ipc_ring_close(&r);
        if (pid == 0)
            _exit(sent && st == IPC_OK && t.messages == sent && t.bad == 0 ? 0 : 1);
        CHECK(sent > 0 && st == IPC_OK, "%s: parent could not publish", backing_name(backing));
        CHECK(t.messages == sent && t.bad == 0, "%s: %llu of %llu read, %llu damaged",
              backing_name(backing), (unsigned long long)t.messages,
              (unsigned long long)sent, (unsigned long long)t.bad);
        CHECK(r.next > SLOTS * LAPS, "the ring did not wrap");
        int status = ipc_ring_join(&r);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: child consumer failed",
              backing_name(backing));
    } else {
        ipc_status st = consume(&r, pool);
        if (pid == 0)
            _exit(st == IPC_CLOSED && ipc_ring_tally(&r).bad == 0 ? 0 : 1);
        CHECK(st == IPC_CLOSED, "%s: parent consumer ended with %d", backing_name(backing), st);
        CHECK(ipc_ring_tally(&r).bad == 0 && r.next > SLOTS * LAPS, "%s: %llu damaged, %llu read",
              backing_name(backing), (unsigned long long)ipc_ring_tally(&r).bad,
              (unsigned long long)r.next);
        int status = ipc_ring_join(&r);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "%s: child producer failed (its checks, or the tally)", backing_name(backing));
    }
    mk_pool_destroy(pool);
    ipc_ring_destroy(&r);
    printf("%-5s %-16s: ok\n", backing_name(backing),
           parent_produces ? "parent -> child" : "child -> parent");
}

/* A consumer killed after two messages: the producer's claims end with
 * IPC_PEER_GONE once the ring is full. */
static void consumer_dies(void)
{
    ipc_ring r;
    CHECK(ipc_ring_create(&r, SLOTS, 4096, MK_PAGES_NORMAL, IPC_BACKING_MEMFD) == 0, "create");
    pid_t pid = ipc_ring_fork(&r);
    if (pid == 0) {
        ipc_message m;
        for (int i = 0; i < 2 && ipc_ring_receive(&r, &m) == IPC_OK; i++)
            ipc_ring_release(&r, &m, 0, 0);
        raise(SIGKILL);
    }
    ipc_status st = IPC_OK;
    int published = 0;
    while (st == IPC_OK && published < 100) {
        ipc_message m;
        uint64_t w;
        if ((st = ipc_ring_claim(&r, &m, 4096, &w)) == IPC_OK)
            ipc_ring_publish(&r, &m, 0), published++;
    }
    CHECK(st == IPC_PEER_GONE && published == SLOTS + 2,
          "producer: status %d after %d messages", st, published);
    int status = ipc_ring_join(&r);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "child status %d", status);
    ipc_ring_destroy(&r);
    printf("consumer killed: producer stops (%d published)\n", published);
}

/* A producer killed after three messages: its consumer reads the three,
 * then ends with IPC_PEER_GONE. */
static void producer_dies(void)
{
    ipc_ring r;
    CHECK(ipc_ring_create(&r, SLOTS, 4096, MK_PAGES_NORMAL, IPC_BACKING_MEMFD) == 0, "create");
    pid_t pid = ipc_ring_fork(&r);
    if (pid == 0) {
        for (int i = 0; i < 3; i++) {
            ipc_message m;
            uint64_t w;
            if (ipc_ring_claim(&r, &m, 4096, &w) != IPC_OK)
                _exit(1);
            ipc_pattern_fill(m.data, m.size, m.seq);
            ipc_ring_publish(&r, &m, 0);
        }
        raise(SIGKILL);
    }
    ipc_message m;
    ipc_status st;
    int got = 0;
    while ((st = ipc_ring_receive(&r, &m)) == IPC_OK) {
        got += ipc_pattern_errors(m.data, m.size, m.seq) == 0;
        ipc_ring_release(&r, &m, 0, 0);
    }
    CHECK(st == IPC_PEER_GONE && got == 3, "consumer: status %d after %d intact", st, got);
    ipc_ring_join(&r);
    ipc_ring_destroy(&r);
    printf("producer killed: consumer stops after %d messages\n", got);
}

/* The publisher as the experiment has it, the parent, killed while its
 * child waits for messages: the child must go too.  The child holds the
 * only write end of a pipe; its end is the pipe's EOF. */
static void parent_dies(void)
{
    int fds[2];
    CHECK(pipe(fds) == 0, "pipe");
    fflush(NULL);
    pid_t mid = fork();
    if (mid == 0) {
        ipc_ring r;
        if (ipc_ring_create(&r, SLOTS, 4096, MK_PAGES_NORMAL, IPC_BACKING_MEMFD))
            _exit(1);
        pid_t pid = ipc_ring_fork(&r);
        if (pid == 0) {
            close(fds[0]);
            ipc_message m;
            while (ipc_ring_receive(&r, &m) == IPC_OK)
                ipc_ring_release(&r, &m, 0, 0);
            _exit(0);
        }
        close(fds[1]);
        ipc_message m;
        uint64_t w;
        if (ipc_ring_claim(&r, &m, 64, &w) == IPC_OK)
            ipc_ring_publish(&r, &m, 0);
        ipc_ring_drain(&r, NULL);
        raise(SIGKILL);
    }
    close(fds[1]);
    struct pollfd p = {fds[0], POLLIN, 0};
    char c;
    int ready = poll(&p, 1, 20000);
    CHECK(ready == 1 && read(fds[0], &c, 1) == 0, "the consumer outlived its killed parent");
    close(fds[0]);
    waitpid(mid, NULL, 0);
    printf("parent killed: its consumer goes too\n");
}

/* Names in /dev/shm that are memkit's. */
static int shm_names(void)
{
    DIR *d = opendir("/dev/shm");
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strncmp(e->d_name, "memkit", 6) == 0;
    closedir(d);
    return n;
}

int main(void)
{
    alarm(120);   /* a hang is a failure, not a stuck build */
    mk_config();
    mk_cfg.parallel_threshold = 0;   /* the MT adapter really splits ... */
    mk_parallel_chunk = 4096;        /* ... these small messages */
    int before = shm_names();

    /* shm backing: the name is gone while the ring is still mapped */
    ipc_ring r;
    CHECK(ipc_ring_create(&r, SLOTS, CAPACITY, MK_PAGES_NORMAL, IPC_BACKING_SHM) == 0, "shm");
    CHECK(shm_names() == before, "a shm ring left its name in /dev/shm while mapped");
    CHECK(r.pages != MK_PAGES_NORMAL || r.huge_fraction == 0, "page kind inconsistent");
    ipc_ring_destroy(&r);

    for (int b = 0; b < 2; b++) {
        transfer(b ? IPC_BACKING_SHM : IPC_BACKING_MEMFD, 1);
        transfer(b ? IPC_BACKING_SHM : IPC_BACKING_MEMFD, 0);
    }
    consumer_dies();
    producer_dies();
    parent_dies();
    CHECK(shm_names() == before, "/dev/shm holds %d memkit names more than before",
          shm_names() - before);
    check_finish();
}
