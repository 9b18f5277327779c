/* SPDX-License-Identifier: Apache-2.0 */
/* The library's streaming copier (see memkit.h for when to pick it). */
#include "copiers_avx2.h"

ALIGNED_COPIER(mk_copier_avx_stream_prefetch, 64, 1, 0, 1, 1)
