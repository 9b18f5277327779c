/* SPDX-License-Identifier: Apache-2.0 */
/* Where an experiment finds what ships beside it (the production size
 * distributions, the preload library, the preload-apps workloads), whether
 * it runs from a build tree or from an installed prefix
 * (PREFIX/libexec/memkit/memkit-exp-*, the layout of `make install` and of
 * the Python package). */
#ifndef MEMKIT_LAB_RESOURCES_H
#define MEMKIT_LAB_RESOURCES_H

#include <stddef.h>

/* PREFIX/share/memkit/<rel> when this program runs installed, else
 * <source tree>/<source_rel>.  Written into buf; returns buf. */
const char *lab_resource_path(const char *rel, const char *source_rel, char *buf, size_t cap);

/* PREFIX/lib/libmemkit_preload.so when installed, else the build tree's
 * (empty if it was not built).  Written into buf; returns buf. */
const char *lab_preload_path(char *buf, size_t cap);

#endif
