/* SPDX-License-Identifier: Apache-2.0 */
#include "resources.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef MEMKIT_SOURCE_DIR
#define MEMKIT_SOURCE_DIR "."
#endif
#ifndef MEMKIT_BUILD_PRELOAD_SO
#define MEMKIT_BUILD_PRELOAD_SO ""
#endif

/* The install prefix this program runs from: its directory minus
 * "/<libexecdir>/memkit"; 0 when it runs from a build tree. */
static int installed_prefix(char *prefix, size_t cap)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return 0;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return 0;
    *slash = '\0';
    const char *tail = "/" MEMKIT_INSTALL_LIBEXECDIR "/memkit";
    size_t len = strlen(exe), tlen = strlen(tail);
    if (len < tlen || strcmp(exe + len - tlen, tail) != 0)
        return 0;
    exe[len - tlen] = '\0';
    return snprintf(prefix, cap, "%s", exe) < (int)cap;
}

const char *lab_resource_path(const char *rel, const char *source_rel, char *buf, size_t cap)
{
    char prefix[4096];
    if (installed_prefix(prefix, sizeof prefix))
        snprintf(buf, cap, "%s/" MEMKIT_INSTALL_DATADIR "/memkit/%s", prefix, rel);
    else
        snprintf(buf, cap, "%s/%s", MEMKIT_SOURCE_DIR, source_rel);
    return buf;
}

const char *lab_preload_path(char *buf, size_t cap)
{
    char prefix[4096];
    if (installed_prefix(prefix, sizeof prefix))
        snprintf(buf, cap, "%s/" MEMKIT_INSTALL_LIBDIR "/libmemkit_preload.so", prefix);
    else
        snprintf(buf, cap, "%s", MEMKIT_BUILD_PRELOAD_SO);
    return buf;
}

const char *lab_preload_library(const char *given, char *buf, size_t cap)
{
    const char *so = given ? given : lab_preload_path(buf, cap);
    if (!so[0] || access(so, R_OK) != 0) {
        fprintf(stderr, "error: preload library '%s' not found (build it, or pass preload=SO)\n", so);
        return NULL;
    }
    return so;
}

int lab_temp_dir(const char *what, char *buf, size_t cap)
{
    snprintf(buf, cap, "/tmp/memkit-%s-XXXXXX", what);
    if (!mkdtemp(buf)) {
        fprintf(stderr, "error: cannot create a temporary directory: %s\n", strerror(errno));
        return -1;
    }
    return 0;
}

void lab_remove_dir(const char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "warning: could not remove %s\n", dir);
}
