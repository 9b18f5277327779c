# SPDX-License-Identifier: Apache-2.0
# a key-value store's gets: 2M values of 40-400 bytes in 600 MB (the L3 is 32 MiB), looked up at random
import random
r = random.Random(5)
vals = [r.randbytes(r.randrange(40, 400)) for _ in range(2_000_000)]
keys = [r.randrange(2_000_000) for _ in range(3_000_000)]
out = bytearray()
s = 0
for k in keys:
    v = vals[k]
    b = bytearray(v)          # the copy a server makes into its reply buffer
    s += b[0] + len(b)
print(s)
