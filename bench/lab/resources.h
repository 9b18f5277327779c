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

/* The preload library an experiment runs programs under: `given` (its
 * preload= argument), else lab_preload_path's, written into buf.  NULL,
 * said on stderr, when that is not a readable file. */
const char *lab_preload_library(const char *given, char *buf, size_t cap);

/* A fresh directory /tmp/memkit-<what>-XXXXXX, its path into buf.  0, or
 * -1 said on stderr. */
int lab_temp_dir(const char *what, char *buf, size_t cap);
/* dir and everything in it removed; a warning on stderr when it cannot be. */
void lab_remove_dir(const char *dir);

#endif
