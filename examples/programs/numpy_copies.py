# SPDX-License-Identifier: Apache-2.0
# numpy copies of 16 MiB arrays (half the L3)
import numpy as np
a = np.arange(2 << 20, dtype=np.float64)
s = 0.0
for i in range(2000):
    b = a.copy()
    b[i] += 1.0
    s += b[i]
print(s)
