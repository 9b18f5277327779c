# SPDX-License-Identifier: Apache-2.0
# python3 copying 256 KiB bytes objects N times (argument; default 8000): slices,
# bytes() and bytearray() of a memoryview, 3 in 5 from an odd source address;
# prints a checksum, the same on every run (memkit try compares the outputs).
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 8000
size = 256 << 10
base = bytes(range(256)) * (size // 256 + 1)   # room for a source that starts at an odd byte
view = memoryview(base)
total = 0
for i in range(n):
    k = i % 5
    if k == 0:
        x = base[:size]
    elif k == 1:
        x = base[1:size + 1]
    elif k == 2:
        x = bytes(view[3:size + 3])
    elif k == 3:
        x = bytearray(view[5:size + 5])
    else:
        x = bytearray(view[:size])
    total += x[(i * 7919) % size]
print(total)
