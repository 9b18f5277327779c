/* SPDX-License-Identifier: Apache-2.0 */
/* Peers: any other library's memset, memcpy and memmove racing as methods
 * (peer=/path/lib.so,...), loaded once here for every experiment.
 *
 * RTLD_LOCAL keeps the library's symbols out of the global scope: glibc
 * stays the process's memcpy (the baseline, and what the lab itself
 * calls).  RTLD_NOW resolves everything now, so a library with unresolved
 * symbols fails here, not inside a timed batch.  dlsym on the handle
 * searches the library's dependencies too (glibc among them): a function
 * counts as the library's only when dladdr finds it in the library's own
 * file. */
#include "lab_internal.h"

#include <dlfcn.h>
#include <link.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char *const op_names[LAB_PEER_NOPS] = {"memset", "memcpy", "memmove"};

const char *lab_peer_ops_text(unsigned ops, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int op = 0; op < LAB_PEER_NOPS; op++)
        if (ops & LAB_PEER_OP(op)) {
            size_t l = strlen(buf);
            snprintf(buf + l, len - l, "%s%s", l ? ", " : "", op_names[op]);
        }
    return buf;
}

/* /opt/aocl/lib/libaocl-libmem.so.1 -> "aocl-libmem" */
static void name_of(const char *path, char *name, size_t len)
{
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    const char *start = strncmp(base, "lib", 3) || !base[3] ? base : base + 3;
    const char *so = strstr(start, ".so");
    size_t n = so && so > start ? (size_t)(so - start) : strlen(start);
    snprintf(name, len, "%.*s", (int)n, start);
}

/* The library's own definition of `symbol`, or NULL. */
static void (*own_function(void *handle, const char *symbol))(void)
{
    void *sym = dlsym(handle, symbol);
    struct link_map *lm = NULL;
    Dl_info where;
    if (!sym || dlinfo(handle, RTLD_DI_LINKMAP, &lm) || !lm || !dladdr(sym, &where) ||
        !where.dli_fname || strcmp(where.dli_fname, lm->l_name))
        return NULL;
    void (*fn)(void);
    memcpy(&fn, &sym, sizeof fn);   /* object to function pointer, as POSIX allows */
    return fn;
}

static int load_one(const char *given, unsigned ops, lab_peer *p, char *err, size_t errlen)
{
    char abs[sizeof p->path];
    /* an absolute path: dlopen of a bare name would search the library
     * path, not the directory the user meant */
    if (!realpath(given, abs))
        return lab_fail(err, errlen, "peer=%s: no such file", given);
    void *h = dlopen(abs, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        return lab_fail(err, errlen, "peer=%s: not a loadable shared library (%s)", given,
                    why ? why : "dlopen failed");
    }
    *p = (lab_peer){0};
    snprintf(p->path, sizeof p->path, "%s", abs);
    name_of(abs, p->name, sizeof p->name);
    int found = 0;
    for (int op = 0; op < LAB_PEER_NOPS; op++)
        if (ops & LAB_PEER_OP(op)) {
            p->fn[op] = own_function(h, op_names[op]);
            found += p->fn[op] != NULL;
        }
    /* never dlclosed: its functions are methods until the process ends */
    if (!found) {
        char wanted[64];
        return lab_fail(err, errlen, "peer=%s exports none of %s (its own, not glibc's)", given,
                    lab_peer_ops_text(ops, wanted, sizeof wanted));
    }
    return 0;
}

int lab_peers_load(const char *list, unsigned ops, lab_peer **out, size_t *n, char *err,
                   size_t errlen)
{
    *out = NULL;
    *n = 0;
    if (!list || !*list)
        return lab_fail(err, errlen, "peer= names no library");
    lab_peer *peers = NULL;
    size_t count = 0;
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        char path[4096];
        snprintf(path, sizeof path, "%.*s", (int)len, p);
        p += len + (p[len] == ',');
        if (!len)
            continue;
        peers = realloc(peers, (count + 1) * sizeof *peers);
        if (!peers || load_one(path, ops, &peers[count], err, errlen)) {
            if (!peers)
                lab_fail(err, errlen, "out of memory");
            free(peers);
            return -1;
        }
        count++;
    }
    if (!count)
        return lab_fail(err, errlen, "peer= names no library");
    *out = peers;
    *n = count;
    return 0;
}

static int taken(const lab_method *methods, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(methods[i].name, name))
            return 1;
    return 0;
}

size_t lab_peer_methods(lab_ctx *ctx, int op, const char *suffix, int kind, lab_method *methods,
                        size_t n, size_t cap)
{
    for (size_t i = 0; i < ctx->npeers && n < cap; i++) {
        const lab_peer *p = &ctx->peers[i];
        if (!p->fn[op])
            continue;
        char name[128];
        snprintf(name, sizeof name, "%s%s", p->name, suffix);
        for (int k = 2; taken(methods, n, name); k++)
            snprintf(name, sizeof name, "%s-%d%s", p->name, k, suffix);
        /* the name lives as long as the method: this process */
        methods[n++] = (lab_method){.name = strdup(name), .fn = p->fn[op], .kind = kind};
    }
    return n;
}

void lab_peer_notes(lab_ctx *ctx)
{
    for (size_t i = 0; i < ctx->npeers && !ctx->raw; i++) {
        const lab_peer *p = &ctx->peers[i];
        unsigned has = 0;
        for (int op = 0; op < LAB_PEER_NOPS; op++)
            has |= p->fn[op] ? LAB_PEER_OP(op) : 0;
        char races[64], lacks[64];
        lab_peer_ops_text(has & ctx->info->peer_ops, races, sizeof races);
        lab_peer_ops_text(ctx->info->peer_ops & ~has, lacks, sizeof lacks);
        lab_verdict_kind(ctx, "note", "peer %s is %s: races its own %s%s%s", p->name, p->path,
                         races, *lacks ? "; it exports no " : "", lacks);
    }
}
