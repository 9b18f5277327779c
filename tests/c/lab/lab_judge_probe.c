/* SPDX-License-Identifier: Apache-2.0 */
/* The lab's verdict on one ranking point, for tests/python/test_judge_recorded.py
 * to ask of recorded samples: each line of standard input
 *   HIGHER N A1..AN B1..BN   (HIGHER 1: higher is better; A memkit, B its rival)
 * gets one line on standard output: lab_point_verdict's 1, -1 or 0. */
#include "lab.h"

#include <stdlib.h>

int main(void)
{
    int higher;
    size_t n;
    while (scanf("%d %zu", &higher, &n) == 2) {
        double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
        for (size_t i = 0; i < 2 * n; i++)
            if (scanf("%lf", i < n ? &a[i] : &b[i - n]) != 1)
                return 2;
        lab_summary sa = {.samples = a, .n = n}, sb = {.samples = b, .n = n};
        printf("%d\n", lab_point_verdict(&sa, &sb, higher, NULL));
        free(a);
        free(b);
    }
    return 0;
}
