/* SPDX-License-Identifier: Apache-2.0 */
/* An experiment whose helper process dies of a signal, as size-distributions'
 * did of SIGFPE on an alignment of 0: the main process must say which
 * signal (tests/lab.cmake matches its line), not only that the helper failed. */
#include "lab.h"

#include <signal.h>
#include <sys/resource.h>

static int run(lab_ctx *ctx)
{
    if (ctx->raw) {   /* a helper */
        setrlimit(RLIMIT_CORE, &(struct rlimit){0, 0});   /* no core file from the test */
        raise(SIGFPE);
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const lab_info info = {.name = "helper-dies", .seed = "", .description = "",
                                  .processes = 2};
    return lab_main(argc, argv, &info, run);
}
