/* SPDX-License-Identifier: Apache-2.0 */
/* A grid point written by position, as experiments once wrote theirs: with
 * the flags every program built on the lab gets, it must not compile
 * (lab.h's LAB_DESIGNATED; the test lab_positional_refused). */
#include "lab.h"
#include "sweep.h"

#include <stdint.h>

static double pass(const lab_method *m, void *arg, int warm)
{
    (void)m, (void)arg, (void)warm;
    return 1.0;
}

const lab_point *positional_point(const lab_method *methods, const lab_record *tmpl);
const lab_point *positional_point(const lab_method *methods, const lab_record *tmpl)
{
    static lab_point p;
    p = (lab_point){methods, 2, 5, pass, NULL, tmpl, 0, NULL, "4 KiB", 1, NULL, NULL};
    return &p;
}
