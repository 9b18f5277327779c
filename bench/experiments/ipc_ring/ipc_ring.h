/* SPDX-License-Identifier: Apache-2.0 */
/* A ring of message slots in shared memory between two processes, one
 * producer and one consumer (the ipc-copy experiment's publisher and
 * subscriber, the Shadesmar seed's topic).
 *
 * The memory is a memfd (no name anywhere: nothing can be left behind in
 * /dev/shm, whatever kills the processes), or, where memfd is refused, a
 * POSIX shm object unlinked before anything else happens.  It is mapped
 * before fork() and the child inherits the mapping; the descriptor is
 * closed at once.
 *
 * Handshake per slot: message m lives in slot m % slots.  The producer
 * waits until the slot's `read` count reaches m / slots (the consumer is
 * done with the previous lap), writes, and publishes `written` = lap + 1;
 * the consumer waits for that, reads, and publishes `read` = lap + 1.
 * A waiter spins for a while, then sleeps on the counter (a futex shared
 * between the processes) with a timeout, after which it checks that its
 * peer still lives: a peer that died makes every wait return IPC_PEER_GONE,
 * never hang. */
#ifndef MEMKIT_IPC_RING_H
#define MEMKIT_IPC_RING_H

#include "memkit.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef enum { IPC_BACKING_MEMFD, IPC_BACKING_SHM } ipc_backing;

typedef enum {
    IPC_OK = 0,
    IPC_CLOSED,      /* the producer closed the ring and every message was read */
    IPC_PEER_GONE,   /* the other process exited or was killed */
    IPC_TOO_BIG,     /* a message larger than a slot */
} ipc_status;

/* What the consumer reports back, summed over the messages it released;
 * the producer reads it once the messages it waits for are read. */
typedef struct {
    uint64_t messages;
    uint64_t busy_ns;    /* the consumer's own work (its copy_out) */
    uint64_t wait_ns;    /* time the consumer waited for a message */
    uint64_t bad;        /* messages the consumer found damaged */
} ipc_tally;

typedef struct {
    size_t   size;
    uint32_t tag;        /* the caller's: which copier, what to check */
    uint64_t seq;        /* message number, from 0 */
    void    *data;       /* in the shared slot */
} ipc_message;

typedef struct ipc_shared ipc_shared;   /* the header in shared memory */

typedef struct {
    ipc_shared    *hdr;
    unsigned char *map;
    size_t         map_bytes;
    unsigned char *data;          /* the slots' data area */
    size_t         capacity;      /* bytes per slot */
    unsigned       slots;
    ipc_backing    backing;
    mk_page_kind   pages;         /* what the slots are on, checked in smaps */
    double         huge_fraction; /* of the data area on huge pages */
    /* this process's side */
    pid_t          peer;
    int            peer_is_child;
    int            peer_status;   /* wait status once reaped */
    uint64_t       next;          /* next message this side produces or consumes */
    size_t         stride;        /* producer: slot spacing of the current size */
    uint64_t       spin_ns;       /* spin this long before sleeping */
} ipc_ring;

/* Maps a ring of `slots` slots of `capacity` bytes each (every slot starts
 * on a page, or a 2 MiB boundary when capacity >= 2 MiB, so any copier's
 * alignment holds), on the pages asked for where possible, pre-faulted.
 * Returns 0 or an errno value. */
int  ipc_ring_create(ipc_ring *r, unsigned slots, size_t capacity, mk_page_kind want,
                     ipc_backing backing);
void ipc_ring_destroy(ipc_ring *r);

/* fork(): returns the child's pid in the parent, 0 in the child, -1 on
 * failure; each side's peer is the other.  The child dies with its parent
 * (PR_SET_PDEATHSIG) and should leave with _exit(). */
pid_t ipc_ring_fork(ipc_ring *r);
/* Parent: waits for the child to exit; its wait status. */
int   ipc_ring_join(ipc_ring *r);

/* Producer: the next slot, once free, for a message of n <= capacity bytes
 * (m->data, m->seq set); *waited_ns gets the time spent waiting. */
ipc_status ipc_ring_claim(ipc_ring *r, ipc_message *m, size_t n, uint64_t *waited_ns);
/* Producer: hands the claimed slot to the consumer with its size and tag. */
void ipc_ring_publish(ipc_ring *r, ipc_message *m, uint32_t tag);
/* Producer: waits until every published message was released; copies the
 * consumer's tally as of then into *t (may be NULL). */
ipc_status ipc_ring_drain(ipc_ring *r, ipc_tally *t);
/* Producer: no more messages; the consumer's receive answers IPC_CLOSED
 * once it read the rest. */
void ipc_ring_close(ipc_ring *r);

/* Consumer: waits for the next message (time waited goes to the tally). */
ipc_status ipc_ring_receive(ipc_ring *r, ipc_message *m);
/* Consumer: done with m; adds busy_ns and bad to the tally, frees the slot. */
void ipc_ring_release(ipc_ring *r, const ipc_message *m, uint64_t busy_ns, int bad);

/* The consumer's tally as this side sees it now (exact on the consumer's
 * side, and on the producer's after a drain). */
ipc_tally ipc_ring_tally(const ipc_ring *r);

/* Time, CLOCK_MONOTONIC, in ns (the same clock in both processes). */
uint64_t ipc_now_ns(void);

/* The test pattern of message seq: fill, and count damaged 8-byte words
 * (any n; the tail is checked byte by byte). */
void   ipc_pattern_fill(void *p, size_t n, uint64_t seq);
size_t ipc_pattern_errors(const void *p, size_t n, uint64_t seq);
/* A cheap mark for timed messages: seq in the first and the last 8 bytes
 * (n >= 16). */
void ipc_stamp(void *p, size_t n, uint64_t seq);
int  ipc_stamp_ok(const void *p, size_t n, uint64_t seq);

const char *ipc_page_kind_name(mk_page_kind k);

#endif
