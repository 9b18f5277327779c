/* SPDX-License-Identifier: Apache-2.0 */
/* What the lab's own files share and experiments do not see. */
#ifndef MEMKIT_LAB_INTERNAL_H
#define MEMKIT_LAB_INTERNAL_H

#include "lab.h"

/* ---- JSON values (json.c; lab_json_string: lab.h) ---- */
void lab_json_number(FILE *f, double v);   /* null when not finite */

/* ---- the records' members (records.def) ----
 * Every key a record's writer puts goes through LAB_KEY(object, key): the
 * key's text, or a compile error when records.def does not declare it, so
 * the file the Python side reads (--schema) lists every member written. */
#define LAB_RECORD_FORMAT 2
enum {
#define LAB_OBJECT(name, line, meaning)
#define LAB_FIELD(object, key, type, of, presence, meaning) LAB_FIELD_##object##_##key,
#include "records.def"
#undef LAB_FIELD
#undef LAB_OBJECT
    LAB_NFIELDS
};
#define LAB_KEY(object, key) ((void)LAB_FIELD_##object##_##key, #key)
/* "key": after a comma, or after the brace that opens its object (first). */
void lab_json_key(FILE *f, const char *key, int first);
#define LAB_MEMBER(f, object, key) lab_json_key(f, LAB_KEY(object, key), 0)
#define LAB_FIRST(f, object, key) lab_json_key(f, LAB_KEY(object, key), 1)
/* {"type":"NAME": a record's opening, its type its object's name */
#define LAB_RECORD_START(f, object) (LAB_FIRST(f, object, type), lab_json_string(f, #object))
/* The schema (records.def) as one JSON object on stdout: --schema. */
void lab_write_schema(void);

/* A verdict whose JSONL line also carries "data": what data(f, arg) writes
 * (one JSON value): the facts it states, for readers that must not parse
 * its text (messages.c). */
void lab_verdict_data(lab_ctx *ctx, const char *kind, void (*data)(FILE *, const void *),
                      const void *arg, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* The arguments' lines of --help (args.c). */
void lab_print_args(const lab_info *info, FILE *f);
/* The note on how far apart the processes' values were (record.c). */
void lab_spread_note(lab_ctx *ctx);

/* ---- the machine (machine.c) ---- */
/* The first line of a file (/sys, /proc) without its newline, into buf:
 * 1, or 0 when it cannot be read. */
int lab_read_line(const char *path, char *buf, size_t len);
/* The CPU a single-threaded timing process is pinned to (the last it may
 * use); -1 if unknown. */
int lab_timing_cpu(void);
/* Pins this process (and the threads it starts later) to lab_timing_cpu();
 * 0, or -1 with why in why. */
int lab_pin_to_timing_cpu(char *why, size_t len);
/* The fingerprint's members on what makes timings noisy (boost, smt,
 * hypervisor, timing_cpu), each with its leading comma. */
void lab_write_noise_sources(FILE *f);

/* ---- peers (peers.c) ---- */
/* "memset, memcpy" for the LAB_PEER_OP bits in ops; into buf, returned. */
const char *lab_peer_ops_text(unsigned ops, char *buf, size_t len);
/* A note per peer: its file and what it races (the records name a peer
 * only by its file's name). */
void lab_peer_notes(lab_ctx *ctx);

/* ---- several processes (processes.c) ---- */
/* Runs the helper processes (this executable again, argv without --jsonl),
 * each writing its raw samples; loads them into ctx->pool.  0 or -1. */
int lab_run_helpers(lab_ctx *ctx, int argc, char **argv);
/* In a helper: the environment says so; sets ctx->process, nprocesses, raw. */
int lab_helper_setup(lab_ctx *ctx);
/* A helper writes one record's raw samples and speed-ups (tuned: it runs
 * under glibc_tunables=). */
void lab_raw_write(FILE *f, const lab_record *r, int tuned, const double *ratios);
/* The helpers' samples and speed-ups of the record matching r, those of the
 * tuned helpers or of the others, appended to the growing arrays; the
 * number of processes found. */
typedef struct {
    double *v;
    size_t n, cap;
} lab_vec;
void lab_vec_push(lab_vec *v, const double *x, size_t n);
size_t lab_pool_take(lab_ctx *ctx, const lab_record *r, int tuned, lab_vec *samples,
                     lab_vec *ratios, lab_vec *process_values, lab_vec *process_ratios);
void lab_pool_free(lab_ctx *ctx);

#endif
