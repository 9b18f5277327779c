/* SPDX-License-Identifier: Apache-2.0 */
/* What an experiment tells its user as it runs, beside its records: the
 * verdicts (stdout, and the JSONL file) and its progress (stderr). */
#include "lab_internal.h"

#include <stdarg.h>
#include <stdio.h>

static void verdict_with(lab_ctx *ctx, const char *kind, void (*data)(FILE *, const void *),
                         const void *arg, const char *fmt, va_list ap)
{
    if (ctx->raw)   /* a helper process: the main one says what all of them found */
        return;
    char text[4096];
    vsnprintf(text, sizeof text, fmt, ap);
    printf("verdict%s%s: %s\n", kind ? " " : "", kind ? kind : "", text);
    fflush(stdout);
    if (ctx->jsonl) {
        LAB_RECORD_START(ctx->jsonl, verdict);
        LAB_MEMBER(ctx->jsonl, verdict, experiment);
        lab_json_string(ctx->jsonl, ctx->info->name);
        if (kind) {
            LAB_MEMBER(ctx->jsonl, verdict, kind);
            lab_json_string(ctx->jsonl, kind);
        }
        LAB_MEMBER(ctx->jsonl, verdict, text);
        lab_json_string(ctx->jsonl, text);
        if (data) {
            LAB_MEMBER(ctx->jsonl, verdict, data);
            data(ctx->jsonl, arg);
        }
        fputs("}\n", ctx->jsonl);
        fflush(ctx->jsonl);
    }
}

void lab_verdict(lab_ctx *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verdict_with(ctx, NULL, NULL, NULL, fmt, ap);
    va_end(ap);
}

void lab_verdict_kind(lab_ctx *ctx, const char *kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verdict_with(ctx, kind, NULL, NULL, fmt, ap);
    va_end(ap);
}

void lab_verdict_data(lab_ctx *ctx, const char *kind, void (*data)(FILE *, const void *),
                      const void *arg, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verdict_with(ctx, kind, data, arg, fmt, ap);
    va_end(ap);
}

/* With several processes, one count over all of them: the front end's
 * progress bar moves forward only. */
void lab_progress(lab_ctx *ctx, size_t done, size_t total, const char *what)
{
    double elapsed = (lab_now_ns() - ctx->started_ns) / 1e9;
    size_t np = ctx->nprocesses + ctx->ntuned;   /* ntuned: 0 in the helpers, which count all */
    char label[256];
    if (np > 1)
        snprintf(label, sizeof label, "process %u/%zu: %s", ctx->process + 1, np, what ? what : "");
    else
        snprintf(label, sizeof label, "%s", what ? what : "");
    fprintf(stderr, "progress: %s %zu/%zu %.1fs %s\n", ctx->info->name,
            ctx->process * total + done, total * np, elapsed, label);
    fflush(stderr);
}
