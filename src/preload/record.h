/* SPDX-License-Identifier: Apache-2.0 */
/* `memkit record`: the preload shim counts its callers' sizes when
 * MEMKIT_RECORD=DIR is set (see record.c for the file layout). */
#ifndef MEMKIT_PRELOAD_RECORD_H
#define MEMKIT_PRELOAD_RECORD_H

#include <stddef.h>

typedef void *(*mk_rec_set_fn)(void *, int, size_t);
typedef void *(*mk_rec_copy_fn)(void *, const void *, size_t);

/* Called once per name by the shim's first call: returns `plain` when
 * recording is off (the shim then costs what it costs without recording),
 * else a wrapper that counts the call and jumps to `plain`. */
__attribute__((visibility("hidden"))) mk_rec_set_fn mk_record_memset(mk_rec_set_fn plain);
__attribute__((visibility("hidden"))) mk_rec_copy_fn mk_record_memcpy(mk_rec_copy_fn plain);
__attribute__((visibility("hidden"))) mk_rec_copy_fn mk_record_memmove(mk_rec_copy_fn plain);

#endif
