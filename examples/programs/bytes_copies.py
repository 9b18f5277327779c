# SPDX-License-Identifier: Apache-2.0
# python3 copying bytes that stay in the cache: 256 KiB objects, copied over and over
b = bytearray(range(256)) * 1024
s = 0
for i in range(200_000):
    x = bytes(b)
    s += x[i & 0x3ffff]
print(s)
