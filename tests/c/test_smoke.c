/* SPDX-License-Identifier: Apache-2.0 */
/* The library loads, dispatches and fills: the first thing to break. */
#include "check.h"
#include "memkit.h"

#include <stdlib.h>
#include <string.h>

int main(void)
{
    const mk_cpu_info *cpu = mk_cpu();
    CHECK(cpu->vendor[0] != '\0', "vendor is empty");
    CHECK(cpu->has_sse2, "every x86-64 CPU has SSE2");
    CHECK(cpu->line_bytes >= 32, "line size %zu", cpu->line_bytes);

    size_t count = 0;
    const mk_variant *v = mk_variants(&count);
    size_t usable_memset = 0;
    for (size_t i = 0; i < count; i++)
        usable_memset += v[i].op == MK_OP_MEMSET && v[i].usable;
    CHECK(usable_memset >= 1, "no usable memset variant");

    unsigned char buf[300];
    memset(buf, 7, sizeof buf);
    CHECK(mk_memset(buf + 1, 0x41, 290) == buf + 1, "return value");
    CHECK(buf[0] == 7 && buf[1] == 0x41 && buf[290] == 0x41 && buf[291] == 7, "fill bounds");
    printf("memset variant: %s\n", mk_selected_variant(MK_OP_MEMSET));

    /* The library says what it is, and whether the preload took over (the
     * preload tests run this program under it too). */
    const char *version = mk_version();
    CHECK(strncmp(version, MEMKIT_VERSION " (commit ", strlen(MEMKIT_VERSION) + 9) == 0,
          "mk_version() = '%s'", version);
    const char *preload = getenv("LD_PRELOAD");
    int preloaded = preload && strstr(preload, "libmemkit_preload") != NULL;
    CHECK(memkit_preload_active() == preloaded, "memkit_preload_active() = %d with LD_PRELOAD=%s",
          memkit_preload_active(), preload ? preload : "(unset)");
    check_finish();
}
