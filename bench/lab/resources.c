/* SPDX-License-Identifier: Apache-2.0 */
#include "resources.h"

#include <stdio.h>
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
