/* SPDX-License-Identifier: Apache-2.0 */
/* The lab's AVX contestants (copy_methods.h lists them), compiled with
 * AVX2: a file named *_avx2.c gets src/isa.def's flags for it. */
#include "copy_methods.h"

#include "copy/copiers_avx2.h"

#define DEFINE(name, align, unroll, stream_load, stream_store, prefetch, description) \
    ALIGNED_COPIER(lab_copy_##name, align, unroll, stream_load, stream_store, prefetch)
LAB_AVX_COPIERS(DEFINE)
