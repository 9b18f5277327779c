/* SPDX-License-Identifier: Apache-2.0 */
/* One memcpy through the PLT, or none ("none"): what the preload shim's
 * start-up costs such a program (tests/preload/startup_syscalls.sh). */
#include <string.h>

int main(int argc, char **argv)
{
    static char buf[16];
    void *(*volatile copy)(void *, const void *, size_t) = memcpy;
    if (argc > 1 && strcmp(argv[1], "none") == 0)
        return 0;
    copy(buf, argv[0], 8);
    return buf[0] == '\0';
}
